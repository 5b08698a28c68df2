//! MCS queue lock (Mellor-Crummey and Scott, 1991): each waiter spins on its own node, and the
//! holder hands the lock to its successor by writing that node alone. A hand-over touches one
//! waiter's line, whatever the number of waiters.
//!
//! Node states (`QueueNode::state`, written by the waiter and by the releaser that grants it):
//!
//! | value | name        | meaning                                                          |
//! |-------|-------------|------------------------------------------------------------------|
//! | 0     | `GRANTED`   | the lock is this node's                                          |
//! | 1     | `WAITING`   | queued, spinning                                                 |
//! | 2     | `ASLEEP`    | queued, may be asleep on `state`: the granter must wake it         |
//! | 3     | `ABANDONED` | the waiter timed out and left; the node now belongs to the queue |
//!
//! A timed-out waiter cannot unlink itself (its predecessor may be granting it at that
//! moment), so it marks its node `ABANDONED` with one CAS and leaves. A releaser that grants
//! an abandoned node finds out from the value its swap returns, takes the node as its own, and
//! passes the lock on to that node's successor, or frees the lock if there is none.

use super::queue_node::{self, Node};
use crate::sync::{AtomicPtr, Ordering::*};
use crate::wait::{Episode, Spun, Wait};
use core::marker::PhantomData;
use core::ptr::null_mut;
use lock_api::{RawMutex, RawMutexFair};
use std::time::Instant;

const GRANTED: u32 = 0;
const WAITING: u32 = 1;
const ASLEEP: u32 = 2;
const ABANDONED: u32 = 3;

/// MCS queue lock waiting with policy `W`. One word: the queue's tail.
///
/// ```
/// use spinlab::{lock::Mcs, wait::SpinPark};
/// let m = lock_api::Mutex::<Mcs<SpinPark>, _>::new(0u32);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// ```
pub struct Mcs<W: Wait> {
    tail: AtomicPtr<Node>,
    policy: PhantomData<fn() -> W>,
}

/// What an MCS holder keeps while it holds the lock: its queue node.
pub struct McsGuard {
    node: &'static Node,
}

impl<W: Wait> Mcs<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Mcs { tail: AtomicPtr::new(null_mut()), policy: PhantomData }
        }
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<McsGuard> {
        let (node, pred) = self.enqueue();
        if pred.is_null() || self.wait_behind(node, pred, deadline) {
            Some(McsGuard { node })
        } else {
            None
        }
    }

    /// Takes a node and swaps it into the tail; returns it and its predecessor (null: the
    /// lock was free and is ours).
    #[inline(always)]
    fn enqueue(&self) -> (&'static Node, *mut Node) {
        let node = queue_node::take();
        node.next.store(null_mut(), Relaxed);
        node.state.store(WAITING, Relaxed);
        // AcqRel: Release publishes the node's initialised fields to the successor that will
        // read our `next`; Acquire makes the predecessor's node visible to us.
        (node, self.tail.swap(queue_node::as_ptr(node), AcqRel))
    }

    /// Links `node` behind `pred` and waits to be granted. On time-out, abandons the node and
    /// returns `false`.
    #[cold]
    fn wait_behind(&self, node: &'static Node, pred: *mut Node, deadline: Option<Instant>) -> bool {
        // SAFETY: queue pointers always come from `queue_node::as_ptr`.
        let pred = unsafe { queue_node::from_ptr(pred) };
        // Release: the successor's node fields, initialised in `enqueue`, are visible to the
        // predecessor's holder when it reads `next` with Acquire.
        pred.next.store(queue_node::as_ptr(node), Release);
        self.wait_granted(node, deadline)
    }

    /// Waits until `node` is granted. On time-out, abandons the node (which then belongs to
    /// the queue) and returns `false`.
    #[cold]
    fn wait_granted(&self, node: &'static Node, deadline: Option<Instant>) -> bool {
        let mut episode = Episode::new(deadline);
        loop {
            // Acquire: on GRANTED, the granting holder's critical section (its Release swap)
            // happens-before ours.
            let seen = node.state.load(Acquire);
            if seen == GRANTED {
                return true;
            }
            match W::spin(&node.state, seen, &mut episode) {
                Spun::Changed => {}
                Spun::TimedOut => return !self.abandon(node),
                Spun::Exhausted => {
                    // Acquire on both outcomes: a failure that reads GRANTED is our acquisition.
                    if node.state.compare_exchange(WAITING, ASLEEP, Acquire, Acquire) == Err(GRANTED) {
                        return true;
                    }
                    if W::sleep(&node.state, ASLEEP, deadline) == crate::sys::futex::FutexWait::TimedOut {
                        return !self.abandon(node);
                    }
                    episode.restart_spinning();
                }
            }
        }
    }

    /// Tries to leave the queue. Returns `false` if the lock was granted first (we hold it).
    #[cold]
    fn abandon(&self, node: &'static Node) -> bool {
        // Acquire: a GRANTED read here is an acquisition, as in `wait_granted`.
        let mut seen = node.state.load(Acquire);
        loop {
            if seen == GRANTED {
                return false;
            }
            match node.state.compare_exchange(seen, ABANDONED, Acquire, Acquire) {
                Ok(_) => return true,
                Err(now) => seen = now,
            }
        }
    }

    #[cold]
    fn wait_for_successor_link(node: &'static Node) -> *mut Node {
        // The successor swapped itself into the tail and is about to store into our `next`:
        // a window of a few instructions, unless it was preempted in between.
        let mut spins = 0u32;
        loop {
            let next = node.next.load(Acquire);
            if !next.is_null() {
                return next;
            }
            spins += 1;
            if spins < 100 {
                crate::sync::cpu_relax();
            } else {
                crate::sync::yield_now();
            }
            crate::sync::spin_iteration_done();
        }
    }
}

