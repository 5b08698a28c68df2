//! Reciprocating lock (after Dice and Kogan, "Reciprocating Locks", PPoPP 2025): arrivals
//! push themselves onto a stack with one exchange, and the holder admits them in batches.
//!
//! - **Lock**: take a free word with a CAS to `LOCKED_EMPTY`, or else swap a node's number in.
//!   If the word was `UNLOCKED` by then, the lock is ours; otherwise the value swapped out is
//!   the arrival below ours, and we spin (then sleep) on our own node until a holder admits us. The admitter tells us where our segment
//!   ends; unless the arrival below us is that end, it is our successor.
//! - **Unlock**: admit the successor, if there is one. Otherwise the segment is exhausted:
//!   free the word if nobody arrived since it was last emptied, or detach every arrival at
//!   once (swap in `LOCKED_EMPTY`) and admit the newest, telling it the detached stack ends
//!   where the word stood when our segment began.
//!
//! | word `arrivals`   | meaning                                                       |
//! |-------------------|---------------------------------------------------------------|
//! | `UNLOCKED` (0)    | free                                                          |
//! | `LOCKED_EMPTY`    | held; nobody arrived since the last detach                    |
//! | a node's number   | held; that node is the newest arrival, the top of the stack   |
//!
//! Node states (`QueueNode::state`) are `WAITING`, `ASLEEP` (the admitter must wake it),
//! `ADMITTED` and `ABANDONED`, as in [`Mcs`](super::Mcs). A timed-out waiter publishes the
//! arrival below it and marks its node abandoned with one CAS; an admitter that finds it so
//! takes the node and admits the arrival below instead.
//!
//! A holder keeps no node, except a thread whose swap found the lock freed since its CAS
//! failed: its node is the stack's bottom and ends the first segment, so it keeps it until it
//! releases. Nodes are compared by number there, never read: a segment end may be reused.
//!
//! Fairness: segments are served in the order they were detached, each newest first (LIFO),
//! so a waiter is overtaken by at most one acquisition of each thread that arrived after it,
//! and admitted before any other thread acquires a third time. With more threads than CPUs a
//! waiter is admitted whether or not it runs, a convoy as for every in-order lock; so over the
//! policies whose waiters give their CPU away the registry makes it a [`Gated`](super::Gated)
//! lock's gate, which orders only the queued waiters and owes the admitted one's wake-up to
//! the word's release.
//!
//! Memory: 4 bytes per lock and an 8-byte guard (the successor and the segment's end), or 12
//! bytes as a gate with the word and its room, and no guard; one queue node (a 128-byte line,
//! pooled as MCS's are) per waiting thread and per holder whose swap found the lock free.
//! Uncontended: a CAS each way, no node. Contended, arrival and release are a constant number
//! of atomics, plus one per abandoned node skipped.

use super::queue_node::{self, index::RESERVED, Node};
use super::Gate;
use crate::sync::{AtomicU32, Ordering::*};
use crate::sys::futex::FutexWait;
use crate::wait::{Episode, Spun, Wait};
use core::marker::PhantomData;
use lock_api::{RawMutex, RawMutexFair};
use std::time::Instant;

const UNLOCKED: u32 = 0;
/// Held, and nobody arrived since the stack was last detached. No node has this number.
const LOCKED_EMPTY: u32 = RESERVED;
/// A guard's successor when there is none (no node is numbered 0).
const NONE: u32 = 0;

const ADMITTED: u32 = 0;
const WAITING: u32 = 1;
const ASLEEP: u32 = 2;
const ABANDONED: u32 = 3;

/// Reciprocating lock waiting with policy `W` (the module docs give the design): 4 bytes.
///
/// ```
/// use spinlab::{lock::Reciprocating, wait::SpinPark};
/// let m = lock_api::Mutex::<Reciprocating<SpinPark>, _>::new(0u32);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// ```
pub struct Reciprocating<W: Wait> {
    /// `UNLOCKED`, `LOCKED_EMPTY` or the newest arrival's node number (the table above).
    arrivals: AtomicU32,
    policy: PhantomData<fn() -> W>,
}

