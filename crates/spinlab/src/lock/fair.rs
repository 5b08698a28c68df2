//! Seed 003's fairlock: a one-word bitmask lock that hands the lock round-robin to waiters.
//!
//! | bits  | name       | meaning                                                         |
//! |-------|------------|-----------------------------------------------------------------|
//! | 0     | `LOCKED`   | held, or being handed to a waiter: never free in between        |
//! | 1..63 | slot bits  | bit `s + 1`: the thread holding slot `s` waits                  |
//! | 63    | `SLOTLESS` | threads without a slot may sleep until the lock is free         |
//!
//! Invariant: a slot bit or `SLOTLESS` is set only while `LOCKED` is. Seed 003 gave each CPU a
//! bit; user-space threads migrate, so each thread claims one of [`FAIR_SLOTS`] process-wide
//! slots the first time it must wait, and keeps it until it exits.
//!
//! - Lock: set `LOCKED` (the fast path, as cheap as a test-and-set lock's); if it was clear,
//!   the lock is ours. Otherwise set our slot's bit, but only while `LOCKED` is still set (one
//!   CAS; if the lock was released meanwhile, try it again), then wait.
//! - Unlock: if no bit but `LOCKED` is set, clear it (one CAS). Otherwise clear the next set bit
//!   after our own slot's, wrapping around, and leave `LOCKED` set: the lock passes to that
//!   waiter without ever being free, so nobody barges in, and each slot holder gets the lock
//!   after at most one acquisition by each other slot holder.
//!
//! A waiter waits on its slot's own padded *signal* word, not on its bit as seed 003's do: a
//! futex sleeps on 32 bits, and a word per slot lets a sleeping policy wake exactly the chosen
//! waiter. Signal values: `GRANTED` 0, `WAITING` 1, `ASLEEP` 2 (the granter must wake it). The
//! grant's Release swap pairs with the waiter's Acquire load. A timed waiter withdraws its bit
//! with a CAS; if a releaser cleared it first, the lock is already its own.
//!
//! Past the slots, a thread that finds all 62 taken waits without one, counted as wanting one,
//! and a thread that ends a wait in the round-robin while anyone wants one gives its slot back
//! (`fair_slots`). Meanwhile the slotless thread takes the lock whenever it finds it free; with
//! a policy that may sleep it sleeps after one look, setting `SLOTLESS`, on the slots' turn
//! word. A slot given back wakes one such sleeper; a release that finds no slot bit but
//! `SLOTLESS` frees the lock and wakes them all. So the slots pass round the waiters, to
//! sleepers in the order they went to sleep, but with no bound: a newcomer or a spinning thread
//! may take a slot first.
//!
//! As the gate of a [`Gated`](super::Gated) lock (the registry's `fair` over the policies that
//! may sleep), a thread moves to a random free slot every 8th wait
//! (`fair_slots::move_now_and_then`, whose docs say why). A thread that moves may land ahead of
//! the scan, so there each other slot holder passes a waiter at most twice in one turn, not
//! once. The lock used directly, as the seeds use it, never moves a thread.

use super::fair_slots::{self as slots, FAIR_SLOTS};
use crate::sync::{AtomicU32, AtomicU64, Ordering::*};
use crate::wait::{Episode, Spun, Step, Wait};
use core::marker::PhantomData;
use lock_api::{GuardSend, RawMutex, RawMutexFair};
use std::time::Instant;

const LOCKED: u64 = 1;
/// Threads without a slot may sleep until this lock is free (set only while `LOCKED` is).
const SLOTLESS: u64 = 1 << 63;
/// The waiter bits of the threads holding slots.
const SLOT_BITS: u64 = !(LOCKED | SLOTLESS);
// Bit `s + 1` belongs to slot `s`: one bit for each of the slots, no more.
const _: () = assert!(SLOT_BITS >> 1 == (1 << FAIR_SLOTS) - 1);

const GRANTED: u32 = 0;
const WAITING: u32 = 1;
const ASLEEP: u32 = 2;

/// Fair bitmask lock waiting with policy `W`. One 64-bit word.
///
/// ```
/// use spinlab::{lock::Fair, wait::SpinPark};
/// let m = lock_api::Mutex::<Fair<SpinPark>, _>::new(0);
/// *m.lock() += 3;
/// assert_eq!(*m.lock(), 3);
/// ```
pub struct Fair<W: Wait> {
    state: AtomicU64,
    policy: PhantomData<fn() -> W>,
}

