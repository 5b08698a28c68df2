//! Seed 001's primitives by name, the two things its wakeup and barrier experiments measure:
//!
//! - barriers: `barrier:POLICY` (spinlab's sense-reversing [`Barrier`] over every policy), and
//!   the references `std` (`std::sync::Barrier`) and `pthread` (`pthread_barrier_t`);
//! - wait/notify events: `event:POLICY` (spinlab's [`Event`] over every policy), and the
//!   references `std` and `pthread`: a notification count under a mutex and a condition
//!   variable, which is seed 001's *pthreads* notify primitive.
//!
//! References keep the semantics of spinlab's own types (one leader per phase; counted
//! notifications, broadcasts that release the waits in progress), so an experiment can swap
//! one for another by name.

use super::{policy_list, Origin, RegistryError};
use crate::barrier::Barrier;
use crate::event::Event;
use crate::wait::{visit_policies, PolicyVisitor, Unavailable, Wait};
use core::cell::UnsafeCell;
use std::num::NonZeroU32;
use std::sync::OnceLock;
use std::time::Instant;

/// The reference barriers, measured beside spinlab's.
pub const REFERENCE_BARRIERS: [&str; 2] = ["std", "pthread"];

/// The reference events, measured beside spinlab's.
pub const REFERENCE_EVENTS: [&str; 2] = ["std", "pthread"];

/// A barrier reached by name.
pub trait DynBarrier: Send + Sync {
    /// Waits until every party has arrived in this phase; `true` for exactly one thread per
    /// phase (the leader).
    fn wait(&self) -> bool;
    /// How many threads each phase waits for.
    fn parties(&self) -> usize;
}

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

/// One barrier the registry can build.
#[derive(Clone, Debug)]
pub struct BarrierEntry {
    /// `barrier:POLICY`, or the reference barrier's name.
    pub name: String,
    /// The wait policy; `None` for reference barriers, which wait their own way.
    pub policy: Option<&'static str>,
    /// spinlab's own, or a reference.
    pub origin: Origin,
    /// Whether a waiter may sleep in the kernel.
    pub may_sleep: bool,
    /// `Ok`, or the CPU feature the policy needs and this CPU lacks.
    pub availability: Result<(), Unavailable>,
    make: fn(NonZeroU32) -> Box<dyn DynBarrier>,
}

impl BarrierEntry {
    /// A new barrier for `parties` threads, or the reason this CPU cannot run it.
    ///
    /// # Panics
    ///
    /// The `pthread` reference panics if `pthread_barrier_init` refuses the count (glibc
    /// accepts up to `i32::MAX` parties).
    pub fn build(&self, parties: NonZeroU32) -> Result<Box<dyn DynBarrier>, RegistryError> {
        match self.availability {
            Ok(()) => Ok((self.make)(parties)),
            Err(reason) => Err(RegistryError::Unavailable { name: self.name.clone(), reason }),
        }
    }
}

/// One event the registry can build.
#[derive(Clone, Debug)]
pub struct EventEntry {
    /// `event:POLICY`, or the reference event's name.
    pub name: String,
    /// The wait policy; `None` for reference events.
    pub policy: Option<&'static str>,
    /// spinlab's own, or a reference.
    pub origin: Origin,
    /// Whether a waiter may sleep in the kernel.
    pub may_sleep: bool,
    /// `Ok`, or the CPU feature the policy needs and this CPU lacks.
    pub availability: Result<(), Unavailable>,
    make: fn() -> Box<dyn DynEvent>,
}

impl EventEntry {
    /// A new event with no pending notification, or the reason this CPU cannot run it.
    pub fn build(&self) -> Result<Box<dyn DynEvent>, RegistryError> {
        match self.availability {
            Ok(()) => Ok((self.make)()),
            Err(reason) => Err(RegistryError::Unavailable { name: self.name.clone(), reason }),
        }
    }
}

impl<W: Wait> DynBarrier for Barrier<W> {
    #[inline]
    fn wait(&self) -> bool {
        Barrier::wait(self).is_leader()
    }
    fn parties(&self) -> usize {
        Barrier::parties(self)
    }
}

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

fn spinlab_barrier<W: Wait>(parties: NonZeroU32) -> Box<dyn DynBarrier> {
    match Barrier::<W>::new(parties.get() as usize) {
        Ok(barrier) => Box::new(barrier),
        Err(e) => unreachable!("{e}: every non-zero u32 is a valid party count"),
    }
}

fn spinlab_event<W: Wait>() -> Box<dyn DynEvent> {
    Box::new(Event::<W>::new())
}

struct AddEveryPolicy<'a> {
    barriers: &'a mut Vec<BarrierEntry>,
    events: &'a mut Vec<EventEntry>,
}

