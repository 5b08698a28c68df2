//! A condition variable that works with the guard of any `lock_api` mutex (every spinlab
//! lock, over any policy), and with any lock at all through unlock/relock callbacks, which is
//! what the C ABI and the `pthread_cond_*` replacement use.
//!
//! Why its own type and not an implementation of `lock_api::RawCondvar`: a `RawCondvar` names
//! the one raw mutex type it works with, so every spinlab lock would need its own condvar
//! type, and the C side, which holds its locks through `registry::RawLockOps` function
//! pointers, has no `lock_api` mutex at all. This condvar needs nothing from the mutex but
//! "release it" and "take it again", so it takes those: from a `lock_api::MutexGuard` (through
//! `MutexGuard::unlocked`, which also puts a fresh per-acquisition guard back, as MCS and CLH
//! need), from a [`DynMutex`](crate::registry::DynMutex), or as two closures.
//!
//! Why a sequence word: the waiter reads it while it still holds the mutex, so any
//! notification after the waiter checked its predicate changes the word, and the waiter's
//! futex wait (which compares the word atomically with going to sleep) cannot miss it. The
//! condvar then needs no queue and no lock of its own, and it is 8 bytes whose all-zero value
//! is a new condvar, so it fits inside a zero-initialised `pthread_cond_t`.
//!
//! Why policy-generic: the waiter's spin phase decides what an immediate hand-off costs. With
//! [`SpinPark`] (the default) a notification that comes within a few microseconds is seen by
//! a spinning waiter, and the notifier makes no system call; with
//! [`Futex`](crate::wait::Futex) it behaves like a pthread condvar; with a pure spin policy it
//! is seed 001's spin-loop notification.

use crate::event::{Sequence, Wake};
use crate::wait::{Episode, SpinPark, Wait};
use core::fmt;
use lock_api::{MutexGuard, RawMutex};
use std::time::{Duration, Instant};

/// Whether a timed condvar wait returned because its time ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// `true` if the wait ended at its deadline rather than on a notification (or a spurious
    /// wake-up).
    ///
    /// ```
    /// use spinlab::{wait::Futex, Condvar, Mutex};
    /// use std::time::Duration;
    /// let (m, cv) = (Mutex::new(()), Condvar::<Futex>::new());
    /// let mut guard = m.lock();
    /// assert!(cv.wait_for(&mut guard, Duration::from_millis(1)).timed_out());
    /// ```
    #[inline]
    pub fn timed_out(self) -> bool {
        self.0
    }
}

/// A condition variable over wait policy `W`, usable with the guard of any `lock_api` mutex.
///
/// **Spurious wake-ups.** A wait can return without a notification meant for it: every
/// notification changes one shared word, so a `notify_one` returns *every* waiter that is
/// still in its spin phase (only sleepers are woken one at a time), and a signal can
/// interrupt a sleep. Always wait in a loop that re-checks the condition, or use
/// [`wait_while`](Condvar::wait_while).
///
/// **Notifications are not kept.** A notification with no thread waiting does nothing, as
/// with every condition variable: the predicate, protected by the mutex, is the memory.
///
/// **Cost.** `notify_*` is one atomic increment (two, side by side, for policies that may
/// sleep), and a `FUTEX_WAKE` only if a waiter may be asleep. `notify_all` wakes every
/// sleeper, and they all contend for the mutex: there is no requeueing onto the mutex, which
/// would need to know the mutex's word.
///
/// **With any mutex.** A waiter may use any mutex, and waiters of one condvar may use
/// different ones; what matters is that each waiter checks its predicate under the mutex that
/// protects it, and that a notifier changes the predicate under that mutex.
///
/// Layout: two 32-bit words; all-zero bytes are a valid new condvar.
///
/// ```
/// use spinlab::{Condvar, Mutex};
/// use spinlab::wait::SpinPark;
///
/// let queue = Mutex::new(Vec::new());
/// let not_empty = Condvar::<SpinPark>::new();
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         queue.lock().push(7);
///         not_empty.notify_one();
///     });
///     let mut items = queue.lock();
///     not_empty.wait_while(&mut items, |items| items.is_empty());
///     assert_eq!(items.pop(), Some(7));
/// });
/// ```
pub struct Condvar<W: Wait = SpinPark> {
    changes: Sequence<W>,
}

impl<W: Wait> Condvar<W> {
    crate::sync::loom_const_fn! {
        /// A new condition variable.
        pub fn new() -> Self {
            Condvar { changes: Sequence::new() }
        }
    }

    /// Wakes one waiting thread (and any still spinning: see the type's docs).
    #[inline]
    pub fn notify_one(&self) {
        self.changes.advance(Wake::One);
    }

