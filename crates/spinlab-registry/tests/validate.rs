#![cfg(not(loom))]
//! Every lock in the registry, through the same checks (Concurrency Kit's `regressions/`
//! driver, with the registry as the adapter): mutual exclusion counted exactly, `try_lock`,
//! timed acquisition, and, for the queue locks, many locks held at once.
//!
//! Timings are never asserted here: only outcomes that a broken lock would get wrong. A
//! broken lock can also hang a test (a timed wait that ignores its deadline, a lost wake-up):
//! a watchdog then fails it, naming the lock and the step, instead of stalling CI.

use lock_api::RawMutex;
use spinlab::lock::{
    Clh, Cna, CnaGated, CnaQueue, Fair, Gated, Hapax, Hmcs, Malthusian, Mcs, McsQueue, Reciprocating, Ticket,
};
use spinlab::wait::{Futex, Spin, SpinPark};
use spinlab_registry::{self as registry, DynMutex, LockEntry};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};
use watchdog::Watchdog;

#[path = "../../spinlab/tests/watchdog/mod.rs"]
mod watchdog;

/// The tests of this file run one at a time: each already starts as many threads as it needs,
/// and overlapping them would oversubscribe the CPUs in ways no test asked for (a spinning
/// FIFO lock whose next owner is preempted waits a whole time slice per hand-over).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Far beyond any step below with a working lock, on a loaded 2-CPU machine, and beyond the
/// 60 s deadlines the timed tests give themselves, so that those fail with their own message.
const WATCHDOG_LIMIT: Duration = Duration::from_secs(90);

/// A watchdog over one step of a test with the lock `entry`.
fn watchdog(entry: &str, step: &str) -> Watchdog {
    Watchdog::new(WATCHDOG_LIMIT, format!("{entry}: {step}"))
}

/// Every lock this CPU can run.
fn available() -> impl Iterator<Item = &'static LockEntry> {
    registry::LOCKS.entries().iter().filter(|e| e.availability.is_ok())
}

/// A counter with no synchronisation of its own: only the lock makes its increments exact.
struct Unprotected(UnsafeCell<u64>);
// SAFETY: accessed only under the lock being tested; a broken lock shows up as a wrong count.
unsafe impl Sync for Unprotected {}

impl Unprotected {
    /// A read-modify-write split in two, with a pause in between on some iterations to widen
    /// the window in which a second holder would lose an update.
    fn increment(&self, i: u64) {
        // SAFETY: called with the lock held (see the type's docs).
        unsafe {
            let value = core::ptr::read_volatile(self.0.get());
            if i.is_multiple_of(16) {
                for _ in 0..50 {
                    core::hint::spin_loop();
                }
            }
            core::ptr::write_volatile(self.0.get(), value + 1);
        }
    }
}

/// Spinning queue locks (and ticket) hand the lock to waiters in order, so with more threads
/// than CPUs a preempted waiter stalls everyone behind it for a time slice; oversubscribed
/// runs use fewer acquisitions for them to keep the suite short. Every waiter still waits.
/// `cna` and `hmcs` are not FIFO, but ungated they hand the lock to a chosen waiter just as
/// those do (`hands_over`).
fn iterations_per_thread(entry: &LockEntry, threads: usize) -> u64 {
    let oversubscribed = threads > cpus();
    match (oversubscribed, entry.facts.hands_over && !entry.may_sleep) {
        (false, _) => 4_000,
        (true, false) => 1_000,
        (true, true) => 16,
    }
}

fn hammer(entry: &LockEntry, threads: usize) {
    let _watchdog = watchdog(&entry.name, &format!("{threads} threads taking the lock in turn"));
    let started = Instant::now();
    let lock = entry.build(()).unwrap();
    let counter = Unprotected(UnsafeCell::new(0));
    let per_thread = iterations_per_thread(entry, threads);
    let start = Barrier::new(threads);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                start.wait();
                for i in 0..per_thread {
                    lock.lock();
                    counter.increment(i);
                    // SAFETY: locked just above, on this thread.
                    unsafe { lock.unlock() };
                }
            });
        }
    });
    assert!(!lock.is_locked(), "{}: left locked", entry.name);
    assert_eq!(
        counter.0.into_inner(),
        per_thread * threads as u64,
        "{}: lost updates: mutual exclusion broken",
        entry.name
    );
    eprintln!("{:>20} x{threads}: {:?}", entry.name, started.elapsed());
}

