//! The sense-reversing centralised barrier (Mellor-Crummey and Scott 1991, §3.3; seed 001's
//! reference [7]), with the sense bit widened to a count of completed phases so that a futex
//! can sleep on it and so that more threads than parties cannot confuse it.
//!
//! Two words, each on its own line ([`Compact`] keeps them side by side, for 16 bytes of
//! memory the caller provides):
//!
//! - `arrivals` (64 bits): a ticket per arrival, never reset. Ticket `t` belongs to phase
//!   `t / parties`; the arrival holding the last seat of a phase (`t % parties == parties - 1`)
//!   completes it and leads.
//! - `released`, the word waiters watch; only leaders write it, once per phase, plus a waiter
//!   about to sleep:
//!
//! | bits  | name       | meaning                                                            |
//! |-------|------------|--------------------------------------------------------------------|
//! | 0     | `SLEEPERS` | a waiter may be asleep on the word: the next leader must wake them |
//! | 1..32 | completed  | phases completed so far, wrapping: `+1` (that is, `+2`) per leader   |
//!
//! A waiter of phase `p` is released once `completed > p`. If `p + 1` leaders have counted,
//! `p + 1` phases are full, and since tickets fill phases in order, those are phases `0..=p`:
//! the waiter's own phase is full even if its own leader has not counted yet. So the barrier
//! stays correct when more threads than `parties` call [`Barrier::wait`] at once (consecutive
//! groups of `parties` arrivals form the phases), which is what a tickets counter buys over
//! reading a phase number and arriving in two steps: there, a thread that reads the phase just
//! before the previous phase completes would count itself into the wrong one.
//!
//! The comparison is modulo 2^31 phases, as "past, within half the range": exact as long as a
//! waiter does not sleep through 2^30 phases. With exactly `parties` threads it cannot sleep
//! through even one (the next phase needs its arrival); only spare threads completing phases
//! while it is descheduled could move the count that far. The ticket counter has 64 bits and
//! does not wrap in practice.
//!
//! Keeping the watched word apart from the arrival counter is seed 001's advice for monitor
//! waits: a write to the monitored line that is not the release would end every waiter's
//! `umwait`/`mwaitx` for nothing. Here arrivals never touch the line waiters watch.

use super::{BarrierWaitResult, InvalidParties};
use crate::event::sleep_marked;
use crate::padded::CachePadded;
use crate::sync::{AtomicU32, AtomicU64, Ordering::*};
use crate::sys::futex::FutexWait;
use crate::wait::{Episode, SpinPark, Spun, Wait};
use core::fmt;
use core::marker::PhantomData;

const SLEEPERS: u32 = 1;
const ONE_PHASE: u32 = 2;

/// A reusable barrier for a fixed number of threads, waiting with policy `W`.
///
/// Every thread that calls [`wait`](Barrier::wait) blocks until `parties` threads have
/// arrived in its phase; then those return, exactly one of them as the
/// [leader](BarrierWaitResult::is_leader), and the barrier is ready for the next phase. Writes
/// a thread made before its `wait` are visible to every thread of its phase after theirs. If
/// more than `parties` threads wait at once, each consecutive group of `parties` arrivals is a
/// phase.
///
/// Cost per phase: one atomic increment per thread on the arrival line; the leader's
/// compare-and-swap on the release line, and a wake-up system call only if a waiter went to
/// sleep. Each arrival also divides its ticket by `parties`.
///
/// ```
/// use spinlab::{wait::Futex, Barrier};
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// let barrier = Barrier::<Futex>::new(3).unwrap();
/// let (arrived, leaders) = (AtomicUsize::new(0), AtomicUsize::new(0));
/// std::thread::scope(|s| {
///     for _ in 0..3 {
///         s.spawn(|| {
///             for phase in 1..=10 {
///                 arrived.fetch_add(1, Ordering::Relaxed);
///                 if barrier.wait().is_leader() {
///                     leaders.fetch_add(1, Ordering::Relaxed);
///                 }
///                 // Nobody leaves a phase before everyone has arrived in it.
///                 assert!(arrived.load(Ordering::Relaxed) >= 3 * phase);
///             }
///         });
///     }
/// });
/// assert_eq!(leaders.into_inner(), 10);
/// ```
pub struct Barrier<W: Wait = SpinPark> {
    /// Written by every arrival.
    arrivals: CachePadded<AtomicU64>,
    /// Written by each phase's leader (and by waiters about to sleep); read by waiters.
    released: CachePadded<AtomicU32>,
    parties: u32,
    policy: PhantomData<fn() -> W>,
}

