//! The queue nodes of MCS, CLH, Reciprocating and Malthusian, and where they come from without allocating per acquisition.
//!
//! Nodes are allocated once and never freed: a node may still be read by another thread
//! after its last owner is done with it (a CLH successor spins on its predecessor's node; an
//! MCS head may wake a node whose owner has moved on), and never freeing makes that safe
//! without a reclamation scheme. Each thread keeps a small cache of free nodes and returns
//! them to a lock-free global pool, which threads draw from first, when it exits or has too
//! many. Memory is bounded by the most nodes ever in use at once, plus the threads' caches.
//! Under loom nodes are reused within one model execution and leaked at its end: loom's
//! atomics belong to one execution and cannot be pooled across them.

use crate::padded::CachePadded;
use crate::sync::{AtomicPtr, AtomicU32};

/// One queue node, alone on its line: the waiter (MCS) or its successor (CLH) spins on
/// `state`, and the line must not be shared with anything another thread writes.
pub(crate) struct QueueNode {
    /// The node's number, which a queue's tail holds instead of its address (see [`index`]).
    pub index: u32,
    /// The word waited on; values are defined by the lock that uses the node.
    pub state: AtomicU32,
    /// MCS: the successor, linked by the successor itself. CLH: unused.
    pub next: AtomicPtr<Node>,
    /// CLH: the predecessor to wait on instead, published by a waiter that timed out; while
    /// the node's owner holds the lock, the predecessor it takes over on release (`clh.rs`
    /// explains why the two uses never overlap). MCS: unused.
    pub pred: AtomicPtr<Node>,
    /// Reciprocating: the end of the segment the node's waiter is admitted into, written by
    /// the thread that admits it before it changes `state`.
    pub segment_end: AtomicU32,
    /// Reciprocating: the arrival below this one in the stack, published by a waiter that
    /// timed out, so that the thread admitting its node can skip to that arrival. Malthusian:
    /// the next older node on the passive stack (0: none).
    pub below: AtomicU32,
    /// CNA: the group (NUMA node) its waiter ran in when it queued. Written before the node
    /// is published, read only by heads choosing whom to pass to. Others: unused.
    pub group: AtomicU32,
    /// CNA: what headship carries to the next head (`cna.rs`'s `Secondary`): the secondary
    /// queue's first and last nodes' numbers, and the hand-overs past the oldest waiter.
    pub secondary_first: AtomicU32,
    pub secondary_last: AtomicU32,
    pub bypasses: AtomicU32,
    /// HMCS: what local headship carries to the next head of a group's queue (`hmcs.rs`'s
    /// `Headship`): the number of the node its group holds in the root queue (0: none), and
    /// the hand-overs within the group since that node became the root's head.
    pub root_node: AtomicU32,
    pub passes: AtomicU32,
    /// The link of the global pool of free nodes; used only while the node is free.
    #[cfg_attr(loom, allow(dead_code))]
    pub pool_next: AtomicPtr<Node>,
}

pub(crate) type Node = CachePadded<QueueNode>;

fn fresh() -> &'static Node {
    let index = index::next();
    let node: &'static Node = Box::leak(Box::new(CachePadded::new(QueueNode {
        index,
        state: AtomicU32::new(0),
        next: AtomicPtr::new(core::ptr::null_mut()),
        pred: AtomicPtr::new(core::ptr::null_mut()),
        segment_end: AtomicU32::new(0),
        below: AtomicU32::new(0),
        group: AtomicU32::new(0),
        secondary_first: AtomicU32::new(0),
        secondary_last: AtomicU32::new(0),
        bypasses: AtomicU32::new(0),
        root_node: AtomicU32::new(0),
        passes: AtomicU32::new(0),
        pool_next: AtomicPtr::new(core::ptr::null_mut()),
    })));
    index::publish(node);
    node
}

