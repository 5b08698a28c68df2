//! The queue nodes of MCS and CLH, and where they come from without an allocation per
//! acquisition.
//!
//! Nodes are allocated once and never freed: a node may still be read by another thread after
//! its last owner is done with it (a CLH successor spins on its predecessor's node; an MCS
//! releaser may wake a node whose owner has already moved on), and never freeing makes that
//! safe without reclamation schemes. Each thread keeps a small fixed cache of free nodes; a
//! thread that exits, or has more than its cache holds, returns them to a lock-free global
//! pool, from which threads draw first. Memory is bounded by the most nodes ever in use at
//! once (held + waiting, across all queue locks), plus the threads' caches.
//!
//! Under loom nodes are reused within one model execution (per thread, as here) and leaked
//! at its end: loom's atomics belong to one execution and cannot be pooled across them.

use crate::padded::CachePadded;
use crate::sync::{AtomicPtr, AtomicU32};
use core::num::NonZeroU32;

/// One queue node, alone on its line: the waiter (MCS) or its successor (CLH) spins on
/// `state`, and the line must not be shared with anything another thread writes.
pub(crate) struct QueueNode {
    /// The word waited on; values are defined by the lock that uses the node.
    pub state: AtomicU32,
    /// MCS: the successor, linked by the successor itself. CLH: unused.
    pub next: AtomicPtr<Node>,
    /// CLH: the predecessor to wait on instead, published by a waiter that timed out; while
    /// the node's owner holds the lock, the predecessor it takes over on release (`clh.rs`
    /// explains why the two uses never overlap). MCS: unused.
    pub pred: AtomicPtr<Node>,
    /// The link of the global pool of free nodes; used only while the node is free.
    #[cfg_attr(loom, allow(dead_code))]
    pub pool_next: AtomicPtr<Node>,
    /// The node's number in [`index`], from 1: a 32-bit name for it, so that a holder's node
    /// fits beside a 32-bit word ([`Gated`](super::Gated) keeps its gate's guard that way).
    pub index: NonZeroU32,
}

pub(crate) type Node = CachePadded<QueueNode>;

fn fresh() -> &'static Node {
    index::register(|index| {
        Box::leak(Box::new(CachePadded::new(QueueNode {
            state: AtomicU32::new(0),
            next: AtomicPtr::new(core::ptr::null_mut()),
            pred: AtomicPtr::new(core::ptr::null_mut()),
            pool_next: AtomicPtr::new(core::ptr::null_mut()),
            index,
        })))
    })
}

/// The node numbered `index` (from its `index` field).
///
/// # Safety
/// `index` must be a node's `index` field.
#[inline]
pub(crate) unsafe fn by_index(index: NonZeroU32) -> &'static Node {
    // SAFETY: forwarded.
    unsafe { index::get(index) }
}

#[cfg(not(loom))]
mod index {
    //! Every node ever made, by number: a two-level table that only grows (nodes are never
    //! freed). A number is taken with one `fetch_add`; a second-level block is allocated by
    //! whichever thread first needs it and installed with a CAS.
    use super::Node;
    use crate::sync::{AtomicPtr, AtomicU32, Ordering::*};
    use core::num::NonZeroU32;
    use core::ptr::null_mut;

    const BLOCK: usize = 1024;
    const BLOCKS: usize = 4096;

    type Block = [AtomicPtr<Node>; BLOCK];

    static NEXT: AtomicU32 = AtomicU32::new(0);
    static TABLE: [AtomicPtr<Block>; BLOCKS] = [const { AtomicPtr::new(null_mut()) }; BLOCKS];

    pub fn register(make: impl FnOnce(NonZeroU32) -> &'static Node) -> &'static Node {
        let number = NEXT.fetch_add(1, Relaxed) as usize;
        if number >= BLOCK * BLOCKS {
            // Nodes in use at once are bounded by threads times the queue locks each holds or
            // waits for: four million is past any real process.
            eprintln!("spinlab: more than {} queue nodes in use at once; aborting", BLOCK * BLOCKS);
            std::process::abort();
        }
        let index = NonZeroU32::new(number as u32 + 1).expect("numbers start at 1");
        let node = make(index);
        // Release: the node's fields are visible to whoever finds it by number.
        block(number / BLOCK)[number % BLOCK].store(super::as_ptr(node), Release);
        node
    }

    fn block(at: usize) -> &'static Block {
        let mut block = TABLE[at].load(Acquire);
        if block.is_null() {
            let fresh: &'static mut Block = Box::leak(Box::new([const { AtomicPtr::new(null_mut()) }; BLOCK]));
            block = match TABLE[at].compare_exchange(null_mut(), fresh, AcqRel, Acquire) {
                Ok(_) => fresh,
                // Another thread installed it first; ours stays unused (one block, once).
                Err(theirs) => theirs,
            };
        }
        // SAFETY: installed blocks are leaked, so live forever.
        unsafe { &*block }
    }

