//! The one-word lock that [`Tas`](super::Tas) and [`Ttas`](super::Ttas) are: the same word,
//! the same acquisition, release and sleep, written once here as [`WordLock`]. They differ
//! only in how a waiter spins between attempts, which each states in its own file as a
//! [`Probe`].
//!
//! | value | name              | meaning                                                     |
//! |-------|-------------------|-------------------------------------------------------------|
//! | 0     | `UNLOCKED`        | free                                                        |
//! | 1     | `LOCKED`          | held; no waiter is asleep                                   |
//! | 2     | `LOCKED_SLEEPERS` | held; a waiter may be asleep on the word, so unlock wakes one |
//!
//! State 2 exists only for policies that may sleep. A waiter writes it just before it sleeps,
//! and any thread that has slept acquires the lock *as* 2, because other sleepers may remain
//! (the design of Rust std's futex mutex and of Drepper's "Futexes Are Tricky", mutex 2).
//! Pure spin policies never see it, so their unlock is a plain release store.

use crate::sync::{AtomicU32, Ordering::*};
use crate::sys::futex::FutexWait;
use crate::wait::Wait;
use core::marker::PhantomData;
use lock_api::{GuardSend, RawMutex};
use std::time::Instant;

pub(crate) const UNLOCKED: u32 = 0;
pub(crate) const LOCKED: u32 = 1;
pub(crate) const LOCKED_SLEEPERS: u32 = 2;

/// What a waiter does once its policy's spin phase is over.
pub(crate) enum Parked {
    /// The marking swap found the lock free: it is ours.
    Acquired,
    /// Woken (or spuriously returned): try again.
    Retry,
    /// The deadline passed.
    TimedOut,
}

pub(crate) struct LockWord<W> {
    pub(crate) state: AtomicU32,
    policy: PhantomData<fn() -> W>,
}

impl<W: Wait> LockWord<W> {
    crate::sync::loom_const_fn! {
        pub(crate) fn new() -> Self {
            LockWord { state: AtomicU32::new(UNLOCKED), policy: PhantomData }
        }
    }

    /// One acquisition attempt. Pure spin policies use a swap: the `ldstub` of seed 000's
    /// Fig. 1. Sleeping policies need a CAS so they never overwrite `LOCKED_SLEEPERS`.
    /// On failure, returns the value seen.
    #[inline(always)]
    pub(crate) fn try_acquire(&self, acquire_as: u32) -> Result<(), u32> {
        if W::MAY_SLEEP {
            self.state.compare_exchange(UNLOCKED, acquire_as, Acquire, Relaxed).map(drop)
        } else {
            match self.state.swap(LOCKED, Acquire) {
                UNLOCKED => Ok(()),
                seen => Err(seen),
            }
        }
    }

    /// Marks the lock as having a sleeper and sleeps until woken or `deadline`.
    #[cold]
    pub(crate) fn park(&self, deadline: Option<Instant>) -> Parked {
        // Acquire: if the swap finds the lock free, we now hold it.
        if self.state.swap(LOCKED_SLEEPERS, Acquire) == UNLOCKED {
            return Parked::Acquired;
        }
        match W::sleep(&self.state, LOCKED_SLEEPERS, deadline) {
            FutexWait::TimedOut => Parked::TimedOut,
            FutexWait::Woken | FutexWait::ValueChanged => Parked::Retry,
        }
    }

    /// A timed waiter gives up; returns whether it holds the lock after all. One that has
    /// slept may have taken a release's wake-up meant to let some sleeper retry (the kernel
    /// reports a wake-up that raced a time-out as a wake-up), and found the lock taken again
    /// by a thread that acquired it without the sleepers' mark, whose release wakes nobody.
    /// So it marks the word again, as it did before it slept: the holder's release then wakes
    /// the next sleeper. If the lock is free by then, the swap takes it.
    #[cold]
    pub(crate) fn give_up(&self, slept: bool) -> bool {
        // Acquire: if the swap finds the lock free, we now hold it.
        slept && self.state.swap(LOCKED_SLEEPERS, Acquire) == UNLOCKED
    }

    #[inline(always)]
    pub(crate) fn unlock(&self) {
        if !W::MAY_SLEEP {
            // Release: the critical section's writes happen-before the next acquirer's reads.
            #[cfg(not(loom))]
            self.state.store(UNLOCKED, Release);
            // Loom 0.7 lets a plain store fall between the read and the write of another
            // thread's RMW (tokio-rs/loom#254): a waiter's failed `swap(LOCKED)` could then
            // overwrite this release and the model reports a leaked lock that C11 forbids. A
            // release swap has the same ordering and keeps loom's modification order total.
            #[cfg(loom)]
            self.state.swap(UNLOCKED, Release);
        } else if self.state.swap(UNLOCKED, Release) == LOCKED_SLEEPERS {
            // Waking after the store lets the woken thread find the lock free at once.
            W::wake_one(&self.state);
        }
    }

    #[inline]
    pub(crate) fn is_locked(&self) -> bool {
        self.state.load(Relaxed) != UNLOCKED
    }
}

/// A lock of one 32-bit word (the states above) whose waiters spin as `P` says, waiting with
/// policy `W`: [`Tas`](super::Tas) and [`Ttas`](super::Ttas) are its two instances.
pub struct WordLock<W: Wait, P: Probe> {
    pub(super) word: LockWord<W>,
    probe: PhantomData<fn() -> P>,
}

/// How a waiter on a [`WordLock`] spins between its attempts to take the word. Sealed: an
/// implementation decides when the lock is acquired, which the lock's safety rests on.
pub trait Probe: sealed::Sealed + Sized + 'static {
    /// Waits for the lock, which was found held, and takes it; `false` once `deadline` has
    /// passed without it.
    #[doc(hidden)]
    fn lock_contended<W: Wait>(lock: &WordLock<W, Self>, deadline: Option<Instant>) -> bool;
}

pub(super) mod sealed {
    /// Only this crate's probes implement [`Probe`](super::Probe).
    pub trait Sealed {}
}

impl<W: Wait, P: Probe> WordLock<W, P> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            WordLock { word: LockWord::new(), probe: PhantomData }
        }
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<GuardSend> {
        let acquired = self.word.try_acquire(LOCKED).is_ok() || P::lock_contended(self, deadline);
        acquired.then(GuardSend::new)
    }
}

impl<W: Wait, P: Probe> Default for WordLock<W, P> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the lock word admits one holder at a time: every acquisition is an atomic
// transition from UNLOCKED made with Acquire ordering (`try_acquire`, or `park`'s swap), a
// probe returns `true` only after one of them succeeded, and only the holder releases the
// word, with Release ordering.
unsafe impl<W: Wait, P: Probe> RawMutex for WordLock<W, P> {
    crate::sync::raw_init!();
    type Guard = GuardSend;

    #[inline]
    fn lock(&self) -> GuardSend {
        if self.word.try_acquire(LOCKED).is_err() {
            P::lock_contended(self, None);
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

// SAFETY: `lock_until` acquires exactly as `lock` does, or returns `None` having changed the
// word at most to LOCKED_SLEEPERS while it was held, which only costs its holder a wake-up.
unsafe impl<W: Wait, P: Probe> lock_api::RawMutexTimed for WordLock<W, P> {
    type Duration = std::time::Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: std::time::Duration) -> Option<GuardSend> {
        self.lock_until(super::deadline_after(timeout))
    }

    #[inline]
    fn try_lock_until(&self, deadline: Instant) -> Option<GuardSend> {
        self.lock_until(Some(deadline))
    }
}
