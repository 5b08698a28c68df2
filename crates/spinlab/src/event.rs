//! Seed 001's condition wait and notification: a thread waits until another notifies it, with
//! the waiting done by a pluggable [`Wait`] policy.
//!
//! Seed 001 builds its notify primitives on one monitored word: the waiter arms a monitor on it
//! and sleeps, the notifier writes it. [`Event`] keeps that shape, and which "sleep" the waiter
//! gets is the policy: re-reading with `pause` (seed 001's *spin-loops*), the kernel's futex
//! (its *pthreads* baseline, minus the mutex), or `umwait`/`mwaitx`/`wfe` on the word (its
//! *mwmon*, in user mode). The word every waiter watches is the `Sequence` below, which
//! [`Condvar`](crate::Condvar) shares.

use crate::sync::{AtomicU32, Ordering::*};
use crate::sys::futex::FutexWait;
use crate::wait::{Episode, SpinPark, Spun, Wait};
use core::fmt;
use core::marker::PhantomData;
use std::time::{Duration, Instant};

/// A word that waiters watch until it changes, and a count of the waiters that may be asleep
/// on it: the waiting half of an *eventcount*, shared by [`Event`] and
/// [`Condvar`](crate::Condvar).
///
/// | word       | written by                                | read by                                        |
/// |------------|-------------------------------------------|------------------------------------------------|
/// | `seq`      | every notification: `+1`, wrapping        | waiters: they spin on it, then sleep on it     |
/// | `sleepers` | a waiter, just before and after it sleeps | notifiers, by a read-modify-write: wake anyone? |
///
/// A waiter reads `seq`, checks its condition, and waits while `seq` still holds what it read;
/// any notification after the read changes `seq`, so none can slip between the check and the
/// sleep (the futex re-checks the value atomically with queueing the sleeper). Pure spin
/// policies never sleep, so they never touch `sleepers`, and their notifications are one
/// atomic increment; with a policy that may sleep a notification is two, side by side.
///
/// The two words sit side by side: a notification reads `sleepers` right after writing `seq`,
/// and finds it in the line it already owns.
pub(crate) struct Sequence<W> {
    seq: AtomicU32,
    sleepers: AtomicU32,
    policy: PhantomData<fn() -> W>,
}

/// Whom [`Sequence::advance`] wakes, if anyone may be asleep.
#[derive(Clone, Copy)]
pub(crate) enum Wake {
    One,
    All,
}

impl<W: Wait> Sequence<W> {
    crate::sync::loom_const_fn! {
        pub(crate) fn new() -> Self {
            Sequence { seq: AtomicU32::new(0), sleepers: AtomicU32::new(0), policy: PhantomData }
        }
    }

    /// The current value, to wait on after checking a condition.
    ///
    /// Acquire: pairs with [`advance`](Self::advance)'s Release, so everything the notifier
    /// wrote before advancing (an event's notification, say) is visible to the check the
    /// caller makes after this load.
    #[inline]
    pub(crate) fn load(&self) -> u32 {
        self.seq.load(Acquire)
    }

    /// Waits while the word still holds `seen`: the policy's spin phase, then, for sleeping
    /// policies, one sleep. Returns `false` if the episode's deadline passed first, `true`
    /// otherwise, including after a wake-up that finds the word unchanged.
    ///
    /// It returns after any wake-up, rather than sleeping again while the word holds `seen`,
    /// because a wake-up may be the one meant for the caller even then: a `notify_one` whose
    /// increment came before this thread read `seen` can still pick this thread from the
    /// futex queue, and if this thread went back to sleep, the waiter the notification was
    /// meant for would stay asleep. Callers re-check their condition.
    #[inline]
    pub(crate) fn wait(&self, seen: u32, episode: &mut Episode) -> bool {
        match W::spin(&self.seq, seen, episode) {
            Spun::Changed => true,
            Spun::TimedOut => false,
            Spun::Exhausted => self.sleep(seen, episode),
        }
    }

