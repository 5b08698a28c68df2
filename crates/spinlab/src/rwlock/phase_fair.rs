//! Phase-fair reader-writer lock: Brandenburg and Anderson's PF-T ticket lock, with waiting
//! done by a policy that may sleep. Three words: `rin` (reader arrivals and the writer's
//! announcement; readers waiting for a writer phase watch it), `rout` (reader departures; the
//! present writer watches it), and `writers`, a [`Ticket`] lock over the same policy that
//! serves writers in FIFO order (PF-T's `win` and `wout`).
//!
//! | `rin` bits | name             | meaning                                                       |
//! |------------|------------------|---------------------------------------------------------------|
//! | 0          | `PHASE`          | flips with every writer: tells one writer phase from the next |
//! | 1          | `PRESENT`        | a writer is present: arriving readers wait for it             |
//! | 2          | `READERS_ASLEEP` | readers (or the next writer) may be asleep on this word: the writer's unlock wakes them |
//! | 8..32      | arrivals         | readers that have arrived, `+1` (that is, `+0x100`) each, wrapping |
//!
//! | `rout` bits | name            | meaning                                                        |
//! |-------------|-----------------|----------------------------------------------------------------|
//! | 0           | `WRITER_ASLEEP` | the present writer may be asleep on this word                  |
//! | 8..32       | departures      | readers that have left, `+0x100` each, wrapping; while `WRITER_ASLEEP` is set, counted from the writer's target, so `0` means drained |
//!
//! - Reader: add one arrival. If no writer was present, it is in. Otherwise it waits until
//!   `rin`'s writer bits differ from the ones its arrival returned: that writer's phase is
//!   over (if the next writer is already present, its flipped `PHASE` tells them apart, and it
//!   counted this reader among those it waits for). Leave: add one departure.
//! - Writer: take the ticket lock; wait until the previous writer has cleared `PRESENT`; flip
//!   `PHASE` and set `PRESENT` in one step, which returns the arrival count then; wait until
//!   departures reach it. Readers that arrived before that step go first, later ones wait.
//! - Writer unlock: release the ticket lock, then clear `PRESENT`, which lets the readers of
//!   its phase in as the next reader phase and the next writer announce itself.
//!
//! Fairness: a reader waits for one writer phase at most, a writer for no reader that came later.
//!
//! **Nothing but a futex wake-up names the lock after the atomic that releases it**, since
//! POSIX lets a thread free a rwlock as soon as it is unlocked and unused (glibc's bug 13690).
//! The writer's releasing atomic, the clear of `PRESENT`, comes last (`unlock_exclusive`); a
//! reader's is its departure, whose result says whether to wake the writer
//! (`sleep_until_drained`).
//!
//! Counts are compared modulo 2^24, so up to 2^24 - 1 readers can be inside at once. The words
//! sit side by side, so that a reader, which writes both `rin` and `rout`, finds the second in
//! the line the first brought in; wrap the lock in a [`CachePadded`](crate::CachePadded) to
//! keep it from straddling two lines or sharing one.

use crate::event::sleep_marked;
use crate::lock::Ticket;
use crate::sync::{AtomicU32, Ordering::*};
use crate::wait::{Episode, Spun, Wait};
use lock_api::{GuardSend, RawMutex, RawRwLock};

const PHASE: u32 = 1;
const PRESENT: u32 = 2;
const WRITER_BITS: u32 = PRESENT | PHASE;
const READERS_ASLEEP: u32 = 4;
const WRITER_ASLEEP: u32 = 1;
const ONE_READER: u32 = 0x100;
const COUNT: u32 = !(ONE_READER - 1);

/// Phase-fair reader-writer lock waiting with policy `W`: neither readers nor writers starve.
/// The state tables are in the module docs.
///
/// ```
/// use spinlab::{rwlock::PhaseFair, wait::Futex};
/// let lock = lock_api::RwLock::<PhaseFair<Futex>, _>::new(0u64);
/// std::thread::scope(|s| {
///     for _ in 0..2 {
///         s.spawn(|| for _ in 0..100 { *lock.write() += 1; });
///         s.spawn(|| for _ in 0..100 { assert!(*lock.read() <= 200); });
///     }
/// });
/// assert_eq!(*lock.read(), 200);
/// ```
pub struct PhaseFair<W: Wait> {
    rin: AtomicU32,
    rout: AtomicU32,
    writers: Ticket<W>,
}