#[test]
fn mutual_exclusion_two_threads() {
    let _serial = serial();
    for entry in available() {
        hammer(entry, 2);
    }
}

#[test]
fn mutual_exclusion_oversubscribed_8x_cpus() {
    let _serial = serial();
    for entry in available() {
        hammer(entry, 8 * cpus());
    }
}

#[test]
fn try_lock_fails_while_held_and_succeeds_when_free() {
    let _serial = serial();
    for entry in available() {
        let _watchdog = watchdog(&entry.name, "try_lock on the held lock, then lock on the free one");
        let lock = entry.build(()).unwrap();
        assert!(!lock.is_locked(), "{}", entry.name);
        assert!(lock.try_lock(), "{}: free lock refused", entry.name);
        assert!(lock.is_locked(), "{}", entry.name);
        assert!(!lock.try_lock(), "{}: taken twice by try_lock", entry.name);
        // Another thread must be refused as well (some locks are recursive per thread).
        std::thread::scope(|s| {
            s.spawn(|| assert!(!lock.try_lock(), "{}: taken by a second thread", entry.name));
        });
        // SAFETY: held by this thread.
        unsafe { lock.unlock() };
        assert!(lock.try_lock(), "{}: not free after unlock", entry.name);
        // SAFETY: held by this thread.
        unsafe { lock.unlock() };
        lock.lock();
        // SAFETY: held by this thread.
        unsafe { lock.unlock() };
    }
}

/// A timed acquisition of a lock another thread holds must give up (no precision asserted,
/// only that it returns after its deadline) and leave the lock consistent: the holder can
/// release it, and afterwards it can be taken, timed or not, and still excludes.
#[test]
fn timed_lock_expires_and_leaves_the_lock_consistent() {
    let _serial = serial();
    for entry in available() {
        let lock = entry.build(()).unwrap();
        let held = AtomicBool::new(false);
        let release = AtomicBool::new(false);
        // A timed lock that ignores its deadline waits here for ever: the holder lets go only
        // once both timed waits have given up.
        let timing_out = watchdog(&entry.name, "two timed waits on a held lock, with deadlines 5 and 15 ms away");
        std::thread::scope(|s| {
            s.spawn(|| {
                lock.lock();
                held.store(true, Ordering::Release);
                while !release.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
                // SAFETY: locked by this thread.
                unsafe { lock.unlock() };
            });
            while !held.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            // Two waiters time out at once, so queue locks see abandonment with a
            // predecessor and a successor.
            let second = s.spawn(|| {
                let deadline = Instant::now() + Duration::from_millis(15);
                assert!(!lock.try_lock_until(deadline), "{}: timed lock acquired a held lock", entry.name);
                assert!(Instant::now() >= deadline, "{}: gave up before the deadline", entry.name);
            });
            let deadline = Instant::now() + Duration::from_millis(5);
            assert!(!lock.try_lock_until(deadline), "{}: timed lock acquired a held lock", entry.name);
            assert!(Instant::now() >= deadline, "{}: gave up before the deadline", entry.name);
            second.join().unwrap();
            // Both waiters are gone; only now may the holder release.
            release.store(true, Ordering::Release);
        });
        drop(timing_out);
        let _watchdog = watchdog(&entry.name, "taking the lock after the time-outs, timed and by 3 threads");
        assert!(
            lock.try_lock_until(Instant::now() + Duration::from_secs(10)),
            "{}: free lock not acquired by a timed lock after time-outs",
            entry.name
        );
        // SAFETY: held by this thread.
        unsafe { lock.unlock() };
        hammer_existing(entry, &*lock, 3);
    }
}