    #[cold]
    fn sleep(&self, seen: u32, episode: &mut Episode) -> bool {
        // Pairs with `advance`'s read-modify-write of `sleepers`; the two are ordered on the
        // one word. If ours comes first, the notifier reads our count and wakes us (if we are
        // not asleep yet, the kernel's own re-check of `seq` sees its increment). If the
        // notifier's comes first, our Acquire reads from its Release, so its increment of `seq`
        // happens-before our load below, which sees it, and we do not sleep. (A Dekker
        // handshake, SeqCst store-then-load on two words, would also be correct in C11, but
        // loom models SeqCst accesses as AcqRel and could not check it.)
        self.sleepers.fetch_add(1, Acquire);
        let outcome = if self.seq.load(Relaxed) == seen {
            W::sleep(&self.seq, seen, episode.deadline())
        } else {
            FutexWait::ValueChanged
        };
        // Relaxed: a late decrement costs a notifier at most one needless wake-up call.
        self.sleepers.fetch_sub(1, Relaxed);
        episode.restart_spinning();
        outcome != FutexWait::TimedOut
    }

    /// Changes the word, then wakes one or all sleepers if any may exist.
    #[inline]
    pub(crate) fn advance(&self, wake: Wake) {
        if self.advance_quietly() {
            self.wake(wake);
        }
    }

    /// The first half of [`advance`](Self::advance): changes the word and returns whether a
    /// sleeper may need [`wake`](Self::wake). A lock calls it before the atomic that releases
    /// it, and `wake` after, because `wake` is the only step that may name a lock that another
    /// thread has already taken, released and freed.
    #[inline]
    pub(crate) fn advance_quietly(&self) -> bool {
        // Release: what the notifier wrote before is visible to a waiter that sees the new
        // value with `load`'s Acquire.
        self.seq.fetch_add(1, Release);
        // A read-modify-write, not a load: the notifier's half of the handshake in `sleep`.
        // It reads the latest count, and its Release carries the increment above to a waiter
        // whose increment of `sleepers` comes after it. Pure spin policies never sleep, so
        // they skip it: their notification is the one increment.
        W::MAY_SLEEP && self.sleepers.fetch_add(0, Release) != 0
    }

    /// The second half of [`advance`](Self::advance): the wake-up system call on the word,
    /// and nothing else. The kernel uses the address only as a key, so the call is harmless
    /// even on memory freed and reused meanwhile (at worst a spurious wake-up).
    #[cold]
    pub(crate) fn wake(&self, wake: Wake) {
        match wake {
            Wake::One => {
                W::wake_one(&self.seq);
            }
            Wake::All => W::wake_all(&self.seq),
        }
    }
}

/// The other way a primitive here lets a waiter sleep: a flag bit in the watched word itself.
///
/// Marks `word` (last read as `seen`) with `flag`, saying "a waiter may be asleep on this
/// word", then sleeps while the word holds the marked value. The mark is a compare-and-swap
/// from `seen`, so it fails, and the caller re-checks, if the word has changed since; a waker
/// changes the word with a read-modify-write that reads the mark in the same step (and clears
/// it when it wakes), so a mark is never lost between a waiter and a waker. Release on the
/// mark: whatever the waiter wrote before sleeping (the target a phase-fair writer waits for)
/// is visible to a waker whose read-modify-write sees the mark with Acquire.
#[cold]
pub(crate) fn sleep_marked<W: Wait>(word: &AtomicU32, seen: u32, flag: u32, deadline: Option<Instant>) -> FutexWait {
    let marked = seen | flag;
    if seen != marked && word.compare_exchange(seen, marked, Release, Relaxed).is_err() {
        return FutexWait::ValueChanged;
    }
    W::sleep(word, marked, deadline)
}

