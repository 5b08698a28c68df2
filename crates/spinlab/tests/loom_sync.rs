#![cfg(loom)]
//! Model checks of the event, the condition variable, the barrier and the reader-writer locks
//! under loom, each with a spinning policy ([`Spin`]) and a sleeping one ([`Futex`]), which
//! stand for every other policy (see "Instantiation" below).
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p spinlab --release --test loom_sync`.
//!
//! Under loom the futex is a model of the kernel's (`sys/futex.rs`): a sleeper is woken only by
//! a wake on its word, so a lost wake-up leaves it asleep and loom reports the deadlock. Loom
//! has no clock: a deadline expires after a few spin iterations, or once a timed futex wait has
//! slept (a wake-up may pick it meanwhile, and then it returns woken), so a timed waiter's
//! time-out path is explored too, and with `*_expired_at_entry` the real wait's return at
//! once, without comparing the word, once its deadline has passed. The `*_spuriously` models
//! let one untimed wait return as if woken when nobody woke it, as a real one may. Shared data is a loom
//! `UnsafeCell`, so an access that the primitive fails to order (a reader beside a writer, a
//! thread reading another's pre-barrier write without a happens-before edge) fails the model
//! even when the values happen to be right.
//!
//! Preemption bounds keep the file to a few minutes on two CPUs; `LOOM_MAX_PREEMPTIONS`
//! overrides them for a deeper run.

use lock_api::RawRwLock;
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use loom::sync::Arc;
use loom::thread;
use spinlab::lock::Ttas;
use spinlab::rwlock::{PhaseFair, ReaderPref, WriterPref};
use spinlab::wait::{Futex, Spin, Wait};
use spinlab::{Barrier, Condvar, Event};
use std::time::Duration;

// Loom maps a fresh stack for every thread of every execution; see the module for why the
// test binary reuses them.
mod loom_stacks;

/// Runs `model` under loom with a preemption bound (unless `LOOM_MAX_PREEMPTIONS` sets one).
fn check(preemptions: usize, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if std::env::var_os("LOOM_MAX_PREEMPTIONS").is_none() {
        builder.preemption_bound = Some(preemptions);
    }
    builder.check(model);
}

// ---- Event ---------------------------------------------------------------------------------

/// A notification that races with the waiter going to sleep must still release it: if the
/// waiter could sleep through it, loom reports the deadlock.
fn event_notify_one_is_never_lost<W: Wait>() {
    check(3, || {
        let event = Arc::new(Event::<W>::new());
        let waiter = {
            let event = event.clone();
            thread::spawn(move || event.wait())
        };
        event.notify_one();
        waiter.join().unwrap();
        assert!(!event.try_wait(), "the notification was taken exactly once");
    });
}

/// Two waiters, two notifications: both are released, whichever order things happen in.
fn event_two_waiters_two_notifications<W: Wait>() {
    check(2, || {
        let event = Arc::new(Event::<W>::new());
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let event = event.clone();
                thread::spawn(move || event.wait())
            })
            .collect();
        event.notify_one();
        event.notify_one();
        for waiter in waiters {
            waiter.join().unwrap();
        }
        assert!(!event.try_wait());
    });
}

/// Timed waiters race a notification: it is either taken by exactly one of them or still
/// pending afterwards, never dropped because a waiter timed out as it came.
fn event_timed_waiters_never_drop_a_notification<W: Wait>() {
    check(2, || {
        let event = Arc::new(Event::<W>::new());
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let event = event.clone();
                thread::spawn(move || event.wait_timeout(Duration::from_secs(60)))
            })
            .collect();
        event.notify_one();
        let taken = waiters.into_iter().map(|w| w.join().unwrap()).filter(|&notified| notified).count();
        let pending = usize::from(event.try_wait());
        assert_eq!(taken + pending, 1, "taken {taken}, pending {pending}");
        assert!(!event.try_wait());
    });
}

/// A broadcast and a notification race a waiter: the waiter is released, and the
/// notification is either taken by it or left for the next wait, never both, never neither.
fn event_broadcast_and_notification_race_a_waiter<W: Wait>() {
    check(2, || {
        let event = Arc::new(Event::<W>::new());
        let waiter = {
            let event = event.clone();
            thread::spawn(move || event.wait())
        };
        event.notify_all();
        event.notify_one();
        waiter.join().unwrap();
        // Taken by the waiter, or pending: at most one left.
        event.try_wait();
        assert!(!event.try_wait());
    });
}

// ---- Condvar -------------------------------------------------------------------------------

type LoomMutex<T> = lock_api::Mutex<Ttas<Futex>, T>;

/// A mutex holding `false`, built from `new()` (loom's atomics cannot be built in `INIT`).
fn flag_and_condvar<W: Wait>() -> Arc<(LoomMutex<bool>, Condvar<W>)> {
    Arc::new((LoomMutex::from_raw(Ttas::new(), false), Condvar::new()))
}

/// A thread that waits on the condvar, under the mutex, until the flag is set.
fn waiter_for_the_flag<W: Wait>(shared: &Arc<(LoomMutex<bool>, Condvar<W>)>) -> thread::JoinHandle<()> {
    let shared = shared.clone();
    thread::spawn(move || {
        let (mutex, condvar) = &*shared;
        let mut ready = mutex.lock();
        condvar.wait_while(&mut ready, |ready| !*ready);
        assert!(*ready);
    })
}

/// The classic: a waiter checks a flag under the mutex and waits; a notifier sets it under the
/// mutex and notifies. A notification between the waiter's check and its sleep must not be
/// lost.
fn condvar_wait_notify<W: Wait>(notify_all: bool) {
    check(3, move || {
        let shared = flag_and_condvar::<W>();
        let waiter = waiter_for_the_flag(&shared);
        let (mutex, condvar) = &*shared;
        *mutex.lock() = true;
        if notify_all {
            condvar.notify_all();
        } else {
            condvar.notify_one();
        }
        waiter.join().unwrap();
    });
}

/// As [`condvar_wait_notify`], with the notification made while the notifier still holds the
/// mutex: the waiter's count-in, made before its wait released the mutex, is read either way.
fn condvar_notify_while_holding_the_mutex<W: Wait>() {
    check(3, move || {
        let shared = flag_and_condvar::<W>();
        let waiter = waiter_for_the_flag(&shared);
        let (mutex, condvar) = &*shared;
        let mut ready = mutex.lock();
        *ready = true;
        condvar.notify_one();
        drop(ready);
        waiter.join().unwrap();
    });
}

/// Two waiters, one `notify_all`: both see the flag.
fn condvar_notify_all_two_waiters<W: Wait>() {
    check(2, || {
        let shared = flag_and_condvar::<W>();
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let shared = shared.clone();
                thread::spawn(move || {
                    let (mutex, condvar) = &*shared;
                    let mut ready = mutex.lock();
                    condvar.wait_while(&mut ready, |ready| !*ready);
                })
            })
            .collect();
        let (mutex, condvar) = &*shared;
        *mutex.lock() = true;
        condvar.notify_all();
        for waiter in waiters {
            waiter.join().unwrap();
        }
    });
}

// ---- Barrier -------------------------------------------------------------------------------

const PHASES: usize = 2;

/// What the threads of a barrier model share: the barrier, one cell per (phase, thread) that
/// its thread writes before that phase's wait and everyone reads after it, and the number of
/// leaders per phase.
struct Phases<W: Wait> {
    barrier: Barrier<W>,
    cells: Vec<UnsafeCell<usize>>,
    leaders: Vec<AtomicUsize>,
}

// SAFETY: each cell is written by one thread before a barrier phase and read by all after it;
// the barrier must order the two, and loom checks that it does.
unsafe impl<W: Wait> Sync for Phases<W> {}

/// `parties` threads go through `PHASES` phases. After each, every thread reads what every
/// other thread wrote before it: loom fails the model if the barrier let a thread through
/// early or without a happens-before edge. Exactly one leader per phase.
fn barrier_reuse<W: Wait>(parties: usize, preemptions: usize) {
    check(preemptions, move || {
        let shared = Arc::new(Phases::<W> {
            barrier: Barrier::new(parties).unwrap(),
            cells: (0..PHASES * parties).map(|_| UnsafeCell::new(0)).collect(),
            leaders: (0..PHASES).map(|_| AtomicUsize::new(0)).collect(),
        });
        let run = move |shared: &Phases<W>, me: usize| {
            for phase in 0..PHASES {
                // SAFETY: only thread `me` writes this cell, and only before this phase's wait.
                shared.cells[phase * parties + me].with_mut(|cell| unsafe { *cell = phase + 1 });
                if shared.barrier.wait().is_leader() {
                    shared.leaders[phase].fetch_add(1, Relaxed);
                }
                for other in 0..parties {
                    // SAFETY: written before the wait we have just left (checked by loom).
                    let seen = shared.cells[phase * parties + other].with(|cell| unsafe { *cell });
                    assert_eq!(seen, phase + 1, "thread {me} left phase {phase} before thread {other} arrived");
                }
            }
        };
        let others: Vec<_> = (1..parties)
            .map(|me| {
                let shared = shared.clone();
                thread::spawn(move || run(&shared, me))
            })
            .collect();
        run(&shared, 0);
        for other in others {
            other.join().unwrap();
        }
        for phase in 0..PHASES {
            assert_eq!(shared.leaders[phase].load(Relaxed), 1, "phase {phase}");
        }
    });
}

// ---- Reader-writer locks -------------------------------------------------------------------

/// A reader-writer lock and the data it protects.
struct Guarded<L> {
    lock: L,
    value: UnsafeCell<usize>,
}

// SAFETY: `value` is written only under the exclusive lock and read only under a shared or
// exclusive one; loom checks exactly that.
unsafe impl<L: Sync> Sync for Guarded<L> {}

trait NewLock: RawRwLock + Send + Sync + 'static {
    fn new_unlocked() -> Self;
}

impl<W: Wait> NewLock for WriterPref<W> {
    fn new_unlocked() -> Self {
        WriterPref::new()
    }
}

impl<W: Wait> NewLock for ReaderPref<W> {
    fn new_unlocked() -> Self {
        ReaderPref::new()
    }
}

impl<W: Wait> NewLock for PhaseFair<W> {
    fn new_unlocked() -> Self {
        PhaseFair::new()
    }
}

impl<L: NewLock> Guarded<L> {
    fn write(&self) {
        let held = self.lock.lock_exclusive();
        // SAFETY: exclusive lock held (or loom reports the race).
        self.value.with_mut(|value| unsafe { *value += 1 });
        // SAFETY: acquired above.
        unsafe { self.lock.unlock_exclusive(held) };
    }

    fn read(&self) -> usize {
        let held = self.lock.lock_shared();
        // SAFETY: shared lock held (or loom reports the race).
        let value = self.value.with(|value| unsafe { *value });
        // SAFETY: acquired above.
        unsafe { self.lock.unlock_shared(held) };
        value
    }

    fn try_write(&self) -> bool {
        match self.lock.try_lock_exclusive() {
            Some(held) => {
                // SAFETY: exclusive lock held.
                self.value.with_mut(|value| unsafe { *value += 1 });
                // SAFETY: acquired just above.
                unsafe { self.lock.unlock_exclusive(held) };
                true
            }
            None => false,
        }
    }
}

/// Writers exclude each other and readers; readers see a whole number of writes. `readers`
/// reader threads and `writers` writer threads (this thread writes once too).
fn rwlock_exclusion<L: NewLock>(readers: usize, writers: usize, preemptions: usize) {
    check(preemptions, move || {
        let shared = Arc::new(Guarded { lock: L::new_unlocked(), value: UnsafeCell::new(0) });
        let mut threads = Vec::new();
        for _ in 0..readers {
            let shared = shared.clone();
            threads.push(thread::spawn(move || assert!(shared.read() <= writers + 1)));
        }
        for _ in 0..writers {
            let shared = shared.clone();
            threads.push(thread::spawn(move || shared.write()));
        }
        shared.write();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(shared.read(), writers + 1);
        assert!(!shared.lock.is_locked());
    });
}

/// A `try_lock_exclusive` races a reader and (`with_writer`) a writer: it either gets in alone
/// or leaves no trace (a failed attempt that left a writer counted would shut readers out for
/// good).
fn rwlock_try_write_races<L: NewLock>(with_writer: bool, preemptions: usize) {
    check(preemptions, move || {
        let shared = Arc::new(Guarded { lock: L::new_unlocked(), value: UnsafeCell::new(0) });
        let reader = {
            let shared = shared.clone();
            thread::spawn(move || shared.read())
        };
        let writer = with_writer.then(|| {
            let shared = shared.clone();
            thread::spawn(move || shared.write())
        });
        let tried = usize::from(shared.try_write());
        reader.join().unwrap();
        if let Some(writer) = writer {
            writer.join().unwrap();
        }
        assert_eq!(shared.read(), usize::from(with_writer) + tried);
        assert!(!shared.lock.is_locked());
    });
}

// ---- Instantiation -------------------------------------------------------------------------
//
// Each primitive sees its policy only through `Wait`: whether it may sleep (`MAY_SLEEP`, which
// decides whether a waker counts or reads a sleeper mark), and how a wait's spin phase on one
// word ends. Every wait here is that spin phase, then a mark or a count and a sleep. `Spin`'s
// phase ends only at a deadline, `Futex`'s at once; a policy that spins and then sleeps
// (`SpinPark`) only looks at the word again in between, and a change it sees takes the arm that
// a futex waiter takes when the change comes before its first look. So `Spin` stands for every
// policy that never sleeps and `Futex` for every one that may (`tests/loom.rs` gives the kinds).
//
// Loom cannot explore two threads that wait at once with a policy that never sleeps: each
// spin iteration yields, nothing bounds how often the two spinners may take turns before the
// thread they wait for runs, and the model exceeds its branch limit (the lock models in
// `tests/loom.rs` meet the same limit). So every model runs with both policies where at most
// one thread spins at a time, and the models with two or more waiters at once (two event or
// condvar waiters, three barrier parties, a reader and two writers) run with [`Futex`].

macro_rules! one_waiter_models {
    ($($policy:ident => $module:ident),* $(,)?) => {$(
        mod $module {
            use super::*;

            #[test]
            fn event_notify_one_is_never_lost() {
                super::event_notify_one_is_never_lost::<$policy>();
            }
            #[test]
            fn event_timed_waiters_never_drop_a_notification() {
                super::event_timed_waiters_never_drop_a_notification::<$policy>();
            }
            #[test]
            fn event_timed_waiters_never_drop_a_notification_expired_at_entry() {
                let _expired = spinlab::testing::timed_waits_expire_at_entry();
                super::event_timed_waiters_never_drop_a_notification::<$policy>();
            }
            #[test]
            fn event_broadcast_and_notification_race_a_waiter() {
                super::event_broadcast_and_notification_race_a_waiter::<$policy>();
            }
            #[test]
            fn condvar_wait_notify_one() {
                super::condvar_wait_notify::<$policy>(false);
            }
            #[test]
            fn condvar_wait_notify_all() {
                super::condvar_wait_notify::<$policy>(true);
            }
            #[test]
            fn condvar_notify_while_holding_the_mutex() {
                super::condvar_notify_while_holding_the_mutex::<$policy>();
            }
            #[test]
            fn barrier_reuse_two_phases_two_threads() {
                super::barrier_reuse::<$policy>(2, 3);
            }
            #[test]
            fn writer_pref_reader_and_writer() {
                super::rwlock_exclusion::<WriterPref<$policy>>(1, 0, 3);
            }
            #[test]
            fn writer_pref_two_writers() {
                super::rwlock_exclusion::<WriterPref<$policy>>(0, 1, 3);
            }
            #[test]
            fn writer_pref_try_write_races_reader() {
                super::rwlock_try_write_races::<WriterPref<$policy>>(false, 3);
            }
            #[test]
            fn reader_pref_reader_and_writer() {
                super::rwlock_exclusion::<ReaderPref<$policy>>(1, 0, 3);
            }
            #[test]
            fn reader_pref_two_writers() {
                super::rwlock_exclusion::<ReaderPref<$policy>>(0, 1, 3);
            }
            #[test]
            fn reader_pref_try_write_races_reader() {
                super::rwlock_try_write_races::<ReaderPref<$policy>>(false, 3);
            }
            #[test]
            fn phase_fair_reader_and_writer() {
                super::rwlock_exclusion::<PhaseFair<$policy>>(1, 0, 3);
            }
            #[test]
            fn phase_fair_two_writers() {
                super::rwlock_exclusion::<PhaseFair<$policy>>(0, 1, 3);
            }
            #[test]
            fn phase_fair_try_write_races_reader() {
                super::rwlock_try_write_races::<PhaseFair<$policy>>(false, 3);
            }
            #[test]
            fn event_notify_one_is_never_lost_spuriously() {
                let _spurious = spinlab::testing::spurious_wake_ups(1);
                super::event_notify_one_is_never_lost::<$policy>();
            }
            #[test]
            fn condvar_wait_notify_one_spuriously() {
                let _spurious = spinlab::testing::spurious_wake_ups(1);
                super::condvar_wait_notify::<$policy>(false);
            }
            #[test]
            fn barrier_reuse_two_phases_two_threads_spuriously() {
                let _spurious = spinlab::testing::spurious_wake_ups(1);
                super::barrier_reuse::<$policy>(2, 3);
            }
            #[test]
            fn writer_pref_reader_and_writer_spuriously() {
                let _spurious = spinlab::testing::spurious_wake_ups(1);
                super::rwlock_exclusion::<WriterPref<$policy>>(1, 0, 3);
            }
            #[test]
            fn reader_pref_reader_and_writer_spuriously() {
                let _spurious = spinlab::testing::spurious_wake_ups(1);
                super::rwlock_exclusion::<ReaderPref<$policy>>(1, 0, 3);
            }
            #[test]
            fn phase_fair_reader_and_writer_spuriously() {
                let _spurious = spinlab::testing::spurious_wake_ups(1);
                super::rwlock_exclusion::<PhaseFair<$policy>>(1, 0, 3);
            }
        }
    )*};
}

macro_rules! many_waiter_models {
    ($($policy:ident => $module:ident),* $(,)?) => {$(
        mod $module {
            use super::*;

            #[test]
            fn event_two_waiters_two_notifications() {
                super::event_two_waiters_two_notifications::<$policy>();
            }
            #[test]
            fn condvar_notify_all_two_waiters() {
                super::condvar_notify_all_two_waiters::<$policy>();
            }
            #[test]
            fn barrier_reuse_two_phases_three_threads() {
                super::barrier_reuse::<$policy>(3, 2);
            }
            #[test]
            fn writer_pref_reader_and_two_writers() {
                super::rwlock_exclusion::<WriterPref<$policy>>(1, 1, 2);
            }
            #[test]
            fn writer_pref_two_readers_and_writer() {
                super::rwlock_exclusion::<WriterPref<$policy>>(2, 0, 2);
            }
            #[test]
            fn writer_pref_try_write_races_reader_and_writer() {
                super::rwlock_try_write_races::<WriterPref<$policy>>(true, 2);
            }
            #[test]
            fn reader_pref_reader_and_two_writers() {
                super::rwlock_exclusion::<ReaderPref<$policy>>(1, 1, 2);
            }
            #[test]
            fn reader_pref_two_readers_and_writer() {
                super::rwlock_exclusion::<ReaderPref<$policy>>(2, 0, 2);
            }
            #[test]
            fn reader_pref_try_write_races_reader_and_writer() {
                super::rwlock_try_write_races::<ReaderPref<$policy>>(true, 2);
            }
            #[test]
            fn phase_fair_reader_and_two_writers() {
                super::rwlock_exclusion::<PhaseFair<$policy>>(1, 1, 2);
            }
            #[test]
            fn phase_fair_two_readers_and_writer() {
                super::rwlock_exclusion::<PhaseFair<$policy>>(2, 0, 2);
            }
            #[test]
            fn phase_fair_try_write_races_reader_and_writer() {
                super::rwlock_try_write_races::<PhaseFair<$policy>>(true, 2);
            }
        }
    )*};
}

one_waiter_models!(Spin => spin, Futex => futex);
many_waiter_models!(Futex => futex_many);
