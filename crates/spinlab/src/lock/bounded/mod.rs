//! The bounded-bypass lock, the word of spinlab's default: barging, with the bypass bounded in
//! time, after parking_lot's eventual fairness, the Linux mutex's hand-off bit and Go's mutex.
//!
//! | bits   | name       | meaning                                                               |
//! |--------|------------|-----------------------------------------------------------------------|
//! | 0      | `LOCKED`   | held                                                                  |
//! | 1      | `HANDOFF`  | a starving waiter has claimed the next release: only it sets `LOCKED` |
//! | 2      | `WAKING`   | a release woke a sleeper that has not counted itself out yet          |
//! | 3      | `SPINNING` | one waiter spins; the others sleep at once (policies that may sleep)  |
//! | 4..8   | absences   | [`Gated`](super::Gated) only: releases in a row that found no head waiting, mod 16 |
//! | 8      | `LAPPED`   | gated locks only: the absences have wrapped since a head last waited  |
//! | 9..12  | spell      | gated locks only: which run of absences this is, mod 8                |
//! | 12     | `QUEUED`   | gated locks only: a waiter took the gate, and no release has found it free since |
//! | 13..32 | sleepers   | waiters counted in before they sleep, counted out after they wake     |
//!
//! **Fast path**: lock is one CAS from 0; unlock is one CAS from `LOCKED` to 0. Only the
//! CAS that sets `LOCKED` (Acquire) and the atomic that clears it (Release) order critical
//! sections; every other transition publishes nothing and is Relaxed, since a futex wait
//! compares the word in the kernel and every waiter re-reads it after a change.
//!
//! **Waiting.** Running threads barge. A waiter that has waited [`STARVATION_NS`] and finds the
//! lock taken sets `HANDOFF`, and then waits running (pause, then yield), so a release never
//! waits for a wake-up. Over a policy that may sleep one waiter spins (`SPINNING`), and none
//! behind a counted sleeper (parking_lot's rule), unless the policy gives its CPU away after a
//! few looks ([`Wait::CROWD_SPINS`]): then every waiter spins. The rest count themselves in by
//! a CAS that also checks the lock is held or claimed, sleep, and count out when woken.
//!
//! **Wake-ups.** A release that finds sleepers and neither `HANDOFF` nor `WAKING` sets `WAKING`
//! in its CAS and wakes one: one sleeper at a time is on its way back. After that CAS another
//! thread may take, release and free the lock (POSIX allows it; glibc's bug 13690), so only the
//! futex wake-up names the word, and the releaser never learns whether it woke anybody. Hence
//! two rules: every sleeper clears `WAKING` as it counts out, whatever ended its wait, and takes
//! over the wake-ups skipped meanwhile; no waiter counts in while `WAKING` is set (`count_out`
//! shows the wake-up that would be lost). No wake-up is lost: a sleeper sleeps only on a held or
//! claimed word, whose release is still to come and finds it counted.
//!
//! **Fairness**: a bypass bound in time. A running waiter that has waited [`STARVATION_NS`]
//! gets the lock after at most the holder and one other claimant; sleepers are woken one per
//! release in the kernel's FIFO order and claim once starving. Time spent preempted adds to it.

mod gate;
mod release;
#[cfg(all(test, not(loom)))]
mod tests;
mod wait;

pub(crate) use release::Lap;
pub(crate) use wait::Outcome;
pub use wait::STARVATION_NS;

use crate::sync::{AtomicU32, Ordering::*};
use crate::wait::Wait;
use core::marker::PhantomData;
use lock_api::{GuardSend, RawMutex};
#[cfg(all(test, not(loom)))]
use release::sleepers;
use std::time::Instant;
use wait::Mode;