/// Mutual exclusion on a lock that already went through other scenarios.
fn hammer_existing(entry: &LockEntry, lock: &dyn DynMutex, threads: usize) {
    let counter = Unprotected(UnsafeCell::new(0));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for i in 0..500 {
                    lock.lock();
                    counter.increment(i);
                    // SAFETY: locked just above.
                    unsafe { lock.unlock() };
                }
            });
        }
    });
    assert_eq!(counter.0.into_inner(), 500 * threads as u64, "{}", entry.name);
}

/// Timed waiters racing real hand-overs: some acquire, some time out, and the count of
/// successful critical sections must still be exact.
///
/// Which of the racers' timed waits time out depends on the schedule, so beside them one
/// waiter meets both outcomes by construction, while the racers queue: its first wait must
/// time out (the lock is held until it has given up), its second must succeed (the lock is
/// let go while it waits, long before its deadline).
#[test]
fn timed_waiters_racing_hand_overs_keep_exclusion() {
    const RACERS: usize = 4;
    let _serial = serial();
    for entry in available() {
        let name = &entry.name;
        let _watchdog = watchdog(name, "timed waiters racing hand-overs");
        let lock = entry.build(()).unwrap();
        let counter = Unprotected(UnsafeCell::new(0));
        let acquired = AtomicUsize::new(0);
        let (held_past_the_deadline, gave_up) = (AtomicBool::new(false), AtomicBool::new(false));
        let (held_again, waiting) = (AtomicBool::new(false), AtomicBool::new(false));
        // The racers queue behind the held lock; where they, the waiter and this thread
        // outnumber the CPUs, a spinning FIFO lock hands over to preempted waiters, a time
        // slice each (see `iterations_per_thread`), so it gets fewer rounds.
        let rounds = if entry.facts.fair && !entry.may_sleep && RACERS + 2 > cpus() { 16 } else { 300 };
        let (timed_out, timed_acquired) = std::thread::scope(|s| {
            for t in 0..RACERS as u64 {
                let (lock, counter, acquired) = (&lock, &counter, &acquired);
                s.spawn(move || {
                    for i in 0..rounds {
                        let ok = if (i + t) % 2 == 0 {
                            lock.try_lock_until(Instant::now() + Duration::from_micros(20 + i % 50))
                        } else {
                            lock.lock();
                            true
                        };
                        if ok {
                            // SAFETY: acquired above.
                            unsafe { count_and_release(&**lock, counter, acquired, i) };
                        }
                    }
                });
            }
            let waiter = s.spawn(|| {
                while !held_past_the_deadline.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
                let timed_out = !lock.try_lock_until(Instant::now() + Duration::from_millis(1));
                if !timed_out {
                    // SAFETY: the lock says this thread holds it (wrongly: asserted below).
                    unsafe { count_and_release(&*lock, &counter, &acquired, 0) };
                }
                gave_up.store(true, Ordering::Release);
                while !held_again.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
                waiting.store(true, Ordering::Release);
                let timed_acquired = lock.try_lock_until(Instant::now() + Duration::from_secs(60));
                if timed_acquired {
                    // SAFETY: acquired just above.
                    unsafe { count_and_release(&*lock, &counter, &acquired, 1) };
                }
                (timed_out, timed_acquired)
            });
            lock.lock();
            held_past_the_deadline.store(true, Ordering::Release);
            // Held until the waiter gives up. One still waiting a minute after its 1 ms
            // deadline never will: the lock goes then, so that the test fails instead of hanging.
            let patience = Instant::now() + Duration::from_secs(60);
            while !gave_up.load(Ordering::Acquire) && Instant::now() < patience {
                std::thread::yield_now();
            }
            // SAFETY: acquired above, on this thread.
            unsafe { count_and_release(&*lock, &counter, &acquired, 2) };
            // (A waiter let in only now returns now.)
            while !gave_up.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            lock.lock();
            held_again.store(true, Ordering::Release);
            while !waiting.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            // A chance for the waiter to be inside its wait when the lock goes (it succeeds
            // however long this is).
            std::thread::sleep(Duration::from_millis(2));
            // SAFETY: acquired above, on this thread.
            unsafe { count_and_release(&*lock, &counter, &acquired, 3) };
            waiter.join().unwrap()
        });
        assert!(timed_out, "{name}: a timed lock acquired a lock held past its deadline");
        assert!(timed_acquired, "{name}: a timed lock gave up though the lock was let go long before its deadline");
        assert!(!lock.is_locked(), "{name}");
        assert_eq!(counter.0.into_inner(), acquired.load(Ordering::Relaxed) as u64, "{name}");
    }
}

