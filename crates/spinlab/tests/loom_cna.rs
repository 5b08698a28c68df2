#![cfg(loom)]
//! Model checks of the compact NUMA-aware lock (`Cna`) under loom, over a policy that never
//! sleeps (`spin`) and one that sleeps at once (`futex`): the two kinds `Cna`, like `Mcs`,
//! tells apart (tests/loom.rs explains which policies each stands for); the models in which
//! the holder locks again, over `futex` alone.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p spinlab --release --test loom_cna`.
//!
//! What the models assume is tests/loom.rs's: the futex is a model of the kernel's, so a lost
//! wake-up is a deadlock loom reports; a deadline expires after a few steps; the critical
//! section is a loom `UnsafeCell`, so two holders without a happens-before edge fail the
//! model. Under loom `sched_getcpu` means nothing: each model thread declares its group with
//! `testing::cna_group`, and the models that are about the secondary queue check that some of
//! their executions moved a waiter there (`testing::cna_secondary_moves`).
//!
//! Preemption bounds: a waiter reaches the queue while the holder holds if the holder yields
//! (free) or is preempted once. The models without a relocking holder (mutual exclusion, the
//! lost wake-up) then get one or two preemptions more, to cut the head's choice or a waiter's
//! step anywhere: bound 2, and 3 for two threads. The splice and time-out models run over
//! `futex` at bound 1 (the note above them says why); together the file takes about 10 s on
//! two CPUs with `--test-threads=1`.

use lock_api::{RawMutex, RawMutexTimed};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use spinlab::lock::Cna;
use spinlab::testing::{cna_group, cna_secondary_moves};
use spinlab::wait::{Futex, Spin, Wait};
use std::time::Duration;

// Loom maps a fresh stack for every thread of every execution; see the module for why the
// test binary reuses them.
mod loom_stacks;

/// A deadline far in the future by the clock: under loom it expires after a few steps.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A lock and the data it protects.
struct Shared<L> {
    lock: L,
    count: UnsafeCell<usize>,
}

// SAFETY: `count` is only touched by a thread that holds `lock` (or, in `count`, after every
// other thread has been joined); loom checks exactly that.
unsafe impl<L: Sync> Sync for Shared<L> {}

impl<W: Wait, const BOUND: u32> Shared<Cna<W, BOUND>> {
    fn new() -> Arc<Self> {
        Arc::new(Shared { lock: Cna::new(), count: UnsafeCell::new(0) })
    }

    /// The critical section proper. Must be called with the lock held.
    fn bump(&self) {
        // SAFETY: the caller holds the lock; if the lock is broken, loom reports the
        // concurrent access instead of letting it happen.
        self.count.with_mut(|count| unsafe { *count += 1 });
    }

    /// Locks, bumps the count, yields `yields` times while holding the lock (as if
    /// descheduled, so that waiters queue and spin out their phases), and unlocks.
    fn locked_bump(&self, yields: usize) {
        let guard = self.lock.lock();
        self.bump();
        for _ in 0..yields {
            thread::yield_now();
        }
        // SAFETY: we hold the lock through `guard`.
        unsafe { self.lock.unlock(guard) };
    }

    /// Tries to lock with a deadline; on success bumps the count and unlocks.
    fn timed_bump(&self) -> bool {
        let Some(guard) = self.lock.try_lock_for(TIMEOUT) else { return false };
        self.bump();
        // SAFETY: we hold the lock through `guard`.
        unsafe { self.lock.unlock(guard) };
        true
    }

    /// The count, once every other thread has been joined.
    fn count(&self) -> usize {
        // SAFETY: all writers have been joined, which orders their writes before this read.
        self.count.with(|count| unsafe { *count })
    }

    /// The lock is free, try_lock works on it, and it can be taken and released again.
    fn assert_free_and_working(&self) {
        assert!(!self.lock.is_locked(), "the lock is still held after every thread finished");
        let guard = self.lock.try_lock().expect("try_lock failed on a lock nobody holds");
        assert!(self.lock.try_lock().is_none(), "try_lock succeeded on a held lock");
        // SAFETY: we hold the lock through `guard`.
        unsafe { self.lock.unlock(guard) };
        assert!(!self.lock.is_locked());
    }
}

/// Runs `model` under loom with preemption bound `bound`, unless `LOOM_MAX_PREEMPTIONS` says
/// otherwise.
fn check(bound: usize, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if std::env::var_os("LOOM_MAX_PREEMPTIONS").is_none() {
        builder.preemption_bound = Some(bound);
    }
    builder.check(model);
}

/// Spawns a thread of CNA group `group` running `body` on a clone of `shared`.
fn spawn_in<L: Send + Sync + 'static, R: 'static>(
    shared: &Arc<Shared<L>>,
    group: u32,
    body: impl FnOnce(&Shared<L>) -> R + 'static,
) -> thread::JoinHandle<R> {
    let shared = shared.clone();
    thread::spawn(move || {
        cna_group(group);
        body(&shared)
    })
}