/// A wait/notify event (seed 001's condition wait and notification) over wait policy `W`.
///
/// - [`notify_one`](Event::notify_one) releases one waiting thread. If none is waiting, the
///   notification is kept, counted, for the next [`wait`](Event::wait): a notification that
///   races with a thread about to wait is never lost, and `n` calls release `n` waits.
/// - [`notify_all`](Event::notify_all) releases every wait in progress when it is called and
///   keeps nothing for later ones.
/// - When a `notify_one` and a `notify_all` both reach the same waiter, the waiter returns
///   once, released by the `notify_all`, and the `notify_one`'s notification stays pending for
///   the next wait. Notifications can so be delivered early, but never lost.
///
/// Waits return only when released (or, for the timed ones, at their deadline): no spurious
/// returns. A notification *happens-before* the return of the wait it releases, so data
/// written before `notify_*` is visible after `wait`.
///
/// Cost: a notification is two atomic increments on the event's words (three for policies that
/// may sleep), and a wake-up system call only when a waiter may be asleep. A
/// wait that finds a pending notification is one compare-and-swap.
///
/// Layout: 16 bytes, side by side; everything a waiter watches and a notifier writes is there.
/// With a monitor policy ([`Umwait`](crate::wait::Umwait), [`Mwaitx`](crate::wait::Mwaitx),
/// [`Wfe`](crate::wait::Wfe)) any write to the line ends a waiter's monitor wait, so seed 001
/// pads the monitored structure to a whole line: put an event that sits next to data other
/// threads write in a [`CachePadded`](crate::CachePadded).
///
/// ```
/// use spinlab::{wait::Futex, Event};
/// use std::time::Duration;
///
/// let ready = Event::<Futex>::new();
/// std::thread::scope(|s| {
///     s.spawn(|| ready.notify_one());
///     ready.wait(); // returns whether the notification came before or after this call
/// });
/// assert!(!ready.wait_timeout(Duration::from_millis(1)), "nothing is pending any more");
/// ```
pub struct Event<W: Wait = SpinPark> {
    /// `notify_one` calls not yet taken by a wait.
    permits: AtomicU32,
    /// `notify_all` calls so far (wrapping); a waiter compares it with its value at entry.
    broadcasts: AtomicU32,
    /// Advanced after every notification; waiters spin and sleep on it.
    changes: Sequence<W>,
}

impl<W: Wait> Event<W> {
    crate::sync::loom_const_fn! {
        /// A new event with no pending notification.
        pub fn new() -> Self {
            Event { permits: AtomicU32::new(0), broadcasts: AtomicU32::new(0), changes: Sequence::new() }
        }
    }

    /// Releases one waiting thread, or the next thread to wait if none is waiting now.
    ///
    /// Pending notifications are counted in 32 bits: more than `u32::MAX` of them, never
    /// taken, would wrap (a debug build asserts that they do not).
    #[inline]
    pub fn notify_one(&self) {
        // Release: pairs with the Acquire of a waiter's `try_take` that takes this notification
        // directly, without going through `changes`.
        let pending = self.permits.fetch_add(1, Release);
        debug_assert_ne!(pending, u32::MAX, "more than u32::MAX notifications pending");
        self.changes.advance(Wake::One);
    }

    /// Releases every thread waiting now. Keeps nothing for threads that wait later.
    #[inline]
    pub fn notify_all(&self) {
        // Release: pairs with the Acquire load through which a waiter sees the broadcast.
        self.broadcasts.fetch_add(1, Release);
        self.changes.advance(Wake::All);
    }

    /// Waits until notified.
    ///
    /// ```
    /// use spinlab::{wait::Pause, Event};
    /// let event = Event::<Pause>::new();
    /// event.notify_one();
    /// event.wait(); // the pending notification: returns at once
    /// assert!(!event.try_wait());
    /// ```
    #[inline]
    pub fn wait(&self) {
        if !self.try_take() {
            self.wait_slow(None);
        }
    }