/// What a holder of a [`Reciprocating`] lock keeps until it releases: whom to admit next and
/// where its segment ends.
pub struct ReciprocatingGuard {
    /// The next waiter of this segment, or `NONE`: the segment ends with this holder.
    successor: u32,
    /// With a successor, the number that ends the segment (the arrival below its last
    /// waiter). Without one, what the word holds if nobody arrived since the segment began:
    /// `LOCKED_EMPTY`, or the holder's own node if its swap found the lock free.
    segment_end: u32,
}

impl<W: Wait> Reciprocating<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Reciprocating { arrivals: AtomicU32::new(UNLOCKED), policy: PhantomData }
        }
    }

    /// What the word holds (a snapshot): 0 when free, and otherwise a number that changes at
    /// every arrival and every detach, so that a thread that sees it change knows that another
    /// thread has arrived or that the arrivals were detached.
    ///
    /// ```
    /// use lock_api::RawMutex;
    /// use spinlab::{lock::Reciprocating, wait::Spin};
    /// let lock = Reciprocating::<Spin>::new();
    /// assert_eq!(lock.last_arrival(), 0);
    /// let guard = lock.lock();
    /// assert_ne!(lock.last_arrival(), 0);
    /// // SAFETY: locked just above.
    /// unsafe { lock.unlock(guard) };
    /// ```
    pub fn last_arrival(&self) -> u32 {
        self.arrivals.load(Relaxed)
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<ReciprocatingGuard> {
        // A free word is taken as `try_lock` takes it, without a node: one compare-and-swap.
        // When it fails the line is ours, and the swap after it finds it here.
        if let Some(guard) = self.try_lock() {
            return Some(guard);
        }
        self.arrive(deadline)
    }

    /// [`Reciprocating::lock_until`] once the word was found held: push a node.
    #[cold]
    fn arrive(&self, deadline: Option<Instant>) -> Option<ReciprocatingGuard> {
        let node = queue_node::take();
        node.state.store(WAITING, Relaxed);
        // AcqRel: Release publishes the node's state to whoever reads our number from the word
        // (a later arrival, or the holder that detaches the stack: the swaps form one release
        // sequence); Acquire makes the critical section of a release that freed the word
        // visible to us.
        let below = self.arrivals.swap(node.index, AcqRel);
        if below == UNLOCKED {
            // Freed since the compare-and-swap. Our node is the stack's bottom: we keep it, as
            // the end of the first segment.
            return Some(ReciprocatingGuard { successor: NONE, segment_end: node.index });
        }
        self.wait_for_admission(node, below, deadline)
    }

    #[cold]
    fn wait_for_admission(
        &self,
        node: &'static Node,
        below: u32,
        deadline: Option<Instant>,
    ) -> Option<ReciprocatingGuard> {
        let mut episode = Episode::new(deadline);
        loop {
            // Acquire: the previous holder's critical section, ended by its Release swap of
            // our state, happens-before ours, and the segment's end it wrote is visible.
            let seen = node.state.load(Acquire);
            if seen == ADMITTED {
                break;
            }
            match W::spin(&node.state, seen, &mut episode) {
                Spun::Changed => {}
                Spun::TimedOut if Self::abandon(node, below) => return None,
                Spun::TimedOut => break,
                Spun::Exhausted => {
                    // Acquire on both outcomes: a failure that reads ADMITTED is our admission.
                    if node.state.compare_exchange(WAITING, ASLEEP, Acquire, Acquire) == Err(ADMITTED) {
                        break;
                    }
                    if W::sleep(&node.state, ASLEEP, deadline) == FutexWait::TimedOut {
                        if Self::abandon(node, below) {
                            return None;
                        }
                        break;
                    }
                    episode.restart_spinning();
                }
            }
        }
        let segment_end = node.segment_end.load(Relaxed);
        // Nobody reads our node once we are admitted (a late wake-up on it is harmless).
        queue_node::give(node);
        Some(if below == segment_end {
            // The last of the segment: the word has held LOCKED_EMPTY since it was detached.
            ReciprocatingGuard { successor: NONE, segment_end: LOCKED_EMPTY }
        } else {
            ReciprocatingGuard { successor: below, segment_end }
        })
    }

    /// Tries to leave: publishes the arrival below and marks the node abandoned, unless it
    /// was admitted first (then `false`).
    fn abandon(node: &'static Node, below: u32) -> bool {
        node.below.store(below, Relaxed);
        let mut seen = node.state.load(Acquire);
        loop {
            if seen == ADMITTED {
                return false;
            }
            // Release: the admitter that reads ABANDONED reads `below` after it. Acquire on
            // failure: an ADMITTED read is an acquisition.
            match node.state.compare_exchange(seen, ABANDONED, Release, Acquire) {
                Ok(_) => return true,
                Err(now) => seen = now,
            }
        }
    }

    /// Admits the waiter numbered `next`, telling it that its segment ends at `segment_end`;
    /// skips abandoned nodes (which become ours to give back). Returns `None` if every
    /// arrival down to the segment's end had abandoned its node, and otherwise the admitted
    /// waiter's node if it sleeps on it: the caller wakes it (`W::wake_one` of its state)
    /// when it chooses. Nothing here makes a system call.
    fn admit(mut next: u32, segment_end: u32) -> Option<Option<&'static Node>> {
        loop {
            // SAFETY: the word and the nodes hold only nodes' own numbers, besides
            // LOCKED_EMPTY and UNLOCKED, which end every chain before this is reached.
            let node = unsafe { queue_node::index::node(next) };
            node.segment_end.store(segment_end, Relaxed);
            // Release: our critical section and the segment's end happen-before the waiter's
            // Acquire load of its state. Acquire: an abandoned node's `below` is visible.
            match node.state.swap(ADMITTED, AcqRel) {
                ASLEEP => return Some(Some(node)),
                ABANDONED => {
                    next = node.below.load(Relaxed);
                    queue_node::give(node);
                    if next == segment_end {
                        return None;
                    }
                }
                _ => return Some(None),
            }
        }
    }

    /// The segment is exhausted: frees the word if it still holds `segment_end` (nobody
    /// arrived since the segment began), or detaches every arrival and admits the newest.
    /// Returns the admitted waiter's node if it sleeps on it, as `admit` does.
    #[inline]
    fn end_segment(&self, mut segment_end: u32) -> Option<&'static Node> {
        loop {
            // Release: the critical section happens-before the Acquire swap of the next
            // thread to find the word free.
            if self.arrivals.compare_exchange(segment_end, UNLOCKED, Release, Relaxed).is_ok() {
                return None;
            }
            // Acquire: the arrivals' nodes are visible (their swaps form one release sequence).
            let top = self.arrivals.swap(LOCKED_EMPTY, Acquire);
            if let Some(asleep) = Self::admit(top, segment_end) {
                return asleep;
            }
            // Every arrival detached had timed out; the word has held LOCKED_EMPTY since.
            segment_end = LOCKED_EMPTY;
        }
    }

    /// Releases as `unlock` does, except the wake-up of the waiter it admits: returns that
    /// waiter's node if it sleeps on it. Nodes are never freed, so the caller may wake it
    /// (`W::wake_one` of its state) after the lock is gone.
    ///
    /// # Safety
    ///
    /// As `unlock`: `guard` is from the acquisition being released.
    #[inline]
    unsafe fn pass_on(&self, guard: ReciprocatingGuard) -> Option<&'static Node> {
        let ReciprocatingGuard { successor, segment_end } = guard;
        if successor != NONE {
            return match Self::admit(successor, segment_end) {
                Some(asleep) => asleep,
                // Every waiter left in the segment timed out.
                None => self.end_segment(LOCKED_EMPTY),
            };
        }
        let asleep = self.end_segment(segment_end);
        if segment_end != LOCKED_EMPTY {
            // We found the lock free and kept our node as the first segment's end. The word
            // no longer holds it; waiters only compare its number.
            // SAFETY: our own node's number.
            queue_node::give(unsafe { queue_node::index::node(segment_end) });
        }
        asleep
    }
}

