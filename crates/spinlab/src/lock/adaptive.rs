//! spinlab's default lock: the bounded-bypass word alone on a machine of a few CPUs, and the
//! same word behind an MCS gate on a larger one (docs/design.md, "The default lock").
//!
//! - **The word alone** ([`Bounded`](super::Bounded)) lets every waiter spin with
//!   `pause-yield-park` ([`Wait::CROWD_SPINS`](crate::wait::Wait::CROWD_SPINS)): a waiter that
//!   finds the lock free takes it at once, and no CPU idles while its threads wait.
//! - **Behind an MCS gate** ([`Gated`]) only the queue's head looks at the word; the others
//!   wait on their own queue nodes. On many CPUs a crowd on the word would send the lock's line
//!   to whichever waiter wins each release, so that the lock changes CPU at every acquisition
//!   and the CPUs fill with spinning, yielding and futex calls.
//!
//! The machine chooses: the word alone where the process may run on at most `CROWD_CPUS` CPUs
//! ([`DEFAULT_CROWD_CPUS`], 4), the gated word on more. At 4 CPUs each wins somewhere, and only
//! the word keeps up with parking_lot at a few threads, so 4 stays with the word. The count is
//! that of the CPUs the process's main thread may run on (its affinity, which `taskset` sets),
//! or of those online where the main thread is pinned to one
//! ([`process_cpus`](crate::sys::cpu::process_cpus)), read once at the first acquisition: a
//! worker thread pinned to one CPU does not make a large machine small.
//!
//! The choice is made once (threads racing to the first reading may see it change once), but
//! mutual exclusion does not depend on it: it is the word's either way, and a waiter that does
//! not queue contends for the word as a barging thread does. Uncontended, both are the word's
//! CAS to lock and its release to unlock; the gate adds its tail, 4 bytes that hold a queue
//! node's number rather than its address (`queue_node::index`), 8 bytes in all. The guard
//! ([`Owed`]) is 8 bytes more: the wake-up that passing the gate on may owe until the release
//! ([`Gated`]'s docs say why).
//!
//! **Behind the registry the choice is the table's.** A lock reached by name (the lab, the C
//! ABI, the preload library) is built as the lock this one would be on the machine, chosen
//! once when the registry builds its table: `Bounded` (4 bytes) on up to `CROWD_CPUS` CPUs,
//! `Adaptive<W, 0>` (always gated, its guard kept beside it: 16 bytes) on more. That spares
//! the question this type asks at every contended acquisition, and the room
//! its guard needs beside the word where a lock lives in place. A Rust program that uses this
//! type (`spinlab::Mutex`) keeps the guard in its `MutexGuard`.
//!
//! Fairness: on a small machine, the word's bound (a running waiter that has waited
//! [`STARVATION_NS`] claims the next release); on a large one, the gated lock's (waiters in MCS
//! order, the head bounded as in [`Gated`]).
//!
//! [`STARVATION_NS`]: super::STARVATION_NS

use super::gated::Gate;
use super::{Gated, McsQueue};
use crate::wait::Wait;
use lock_api::RawMutex;
use std::time::Instant;

/// An [`Adaptive`] lock's guard: the wake-up that passing its MCS gate on left owed, made
/// after the release ([`Gate`]); `None` for every acquisition that did not come through the
/// gate.
pub type Owed<W> = <McsQueue<W> as Gate>::Owed;

/// The most CPUs on which [`Adaptive`] leaves its waiters to the word alone.
pub const DEFAULT_CROWD_CPUS: usize = 4;

/// The bounded-bypass word over `W`, gated by an MCS queue when the process may run on more
/// than `CROWD_CPUS` CPUs (the module docs give the design). The
/// registry's `adaptive` locks; with [`PauseYieldPark`](crate::wait::PauseYieldPark),
/// spinlab's default. `CROWD_CPUS` 0 always gates, and `usize::MAX` never does (for tests).
///
/// ```
/// use spinlab::lock::Adaptive;
/// use spinlab::wait::PauseYieldPark;
/// let m = lock_api::Mutex::<Adaptive<PauseYieldPark>, _>::new(0);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// ```
pub struct Adaptive<W: Wait, const CROWD_CPUS: usize = DEFAULT_CROWD_CPUS> {
    gated: Gated<McsQueue<W>, W>,
}