pub(crate) mod index {
    //! Every node has a number, from 1, so that a queue's tail can be 4 bytes instead of a
    //! pointer's 8, as Linux's qspinlock keeps a CPU and a nesting level in its tail. A number
    //! names the same node for ever (nodes are never freed), so a stale number read from a
    //! tail is as safe as a stale pointer.
    //!
    //! The table has two levels: 65 536 chunk pointers (512 KiB of zeroed static memory, of
    //! which a process touches one page per 512 chunks it uses) and chunks of 65 536 node
    //! pointers, each allocated zeroed when its first number is handed out. It covers every
    //! `u32` but 0 ("no node") and [`RESERVED`]; 2^32 - 2 nodes of 128 bytes would need 512 GiB first.
    //!
    //! It uses the standard library's atomics, under loom too: it is written once per node,
    //! before the number can reach another thread (through the pools or a tail, each a
    //! Release/Acquire pair), and it is not one of the models' subjects.
    use super::Node;
    use core::ptr::null_mut;
    use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering::*};

    const CHUNK_BITS: u32 = 16;
    const CHUNK: usize = 1 << CHUNK_BITS;
    type Chunk = [AtomicPtr<Node>; CHUNK];

    static CHUNKS: [AtomicPtr<Chunk>; 1 << (32 - CHUNK_BITS)] =
        [const { AtomicPtr::new(null_mut()) }; 1 << (32 - CHUNK_BITS)];
    static NEXT: AtomicU32 = AtomicU32::new(1);

    /// The one nonzero number no node gets, so that a lock's word can hold it beside node
    /// numbers (Reciprocating's "locked, nobody arrived").
    pub(crate) const RESERVED: u32 = u32::MAX;

    /// A number for a new node.
    pub(super) fn next() -> u32 {
        let index = NEXT.fetch_add(1, Relaxed);
        // Unreachable in practice (the module docs say why); a wrapped number would name
        // another node.
        assert!(index != 0 && index != RESERVED, "spinlab: more than 4 294 967 294 queue nodes were created");
        index
    }

    /// Records `node` under its number.
    pub(super) fn publish(node: &'static Node) {
        let index = node.index as usize;
        let slot = &CHUNKS[index >> CHUNK_BITS];
        let mut chunk = slot.load(Acquire);
        if chunk.is_null() {
            // SAFETY: an all-zero `AtomicPtr` is a valid null pointer.
            let fresh = Box::into_raw(unsafe { Box::<Chunk>::new_zeroed().assume_init() });
            // AcqRel: the chunk's zeroed memory is visible to whoever loads it (Release);
            // a chunk another thread installed first is visible to us (Acquire).
            chunk = match slot.compare_exchange(null_mut(), fresh, AcqRel, Acquire) {
                Ok(_) => fresh,
                Err(installed) => {
                    // SAFETY: ours, never shared.
                    drop(unsafe { Box::from_raw(fresh) });
                    installed
                }
            };
        }
        // SAFETY: chunks are never freed once installed.
        let chunk = unsafe { &*chunk };
        // Release: the node's fields are visible to whoever looks the number up.
        chunk[index & (CHUNK - 1)].store(super::as_ptr(node), Release);
    }

    /// The node numbered `index`.
    ///
    /// # Safety
    ///
    /// `index` was read from a node's `index` field (every such number is published before
    /// the node is handed out).
    #[inline]
    pub(crate) unsafe fn node(index: u32) -> &'static Node {
        let index = index as usize;
        // Acquire: pairs with `publish`'s Release stores.
        let chunk = CHUNKS[index >> CHUNK_BITS].load(Acquire);
        // SAFETY: the caller's number was published, so its chunk is installed; chunks and
        // nodes are never freed.
        unsafe { &*(*chunk)[index & (CHUNK - 1)].load(Acquire) }
    }
}

#[cfg(not(loom))]
mod pool {
    //! The per-thread cache is a fixed stack of `Cell`s: taking or giving a node is a few plain
    //! loads and stores, with no borrow flag and no `Vec` that could allocate inside an unlock.
    //! Past [`CACHED`] nodes, or during thread teardown, nodes go to a global pool that takes
    //! no lock, so a `fork()` in a multithreaded process cannot leave it locked in the child.
    //!
    //! In front of the cache sits one slot, [`SPARE`], a thread-local with no destructor: an
    //! uncontended CLH release gives back a node and the next acquisition takes it again, and
    //! through the spare that round trip is one load and one store at a fixed address, without
    //! the cache's destructor-registration check and length. The spare opens at the thread's
    //! first use of the cache, which registers the cache's destructor, and that destructor
    //! closes it ([`CLOSED`]): a node in the spare always reaches the global pool when its
    //! thread exits, and a node given back after that goes straight there.
    //!
    //! The global pool is an intrusive stack through `QueueNode::pool_next`: nodes are pushed
    //! one at a time (a CAS, free of ABA since it publishes only our own node) and taken all at
    //! once (a swap with null). Popping one node with a CAS would not be safe: between reading
    //! the top and its link, another thread could take both and give the top back.
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

    /// The spare's value while the thread's cache is not alive (before its first use, whose
    /// destructor registration would otherwise be skipped, and after its destruction): neither
    /// null (open and empty) nor a node.
    const CLOSED: *const Node = core::ptr::dangling();

    std::thread_local! {
        /// One free node kept in front of [`CACHE`]: null when empty, [`CLOSED`] while the
        /// cache is not alive. No destructor, so reaching it checks nothing.
        static SPARE: Cell<*const Node> = const { Cell::new(CLOSED) };
    }

    impl Drop for Cache {
        fn drop(&mut self) {
            // Every later `give` then goes to the global pool, and every later `take` too.
            let spare = SPARE.with(|spare| spare.replace(CLOSED));
            if !spare.is_null() && spare != CLOSED {
                // SAFETY: the spare holds only nodes from `fresh`, which live forever.
                push_global(unsafe { &*spare });
            }
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
        let spare = SPARE.with(|spare| {
            let node = spare.get();
            let free = !node.is_null() && node != CLOSED;
            if free {
                spare.set(null_mut());
            }
            free.then_some(node)
        });
        match spare {
            // SAFETY: the spare holds only nodes from `fresh`, which live forever.
            Some(node) => unsafe { &*node },
            None => take_cached(),
        }
    }