/// One counted critical section, then the release.
///
/// # Safety
/// The calling thread holds `lock`.
unsafe fn count_and_release(lock: &dyn DynMutex, counter: &Unprotected, acquired: &AtomicUsize, i: u64) {
    counter.increment(i);
    acquired.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the caller holds the lock.
    unsafe { lock.unlock() };
}

/// The classic MCS lock and CLH hold a queue node per held lock (spinlab's `Mcs` one per
/// waiter): one thread holding 64 at once, released in reverse and in acquisition order,
/// with another thread contending on each.
fn nested<R: RawMutex + Sync>(name: &str) {
    let _watchdog = watchdog(name, "64 locks held at once, then taken hand over hand");
    let locks: Vec<R> = (0..64).map(|_| R::INIT).collect();
    for release_in_order in [false, true] {
        let mut guards = Vec::new();
        for lock in &locks {
            guards.push(lock.lock());
        }
        assert!(locks.iter().all(|l| l.is_locked()), "{name}");
        std::thread::scope(|s| {
            s.spawn(|| {
                for lock in &locks {
                    assert!(lock.try_lock().is_none(), "{name}: nested lock taken by another thread");
                }
            });
        });
        let order: Vec<usize> = if release_in_order { (0..64).collect() } else { (0..64).rev().collect() };
        let mut guards: Vec<Option<R::Guard>> = guards.into_iter().map(Some).collect();
        for i in order {
            // SAFETY: each guard comes from its own lock, held by this thread.
            unsafe { locks[i].unlock(guards[i].take().unwrap()) };
        }
        assert!(locks.iter().all(|l| !l.is_locked()), "{name}");
    }
    // Hand-over-hand along the chain, by two threads at once.
    let counter = Unprotected(UnsafeCell::new(0));
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for round in 0..50 {
                    let mut held = locks[0].lock();
                    for i in 1..locks.len() {
                        let next = locks[i].lock();
                        // SAFETY: `held` is the guard of locks[i - 1], held by this thread.
                        unsafe { locks[i - 1].unlock(held) };
                        held = next;
                    }
                    counter.increment(round);
                    // SAFETY: the guard of the last lock.
                    unsafe { locks[63].unlock(held) };
                }
            });
        }
    });
    assert_eq!(counter.0.into_inner(), 100, "{name}");
}

#[test]
fn one_thread_holds_64_queue_locks_and_goes_hand_over_hand() {
    let _serial = serial();
    nested::<Mcs<Spin>>("mcs:spin");
    nested::<Mcs<SpinPark>>("mcs:spin-park");
    nested::<McsQueue<Spin>>("the MCS queue over spin");
    nested::<McsQueue<Futex>>("the MCS queue over futex");
    nested::<Clh<Spin>>("clh:spin");
    nested::<Clh<Futex>>("clh:futex");
    nested::<Cna<Spin>>("cna:spin");
    nested::<Cna<Futex>>("cna:futex");
    nested::<Hmcs<Spin>>("hmcs:spin");
    nested::<Hmcs<Futex>>("hmcs:futex");
    nested::<CnaQueue<Futex>>("the CNA queue over futex");
    nested::<CnaGated<Spin>>("cna-gated:spin");
    nested::<CnaGated<Futex>>("cna-gated:futex");
    nested::<Ticket<SpinPark>>("ticket:spin-park");
    nested::<Fair<SpinPark>>("fair:spin-park");
    nested::<Reciprocating<Spin>>("reciprocating:spin");
    nested::<Reciprocating<Futex>>("the reciprocating lock alone over futex");
    nested::<Gated<Reciprocating<Futex>, Futex>>("reciprocating:futex");
    nested::<Hapax<SpinPark>>("the hapax lock alone over spin-park");
    nested::<Gated<Hapax<SpinPark>, SpinPark>>("hapax:spin-park");
    nested::<Malthusian<Mcs<Futex>, Futex>>("malthusian:futex");
}