    /// Waits until notified or until `timeout` has passed; returns whether it was notified.
    ///
    /// ```
    /// use spinlab::{wait::SpinPark, Event};
    /// use std::time::Duration;
    /// let event = Event::<SpinPark>::new();
    /// assert!(!event.wait_timeout(Duration::from_micros(100)));
    /// event.notify_all(); // nobody waits: nothing is kept
    /// assert!(!event.wait_timeout(Duration::ZERO));
    /// ```
    #[inline]
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        self.try_take() || self.wait_slow(crate::lock::deadline_after(timeout))
    }

    /// Waits until notified or until `deadline`; returns whether it was notified.
    ///
    /// ```
    /// use spinlab::{wait::Futex, Event};
    /// use std::time::{Duration, Instant};
    /// let event = Event::<Futex>::new();
    /// let deadline = Instant::now() + Duration::from_millis(1);
    /// assert!(!event.wait_until(deadline));
    /// assert!(Instant::now() >= deadline);
    /// ```
    #[inline]
    pub fn wait_until(&self, deadline: Instant) -> bool {
        self.try_take() || self.wait_slow(Some(deadline))
    }

    /// Takes a pending `notify_one` notification if there is one, without waiting.
    ///
    /// ```
    /// use spinlab::{wait::Spin, Event};
    /// let event = Event::<Spin>::new();
    /// assert!(!event.try_wait());
    /// event.notify_one();
    /// event.notify_one();
    /// assert!(event.try_wait() && event.try_wait() && !event.try_wait());
    /// ```
    #[inline]
    pub fn try_wait(&self) -> bool {
        self.try_take()
    }

    /// Takes one pending notification. Acquire on success: pairs with `notify_one`'s Release.
    #[inline]
    fn try_take(&self) -> bool {
        let mut permits = self.permits.load(Relaxed);
        while permits != 0 {
            match self.permits.compare_exchange_weak(permits, permits - 1, Acquire, Relaxed) {
                Ok(_) => return true,
                Err(now) => permits = now,
            }
        }
        false
    }

    #[cold]
    fn wait_slow(&self, deadline: Option<Instant>) -> bool {
        // The wait is in progress from this load on: a later `notify_all` releases it. Relaxed
        // suffices, the value is only compared; the Acquire that makes a broadcast's writes
        // visible is the load below that sees it changed.
        let broadcasts = self.broadcasts.load(Relaxed);
        let released = || self.broadcasts.load(Acquire) != broadcasts || self.try_take();
        let mut episode = Episode::new(deadline);
        loop {
            // Read the word first, check second: a notification that the check misses has not
            // advanced the word yet, so the wait below returns at once when it does.
            let seen = self.changes.load();
            // A broadcast is checked before a pending notification, so a waiter the broadcast
            // releases leaves the notification for the next wait (see the type's docs).
            if released() {
                return true;
            }
            if !self.changes.wait(seen, &mut episode) {
                // Out of time. A notification may have come as we gave up, and its wake-up
                // may have been spent on us: take it rather than strand it while other
                // waiters sleep.
                return released();
            }
        }
    }
}

impl<W: Wait> Default for Event<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: Wait> fmt::Debug for Event<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("policy", &W::NAME)
            .field("pending", &self.permits.load(Relaxed))
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::wait::{Futex, Pause};
    use std::sync::Arc;

    #[test]
    fn notifications_before_any_wait_are_counted() {
        let event = Event::<Pause>::new();
        for _ in 0..3 {
            event.notify_one();
        }
        assert!(event.wait_timeout(Duration::ZERO));
        assert!(event.try_wait());
        assert!(event.wait_until(Instant::now()));
        assert!(!event.wait_timeout(Duration::ZERO));
    }

    /// One broadcast, made once all three waiters have counted themselves in to sleep, must
    /// release all three: a broadcast that woke one sleeper, or a waiter that slept through
    /// a changed word, leaves a waiter behind and the test fails at its give-up.
    fn one_broadcast_releases_every_sleeping_waiter<W: Wait>() {
        let event = Arc::new(Event::<W>::new());
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let event = event.clone();
                std::thread::spawn(move || event.wait())
            })
            .collect();
        // A counted waiter is asleep or about to compare the word, which the broadcast
        // changes before it wakes the sleepers.
        while event.changes.sleepers.load(Relaxed) < 3 {
            std::thread::yield_now();
        }
        event.notify_all();
        let give_up = Instant::now() + Duration::from_secs(10);
        while !waiters.iter().all(|w| w.is_finished()) {
            assert!(Instant::now() < give_up, "one broadcast left a waiter asleep");
            std::thread::yield_now();
        }
        for w in waiters {
            w.join().unwrap();
        }
        assert!(!event.try_wait(), "a broadcast must not leave a notification behind");
    }

    #[test]
    fn one_broadcast_releases_every_sleeping_waiter_and_keeps_nothing() {
        one_broadcast_releases_every_sleeping_waiter::<Futex>();
        one_broadcast_releases_every_sleeping_waiter::<SpinPark>();
    }

    #[test]
    fn a_pending_notification_survives_a_broadcast() {
        let event = Event::<Futex>::new();
        event.notify_one();
        event.notify_all();
        assert!(event.try_wait());
    }
}
