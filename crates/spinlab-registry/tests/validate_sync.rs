#![cfg(not(loom))]
//! Events, condition variables, barriers and reader-writer locks, through checks that a broken
//! primitive would fail: lost wake-ups (as hangs, which a watchdog turns into failures), items
//! lost or delivered twice, phases left early, two leaders, readers beside a writer, a writer
//! overtaken by readers that came after it.
//!
//! Everything registered is checked by name, so the references (std, parking_lot, pthread)
//! pass the same checks as spinlab's own primitives. Timings are never asserted: the watchdog's
//! limit is minutes, far beyond what a working primitive needs, and exists only so that a
//! hang fails with a message instead of stalling CI.

use lock_api::{RawMutex, RawRwLock};
use spinlab::lock::{Clh, Fair, Mcs, Tas, Ticket, Ttas};
use spinlab::rwlock::ReaderPref;
use spinlab::wait::{visit_policies, Futex, PolicyVisitor, SpinPark, Wait};
use spinlab::Condvar;
use spinlab_registry::{self as registry, DynRwLock, Origin, RwFairness};
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::time::{Duration, Instant};
use watchdog::Watchdog;

#[path = "../../spinlab/tests/watchdog/mod.rs"]
mod watchdog;

/// The tests of this file run one at a time: each starts as many threads as it needs, and
/// overlapping them would oversubscribe the CPUs in ways no test asked for.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Minutes, far beyond what a working primitive needs (see the file's docs).
const WATCHDOG_LIMIT: Duration = Duration::from_secs(180);

/// Fewer rounds for primitives whose waiters never sleep when threads outnumber CPUs: a
/// spinning waiter holds its CPU until preempted, so each round can cost a time slice.
fn rounds(may_sleep: bool, threads: usize, full: usize) -> usize {
    if threads > cpus() && !may_sleep {
        full / 20
    } else {
        full
    }
}

// ---- Events --------------------------------------------------------------------------------

/// Producers push items and notify once per item; consumers wait once per item and pop one.
/// Every wait that returns must find an item (a notification happens-before the wait it
/// releases, and each was made after its item was pushed), nobody may hang (a lost
/// notification would leave a consumer waiting for ever), and every item arrives exactly once.
fn producers_and_consumers(name: &str, event: &dyn registry::DynEvent) {
    let threads = 4 * cpus();
    let (producers, consumers) = (threads / 2, threads - threads / 2);
    // Producers never wait, so spinning consumers cost them little: every event gets the full
    // count.
    let per_producer = 2_000;
    let total = producers * per_producer;
    let queue = std::sync::Mutex::new(VecDeque::new());
    let received = std::sync::Mutex::new(Vec::with_capacity(total));
    std::thread::scope(|s| {
        for p in 0..producers {
            let (queue, event) = (&queue, &event);
            s.spawn(move || {
                for i in 0..per_producer {
                    queue.lock().unwrap().push_back(p * per_producer + i);
                    event.notify_one();
                }
            });
        }
        for c in 0..consumers {
            let (queue, received, event) = (&queue, &received, &event);
            // The first consumers take one item more, so that the shares add up to the total.
            let share = total / consumers + usize::from(c < total % consumers);
            s.spawn(move || {
                let mut mine = Vec::with_capacity(share);
                for _ in 0..share {
                    event.wait();
                    let item = queue.lock().unwrap().pop_front();
                    mine.push(item.unwrap_or_else(|| panic!("{name}: a wait returned with no item to take")));
                }
                received.lock().unwrap().extend(mine);
            });
        }
    });
    let mut received = received.into_inner().unwrap();
    received.sort_unstable();
    assert!(received.iter().copied().eq(0..total), "{name}: items lost or duplicated");
    assert!(!event.wait_until(Instant::now()), "{name}: a notification left over");
}

#[test]
fn events_lose_no_notification_between_4x_cpus_producers_and_consumers() {
    let _serial = serial();
    for entry in registry::EVENTS.entries().iter().filter(|e| e.availability.is_ok()) {
        let _watchdog =
            Watchdog::new(WATCHDOG_LIMIT, format!("{}: producers and consumers (a lost notification?)", entry.name));
        producers_and_consumers(&entry.name, &*entry.build(()).unwrap());
    }
}

