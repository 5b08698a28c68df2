#![cfg(not(loom))]
//! The fair lock past its slots. Slots are process-wide, so these tests have a process of
//! their own (this file) and run one at a time.
//!
//! Timings are never asserted: the first test waits for a state that only slots given back can
//! produce, and fails if every holder passed without producing it; the second counts a
//! sleeper's context switches, which a thread that polls makes by the thousand and a thread
//! asleep in the kernel does not make at all, then needs it woken; the third counts exactly.

use lock_api::{RawMutex, RawMutexTimed};
use spinlab::lock::{Fair, Gated, FAIR_SLOTS};
use spinlab::wait::{Futex, SpinPark};
use std::cell::UnsafeCell;
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use watchdog::Watchdog;

mod watchdog;

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Polls `done` for up to `limit`; whether it came true.
fn within(limit: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    done()
}

/// `FAIR_SLOTS` threads take every slot and queue on a held lock; one more finds none. Then
/// the lock is handed from holder to holder, each holding it until told to let go. A holder
/// that was granted the lock while the last wanted a slot gives its slot back, and the last
/// takes it and queues: the word then shows one waiter more than the first have left unserved,
/// which no thread could make if they kept their slots. The threads stay alive to the end, so no slot
/// comes free by a thread's exit.
#[test]
fn a_slot_given_back_puts_a_thread_past_the_slots_in_the_round_robin() {
    let _serial = serial();
    let _watchdog = Watchdog::new(Duration::from_secs(120), "fair lock past its slots".into());
    let lock = Arc::new(Fair::<SpinPark>::new());
    let threads = FAIR_SLOTS + 1;
    let end = Arc::new(Barrier::new(threads + 1));
    let (held_tx, held) = mpsc::channel::<usize>();
    let mut go = Vec::new();
    let mut handles = Vec::new();
    let guard = lock.lock();
    let spawn = |id: usize, go: &mut Vec<mpsc::Sender<()>>, handles: &mut Vec<_>| {
        let (go_tx, go_rx) = mpsc::channel::<()>();
        go.push(go_tx);
        let (lock, end, held_tx) = (lock.clone(), end.clone(), held_tx.clone());
        handles.push(std::thread::spawn(move || {
            let guard = lock.lock();
            held_tx.send(id).unwrap();
            go_rx.recv().unwrap();
            // SAFETY: held through `guard`.
            unsafe { lock.unlock(guard) };
            end.wait();
        }));
    };
    for id in 0..FAIR_SLOTS {
        spawn(id, &mut go, &mut handles);
    }
    assert!(within(Duration::from_secs(60), || lock.waiters() as usize == FAIR_SLOTS), "{} queued", lock.waiters());
    let past = FAIR_SLOTS;
    spawn(past, &mut go, &mut handles);
    // SAFETY: held through `guard`.
    unsafe { lock.unlock(guard) };
    let mut joined_while_held = false;
    let mut order = Vec::new();
    for _ in 0..threads {
        let holder = held.recv().unwrap();
        order.push(holder);
        if holder != past && !joined_while_held {
            // The holder holds until told. Of the first threads, those not yet served still queue;
            // one more bit is the thread past the slots, in a slot given back.
            let queued = FAIR_SLOTS - order.len();
            joined_while_held = within(Duration::from_millis(500), || lock.waiters() as usize == queued + 1);
        }
        go[holder].send(()).unwrap();
    }
    end.wait();
    for handle in handles {
        handle.join().unwrap();
    }
    assert!(joined_while_held, "the thread past the slots never queued while a holder held; order {order:?}");
    assert!(order.contains(&past));
    assert!(!lock.is_locked());
}

/// Waits up to `limit` for thread `tid` of this process to be asleep (state `S` in /proc).
fn assert_asleep_within(tid: i64, limit: Duration) {
    let state = || std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
    let asleep = || state().rsplit(')').next().unwrap().trim_start().starts_with('S');
    assert!(within(limit, asleep), "thread {tid} never slept: {}", state());
}

/// Starts `threads` threads that each take and release `lock`, held by the caller, and waits
/// until all of them queue in it (with the slots they claimed on the way).
fn queue_on(lock: &Arc<Fair<Futex>>, threads: usize) -> Vec<std::thread::JoinHandle<()>> {
    let queued = (0..threads)
        .map(|_| {
            let lock = lock.clone();
            std::thread::spawn(move || {
                let guard = lock.lock();
                // SAFETY: held through `guard`.
                unsafe { lock.unlock(guard) };
            })
        })
        .collect();
    assert!(
        within(Duration::from_secs(60), || lock.waiters() as usize == threads),
        "{} of {threads} queued",
        lock.waiters()
    );
    queued
}

/// This thread's id, for /proc.
fn gettid() -> i64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) }
}