impl<W: Wait> Default for Mcs<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the lock is held by the node at the head of the queue: the first node swapped into
// an empty tail, then each node granted by its predecessor's holder. Grants are Release swaps
// observed by the waiter's Acquire load.
unsafe impl<W: Wait> RawMutex for Mcs<W> {
    crate::sync::raw_init!();
    type Guard = McsGuard;

    #[inline]
    fn lock(&self) -> McsGuard {
        let (node, pred) = self.enqueue();
        if !pred.is_null() {
            let granted = self.wait_behind(node, pred, None);
            debug_assert!(granted, "an acquisition without a deadline cannot time out");
        }
        McsGuard { node }
    }

    #[inline]
    fn try_lock(&self) -> Option<McsGuard> {
        if !self.tail.load(Relaxed).is_null() {
            return None;
        }
        let node = queue_node::take();
        node.next.store(null_mut(), Relaxed);
        match self.tail.compare_exchange(null_mut(), queue_node::as_ptr(node), AcqRel, Relaxed) {
            Ok(_) => Some(McsGuard { node }),
            Err(_) => {
                queue_node::give(node);
                None
            }
        }
    }

    #[inline]
    unsafe fn unlock(&self, guard: McsGuard) {
        let node = guard.node;
        // Acquire on `next`: the successor's node fields, published by its Release store of
        // `next`, are visible before `hand_over` writes its state. Release on the CAS: the
        // critical section happens-before the next acquirer's Acquire swap.
        if node.next.load(Acquire).is_null()
            && self.tail.compare_exchange(queue_node::as_ptr(node), null_mut(), Release, Relaxed).is_ok()
        {
            queue_node::give(node);
            return;
        }
        self.hand_over(node);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        !self.tail.load(Relaxed).is_null()
    }
}

impl<W: Wait> Mcs<W> {
    /// Passes the lock to `node`'s successor (which has swapped itself into the tail, and
    /// may not have linked itself yet), skipping successors that abandoned their nodes.
    #[cold]
    fn hand_over(&self, mut node: &'static Node) {
        loop {
            let mut next = node.next.load(Acquire);
            if next.is_null() {
                // No successor linked yet: if we are still the tail, the queue empties.
                if self.tail.compare_exchange(queue_node::as_ptr(node), null_mut(), Release, Relaxed).is_ok() {
                    queue_node::give(node);
                    return;
                }
                next = Self::wait_for_successor_link(node);
            }
            // Our node is no longer referenced by anyone once its successor is known.
            queue_node::give(node);
            // SAFETY: queue pointers always come from `queue_node::as_ptr`.
            let successor = unsafe { queue_node::from_ptr(next) };
            // Release: the critical section happens-before the successor's Acquire load.
            match successor.state.swap(GRANTED, AcqRel) {
                ASLEEP => {
                    W::wake_one(&successor.state);
                }
                // The successor left: its node is ours now; pass the lock on past it.
                ABANDONED => {
                    node = successor;
                    continue;
                }
                _ => {}
            }
            return;
        }
    }
}

// SAFETY: unlock already hands over in queue order.
unsafe impl<W: Wait> RawMutexFair for Mcs<W> {
    #[inline]
    unsafe fn unlock_fair(&self, guard: McsGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlock(guard) }
    }
}

super::timed_via_lock_until!(Mcs);