    #[inline]
    fn take_cached() -> &'static Node {
        let cached = CACHE.try_with(|cache| {
            // The cache is alive and its destructor registered: the spare may open.
            SPARE.with(|spare| {
                if spare.get() == CLOSED {
                    spare.set(null_mut());
                }
            });
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
        let kept = SPARE.with(|spare| {
            let empty = spare.get().is_null();
            if empty {
                spare.set(node);
            }
            empty
        });
        if !kept {
            give_cached(node);
        }
    }

    #[inline]
    fn give_cached(node: &'static Node) {
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
        #[cfg(test)]
        tests::pushed(node);
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
        use std::collections::HashMap;
        use std::sync::Mutex;

        /// How many times each node was pushed to the global pool, by address.
        static PUSHED: Mutex<Option<HashMap<usize, usize>>> = Mutex::new(None);

        pub(super) fn pushed(node: &'static Node) {
            let mut pushed = PUSHED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            *pushed.get_or_insert_with(HashMap::new).entry(super::super::as_ptr(node) as usize).or_default() += 1;
        }

        fn pushes(address: usize) -> usize {
            let pushed = PUSHED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            pushed.as_ref().and_then(|map| map.get(&address).copied()).unwrap_or(0)
        }

        /// A thread runs `body`, which gives back a node and returns its address, and exits;
        /// the node must then be in the global pool, not lost with the thread.
        ///
        /// Until that thread pushes it, nobody else can: the node is the thread's alone. Once
        /// it is in the pool, the tests running beside this one may take it, give it back and
        /// push it again before the count is read here (4 pushes, say, where the exit made the
        /// second). So any push after `before` shows that the exit pushed it, and
        /// none that it was lost.
        fn returned_at_exit(body: impl FnOnce() -> usize + Send + 'static) {
            let (address, before) = std::thread::spawn(|| {
                let address = body();
                (address, pushes(address))
            })
            .join()
            .unwrap();
            assert!(pushes(address) > before, "a free node was lost when its thread exited");
        }

        #[test]
        fn the_spare_goes_back_to_the_pool_when_its_thread_exits() {
            returned_at_exit(|| {
                let node = take();
                // Empty the spare (a take from the global pool may have filled it).
                let mut others = Vec::new();
                while !SPARE.with(Cell::get).is_null() {
                    others.push(take());
                }
                give(node);
                others.into_iter().for_each(give);
                let address = super::super::as_ptr(node) as usize;
                assert_eq!(SPARE.with(Cell::get) as usize, address, "the node given back should wait in the spare");
                address
            });
        }

        /// A thread whose first use of the pool is a `give` (a lock dropped, say) has not yet
        /// registered the cache's destructor: its node must not wait in the spare, where
        /// nothing would return it at exit.
        #[test]
        fn a_node_given_before_any_take_goes_back_to_the_pool_at_exit() {
            let address = std::thread::spawn(|| super::super::as_ptr(take()) as usize).join().unwrap();
            returned_at_exit(move || {
                // SAFETY: the node came from `take` on a thread that has exited without it.
                give(unsafe { &*(address as *const Node) });
                address
            });
        }

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

#[cfg(all(test, not(loom)))]
mod index_tests {
    use super::*;
    use crate::lock::{Mcs, McsQueue};
    use crate::wait::{Spin, SpinPark};
    use std::collections::HashSet;

    /// Makes `n` nodes and checks that each number names its own node. Returns the numbers.
    /// The nodes are new and never pooled: the pool's tests count what passes through it.
    fn round_trip(n: usize) -> Vec<u32> {
        let nodes: Vec<&'static Node> = (0..n).map(|_| fresh()).collect();
        for node in &nodes {
            // SAFETY: a node's own number.
            let named = unsafe { index::node(node.index) };
            assert!(core::ptr::eq(named, *node), "number {} names another node", node.index);
        }
        nodes.iter().map(|node| node.index).collect()
    }

    /// More nodes than one chunk of the table holds, then four threads making nodes at once:
    /// every number names its node, none is 0, and no two nodes share a number.
    #[test]
    fn every_number_names_its_own_node() {
        let mut numbers = round_trip(70_000);
        let threads: Vec<_> = (0..4).map(|_| std::thread::spawn(|| round_trip(1_000))).collect();
        for thread in threads {
            numbers.extend(thread.join().unwrap());
        }
        assert!(!numbers.contains(&0), "0 means an empty queue");
        assert_eq!(numbers.iter().collect::<HashSet<_>>().len(), numbers.len(), "two nodes share a number");
    }

    #[test]
    fn an_mcs_queue_is_four_bytes() {
        assert_eq!(size_of::<McsQueue<Spin>>(), 4);
        assert_eq!(size_of::<Mcs<SpinPark>>(), 8, "the word and the tail");
    }
}
