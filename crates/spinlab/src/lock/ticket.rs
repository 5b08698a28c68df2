//! Ticket lock: take a number, wait until it is served. FIFO, one shared line.
//!
//! Every waiter watches the same `serving` word, so every hand-over invalidates every
//! waiter's copy of it, and with a policy that sleeps the releaser must wake them all (the
//! kernel cannot wake "the one holding ticket n"). That cost grows with the number of waiters
//! and is what MCS and CLH remove.

use crate::sync::{AtomicU32, Ordering::*};
use crate::wait::{Episode, Spun, Wait};
use core::marker::PhantomData;
use lock_api::{GuardSend, RawMutex, RawMutexFair};
use std::time::Instant;

/// Ticket lock waiting with policy `W`.
///
/// Words: `next` (the next ticket to hand out), `serving` (the ticket that holds the lock;
/// waiters wait on it), `sleepers` (waiters that may be asleep on `serving`; used only by
/// policies that may sleep). Held iff `next != serving`.
///
/// A timed acquisition cannot take a ticket (a ticket cannot be given back without blocking
/// every later one), so it waits for `serving` to move and tries to take the lock only when
/// it is free: timed waiters are not served in FIFO order.
///
/// ```
/// use spinlab::{lock::Ticket, wait::Pause};
/// let m = lock_api::Mutex::<Ticket<Pause>, _>::new(vec![1]);
/// m.lock().push(2);
/// assert_eq!(*m.lock(), [1, 2]);
/// ```
pub struct Ticket<W: Wait> {
    next: AtomicU32,
    serving: AtomicU32,
    sleepers: AtomicU32,
    policy: PhantomData<fn() -> W>,
}

impl<W: Wait> Ticket<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Ticket { next: AtomicU32::new(0), serving: AtomicU32::new(0), sleepers: AtomicU32::new(0), policy: PhantomData }
        }
    }

    /// Waits for `serving` to move away from `seen`: the policy's spin phase, then sleep.
    /// Returns `false` if the deadline passed.
    #[inline]
    fn wait_serving_change(&self, seen: u32, episode: &mut Episode) -> bool {
        match W::spin(&self.serving, seen, episode) {
            Spun::Changed => true,
            Spun::TimedOut => false,
            Spun::Exhausted => {
                // Pairs with unlock's read-modify-write of `sleepers`. Both are RMWs on one
                // word, so one comes first: if ours, the releaser counts us and wakes; if its,
                // our Acquire reads from its Release, so its store to `serving` happens-before
                // the load below (or the kernel's re-check). The Dekker pattern this replaces
                // (SeqCst store and load on two words) is correct in C11 but beyond what loom
                // models: loom treats SeqCst accesses as AcqRel and reported a lost wake-up.
                self.sleepers.fetch_add(1, Acquire);
                let mut in_time = true;
                if self.serving.load(Relaxed) == seen {
                    in_time =
                        W::sleep(&self.serving, seen, episode.deadline()) != crate::sys::futex::FutexWait::TimedOut;
                }
                self.sleepers.fetch_sub(1, Relaxed);
                episode.restart_spinning();
                in_time
            }
        }
    }

    #[cold]
    fn wait_for_turn(&self, ticket: u32) {
        let mut episode = Episode::new(None);
        loop {
            let serving = self.serving.load(Acquire);
            if serving == ticket {
                return;
            }
            self.wait_serving_change(serving, &mut episode);
        }
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never, and in FIFO order).
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<GuardSend> {
        if deadline.is_none() {
            return Some(self.lock());
        }
        let mut episode = Episode::new(deadline);
        loop {
            // Wait for `serving` to move from the value the failed attempt saw. Re-reading it
            // after the attempt could read the value of a release in between, with the lock
            // free: the wait would then last until the deadline (unless others used the lock).
            let serving = match self.try_take() {
                Ok(guard) => return Some(guard),
                Err(serving) => serving,
            };
            if !self.wait_serving_change(serving, &mut episode) {
                return None;
            }
        }
    }

    /// One attempt to take the lock if it is free; on failure returns the `serving` seen.
    #[inline]
    fn try_take(&self) -> Result<GuardSend, u32> {
        let serving = self.serving.load(Acquire);
        match self.next.compare_exchange(serving, serving.wrapping_add(1), Acquire, Relaxed) {
            Ok(_) => Ok(GuardSend::new()),
            Err(_) => Err(serving),
        }
    }
}

impl<W: Wait> Default for Ticket<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: each ticket is handed out once (fetch_add), and only the holder of ticket `n`
// advances `serving` to `n + 1`; the Acquire load that sees its own ticket pairs with the
// previous holder's Release store.
unsafe impl<W: Wait> RawMutex for Ticket<W> {
    crate::sync::raw_init!();
    type Guard = GuardSend;

    #[inline]
    fn lock(&self) -> GuardSend {
        let ticket = self.next.fetch_add(1, Relaxed);
        if self.serving.load(Acquire) != ticket {
            self.wait_for_turn(ticket);
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<GuardSend> {
        self.try_take().ok()
    }

    #[inline]
    unsafe fn unlock(&self, _: GuardSend) {
        // Only the holder writes `serving`, so a load and a store suffice.
        let next = self.serving.load(Relaxed).wrapping_add(1);
        if !W::MAY_SLEEP {
            self.serving.store(next, Release);
        } else {
            self.serving.store(next, Release);
            // An RMW, not a load: it reads the latest count, and Release publishes the store
            // above to a waiter whose increment comes after it (see `wait_serving_change`).
            if self.sleepers.fetch_add(0, Release) != 0 {
                W::wake_all(&self.serving);
            }
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.next.load(Relaxed) != self.serving.load(Relaxed)
    }
}

// SAFETY: unlock already hands over in ticket order.
unsafe impl<W: Wait> RawMutexFair for Ticket<W> {
    #[inline]
    unsafe fn unlock_fair(&self, guard: GuardSend) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlock(guard) }
    }
}

super::timed_via_lock_until!(Ticket);