const LOCKED: u32 = 1;
const HANDOFF: u32 = 2;
const WAKING: u32 = 4;
const SPINNING: u32 = 8;
// Absences, `LAPPED` and the spell are written only by a gated lock's release, in its own CAS
// (`release_gated`); every other transition carries them along unread.
const ONE_ABSENCE: u32 = 16;
#[cfg(not(loom))]
const ABSENCES: u32 = 15 * ONE_ABSENCE;
// Under loom a lap is 2 absences, so that the models, which release a few times each, reach
// laps and new spells too.
#[cfg(loom)]
const ABSENCES: u32 = ONE_ABSENCE;
const LAPPED: u32 = 256;
const ONE_SPELL: u32 = 512;
const SPELLS: u32 = 7 * ONE_SPELL;
// Set by a gated lock's waiter as it takes the gate; kept or cleared by the releases.
const QUEUED: u32 = 4096;
const ONE_SLEEPER: u32 = 8192;

/// Bounded-bypass lock waiting with policy `W` (the module docs give the design). One 32-bit
/// word; no system call when uncontended.
///
/// ```
/// use spinlab::{lock::Bounded, wait::SpinYieldPark};
/// let m = lock_api::Mutex::<Bounded<SpinYieldPark>, _>::new(1);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 2);
/// ```
pub struct Bounded<W: Wait> {
    state: AtomicU32,
    policy: PhantomData<fn() -> W>,
}

impl<W: Wait> Bounded<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Bounded { state: AtomicU32::new(0), policy: PhantomData }
        }
    }

    /// Whether a starving waiter has claimed the next release (a snapshot). While it has, no
    /// other thread can take the lock, even the releaser.
    ///
    /// ```
    /// use spinlab::{lock::Bounded, wait::Futex};
    /// assert!(!Bounded::<Futex>::new().is_claimed());
    /// ```
    #[inline]
    pub fn is_claimed(&self) -> bool {
        self.state.load(Relaxed) & HANDOFF != 0
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<GuardSend> {
        let acquired = self.fast_lock() || self.lock_contended(deadline);
        acquired.then(GuardSend::new)
    }

    /// Takes the lock if the word is 0: one CAS. A free word with more in it (sleepers
    /// counted, a mark) is taken by the contended path's first look.
    #[inline(always)]
    pub(super) fn fast_lock(&self) -> bool {
        // Acquire: the previous holder's critical section happens-before ours.
        self.state.compare_exchange(0, LOCKED, Acquire, Relaxed).is_ok()
    }

    #[cold]
    pub(super) fn lock_contended(&self, deadline: Option<Instant>) -> bool {
        self.wait_for(deadline, Mode::Sleep) == Outcome::Acquired
    }

    /// Takes the word if it is free, starting from `seen`, the word as last read; returns the
    /// word as seen held (or claimed) otherwise. Loops only while the lock is free and the
    /// sleeper count changes under us: a free lock is never refused.
    #[inline]
    fn take_if_free(&self, mut seen: u32) -> Result<(), u32> {
        while seen & (LOCKED | HANDOFF) == 0 {
            // Acquire: the lock is ours if this succeeds.
            match self.state.compare_exchange_weak(seen, seen | LOCKED, Acquire, Relaxed) {
                Ok(_) => return Ok(()),
                Err(now) => seen = now,
            }
        }
        Err(seen)
    }
}

impl<W: Wait> Default for Bounded<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: LOCKED is set only by a CAS from a value without it (Acquire), and cleared only by
// the holder's release (Release). While HANDOFF is set only the thread that set it may set
// LOCKED, and HANDOFF is cleared only by that thread.
unsafe impl<W: Wait> RawMutex for Bounded<W> {
    crate::sync::raw_init!();
    type Guard = GuardSend;

    #[inline]
    fn lock(&self) -> GuardSend {
        if !self.fast_lock() {
            self.lock_contended(None);
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<GuardSend> {
        self.take_if_free(self.state.load(Relaxed)).ok().map(|()| GuardSend::new())
    }

    #[inline]
    unsafe fn unlock(&self, _: GuardSend) {
        if let Err(seen) = self.release_alone() {
            // No gate: nothing marks the word `QUEUED`.
            self.release(seen, || false);
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        // A lock reserved for a claimant is not free for anyone else.
        self.state.load(Relaxed) & (LOCKED | HANDOFF) != 0
    }
}

super::timed_via_lock_until!(Bounded);
