//! What the loom model files share: the lock a model needs, a count it protects, the
//! preemption bound, and the scenarios every lock faces (mutual exclusion, the lost wake-up,
//! timed waiters racing the holder). `tests/loom.rs`'s module docs say how the models are
//! built; each model file includes this module and uses what it needs.
#![allow(dead_code)]

use lock_api::{RawMutex, RawMutexTimed};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

/// What the models need from a lock: lock_api's raw traits and a constructor (`INIT` panics
/// under loom, whose atomics cannot be built in a constant).
pub trait Lock:
    RawMutex + RawMutexTimed<Duration = Duration, Instant = std::time::Instant> + Send + Sync + 'static
{
    fn new_unlocked() -> Self;
}

/// How often a slow holder (`bump_slowly_and_unlock`) yields when one thread waits: enough
/// for it to spin out a deadline under loom (three iterations) or SpinPark's budget (two)
/// while the lock is held.
pub const HOLDER_YIELDS_ONE_WAITER: usize = 3;

/// The same with two waiters: each one's yields also let the other spin on, so one yield of
/// the holder is enough, and every further one multiplies the schedules to explore.
pub const HOLDER_YIELDS_TWO_WAITERS: usize = 1;

/// A deadline far in the future by the clock: under loom it expires after a few steps anyway
/// (see the module docs), which is the point.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// A lock and the data it protects.
pub struct Shared<L> {
    pub lock: L,
    count: UnsafeCell<usize>,
}

// SAFETY: `count` is only touched by a thread that holds `lock` (or, in `count`, after every
// other thread has been joined); loom checks exactly that.
unsafe impl<L: Sync> Sync for Shared<L> {}

impl<L: Lock> Shared<L> {
    pub fn new() -> Arc<Self> {
        Arc::new(Shared { lock: L::new_unlocked(), count: UnsafeCell::new(0) })
    }

    /// The critical section proper. Must be called with the lock held.
    pub fn bump(&self) {
        // SAFETY: the caller holds the lock; if the lock is broken, loom reports the
        // concurrent access instead of letting it happen.
        self.count.with_mut(|count| unsafe { *count += 1 });
    }

    /// A long critical section: bumps the count, then yields `yields` times while holding
    /// the lock, as if descheduled, then unlocks.
    ///
    /// Each spin iteration of a waiter yields to loom's scheduler, which then runs the other
    /// threads until they block or yield in turn (and cannot undo that). Without yields here a
    /// waiter could never spin out its deadline or budget while the lock is held, and the
    /// models would miss every sleep, time-out and abandonment that races with the holder.
    pub fn bump_slowly_and_unlock(&self, guard: L::Guard, yields: usize) {
        self.bump();
        for _ in 0..yields {
            thread::yield_now();
        }
        // SAFETY: the caller gives us the guard of the lock it holds.
        unsafe { self.lock.unlock(guard) };
    }

    /// Locks, bumps the count and unlocks.
    pub fn locked_bump(&self) {
        let guard = self.lock.lock();
        self.bump();
        // SAFETY: we hold the lock through `guard`.
        unsafe { self.lock.unlock(guard) };
    }

    /// Tries to lock with a deadline; on success bumps the count and unlocks. Returns
    /// whether it got the lock.
    pub fn timed_bump(&self) -> bool {
        match self.lock.try_lock_for(TIMEOUT) {
            Some(guard) => {
                self.bump();
                // SAFETY: we hold the lock through `guard`.
                unsafe { self.lock.unlock(guard) };
                true
            }
            None => false,
        }
    }

    /// Tries to lock once; on success bumps the count and unlocks.
    pub fn try_bump(&self) -> bool {
        match self.lock.try_lock() {
            Some(guard) => {
                self.bump();
                // SAFETY: we hold the lock through `guard`.
                unsafe { self.lock.unlock(guard) };
                true
            }
            None => false,
        }
    }

    /// The count, once every other thread has been joined.
    pub fn count(&self) -> usize {
        // SAFETY: all writers have been joined, which orders their writes before this read.
        self.count.with(|count| unsafe { *count })
    }

    /// Checks that the lock is free and still works after a model's threads are done: nothing
    /// leaked it (a timed-out waiter, an abandoned queue node, a withdrawn bit), try_lock
    /// fails while it is held, and it can be taken and released again.
    pub fn assert_free_and_working(&self) {
        assert!(!self.lock.is_locked(), "the lock is still held after every thread finished");
        let guard = self.lock.try_lock().expect("try_lock failed on a lock nobody holds");
        assert!(self.lock.is_locked());
        assert!(self.lock.try_lock().is_none(), "try_lock succeeded on a held lock");
        // SAFETY: we hold the lock through `guard`.
        unsafe { self.lock.unlock(guard) };
        let guard = self.lock.lock();
        // SAFETY: we hold the lock through `guard`.
        unsafe { self.lock.unlock(guard) };
        assert!(!self.lock.is_locked());
    }
}

/// A model's preemption bound.
#[derive(Clone, Copy)]
pub enum Bound {
    /// This many preemptions, or `LOOM_MAX_PREEMPTIONS` where it is set.
    Default(usize),
    /// This many, whatever `LOOM_MAX_PREEMPTIONS` says (see `models!` for why).
    Fixed(usize),
}

/// Runs `model` under loom with preemption bound `bound`.
pub fn check(bound: Bound, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    match bound {
        Bound::Default(_) if std::env::var_os("LOOM_MAX_PREEMPTIONS").is_some() => {}
        Bound::Default(preemptions) | Bound::Fixed(preemptions) => builder.preemption_bound = Some(preemptions),
    }
    builder.check(model);
}

