//! Wait/notify events by name, the other thing seed 001's experiments measure: `event:POLICY`
//! (spinlab's [`Event`] over every policy), and the references `std` and `pthread`: a
//! notification count under a mutex and a condition variable, which is seed 001's *pthreads*
//! notify primitive. The references keep [`Event`]'s semantics (counted notifications,
//! broadcasts that release the waits in progress), so an experiment can swap one for another
//! by name.

use crate::table::{add_algorithm, policy_list, Algorithm, Entry, Kind, Table};
use core::cell::UnsafeCell;
use spinlab::event::Event;
use spinlab::wait::Wait;
use std::convert::Infallible;
use std::time::Instant;

/// The reference events, measured beside spinlab's.
pub const REFERENCE_EVENTS: [&str; 2] = ["std", "pthread"];

/// A wait/notify event reached by name, with [`Event`]'s semantics.
pub trait DynEvent: Send + Sync {
    /// Waits until notified.
    fn wait(&self);
    /// Waits until notified or `deadline`; returns whether it was notified.
    fn wait_until(&self, deadline: Instant) -> bool;
    /// Releases one waiting thread, or the next to wait if none waits now.
    fn notify_one(&self);
    /// Releases every thread waiting now.
    fn notify_all(&self);
}

/// Wait/notify events: `event:POLICY` and the references, each a [`DynEvent`] when built.
/// An event keeps its own memory: it has no form for the caller's, and says nothing beyond
/// the facts every entry carries.
#[derive(Clone, Copy, Debug)]
pub struct Events;

/// One event the registry can build.
pub type EventEntry = Entry<Events>;

impl<W: Wait> DynEvent for Event<W> {
    #[inline]
    fn wait(&self) {
        Event::wait(self)
    }
    fn wait_until(&self, deadline: Instant) -> bool {
        Event::wait_until(self, deadline)
    }
    #[inline]
    fn notify_one(&self) {
        Event::notify_one(self)
    }
    #[inline]
    fn notify_all(&self) {
        Event::notify_all(self)
    }
}

/// spinlab's event, over every policy.
struct SequenceEvent;

impl Algorithm<Events> for SequenceEvent {
    const NAME: &'static str = "event";

    fn over<W: Wait>() -> ((), fn(()) -> Box<dyn DynEvent>) {
        ((), |()| Box::new(Event::<W>::new()))
    }
}

/// Every event: `event:POLICY` for every policy, then the references. A new event has no
/// pending notification.
///
/// ```
/// use spinlab_registry::EVENTS;
/// use std::time::Instant;
/// for name in ["event:pause", "std", "pthread"] {
///     let event = EVENTS.build(name, ()).unwrap();
///     event.notify_one();
///     event.wait();
///     assert!(!event.wait_until(Instant::now()), "{name}: the notification was taken");
/// }
/// ```
pub static EVENTS: Table<Events> = Table::new();

impl Kind for Events {
    type Built = Box<dyn DynEvent>;
    type Args = ();
    type Facts = ();
    type Ops = Infallible;

    fn rows() -> Vec<EventEntry> {
        let mut rows = Vec::new();
        add_algorithm::<Events, SequenceEvent>(&mut rows);
        rows.push(Entry::reference("std", (), |()| StdEvent::boxed()));
        rows.push(Entry::reference("pthread", (), |()| PthreadEvent::boxed()));
        rows
    }

    fn expected() -> String {
        format!(
            "an event is event:POLICY with POLICY one of {}, or a reference event: {}",
            policy_list(),
            REFERENCE_EVENTS.join(", ")
        )
    }

    fn in_place(_: &()) -> Option<(&Infallible, usize, usize)> {
        None
    }
}

/// What the reference events keep under their mutex.
#[derive(Default)]
struct Notices {
    /// `notify_one` calls not yet taken.
    permits: u64,
    /// `notify_all` calls so far.
    broadcasts: u64,
}

impl Notices {
    /// Whether a wait that began at `broadcasts_at_entry` is released, taking a notification
    /// if that is what releases it. Broadcasts first, as [`Event`] does.
    fn release(&mut self, broadcasts_at_entry: u64) -> bool {
        if self.broadcasts != broadcasts_at_entry {
            return true;
        }
        if self.permits > 0 {
            self.permits -= 1;
            return true;
        }
        false
    }
}