    /// Wakes every waiting thread.
    #[inline]
    pub fn notify_all(&self) {
        self.changes.advance(Wake::All);
    }

    /// Releases the mutex behind `guard`, waits for a notification (or a spurious wake-up),
    /// and takes the mutex again before returning.
    ///
    /// ```
    /// use spinlab::{lock::Mcs, wait::Futex, Condvar};
    /// let m = lock_api::Mutex::<Mcs<Futex>, bool>::new(false);
    /// let cv = Condvar::<Futex>::new();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| {
    ///         *m.lock() = true;
    ///         cv.notify_all();
    ///     });
    ///     let mut done = m.lock();
    ///     while !*done {
    ///         cv.wait(&mut done);
    ///         assert!(m.is_locked(), "held again after every wait");
    ///     }
    /// });
    /// ```
    #[inline]
    pub fn wait<R: RawMutex, T: ?Sized>(&self, guard: &mut MutexGuard<'_, R, T>) {
        self.wait_guard(guard, None);
    }

    /// Waits until `condition` returns `false`, checking it under the mutex before each wait
    /// and after each wake-up.
    ///
    /// ```
    /// use spinlab::{lock::Ticket, wait::Pause, Condvar};
    /// let m = lock_api::Mutex::<Ticket<Pause>, u32>::new(0);
    /// let cv = Condvar::<Pause>::new();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| for _ in 0..3 { *m.lock() += 1; cv.notify_one(); });
    ///     let mut count = m.lock();
    ///     cv.wait_while(&mut count, |count| *count < 3);
    ///     assert_eq!(*count, 3);
    /// });
    /// ```
    pub fn wait_while<R, T, F>(&self, guard: &mut MutexGuard<'_, R, T>, mut condition: F)
    where
        R: RawMutex,
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        while condition(&mut **guard) {
            self.wait_guard(guard, None);
        }
    }

