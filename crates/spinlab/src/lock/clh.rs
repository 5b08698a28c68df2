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
//!
//! The predecessor a holder takes over on release is kept in the holder's own node, in
//! `pred`, a field with two uses that never overlap (`held` says why), so the guard is one
//! pointer and the lock with its stored guard (the registry's in-place form,
//! `pthread_mutex_t`'s room under the preload library) takes 16 bytes:
//!
//! | bytes | what                         | written by                                    |
//! |-------|------------------------------|-----------------------------------------------|
//! | 0..8  | `tail`: the last node queued | acquisitions (swap or CAS), timed-out waiters |
//! | 8..16 | the holder's node (its guard)| the holder, after it acquires                 |
//!
//! Uncontended, lock stores `BUSY`, swaps the tail (AcqRel), reads the predecessor's state and
//! stores `pred`; unlock loads `pred` and stores `RELEASED` (Release, read by the successor
//! with Acquire; a swap with a policy that may sleep). Fairness: FIFO among the waiters that
//! queued with `lock()`; a timed waiter that gives up leaves the order.

use super::queue_node::{self, Node};
use crate::sync::{AtomicPtr, AtomicU32, Ordering::*};
use crate::wait::{Episode, Spun, Wait};
use core::marker::PhantomData;
use core::ptr::null_mut;
use lock_api::{RawMutex, RawMutexFair};
use std::time::Instant;

const RELEASED: u32 = 0;
const BUSY: u32 = 1;
const BUSY_SLEEPER: u32 = 2;
const ABANDONED: u32 = 3;

/// CLH queue lock waiting with policy `W`. One word: the queue's tail. With its guard stored
/// beside it (as the registry keeps it), two words.
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

/// What a CLH holder keeps: the node it enqueued. The predecessor node it will take over on
/// release is kept in that node (see `held`), so the guard is one pointer.
pub struct ClhGuard {
    node: &'static Node,
}

const _: () = assert!(core::mem::size_of::<ClhGuard>() == core::mem::size_of::<usize>());

/// A holder's node and the predecessor it acquired behind (null: the lock was fresh), kept
/// in the node for `unlock`. Every acquisition ends here, so no node is held with the `pred`
/// of a past use, which `unlock` would give back a second time.
///
/// `pred` has two uses that never overlap. A waiter that times out writes it just before it
/// marks its node `ABANDONED`, and nobody reads it except after seeing `ABANDONED` (with
/// Acquire). A holder writes it here, after it acquires, and reads it in `unlock` before it
/// writes `RELEASED`; meanwhile its node is `BUSY` or `BUSY_SLEEPER`, never `ABANDONED` (only
/// a waiter abandons, and only its own node), so no other thread reads the field, and only the
/// node's owner writes it. Once the node is `RELEASED` it is the successor's to take over and
/// to acquire with again, which overwrites `pred`: hence the read before the release.
#[inline]
fn held(node: &'static Node, pred: *mut Node) -> ClhGuard {
    // Relaxed: only the holder reads it, in `unlock`, ordered after this store by program
    // order (or by whatever hands the guard to another thread).
    node.pred.store(pred, Relaxed);
    ClhGuard { node }
}