impl PolicyVisitor for AddEveryPolicy<'_> {
    fn visit<W: Wait>(&mut self) {
        self.barriers.push(BarrierEntry {
            name: format!("barrier:{}", W::NAME),
            policy: Some(W::NAME),
            origin: Origin::Spinlab,
            may_sleep: W::MAY_SLEEP,
            availability: W::availability(),
            make: spinlab_barrier::<W>,
        });
        self.events.push(EventEntry {
            name: format!("event:{}", W::NAME),
            policy: Some(W::NAME),
            origin: Origin::Spinlab,
            may_sleep: W::MAY_SLEEP,
            availability: W::availability(),
            make: spinlab_event::<W>,
        });
    }
}

struct Tables {
    barriers: Vec<BarrierEntry>,
    events: Vec<EventEntry>,
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let (mut barriers, mut events) = (Vec::new(), Vec::new());
        visit_policies(&mut AddEveryPolicy { barriers: &mut barriers, events: &mut events });
        let reference_barrier = |name: &str, make| BarrierEntry {
            name: name.to_string(),
            policy: None,
            origin: Origin::Reference,
            may_sleep: true,
            availability: Ok(()),
            make,
        };
        barriers.push(reference_barrier("std", StdBarrier::boxed));
        barriers.push(reference_barrier("pthread", PthreadBarrier::boxed));
        let reference_event = |name: &str, make| EventEntry {
            name: name.to_string(),
            policy: None,
            origin: Origin::Reference,
            may_sleep: true,
            availability: Ok(()),
            make,
        };
        events.push(reference_event("std", StdEvent::boxed));
        events.push(reference_event("pthread", PthreadEvent::boxed));
        Tables { barriers, events }
    })
}

/// Every barrier: `barrier:POLICY` for every policy, then the references.
pub fn barriers() -> &'static [BarrierEntry] {
    &tables().barriers
}

/// Every barrier name, available here or not.
pub fn barrier_names() -> Vec<&'static str> {
    barriers().iter().map(|e| e.name.as_str()).collect()
}

/// The barrier called `name`, or an error that says what names are accepted.
pub fn barrier_info(name: &str) -> Result<&'static BarrierEntry, RegistryError> {
    barriers().iter().find(|e| e.name == name).ok_or_else(|| RegistryError::Unknown {
        name: name.to_string(),
        expected: format!(
            "a barrier is barrier:POLICY with POLICY one of {}, or a reference barrier: {}",
            policy_list(),
            REFERENCE_BARRIERS.join(", ")
        ),
    })
}

/// A new barrier for `parties` threads by name: an error lists the valid names, or names the
/// CPU feature an unavailable policy needs. `parties` is non-zero by type: a barrier for no
/// thread could never release anyone.
///
/// ```
/// use spinlab::registry;
/// use std::num::NonZeroU32;
/// let one = NonZeroU32::new(1).unwrap();
/// for name in ["barrier:futex", "std", "pthread"] {
///     assert!(registry::new_barrier(name, one).unwrap().wait(), "alone, every wait leads");
/// }
/// let err = registry::new_barrier("barrier:nap", one).err().unwrap().to_string();
/// assert!(err.contains("barrier:POLICY") && err.contains("spin-park") && err.contains("pthread"));
/// ```
pub fn new_barrier(name: &str, parties: NonZeroU32) -> Result<Box<dyn DynBarrier>, RegistryError> {
    barrier_info(name)?.build(parties)
}

/// Every event: `event:POLICY` for every policy, then the references.
pub fn events() -> &'static [EventEntry] {
    &tables().events
}

/// Every event name, available here or not.
pub fn event_names() -> Vec<&'static str> {
    events().iter().map(|e| e.name.as_str()).collect()
}

/// The event called `name`, or an error that says what names are accepted.
pub fn event_info(name: &str) -> Result<&'static EventEntry, RegistryError> {
    events().iter().find(|e| e.name == name).ok_or_else(|| RegistryError::Unknown {
        name: name.to_string(),
        expected: format!(
            "an event is event:POLICY with POLICY one of {}, or a reference event: {}",
            policy_list(),
            REFERENCE_EVENTS.join(", ")
        ),
    })
}

/// A new event by name, with no pending notification.
///
/// ```
/// use spinlab::registry;
/// use std::time::Instant;
/// for name in ["event:pause", "std", "pthread"] {
///     let event = registry::new_event(name).unwrap();
///     event.notify_one();
///     event.wait();
///     assert!(!event.wait_until(Instant::now()), "{name}: the notification was taken");
/// }
/// ```
pub fn new_event(name: &str) -> Result<Box<dyn DynEvent>, RegistryError> {
    event_info(name)?.build()
}

/// `std::sync::Barrier`, which does not say how many parties it has.
struct StdBarrier {
    barrier: std::sync::Barrier,
    parties: usize,
}