#[test]
fn event_timeouts_return_and_say_whether_notified() {
    let _serial = serial();
    for entry in registry::EVENTS.entries().iter().filter(|e| e.availability.is_ok()) {
        let name = &entry.name;
        // A timed wait that ignores its deadline would otherwise hang here for ever.
        let _watchdog = Watchdog::new(WATCHDOG_LIMIT, format!("{name}: timed waits, notified and not"));
        let event = entry.build(()).unwrap();
        let deadline = Instant::now() + Duration::from_millis(2);
        assert!(!event.wait_until(deadline), "{name}: nothing was notified");
        assert!(Instant::now() >= deadline, "{name}: returned before its deadline");
        event.notify_one();
        assert!(event.wait_until(Instant::now() + Duration::from_secs(60)), "{name}: a pending notification");
        // A notification from another thread while the timed wait is in progress.
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(1));
                event.notify_one();
            });
            assert!(event.wait_until(Instant::now() + Duration::from_secs(60)), "{name}: notified while waiting");
        });
    }
}

#[test]
fn event_notify_all_releases_every_waiter_and_keeps_nothing() {
    let _serial = serial();
    for entry in registry::EVENTS.entries().iter().filter(|e| e.availability.is_ok()) {
        let _watchdog = Watchdog::new(WATCHDOG_LIMIT, format!("{}: notify_all", entry.name));
        let event = entry.build(()).unwrap();
        let returned = AtomicUsize::new(0);
        let waiters = 3;
        std::thread::scope(|s| {
            for _ in 0..waiters {
                s.spawn(|| {
                    event.wait();
                    returned.fetch_add(1, Relaxed);
                });
            }
            // A waiter that has not begun waiting misses a broadcast by definition; repeat
            // until all have been released.
            while returned.load(Relaxed) < waiters {
                event.notify_all();
                std::thread::yield_now();
            }
        });
        assert!(!event.wait_until(Instant::now()), "{}: a broadcast left a notification behind", entry.name);
    }
}

// ---- Condition variables -------------------------------------------------------------------

/// A bounded queue: a mutex over `R`, and a condvar over `W` for each direction.
struct BoundedQueue<R: RawMutex, W: Wait> {
    items: lock_api::Mutex<R, VecDeque<usize>>,
    not_empty: Condvar<W>,
    not_full: Condvar<W>,
}

const CAPACITY: usize = 4;

/// Producers and consumers (4x CPUs threads in all) pass `total` items through a queue of
/// four: every item arrives exactly once, and the queue never exceeds its capacity.
fn bounded_queue<R, W>(what: &str, items_per_producer: usize)
where
    R: RawMutex + Send + Sync,
    W: Wait,
{
    let _watchdog = Watchdog::new(WATCHDOG_LIMIT, format!("condvar bounded queue over {what} (a lost wake-up?)"));
    let threads = 4 * cpus();
    let (producers, consumers) = (threads / 2, threads - threads / 2);
    let total = producers * items_per_producer;
    let queue = BoundedQueue::<R, W> {
        items: lock_api::Mutex::new(VecDeque::new()),
        not_empty: Condvar::new(),
        not_full: Condvar::new(),
    };
    let taken = AtomicUsize::new(0);
    let received = std::sync::Mutex::new(Vec::with_capacity(total));
    std::thread::scope(|s| {
        for p in 0..producers {
            let queue = &queue;
            s.spawn(move || {
                for i in 0..items_per_producer {
                    let mut items = queue.items.lock();
                    queue.not_full.wait_while(&mut items, |items| items.len() == CAPACITY);
                    items.push_back(p * items_per_producer + i);
                    drop(items);
                    queue.not_empty.notify_one();
                }
            });
        }
        for _ in 0..consumers {
            let (queue, taken, received) = (&queue, &taken, &received);
            s.spawn(move || {
                let mut mine = Vec::new();
                // Claim an item to take before waiting for one, so that consumers stop
                // exactly when all items are claimed.
                while taken.fetch_add(1, Relaxed) < total {
                    let mut items = queue.items.lock();
                    queue.not_empty.wait_while(&mut items, |items| items.is_empty());
                    assert!(items.len() <= CAPACITY, "{} items in a queue of {CAPACITY}", items.len());
                    mine.extend(items.pop_front());
                    drop(items);
                    queue.not_full.notify_one();
                }
                received.lock().unwrap().extend(mine);
            });
        }
    });
    let mut received = received.into_inner().unwrap();
    received.sort_unstable();
    assert!(received.iter().copied().eq(0..total), "{what}: items lost or duplicated");
}