impl<W: Wait> Default for Reciprocating<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the lock is held by the thread that took a free word with the CAS of `try_lock`
// (which `lock_until` tries first), or swapped its node into a free word, and then by each admitted waiter in turn: a holder admits exactly one
// waiter (the first not abandoned) or frees the word, never both. Admission is a Release swap
// of the waiter's state read with Acquire; freeing is a Release CAS read by the next swap.
unsafe impl<W: Wait> RawMutex for Reciprocating<W> {
    crate::sync::raw_init!();
    type Guard = ReciprocatingGuard;

    #[inline]
    fn lock(&self) -> ReciprocatingGuard {
        self.lock_until(None).expect("an acquisition without a deadline cannot time out")
    }

    #[inline]
    fn try_lock(&self) -> Option<ReciprocatingGuard> {
        // Acquire: as the swap's, when it finds the word free.
        match self.arrivals.compare_exchange(UNLOCKED, LOCKED_EMPTY, Acquire, Relaxed) {
            Ok(_) => Some(ReciprocatingGuard { successor: NONE, segment_end: LOCKED_EMPTY }),
            Err(_) => None,
        }
    }

    #[inline]
    unsafe fn unlock(&self, guard: ReciprocatingGuard) {
        // SAFETY: forwarded from the caller.
        if let Some(asleep) = unsafe { self.pass_on(guard) } {
            W::wake_one(&asleep.state);
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.arrivals.load(Relaxed) != UNLOCKED
    }
}

// SAFETY: unlock already hands over in the lock's order.
unsafe impl<W: Wait> RawMutexFair for Reciprocating<W> {
    #[inline]
    unsafe fn unlock_fair(&self, guard: ReciprocatingGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlock(guard) }
    }
}