/// Locks `lock`, notes `who` in `order` while holding it, and releases.
fn take_turn<L: RawMutex, T>(lock: &L, order: &std::sync::Mutex<Vec<T>>, who: T) {
    let guard = lock.lock();
    order.lock().unwrap().push(who);
    // SAFETY: locked just above by this thread.
    unsafe { lock.unlock(guard) };
}

/// MCS's bypass bound rests on one rule: an attempt that begins while a waiter is queued lines
/// up behind it. Here the holder sees the other thread queued, releases and locks again at
/// once: it must get the lock after that thread, every round. A lock that let the releaser
/// barge (a test-and-set lock, or an MCS fast path that ignored the queue) usually wins that
/// race, as the releaser's cache still holds the word. Conditions, not timings.
fn releaser_queues_behind_waiter<W: spinlab::wait::Wait>() {
    let name = format!("mcs:{}", W::NAME);
    let _watchdog = watchdog(&name, "a releaser that locks again queues behind the waiter");
    let lock = Mcs::<W>::new();
    for round in 0..200 {
        let order = std::sync::Mutex::new(Vec::with_capacity(2));
        let held = lock.lock();
        std::thread::scope(|s| {
            s.spawn(|| take_turn(&lock, &order, "waiter"));
            while !lock.has_queue() {
                std::thread::yield_now();
            }
            // SAFETY: locked above by this thread.
            unsafe { lock.unlock(held) };
            take_turn(&lock, &order, "releaser");
        });
        assert_eq!(order.into_inner().unwrap(), ["waiter", "releaser"], "{name}, round {round}");
    }
    assert!(!lock.is_locked() && !lock.has_queue(), "{name}");
}

#[test]
fn mcs_releaser_that_locks_again_queues_behind_the_waiter() {
    let _serial = serial();
    releaser_queues_behind_waiter::<Spin>();
    releaser_queues_behind_waiter::<SpinPark>();
    releaser_queues_behind_waiter::<Futex>();
}

/// A FIFO lock's bound: waiters are served in the order they queued. The holder lets three
/// threads queue one after another (each starts only once the lock shows the one before it
/// queued: `mark` takes a snapshot of the queue, `moved` says whether a thread has queued
/// since) and then releases: they must get the lock in that order, every round. A lock that
/// served its waiters in any other order, or let one in ahead of another, fails; with the
/// holder keeping the lock until all three wait, the outcome does not depend on timing.
fn served_in_queue_order<L: RawMutex + Sync>(
    name: &str,
    lock: &L,
    mark: impl Fn(&L) -> usize,
    moved: impl Fn(&L, usize) -> bool,
) {
    served_in_order(name, lock, mark, moved, [0, 1, 2]);
}

/// [`served_in_queue_order`] for a lock whose documented order is `expected` (the waiters
/// numbered in the order they queued).
fn served_in_order<L: RawMutex + Sync>(
    name: &str,
    lock: &L,
    mark: impl Fn(&L) -> usize,
    moved: impl Fn(&L, usize) -> bool,
    expected: [u32; 3],
) {
    let _watchdog = watchdog(name, "three waiters served in the order they queued");
    for round in 0..100 {
        let order = std::sync::Mutex::new(Vec::with_capacity(3));
        let held = lock.lock();
        std::thread::scope(|s| {
            for me in 0..3u32 {
                let seen = mark(lock);
                let order = &order;
                s.spawn(move || take_turn(lock, order, me));
                while !moved(lock, seen) {
                    std::thread::yield_now();
                }
            }
            // SAFETY: locked above by this thread.
            unsafe { lock.unlock(held) };
        });
        assert_eq!(order.into_inner().unwrap(), expected, "{name}, round {round}");
    }
    assert!(!lock.is_locked(), "{name}");
}

/// Ticket's queue is its tickets: a thread has queued once it is counted among the waiters.
fn ticket_serves_in_ticket_order<W: spinlab::wait::Wait>() {
    let lock = Ticket::<W>::new();
    let waiters = |l: &Ticket<W>| l.waiters() as usize;
    served_in_queue_order(&format!("ticket:{}", W::NAME), &lock, waiters, |l, seen| waiters(l) > seen);
    assert_eq!(lock.waiters(), 0);
}