    /// # Safety
    /// `index` must be a node's `index` field.
    #[inline]
    pub unsafe fn get(index: NonZeroU32) -> &'static Node {
        let number = index.get() as usize - 1;
        // Acquire, both: the block and the node were published with Release.
        let block = TABLE[number / BLOCK].load(Acquire);
        // SAFETY: the node exists (the caller's promise), so its block was installed first.
        let node = unsafe { &*block }[number % BLOCK].load(Acquire);
        // SAFETY: as above; nodes are leaked.
        unsafe { super::from_ptr(node) }
    }

    #[cfg(test)]
    mod tests {
        use super::super::{as_ptr, fresh};
        use super::*;

        #[test]
        fn every_number_names_its_node_across_threads_and_blocks() {
            // More nodes than a block holds, made on four threads at once: numbers are
            // distinct, and each finds its own node.
            let made: Vec<Vec<usize>> = std::thread::scope(|s| {
                let makers: Vec<_> = (0..4)
                    .map(|_| s.spawn(|| (0..BLOCK / 2 + 1).map(|_| as_ptr(fresh()) as usize).collect::<Vec<_>>()))
                    .collect();
                makers.into_iter().map(|m| m.join().unwrap()).collect()
            });
            let mut numbers = Vec::new();
            for &address in made.iter().flatten() {
                // SAFETY: addresses of nodes from `fresh`, which live forever.
                let node = unsafe { super::super::from_ptr(address as *mut Node) };
                numbers.push(node.index);
                // SAFETY: a node's own number.
                assert_eq!(as_ptr(unsafe { get(node.index) }) as usize, address, "number {}", node.index);
            }
            numbers.sort_unstable();
            numbers.dedup();
            assert_eq!(numbers.len(), 4 * (BLOCK / 2 + 1), "two nodes share a number");
        }
    }
}

#[cfg(loom)]
mod index {
    //! Under loom, a plain list: loom runs one thread at a time, and its atomics cannot live
    //! in a static. Nodes are leaked at each execution's end, so the list only grows.
    use super::Node;
    use core::num::NonZeroU32;

    static NODES: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

    fn nodes() -> std::sync::MutexGuard<'static, Vec<usize>> {
        NODES.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn register(make: impl FnOnce(NonZeroU32) -> &'static Node) -> &'static Node {
        let mut nodes = nodes();
        let index = NonZeroU32::new(u32::try_from(nodes.len() + 1).expect("under 4 billion nodes")).unwrap();
        let node = make(index);
        nodes.push(super::as_ptr(node) as usize);
        node
    }

    pub unsafe fn get(index: NonZeroU32) -> &'static Node {
        let address = nodes()[index.get() as usize - 1];
        // SAFETY: the list holds only leaked nodes.
        unsafe { super::from_ptr(address as *mut Node) }
    }
}

#[cfg(not(loom))]
mod pool {
    //! The per-thread cache is a fixed stack of `Cell`s: taking or giving a node is a few
    //! plain loads and stores, with no `RefCell` borrow flag and no `Vec` that could grow (and
    //! allocate) inside an unlock. Past [`CACHED`] nodes, or during thread teardown, nodes go
    //! to a global pool that takes no lock, so a `fork()` in a multithreaded process cannot
    //! leave it locked in the child (its only thread would then hang in the next lock).
    //!
    //! The global pool is an intrusive stack linked through `QueueNode::pool_next`. Nodes are
    //! pushed one at a time (a CAS, which is free of ABA: it only publishes our own node) and
    //! taken all at once (a swap of the head with null). Taking one node off the top with a
    //! CAS would not be safe: between reading the top and its link, another thread could take
    //! both and give the top back, and the CAS would install a link to a node in use.
    use super::{fresh, Node};
    use crate::sync::{AtomicPtr, Ordering::*};
    use core::cell::Cell;
    use core::ptr::null_mut;

    /// Nodes a thread keeps for itself: one per queue lock it holds or waits for at once,
    /// plus the CLH predecessors it takes over. Sixteen covers nesting far deeper than real
    /// code does; deeper nesting still works, through the global pool.
    const CACHED: usize = 16;

    /// Free nodes of threads that have exited, or that had more than they could keep.
    static POOL: AtomicPtr<Node> = AtomicPtr::new(null_mut());

    struct Cache {
        nodes: [Cell<*const Node>; CACHED],
        len: Cell<usize>,
    }

    impl Drop for Cache {
        fn drop(&mut self) {
            for slot in &self.nodes[..self.len.get()] {
                // SAFETY: the cache holds only nodes from `fresh`, which live forever.
                push_global(unsafe { &*slot.get() });
            }
        }
    }

    std::thread_local! {
        static CACHE: Cache = const {
            Cache { nodes: [const { Cell::new(core::ptr::null()) }; CACHED], len: Cell::new(0) }
        };
    }

