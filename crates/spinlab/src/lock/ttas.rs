//! Test-and-test-and-set: seed 000's Fig. 1, the Linux spin lock of the T1/T2 paper.
//!
//! Try the atomic once; if the lock is held, wait with the policy while it *reads* as held
//! (the read hits in the waiter's own cache until the holder writes the line), then try the
//! atomic again. The policy's loop body runs between the re-reads, where seed 000 inserted
//! its long-latency instructions (between lines 13 and 14 of Fig. 1).

use super::word::{sealed, Parked, Probe, WordLock, LOCKED, LOCKED_SLEEPERS, UNLOCKED};
use crate::sync::Ordering::Relaxed;
use crate::wait::{Episode, Spun, Wait};
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
pub type Ttas<W> = WordLock<W, TestAndTestAndSet>;

/// [`Ttas`]'s wait: re-read the word until it changes, and attempt only when it reads free.
pub enum TestAndTestAndSet {}

impl sealed::Sealed for TestAndTestAndSet {}

impl Probe for TestAndTestAndSet {
    #[cold]
    fn lock_contended<W: Wait>(lock: &WordLock<W, Self>, deadline: Option<Instant>) -> bool {
        let word = &lock.word;
        let mut episode = Episode::new(deadline);
        // Once this thread has slept it acquires as LOCKED_SLEEPERS: others may still sleep.
        let mut acquire_as = LOCKED;
        loop {
            let seen = word.state.load(Relaxed);
            if seen == UNLOCKED {
                if word.try_acquire(acquire_as).is_ok() {
                    return true;
                }
                continue;
            }
            match W::spin(&word.state, seen, &mut episode) {
                Spun::Changed => continue,
                Spun::TimedOut => return word.give_up(acquire_as == LOCKED_SLEEPERS),
                Spun::Exhausted => match word.park(deadline) {
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