/// `groups.len()` threads (this one first, in group `groups[0]`) each take the lock once.
fn mutual_exclusion<W: Wait>(groups: &'static [u32], bound: usize) {
    check(bound, move || {
        let shared = Shared::<Cna<W>>::new();
        cna_group(groups[0]);
        let others: Vec<_> = groups[1..].iter().map(|&g| spawn_in(&shared, g, |s| s.locked_bump(0))).collect();
        shared.locked_bump(0);
        for other in others {
            other.join().unwrap();
        }
        assert_eq!(shared.count(), groups.len());
        shared.assert_free_and_working();
    });
}

/// The secondary queue's splice. This thread (group 0) holds the lock while a waiter of group
/// 0 and one of group 1 queue, then releases it and locks again. Where it queues behind both,
/// the first waiter's hand-over skips the group-1 waiter to reach this thread, moving it to
/// the secondary queue; the group-0 waiter then locks again. With `BOUND` 1 the next hand-over
/// is bound to splice the secondary queue in front (if the group-0 waiter queued again), or
/// the head that finds nobody behind makes it the queue. Every waiter must get the lock, a
/// sleeper moved between queues must be woken, and some execution must take the move.
fn splice<W: Wait>(bound: usize) {
    let moves_before = cna_secondary_moves();
    check(bound, || {
        let shared = Shared::<Cna<W, 1>>::new();
        cna_group(0);
        let guard = shared.lock.lock();
        let same = spawn_in(&shared, 0, |s| {
            s.locked_bump(0);
            s.locked_bump(0);
        });
        let other = spawn_in(&shared, 1, |s| s.locked_bump(0));
        shared.bump();
        thread::yield_now();
        // SAFETY: we hold the lock through `guard`.
        unsafe { shared.lock.unlock(guard) };
        shared.locked_bump(0);
        same.join().unwrap();
        other.join().unwrap();
        assert_eq!(shared.count(), 5);
        shared.assert_free_and_working();
    });
    assert!(cna_secondary_moves() > moves_before, "no execution moved a waiter to the secondary queue");
}

/// The lost wake-up model: this thread holds the lock while two waiters of different groups
/// block (with a sleeping policy: sleep), then releases it; the first woken must pass the
/// wake-up on.
fn release_wakes_two_waiters<W: Wait>(bound: usize) {
    check(bound, || {
        let shared = Shared::<Cna<W>>::new();
        cna_group(0);
        let guard = shared.lock.lock();
        let waiters = [spawn_in(&shared, 1, |s| s.locked_bump(0)), spawn_in(&shared, 0, |s| s.locked_bump(0))];
        shared.bump();
        thread::yield_now();
        // SAFETY: we hold the lock through `guard`.
        unsafe { shared.lock.unlock(guard) };
        for waiter in waiters {
            waiter.join().unwrap();
        }
        assert_eq!(shared.count(), 3);
        shared.assert_free_and_working();
    });
}

/// A timed waiter of group 1 and a plain one of group 0 queue while this thread (group 0)
/// holds the lock, which then releases and locks again: the timed waiter may give up in the
/// main queue, at the head, or in the secondary queue after a hand-over skipped it; the
/// plain waiter and this thread must get the lock, and the lock must end free.
fn timed_waiter_races_holder<W: Wait>(bound: usize) {
    check(bound, || {
        let shared = Shared::<Cna<W>>::new();
        cna_group(0);
        let guard = shared.lock.lock();
        let timed = spawn_in(&shared, 1, |s| s.timed_bump());
        let plain = spawn_in(&shared, 0, |s| s.locked_bump(0));
        shared.bump();
        thread::yield_now();
        // SAFETY: we hold the lock through `guard`.
        unsafe { shared.lock.unlock(guard) };
        shared.locked_bump(0);
        let acquired = 3 + usize::from(timed.join().unwrap());
        plain.join().unwrap();
        assert_eq!(shared.count(), acquired);
        shared.assert_free_and_working();
    });
}

macro_rules! models {
    ($($name:ident: $policy:ty;)*) => {$(
        mod $name {
            use super::*;

            #[test]
            fn mutual_exclusion_two_groups_two_threads() {
                mutual_exclusion::<$policy>(&[0, 1], 3);
            }

            #[test]
            fn mutual_exclusion_two_groups_three_threads() {
                mutual_exclusion::<$policy>(&[0, 1, 0], 2);
            }

            #[test]
            fn release_wakes_two_waiters_of_two_groups() {
                release_wakes_two_waiters::<$policy>(2);
            }
        }
    )*};
}

models! {
    cna_spin: Spin;
    cna_futex: Futex;
}

// The models in which the holder locks again after its release run over `futex` alone. Over
// `spin` its waiters and the holder, once queued, are three threads spinning on words that
// only one of them can change, and loom's scheduler hands the CPU between the other two
// without end ("Model exceeded maximum number of branches"), at any preemption bound. The
// choice, the splice and the abandonment do not depend on the policy: only how a waiter waits
// does, and over `futex` each waiter sleeps, so the wake-up of a waiter moved between the
// queues is checked too. Every thread that blocks hands the CPU over without a preemption,
// so one preemption reaches every point of the hand-over (the module docs say why that is
// enough).

#[test]
fn cna_futex_secondary_queue_is_spliced_back() {
    splice::<Futex>(1);
}

#[test]
fn cna_futex_timed_waiter_races_holder_across_groups() {
    timed_waiter_races_holder::<Futex>(1);
}
