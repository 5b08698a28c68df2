//! A condition variable that works with the guard of any `lock_api` mutex (every spinlab
//! lock, over any policy), and with any lock at all through unlock/relock callbacks, which is
//! what the C ABI and the `pthread_cond_*` replacement use.
//!
//! Why its own type and not an implementation of `lock_api::RawCondvar`: a `RawCondvar` names
//! the one raw mutex type it works with, so every spinlab lock would need its own condvar
//! type, and the C side, which holds its locks through the registry's `RawLockOps` function
//! pointers, has no `lock_api` mutex at all. This condvar needs nothing from the mutex but
//! "release it" and "take it again", so it takes those: from a `lock_api::MutexGuard` (through
//! `MutexGuard::unlocked`, which also puts a fresh per-acquisition guard back, as MCS and CLH
//! need), or as two closures (which the registry's `DynMutex` and `RawLockOps` give).
//!
//! Why a sequence word: the waiter reads it while it still holds the mutex, so any
//! notification after the waiter checked its predicate changes the word, and the waiter's
//! futex wait (which compares the word atomically with going to sleep) cannot miss it. The
//! condvar then needs no queue and no lock of its own, and it is 12 bytes whose all-zero value
//! is a new condvar, so it fits inside a zero-initialised `pthread_cond_t`.
//!
//! Why a count of waiters beside it: so that a notification nobody waits for is one load, as
//! parking_lot's and glibc's are, not the sequence's two read-modify-writes. A waiter counts
//! itself in while it still holds the mutex, and a notifier that changed the predicate under
//! that mutex afterwards reads the count after it (see [`Condvar::notify_one`]).
//!
//! Why policy-generic: the waiter's spin phase decides what an immediate hand-off costs. With
//! [`SpinPark`] (the default) a notification that comes within a few microseconds is seen by
//! a spinning waiter, and the notifier makes no system call; with
//! [`Futex`](crate::wait::Futex) it behaves like a pthread condvar; with a pure spin policy it
//! is seed 001's spin-loop notification.

use crate::event::{Sequence, Wake};
use crate::sync::{AtomicU32, Ordering::Relaxed};
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
/// **Cost.** `notify_*` with no thread inside a wait is one load. Otherwise it is one atomic
/// increment (two, side by side, for policies that may sleep), and a `FUTEX_WAKE` only if a
/// waiter may be asleep. `notify_all` wakes every
/// sleeper, and they all contend for the mutex: there is no requeueing onto the mutex, which
/// would need to know the mutex's word.
///
/// **With any mutex.** A waiter may use any mutex, and waiters of one condvar may use
/// different ones; what matters is that each waiter checks its predicate under the mutex that
/// protects it, and that a notifier changes the predicate under that mutex.
///
/// Layout: three 32-bit words; all-zero bytes are a valid new condvar.
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
    /// Threads inside a wait: counted in while they hold the mutex, before it is released,
    /// and out when their wait ends, before it is taken again.
    waiters: AtomicU32,
}

impl<W: Wait> Condvar<W> {
    crate::sync::loom_const_fn! {
        /// A new condition variable.
        pub fn new() -> Self {
            Condvar { changes: Sequence::new(), waiters: AtomicU32::new(0) }
        }
    }

    /// Wakes one waiting thread (and any still spinning: see the type's docs).
    ///
    /// With no thread inside a wait it returns after one load of the count of waiters. That
    /// cannot miss a waiter this notification is for: the waiter counted itself in while it
    /// held the mutex, before its wait released it, and the notifier changed the predicate
    /// under that mutex afterwards. So the count-in happens before this load, which reads it
    /// or a later value of the count: one that still counts the waiter, or one after the
    /// waiter's wait ended, when it goes back to check the predicate. (A notifier that changes
    /// the predicate without the mutex may be missed; glibc's and parking_lot's condition
    /// variables make the same bargain.)
    #[inline]
    pub fn notify_one(&self) {
        if self.may_have_waiters() {
            self.changes.advance(Wake::One);
        }
    }

    /// Wakes every waiting thread; with none inside a wait, one load (see
    /// [`notify_one`](Condvar::notify_one)).
    #[inline]
    pub fn notify_all(&self) {
        if self.may_have_waiters() {
            self.changes.advance(Wake::All);
        }
    }

