//! MCS queue lock (Mellor-Crummey and Scott, 1991) with the lock itself kept in a word of its
//! own, as the Linux kernel's queued spinlock does. Waiters line up in an MCS queue, each
//! spinning on its own node; only the queue's head waits on the lock word. A thread that
//! finds nobody queued takes the word with one atomic and releases it with a store (a swap
//! with a policy that may sleep), the cost of a test-and-set lock, where the classic MCS lock
//! pays two atomics per acquisition. That lock is here too, as [`McsQueue`]: the queue alone,
//! whose head holds the lock. The registry's `mcs` is [`Mcs`] over the pure spin policies, and
//! a [`Gated`](super::Gated) [`McsQueue`] over the policies that may sleep.
//!
//! - **Lock**: if the queue is empty, try the word once. Otherwise (or if that fails), take a
//!   node, swap it into the tail and link it behind the predecessor, then wait on the node
//!   until the predecessor makes it the head. The head waits on the word, with the policy,
//!   until it takes it; then it makes its successor the head (or empties the queue) and
//!   gives its node back before its critical section starts.
//! - **Unlock**: release the word. The holder holds no node.
//!
//! Fairness guarantee: FIFO among the waiters in the queue, and a bypass bound for the rest.
//! A thread that finds the queue empty and the word free takes the lock even if a waiter
//! joined the queue in between. Any attempt that begins after a waiter joined sees the queue
//! and lines up behind it, so each waiter is passed over by at most one acquisition of each
//! other thread (qspinlock's bound as well). A releaser that locks again at once queues: the
//! head is never starved by a hot releaser, which a test-and-set lock allows (seed 003).
//!
//! | node state | name        | meaning (`QueueNode::state`, written by its waiter and by the passer) |
//! |------------|-------------|-----------------------------------------------------------------------|
//! | 0          | `HEAD`      | the node's waiter is the queue's head: it may take the word           |
//! | 1          | `WAITING`   | queued, spinning                                                      |
//! | 2          | `ASLEEP`    | queued, may be asleep on `state`: the passer must wake it             |
//! | 3          | `ABANDONED` | the waiter timed out and left; the node now belongs to the queue      |
//!
//! The word's states are [`Ttas`](super::Ttas)'s (`word.rs`), except that only the head sleeps
//! on it: a woken head takes the word as `LOCKED`, and a release wakes nobody unless the next
//! head has marked the word again.
//!
//! A timed-out waiter cannot unlink itself (its predecessor may be making it the head at that
//! moment), so it marks its node `ABANDONED` with one CAS and leaves. A head that finds its
//! successor's node abandoned takes the node as its own and passes headship on to that node's
//! successor, or empties the queue if there is none. A head that times out while waiting on
//! the word is running, and passes headship on itself before it leaves.

use super::gated::Gate;
use super::queue_node::{self, Node};
use super::word::{LockWord, LOCKED, LOCKED_SLEEPERS, UNLOCKED};
use crate::sync::{AtomicU32, Ordering::*};
use crate::sys::futex::FutexWait;
use crate::wait::{Episode, Spun, Wait};
use core::marker::PhantomData;
use core::ptr::null_mut;
use lock_api::{GuardSend, RawMutex, RawMutexFair};
use std::time::Instant;

pub(super) const HEAD: u32 = 0;
pub(super) const WAITING: u32 = 1;
pub(super) const ASLEEP: u32 = 2;
pub(super) const ABANDONED: u32 = 3;

/// The tail of an empty queue: no node is numbered 0.
pub(super) const EMPTY: u32 = 0;

/// MCS queue lock waiting with policy `W` (the module docs give the design): the lock word
/// and an [`McsQueue`], 8 bytes.
///
/// ```
/// use spinlab::{lock::Mcs, wait::SpinPark};
/// let m = lock_api::Mutex::<Mcs<SpinPark>, _>::new(0u32);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// ```
pub type Mcs<W> = QueuedWord<McsQueue<W>, W>;

