//! Hapax lock (after Dice and Kogan, "Hapax Locks", PPoPP 2026): a queue lock whose queue is
//! made of values, not nodes. Each acquisition draws a 64-bit value never used before (a
//! *hapax*, from the thread's own block of values) and swaps it into the lock's `arrive`
//! word; the value swapped out names its predecessor, whose release stores its own value into
//! `depart`. No pointer passes between threads, and no value is ever reused, so a waiter
//! cannot mistake an earlier episode's departure for its predecessor's.
//!
//! - **Lock**: swap our value into `arrive`. If the value swapped out is not live, the lock
//!   was free; otherwise wait until `depart` holds it. Waiters spin, then sleep, on the slot of
//!   a waiting array shared by all Hapax locks, chosen by hashing the lock's address with the
//!   value awaited (as [`Ticket`](super::Ticket)'s sleepers do, after Dice and Kogan's TWA).
//! - **Unlock**: if `arrive` still holds our live value, a CAS makes it not live: free. Else
//!   a successor holds our value as its predecessor: store it into `depart` and bump our
//!   value's slot, waking its sleepers if any are counted.
//!
//! | word     | bits        | meaning                                                          |
//! |----------|-------------|------------------------------------------------------------------|
//! | `arrive` | `VALUE`     | the latest acquisition's value (0 before the first)              |
//! |          | `LIVE`      | that acquisition has not released: the lock is held              |
//! |          | `TIMED`     | timed waiters wait for it to release, on its value's slot        |
//! | `depart` | all         | the latest value released with a successor waiting               |
//!
//! A timed acquisition takes no place in the queue (a place cannot be given back without
//! stalling everyone behind it): it marks the latest arrival `TIMED`, waits on that value's
//! slot and takes the lock only when it finds it free, as Ticket's timed waiters do.
//!
//! Fairness: strict FIFO among untimed acquisitions, in the order of their swaps; timed ones
//! are not ordered. With more threads than CPUs the lock goes to the next in line whether or
//! not it runs: a convoy at every hand-over to a preempted or sleeping waiter. So over the
//! policies whose waiters give their CPU away the registry makes it a [`Gated`](super::Gated)
//! lock's gate, which orders the queued waiters and leaves the wake-up of the slot's sleepers
//! in the gated lock's room until the word's release. Waiters whose values share a slot wake
//! with each other's releases and look again.
//!
//! Memory: 16 bytes per lock and an 8-byte guard (the holder's value), 24 in place, or 24 as a
//! gate with the word and its room, and no guard; 16 bytes per thread; the waiting array
//! (8 KiB) once per process. Uncontended: a swap to lock, a CAS to unlock; a release to a
//! waiter adds a store to `depart` and a bump of the slot (and a read-modify-write of its
//! sleeper count, with a policy that may sleep).

use super::Gate;
use crate::sync::{AtomicU32, AtomicU64, Ordering::*};
use crate::wait::{Episode, Spun, Wait};
use core::marker::PhantomData;
use lock_api::{RawMutex, RawMutexFair};
use std::time::Instant;

/// `arrive`: the acquisition whose value it holds has not released.
const LIVE: u64 = 1;
/// `arrive`: timed waiters wait for that acquisition's release.
const TIMED: u64 = 2;
/// `arrive`: the value; values are multiples of 4, so the flags fit below them.
const VALUE: u64 = !(LIVE | TIMED);

/// Hapax lock waiting with policy `W` (the module docs give the design): 16 bytes.
///
/// ```
/// use spinlab::{lock::Hapax, wait::Futex};
/// let m = lock_api::Mutex::<Hapax<Futex>, _>::new(0u32);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// ```
pub struct Hapax<W: Wait> {
    /// The latest arrival's value, with `LIVE` and `TIMED` (the table above).
    arrive: AtomicU64,
    /// The latest value released to a waiting successor.
    depart: AtomicU64,
    policy: PhantomData<fn() -> W>,
}

/// What a holder of a [`Hapax`] lock keeps until it releases: its value.
pub struct HapaxGuard {
    value: u64,
}