impl StdBarrier {
    fn boxed(parties: NonZeroU32) -> Box<dyn DynBarrier> {
        let parties = parties.get() as usize;
        Box::new(StdBarrier { barrier: std::sync::Barrier::new(parties), parties })
    }
}

impl DynBarrier for StdBarrier {
    fn wait(&self) -> bool {
        self.barrier.wait().is_leader()
    }
    fn parties(&self) -> usize {
        self.parties
    }
}

/// A `pthread_barrier_t` (glibc's futex barrier), initialised where it lives: it must not move
/// once initialised, and a boxed value does not.
struct PthreadBarrier {
    barrier: UnsafeCell<libc::pthread_barrier_t>,
    parties: u32,
}

// SAFETY: pthread barriers are made to be shared between threads; the cell only gives libc the
// mutable pointer it asks for.
unsafe impl Sync for PthreadBarrier {}
// SAFETY: the barrier is only moved as a whole inside its box, which does not move it.
unsafe impl Send for PthreadBarrier {}

impl PthreadBarrier {
    fn boxed(parties: NonZeroU32) -> Box<dyn DynBarrier> {
        let barrier = Box::new(PthreadBarrier {
            // SAFETY: all-zero bytes are a valid (if uninitialised) value of this plain C
            // struct; `pthread_barrier_init` below initialises it in place.
            barrier: UnsafeCell::new(unsafe { core::mem::zeroed() }),
            parties: parties.get(),
        });
        // SAFETY: a valid pointer to the barrier's final location; default attributes.
        let r = unsafe { libc::pthread_barrier_init(barrier.barrier.get(), core::ptr::null(), parties.get()) };
        assert_eq!(r, 0, "pthread_barrier_init({parties}) failed with error {r}");
        barrier
    }
}

impl DynBarrier for PthreadBarrier {
    fn wait(&self) -> bool {
        // SAFETY: an initialised barrier (see `boxed`), alive for the call.
        unsafe { libc::pthread_barrier_wait(self.barrier.get()) == libc::PTHREAD_BARRIER_SERIAL_THREAD }
    }
    fn parties(&self) -> usize {
        self.parties as usize
    }
}

impl Drop for PthreadBarrier {
    fn drop(&mut self) {
        // SAFETY: initialised, and nobody waits on it any more (we are being dropped).
        unsafe { libc::pthread_barrier_destroy(self.barrier.get()) };
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
    fn every_policy_has_a_barrier_and_an_event_and_the_references_follow() {
        let policies = crate::wait::policies();
        for (names, kind, references) in
            [(barrier_names(), "barrier", &REFERENCE_BARRIERS[..]), (event_names(), "event", &REFERENCE_EVENTS[..])]
        {
            assert_eq!(names.len(), policies.len() + references.len());
            for policy in &policies {
                let name = format!("{kind}:{}", policy.name);
                assert!(names.contains(&name.as_str()), "{name} missing");
            }
            assert_eq!(&names[names.len() - references.len()..], references);
        }
    }

    #[test]
    fn unknown_names_list_what_is_accepted() {
        let one = NonZeroU32::new(1).unwrap();
        let text = new_barrier("barrier:nope", one).err().unwrap().to_string();
        for accepted in ["`barrier:nope`", "barrier:POLICY", "futex", "umwait", "std", "pthread"] {
            assert!(text.contains(accepted), "{text}");
        }
        let text = new_event("mcs:futex").err().unwrap().to_string();
        for accepted in ["`mcs:futex`", "event:POLICY", "spin-park", "wfe", "std", "pthread"] {
            assert!(text.contains(accepted), "{text}");
        }
    }

    #[test]
    fn unavailable_policies_are_refused_with_the_missing_feature() {
        let one = NonZeroU32::new(1).unwrap();
        for entry in barriers() {
            match (&entry.availability, entry.build(one)) {
                (Ok(()), Ok(barrier)) => assert_eq!(barrier.parties(), 1),
                (Err(reason), Err(RegistryError::Unavailable { name, reason: said })) => {
                    assert_eq!((&name, reason), (&entry.name, &said));
                }
                (a, b) => panic!("{}: availability {a:?} but build gave {:?}", entry.name, b.err()),
            }
        }
        for entry in events() {
            match (&entry.availability, entry.build()) {
                (Ok(()), Ok(_)) => {}
                (Err(reason), Err(RegistryError::Unavailable { name, reason: said })) => {
                    assert_eq!((&name, reason), (&entry.name, &said));
                }
                (a, b) => panic!("{}: availability {a:?} but build gave {:?}", entry.name, b.err()),
            }
        }
    }

    #[test]
    fn reference_events_keep_counted_notifications_and_uncounted_broadcasts() {
        for name in REFERENCE_EVENTS {
            let event = new_event(name).unwrap();
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