impl<W: Wait> Fair<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Fair { state: AtomicU64::new(0), policy: PhantomData }
        }
    }

    /// How many threads with a slot are queued for the lock right now (a snapshot: the
    /// number of waiter bits set). Threads waiting without a slot are not counted.
    ///
    /// ```
    /// use spinlab::{lock::Fair, wait::Spin};
    /// let lock = Fair::<Spin>::new();
    /// assert_eq!(lock.waiters(), 0);
    /// ```
    #[inline]
    pub fn waiters(&self) -> u32 {
        (self.state.load(Relaxed) & SLOT_BITS).count_ones()
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never).
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<GuardSend> {
        let acquired = self.try_lock().is_some() || self.lock_contended(deadline);
        acquired.then(GuardSend::new)
    }

    #[cold]
    fn lock_contended(&self, deadline: Option<Instant>) -> bool {
        // A wake-up owed since a release that took the fast path goes out before we wait.
        slots::settle();
        loop {
            let Some(slot) = slots::mine() else {
                match self.lock_without_slot(deadline) {
                    Slotless::Acquired => return true,
                    Slotless::TimedOut => return false,
                    Slotless::SlotFree => continue,
                }
            };
            let acquired = self.lock_in_slot(slot, deadline);
            // Between waits: our bit is in no word, so the slot may pass to a thread without.
            // Its wake-up goes out at our release, or now if we timed out and hold nothing.
            slots::give_back_if_wanted();
            if !acquired {
                slots::settle();
            }
            return acquired;
        }
    }

    /// Waits in the round-robin with our slot's bit; returns whether we got the lock.
    fn lock_in_slot(&self, slot: usize, deadline: Option<Instant>) -> bool {
        let bit = 1u64 << (slot + 1);
        let signal = slots::signal(slot);
        let mut seen = self.state.load(Relaxed);
        loop {
            if seen & LOCKED == 0 {
                match self.state.compare_exchange_weak(seen, seen | LOCKED, Acquire, Relaxed) {
                    Ok(_) => return true,
                    Err(now) => seen = now,
                }
                continue;
            }
            signal.store(WAITING, Relaxed);
            // Release publishes WAITING to the releaser that will read our bit.
            match self.state.compare_exchange_weak(seen, seen | bit, Release, Relaxed) {
                Ok(_) => break,
                Err(now) => seen = now,
            }
        }
        let mut episode = Episode::new(deadline);
        loop {
            // Acquire: on GRANTED, the releaser's critical section (its Release swap of the
            // signal) happens-before ours.
            let now = signal.load(Acquire);
            if now == GRANTED {
                return true;
            }
            match W::spin(signal, now, &mut episode) {
                Spun::Changed => {}
                Spun::TimedOut => return !self.withdraw(bit, signal),
                Spun::Exhausted => {
                    // Acquire on both outcomes: a failure that reads GRANTED is our acquisition.
                    if signal.compare_exchange(WAITING, ASLEEP, Acquire, Acquire) == Err(GRANTED) {
                        return true;
                    }
                    if W::sleep(signal, ASLEEP, deadline) == crate::sys::futex::FutexWait::TimedOut {
                        return !self.withdraw(bit, signal);
                    }
                    episode.restart_spinning();
                }
            }
        }
    }

    /// Takes our bit back after a time-out. Returns `false` if a releaser handed us the lock
    /// first (we hold it).
    #[cold]
    fn withdraw(&self, bit: u64, signal: &AtomicU32) -> bool {
        let mut seen = self.state.load(Relaxed);
        loop {
            if seen & bit == 0 {
                // The releaser's CAS won; its grant follows within a few instructions.
                while signal.load(Acquire) != GRANTED {
                    crate::sync::cpu_relax();
                    crate::sync::spin_iteration_done();
                }
                return false;
            }
            match self.state.compare_exchange_weak(seen, seen & !bit, Relaxed, Relaxed) {
                Ok(_) => return true,
                Err(now) => seen = now,
            }
        }
    }

    /// The wait of a thread without a slot (see the module docs): it counts itself among
    /// those wanting one, takes the lock whenever it finds it free and a slot whenever one is
    /// given back, and sleeps on the slots' turn word where its policy would sleep.
    #[cold]
    fn lock_without_slot(&self, deadline: Option<Instant>) -> Slotless {
        let _wanting = slots::wanting();
        let turn = slots::turn();
        let mut episode = Episode::new(deadline);
        let ended = loop {
            // Acquire, before the looks below: a slot given back or a lock freed is announced
            // on `turn` after the change (Release), so either we see the change or the
            // count we read is older than the announcement and the futex wait returns.
            let seen_turn = turn.load(Acquire);
            if self.state.load(Relaxed) & LOCKED == 0 && self.state.fetch_or(LOCKED, Acquire) & LOCKED == 0 {
                break Slotless::Acquired;
            }
            if slots::mine().is_some() {
                return Slotless::SlotFree;
            }
            // A policy that may sleep sleeps at once: the lock is granted only to slot holders,
            // and what a thread without a slot waits for (a slot given back, the lock freed) is
            // announced on `turn` with a wake-up, so a spin phase only adds a crowd looking at
            // the word and the slots.
            let step = if W::MAY_SLEEP { Step::Exhausted } else { W::step(turn, seen_turn, &mut episode) };
            match step {
                Step::Continue => {}
                Step::TimedOut => break Slotless::TimedOut,
                Step::Exhausted => {
                    if !self.mark_slotless() {
                        continue; // free: take it
                    }
                    if W::sleep(turn, seen_turn, deadline) == crate::sys::futex::FutexWait::TimedOut {
                        break Slotless::TimedOut;
                    }
                    episode.restart_spinning();
                }
            }
        };
        // A wake-up for a slot may have come to us; a thread that still wants one gets it.
        slots::pass_on();
        if ended == Slotless::TimedOut {
            slots::settle();
        }
        ended
    }

    /// Sets `SLOTLESS` while the lock is held; `false` if it is free. A write even where the
    /// bit is set already: `Release`, so that our read of the turn word happens-before the
    /// release that clears the bit and announces it (that release reads the word with
    /// `Acquire`, after our write in its modification order, every write to it being a
    /// read-modify-write).
    fn mark_slotless(&self) -> bool {
        let mut seen = self.state.load(Relaxed);
        loop {
            if seen & LOCKED == 0 {
                return false;
            }
            match self.state.compare_exchange_weak(seen, seen | SLOTLESS, Release, Relaxed) {
                Ok(_) => return true,
                Err(now) => seen = now,
            }
        }
    }

    /// Releases the lock as a [`Gated`](super::Gated) lock's gate, whose holder also holds the
    /// gated lock's word: as `unlock`, except that a waiter granted the lock asleep is not
    /// woken but returned (its slot), for the word's release to wake.
    ///
    /// # Safety
    ///
    /// As `unlock`: the caller holds this lock.
    pub(super) unsafe fn pass_on(&self) -> Option<usize> {
        if self.state.compare_exchange(LOCKED, 0, Release, Relaxed).is_ok() {
            return None;
        }
        self.hand_over_owing()
    }

    #[cold]
    fn hand_over(&self) {
        if let Some(slot) = self.hand_over_owing() {
            W::wake_one(slots::signal(slot));
        }
    }

    /// Hands the lock to the next waiter round-robin, or frees it if none waits. Returns the
    /// slot of a waiter granted the lock asleep: its wake-up is the caller's to make.
    #[cold]
    fn hand_over_owing(&self) -> Option<usize> {
        let mut asleep = None;
        // Round-robin from our own position (seed 003 scans from the releasing CPU's bit), or
        // the slot we last held if we gave it back.
        let from = slots::position();
        let mut seen = self.state.load(Relaxed);
        loop {
            let waiters = seen & SLOT_BITS;
            if waiters == 0 {
                // Acquire: the threads that set SLOTLESS read the turn word before we announce.
                match self.state.compare_exchange_weak(seen, 0, AcqRel, Relaxed) {
                    Ok(_) => {
                        // Only the turn word from here on: the lock may be gone.
                        if seen & SLOTLESS != 0 {
                            slots::lock_freed();
                        }
                        break;
                    }
                    Err(now) => seen = now,
                }
                continue;
            }
            let next = next_waiter_bit(waiters, from);
            // LOCKED stays set: the lock is never free during a hand-over. Acquire pairs with
            // the waiter's Release when it set its bit: its store of WAITING must happen-before
            // our grant, or the grant could come first in the signal's modification order and
            // be overwritten by that WAITING, leaving the waiter to wait for a lock it holds.
            match self.state.compare_exchange_weak(seen, seen & !(1u64 << next), Acquire, Relaxed) {
                Ok(_) => {
                    let slot = next as usize - 1;
                    // Release: our critical section happens-before the waiter's Acquire.
                    if slots::signal(slot).swap(GRANTED, Release) == ASLEEP {
                        asleep = Some(slot);
                    }
                    break;
                }
                Err(now) => seen = now,
            }
        }
        // A wake-up owed for a slot given back during our critical section.
        slots::settle();
        asleep
    }
}