/// CLH's queue is its tail: a thread has queued once the tail has moved to its node.
fn clh_serves_in_queue_order<W: spinlab::wait::Wait>() {
    let lock = Clh::<W>::new();
    let held = lock.lock();
    assert!(!lock.has_queue_behind(&held), "nobody waits yet");
    std::thread::scope(|s| {
        s.spawn(|| take_turn(&lock, &std::sync::Mutex::new(Vec::new()), ()));
        while !lock.has_queue_behind(&held) {
            std::thread::yield_now();
        }
        // SAFETY: locked above by this thread.
        unsafe { lock.unlock(held) };
    });
    served_in_queue_order(&format!("clh:{}", W::NAME), &lock, Clh::last_queued, Clh::queued_since);
}

/// Hapax's queue is the order of its swaps: a thread has queued once the last arrival's value
/// has changed. The lock alone, over every policy: the registry builds it so over the spin
/// policies, and as the gate of a bounded word (whose queued waiters keep this order) over
/// the others.
fn hapax_serves_in_arrival_order<W: spinlab::wait::Wait>() {
    let lock = Hapax::<W>::new();
    let last = |l: &Hapax<W>| l.last_arrival() as usize;
    served_in_queue_order(&format!("the hapax lock alone over {}", W::NAME), &lock, last, |l, seen| last(l) != seen);
}

#[test]
fn hapax_lock_serves_waiters_in_arrival_order() {
    let _serial = serial();
    hapax_serves_in_arrival_order::<Spin>();
    hapax_serves_in_arrival_order::<SpinPark>();
    hapax_serves_in_arrival_order::<Futex>();
}

/// Reciprocating's documented order: the arrivals that a release finds are detached at once
/// and admitted newest first. The holder, which found the lock free, lets three threads push
/// onto the stack one after another and then releases: they must get the lock in the reverse
/// of their arrival, every round. A FIFO hand-over, or one that admitted only the newest and
/// let the others wait for a later detach behind a newcomer, fails. The lock alone, as for
/// Hapax: over the policies whose waiters give their CPU away this is its gate's order.
fn reciprocating_admits_newest_first<W: spinlab::wait::Wait>() {
    let lock = Reciprocating::<W>::new();
    let last = |l: &Reciprocating<W>| l.last_arrival() as usize;
    let name = format!("the reciprocating lock alone over {}", W::NAME);
    served_in_order(&name, &lock, last, |l, seen| last(l) != seen, [2, 1, 0]);
}

#[test]
fn reciprocating_lock_admits_a_detached_stack_newest_first() {
    let _serial = serial();
    reciprocating_admits_newest_first::<Spin>();
    reciprocating_admits_newest_first::<SpinPark>();
    reciprocating_admits_newest_first::<Futex>();
}

#[test]
fn clh_lock_serves_waiters_in_queue_order() {
    let _serial = serial();
    clh_serves_in_queue_order::<Spin>();
    clh_serves_in_queue_order::<SpinPark>();
    clh_serves_in_queue_order::<Futex>();
}

#[test]
fn ticket_lock_serves_waiters_in_ticket_order() {
    let _serial = serial();
    ticket_serves_in_ticket_order::<Spin>();
    ticket_serves_in_ticket_order::<SpinPark>();
    ticket_serves_in_ticket_order::<Futex>();
}

