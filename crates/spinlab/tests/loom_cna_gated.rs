#![cfg(loom)]
//! Model checks of the CNA-gated word (`CnaGated`, a `Gated` lock over a `CnaQueue`) under
//! loom, over a policy that never sleeps (`spin`) and one that sleeps at once (`futex`): the
//! registry builds it over both kinds, and its word and gate tell only those apart (tests/
//! loom.rs explains which policies each stands for).
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p spinlab --release --test loom_cna_gated`.
//!
//! What the models assume is tests/loom.rs's: the futex is a model of the kernel's, so a lost
//! wake-up is a deadlock loom reports; a deadline expires after a few steps; the critical
//! section is a loom `UnsafeCell`, so two holders without a happens-before edge fail the
//! model. Each model thread declares its CNA group with `testing::cna_group`, and the model
//! of the secondary queue checks that some of its executions moved a waiter there
//! (`testing::cna_secondary_moves`). The gate's own paths (the choice, the splice, abandoned
//! nodes) are `Cna`'s, which tests/loom_cna.rs checks behind a word of its own; here they run
//! behind the bounded word, whose releases leave the gate's wake-ups owed to the guard.
//!
//! Preemption bounds: three for two threads and two for three in the mutual-exclusion models,
//! as for the gated locks in tests/loom.rs. The lost wake-up gets one: its waiters over
//! `futex` sleep at once, so threads switch without a preemption wherever one blocks, and one
//! preemption cuts any one thread anywhere, the head between its pass of the gate and its
//! release above all (at two it takes longer than the rest of the file together). The
//! secondary queue's model gets none (the note above it says why). Together the file takes
//! about 7 s on two CPUs with `--test-threads=1`.

use lock_api::RawMutex;
use spinlab::lock::{CnaGated, CnaQueue, Gated};
use spinlab::testing::{cna_group, cna_secondary_moves};
use spinlab::wait::{Futex, Spin, Wait};

// Loom maps a fresh stack for every thread of every execution; see the module for why the
// test binary reuses them.
mod loom_stacks;
// The lock trait, the count, the bound and the scenarios every lock faces.
mod loom_common;
use loom_common::*;

impl<W: Wait, const BOUND: u32> Lock for Gated<CnaQueue<W, BOUND>, W> {
    fn new_unlocked() -> Self {
        Gated::with_gate(CnaQueue::new())
    }
}

/// The secondary queue through the gate. This thread (group 0) holds the word while waiters
/// of groups 0, 1 and 0 queue at the gate, then releases it. Where they queue in that order,
/// the head's pass of the gate skips the group-1 waiter for the second group-0 waiter, moving
/// it to the secondary queue, and the group-0 head locks again. With `BOUND` 1 the next pass
/// must go to the skipped waiter: spliced back in front of the head that queued again, or, if
/// nobody is behind, made the queue. Every waiter must get the lock, a sleeper moved between
/// the queues must be woken, and some execution must take the move.
fn secondary_queue<W: Wait>(bound: usize) {
    let moves_before = cna_secondary_moves();
    // Nobody claims the word: under loom a waiter would claim it at its second look, and the
    // first, the one spinner, would take it without queueing at the gate.
    let _no_claims = spinlab::testing::starve_at_look(u32::MAX);
    check(Bound::Default(bound), || {
        let shared = Shared::<CnaGated<W, 1>>::new();
        cna_group(0);
        let guard = shared.lock.lock();
        let twice = spawn_in_group(&shared, 0, |s| {
            s.locked_bump();
            s.locked_bump();
        });
        let once = [1, 0].map(|group| spawn_in_group(&shared, group, Shared::locked_bump));
        shared.bump_slowly_and_unlock(guard, 1);
        twice.join().unwrap();
        for waiter in once {
            waiter.join().unwrap();
        }
        assert_eq!(shared.count(), 5);
        shared.assert_free_and_working();
    });
    assert!(cna_secondary_moves() > moves_before, "no execution moved a waiter to the secondary queue");
}

macro_rules! models {
    ($($name:ident: $policy:ty;)*) => {$(
        mod $name {
            use super::*;

            #[test]
            fn mutual_exclusion_two_groups_two_threads() {
                mutual_exclusion_in_groups::<CnaGated<$policy>>(&[0, 1], 3);
            }

            #[test]
            fn mutual_exclusion_two_groups_three_threads() {
                mutual_exclusion_in_groups::<CnaGated<$policy>>(&[0, 1, 0], 2);
            }

            #[test]
            fn release_wakes_two_waiters_of_two_groups() {
                release_wakes_waiters_of_groups::<CnaGated<$policy>>([1, 0], 1);
            }
        }
    )*};
}

models! {
    cna_gated_spin: Spin;
    cna_gated_futex: Futex;
}

// The secondary queue's model runs over `futex` alone, as in tests/loom_cna.rs: over `spin`,
// waiters spinning on words only one of them can change make loom's scheduler hand the CPU
// between them without end. The choice and the splice do not depend on the policy; over
// `futex` the waiter moved between the queues sleeps, so its owed wake-up is checked too. It
// runs without preemptions: each of its four threads blocks or yields wherever the others
// are to run, and loom explores every order of those switches (at one preemption it takes
// minutes).
#[test]
fn cna_gated_futex_secondary_queue_is_spliced_back_at_the_gate() {
    secondary_queue::<Futex>(0);
}
