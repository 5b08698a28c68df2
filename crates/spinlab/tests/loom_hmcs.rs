#![cfg(loom)]
//! Model checks of the hierarchical MCS lock (`Hmcs`) under loom, over a policy that never
//! sleeps (`spin`) and one that sleeps at once (`futex`), the two kinds `Hmcs`, like `Mcs`,
//! tells apart (tests/loom.rs explains which policies each stands for); the models in which
//! the holder locks again, and those of the HMCS-gated word (`HmcsGated`, which the registry
//! builds over the policies that leave the CPU), over `futex` alone.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p spinlab --release --test loom_hmcs`.
//!
//! What the models assume is tests/loom.rs's: the futex is a model of the kernel's, so a lost
//! wake-up is a deadlock loom reports; a deadline expires after a few steps; the critical
//! section is a loom `UnsafeCell`, so two holders without a happens-before edge fail the
//! model. Each model thread declares its group with `testing::cna_group` (under loom
//! `sched_getcpu` means nothing, and the lock keeps two groups). The models of the two
//! hand-overs, alone and through the gate, check that some execution took them: a hand-over
//! within a group (`testing::hmcs_local_passes`) and the root let go past a waiting member
//! of the group (`testing::hmcs_root_releases`), as the model of a group's head that times
//! out at the root checks that it left its group's place there (`testing::hmcs_places_left`).
//!
//! Preemption bounds: as in tests/loom_cna.rs, a waiter reaches its queues while the holder
//! holds if the holder yields or is preempted once; the models without a relocking holder get
//! one or two preemptions more (bound 2, and 3 for two threads). The models in which the
//! holder locks again run over `futex` at bound 1, where every thread that blocks hands the
//! CPU over without a preemption (tests/loom_cna.rs says why spinning ones cannot run there).
//! The gated models take tests/loom_cna_gated.rs's bounds; the gated lost wake-up gets one,
//! and the root let go through the gate, with four threads, none (at one it runs for minutes).
//! Together the file takes about 27 s on two busy CPUs with `--test-threads=1`, the gated
//! models 8 s of it.

use lock_api::RawMutex;
use spinlab::lock::{Gated, Hmcs, HmcsGated, HmcsQueue};
use spinlab::testing::{cna_group, hmcs_local_passes, hmcs_places_left, hmcs_root_releases};
use spinlab::wait::{Futex, Spin, Wait};

// Loom maps a fresh stack for every thread of every execution; see the module for why the
// test binary reuses them.
mod loom_stacks;
// The lock trait, the count, the bound and the check every model ends with.
mod loom_common;
use loom_common::{
    check, join_and_check, mutual_exclusion_in_groups, release_wakes_waiters_of_groups, spawn_in_group, Bound, Lock,
    Shared,
};

impl<W: Wait, const BOUND: u32> Lock for Hmcs<W, BOUND> {
    fn new_unlocked() -> Self {
        Hmcs::new()
    }
}

impl<W: Wait, const BOUND: u32> Lock for Gated<HmcsQueue<W, BOUND>, W> {
    fn new_unlocked() -> Self {
        Gated::with_gate(HmcsQueue::new())
    }
}

/// This thread (group 0) holds the lock while a waiter of group 0 and one of group 1 queue,
/// then releases it and locks again. Where it queues in group 0 behind the first waiter, that
/// waiter's hand-over chooses between the two levels: with `BOUND` 1 it passes within the
/// group (the root stays with it), with `BOUND` 0 it queues the group at the root again
/// behind group 1 and lets the root go. `count` is the counter of the path that some
/// execution must take; every waiter must get the lock and every sleeper be woken. Gated, the
/// same passes are the gate's, made by the head once it has the word.
fn holder_queues_behind_its_group<L: Lock>(count: fn() -> usize, path: &str) {
    let before = count();
    check(Bound::Fixed(1), || {
        let shared = Shared::<L>::new();
        cna_group(0);
        let guard = shared.lock.lock();
        let waiters =
            vec![spawn_in_group(&shared, 0, Shared::locked_bump), spawn_in_group(&shared, 1, Shared::locked_bump)];
        shared.bump_slowly_and_unlock(guard, 1);
        shared.locked_bump();
        join_and_check(&shared, Vec::new(), waiters, 4);
    });
    assert!(count() > before, "no execution took the {path}");
}

/// This thread (group 0) holds the lock while a plain waiter of group 1 and a timed one of
/// group 0 queue, then releases it and locks again. Where the plain waiter's group heads the
/// root and the timed waiter's group's node waits behind it, this thread queues behind the
/// timed waiter in group 0, and the timed waiter gives up as its group's head at the root:
/// it must leave the group's place there to this thread, which some execution must see
/// (`testing::hmcs_places_left`). It may also give up inside the group's queue or at the
/// word. Every plain acquisition must succeed and the lock must end free.
fn timed_head_leaves_its_place_to_its_group() {
    let before = hmcs_places_left();
    check(Bound::Fixed(1), || {
        let shared = Shared::<Hmcs<Futex>>::new();
        cna_group(0);
        let guard = shared.lock.lock();
        let plain = vec![spawn_in_group(&shared, 1, Shared::locked_bump)];
        let timed = vec![spawn_in_group(&shared, 0, Shared::timed_bump)];
        shared.bump_slowly_and_unlock(guard, 1);
        shared.locked_bump();
        join_and_check(&shared, timed, plain, 3);
    });
    assert!(hmcs_places_left() > before, "no timed head left its place at the root to its group");
}