impl<W: Wait> Hapax<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Hapax { arrive: AtomicU64::new(0), depart: AtomicU64::new(0), policy: PhantomData }
        }
    }

    /// The value of the latest acquisition to arrive (a snapshot). Untimed acquisitions are
    /// served in the order they arrive, so a thread that sees this change from `v` knows that
    /// the thread it saw arrive with `v` will be served before the new one.
    ///
    /// ```
    /// use lock_api::RawMutex;
    /// use spinlab::{lock::Hapax, wait::Spin};
    /// let lock = Hapax::<Spin>::new();
    /// let before = lock.last_arrival();
    /// let guard = lock.lock();
    /// assert_ne!(lock.last_arrival(), before);
    /// // SAFETY: locked just above.
    /// unsafe { lock.unlock(guard) };
    /// ```
    pub fn last_arrival(&self) -> u64 {
        self.arrive.load(Relaxed) & VALUE
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never, and in FIFO order).
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<HapaxGuard> {
        if deadline.is_none() {
            return Some(self.lock());
        }
        let mut episode = Episode::new(deadline);
        let value = values::next();
        let mut seen = self.arrive.load(Relaxed);
        loop {
            if seen & LIVE == 0 {
                // Acquire: as `lock`'s swap, when it finds the lock free.
                match self.arrive.compare_exchange(seen, value | LIVE, Acquire, Relaxed) {
                    Ok(_) => return Some(HapaxGuard { value }),
                    Err(now) => seen = now,
                }
                continue;
            }
            if seen & TIMED == 0 {
                // Relaxed: the mark is read by the holder's release CAS, on the same word.
                if let Err(now) = self.arrive.compare_exchange(seen, seen | TIMED, Relaxed, Relaxed) {
                    seen = now;
                    continue;
                }
            }
            if !self.wait_for_release(seen | TIMED, &mut episode) {
                return None;
            }
            seen = self.arrive.load(Relaxed);
        }
    }

    /// A timed waiter's wait while `arrive` holds `marked` (a live value marked `TIMED`): on
    /// that value's slot, which its release bumps. Returns `false` if the deadline passed.
    fn wait_for_release(&self, marked: u64, episode: &mut Episode) -> bool {
        let slot = waiting_slot(self, marked & VALUE);
        loop {
            // Acquire, the slot before the word: if this reads the release's bump, the
            // release's CAS of `arrive` is visible below.
            let seen = slot.bumps.load(Acquire);
            if self.arrive.load(Relaxed) != marked {
                return true;
            }
            match W::spin(&slot.bumps, seen, episode) {
                Spun::Changed => {}
                Spun::TimedOut => return false,
                Spun::Exhausted => {
                    let in_time = self.sleep_on(slot, episode.deadline(), || self.arrive.load(Relaxed) == marked);
                    episode.restart_spinning();
                    if !in_time {
                        return false;
                    }
                }
            }
        }
    }

    #[cold]
    fn wait_for_departure(&self, predecessor: u64) {
        let slot = waiting_slot(self, predecessor);
        let mut episode = Episode::new(None);
        loop {
            // Acquire, the slot before `depart`: if this reads the bump of our predecessor's
            // release, its store to `depart` is visible below; if not, that bump is still to
            // come and ends the spin.
            let seen = slot.bumps.load(Acquire);
            // Acquire: the predecessor's critical section happens-before ours.
            if self.depart.load(Acquire) == predecessor {
                return;
            }
            if W::spin(&slot.bumps, seen, &mut episode) == Spun::Exhausted {
                self.sleep_on(slot, None, || self.depart.load(Relaxed) != predecessor);
                episode.restart_spinning();
            }
        }
    }

    /// Releases as `unlock` does, except the wake-up of the sleepers on the released value's
    /// slot: returns that slot's number if any are counted there. Slots are never freed, so the
    /// caller may wake them (`W::wake_all` of its bumps) after the lock is gone.
    ///
    /// # Safety
    ///
    /// As `unlock`: `guard` is from the acquisition being released.
    #[inline]
    unsafe fn pass_on(&self, guard: HapaxGuard) -> Option<usize> {
        let value = guard.value;
        // The lock may be gone once it is free or its successor has it: only the slot, which
        // is never freed, is touched after that.
        let slot = slot_number(self, value);
        let mut seen = value | LIVE;
        loop {
            // Release: our critical section happens-before the next acquisition's Acquire
            // swap or CAS.
            match self.arrive.compare_exchange(seen, value, Release, Relaxed) {
                Ok(_) if seen & TIMED != 0 => return bump::<W>(slot),
                Ok(_) => return None,
                Err(now) if now == value | LIVE | TIMED => seen = now,
                Err(_) => break,
            }
        }
        // A successor swapped in after us: it waits for our value in `depart`.
        self.depart.store(value, Release);
        bump::<W>(slot)
    }

    /// Counts this thread in as a sleeper on `slot` and sleeps there while `still_waiting`.
    /// Returns `false` if the deadline passed.
    ///
    /// Pairs with `bump`'s read-modify-write of the sleeper count. Both are RMWs on one word,
    /// so one comes first: if ours, the releaser sees us counted and wakes the slot after
    /// bumping it, so the futex wait below either finds the bump or is woken; if its, our
    /// Acquire reads from its Release, and its change to the lock is visible to
    /// `still_waiting`. (A store and a load on two words, Dekker's way, would need SeqCst,
    /// which loom does not model.)
    fn sleep_on(&self, slot: &'static Slot, deadline: Option<Instant>, still_waiting: impl Fn() -> bool) -> bool {
        slot.sleepers.fetch_add(1, Acquire);
        let seen = slot.bumps.load(Acquire);
        let mut in_time = true;
        if still_waiting() {
            in_time = W::sleep(&slot.bumps, seen, deadline) != crate::sys::futex::FutexWait::TimedOut;
        }
        slot.sleepers.fetch_sub(1, Relaxed);
        in_time
    }
}