/// The fair lock hands over round-robin (seed 003): with three threads that each wait until
/// the other two are queued before releasing, the lock can never go back to its releaser, and
/// once all three hold slots every hand-over follows the slots' cyclic order, so any three
/// consecutive holders are three different threads. Conditions, not timings: the holder waits for the queue it observes.
fn round_robin<W: spinlab::wait::Wait>() {
    let _watchdog = watchdog(&format!("fair:{}", W::NAME), "three threads handing over round-robin");
    let lock = Fair::<W>::new();
    let rounds = 100;
    let order = std::sync::Mutex::new(Vec::with_capacity(3 * rounds));
    let active = AtomicUsize::new(3);
    std::thread::scope(|s| {
        for me in 0..3usize {
            let (lock, order, active) = (&lock, &order, &active);
            s.spawn(move || {
                for _ in 0..rounds {
                    let guard = lock.lock();
                    order.lock().unwrap().push(me);
                    while lock.waiters() + 1 < active.load(Ordering::Acquire) as u32 {
                        std::thread::yield_now();
                    }
                    // SAFETY: locked above by this thread.
                    unsafe { lock.unlock(guard) };
                }
                active.fetch_sub(1, Ordering::AcqRel);
            });
        }
    });
    let order = order.into_inner().unwrap();
    assert_eq!(order.len(), 3 * rounds);
    // While all three take part (the first 3 * (rounds - 1) turns), turns rotate, once each
    // thread has waited and so holds a slot. The round-robin is among slot holders: the first
    // holder may have taken the lock without waiting, and the slot it claims at its second
    // acquisition can fall anywhere in the cycle (slots freed by the threads of tests that ran
    // before leave gaps), so the first turns may read [1, 0, 1].
    for window in order[3..3 * (rounds - 1)].windows(3) {
        assert!(
            window[0] != window[1] && window[1] != window[2] && window[0] != window[2],
            "fair:{}: hand-over not round-robin: {window:?} in {:?}",
            W::NAME,
            &order[..30]
        );
    }
}

#[test]
fn fair_lock_hands_over_round_robin_to_queued_waiters() {
    let _serial = serial();
    round_robin::<Spin>();
    round_robin::<Futex>();
    round_robin::<SpinPark>();
}

#[test]
fn the_default_mutex_is_documented_adaptive_pause_yield_park() {
    let _serial = serial();
    let m = spinlab::Mutex::new(5);
    *m.lock() += 1;
    assert_eq!(*m.lock(), 6);
    assert_eq!(
        core::any::type_name::<spinlab::DefaultRawMutex>(),
        core::any::type_name::<spinlab::lock::Adaptive<spinlab::wait::PauseYieldPark>>()
    );
    assert_eq!(size_of::<spinlab::DefaultRawMutex>(), 8, "the word and the gate's 4-byte tail");
    let entry = spinlab_registry::LOCKS.info("adaptive:pause-yield-park").unwrap();
    // The registry builds the lock this type is on this machine, chosen once: the word alone
    // on a few CPUs; on more the gated word, with its guard kept beside it (the wake-up its
    // gate may owe until the release, `spinlab::lock::Owed`, 8 bytes).
    let guard = size_of::<spinlab::lock::Owed<spinlab::wait::PauseYieldPark>>();
    let (size, align) = if spinlab::sys::cpu::process_cpus() > spinlab::lock::DEFAULT_CROWD_CPUS {
        (size_of::<spinlab::DefaultRawMutex>() + guard, 8)
    } else {
        (size_of::<spinlab::lock::Bounded<spinlab::wait::PauseYieldPark>>(), 4)
    };
    assert_eq!(
        (entry.facts.ops.size, entry.facts.ops.align),
        (size, align),
        "the registry builds the lock of this machine"
    );
    let crowd = spinlab::lock::DEFAULT_CROWD_CPUS.to_string();
    assert!(entry.facts.bound.starts_with(&format!("on up to {crowd} CPUs")), "{}", entry.facts.bound);
    let timed = m.try_lock_for(Duration::from_millis(1));
    assert!(timed.is_some());
}

/// Unknown and unavailable names are errors, never a silent substitute.
#[test]
fn bad_names_are_errors() {
    let _serial = serial();
    for bad in ["", "ttas", "ttas:", ":spin", "ttas:spin:extra", "TTAS:SPIN", "mutex"] {
        assert!(registry::LOCKS.build(bad, ()).is_err(), "`{bad}` was accepted");
    }
    for entry in registry::LOCKS.entries().iter().filter(|e| e.availability.is_err()) {
        let err = entry.build(()).err().unwrap().to_string();
        assert!(err.contains("unavailable") && err.contains(&entry.name), "{err}");
    }
}
