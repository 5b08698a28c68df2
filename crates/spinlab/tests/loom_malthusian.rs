#![cfg(loom)]
//! Model checks of the Malthusian wrapper (`Malthusian<Mcs<W>, W, 1>`) under loom: its limit
//! set to one CPU through its parameter, so one thread holds, one waits in the MCS lock, and
//! a third goes passive. Over `futex`, whose waiters sleep at once, so that a passive thread
//! nobody admits stays asleep and loom reports the deadlock; mutual exclusion over `spin` too.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p spinlab --release --test loom_malthusian -- --test-threads=1`.
//!
//! What the models assume is tests/loom.rs's: the futex is a model of the kernel's; a
//! deadline expires after a few steps; the critical section is a loom `UnsafeCell`, so two
//! holders without a happens-before edge fail the model. The word's loads may read stale
//! values, as the memory model allows: a holder that reads the word before an active waiter
//! times out must not be the only one who could admit. The rotation itself (every 64 counted
//! acquisitions) is beyond a small model; the counted acquisitions start at 0, a multiple, so
//! the first release that finds a passive thread admits it, as every rotation does. Each model
//! about an admission path checks that some execution took it (`testing::malthusian_*`).
//!
//! Bounds: the holder's release, the admission and the arrivals span the holder and the
//! thread being admitted, and every thread that blocks or yields hands the CPU over without a
//! preemption: two preemptions with three threads; one where the holder locks again or a
//! waiter is timed. The file takes about 10 s with `--test-threads=1`.

use spinlab::lock::{Malthusian, Mcs};
use spinlab::testing::{malthusian_acquisitions_at_start, malthusian_path_taken, MalthusianPath};
use spinlab::wait::{Futex, Spin, Wait};

// Loom maps a fresh stack for every thread of every execution; see the module for why the
// test binary reuses them.
mod loom_stacks;
// The lock trait, the count, the bound and the scenarios every lock faces.
mod loom_common;
use loom_common::*;

/// The lock of every model: at most one waiter in the MCS lock beside its holder.
type Restricted<W> = Malthusian<Mcs<W>, W, 1>;

impl<W: Wait> Lock for Restricted<W> {
    fn new_unlocked() -> Self {
        Malthusian::with_inner(Mcs::new())
    }
}

#[test]
fn malthusian_spin_mutual_exclusion_two_threads() {
    mutual_exclusion::<Restricted<Spin>>(2, Bound::Default(3));
}

#[test]
fn malthusian_futex_mutual_exclusion_three_threads() {
    mutual_exclusion::<Restricted<Futex>>(3, Bound::Default(2));
}

/// Runs `model`, and checks that some of its executions took `path`.
fn taking(path: MalthusianPath, model: impl FnOnce()) {
    let before = malthusian_path_taken(path);
    model();
    assert!(malthusian_path_taken(path) > before, "no execution took {path:?}");
}

/// The lost wake-up model: the holder holds while two waiters block, one in the MCS lock and
/// one passive (asleep), then releases. The count starts past the rotation, so only the
/// release that finds nobody waiting in the MCS lock can admit and wake the passive thread.
#[test]
fn malthusian_futex_a_release_that_finds_nobody_waiting_admits_the_passive_thread() {
    let _start = malthusian_acquisitions_at_start(1);
    taking(MalthusianPath::Idle, || {
        release_wakes_every_waiter::<Restricted<Futex>>(2, Bound::Default(2), HOLDER_YIELDS_TWO_WAITERS)
    });
}

/// The rotation: the count starts at a multiple of it, so the holder's release admits the
/// passive thread while the other waiter still waits in the MCS lock.
#[test]
fn malthusian_futex_a_release_at_the_rotation_admits_the_passive_thread() {
    taking(MalthusianPath::Rotation, || {
        release_wakes_every_waiter::<Restricted<Futex>>(2, Bound::Default(2), HOLDER_YIELDS_TWO_WAITERS)
    });
}

/// The holder locks again right after its release, racing the thread its release admitted
/// and the waiter it handed the MCS lock to; the relocking holder may go passive itself.
#[test]
fn malthusian_futex_a_holder_that_locks_again_races_the_admitted_thread() {
    let _start = malthusian_acquisitions_at_start(1);
    waiters_race_holder::<Restricted<Futex>>(0, 2, Bound::Default(1), HOLDER_YIELDS_TWO_WAITERS, true);
}

/// A timed waiter and a plain one arrive at the held lock. The timed one may be the active
/// waiter and time out in the MCS lock as the last one waiting, admitting the passive plain
/// one in its place.
#[test]
fn malthusian_futex_the_last_active_waiter_to_give_up_admits_the_passive_thread() {
    let _start = malthusian_acquisitions_at_start(1);
    taking(MalthusianPath::Quitter, || {
        timed_waiters_race_holder::<Restricted<Futex>>(1, 1, Bound::Default(1), HOLDER_YIELDS_ONE_WAITER)
    });
}

/// Or the timed one is passive and abandons its node, which the admission skips.
#[test]
fn malthusian_futex_an_abandoned_passive_node_is_skipped() {
    let _start = malthusian_acquisitions_at_start(1);
    taking(MalthusianPath::AbandonedSkipped, || {
        timed_waiters_race_holder::<Restricted<Futex>>(1, 1, Bound::Default(1), HOLDER_YIELDS_ONE_WAITER)
    });
}