/// [`Event`]'s semantics over `std::sync::Mutex` and `std::sync::Condvar`.
#[derive(Default)]
struct StdEvent {
    notices: std::sync::Mutex<Notices>,
    changed: std::sync::Condvar,
}

impl StdEvent {
    fn boxed() -> Box<dyn DynEvent> {
        Box::<StdEvent>::default()
    }

    fn notices(&self) -> std::sync::MutexGuard<'_, Notices> {
        // Nothing panics while holding the mutex; a poisoned one still holds valid counts.
        self.notices.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn wait_until_opt(&self, deadline: Option<Instant>) -> bool {
        let mut notices = self.notices();
        let entry = notices.broadcasts;
        loop {
            if notices.release(entry) {
                return true;
            }
            notices = match deadline {
                None => self.changed.wait(notices).unwrap_or_else(|poisoned| poisoned.into_inner()),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    match self.changed.wait_timeout(notices, left) {
                        Ok((notices, _)) => notices,
                        Err(poisoned) => poisoned.into_inner().0,
                    }
                }
            };
        }
    }
}

impl DynEvent for StdEvent {
    fn wait(&self) {
        self.wait_until_opt(None);
    }
    fn wait_until(&self, deadline: Instant) -> bool {
        self.wait_until_opt(Some(deadline))
    }
    fn notify_one(&self) {
        self.notices().permits += 1;
        self.changed.notify_one();
    }
    fn notify_all(&self) {
        self.notices().broadcasts += 1;
        self.changed.notify_all();
    }
}

/// [`Event`]'s semantics over a `pthread_mutex_t` and a `pthread_cond_t` timed on
/// `CLOCK_MONOTONIC` (the clock of [`Instant`]): seed 001's pthreads notify primitive.
struct PthreadEvent {
    mutex: UnsafeCell<libc::pthread_mutex_t>,
    cond: UnsafeCell<libc::pthread_cond_t>,
    notices: UnsafeCell<Notices>,
}

// SAFETY: `notices` is touched only with `mutex` held; the pthread objects are made to be
// shared between threads.
unsafe impl Sync for PthreadEvent {}
// SAFETY: the event is only moved as a whole inside its box, which does not move it.
unsafe impl Send for PthreadEvent {}

impl PthreadEvent {
    fn boxed() -> Box<dyn DynEvent> {
        let event = Box::new(PthreadEvent {
            mutex: UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER),
            // SAFETY: all-zero bytes are a valid (if uninitialised) value of this plain C
            // struct; `pthread_cond_init` below initialises it in place.
            cond: UnsafeCell::new(unsafe { core::mem::zeroed() }),
            notices: UnsafeCell::new(Notices::default()),
        });
        // SAFETY: `attr` is initialised before use and destroyed after; `cond` points to the
        // condition variable's final location.
        unsafe {
            let mut attr: libc::pthread_condattr_t = core::mem::zeroed();
            libc::pthread_condattr_init(&mut attr);
            libc::pthread_condattr_setclock(&mut attr, libc::CLOCK_MONOTONIC);
            let r = libc::pthread_cond_init(event.cond.get(), &attr);
            libc::pthread_condattr_destroy(&mut attr);
            assert_eq!(r, 0, "pthread_cond_init failed with error {r}");
        }
        event
    }

    /// Runs `f` on the notices with the mutex held.
    fn locked<R>(&self, f: impl FnOnce(&mut Notices) -> R) -> R {
        // SAFETY: an initialised mutex (see `boxed`).
        unsafe { libc::pthread_mutex_lock(self.mutex.get()) };
        // SAFETY: we hold the mutex, which guards `notices`; `f` cannot wait.
        let result = f(unsafe { &mut *self.notices.get() });
        // SAFETY: we hold the mutex.
        unsafe { libc::pthread_mutex_unlock(self.mutex.get()) };
        result
    }

    /// `pthread_cond_wait`, or `pthread_cond_timedwait` to `deadline`, with the mutex held.
    /// Returns `false` if the deadline has passed.
    fn wait_once(&self, deadline: Option<Instant>) -> bool {
        let Some(deadline) = deadline else {
            // SAFETY: initialised objects; the caller holds the mutex.
            unsafe { libc::pthread_cond_wait(self.cond.get(), self.mutex.get()) };
            return true;
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `now` is a valid out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        let nanos = now.tv_nsec as u64 + u64::from(left.subsec_nanos());
        let at = libc::timespec {
            tv_sec: now.tv_sec.saturating_add(
                libc::time_t::try_from(left.as_secs() + nanos / 1_000_000_000).unwrap_or(libc::time_t::MAX),
            ),
            tv_nsec: (nanos % 1_000_000_000) as _,
        };
        // SAFETY: initialised objects, the caller holds the mutex, `at` is a valid timespec
        // on the condition variable's clock.
        unsafe { libc::pthread_cond_timedwait(self.cond.get(), self.mutex.get(), &at) };
        true
    }

    fn wait_until_opt(&self, deadline: Option<Instant>) -> bool {
        let notices = self.notices.get();
        // SAFETY: an initialised mutex (see `boxed`).
        unsafe { libc::pthread_mutex_lock(self.mutex.get()) };
        // SAFETY: we hold the mutex; the reference lives for this statement only.
        let entry = unsafe { (*notices).broadcasts };
        let released = loop {
            // SAFETY: we hold the mutex (a condvar wait takes it again before returning), and
            // the reference lives for this call only, so none is alive while a wait lets other
            // threads at the notices.
            if unsafe { (*notices).release(entry) } {
                break true;
            }
            if !self.wait_once(deadline) {
                break false;
            }
        };
        // SAFETY: we hold the mutex.
        unsafe { libc::pthread_mutex_unlock(self.mutex.get()) };
        released
    }
}