/// Bumps the slot numbered `slot`, ending its spinners' spin. Returns the slot's number if
/// sleepers are counted there: the caller wakes them (`W::wake_all` of its bumps) when it
/// chooses. Nothing here makes a system call.
#[inline]
fn bump<W: Wait>(slot: usize) -> Option<usize> {
    let at = &WAITING_ARRAY[slot];
    // An RMW, so that every bump continues the release sequence of the ones before it: a
    // waiter that reads a later bump (another lock's, sharing the slot) still sees ours.
    at.bumps.fetch_add(1, Release);
    // An RMW, not a load: see `sleep_on`.
    (W::MAY_SLEEP && at.sleepers.fetch_add(0, Release) != 0).then_some(slot)
}

impl<W: Wait> Default for Hapax<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: each value is swapped into `arrive` once, so each acquisition has one predecessor
// and one successor at most. An acquisition holds the lock once its predecessor is not live
// (its release's Release CAS, read by our Acquire swap) or has stored its value into `depart`
// (Release, read with Acquire); values are never reused, so `depart` names only a release.
unsafe impl<W: Wait> RawMutex for Hapax<W> {
    crate::sync::raw_init!();
    type Guard = HapaxGuard;

    #[inline]
    fn lock(&self) -> HapaxGuard {
        let value = values::next();
        // Acquire: if the lock is free, the critical section of the release that freed it
        // (a Release CAS) happens-before ours.
        let previous = self.arrive.swap(value | LIVE, Acquire);
        if previous & LIVE != 0 {
            self.wait_for_departure(previous & VALUE);
        }
        HapaxGuard { value }
    }

    #[inline]
    fn try_lock(&self) -> Option<HapaxGuard> {
        let seen = self.arrive.load(Relaxed);
        if seen & LIVE != 0 {
            return None;
        }
        let value = values::next();
        // Acquire: as `lock`'s swap.
        self.arrive.compare_exchange(seen, value | LIVE, Acquire, Relaxed).ok().map(|_| HapaxGuard { value })
    }

    #[inline]
    unsafe fn unlock(&self, guard: HapaxGuard) {
        // SAFETY: forwarded from the caller.
        if let Some(slot) = unsafe { self.pass_on(guard) } {
            W::wake_all(&WAITING_ARRAY[slot].bumps);
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.arrive.load(Relaxed) & LIVE != 0
    }
}

// SAFETY: unlock already hands over in arrival order.
unsafe impl<W: Wait> RawMutexFair for Hapax<W> {
    #[inline]
    unsafe fn unlock_fair(&self, guard: HapaxGuard) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlock(guard) }
    }
}

super::timed_via_lock_until!(Hapax);

/// A hapax gate owes the wake-up of the sleepers on the released value's slot of the waiting
/// array, and keeps the slot's number plus one in the room (0: nothing owed): `Gated<Hapax>`
/// is 24 bytes (word, room and the two 64-bit words), with no guard. Only the word's holder
/// touches the room, so the word orders it.
impl<W: Wait> Gate for Hapax<W> {
    type Owed = ();
    type Room = AtomicU32;
    type Due = Option<&'static AtomicU32>;
    #[inline]
    unsafe fn pass_on(&self, guard: HapaxGuard, room: &AtomicU32) {
        // SAFETY: forwarded from the caller.
        if let Some(slot) = unsafe { Hapax::pass_on(self, guard) } {
            // Relaxed: only the word's holder reads or writes the room.
            room.store(slot as u32 + 1, Relaxed);
            #[cfg(loom)]
            crate::testing::count_gate_wake_up_owed();
        }
    }
    #[inline]
    fn due(&self, _: (), room: &AtomicU32) -> Option<&'static AtomicU32> {
        // Relaxed: as in `pass_on`.
        let owed = room.load(Relaxed);
        if owed == 0 {
            return None;
        }
        room.store(0, Relaxed);
        Some(&WAITING_ARRAY[owed as usize - 1].bumps)
    }
    #[inline]
    fn settle(due: Option<&'static AtomicU32>) {
        if let Some(bumps) = due {
            // Every sleeper on the slot: the one awaiting this release cannot be told apart
            // from those whose values share the slot.
            W::wake_all(bumps);
        }
    }
}