#[test]
fn condvar_bounded_queue_with_every_spinlab_lock() {
    let _serial = serial();
    bounded_queue::<Tas<SpinPark>, SpinPark>("tas:spin-park", 500);
    bounded_queue::<Ttas<SpinPark>, SpinPark>("ttas:spin-park", 500);
    bounded_queue::<Ticket<SpinPark>, Futex>("ticket:spin-park", 500);
    bounded_queue::<Mcs<Futex>, SpinPark>("mcs:futex", 500);
    bounded_queue::<Clh<SpinPark>, Futex>("clh:spin-park", 500);
    bounded_queue::<Fair<Futex>, SpinPark>("fair:futex", 500);
}

#[test]
fn condvar_bounded_queue_with_every_condvar_policy() {
    let _serial = serial();
    struct EveryPolicy;
    impl PolicyVisitor for EveryPolicy {
        fn visit<W: Wait>(&mut self) {
            if W::availability().is_ok() {
                let items = rounds(W::MAY_SLEEP, 4 * cpus(), 500);
                bounded_queue::<spinlab::DefaultRawMutex, W>(&format!("the default mutex, condvar {}", W::NAME), items);
            }
        }
    }
    visit_policies(&mut EveryPolicy);
}

/// The C side's way in: a mutex from the registry, released and re-taken through `wait_on`.
#[test]
fn condvar_waits_with_every_sleeping_registry_lock() {
    let _serial = serial();
    for entry in registry::LOCKS.entries().iter().filter(|e| e.availability.is_ok() && e.may_sleep) {
        let _watchdog = Watchdog::new(WATCHDOG_LIMIT, format!("condvar over registry lock {}", entry.name));
        let lock = entry.build(()).unwrap();
        let condvar = Condvar::<SpinPark>::new();
        let ready = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                lock.lock();
                ready.store(true, Relaxed);
                // SAFETY: this thread holds the lock.
                unsafe { lock.unlock() };
                condvar.notify_one();
            });
            lock.lock();
            while !ready.load(Relaxed) {
                // SAFETY: this thread holds the lock, and holds it again after the wait.
                unsafe { lock.wait_on(&condvar, None) };
                assert!(lock.is_locked(), "{}: the mutex was not taken again", entry.name);
            }
            // SAFETY: held.
            unsafe { lock.unlock() };
        });
    }
}

#[test]
fn condvar_timeouts_report_whether_the_condition_was_met() {
    let _serial = serial();
    let mutex = spinlab::Mutex::new(0u32);
    let condvar = Condvar::<SpinPark>::new();
    let mut count = mutex.lock();
    let deadline = Instant::now() + Duration::from_millis(2);
    assert!(condvar.wait_until(&mut count, deadline).timed_out());
    assert!(Instant::now() >= deadline, "returned before its deadline");
    assert!(condvar.wait_for(&mut count, Duration::from_micros(200)).timed_out());
    drop(count);
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..3 {
                *mutex.lock() += 1;
                condvar.notify_all();
            }
        });
        let mut count = mutex.lock();
        let far = Instant::now() + Duration::from_secs(60);
        let result = condvar.wait_while_until(&mut count, |count| *count < 3, far);
        assert!(!result.timed_out());
        assert_eq!(*count, 3);
    });
}

// ---- Barriers ------------------------------------------------------------------------------

/// `threads` threads through `phases` phases of `barrier`. Before each wait a thread records
/// the phase it is in; after it, it checks that every thread has reached this phase and none
/// is past the next one. Exactly one leader per phase.
fn phases_in_order(name: &str, barrier: &dyn registry::DynBarrier, threads: usize, phases: usize) {
    let reached: Vec<AtomicUsize> = (0..threads).map(|_| AtomicUsize::new(0)).collect();
    let leaders: Vec<AtomicUsize> = (0..phases).map(|_| AtomicUsize::new(0)).collect();
    std::thread::scope(|s| {
        for me in 0..threads {
            let (reached, leaders) = (&reached, &leaders);
            s.spawn(move || {
                for phase in 1..=phases {
                    // Relaxed: the barrier's own ordering must make these visible.
                    reached[me].store(phase, Relaxed);
                    if barrier.wait() {
                        leaders[phase - 1].fetch_add(1, Relaxed);
                    }
                    for (other, at) in reached.iter().enumerate() {
                        let at = at.load(Relaxed);
                        assert!(
                            at == phase || at == phase + 1,
                            "{name}: after phase {phase}, thread {other} is at phase {at}"
                        );
                    }
                }
            });
        }
    });
    for (phase, leaders) in leaders.iter().enumerate() {
        assert_eq!(leaders.load(Relaxed), 1, "{name}: leaders of phase {}", phase + 1);
    }
}

