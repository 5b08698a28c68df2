//! The queue nodes of MCS and CLH, and where they come from without an allocation per
//! acquisition.
//!
//! Nodes are allocated once and never freed: a node may still be read by another thread after
//! its last owner is done with it (a CLH successor spins on its predecessor's node; an MCS
//! releaser may wake a node whose owner has already moved on), and never freeing makes that
//! safe without reclamation schemes. Each thread keeps a small cache of free nodes; a thread
//! that exits returns its cache to a global pool, from which new threads draw first. Memory
//! is bounded by the most nodes ever in use at once (held + waiting, across all queue locks).
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
    /// CLH: the predecessor to wait on instead, published by a waiter that timed out.
    pub pred: AtomicPtr<Node>,
}

pub(crate) type Node = CachePadded<QueueNode>;

fn fresh() -> &'static Node {
    Box::leak(Box::new(CachePadded::new(QueueNode {
        state: AtomicU32::new(0),
        next: AtomicPtr::new(core::ptr::null_mut()),
        pred: AtomicPtr::new(core::ptr::null_mut()),
    })))
}

#[cfg(not(loom))]
mod pool {
    use super::{fresh, Node};
    use std::cell::RefCell;
    use std::sync::Mutex;

    /// Free nodes of threads that have exited.
    static ORPHANS: Mutex<Vec<&'static Node>> = Mutex::new(Vec::new());

    struct Cache(Vec<&'static Node>);

    impl Drop for Cache {
        fn drop(&mut self) {
            if let Ok(mut orphans) = ORPHANS.lock() {
                orphans.append(&mut self.0);
            }
        }
    }

    std::thread_local! {
        static CACHE: RefCell<Cache> = const { RefCell::new(Cache(Vec::new())) };
    }

    #[inline]
    pub fn take() -> &'static Node {
        CACHE.try_with(|cache| cache.borrow_mut().0.pop()).ok().flatten().unwrap_or_else(take_slow)
    }

    #[cold]
    fn take_slow() -> &'static Node {
        ORPHANS.lock().ok().and_then(|mut orphans| orphans.pop()).unwrap_or_else(fresh)
    }

    #[inline]
    pub fn give(node: &'static Node) {
        // During thread teardown the cache may be gone: hand the node to the global pool.
        if CACHE.try_with(|cache| cache.borrow_mut().0.push(node)).is_err() {
            if let Ok(mut orphans) = ORPHANS.lock() {
                orphans.push(node);
            }
        }
    }
}

#[cfg(loom)]
mod pool {
    use super::{fresh, Node};
    use std::cell::RefCell;

    // Reuse within one execution, like the real per-thread cache: a node that comes back to
    // the queue while another thread still holds a stale pointer to it (ABA) is a race the
    // models must be able to see. Loom's thread-locals live for one execution.
    crate::sync::thread_local! {
        static CACHE: RefCell<Vec<&'static Node>> = RefCell::new(Vec::new());
    }

    pub fn take() -> &'static Node {
        CACHE.try_with(|cache| cache.borrow_mut().pop()).ok().flatten().unwrap_or_else(fresh)
    }

    pub fn give(node: &'static Node) {
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