/// A thread's voluntary context switches so far, from /proc.
fn voluntary_switches(tid: i64) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("voluntary_ctxt_switches:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Every slot is taken by threads queued on another lock, so a thread that waits for a held
/// lock has none: it must sleep in the kernel (its policy sleeps at once), not poll, and the
/// release that frees its lock must wake it, though its word holds no waiter bit.
#[test]
fn a_waiter_without_a_slot_sleeps_until_its_lock_is_free() {
    let _serial = serial();
    let _watchdog = Watchdog::new(Duration::from_secs(120), "fair lock: a sleeper without a slot".into());
    let elsewhere = Arc::new(Fair::<Futex>::new());
    let lock = Arc::new(Fair::<Futex>::new());
    let held_elsewhere = elsewhere.lock();
    let queued = queue_on(&elsewhere, FAIR_SLOTS);
    let held = lock.lock();
    let (tid_tx, tid) = mpsc::channel::<i64>();
    let (got_tx, got) = mpsc::channel::<()>();
    let waiter = {
        let lock = lock.clone();
        std::thread::spawn(move || {
            tid_tx.send(gettid()).unwrap();
            let guard = lock.lock();
            got_tx.send(()).unwrap();
            // SAFETY: held through `guard`.
            unsafe { lock.unlock(guard) };
        })
    };
    let tid = tid.recv().unwrap();
    assert_eq!(lock.waiters(), 0, "the waiter found no slot, so it sets no waiter bit");
    // Asleep: its state is S and it makes no context switch for a while.
    assert_asleep_within(tid, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(50));
    let before = voluntary_switches(tid);
    std::thread::sleep(Duration::from_millis(200));
    let switches = voluntary_switches(tid) - before;
    // A waiter that polled, napping 50 µs at a time, would switch hundreds of times in 200 ms.
    assert!(switches <= 20, "the waiter without a slot polled: {switches} voluntary context switches in 200 ms");
    assert!(got.try_recv().is_err());
    // SAFETY: held through `held`.
    unsafe { lock.unlock(held) };
    got.recv().unwrap();
    waiter.join().unwrap();
    // SAFETY: held through `held_elsewhere`.
    unsafe { elsewhere.unlock(held_elsewhere) };
    for thread in queued {
        thread.join().unwrap();
    }
    assert!(!lock.is_locked() && !elsewhere.is_locked());
}

/// A thread holding a slot whose timed wait runs out while another thread sleeps without one
/// gives its slot back, and holds no lock whose release would make the wake-up call: it must
/// make it at once. Every slot is taken by threads queued on one lock, one of them with a
/// deadline; a thread without a slot sleeps waiting for a second lock. When the deadline
/// passes, the sleeper must take the freed slot and queue with it, while the thread that timed
/// out stays alive and does nothing more.
#[test]
fn a_slot_given_back_by_a_timed_out_waiter_wakes_a_sleeper_at_once() {
    let _serial = serial();
    let _watchdog = Watchdog::new(Duration::from_secs(120), "fair lock: a timed-out waiter's slot".into());
    let elsewhere = Arc::new(Fair::<Futex>::new());
    let lock = Arc::new(Fair::<Futex>::new());
    let held_elsewhere = elsewhere.lock();
    let held = lock.lock();
    let queued = queue_on(&elsewhere, FAIR_SLOTS - 1);
    let (timed_out_tx, timed_out) = mpsc::channel::<bool>();
    let (finish_tx, finish) = mpsc::channel::<()>();
    let timed = {
        let elsewhere = elsewhere.clone();
        std::thread::spawn(move || {
            let got = elsewhere.try_lock_for(Duration::from_secs(5));
            timed_out_tx.send(got.is_none()).unwrap();
            finish.recv().unwrap();
        })
    };
    assert!(within(Duration::from_secs(60), || elsewhere.waiters() as usize == FAIR_SLOTS));
    let (tid_tx, tid) = mpsc::channel::<i64>();
    let sleeper = {
        let lock = lock.clone();
        std::thread::spawn(move || {
            tid_tx.send(gettid()).unwrap();
            let guard = lock.lock();
            // SAFETY: held through `guard`.
            unsafe { lock.unlock(guard) };
        })
    };
    assert_asleep_within(tid.recv().unwrap(), Duration::from_secs(4));
    assert_eq!(lock.waiters(), 0, "no slot yet");
    assert!(timed_out.recv().unwrap(), "the timed wait ran out");
    assert!(
        within(Duration::from_secs(30), || lock.waiters() == 1),
        "the sleeper never took the slot the timed-out waiter gave back"
    );
    // SAFETY: held through `held`.
    unsafe { lock.unlock(held) };
    sleeper.join().unwrap();
    // SAFETY: held through `held_elsewhere`.
    unsafe { elsewhere.unlock(held_elsewhere) };
    for thread in queued {
        thread.join().unwrap();
    }
    finish_tx.send(()).unwrap();
    timed.join().unwrap();
}

/// A counter only the lock protects.
struct Unprotected(UnsafeCell<u64>);
// SAFETY: touched only under the lock being tested; a broken lock shows as a wrong count.
unsafe impl Sync for Unprotected {}

/// 96 threads (more than the slots, so slots change hands at nearly every acquisition), some
/// of them acquiring with deadlines, on each fair lock that waits by sleeping: the count must
/// be exact and every timed acquisition accounted for.
fn exact_count_past_the_slots<L: RawMutex + RawMutexTimed<Duration = Duration> + Send + Sync + 'static>(name: &str) {
    const THREADS: usize = 96;
    const EACH: u64 = 200;
    let _watchdog = Watchdog::new(Duration::from_secs(120), format!("{name}: {THREADS} threads"));
    let lock = Arc::new((L::INIT, Unprotected(UnsafeCell::new(0))));
    let start = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (lock, start) = (lock.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut made = 0u64;
                for i in 0..EACH {
                    let timed = t % 4 == 0 && i % 2 == 0;
                    let guard =
                        if timed { lock.0.try_lock_for(Duration::from_micros(50)) } else { Some(lock.0.lock()) };
                    if let Some(guard) = guard {
                        // SAFETY: held through `guard`.
                        unsafe {
                            let value = core::ptr::read_volatile(lock.1 .0.get());
                            // Holding the lock across a yield now and then queues the others
                            // behind it, so that waits, slots and their giving back happen at
                            // all: without it each thread's loop fits in its time slice.
                            if i % 8 == 0 {
                                std::thread::yield_now();
                            }
                            core::ptr::write_volatile(lock.1 .0.get(), value + 1);
                            lock.0.unlock(guard);
                        }
                        made += 1;
                    }
                }
                made
            })
        })
        .collect();
    let made: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    // SAFETY: every thread has been joined.
    let count = unsafe { *lock.1 .0.get() };
    assert_eq!(count, made, "{name}: lost updates");
    assert!(made >= (THREADS as u64 * 3 / 4) * EACH, "{name}: every untimed acquisition counts ({made})");
    assert!(!lock.0.is_locked(), "{name}");
}

