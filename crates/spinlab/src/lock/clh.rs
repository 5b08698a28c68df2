//! CLH queue lock (Craig; Landin and Hagersten): each waiter spins on its *predecessor's*
//! node, and a holder releases by writing its own node. On release the holder takes over its
//! predecessor's node for later use, so nodes migrate between threads and the lock always
//! keeps the last released node as its tail.
//!
//! Node states (`QueueNode::state` of the node a thread enqueued; its successor watches it):
//!
//! | value | name            | meaning                                                        |
//! |-------|-----------------|----------------------------------------------------------------|
//! | 0     | `RELEASED`      | the owner released the lock: the successor holds it now        |
//! | 1     | `BUSY`          | the owner holds the lock or waits for it                       |
//! | 2     | `BUSY_SLEEPER`  | as `BUSY`, and the successor may be asleep on `state`          |
//! | 3     | `ABANDONED`     | the owner timed out; wait on the node in `pred` instead        |
//!
//! A timed-out waiter first tries to take itself back out of the tail (possible when nobody
//! queued behind it); otherwise it publishes its predecessor in `pred` and marks its node
//! `ABANDONED`, and its successor moves on to that predecessor and takes the abandoned node.
//! `tail == null` means a fresh lock: free, with no node yet.
//!
//! The tail itself can be an abandoned node: a waiter that takes itself out of the tail puts
//! back its predecessor, whose owner may have timed out meanwhile and, finding our node behind
//! it, marked it `ABANDONED` instead of leaving the tail. So the lock is free when the chain
//! of abandoned nodes from the tail ends at a `RELEASED` node; `try_lock` and `is_locked`
//! follow that chain as a waiter does.

use super::queue_node::{self, Node};
use crate::sync::{AtomicPtr, Ordering::*};
use crate::wait::{Episode, Spun, Wait};
use core::marker::PhantomData;
use core::ptr::null_mut;
use lock_api::{RawMutex, RawMutexFair};
use std::time::Instant;

const RELEASED: u32 = 0;
const BUSY: u32 = 1;
const BUSY_SLEEPER: u32 = 2;
const ABANDONED: u32 = 3;

/// CLH queue lock waiting with policy `W`. One word: the queue's tail.
///
/// ```
/// use spinlab::{lock::Clh, wait::Spin};
/// let m = lock_api::Mutex::<Clh<Spin>, _>::new(String::new());
/// m.lock().push('a');
/// assert_eq!(*m.lock(), "a");
/// ```
pub struct Clh<W: Wait> {
    tail: AtomicPtr<Node>,
    policy: PhantomData<fn() -> W>,
}

/// What a CLH holder keeps: the node it enqueued and the predecessor node it will take over.
pub struct ClhGuard {
    node: &'static Node,
    pred: Option<&'static Node>,
}

enum Waited {
    Acquired(Option<&'static Node>),
    TimedOut,
}

impl<W: Wait> Clh<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Clh { tail: AtomicPtr::new(null_mut()), policy: PhantomData }
        }
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<ClhGuard> {
        let node = queue_node::take();
        node.state.store(BUSY, Relaxed);
        node.pred.store(null_mut(), Relaxed);
        // AcqRel: publish our node's state to the successor; see the predecessor's node.
        let pred = self.tail.swap(queue_node::as_ptr(node), AcqRel);
        if pred.is_null() {
            return Some(ClhGuard { node, pred: None });
        }
        // SAFETY: queue pointers always come from `queue_node::as_ptr`.
        let pred = unsafe { queue_node::from_ptr(pred) };
        if pred.state.load(Acquire) == RELEASED {
            return Some(ClhGuard { node, pred: Some(pred) });
        }
        match self.wait_for(node, pred, deadline) {
            Waited::Acquired(pred) => Some(ClhGuard { node, pred }),
            Waited::TimedOut => None,
        }
    }

    #[cold]
    fn wait_for(&self, node: &'static Node, mut pred: &'static Node, deadline: Option<Instant>) -> Waited {
        let mut episode = Episode::new(deadline);
        loop {
            let seen = pred.state.load(Acquire);
            match seen {
                RELEASED => return Waited::Acquired(Some(pred)),
                ABANDONED => {
                    pred = Self::skip_abandoned(pred);
                    continue;
                }
                _ => {}
            }
            let timed_out = match W::spin(&pred.state, seen, &mut episode) {
                Spun::Changed => false,
                Spun::TimedOut => true,
                Spun::Exhausted => {
                    if seen == BUSY {
                        // Tell the owner of `pred` that we may sleep; if its state moved on,
                        // look again instead.
                        if pred.state.compare_exchange(BUSY, BUSY_SLEEPER, Relaxed, Relaxed).is_err() {
                            continue;
                        }
                    }
                    let slept = W::sleep(&pred.state, BUSY_SLEEPER, deadline);
                    episode.restart_spinning();
                    slept == crate::sys::futex::FutexWait::TimedOut
                }
            };
            if timed_out {
                self.abandon(node, pred);
                return Waited::TimedOut;
            }
        }
    }

    /// `pred` was abandoned (its state read ABANDONED with Acquire): takes the node over and
    /// returns the one its owner was waiting on.
    fn skip_abandoned(pred: &'static Node) -> &'static Node {
        // SAFETY: an abandoned node always publishes the predecessor it had.
        let next_pred = unsafe { queue_node::from_ptr(pred.pred.load(Acquire)) };
        queue_node::give(pred);
        next_pred
    }

    /// Leaves the queue after a time-out. `pred` is the node we were waiting on.
    #[cold]
    fn abandon(&self, node: &'static Node, pred: &'static Node) {
        // Nobody behind us: put the tail back to our predecessor and keep our node.
        if self.tail.compare_exchange(queue_node::as_ptr(node), queue_node::as_ptr(pred), AcqRel, Relaxed).is_ok() {
            queue_node::give(node);
            return;
        }
        // A successor watches our node: send it to our predecessor. Release publishes `pred`
        // before the state it is read under.
        node.pred.store(queue_node::as_ptr(pred), Relaxed);
        if node.state.swap(ABANDONED, Release) == BUSY_SLEEPER {
            W::wake_one(&node.state);
        }
    }
}