impl DynEvent for PthreadEvent {
    fn wait(&self) {
        self.wait_until_opt(None);
    }
    fn wait_until(&self, deadline: Instant) -> bool {
        self.wait_until_opt(Some(deadline))
    }
    fn notify_one(&self) {
        self.locked(|notices| notices.permits += 1);
        // SAFETY: an initialised condition variable.
        unsafe { libc::pthread_cond_signal(self.cond.get()) };
    }
    fn notify_all(&self) {
        self.locked(|notices| notices.broadcasts += 1);
        // SAFETY: an initialised condition variable.
        unsafe { libc::pthread_cond_broadcast(self.cond.get()) };
    }
}

impl Drop for PthreadEvent {
    fn drop(&mut self) {
        // SAFETY: initialised objects nobody uses any more (we are being dropped).
        unsafe {
            libc::pthread_cond_destroy(self.cond.get());
            libc::pthread_mutex_destroy(self.mutex.get());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_has_an_event_and_the_references_follow() {
        let (names, policies) = (EVENTS.names(), spinlab::wait::policies());
        assert_eq!(names.len(), policies.len() + REFERENCE_EVENTS.len());
        for policy in &policies {
            let name = format!("event:{}", policy.name);
            assert!(names.contains(&name.as_str()), "{name} missing");
        }
        assert_eq!(&names[names.len() - REFERENCE_EVENTS.len()..], REFERENCE_EVENTS);
    }

    #[test]
    fn unknown_names_list_what_is_accepted() {
        let text = EVENTS.build("mcs:futex", ()).err().unwrap().to_string();
        for accepted in ["`mcs:futex`", "event:POLICY", "spin-park", "wfe", "std", "pthread"] {
            assert!(text.contains(accepted), "{text}");
        }
    }

    #[test]
    fn reference_events_keep_counted_notifications_and_uncounted_broadcasts() {
        for name in REFERENCE_EVENTS {
            let event = EVENTS.build(name, ()).unwrap();
            event.notify_all();
            assert!(!event.wait_until(Instant::now()), "{name}: a broadcast with nobody waiting is not kept");
            event.notify_one();
            event.notify_one();
            assert!(event.wait_until(Instant::now()), "{name}");
            event.wait();
            let soon = Instant::now() + std::time::Duration::from_millis(1);
            assert!(!event.wait_until(soon), "{name}");
            assert!(Instant::now() >= soon, "{name}: returned before its deadline");
        }
    }
}
