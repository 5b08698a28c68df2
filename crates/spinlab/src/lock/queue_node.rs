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
}

pub(crate) type Node = CachePadded<QueueNode>;

fn fresh() -> &'static Node {
    Box::leak(Box::new(CachePadded::new(QueueNode {
        state: AtomicU32::new(0),
        next: AtomicPtr::new(core::ptr::null_mut()),
        pred: AtomicPtr::new(core::ptr::null_mut()),
        pool_next: AtomicPtr::new(core::ptr::null_mut()),
    })))
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
