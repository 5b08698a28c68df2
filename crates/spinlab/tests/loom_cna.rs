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

use lock_api::RawMutex;
use spinlab::lock::Cna;
use spinlab::testing::{cna_group, cna_secondary_moves};
use spinlab::wait::{Futex, Spin, Wait};

// Loom maps a fresh stack for every thread of every execution; see the module for why the
// test binary reuses them.
mod loom_stacks;
// The lock trait, the count, the bound and the models across groups every topology-aware
// lock faces.
mod loom_common;
use loom_common::{
    check, mutual_exclusion_in_groups, release_wakes_waiters_of_groups, spawn_in_group, Bound, Lock, Shared,
};

impl<W: Wait, const BOUND: u32> Lock for Cna<W, BOUND> {
    fn new_unlocked() -> Self {
        Cna::new()
    }
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
    check(Bound::Default(bound), || {
        let shared = Shared::<Cna<W, 1>>::new();
        cna_group(0);
        let guard = shared.lock.lock();
        let same = spawn_in_group(&shared, 0, |s| {
            s.locked_bump();
            s.locked_bump();
        });
        let other = spawn_in_group(&shared, 1, Shared::locked_bump);
        shared.bump_slowly_and_unlock(guard, 1);
        shared.locked_bump();
        same.join().unwrap();
        other.join().unwrap();
        assert_eq!(shared.count(), 5);
        shared.assert_free_and_working();
    });
    assert!(cna_secondary_moves() > moves_before, "no execution moved a waiter to the secondary queue");
}

/// A timed waiter of group 1 and a plain one of group 0 queue while this thread (group 0)
/// holds the lock, which then releases and locks again: the timed waiter may give up in the
/// main queue, at the head, or in the secondary queue after a hand-over skipped it; the
/// plain waiter and this thread must get the lock, and the lock must end free.
fn timed_waiter_races_holder<W: Wait>(bound: usize) {
    check(Bound::Default(bound), || {
        let shared = Shared::<Cna<W>>::new();
        cna_group(0);
        let guard = shared.lock.lock();
        let timed = spawn_in_group(&shared, 1, |s| s.timed_bump());
        let plain = spawn_in_group(&shared, 0, Shared::locked_bump);
        shared.bump_slowly_and_unlock(guard, 1);
        shared.locked_bump();
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
                mutual_exclusion_in_groups::<Cna<$policy>>(&[0, 1], 3);
            }

            #[test]
            fn mutual_exclusion_two_groups_three_threads() {
                mutual_exclusion_in_groups::<Cna<$policy>>(&[0, 1, 0], 2);
            }

            #[test]
            fn release_wakes_two_waiters_of_two_groups() {
                release_wakes_waiters_of_groups::<Cna<$policy>>([1, 0], 2);
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