/// A lock word of its own, and a queue `Q` whose head alone waits for it (the module docs give
/// the design): [`Mcs`] over an [`McsQueue`], [`Cna`](super::Cna) over a
/// [`CnaQueue`](super::CnaQueue). The queue is a [`Gate`] whose hand-over leaves nothing in a
/// room: the head passes it on as soon as it has the word, and wakes the new head at once.
pub struct QueuedWord<Q, W: Wait> {
    pub(super) word: LockWord<W>,
    pub(super) queue: Q,
}

/// The MCS queue on its own, which is the classic MCS lock: the queue's head holds the lock,
/// and a release makes the next waiter the head. Two read-modify-writes per uncontended
/// acquisition (the swap into the tail and the CAS that empties it), and a convoy when the
/// next waiter is not running. One 4-byte word: the queue's tail, which holds the number of
/// the last node in the queue (0: empty) rather than its address, as Linux's qspinlock does
/// (`queue_node::index`). [`Gated`](super::Gated) uses it as the queue in front of its word,
/// with which it fits in 8 bytes; there the head holds only the gate.
///
/// ```
/// use spinlab::{lock::McsQueue, wait::Spin};
/// let m = lock_api::Mutex::<McsQueue<Spin>, _>::new(0u32);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// ```
pub struct McsQueue<W: Wait> {
    /// The last node's number (`QueueNode::index`); [`EMPTY`] when nobody holds or waits.
    pub(super) tail: AtomicU32,
    policy: PhantomData<fn() -> W>,
}

/// What a holder of an [`McsQueue`] or a [`CnaQueue`](super::CnaQueue) keeps while it holds
/// the lock: its queue node.
pub struct McsGuard {
    pub(super) node: &'static Node,
}

impl McsGuard {
    #[inline]
    pub(super) fn of(node: &'static Node) -> McsGuard {
        McsGuard { node }
    }
}

impl<W: Wait> Mcs<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            QueuedWord { word: LockWord::new(), queue: McsQueue::<W>::new() }
        }
    }
}

impl<Q: Gate<Room = ()>, W: Wait> QueuedWord<Q, W> {
    /// Whether any thread waits in the queue (a snapshot). While one does, every new attempt
    /// to lock joins the queue behind it.
    ///
    /// ```
    /// use spinlab::{lock::Mcs, wait::Spin};
    /// assert!(!Mcs::<Spin>::new().has_queue());
    /// ```
    #[inline]
    pub fn has_queue(&self) -> bool {
        self.queue.is_locked()
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<GuardSend> {
        let acquired = self.try_unqueued() || self.lock_queued(deadline);
        acquired.then(GuardSend::new)
    }

    /// The uncontended path: one attempt at the word, made only while nobody is queued.
    #[inline(always)]
    fn try_unqueued(&self) -> bool {
        !self.has_queue() && self.word.try_acquire(LOCKED).is_ok()
    }

    /// Joins the queue, waits to become its head, then waits for the word, and passes
    /// headship on. Returns `false` if `deadline` passed first, having left the queue
    /// consistent.
    #[cold]
    fn lock_queued(&self, deadline: Option<Instant>) -> bool {
        let head = match deadline {
            None => self.queue.lock(),
            Some(deadline) => match self.queue.try_lock_until(deadline) {
                Some(head) => head,
                None => return false,
            },
        };
        let acquired = head_waits_for_word(&self.word, deadline);
        // SAFETY: `head` is the queue's guard from the acquisition above, released once here.
        let owed = unsafe { self.queue.pass_on(head, &()) };
        Q::settle(self.queue.due(owed, &()));
        acquired
    }
}

/// The head's wait: re-read the word until it is free, take it, and sleep on it once the
/// policy's spin phase is over. The head is the word's only sleeper, so it marks the word
/// `LOCKED_SLEEPERS` to sleep and takes it as `LOCKED`. Returns `false` if `deadline` passed.
pub(super) fn head_waits_for_word<W: Wait>(word: &LockWord<W>, deadline: Option<Instant>) -> bool {
    let state = &word.state;
    let mut episode = Episode::new(deadline);
    loop {
        let seen = state.load(Relaxed);
        if seen == UNLOCKED {
            if word.try_acquire(LOCKED).is_ok() {
                return true;
            }
            continue;
        }
        match W::spin(state, seen, &mut episode) {
            Spun::Changed => {}
            Spun::TimedOut => return false,
            Spun::Exhausted => {
                if seen == LOCKED && state.compare_exchange(LOCKED, LOCKED_SLEEPERS, Relaxed, Relaxed).is_err() {
                    continue;
                }
                if W::sleep(state, LOCKED_SLEEPERS, deadline) == FutexWait::TimedOut {
                    return false;
                }
                episode.restart_spinning();
            }
        }
    }
}

impl<W: Wait> McsQueue<W> {
    crate::sync::loom_const_fn! {
        /// A new, empty queue (an unlocked lock).
        pub fn new() -> Self {
            McsQueue { tail: AtomicU32::new(EMPTY), policy: PhantomData }
        }
    }