impl<W: Wait> Default for Clh<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: Wait> Drop for Clh<W> {
    fn drop(&mut self) {
        // The last released node stays in the tail, possibly behind abandoned ones; give them
        // all back.
        let mut node = self.tail.load(Relaxed);
        while !node.is_null() {
            // SAFETY: queue pointers always come from `queue_node::as_ptr`; the lock is being
            // dropped, so it is not held and nobody waits on these nodes.
            let this = unsafe { queue_node::from_ptr(node) };
            node = if this.state.load(Relaxed) == ABANDONED { this.pred.load(Relaxed) } else { null_mut() };
            queue_node::give(this);
        }
    }
}

// SAFETY: the lock passes along the queue: a thread holds it once the node it waits on (its
// predecessor, skipping abandoned ones) is RELEASED, which its owner writes with Release
// after its critical section; the waiter reads it with Acquire.
unsafe impl<W: Wait> RawMutex for Clh<W> {
    crate::sync::raw_init!();
    type Guard = ClhGuard;

    #[inline]
    fn lock(&self) -> ClhGuard {
        match self.lock_until(None) {
            Some(guard) => guard,
            None => unreachable!("an acquisition without a deadline cannot time out"),
        }
    }

    fn try_lock(&self) -> Option<ClhGuard> {
        // Acquire: the tail node's fields, published by the AcqRel swap that enqueued it, are
        // visible before we read its state.
        let tail = self.tail.load(Acquire);
        // SAFETY: queue pointers always come from `queue_node::as_ptr`.
        if !tail.is_null() && matches!(unsafe { queue_node::from_ptr(tail) }.state.load(Acquire), BUSY | BUSY_SLEEPER) {
            return None;
        }
        let node = queue_node::take();
        node.state.store(BUSY, Relaxed);
        // AcqRel: Release publishes our node's BUSY to the next waiter that swaps in behind
        // it; Acquire makes the released predecessor's critical section happen-before ours.
        if self.tail.compare_exchange(tail, queue_node::as_ptr(node), AcqRel, Relaxed).is_err() {
            queue_node::give(node);
            return None;
        }
        if tail.is_null() {
            return Some(ClhGuard { node, pred: None });
        }
        // The CAS queued us behind `tail`, but `tail` may no longer be the node we saw
        // released: its successor can take the lock, release it, reuse that node (it becomes
        // the successor's to keep) for a new acquisition and swap it back into the tail, all
        // between our load and our CAS (ABA). So look at it again, as a waiter would, and
        // leave the queue if the lock is not ours after all.
        // SAFETY: queue pointers always come from `queue_node::as_ptr`.
        let mut pred = unsafe { queue_node::from_ptr(tail) };
        loop {
            match pred.state.load(Acquire) {
                RELEASED => return Some(ClhGuard { node, pred: Some(pred) }),
                ABANDONED => pred = Self::skip_abandoned(pred),
                _ => {
                    self.abandon(node, pred);
                    return None;
                }
            }
        }
    }

    #[inline]
    unsafe fn unlock(&self, guard: ClhGuard) {
        // Release: our critical section happens-before the successor's Acquire of RELEASED.
        // Only a policy that may sleep needs the old value, and so the (dearer) swap.
        if !W::MAY_SLEEP {
            guard.node.state.store(RELEASED, Release);
        } else if guard.node.state.swap(RELEASED, Release) == BUSY_SLEEPER {
            W::wake_one(&guard.node.state);
        }
        // Our node now belongs to the successor (or to the lock's tail); the predecessor's,
        // which nobody else references any more, becomes ours.
        if let Some(pred) = guard.pred {
            queue_node::give(pred);
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        let mut node = self.tail.load(Acquire);
        while !node.is_null() {
            // SAFETY: queue pointers always come from `queue_node::as_ptr`, and so do the
            // `pred` pointers that abandoned nodes publish.
            let this = unsafe { queue_node::from_ptr(node) };
            match this.state.load(Acquire) {
                RELEASED => return false,
                ABANDONED => node = this.pred.load(Acquire),
                _ => return true,
            }
        }
        false
    }
}

// SAFETY: unlock already hands over in queue order.
unsafe impl<W: Wait> RawMutexFair for Clh<W> {
    #[inline]
    unsafe fn unlock_fair(&self, guard: ClhGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlock(guard) }
    }
}

super::timed_via_lock_until!(Clh);