    /// Like [`wait`](Condvar::wait), giving up after `timeout`. The mutex is taken again
    /// either way, which may take longer than the timeout.
    ///
    /// ```
    /// use spinlab::{lock::Clh, wait::SpinPark, Condvar};
    /// use std::time::Duration;
    /// let m = lock_api::Mutex::<Clh<SpinPark>, ()>::new(());
    /// let cv = Condvar::<SpinPark>::new();
    /// let mut guard = m.lock();
    /// assert!(cv.wait_for(&mut guard, Duration::from_micros(50)).timed_out());
    /// assert!(m.is_locked(), "taken again, even after a time-out");
    /// ```
    #[inline]
    pub fn wait_for<R: RawMutex, T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        self.wait_guard(guard, crate::lock::deadline_after(timeout))
    }

    /// Like [`wait`](Condvar::wait), giving up at `deadline`.
    ///
    /// ```
    /// use spinlab::{wait::Futex, Condvar, Mutex};
    /// use std::time::{Duration, Instant};
    /// let (m, cv) = (Mutex::new(()), Condvar::<Futex>::new());
    /// let deadline = Instant::now() + Duration::from_millis(1);
    /// let mut guard = m.lock();
    /// assert!(cv.wait_until(&mut guard, deadline).timed_out());
    /// assert!(Instant::now() >= deadline);
    /// ```
    #[inline]
    pub fn wait_until<R: RawMutex, T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        deadline: Instant,
    ) -> WaitTimeoutResult {
        self.wait_guard(guard, Some(deadline))
    }

    /// Waits until `condition` returns `false` or `deadline` passes; timed out means the
    /// condition still held at the deadline.
    ///
    /// ```
    /// use spinlab::{wait::Futex, Condvar, Mutex};
    /// use std::time::{Duration, Instant};
    /// let (m, cv) = (Mutex::new(5), Condvar::<Futex>::new());
    /// let mut n = m.lock();
    /// let soon = Instant::now() + Duration::from_millis(1);
    /// assert!(!cv.wait_while_until(&mut n, |n| *n == 0, soon).timed_out());
    /// assert!(cv.wait_while_until(&mut n, |n| *n == 5, soon).timed_out());
    /// ```
    pub fn wait_while_until<R, T, F>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        mut condition: F,
        deadline: Instant,
    ) -> WaitTimeoutResult
    where
        R: RawMutex,
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        while condition(&mut **guard) {
            if self.wait_guard(guard, Some(deadline)).timed_out() {
                return WaitTimeoutResult(condition(&mut **guard));
            }
        }
        WaitTimeoutResult(false)
    }

    /// Waits for a notification with the mutex released and taken again by the caller's
    /// callbacks: `unlock` must release the mutex that protects the caller's predicate, and
    /// `relock` take it again. For callers without a `lock_api` guard: the C ABI, and the
    /// `pthread_cond_*` replacement over [`RawLockOps`](crate::registry::RawLockOps).
    ///
    /// The sequence word is read before `unlock` runs, so call this with the mutex held and
    /// the predicate just checked. `deadline` `None` waits without a time limit.
    ///
    /// ```
    /// use spinlab::{registry, wait::Futex, Condvar};
    /// use std::time::{Duration, Instant};
    /// let lock = registry::new_lock("fair:futex").unwrap();
    /// let cv = Condvar::<Futex>::new();
    /// lock.lock();
    /// let deadline = Some(Instant::now() + Duration::from_millis(1));
    /// // SAFETY: this thread holds `lock` when `unlock` runs, and not when `relock` does.
    /// let result = cv.wait_with(deadline, || unsafe { lock.unlock() }, || lock.lock());
    /// assert!(result.timed_out());
    /// assert!(lock.is_locked());
    /// // SAFETY: taken again by `relock`.
    /// unsafe { lock.unlock() };
    /// ```
    pub fn wait_with(
        &self,
        deadline: Option<Instant>,
        unlock: impl FnOnce(),
        relock: impl FnOnce(),
    ) -> WaitTimeoutResult {
        // Read while the mutex is held. Relaxed would do for the condvar itself: a notifier
        // that changes the predicate after our check takes the mutex after our unlock, so its
        // increment is ordered after this read by the mutex; Acquire is what the shared
        // `Sequence` offers, and costs nothing more on x86.
        let seen = self.changes.load();
        unlock();
        let mut episode = Episode::new(deadline);
        let notified = self.changes.wait(seen, &mut episode);
        relock();
        WaitTimeoutResult(!notified)
    }

    /// [`wait_with`](Condvar::wait_with) for a lock from the registry.
    ///
    /// # Safety
    ///
    /// The calling thread must hold `mutex`; it holds it again when this returns.
    ///
    /// ```
    /// use spinlab::{registry, wait::SpinPark, Condvar};
    /// let lock = registry::new_lock("mcs:futex").unwrap();
    /// let cv = Condvar::<SpinPark>::new();
    /// lock.lock();
    /// let soon = std::time::Instant::now() + std::time::Duration::from_micros(100);
    /// // SAFETY: this thread holds `lock`.
    /// assert!(unsafe { cv.wait_dyn(&*lock, Some(soon)) }.timed_out());
    /// // SAFETY: held again.
    /// unsafe { lock.unlock() };
    /// ```
    #[cfg(not(loom))]
    pub unsafe fn wait_dyn(
        &self,
        mutex: &dyn crate::registry::DynMutex,
        deadline: Option<Instant>,
    ) -> WaitTimeoutResult {
        // SAFETY: the caller holds `mutex`, so `unlock` releases a held lock; `lock` takes it
        // back before this returns.
        self.wait_with(deadline, || unsafe { mutex.unlock() }, || mutex.lock())
    }

    fn wait_guard<R: RawMutex, T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        deadline: Option<Instant>,
    ) -> WaitTimeoutResult {
        let seen = self.changes.load();
        // `unlocked` releases the raw mutex with this acquisition's guard state and stores
        // the state of the new acquisition when it takes the mutex back; if anything in
        // between unwinds, it re-takes the mutex first (or aborts), so the guard stays valid.
        let notified = MutexGuard::unlocked(guard, || self.changes.wait(seen, &mut Episode::new(deadline)));
        WaitTimeoutResult(!notified)
    }
}

impl<W: Wait> Default for Condvar<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: Wait> fmt::Debug for Condvar<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condvar").field("policy", &W::NAME).finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::wait::Futex;

    #[test]
    fn all_zero_bytes_are_a_new_condvar() {
        assert_eq!(core::mem::size_of::<Condvar<Futex>>(), 8);
        // SAFETY: two AtomicU32 and a zero-sized marker; zero is each atomic's initial value.
        let cv: Condvar<Futex> = unsafe { core::mem::zeroed() };
        let m = crate::Mutex::new(());
        let mut guard = m.lock();
        assert!(cv.wait_for(&mut guard, Duration::from_micros(100)).timed_out());
        cv.notify_all();
    }

    #[test]
    fn a_notification_with_nobody_waiting_is_not_kept() {
        let (m, cv) = (crate::Mutex::new(()), Condvar::<Futex>::new());
        cv.notify_one();
        cv.notify_all();
        let mut guard = m.lock();
        assert!(cv.wait_for(&mut guard, Duration::from_millis(1)).timed_out());
    }
}