super::timed_via_lock_until!(Reciprocating);

/// A reciprocating gate owes the wake-up of the waiter it admits, asleep on its queue node, and
/// keeps the node's number in the room: `Gated<Reciprocating>` is 12 bytes (word, room and
/// arrivals), with no guard. Only the word's holder touches the room, so the word orders it.
impl<W: Wait> Gate for Reciprocating<W> {
    type Owed = ();
    type Room = AtomicU32;
    type Due = Option<&'static AtomicU32>;
    #[inline]
    unsafe fn pass_on(&self, guard: ReciprocatingGuard, room: &AtomicU32) {
        // SAFETY: forwarded from the caller.
        if let Some(asleep) = unsafe { Reciprocating::pass_on(self, guard) } {
            // The node's number, never 0 (`queue_node::index`), rather than its address: the
            // room is 4 bytes. Relaxed: only the word's holder reads or writes the room.
            room.store(asleep.index, Relaxed);
            #[cfg(loom)]
            crate::testing::count_gate_wake_up_owed();
        }
    }
    #[inline]
    fn due(&self, _: (), room: &AtomicU32) -> Option<&'static AtomicU32> {
        // Relaxed: as in `pass_on`.
        let owed = room.load(Relaxed);
        if owed == NONE {
            return None;
        }
        room.store(NONE, Relaxed);
        // SAFETY: the room holds only numbers read from nodes' `index` fields (`pass_on`).
        Some(&unsafe { queue_node::index::node(owed) }.state)
    }
    #[inline]
    fn settle(due: Option<&'static AtomicU32>) {
        if let Some(asleep) = due {
            W::wake_one(asleep);
        }
    }
}