    /// Whether a thread may be inside a wait (see [`notify_one`](Condvar::notify_one) for why
    /// Relaxed is enough).
    #[inline]
    fn may_have_waiters(&self) -> bool {
        self.waiters.load(Relaxed) != 0
    }

    /// Counts the calling thread in, before it releases the mutex.
    #[inline]
    fn count_in(&self) {
        // Relaxed: the mutex's release, after this, orders it before the notifier's load.
        self.waiters.fetch_add(1, Relaxed);
    }

    /// Counts the calling thread out when its wait has ended, before it takes the mutex
    /// again. A wait left by unwinding (a cancelled thread in the C ABI) skips this, and the
    /// count stays one too high: every later notification pays the read-modify-writes, as
    /// before the count existed.
    #[inline]
    fn count_out(&self) {
        self.waiters.fetch_sub(1, Relaxed);
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
    /// `pthread_cond_*` replacement over the registry's `RawLockOps`.
    ///
    /// The sequence word is read before `unlock` runs, so call this with the mutex held and
    /// the predicate just checked. `deadline` `None` waits without a time limit.
    ///
    /// ```
    /// use lock_api::RawMutex;
    /// use spinlab::{lock::Fair, wait::Futex, Condvar};
    /// use std::time::{Duration, Instant};
    /// let lock = Fair::<Futex>::INIT;
    /// let cv = Condvar::<Futex>::new();
    /// let held = lock.lock();
    /// let mut again = None;
    /// let deadline = Some(Instant::now() + Duration::from_millis(1));
    /// // SAFETY: this thread holds `lock` when `unlock` runs, and not when `relock` does.
    /// let result = cv.wait_with(deadline, || unsafe { lock.unlock(held) }, || again = Some(lock.lock()));
    /// assert!(result.timed_out());
    /// assert!(lock.is_locked());
    /// // SAFETY: taken again by `relock`.
    /// unsafe { lock.unlock(again.unwrap()) };
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
        self.count_in();
        unlock();
        let mut episode = Episode::new(deadline);
        let notified = self.changes.wait(seen, &mut episode);
        self.count_out();
        relock();
        WaitTimeoutResult(!notified)
    }

    fn wait_guard<R: RawMutex, T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        deadline: Option<Instant>,
    ) -> WaitTimeoutResult {
        let seen = self.changes.load();
        self.count_in();
        // `unlocked` releases the raw mutex with this acquisition's guard state and stores
        // the state of the new acquisition when it takes the mutex back; if anything in
        // between unwinds, it re-takes the mutex first (or aborts), so the guard stays valid.
        let notified = MutexGuard::unlocked(guard, || {
            let notified = self.changes.wait(seen, &mut Episode::new(deadline));
            self.count_out();
            notified
        });
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
        assert_eq!(core::mem::size_of::<Condvar<Futex>>(), 12);
        // SAFETY: three AtomicU32 and a zero-sized marker; zero is each atomic's initial value.
        let cv: Condvar<Futex> = unsafe { core::mem::zeroed() };
        let m = crate::Mutex::new(());
        let mut guard = m.lock();
        assert!(cv.wait_for(&mut guard, Duration::from_micros(100)).timed_out());
        cv.notify_all();
    }

    /// With nobody inside a wait, a notification leaves the sequence alone (one load); with a
    /// waiter counted, it advances it.
    #[test]
    fn a_notification_with_nobody_waiting_writes_nothing() {
        let cv = Condvar::<Futex>::new();
        let before = cv.changes.load();
        cv.notify_one();
        cv.notify_all();
        assert_eq!(cv.changes.load(), before);
        cv.waiters.store(1, Relaxed);
        cv.notify_one();
        assert_ne!(cv.changes.load(), before, "a counted waiter is notified");
    }

    /// The waiter counts itself in before the mutex is released: a notification made inside
    /// the release itself, before the waiter looks at its word, reaches it. Counting in after
    /// `unlock` would skip it, and the wait would run to its 20 s deadline.
    #[test]
    fn a_notification_right_after_the_release_reaches_the_waiter() {
        let cv = Condvar::<Futex>::new();
        let deadline = Some(Instant::now() + Duration::from_secs(20));
        let waited = cv.wait_with(deadline, || cv.notify_one(), || {});
        assert!(!waited.timed_out(), "the notification was skipped");
        assert_eq!(cv.waiters.load(Relaxed), 0, "counted out after the wait");
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