impl<W: Wait> Barrier<W> {
    /// A barrier for `parties` threads. `0` is an error (no phase could ever fill, so every
    /// wait would hang), as is more than `u32::MAX`.
    ///
    /// ```
    /// use spinlab::{wait::Spin, Barrier};
    /// assert!(Barrier::<Spin>::new(0).is_err());
    /// assert_eq!(Barrier::<Spin>::new(4).unwrap().parties(), 4);
    /// ```
    pub fn new(parties: usize) -> Result<Self, InvalidParties> {
        Ok(Barrier {
            arrivals: CachePadded::new(AtomicU64::new(0)),
            released: CachePadded::new(AtomicU32::new(0)),
            parties: party_count(parties)?,
            policy: PhantomData,
        })
    }

    /// How many threads each phase waits for.
    #[inline]
    pub fn parties(&self) -> usize {
        self.parties as usize
    }

    /// Arrives at the barrier and waits until every party has arrived in this phase.
    #[inline]
    pub fn wait(&self) -> BarrierWaitResult {
        Words { arrivals: &self.arrivals, released: &self.released, parties: self.parties }.wait::<W>()
    }
}

/// The sense-reversing barrier with its two words side by side: 16 bytes in all, for memory
/// that cannot hold two cache lines (a `pthread_barrier_t`, 32 bytes, under the preload
/// library). The same algorithm and guarantees as [`Barrier`], whose documentation it shares;
/// the cost is that every arrival writes the line the waiters watch, so a monitor policy's
/// waiters (`umwait`, `mwaitx`) wake at each arrival, not only at the release, and spinning
/// waiters see the line move under them.
///
/// Layout (`repr(C)`): the arrival count (8 bytes), the release word (4), the party count (4).
///
/// ```
/// use spinlab::{barrier::Compact, wait::Futex};
/// let barrier = Compact::<Futex>::new(2).unwrap();
/// assert_eq!(std::mem::size_of_val(&barrier), 16);
/// let leaders: usize = std::thread::scope(|s| {
///     let other = s.spawn(|| barrier.wait().is_leader() as usize);
///     barrier.wait().is_leader() as usize + other.join().unwrap()
/// });
/// assert_eq!(leaders, 1);
/// ```
#[repr(C)]
pub struct Compact<W: Wait = SpinPark> {
    arrivals: AtomicU64,
    released: AtomicU32,
    parties: u32,
    policy: PhantomData<fn() -> W>,
}

impl<W: Wait> Compact<W> {
    /// A barrier for `parties` threads; `0` and more than `u32::MAX` are errors, as for
    /// [`Barrier::new`].
    pub fn new(parties: usize) -> Result<Self, InvalidParties> {
        let parties = party_count(parties)?;
        Ok(Compact { arrivals: AtomicU64::new(0), released: AtomicU32::new(0), parties, policy: PhantomData })
    }

    /// How many threads each phase waits for.
    #[inline]
    pub fn parties(&self) -> usize {
        self.parties as usize
    }

    /// Arrives at the barrier and waits until every party has arrived in this phase.
    #[inline]
    pub fn wait(&self) -> BarrierWaitResult {
        Words { arrivals: &self.arrivals, released: &self.released, parties: self.parties }.wait::<W>()
    }
}

/// `parties` as a barrier's party count: 1 to `u32::MAX`.
fn party_count(parties: usize) -> Result<u32, InvalidParties> {
    u32::try_from(parties).ok().filter(|&n| n >= 1).ok_or(InvalidParties { parties })
}

/// The two words of a sense-reversing barrier, wherever they are kept, and its party count:
/// the algorithm, once for [`Barrier`] and [`Compact`].
struct Words<'a> {
    arrivals: &'a AtomicU64,
    released: &'a AtomicU32,
    parties: u32,
}