impl<W: Wait, const CROWD_CPUS: usize> Adaptive<W, CROWD_CPUS> {
    /// A new, unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        <Self as RawMutex>::INIT
    }

    /// A new, unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        Adaptive { gated: Gated::with_gate(McsQueue::new()) }
    }

    /// Whether waiters queue at the gate in this process (the registry asks too, once, to
    /// choose the lock it builds).
    #[inline]
    pub fn gates() -> bool {
        match CROWD_CPUS {
            0 => true,
            usize::MAX => false,
            most => crate::sys::cpu::process_cpus() > most,
        }
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<Owed<W>> {
        if self.gated.word().fast_lock() {
            return Some(None);
        }
        self.lock_contended(deadline)
    }

    /// After one failed compare-and-swap: the gated lock's path, or the word's own.
    #[cold]
    fn lock_contended(&self, deadline: Option<Instant>) -> Option<Owed<W>> {
        if Self::gates() {
            // Barge if the word is free (`try_lock` looks before it swaps). Behind a gate the
            // word carries the count of the head's absences, so the compare-and-swap from 0
            // can fail on a free lock, and sending such a thread to the queue would make each
            // acquisition a hand-over through the gate.
            //
            // The blind compare-and-swap before this is a trade: uncontended it is the floor,
            // where `Gated`'s look first is not; contended, one that fails takes the line from
            // the holder, whose release must take it back (docs/design.md, "The default lock").
            match self.gated.word().try_lock() {
                Some(_) => Some(None),
                None => self.gated.lock_queued(deadline),
            }
        } else {
            self.gated.word().lock_contended(deadline).then_some(None)
        }
    }
}

impl<W: Wait, const CROWD_CPUS: usize> Default for Adaptive<W, CROWD_CPUS> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every acquisition is one of the word's (`Bounded`'s), alone or through the gate
// (`Gated`, whose safety argument covers a barging acquisition beside queued ones), and every
// release is the gated lock's, which is the word's.
unsafe impl<W: Wait, const CROWD_CPUS: usize> RawMutex for Adaptive<W, CROWD_CPUS> {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Adaptive { gated: <Gated<McsQueue<W>, W> as RawMutex>::INIT };
    #[cfg(loom)]
    const INIT: Self = panic!("under loom, construct locks with new()");
    type Guard = Owed<W>;

    #[inline]
    fn lock(&self) -> Owed<W> {
        if self.gated.word().fast_lock() {
            return None;
        }
        self.lock_contended(None).expect("an acquisition without a deadline cannot time out")
    }

    #[inline]
    fn try_lock(&self) -> Option<Owed<W>> {
        self.gated.try_lock()
    }

    #[inline]
    unsafe fn unlock(&self, owed: Owed<W>) {
        // The gated release, on every machine: where nobody has queued, the word is not
        // marked `QUEUED`, and the release is the word's own compare-and-swap.
        // SAFETY: forwarded from the caller, who holds the lock.
        unsafe { self.gated.unlock(owed) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.gated.is_locked()
    }
}

// `lock_until` leaves the word (and the gate) as their timed acquisitions leave them.
super::timed_via_lock_until!(Adaptive, const CROWD_CPUS: usize);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::lock::Bounded;
    use crate::wait::PauseYieldPark;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::time::Duration;

    /// While this thread holds `lock`, `threads` threads try to take it 2 000 times each,
    /// counting under it with a plain load and store. Watches the gate for `watch`, or until
    /// a waiter holds it, then releases. Returns the count and whether the gate was seen held.
    fn waiters_behind_a_holder<const N: usize>(
        lock: &Adaptive<PauseYieldPark, N>,
        threads: usize,
        watch: Duration,
    ) -> (u64, bool) {
        let count = AtomicU64::new(0);
        let mut queued = false;
        let held = lock.lock();
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for _ in 0..2_000 {
                        let guard = lock.lock();
                        count.store(count.load(Relaxed) + 1, Relaxed);
                        // SAFETY: locked just above.
                        unsafe { lock.unlock(guard) };
                    }
                });
            }
            let until = Instant::now() + watch;
            while !queued && Instant::now() < until {
                queued = lock.gated.gate_is_locked();
                std::thread::yield_now();
            }
            // SAFETY: locked above, on this thread.
            unsafe { lock.unlock(held) };
        });
        (count.into_inner(), queued)
    }

    /// Both paths, forced, with 8 times as many threads as CPUs: the count is exact, and only
    /// the gated path puts a waiter at the gate. (The gated one is watched until that
    /// happens, however loaded the machine; the crowd for a fixed 100 ms.)
    #[test]
    fn the_crowd_never_queues_and_the_gated_lock_does() {
        let threads = 8 * std::thread::available_parallelism().map_or(2, |n| n.get());
        let crowd = Adaptive::<PauseYieldPark, { usize::MAX }>::INIT;
        let (count, queued) = waiters_behind_a_holder(&crowd, threads, Duration::from_millis(100));
        assert_eq!(count, threads as u64 * 2_000);
        assert!(!queued, "a machine of few CPUs: nobody queues at the gate");
        let gated = Adaptive::<PauseYieldPark, 0>::INIT;
        let (count, queued) = waiters_behind_a_holder(&gated, threads, Duration::from_secs(60));
        assert_eq!(count, threads as u64 * 2_000);
        assert!(queued, "a large machine: waiters queue at the gate");
    }

    #[test]
    fn the_default_gates_by_the_process_cpus() {
        let cpus = crate::sys::cpu::process_cpus();
        assert!(cpus >= 1);
        assert_eq!(Adaptive::<PauseYieldPark>::gates(), cpus > DEFAULT_CROWD_CPUS);
        assert_eq!(size_of::<Adaptive<PauseYieldPark>>(), 8, "the word and the gate's 4-byte tail");
        assert_eq!(size_of::<Bounded<PauseYieldPark>>(), 4, "the word alone");
    }
}