impl<W: Wait> Clh<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Clh { tail: AtomicPtr::new(null_mut()), policy: PhantomData }
        }
    }

    /// Whether a thread has queued since the holder of `guard` took the lock (a snapshot):
    /// the tail is not the holder's own node any more. Each thread queues by making its node the
    /// tail and is served after the thread whose node it replaced, so an observer that waits
    /// for this, or for [`queued_since`](Self::queued_since), knows the order threads will be
    /// served in.
    ///
    /// ```
    /// use lock_api::RawMutex;
    /// use spinlab::{lock::Clh, wait::Spin};
    /// let lock = Clh::<Spin>::new();
    /// let guard = lock.lock();
    /// assert!(!lock.has_queue_behind(&guard));
    /// // SAFETY: locked just above.
    /// unsafe { lock.unlock(guard) };
    /// ```
    pub fn has_queue_behind(&self, guard: &ClhGuard) -> bool {
        self.queued_since(queue_node::as_ptr(guard.node) as usize)
    }

    /// The last node queued, as an address that is never followed (0: a fresh lock), for
    /// [`queued_since`](Self::queued_since).
    pub fn last_queued(&self) -> usize {
        // Relaxed: a snapshot for observers; nothing is read through it.
        self.tail.load(Relaxed) as usize
    }

    /// Whether a thread has queued since [`last_queued`](Self::last_queued) returned
    /// `seen`, asked while that node's owner still holds or waits for the lock: its node
    /// cannot be queued again until then, so only a timed waiter that gives up and takes its
    /// own node back out of the tail can bring the tail back to it.
    pub fn queued_since(&self, seen: usize) -> bool {
        self.last_queued() != seen
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<ClhGuard> {
        let node = queue_node::take();
        // `pred` is not cleared here: nobody reads it unless the node is ABANDONED, and `held`
        // sets it once we hold the lock.
        node.state.store(BUSY, Relaxed);
        // AcqRel: publish our node's state to the successor; see the predecessor's node.
        let pred = self.tail.swap(queue_node::as_ptr(node), AcqRel);
        if pred.is_null() {
            return Some(held(node, pred));
        }
        // SAFETY: queue pointers always come from `queue_node::as_ptr`.
        let pred_node = unsafe { queue_node::from_ptr(pred) };
        if pred_node.state.load(Acquire) == RELEASED {
            return Some(held(node, pred));
        }
        self.wait_for(node, pred_node, deadline)
    }

    #[cold]
    fn wait_for(&self, node: &'static Node, mut pred: &'static Node, deadline: Option<Instant>) -> Option<ClhGuard> {
        let mut episode = Episode::new(deadline);
        loop {
            let seen = pred.state.load(Acquire);
            match seen {
                RELEASED => return Some(held(node, queue_node::as_ptr(pred))),
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
                return None;
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

    /// Releases the lock as `unlock` does, except a wake-up of the successor asleep on our
    /// node, which it leaves to the caller: it returns the node. A gated lock's head makes the
    /// wake-up after its release of the word ([`Gated`](super::Gated)).
    ///
    /// # Safety
    ///
    /// As `unlock`: `guard` is this lock's, from the acquisition being released.
    #[inline]
    pub(super) unsafe fn pass_on(&self, guard: ClhGuard) -> Option<&'static Node> {
        let node = guard.node;
        let mut asleep = None;
        // Read before the release: from RELEASED on, the node is the successor's to take over
        // at its own release, and an acquisition with it then overwrites `pred`.
        let pred = node.pred.load(Relaxed);
        // Release: our critical section happens-before the successor's Acquire of RELEASED.
        // Only a policy that may sleep needs the old value, and so the (dearer) swap.
        if !W::MAY_SLEEP {
            node.state.store(RELEASED, Release);
        } else if node.state.swap(RELEASED, Release) == BUSY_SLEEPER {
            asleep = Some(node);
        }
        // Our node now belongs to the successor (or to the lock's tail); the predecessor's,
        // which nobody else references any more, becomes ours.
        if !pred.is_null() {
            // SAFETY: `held` stored a queue pointer from `queue_node::as_ptr`.
            queue_node::give(unsafe { queue_node::from_ptr(pred) });
        }
        asleep
    }

    /// The state word of the queue node numbered `node`, as [`Clh::pass_on`] left it owed a
    /// wake-up (by number: `Gated<Clh>` keeps it in four spare bytes).
    ///
    /// # Safety
    ///
    /// `node` was read from a node's `index` field.
    pub(super) unsafe fn node_state(node: u32) -> &'static AtomicU32 {
        // SAFETY: forwarded from the caller: such a number is published.
        &unsafe { queue_node::index::node(node) }.state
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
            return Some(held(node, tail));
        }
        // The CAS queued us behind `tail`, but `tail` may have stopped being the node we saw
        // released: its successor can take the lock, release it, reuse that node (it becomes
        // the successor's to keep) for a new acquisition and swap it back into the tail, all
        // between our load and our CAS (ABA). So look at it again, as a waiter would, and
        // leave the queue if the lock is not ours after all.
        // SAFETY: queue pointers always come from `queue_node::as_ptr`.
        let mut pred = unsafe { queue_node::from_ptr(tail) };
        loop {
            match pred.state.load(Acquire) {
                RELEASED => return Some(held(node, queue_node::as_ptr(pred))),
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
        // SAFETY: forwarded from the caller.
        if let Some(asleep) = unsafe { self.pass_on(guard) } {
            W::wake_one(&asleep.state);
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::wait::Spin;

    fn lock_and_unlock(lock: &Clh<Spin>) {
        let guard = lock.lock();
        // SAFETY: we hold the lock through `guard`.
        unsafe { lock.unlock(guard) };
    }

    /// `pred` outlives a hold: a node taken over after holding a lock behind a predecessor
    /// keeps that predecessor's address. Reused for the first acquisition of a fresh lock (no
    /// predecessor), it must not give that address back on release: the node there is the
    /// other lock's tail, and this thread's next acquisition would take it from its cache
    /// (a stack) and queue behind itself, so that `try_lock` of the free lock would fail.
    #[test]
    fn a_node_reused_on_a_fresh_lock_gives_back_no_earlier_predecessor() {
        std::thread::spawn(|| {
            for first_by_try_lock in [false, true] {
                let used = Clh::<Spin>::new();
                // Three holds leave on top of this thread's cache a node that held `used`
                // behind a predecessor: `used`'s tail now.
                for _ in 0..3 {
                    lock_and_unlock(&used);
                }
                let fresh = Clh::<Spin>::new();
                let guard =
                    if first_by_try_lock { fresh.try_lock().expect("a fresh lock is free") } else { fresh.lock() };
                // SAFETY: we hold the lock through `guard`.
                unsafe { fresh.unlock(guard) };
                for _ in 0..3 {
                    let guard = used.try_lock().expect("try_lock failed on a free lock");
                    // SAFETY: we hold the lock through `guard`.
                    unsafe { used.unlock(guard) };
                }
                assert!(!used.is_locked() && !fresh.is_locked());
            }
        })
        .join()
        .unwrap();
    }
}