impl<W: Wait> PhaseFair<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            PhaseFair {
                rin: AtomicU32::new(0),
                rout: AtomicU32::new(0),
                writers: Ticket::new(),
            }
        }
    }

    /// Waits until the writer phase that `writer_bits` names is over (for the next writer:
    /// until the writer still releasing has cleared `PRESENT`).
    #[cold]
    fn wait_writer_phase(&self, writer_bits: u32) {
        let mut episode = Episode::new(None);
        loop {
            // Acquire: pairs with the writer unlock's Release, so its write section
            // happens-before our read section.
            let seen = self.rin.load(Acquire);
            if seen & WRITER_BITS != writer_bits {
                return;
            }
            // Every arriving reader changes `rin` too: the spin returns, and we look again.
            match W::spin(&self.rin, seen, &mut episode) {
                Spun::Changed => {}
                Spun::TimedOut => unreachable!("no deadline"),
                Spun::Exhausted => {
                    sleep_marked::<W>(&self.rin, seen, READERS_ASLEEP, None);
                    episode.restart_spinning();
                }
            }
        }
    }

    /// Announces a writer (whose turn it is) and returns the arrival count readers must drain
    /// to.
    #[inline]
    fn announce_writer(&self) -> u32 {
        // The previous writer releases the ticket lock before it clears `PRESENT`: wait for
        // that (only it can clear the bit, and only this writer can set it again).
        let seen = self.rin.load(Relaxed);
        if seen & PRESENT != 0 {
            self.wait_writer_phase(seen & WRITER_BITS);
        }
        // No writer is present now, so the xor sets `PRESENT` and flips `PHASE`. Relaxed: this
        // thread's Acquire comes from the departures it waits for, and the ticket lock orders
        // writers.
        let before = self.rin.fetch_xor(WRITER_BITS, Relaxed);
        debug_assert_eq!(before & PRESENT, 0);
        before & COUNT
    }

    /// Waits until the departure count reaches `target`: every reader that arrived before this
    /// writer's announcement has left.
    fn drain_readers(&self, target: u32) {
        let mut episode = Episode::new(None);
        loop {
            // Acquire: pairs with the departing readers' Release.
            // (`WRITER_ASLEEP` is never set here: this writer clears it as it wakes.)
            let seen = self.rout.load(Acquire);
            if seen & COUNT == target {
                return;
            }
            match W::spin(&self.rout, seen, &mut episode) {
                Spun::Changed => {}
                Spun::TimedOut => unreachable!("no deadline"),
                Spun::Exhausted => {
                    self.sleep_until_drained(seen, target);
                    episode.restart_spinning();
                }
            }
        }
    }

    /// Sleeps while `rout` holds `seen`, having rewritten it so that the departure that reaches
    /// `target` brings the count to zero and knows to wake us.
    ///
    /// A reader's releasing atomic is its departure, and whether it must wake the writer is in
    /// the value it returns: the compare-and-swap that sets `WRITER_ASLEEP` makes `rout` count
    /// departures from the target, so the departure that brings the count to zero is the last
    /// one and makes the wake-up call, and no reader reads the target after leaving. Every
    /// departure changes the word, so a departure before the futex wait makes the wait return;
    /// the writer restores the absolute count (and clears the mark) in one addition when it
    /// wakes.
    #[cold]
    fn sleep_until_drained(&self, seen: u32, target: u32) {
        let from_target = (seen & COUNT).wrapping_sub(target) | WRITER_ASLEEP;
        // Fails, and the caller looks again, if a reader left since `seen`. Relaxed: the
        // readers need nothing from us, only the value.
        if self.rout.compare_exchange(seen, from_target, Relaxed, Relaxed).is_ok() {
            W::sleep(&self.rout, from_target, None);
            // Back to the absolute count, mark cleared (it is set, and only we clear it).
            // Relaxed: the caller's Acquire load reads this or a later value, and through this
            // read-modify-write it synchronizes with every departure before it.
            self.rout.fetch_add(target.wrapping_sub(WRITER_ASLEEP), Relaxed);
        }
    }
}