#[test]
fn fair_locks_count_exactly_with_more_threads_than_slots() {
    let _serial = serial();
    exact_count_past_the_slots::<Fair<SpinPark>>("fair:spin-park, ungated");
    exact_count_past_the_slots::<Fair<Futex>>("fair:futex, ungated");
    exact_count_past_the_slots::<Gated<Fair<SpinPark>, SpinPark>>("fair:spin-park (gated)");
    exact_count_past_the_slots::<Gated<Fair<Futex>, Futex>>("fair:futex (gated)");
}

/// 100 threads over three fair locks, each thread moving from lock to lock: threads without
/// a slot sleep on the one turn word whichever lock they wait for, so a lock freed wakes the
/// sleepers of all three and a slot given back on one goes to a sleeper of another. The
/// three are held until every slot is taken, so that 38 threads start without one. Every
/// lock's count must be exact.
#[test]
fn threads_without_a_slot_on_several_locks_count_exactly() {
    const THREADS: usize = 100;
    const EACH: u64 = 300;
    let _serial = serial();
    let _watchdog = Watchdog::new(Duration::from_secs(120), format!("three fair locks, {THREADS} threads"));
    type L = Fair<Futex>;
    let locks: Arc<[(L, Unprotected); 3]> =
        Arc::new(core::array::from_fn(|_| (L::INIT, Unprotected(UnsafeCell::new(0)))));
    let held: Vec<_> = locks.iter().map(|(lock, _)| lock.lock()).collect();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let locks = locks.clone();
            std::thread::spawn(move || {
                let mut made = [0u64; 3];
                for i in 0..EACH {
                    let which = (t + i as usize) % 3;
                    let (lock, counter) = &locks[which];
                    let guard = lock.lock();
                    // SAFETY: held through `guard`.
                    unsafe {
                        let value = core::ptr::read_volatile(counter.0.get());
                        if i % 8 == 0 {
                            std::thread::yield_now();
                        }
                        core::ptr::write_volatile(counter.0.get(), value + 1);
                        lock.unlock(guard);
                    }
                    made[which] += 1;
                }
                made
            })
        })
        .collect();
    let queued = || locks.iter().map(|(lock, _)| lock.waiters() as usize).sum::<usize>();
    assert!(within(Duration::from_secs(60), || queued() == FAIR_SLOTS), "{} queued", queued());
    std::thread::sleep(Duration::from_millis(100));
    for ((lock, _), guard) in locks.iter().zip(held) {
        // SAFETY: held through `guard`.
        unsafe { lock.unlock(guard) };
    }
    let mut made = [0u64; 3];
    for handle in handles {
        for (total, one) in made.iter_mut().zip(handle.join().unwrap()) {
            *total += one;
        }
    }
    for (which, (lock, counter)) in locks.iter().enumerate() {
        // SAFETY: every thread has been joined.
        let count = unsafe { *counter.0.get() };
        assert_eq!(count, made[which], "lock {which}: lost updates");
        assert!(!lock.is_locked(), "lock {which}");
    }
    assert_eq!(made.iter().sum::<u64>(), THREADS as u64 * EACH);
}