/// How a wait without a slot ended.
#[derive(PartialEq, Eq)]
enum Slotless {
    Acquired,
    TimedOut,
    /// This thread now holds a slot: wait in the round-robin.
    SlotFree,
}

/// The first set bit of `waiters` above bit `from`, wrapping around to the lowest.
#[inline]
pub(crate) fn next_waiter_bit(waiters: u64, from: usize) -> u32 {
    let above = waiters & u64::MAX.checked_shl(from as u32 + 1).unwrap_or(0);
    if above != 0 {
        above.trailing_zeros()
    } else {
        waiters.trailing_zeros()
    }
}

impl<W: Wait> Default for Fair<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the lock is taken only by the atomic that sets LOCKED from clear (Acquire), or by
// being granted: a releaser clears exactly one waiter bit while LOCKED stays set, then
// Release-writes that waiter's signal, which the waiter reads with Acquire. A waiter's bit is
// cleared by a CAS of either the releaser or the waiter withdrawing, never both.
unsafe impl<W: Wait> RawMutex for Fair<W> {
    crate::sync::raw_init!();
    type Guard = GuardSend;

    #[inline]
    fn lock(&self) -> GuardSend {
        if self.try_lock().is_none() {
            self.lock_contended(None);
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<GuardSend> {
        // Seed 003's numa_trylock: test_and_set_bit(LOCKED).
        (self.state.fetch_or(LOCKED, Acquire) & LOCKED == 0).then(GuardSend::new)
    }

    #[inline]
    unsafe fn unlock(&self, _: GuardSend) {
        if self.state.compare_exchange(LOCKED, 0, Release, Relaxed).is_err() {
            self.hand_over();
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.state.load(Relaxed) & LOCKED != 0
    }
}

// SAFETY: unlock already hands over round-robin.
unsafe impl<W: Wait> RawMutexFair for Fair<W> {
    #[inline]
    unsafe fn unlock_fair(&self, guard: GuardSend) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlock(guard) }
    }
}

super::timed_via_lock_until!(Fair);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn hand_over_is_round_robin_from_the_releaser() {
        // Waiters at bits 2, 5 and 9.
        let waiters = (1 << 2) | (1 << 5) | (1 << 9);
        assert_eq!(next_waiter_bit(waiters, 2), 5);
        assert_eq!(next_waiter_bit(waiters, 5), 9);
        assert_eq!(next_waiter_bit(waiters, 9), 2, "wraps around");
        assert_eq!(next_waiter_bit(waiters, 0), 2);
        assert_eq!(next_waiter_bit(1 << 63, 63), 63, "the top slot can be its own successor");
        assert_eq!(next_waiter_bit(1 << 1, 63), 1);
    }