impl Words<'_> {
    #[inline]
    fn wait<W: Wait>(&self) -> BarrierWaitResult {
        // AcqRel: Release publishes this thread's writes before the barrier; Acquire lets the
        // leader, whose increment reads the end of the chain of increments, see every prior
        // arrival's.
        let ticket = self.arrivals.fetch_add(1, AcqRel);
        let parties = u64::from(self.parties);
        let phase = ticket / parties;
        if ticket % parties == parties - 1 {
            self.lead::<W>();
            return BarrierWaitResult { leader: true };
        }
        // Phases are counted modulo 2^31 in `released`; the truncation is that modulus.
        let target = (phase as u32).wrapping_add(1).wrapping_mul(ONE_PHASE);
        if !reached(self.released.load(Acquire), target) {
            self.wait_for_release::<W>(target);
        }
        BarrierWaitResult { leader: false }
    }

    /// Counts one more completed phase, clearing `SLEEPERS`, and wakes any sleeper.
    #[inline]
    fn lead<W: Wait>(&self) {
        let mut seen = self.released.load(Relaxed);
        loop {
            let next = seen.wrapping_add(ONE_PHASE) & !SLEEPERS;
            // Release: everything this leader acquired from the arrivals is visible to a
            // waiter that sees the new count with Acquire. A loop rather than a fetch_add,
            // because `SLEEPERS` must be cleared in the same step that reads it: clearing it
            // later could erase the mark of a waiter that went to sleep in between.
            match self.released.compare_exchange_weak(seen, next, Release, Relaxed) {
                Ok(_) => break,
                Err(now) => seen = now,
            }
        }
        if W::MAY_SLEEP && seen & SLEEPERS != 0 {
            W::wake_all(self.released);
        }
    }

    #[cold]
    fn wait_for_release<W: Wait>(&self, target: u32) {
        let mut episode = Episode::new(None);
        loop {
            // Acquire: pairs with a leader's Release.
            let seen = self.released.load(Acquire);
            if reached(seen, target) {
                return;
            }
            match W::spin(self.released, seen, &mut episode) {
                Spun::Changed => {}
                Spun::TimedOut => unreachable!("a barrier wait has no deadline"),
                Spun::Exhausted => {
                    self.sleep::<W>(seen);
                    episode.restart_spinning();
                }
            }
        }
    }

    /// Marks the release word as having a sleeper, then sleeps until a leader changes it.
    ///
    /// The mark and a leader's count are both read-modify-writes of the one word: either the
    /// mark comes first, and the leader's compare-and-swap reads it and wakes us, or the count
    /// comes first, and the mark fails (or the kernel sees the new value) and we do not sleep.
    /// Woken, changed or interrupted, the caller re-checks.
    #[cold]
    fn sleep<W: Wait>(&self, seen: u32) {
        let _: FutexWait = sleep_marked::<W>(self.released, seen, SLEEPERS, None);
    }
}

/// Whether the release word `released` counts at least the phases that `target` (in word
/// units) names, modulo 2^31 phases.
#[inline]
fn reached(released: u32, target: u32) -> bool {
    ((released & !SLEEPERS).wrapping_sub(target) as i32) >= 0
}

impl<W: Wait> fmt::Debug for Barrier<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier")
            .field("policy", &W::NAME)
            .field("parties", &self.parties)
            .field("phases_completed", &(self.released.load(Relaxed) >> 1))
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::wait::{Futex, Pause};
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn zero_parties_is_an_error_not_a_hang() {
        let err = Barrier::<Futex>::new(0).err().unwrap();
        assert_eq!(err, InvalidParties { parties: 0 });
        assert!(err.to_string().contains("not 0"));
        assert!(Barrier::<Futex>::new(u32::MAX as usize + 1).is_err());
    }

    #[test]
    fn reached_compares_modulo_the_phase_count() {
        assert!(reached(4, 4));
        assert!(reached(5, 4), "the sleepers bit is not a phase");
        assert!(!reached(2, 4));
        assert!(reached(0, u32::MAX - 1), "one phase past the wrap");
        assert!(!reached(u32::MAX - 1, 0), "one phase before the wrap");
    }

    #[test]
    fn the_completed_count_wraps_without_losing_a_phase() {
        let barrier = Barrier::<Pause>::new(2).unwrap();
        let start = u32::MAX - 3;
        barrier.released.store(start, Relaxed);
        barrier.arrivals.store(u64::from(start >> 1) * 2, Relaxed);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..4 {
                        barrier.wait();
                    }
                });
            }
        });
        assert_eq!(barrier.released.load(Relaxed), start.wrapping_add(4 * ONE_PHASE));
    }

    #[test]
    fn more_threads_than_parties_form_consecutive_phases() {
        // Threads take waits from a shared budget, a multiple of `parties`, rather than a fixed
        // number each: a thread with waits left after all others finished would have nobody
        // to meet.
        const WAITS: usize = 200;
        let barrier = Barrier::<Futex>::new(2).unwrap();
        let (taken, leaders) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..5 {
                s.spawn(|| {
                    while taken.fetch_add(1, Relaxed) < WAITS {
                        if barrier.wait().is_leader() {
                            leaders.fetch_add(1, Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(leaders.into_inner(), WAITS / 2);
    }
}