impl<W: Wait> Default for PhaseFair<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: writers exclude each other through the ticket lock. A writer enters only once every
// reader that arrived before its announcement has left (its drain), and every reader arriving
// after the announcement waits until the writer's unlock clears `PRESENT`; a reader arriving
// before it is counted in the drain. Entries are Acquire and exits Release.
unsafe impl<W: Wait> RawRwLock for PhaseFair<W> {
    crate::sync::raw_init!();
    type SharedGuard = GuardSend;
    type ExclusiveGuard = GuardSend;

    #[inline]
    fn lock_shared(&self) -> GuardSend {
        // Acquire: pairs with the Release of the last writer's unlock when no writer is present.
        let before = self.rin.fetch_add(ONE_READER, Acquire);
        if before & PRESENT != 0 {
            self.wait_writer_phase(before & WRITER_BITS);
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<GuardSend> {
        let mut seen = self.rin.load(Relaxed);
        loop {
            if seen & PRESENT != 0 {
                return None;
            }
            match self.rin.compare_exchange_weak(seen, seen.wrapping_add(ONE_READER), Acquire, Relaxed) {
                Ok(_) => return Some(GuardSend::new()),
                Err(now) => seen = now,
            }
        }
    }

    #[inline]
    unsafe fn unlock_shared(&self, _: GuardSend) {
        // Release: the read section happens-before the draining writer's Acquire.
        let before = self.rout.fetch_add(ONE_READER, Release);
        // The writer asleep counts from its target: the departure that reaches zero is the
        // last one it waits for. The lock may be gone by now: only the wake-up's system call
        // may name it.
        if W::MAY_SLEEP && before & WRITER_ASLEEP != 0 && before.wrapping_add(ONE_READER) & COUNT == 0 {
            W::wake_one(&self.rout);
        }
    }

    #[inline]
    fn lock_exclusive(&self) -> GuardSend {
        let turn = self.writers.lock();
        let target = self.announce_writer();
        self.drain_readers(target);
        turn
    }

    fn try_lock_exclusive(&self) -> Option<GuardSend> {
        let turn = self.writers.try_lock()?;
        let seen = self.rin.load(Relaxed);
        // Acquire: the sections of the readers counted as departed happen-before ours. Read
        // after `rin`, so every arrival counted in `seen` that has left is counted here.
        let departed = self.rout.load(Acquire);
        // Free if the previous writer has cleared `PRESENT`, every reader that arrived has
        // left, and none arrives before we announce (the compare-and-swap fails if one does).
        if seen & PRESENT == 0
            && departed & COUNT == seen & COUNT
            && self.rin.compare_exchange(seen, seen ^ WRITER_BITS, Relaxed, Relaxed).is_ok()
        {
            return Some(turn);
        }
        // SAFETY: acquired above; nothing was announced.
        unsafe { self.writers.unlock(turn) };
        None
    }

    #[inline]
    unsafe fn unlock_exclusive(&self, turn: GuardSend) {
        // First, while `PRESENT` keeps every reader and the next writer waiting, so nobody can
        // be done with the lock before the atomic below releases it. The next writer waits for
        // `PRESENT` to clear as a reader of this phase would (`wait_writer_phase`, woken by the
        // same wake-up), so readers and writers see the phases alternate in ticket order.
        // SAFETY: the caller holds the lock exclusively, which means holding the ticket lock.
        unsafe { self.writers.unlock(turn) };
        // Release: the write section happens-before the readers (and the next writer) that
        // see `PRESENT` clear. `PHASE` stays as it is: the next writer flips it.
        let before = self.rin.fetch_and(!(PRESENT | READERS_ASLEEP), Release);
        // The lock may be gone by now: only the wake-up's system call may name it.
        if W::MAY_SLEEP && before & READERS_ASLEEP != 0 {
            W::wake_all(&self.rin);
        }
    }

    /// Whether a writer is present (holding, or waiting for the readers before it to leave), or a
    /// reader is inside.
    #[inline]
    fn is_locked(&self) -> bool {
        let arrived = self.rin.load(Relaxed);
        arrived & PRESENT != 0 || arrived & COUNT != self.rout.load(Relaxed) & COUNT
    }

    /// Whether a writer is present: holding the lock, or waiting for the readers that came
    /// before it to leave.
    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.rin.load(Relaxed) & PRESENT != 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::wait::{Futex, Pause};

    #[test]
    fn a_reader_arriving_during_a_writer_phase_waits_for_that_phase_only() {
        let lock = PhaseFair::<Pause>::new();
        let held = lock.lock_exclusive();
        let phase = lock.rin.load(Relaxed) & WRITER_BITS;
        assert_eq!(phase & PRESENT, PRESENT);
        // SAFETY: acquired above.
        unsafe { lock.unlock_exclusive(held) };
        let held = lock.lock_exclusive();
        assert_ne!(lock.rin.load(Relaxed) & WRITER_BITS, phase, "consecutive writers must differ in PHASE");
        // SAFETY: acquired above.
        unsafe { lock.unlock_exclusive(held) };
    }

    #[test]
    fn a_writer_waits_only_for_readers_that_came_before_it() {
        let lock = PhaseFair::<Futex>::new();
        let early = lock.lock_shared();
        std::thread::scope(|s| {
            let writer = s.spawn(|| {
                let held = lock.lock_exclusive();
                // SAFETY: acquired just above.
                unsafe { lock.unlock_exclusive(held) };
            });
            while !lock.is_locked_exclusive() {
                std::thread::yield_now();
            }
            assert!(lock.try_lock_shared().is_none(), "a late reader must wait for the writer");
            // SAFETY: acquired above.
            unsafe { lock.unlock_shared(early) };
            writer.join().unwrap();
        });
        assert!(!lock.is_locked());
    }

    #[test]
    fn counts_wrap_around() {
        let lock = PhaseFair::<Pause>::new();
        lock.rin.store(COUNT, Relaxed);
        lock.rout.store(COUNT, Relaxed);
        for _ in 0..3 {
            let reading = lock.lock_shared();
            // SAFETY: acquired just above.
            unsafe { lock.unlock_shared(reading) };
            let held = lock.try_lock_exclusive().expect("no reader is inside");
            // SAFETY: acquired just above.
            unsafe { lock.unlock_exclusive(held) };
        }
        assert!(!lock.is_locked());
    }

    /// The tests below free the lock at the instant its unlock releases it (see
    /// `release_watch`): a read or write of the lock after that kills the test binary.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    mod freed_at_release {
        use super::*;
        use crate::release_watch::{release_to_sleepers, Parked, Side};
        use std::sync::atomic::AtomicU32 as StdAtomicU32;

        /// A writer leaves while a reader of its phase sleeps on `rin` and the next writer on
        /// its ticket: the ticket lock is released too, and must be before `PRESENT` clears.
        #[test]
        fn a_writer_release_touches_nothing_after_it() {
            let phase_over = |lock: &PhaseFair<Parked>| lock.rin.load(Relaxed) & PRESENT == 0;
            let sleepers = [Side::Shared, Side::Exclusive];
            let lock = release_to_sleepers(PhaseFair::new(), Side::Exclusive, &sleepers, phase_over, |_| {});
            assert!(!lock.is_locked());
        }

        /// The last reader leaves while the writer that waits for it sleeps on `rout`.
        #[test]
        fn the_last_reader_release_touches_nothing_after_it() {
            static DEPARTURES_BEFORE: StdAtomicU32 = StdAtomicU32::new(0);
            let departed = |lock: &PhaseFair<Parked>| lock.rout.load(Relaxed) != DEPARTURES_BEFORE.load(Relaxed);
            let remember = |lock: &PhaseFair<Parked>| DEPARTURES_BEFORE.store(lock.rout.load(Relaxed), Relaxed);
            let lock = release_to_sleepers(PhaseFair::new(), Side::Shared, &[Side::Exclusive], departed, remember);
            assert!(!lock.is_locked());
        }
    }
}