/// One slot of the waiting array: a sequence number that releases bump, and the count of
/// sleepers that may be on it.
struct Slot {
    bumps: AtomicU32,
    sleepers: AtomicU32,
}

/// log2 of the waiting array's length.
#[cfg(not(loom))]
const SLOT_BITS: u32 = 10;
/// Under loom, two slots: enough for values of one lock to share a slot, so the models also
/// check wake-ups meant for another waiter.
#[cfg(loom)]
const SLOT_BITS: u32 = 1;

#[cfg(not(loom))]
static WAITING_ARRAY: [Slot; 1 << SLOT_BITS] =
    [const { Slot { bumps: AtomicU32::new(0), sleepers: AtomicU32::new(0) } }; 1 << SLOT_BITS];

#[cfg(loom)]
loom::lazy_static! {
    static ref WAITING_ARRAY: [Slot; 1 << SLOT_BITS] = [
        Slot { bumps: AtomicU32::new(0), sleepers: AtomicU32::new(0) },
        Slot { bumps: AtomicU32::new(0), sleepers: AtomicU32::new(0) },
    ];
}

/// The slot where waiters for `value`'s release on `lock` wait.
fn waiting_slot<T>(lock: &T, value: u64) -> &'static Slot {
    &WAITING_ARRAY[slot_number(lock, value)]
}

/// The number of the slot where waiters for `value`'s release on `lock` wait: a Fibonacci hash
/// of the two, so that the consecutive values of one thread fall on different slots.
fn slot_number<T>(lock: &T, value: u64) -> usize {
    #[cfg(not(loom))]
    let address = lock as *const T as usize as u64 >> 3;
    // Loom replays each execution and needs the same slots every time; addresses differ.
    #[cfg(loom)]
    let address = {
        let _ = lock;
        0u64
    };
    let hash = (address ^ (value >> 2)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (hash >> (64 - SLOT_BITS)) as usize
}

mod values {
    //! Where acquisitions' values come from. A thread takes a block of [`BLOCK`] values from
    //! one shared counter and hands them out one by one, so it touches that counter once per
    //! [`BLOCK`] acquisitions. Values are multiples of 4 from 4 on; the 2^62 of them last 146
    //! years at a billion acquisitions a second, so none is ever handed out twice.

    /// Values in a block.
    #[cfg(not(loom))]
    const BLOCK: u64 = 1 << 20;
    /// The distance between values: the two bits below are `arrive`'s flags.
    const STEP: u64 = 4;

    #[cfg(not(loom))]
    static NEXT_BLOCK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

    #[cfg(not(loom))]
    crate::sync::thread_local! {
        /// The next value and the end of this thread's block. No destructor, so it can be
        /// reached during thread teardown too.
        static BLOCK_LEFT: core::cell::Cell<(u64, u64)> = const { core::cell::Cell::new((0, 0)) };
    }

    /// A value no acquisition has had.
    #[cfg(not(loom))]
    #[inline]
    pub(super) fn next() -> u64 {
        BLOCK_LEFT.with(|left| {
            let (mut next, mut end) = left.get();
            if next == end {
                // Relaxed: only uniqueness matters, which the RMW gives.
                let block = NEXT_BLOCK.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                next = block * BLOCK * STEP;
                end = next + BLOCK * STEP;
            }
            left.set((next + STEP, end));
            next
        })
    }

    // Under loom, one counter for every thread, of std's atomics (the values are not a model's
    // subject, and a modelled counter would multiply the interleavings), made afresh for each
    // execution so that every replay draws the same values.
    #[cfg(loom)]
    loom::lazy_static! {
        static ref NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(STEP);
    }

    #[cfg(loom)]
    pub(super) fn next() -> u64 {
        NEXT.fetch_add(STEP, std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::wait::Spin;

    #[test]
    fn values_are_never_handed_out_twice_nor_collide_with_the_flags() {
        let mut all: Vec<u64> = (0..1000).map(|_| values::next()).collect();
        let threads: Vec<_> =
            (0..4).map(|_| std::thread::spawn(|| (0..1000).map(|_| values::next()).collect::<Vec<_>>())).collect();
        for thread in threads {
            all.extend(thread.join().unwrap());
        }
        assert!(all.iter().all(|&v| v != 0 && v & !VALUE == 0), "a value with a flag bit, or 0");
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), count, "a value was handed out twice");
    }

    #[test]
    fn a_hapax_lock_is_16_bytes_and_its_guard_8() {
        assert_eq!(size_of::<Hapax<Spin>>(), 16);
        assert_eq!(size_of::<HapaxGuard>(), 8);
    }
}