/// `holder_queues_behind_its_group` with this thread's second acquisition timed: the first
/// waiter's hand-over may find its node abandoned, and must then let the root go (`BOUND` 1:
/// the group's node) or take the group's new node out of the root (`BOUND` 0), so that the
/// group-1 waiter still gets the lock and the lock ends free.
fn timed_holder_queues_behind_its_group<const BOUND: u32>() {
    check(Bound::Fixed(1), || {
        let shared = Shared::<Hmcs<Futex, BOUND>>::new();
        cna_group(0);
        let guard = shared.lock.lock();
        let waiters =
            vec![spawn_in_group(&shared, 0, Shared::locked_bump), spawn_in_group(&shared, 1, Shared::locked_bump)];
        shared.bump_slowly_and_unlock(guard, 1);
        let again = usize::from(shared.timed_bump());
        join_and_check(&shared, Vec::new(), waiters, 3 + again);
    });
}

macro_rules! models {
    ($($name:ident: $policy:ty;)*) => {$(
        mod $name {
            use super::*;

            #[test]
            fn mutual_exclusion_two_groups_two_threads() {
                mutual_exclusion_in_groups::<Hmcs<$policy>>(&[0, 1], 3);
            }

            #[test]
            fn mutual_exclusion_two_groups_three_threads() {
                mutual_exclusion_in_groups::<Hmcs<$policy>>(&[0, 1, 0], 2);
            }

            #[test]
            fn release_wakes_two_waiters_of_two_groups() {
                release_wakes_waiters_of_groups::<Hmcs<$policy>>([1, 0], 2);
            }

            #[test]
            fn release_wakes_two_waiters_of_one_group() {
                release_wakes_waiters_of_groups::<Hmcs<$policy>>([1, 1], 2);
            }
        }
    )*};
}

models! {
    hmcs_spin: Spin;
    hmcs_futex: Futex;
}

#[test]
fn hmcs_futex_hands_over_within_the_group() {
    holder_queues_behind_its_group::<Hmcs<Futex, 1>>(hmcs_local_passes, "hand-over within the group");
}

#[test]
fn hmcs_futex_lets_the_root_go_past_a_waiting_member_of_the_group() {
    holder_queues_behind_its_group::<Hmcs<Futex, 0>>(hmcs_root_releases, "release of the root past the group's waiter");
}

#[test]
fn hmcs_futex_timed_head_leaves_its_place_to_its_group() {
    timed_head_leaves_its_place_to_its_group();
}

#[test]
fn hmcs_futex_a_timed_waiter_behind_a_local_hand_over_is_skipped() {
    timed_holder_queues_behind_its_group::<1>();
}

#[test]
fn hmcs_futex_a_timed_waiter_behind_a_root_release_is_skipped() {
    timed_holder_queues_behind_its_group::<0>();
}

// The gated form (`HmcsGated`), as the registry builds `hmcs` over the policies whose waiters
// give their CPU away, over `futex`, which stands for them all (tests/loom.rs).

#[test]
fn hmcs_gated_futex_mutual_exclusion_two_groups_two_threads() {
    mutual_exclusion_in_groups::<HmcsGated<Futex>>(&[0, 1], 3);
}

#[test]
fn hmcs_gated_futex_mutual_exclusion_two_groups_three_threads() {
    mutual_exclusion_in_groups::<HmcsGated<Futex>>(&[0, 1, 0], 2);
}

#[test]
fn hmcs_gated_futex_release_wakes_two_waiters_of_two_groups() {
    release_wakes_waiters_of_groups::<HmcsGated<Futex>>([1, 0], 1);
}

#[test]
fn hmcs_gated_futex_passes_the_gate_within_the_group() {
    // No claims: the first waiter would claim the word at its second look under loom, and
    // take it as the one spinner without queueing at the gate.
    let _no_claims = spinlab::testing::starve_at_look(u32::MAX);
    holder_queues_behind_its_group::<HmcsGated<Futex, 1>>(hmcs_local_passes, "pass of the gate within the group");
}

/// The root let go through the gate. Gated, the holder cannot queue behind the head it
/// released to (it barges the word instead), so here this thread (group 0) holds the word
/// while two waiters of group 0 and one of group 1 queue, then releases it. Where the first
/// of group 0 heads the gate with the second behind it and group 1's node at the root, its
/// pass at `BOUND` 0 queues its group again behind group 1, lets the root go to group 1 and
/// makes the second its group's head: two wake-ups owed to its release, which must make both.
#[test]
fn hmcs_gated_futex_lets_the_root_go_past_a_waiting_member_of_the_group() {
    let before = hmcs_root_releases();
    let _no_claims = spinlab::testing::starve_at_look(u32::MAX);
    check(Bound::Fixed(0), || {
        let shared = Shared::<HmcsGated<Futex, 0>>::new();
        cna_group(0);
        let guard = shared.lock.lock();
        let waiters = [0, 0, 1].into_iter().map(|g| spawn_in_group(&shared, g, Shared::locked_bump)).collect();
        shared.bump_slowly_and_unlock(guard, 1);
        join_and_check(&shared, Vec::new(), waiters, 4);
    });
    assert!(hmcs_root_releases() > before, "no execution let the root go past the group's waiter");
}