#[test]
fn barriers_three_threads_1000_phases() {
    let _serial = serial();
    for entry in registry::BARRIERS.entries().iter().filter(|e| e.availability.is_ok()) {
        let _watchdog = Watchdog::new(WATCHDOG_LIMIT, format!("{}: 3 threads", entry.name));
        let barrier = entry.build(NonZeroU32::new(3).unwrap()).unwrap();
        phases_in_order(&entry.name, &*barrier, 3, rounds(entry.may_sleep, 3, 1_000));
    }
}

#[test]
fn barriers_oversubscribed_4x_cpus() {
    let _serial = serial();
    let threads = 4 * cpus();
    for entry in registry::BARRIERS.entries().iter().filter(|e| e.availability.is_ok()) {
        let _watchdog = Watchdog::new(WATCHDOG_LIMIT, format!("{}: {threads} threads", entry.name));
        let barrier = entry.build(NonZeroU32::new(threads as u32).unwrap()).unwrap();
        assert_eq!(barrier.parties(), threads);
        phases_in_order(&entry.name, &*barrier, threads, rounds(entry.may_sleep, threads, 400));
    }
}

#[test]
fn a_barrier_for_no_thread_is_an_error() {
    assert!(spinlab::Barrier::<Futex>::new(0).is_err());
    assert!(NonZeroU32::new(0).is_none(), "the registry takes a NonZeroU32");
}

// ---- Reader-writer locks -------------------------------------------------------------------

/// Two words a writer sets one after the other; a reader that sees them differ saw half a
/// write.
struct Pair(UnsafeCell<(u64, u64)>);
// SAFETY: written under the exclusive lock, read under a shared one: a broken lock shows up as
// a torn pair or a failed assertion on `inside`.
unsafe impl Sync for Pair {}

const WRITER_INSIDE: usize = 1 << 20;

/// Readers and writers (4x CPUs threads in all): no reader or writer is ever inside beside a
/// writer, readers never see half a write, and the final count is exact.
fn exclusion(name: &str, lock: &dyn DynRwLock, may_sleep: bool) {
    let threads = 4 * cpus();
    let writers = threads / 4;
    let per_thread = rounds(may_sleep, threads, 1_000);
    let pair = Pair(UnsafeCell::new((0, 0)));
    let inside = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (pair, inside) = (&pair, &inside);
            s.spawn(move || {
                for i in 0..per_thread {
                    if t < writers {
                        lock.lock_exclusive();
                        let before = inside.fetch_add(WRITER_INSIDE, Relaxed);
                        assert_eq!(before, 0, "{name}: a writer came in beside {before:#x}");
                        // SAFETY: exclusive lock held.
                        unsafe {
                            let p = pair.0.get();
                            core::ptr::write_volatile(&mut (*p).0, (*p).0 + 1);
                            if i % 8 == 0 {
                                std::hint::spin_loop();
                            }
                            core::ptr::write_volatile(&mut (*p).1, (*p).1 + 1);
                        }
                        inside.fetch_sub(WRITER_INSIDE, Relaxed);
                        // SAFETY: held.
                        unsafe { lock.unlock_exclusive() };
                    } else {
                        lock.lock_shared();
                        let before = inside.fetch_add(1, Relaxed);
                        assert!(before < WRITER_INSIDE, "{name}: a reader came in beside a writer");
                        // SAFETY: shared lock held.
                        let (a, b) = unsafe {
                            let p = pair.0.get();
                            (core::ptr::read_volatile(&(*p).0), core::ptr::read_volatile(&(*p).1))
                        };
                        assert_eq!(a, b, "{name}: a reader saw half a write");
                        inside.fetch_sub(1, Relaxed);
                        // SAFETY: held.
                        unsafe { lock.unlock_shared() };
                    }
                }
            });
        }
    });
    let writes = (writers * per_thread) as u64;
    assert_eq!(pair.0.into_inner(), (writes, writes), "{name}: writes lost");
}

