//! Test-and-test-and-set: seed 000's Fig. 1, the Linux spin lock of the T1/T2 paper.
//!
//! Try the atomic once; if the lock is held, wait with the policy while it *reads* as held
//! (the read hits in the waiter's own cache until the holder writes the line), then try the
//! atomic again. The policy's loop body runs between the re-reads, where seed 000 inserted
//! its long-latency instructions (between lines 13 and 14 of Fig. 1).

use super::word::{LockWord, Parked, LOCKED, LOCKED_SLEEPERS, UNLOCKED};
use crate::sync::Ordering::Relaxed;
use crate::wait::{Episode, Spun, Wait};
use lock_api::{GuardSend, RawMutex};
use std::time::Instant;

/// Test-and-test-and-set lock waiting with policy `W`. One 32-bit word; the state table is in
/// `word.rs`. Unfair: a releasing thread that re-locks at once usually wins.
///
/// ```
/// use spinlab::{lock::Ttas, wait::Pause};
/// let m = lock_api::Mutex::<Ttas<Pause>, _>::new(1);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 2);
/// ```
pub struct Ttas<W: Wait> {
    word: LockWord<W>,
}

impl<W: Wait> Ttas<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Ttas { word: LockWord::new() }
        }
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<GuardSend> {
        let acquired = self.word.try_acquire(LOCKED).is_ok() || self.lock_contended(deadline);
        acquired.then(GuardSend::new)
    }

    #[cold]
    fn lock_contended(&self, deadline: Option<Instant>) -> bool {
        let state = &self.word.state;
        let mut episode = Episode::new(deadline);
        // Once this thread has slept it acquires as LOCKED_SLEEPERS: others may still sleep.
        let mut acquire_as = LOCKED;
        loop {
            let seen = state.load(Relaxed);
            if seen == UNLOCKED {
                if self.word.try_acquire(acquire_as).is_ok() {
                    return true;
                }
                continue;
            }
            match W::spin(state, seen, &mut episode) {
                Spun::Changed => continue,
                Spun::TimedOut => return false,
                Spun::Exhausted => match self.word.park(deadline) {
                    Parked::Acquired => return true,
                    Parked::TimedOut => return false,
                    Parked::Retry => {
                        acquire_as = LOCKED_SLEEPERS;
                        episode.restart_spinning();
                    }
                },
            }
        }
    }
}

impl<W: Wait> Default for Ttas<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the lock word admits one holder at a time: every acquisition is an atomic
// transition from UNLOCKED made with Acquire ordering, and only the holder releases it with
// Release ordering.
unsafe impl<W: Wait> RawMutex for Ttas<W> {
    crate::sync::raw_init!();
    type Guard = GuardSend;

    #[inline]
    fn lock(&self) -> GuardSend {
        if self.word.try_acquire(LOCKED).is_err() {
            self.lock_contended(None);
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<GuardSend> {
        self.word.try_acquire(LOCKED).ok().map(|()| GuardSend::new())
    }

    #[inline]
    unsafe fn unlock(&self, _: GuardSend) {
        self.word.unlock();
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.word.is_locked()
    }
}

super::timed_via_lock_until!(Ttas);