/// Spawns `n` threads running `body` on a clone of `shared`; returns their handles.
pub fn spawn_each<L: Lock, R: 'static>(
    shared: &Arc<Shared<L>>,
    n: usize,
    body: fn(&Shared<L>) -> R,
) -> Vec<thread::JoinHandle<R>> {
    (0..n)
        .map(|_| {
            let shared = shared.clone();
            thread::spawn(move || body(&shared))
        })
        .collect()
}

/// Spawns a thread of topology group `group` (declared through `testing::cna_group`, which
/// the topology-aware locks read under loom) running `body` on a clone of `shared`.
pub fn spawn_in_group<L: Lock, R: 'static>(
    shared: &Arc<Shared<L>>,
    group: u32,
    body: impl FnOnce(&Shared<L>) -> R + 'static,
) -> thread::JoinHandle<R> {
    let shared = shared.clone();
    thread::spawn(move || {
        spinlab::testing::cna_group(group);
        body(&shared)
    })
}

/// `groups.len()` threads (this one first, in group `groups[0]`) each take the lock once.
pub fn mutual_exclusion_in_groups<L: Lock>(groups: &'static [u32], bound: usize) {
    check(Bound::Default(bound), move || {
        let shared = Shared::<L>::new();
        spinlab::testing::cna_group(groups[0]);
        let others: Vec<_> = groups[1..].iter().map(|&g| spawn_in_group(&shared, g, Shared::locked_bump)).collect();
        shared.locked_bump();
        join_and_check(&shared, Vec::new(), others, groups.len());
    });
}

/// The lost wake-up across groups: this thread (group 0) holds the lock while a waiter of
/// each of `groups` blocks, then releases it; the first woken must wake the other, whether
/// that wake-up is made at a hand-over or owed by a gate to the word's release.
pub fn release_wakes_waiters_of_groups<L: Lock>(groups: [u32; 2], bound: usize) {
    check(Bound::Default(bound), move || {
        let shared = Shared::<L>::new();
        spinlab::testing::cna_group(0);
        let guard = shared.lock.lock();
        let waiters = groups.iter().map(|&g| spawn_in_group(&shared, g, Shared::locked_bump)).collect();
        shared.bump_slowly_and_unlock(guard, HOLDER_YIELDS_TWO_WAITERS);
        join_and_check(&shared, Vec::new(), waiters, 3);
    });
}

/// `threads` threads (this one included) each take the lock once and increment the count.
pub fn mutual_exclusion<L: Lock>(threads: usize, bound: Bound) {
    check(bound, move || {
        let shared = Shared::<L>::new();
        let others = spawn_each(&shared, threads - 1, Shared::locked_bump);
        shared.locked_bump();
        for other in others {
            other.join().unwrap();
        }
        assert_eq!(shared.count(), threads);
        shared.assert_free_and_working();
    });
}

/// This thread holds the lock while `timed` waiters with a deadline and `plain` waiters
/// without one arrive, then releases it. Timed waiters may give up (MCS and CLH abandon their
/// queue node, Fair withdraws its bit, Ticket gives up without a ticket) or get the lock; the
/// plain waiters must all get it, and the lock must end free and working.
pub fn timed_waiters_race_holder<L: Lock>(timed: usize, plain: usize, bound: Bound, holder_yields: usize) {
    waiters_race_holder::<L>(timed, plain, bound, holder_yields, false);
}

/// `timed_waiters_race_holder`, with the holder taking the lock once more right after its
/// release if `barge`.
pub fn waiters_race_holder<L: Lock>(timed: usize, plain: usize, bound: Bound, holder_yields: usize, barge: bool) {
    check(bound, move || {
        let shared = Shared::<L>::new();
        let guard = shared.lock.lock();
        let timed_waiters = spawn_each(&shared, timed, Shared::timed_bump);
        let plain_waiters = spawn_each(&shared, plain, Shared::locked_bump);
        shared.bump_slowly_and_unlock(guard, holder_yields);
        if barge {
            // Back in at once, racing the waiter this release woke.
            shared.locked_bump();
        }
        let acquired = 1 + plain + barge as usize;
        join_and_check(&shared, timed_waiters, plain_waiters, acquired);
    });
}

/// Joins the timed and the plain waiters, adds the timed ones that got the lock to
/// `acquired`, and checks that the count is exactly that and that the lock is free and still
/// works.
pub fn join_and_check<L: Lock>(
    shared: &Shared<L>,
    timed: Vec<thread::JoinHandle<bool>>,
    plain: Vec<thread::JoinHandle<()>>,
    acquired: usize,
) {
    let timed_acquired: usize = timed.into_iter().map(|waiter| waiter.join().unwrap() as usize).sum();
    for waiter in plain {
        waiter.join().unwrap();
    }
    assert_eq!(shared.count(), acquired + timed_acquired);
    shared.assert_free_and_working();
}

/// The lost wake-up model: this thread holds the lock while `waiters` threads block in
/// `lock()` (with a sleeping policy: go to sleep), then releases it. Every waiter must be
/// woken in turn; a missing wake leaves one asleep in the futex model and loom reports the
/// deadlock. With two waiters, the thread woken first must pass the wake on to the other.
pub fn release_wakes_every_waiter<L: Lock>(waiters: usize, bound: Bound, holder_yields: usize) {
    check(bound, move || {
        let shared = Shared::<L>::new();
        let guard = shared.lock.lock();
        let others = spawn_each(&shared, waiters, Shared::locked_bump);
        shared.bump_slowly_and_unlock(guard, holder_yields);
        for other in others {
            other.join().unwrap();
        }
        assert_eq!(shared.count(), 1 + waiters);
        shared.assert_free_and_working();
    });
}