#[test]
fn rwlocks_writers_exclude_writers_and_readers() {
    let _serial = serial();
    for entry in registry::RWLOCKS.entries().iter().filter(|e| e.availability.is_ok()) {
        let _watchdog = Watchdog::new(WATCHDOG_LIMIT, format!("{}: exclusion", entry.name));
        exclusion(&entry.name, &*entry.build(()).unwrap(), entry.may_sleep);
    }
}

#[test]
fn rwlocks_let_two_readers_hold_the_lock_at_once() {
    let _serial = serial();
    for entry in registry::RWLOCKS.entries().iter().filter(|e| e.availability.is_ok()) {
        let _watchdog =
            Watchdog::new(WATCHDOG_LIMIT, format!("{}: a second reader could not get in beside the first", entry.name));
        let lock = entry.build(()).unwrap();
        let both_inside = std::sync::Barrier::new(2);
        let first_inside = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                first_inside.wait();
                lock.lock_shared();
                both_inside.wait();
                // SAFETY: held.
                unsafe { lock.unlock_shared() };
            });
            lock.lock_shared();
            first_inside.wait();
            // The second reader takes the lock while this one holds it: if readers excluded
            // each other, neither would reach this barrier.
            both_inside.wait();
            assert!(!lock.try_lock_exclusive(), "{}: a writer got in beside readers", entry.name);
            // SAFETY: held.
            unsafe { lock.unlock_shared() };
        });
    }
}

/// Spinlab's locks that promise writers are not starved.
fn writer_safe() -> impl Iterator<Item = &'static registry::RwLockEntry> {
    registry::RWLOCKS.entries().iter().filter(|e| {
        e.availability.is_ok()
            && e.origin == Origin::Spinlab
            && matches!(e.facts.fairness, RwFairness::PhaseFair | RwFairness::WriterPreferring)
    })
}

/// A reader holds the lock; a writer comes and waits; the reader takes a second read lock.
/// A reader-preferring lock grants it (what glibc's default `pthread_rwlock_t` promises, and
/// why the preload library uses one); a lock that kept it out would deadlock here.
///
/// The second read lock is taken only once the writer is seen counted in the lock's state
/// word, which it does before it waits: a writer that is merely slow to start proves nothing.
/// Seeing that needs the lock's own type, so each registered reader-preferring lock is built
/// as `ReaderPref` over its policy.
#[test]
fn a_reader_preferring_lock_lets_a_reader_lock_again_while_a_writer_waits() {
    let _serial = serial();
    let reader_preferring: Vec<_> = registry::RWLOCKS
        .entries()
        .iter()
        .filter(|e| e.availability.is_ok() && e.facts.fairness == RwFairness::ReaderPreferring)
        .collect();
    assert!(!reader_preferring.is_empty());
    for entry in reader_preferring {
        let name = &entry.name;
        assert_eq!(entry.facts.algorithm, "rw-reader", "{name}: this test sees only ReaderPref's writers waiting");
        let policy = entry.policy.expect("spinlab's locks name their policy");
        let mut check = ReadAgainPastACountedWriter { policy, checked: false };
        visit_policies(&mut check);
        assert!(check.checked, "{name}: no policy called {policy}");
    }
}

/// Runs the check above on `ReaderPref<W>` for the policy `W` called `policy`.
struct ReadAgainPastACountedWriter {
    policy: &'static str,
    checked: bool,
}

impl PolicyVisitor for ReadAgainPastACountedWriter {
    fn visit<W: Wait>(&mut self) {
        if W::NAME != self.policy {
            return;
        }
        self.checked = true;
        let name = format!("rw-reader:{}", W::NAME);
        let _watchdog =
            Watchdog::new(WATCHDOG_LIMIT, format!("{name}: a second read lock waited behind a waiting writer"));
        let lock = ReaderPref::<W>::new();
        let first = lock.lock_shared();
        std::thread::scope(|s| {
            s.spawn(|| {
                let held = lock.lock_exclusive();
                // SAFETY: acquired just above.
                unsafe { lock.unlock_exclusive(held) };
            });
            // Counted while this thread reads: the writer is in its wait, or about to sleep.
            while lock.writers_counted() == 0 {
                std::thread::yield_now();
            }
            // A chance for it to get to sleep, too (a correct lock passes however long this is).
            std::thread::sleep(Duration::from_millis(5));
            let second = lock.lock_shared();
            assert_eq!(lock.writers_counted(), 1, "{name}: the writer got in beside a reader");
            // SAFETY: both read locks were taken by this thread.
            unsafe {
                lock.unlock_shared(second);
                lock.unlock_shared(first);
            }
        });
    }
}