    /// Acquires the lock (leads the queue), giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<McsGuard> {
        self.lead_until(deadline).map(|node| McsGuard { node })
    }

    /// Takes a node, swaps it into the tail, links it behind its predecessor and waits until
    /// it is the head. Returns the node, or `None` if `deadline` passed first (the node was
    /// then abandoned to the queue).
    #[inline]
    fn lead_until(&self, deadline: Option<Instant>) -> Option<&'static Node> {
        self.lead_with(queue_node::take(), deadline)
    }

    /// As `lead_until`, with a node the caller took (and may have written fields of, which
    /// the tail swap publishes).
    #[inline]
    pub(super) fn lead_with(&self, node: &'static Node, deadline: Option<Instant>) -> Option<&'static Node> {
        if self.join(node) || Self::wait_to_lead(node, deadline) {
            Some(node)
        } else {
            None
        }
    }

    /// Swaps `node` into the tail and links it behind its predecessor, without waiting.
    /// Returns whether it is the head already (the queue was empty). Any thread may queue a
    /// node this way for another to wait on (`Hmcs` queues its group's node at the root).
    #[inline]
    pub(super) fn join(&self, node: &'static Node) -> bool {
        node.next.store(null_mut(), Relaxed);
        node.state.store(WAITING, Relaxed);
        // AcqRel: Release publishes the node's initialised fields to the predecessor's
        // waiter, which reads our node through its `next`; Acquire makes the predecessor's
        // node visible to us.
        let pred = self.tail.swap(node.index, AcqRel);
        if pred == EMPTY {
            return true;
        }
        Self::link_behind(node, pred);
        false
    }

    /// Makes `node` (taken by the caller, its fields written) the head if the queue is empty;
    /// otherwise gives it back.
    #[inline]
    pub(super) fn try_lead_with(&self, node: &'static Node) -> Option<&'static Node> {
        node.next.store(null_mut(), Relaxed);
        // AcqRel: as the swap in `lead_with`; the previous holder's release is a Release CAS
        // of the tail to EMPTY.
        match self.tail.compare_exchange(EMPTY, node.index, AcqRel, Relaxed) {
            Ok(_) => Some(node),
            Err(_) => {
                queue_node::give(node);
                None
            }
        }
    }

    #[cold]
    fn link_behind(node: &'static Node, pred: u32) {
        // SAFETY: the tail holds only nodes' own numbers.
        let pred = unsafe { queue_node::index::node(pred) };
        // Release: our node's fields are visible to whoever reads `next` with Acquire.
        pred.next.store(queue_node::as_ptr(node), Release);
    }

    /// Waits until `node` is the queue's head. On time-out, abandons the node (which then
    /// belongs to the queue) and returns `false`; a waiter made head in that race stays.
    #[cold]
    fn wait_to_lead(node: &'static Node, deadline: Option<Instant>) -> bool {
        Self::wait_for_head(node, deadline) || !Self::abandon(node)
    }

    /// Waits until `node` is the queue's head; `false` if `deadline` passed first, with the
    /// node still queued (its state `WAITING` or `ASLEEP`), for the caller to abandon or to
    /// leave to another waiter, who may wait on it in turn.
    pub(super) fn wait_for_head(node: &'static Node, deadline: Option<Instant>) -> bool {
        let mut episode = Episode::new(deadline);
        loop {
            // Acquire: where the head holds the lock (`McsQueue`), the previous holder's
            // critical section, ended by its Release swap of our state, happens-before ours.
            let seen = node.state.load(Acquire);
            if seen == HEAD {
                return true;
            }
            match W::spin(&node.state, seen, &mut episode) {
                Spun::Changed => {}
                Spun::TimedOut => return false,
                Spun::Exhausted => {
                    // Acquire on both outcomes: a failure that reads HEAD is our acquisition.
                    if node.state.compare_exchange(WAITING, ASLEEP, Acquire, Acquire) == Err(HEAD) {
                        return true;
                    }
                    if W::sleep(&node.state, ASLEEP, deadline) == FutexWait::TimedOut {
                        return false;
                    }
                    episode.restart_spinning();
                }
            }
        }
    }

    /// Tries to leave the queue. Returns `false` if the node was made head first.
    pub(super) fn abandon(node: &'static Node) -> bool {
        // Acquire: a HEAD read here is an acquisition, as in `wait_to_lead`.
        let mut seen = node.state.load(Acquire);
        loop {
            if seen == HEAD {
                return false;
            }
            match node.state.compare_exchange(seen, ABANDONED, Acquire, Acquire) {
                Ok(_) => return true,
                Err(now) => seen = now,
            }
        }
    }

    /// Releases the lock as `unlock` does, except the futex wake-up of a new head that may be
    /// asleep: returns the word to wake it on (`W::wake_one`). The word is the new head's
    /// queue node, not the lock's memory, and nodes are never freed, so the wake-up may come
    /// after the lock itself is gone.
    ///
    /// # Safety
    ///
    /// As `unlock`: `guard` is this lock's, from the acquisition being released.
    #[inline]
    pub(crate) unsafe fn pass_on(&self, guard: McsGuard) -> Option<&'static AtomicU32> {
        let node = guard.node;
        // Acquire on `next`: the successor's node fields are visible before `pass_headship`
        // writes its state. Release on the CAS: the critical section happens-before the next
        // acquirer's Acquire swap.
        if node.next.load(Acquire).is_null() && self.tail.compare_exchange(node.index, EMPTY, Release, Relaxed).is_ok()
        {
            queue_node::give(node);
            return None;
        }
        self.pass_headship(node)
    }

    /// Makes `node`'s successor the head (skipping successors that abandoned their nodes), or
    /// empties the queue if there is none, and gives the node back. Returns the new head's
    /// state word if it may be asleep there: the caller wakes it (`W::wake_one`), when it
    /// chooses. Nothing else here makes a system call.
    pub(super) fn pass_headship(&self, mut node: &'static Node) -> Option<&'static AtomicU32> {
        loop {
            // Acquire: the successor's node fields, published by its Release store of `next`,
            // are visible before we write its state.
            let mut next = node.next.load(Acquire);
            if next.is_null() {
                // No successor linked yet: if we are still the tail, the queue empties.
                // Release: our node goes back to the pool only after nobody can reach it.
                if self.tail.compare_exchange(node.index, EMPTY, Release, Relaxed).is_ok() {
                    queue_node::give(node);
                    return None;
                }
                next = Self::wait_for_successor_link(node);
            }
            // Nobody can reach our node once its successor is known.
            queue_node::give(node);
            // SAFETY: queue pointers always come from `queue_node::as_ptr`.
            let successor = unsafe { queue_node::from_ptr(next) };
            // Release: where the head holds the lock (`McsQueue`), the critical section
            // happens-before the successor's Acquire load.
            match successor.state.swap(HEAD, AcqRel) {
                ASLEEP => return Some(&successor.state),
                // The successor left: its node is ours now; pass headship on past it.
                ABANDONED => node = successor,
                _ => return None,
            }
        }
    }

    #[cold]
    pub(super) fn wait_for_successor_link(node: &'static Node) -> *mut Node {
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

// SAFETY: mutual exclusion is the word's (`LockWord`): every acquisition is a successful
// `try_acquire` from UNLOCKED with Acquire ordering, made either on the uncontended path or
// by the queue's head, and only the holder releases the word, with Release ordering. The
// queue only decides which waiter may try.
unsafe impl<Q: Gate<Room = ()>, W: Wait> RawMutex for QueuedWord<Q, W> {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = QueuedWord { word: LockWord::new(), queue: Q::INIT };
    #[cfg(loom)]
    const INIT: Self = panic!("under loom, construct locks with new()");
    type Guard = GuardSend;

    #[inline]
    fn lock(&self) -> GuardSend {
        if !self.try_unqueued() {
            let acquired = self.lock_queued(None);
            debug_assert!(acquired, "an acquisition without a deadline cannot time out");
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<GuardSend> {
        self.try_unqueued().then(GuardSend::new)
    }

    #[inline]
    unsafe fn unlock(&self, _: GuardSend) {
        self.word.unlock();
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.word.is_locked() || self.has_queue()
    }
}

// SAFETY: a release leaves the word to the queue's head: a thread that locks again after the
// release finds the queue and lines up behind it.
unsafe impl<W: Wait> RawMutexFair for Mcs<W> {
    #[inline]
    unsafe fn unlock_fair(&self, guard: GuardSend) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlock(guard) }
    }
}

// SAFETY: `lock_until` acquires exactly as `lock` does, or returns `None` having left the
// queue as a timed-out waiter of it leaves it, and the word untouched.
unsafe impl<Q: Gate<Room = ()>, W: Wait> lock_api::RawMutexTimed for QueuedWord<Q, W> {
    type Duration = std::time::Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: std::time::Duration) -> Option<GuardSend> {
        self.lock_until(super::deadline_after(timeout))
    }

    #[inline]
    fn try_lock_until(&self, deadline: Instant) -> Option<GuardSend> {
        self.lock_until(Some(deadline))
    }
}

impl<W: Wait> Default for McsQueue<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the lock is held by the queue's head: the first node swapped into an empty tail,
// then each node made head by its predecessor's holder. Passing headship is a Release swap
// that the waiter observes with an Acquire load.
unsafe impl<W: Wait> RawMutex for McsQueue<W> {
    crate::sync::raw_init!();
    type Guard = McsGuard;

    #[inline]
    fn lock(&self) -> McsGuard {
        let node = self.lead_until(None);
        McsGuard { node: node.expect("an acquisition without a deadline cannot time out") }
    }

    #[inline]
    fn try_lock(&self) -> Option<McsGuard> {
        if self.is_locked() {
            return None;
        }
        self.try_lead_with(queue_node::take()).map(McsGuard::of)
    }

    #[inline]
    unsafe fn unlock(&self, guard: McsGuard) {
        // SAFETY: forwarded from the caller.
        if let Some(asleep) = unsafe { self.pass_on(guard) } {
            W::wake_one(asleep);
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.tail.load(Relaxed) != EMPTY
    }
}

// SAFETY: unlock already hands over in queue order.
unsafe impl<W: Wait> RawMutexFair for McsQueue<W> {
    #[inline]
    unsafe fn unlock_fair(&self, guard: McsGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlock(guard) }
    }
}

super::timed_via_lock_until!(McsQueue);