    /// Threads that move to a new slot every `WAITS_PER_MOVE`th wait, as at a fair gate
    /// (`fair_slots::move_now_and_then`), pass a waiter at most twice in one turn. Three threads
    /// each wait, before releasing, until the other two are queued (conditions, not timings),
    /// so every hand-over has both others waiting: between two turns of one thread, each other
    /// thread holds the lock once without moves, and at most twice with them. The threads'
    /// slots are recorded at each turn, to show that they did move.
    #[test]
    fn a_thread_that_moves_slots_passes_a_waiter_at_most_twice() {
        use crate::wait::Futex;
        use std::sync::atomic::{AtomicUsize, Ordering as O};
        use std::sync::Mutex;
        let lock = Fair::<Futex>::new();
        let rounds = 200;
        let turns = Mutex::new(Vec::with_capacity(3 * rounds));
        let active = AtomicUsize::new(3);
        std::thread::scope(|s| {
            for me in 0..3usize {
                let (lock, turns, active) = (&lock, &turns, &active);
                s.spawn(move || {
                    for _ in 0..rounds {
                        slots::move_now_and_then();
                        let guard = lock.lock();
                        turns.lock().unwrap().push((me, slots::mine()));
                        while lock.waiters() + 1 < active.load(O::Acquire) as u32 {
                            std::thread::yield_now();
                        }
                        // SAFETY: locked above by this thread.
                        unsafe { lock.unlock(guard) };
                    }
                    active.fetch_sub(1, O::AcqRel);
                });
            }
        });
        let turns = turns.into_inner().unwrap();
        assert_eq!(turns.len(), 3 * rounds);
        // While all three take part, after each has waited once and so holds a slot.
        let order: Vec<usize> = turns[3..3 * (rounds - 1)].iter().map(|&(me, _)| me).collect();
        for me in 0..3 {
            let mine: Vec<usize> = (0..order.len()).filter(|&i| order[i] == me).collect();
            for pair in mine.windows(2) {
                for other in (0..3).filter(|&o| o != me) {
                    let passed = order[pair[0] + 1..pair[1]].iter().filter(|&&o| o == other).count();
                    assert!(passed <= 2, "thread {other} held the lock {passed} times in one wait of {me}: {order:?}");
                }
            }
        }
        for me in 0..3 {
            let mut held: Vec<Option<usize>> = turns.iter().filter(|t| t.0 == me).map(|t| t.1).collect();
            held.dedup();
            assert!(held.len() > 2, "thread {me} never moved: {held:?}");
        }
    }
}
