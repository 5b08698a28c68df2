//! Test-and-set: every iteration of the wait is an atomic attempt, with the policy's loop body
//! between attempts. The classic way *not* to spin (each failed attempt takes the lock's line
//! exclusive), kept as the baseline the other algorithms improve on.

use super::word::{LockWord, Parked, LOCKED, LOCKED_SLEEPERS};
use crate::wait::{Episode, Step, Wait};
use lock_api::{GuardSend, RawMutex};
use std::time::Instant;

/// Test-and-set lock waiting with policy `W`. Same word and states as [`super::Ttas`].
///
/// ```
/// use spinlab::{lock::Tas, wait::Spin};
/// let m = lock_api::Mutex::<Tas<Spin>, _>::new(0);
/// *m.lock() += 5;
/// assert_eq!(*m.lock(), 5);
/// ```
pub struct Tas<W: Wait> {
    word: LockWord<W>,
}

impl<W: Wait> Tas<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Tas { word: LockWord::new() }
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
        let mut episode = Episode::new(deadline);
        let mut acquire_as = LOCKED;
        loop {
            let seen = match self.word.try_acquire(acquire_as) {
                Ok(()) => return true,
                Err(seen) => seen,
            };
            match W::step(&self.word.state, seen, &mut episode) {
                Step::Continue => {}
                Step::TimedOut => return false,
                Step::Exhausted => match self.word.park(deadline) {
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

impl<W: Wait> Default for Tas<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: see `Ttas`; the word and its transitions are the same.
unsafe impl<W: Wait> RawMutex for Tas<W> {
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

super::timed_via_lock_until!(Tas);