    #[inline]
    pub fn take() -> &'static Node {
        let cached = CACHE.try_with(|cache| {
            let len = cache.len.get();
            (len > 0).then(|| {
                cache.len.set(len - 1);
                cache.nodes[len - 1].get()
            })
        });
        match cached {
            // SAFETY: the cache holds only nodes from `fresh`, which live forever.
            Ok(Some(node)) => unsafe { &*node },
            _ => take_slow(),
        }
    }

    #[inline]
    pub fn give(node: &'static Node) {
        let kept = CACHE.try_with(|cache| {
            let len = cache.len.get();
            let room = len < CACHED;
            if room {
                cache.nodes[len].set(node);
                cache.len.set(len + 1);
            }
            room
        });
        if kept != Ok(true) {
            push_global(node);
        }
    }

    #[cold]
    fn take_slow() -> &'static Node {
        // Acquire: the nodes' links, written before each was pushed, are visible.
        let mut list = POOL.swap(null_mut(), Acquire);
        if list.is_null() {
            return fresh();
        }
        // SAFETY: the pool holds only nodes from `fresh`, which live forever.
        let first = unsafe { &*list };
        list = first.pool_next.load(Relaxed);
        // Keep what fits in our cache; give the rest back.
        while !list.is_null() {
            // SAFETY: as above.
            let node = unsafe { &*list };
            list = node.pool_next.load(Relaxed);
            give(node);
        }
        first
    }

    fn push_global(node: &'static Node) {
        let mut head = POOL.load(Relaxed);
        loop {
            node.pool_next.store(head, Relaxed);
            // Release: the link above is visible to whoever takes the list.
            match POOL.compare_exchange_weak(head, super::as_ptr(node), Release, Relaxed) {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// How many different nodes `nodes` holds.
        fn distinct(nodes: &[&'static Node]) -> usize {
            let mut addresses: Vec<usize> = nodes.iter().map(|n| super::super::as_ptr(n) as usize).collect();
            addresses.sort_unstable();
            addresses.dedup();
            addresses.len()
        }

        #[test]
        fn nodes_come_back_from_the_cache_and_from_the_pool_without_duplicates() {
            std::thread::spawn(|| {
                // More than the cache holds: the surplus goes through the global pool, and a
                // node taken twice would show as fewer distinct nodes than were taken.
                for round in 0..2 {
                    let nodes: Vec<&'static Node> = (0..3 * CACHED).map(|_| take()).collect();
                    assert_eq!(distinct(&nodes), 3 * CACHED, "a node was handed out twice (round {round})");
                    for node in nodes {
                        give(node);
                    }
                }
            })
            .join()
            .unwrap();
        }
    }
}

#[cfg(loom)]
mod pool {
    use super::{fresh, Node};
    use std::cell::RefCell;
    use std::collections::BTreeSet;

    // Reuse within one execution, like the real per-thread cache: a node that comes back to
    // the queue while another thread still holds a stale pointer to it (ABA) is a race the
    // models must be able to see. Loom's thread-locals live for one execution.
    crate::sync::thread_local! {
        static CACHE: RefCell<Vec<&'static Node>> = RefCell::new(Vec::new());
    }

    /// The addresses of the nodes that are free now. A node given back while it is already
    /// free would later be handed out twice, to two queues at once; `give` fails the model
    /// at the second return instead, in every execution where it happens, not only in those
    /// where the two uses go on to collide. (A plain std mutex: loom runs one thread at a
    /// time, and nodes are leaked, so an address is never reused across executions.)
    static FREE: std::sync::Mutex<BTreeSet<usize>> = std::sync::Mutex::new(BTreeSet::new());

    fn free_nodes() -> std::sync::MutexGuard<'static, BTreeSet<usize>> {
        FREE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records `node` as free; false if it already was.
    fn mark_free(node: &'static Node) -> bool {
        free_nodes().insert(super::as_ptr(node) as usize)
    }

    fn mark_taken(node: &'static Node) {
        free_nodes().remove(&(super::as_ptr(node) as usize));
    }

    pub fn take() -> &'static Node {
        match CACHE.try_with(|cache| cache.borrow_mut().pop()).ok().flatten() {
            Some(node) => {
                mark_taken(node);
                node
            }
            None => fresh(),
        }
    }

    pub fn give(node: &'static Node) {
        assert!(mark_free(node), "a queue node was given back while it was already free");
        // During thread teardown the cache may be gone: the node just leaks.
        let _ = CACHE.try_with(|cache| cache.borrow_mut().push(node));
    }
}

/// A free node for this thread to enqueue. Its fields hold whatever its last user left: the
/// caller initialises them before publishing the node.
#[inline]
pub(crate) fn take() -> &'static Node {
    pool::take()
}

/// Returns a node nobody will touch again (except, harmlessly, a late wake-up on its address).
#[inline]
pub(crate) fn give(node: &'static Node) {
    pool::give(node)
}

pub(crate) fn as_ptr(node: &'static Node) -> *mut Node {
    node as *const Node as *mut Node
}

/// # Safety
/// `ptr` must come from [`as_ptr`] (every node lives forever).
pub(crate) unsafe fn from_ptr(ptr: *mut Node) -> &'static Node {
    // SAFETY: nodes are leaked, so a pointer to one is valid for 'static.
    unsafe { &*ptr }
}