/// A reader holds the lock; a writer comes and waits; a reader that comes after the writer must
/// not get in before it. (A reader-preferring lock lets it straight in.)
#[test]
fn a_reader_arriving_after_a_waiting_writer_goes_after_it() {
    let _serial = serial();
    for entry in writer_safe() {
        let name = &entry.name;
        let _watchdog = Watchdog::new(WATCHDOG_LIMIT, format!("{name}: late reader"));
        let lock = entry.build(()).unwrap();
        let order = AtomicUsize::new(0);
        let (writer_at, late_reader_at) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let late_reader_started = AtomicBool::new(false);
        lock.lock_shared();
        std::thread::scope(|s| {
            s.spawn(|| {
                lock.lock_exclusive();
                writer_at.store(order.fetch_add(1, Relaxed) + 1, Relaxed);
                // SAFETY: held.
                unsafe { lock.unlock_exclusive() };
            });
            // Once the writer is waiting, a try at a read lock fails (both locks turn new
            // readers away while a writer waits).
            while lock.try_lock_shared() {
                // SAFETY: just taken.
                unsafe { lock.unlock_shared() };
                std::thread::yield_now();
            }
            s.spawn(|| {
                late_reader_started.store(true, Relaxed);
                lock.lock_shared();
                late_reader_at.store(order.fetch_add(1, Relaxed) + 1, Relaxed);
                // SAFETY: held.
                unsafe { lock.unlock_shared() };
            });
            while !late_reader_started.load(Relaxed) {
                std::thread::yield_now();
            }
            // Give the late reader time to get in if the lock would let it (no timing is
            // asserted: a correct lock keeps it out however long this is).
            std::thread::sleep(Duration::from_millis(5));
            assert_eq!(late_reader_at.load(Relaxed), 0, "{name}: a reader overtook a waiting writer");
            // SAFETY: taken before the scope.
            unsafe { lock.unlock_shared() };
        });
        assert_eq!((writer_at.into_inner(), late_reader_at.into_inner()), (1, 2), "{name}: the writer must go first");
    }
}

/// A stream of readers, more than there are CPUs, keeps the lock read-held almost all the
/// time; a writer must still get in, again and again. With a lock that lets new readers past
/// a waiting writer, the stream starves it and the watchdog fails the test.
#[test]
fn a_writer_is_not_starved_by_a_stream_of_readers() {
    let _serial = serial();
    for entry in writer_safe() {
        let name = &entry.name;
        let _watchdog = Watchdog::new(WATCHDOG_LIMIT, format!("{name}: writer starved by readers"));
        let lock = entry.build(()).unwrap();
        let writer_done = AtomicBool::new(false);
        let writes = rounds(entry.may_sleep, cpus() + 2, 200);
        std::thread::scope(|s| {
            for _ in 0..cpus() + 1 {
                s.spawn(|| {
                    while !writer_done.load(Relaxed) {
                        lock.lock_shared();
                        for _ in 0..20 {
                            std::hint::spin_loop();
                        }
                        // SAFETY: held.
                        unsafe { lock.unlock_shared() };
                    }
                });
            }
            for _ in 0..writes {
                lock.lock_exclusive();
                // SAFETY: held.
                unsafe { lock.unlock_exclusive() };
            }
            writer_done.store(true, Relaxed);
        });
    }
}

#[test]
fn registry_names_and_errors() {
    let one = NonZeroU32::new(1).unwrap();
    assert!(registry::BARRIERS.build("barrier:spin-park", one).is_ok());
    assert!(registry::EVENTS.build("event:futex", ()).is_ok());
    assert!(registry::RWLOCKS.build("rw-phase:pause", ()).is_ok());
    for err in [
        registry::BARRIERS.build("barrier", one).err().map(|e| e.to_string()),
        registry::EVENTS.build("event:", ()).err().map(|e| e.to_string()),
        registry::RWLOCKS.build("rw-writer:", ()).err().map(|e| e.to_string()),
    ] {
        let err = err.expect("a bad name must be an error");
        assert!(err.contains("POLICY") && err.contains("spin-park"), "{err}");
    }
    for entry in registry::BARRIERS.entries().iter().filter(|e| e.availability.is_err()) {
        assert!(matches!(entry.build(one), Err(registry::RegistryError::Unavailable { .. })), "{}", entry.name);
    }
}
