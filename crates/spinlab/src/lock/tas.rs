//! Test-and-set: every iteration of the wait is an atomic attempt, with the policy's loop body
//! between attempts. The classic way *not* to spin (each failed attempt takes the lock's line
//! exclusive), kept as the baseline the other algorithms improve on.

use super::word::{sealed, Parked, Probe, WordLock, LOCKED, LOCKED_SLEEPERS};
use crate::wait::{Episode, Step, Wait};
use std::time::Instant;

/// Test-and-set lock waiting with policy `W`. Same word and states as [`super::Ttas`]
/// (`word.rs`); only the wait differs.
///
/// ```
/// use spinlab::{lock::Tas, wait::Spin};
/// let m = lock_api::Mutex::<Tas<Spin>, _>::new(0);
/// *m.lock() += 5;
/// assert_eq!(*m.lock(), 5);
/// ```
pub type Tas<W> = WordLock<W, TestAndSet>;

/// [`Tas`]'s wait: an atomic attempt at every step of the policy.
pub enum TestAndSet {}

impl sealed::Sealed for TestAndSet {}

impl Probe for TestAndSet {
    #[cold]
    fn lock_contended<W: Wait>(lock: &WordLock<W, Self>, deadline: Option<Instant>) -> bool {
        let word = &lock.word;
        let mut episode = Episode::new(deadline);
        let mut acquire_as = LOCKED;
        loop {
            let seen = match word.try_acquire(acquire_as) {
                Ok(()) => return true,
                Err(seen) => seen,
            };
            match W::step(&word.state, seen, &mut episode) {
                Step::Continue => {}
                Step::TimedOut => return word.give_up(acquire_as == LOCKED_SLEEPERS),
                Step::Exhausted => match word.park(deadline) {
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
