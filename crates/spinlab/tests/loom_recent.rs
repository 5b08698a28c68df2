#![cfg(loom)]
//! Model checks of the Reciprocating and Hapax locks under loom, each over a spinning policy
//! ([`Spin`]) and a sleeping one ([`Futex`]), and each as the gate of a bounded word over
//! [`Futex`], as the registry builds them over the policies whose waiters give their CPU away.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p spinlab --release --test loom_recent`.
//!
//! What the models assume and cannot see is as in `tests/loom.rs`: the futex is a model of the
//! kernel's, so a lost wake-up leaves a sleeper asleep and loom reports the deadlock; a deadline
//! expires after three spin iterations or once a timed futex wait has slept; the critical
//! section is a non-atomic increment of a loom `UnsafeCell`, so two holders, or a hand-over
//! without a happens-before edge, fail the model even when the count comes out right.
//!
//! The two locks see their policy only through `Wait`'s answers: `spin` never sleeps and ends
//! its spin phase only at a deadline, `futex` sleeps at once. Each other policy gives one of
//! these answers, or spins a few steps first (spin-park), which only adds looks at a word that
//! a futex waiter makes once before it sleeps. Under loom both locks' queues are the same as in
//! a real run; only Hapax's waiting array has two slots (so that values share them) and values
//! are drawn from one counter.
//!
//! Bounds. Every model's threads switch without a preemption wherever one blocks (a futex
//! sleep, a join) or yields (each spin iteration, and the slow holder). Two threads get three
//! preemptions: enough to cut a waiter between its arrival and its wait, and the holder
//! between the two steps of its release (Reciprocating's CAS and detach, Hapax's CAS and
//! store), at once. Models with three threads get two: every window these locks have spans
//! two threads, the releaser and the one being admitted, and the third thread's arrival (the
//! new push during a detach, a second waiter on a shared slot) needs no preemption of its own
//! since it runs whenever the other two yield or sleep. Over `spin`, two waiters without a
//! deadline get one ([`TWO_SPINNERS`] says why).

use spinlab::lock::{Gate, Gated, Hapax, Reciprocating};
use spinlab::wait::{Futex, Spin, Wait};

// Loom maps a fresh stack for every thread of every execution; see the module for why the
// test binary reuses them.
mod loom_stacks;
// The lock trait, the count, the bound and the scenarios every lock faces.
mod loom_common;
use loom_common::*;

impl<W: Wait> Lock for Reciprocating<W> {
    fn new_unlocked() -> Self {
        Reciprocating::new()
    }
}

impl<W: Wait> Lock for Hapax<W> {
    fn new_unlocked() -> Self {
        Hapax::new()
    }
}

impl<L: Lock + Gate, W: Wait> Lock for Gated<L, W> {
    fn new_unlocked() -> Self {
        Gated::with_gate(L::new_unlocked())
    }
}

/// A holder takes the lock, lets `waiters` threads arrive, releases and takes it again at
/// once, `rounds` times in all. Reciprocating: a release finds arrivals on its own node (its
/// swap found the lock freed since its compare-and-swap failed) and detaches them, and its next
/// arrival pushes, with the same node back from the pool, onto the new stack while the
/// detached segment is still served: the segment's last waiter must tell the old use of that
/// number (its segment's end) from the new one (an arrival it must detach). Hapax: each round is a new episode with a new value, whose
/// slot the two slots of the model make the waiters' share.
fn holder_relocks_while_others_wait<L: Lock>(waiters: usize, rounds: usize, bound: Bound) {
    holder_relocks_while_timed_and_plain_wait::<L>(0, waiters, rounds, bound);
}

/// [`holder_relocks_while_others_wait`] with `timed` of the waiters holding a deadline: a
/// Reciprocating waiter may abandon its node in a segment whose end is the holder's node, or
/// in the next stack, and a release must skip it and still free or detach correctly; a Hapax
/// timed waiter marks one episode after another.
fn holder_relocks_while_timed_and_plain_wait<L: Lock>(timed: usize, plain: usize, rounds: usize, bound: Bound) {
    check(bound, move || {
        let shared = Shared::<L>::new();
        let timed_waiters = spawn_each(&shared, timed, Shared::timed_bump);
        let plain_waiters = spawn_each(&shared, plain, Shared::locked_bump);
        for _ in 0..rounds {
            shared.locked_bump();
        }
        let acquired = plain + rounds;
        join_and_check(&shared, timed_waiters, plain_waiters, acquired);
    });
}

/// How to run the models in which two threads wait at once, holding no deadline.
#[derive(Clone, Copy)]
struct TwoWaiters {
    bound: Bound,
    /// How often the holder yields in `release_wakes_two_waiters`.
    holder_yields: usize,
}

/// Over `spin`, as for the spinning locks of `tests/loom.rs`: loom's scheduler lets two
/// spinners hand the CPU to each other at every yield while the thread they wait for never
/// runs again, and given two preemptions, or a holder that yields, it explores such schedules
/// without end ("Model exceeded maximum number of branches"). One preemption still cuts the
/// releaser anywhere inside its release while both wait (the windows are the releaser's and
/// the admitted waiter's, see the module docs); the timed three-thread model, whose timed
/// waiter ends its spinning, keeps two.
const TWO_SPINNERS: TwoWaiters = TwoWaiters { bound: Bound::Default(1), holder_yields: 0 };

/// Over `futex`, whose waiters sleep at once.
const TWO_SLEEPERS: TwoWaiters = TwoWaiters { bound: Bound::Default(2), holder_yields: HOLDER_YIELDS_TWO_WAITERS };

/// Instantiates the models every lock gets, for one lock type.
macro_rules! models {
    ($($name:ident: $lock:ty, $two_waiters:expr;)*) => {$(
        mod $name {
            use super::*;
            type L = $lock;

            #[test]
            fn mutual_exclusion_2_threads() {
                mutual_exclusion::<L>(2, Bound::Default(3));
            }

            #[test]
            fn mutual_exclusion_3_threads() {
                mutual_exclusion::<L>(3, Bound::Default(2));
            }

            #[test]
            fn release_wakes_two_waiters() {
                let two_waiters = $two_waiters;
                release_wakes_every_waiter::<L>(2, two_waiters.bound, two_waiters.holder_yields);
            }

            #[test]
            fn timed_waiter_races_holder() {
                timed_waiters_race_holder::<L>(1, 0, Bound::Default(3), HOLDER_YIELDS_ONE_WAITER);
            }

            #[test]
            fn timed_waiter_queued_with_plain_waiter() {
                timed_waiters_race_holder::<L>(1, 1, Bound::Default(2), HOLDER_YIELDS_TWO_WAITERS);
            }

            /// A timed futex wait that finds its deadline passed returns at once, without
            /// comparing the word, as the real one does.
            #[test]
            fn timed_waiter_expired_at_entry_queued_with_plain_waiter() {
                let _expired = spinlab::testing::timed_waits_expire_at_entry();
                timed_waiters_race_holder::<L>(1, 1, Bound::Default(2), HOLDER_YIELDS_TWO_WAITERS);
            }

            /// Two timed waiters: Reciprocating abandons one or two nodes in a row; Hapax's
            /// second timed waiter finds the holder's value marked already.
            #[test]
            fn two_timed_waiters_race_holder() {
                timed_waiters_race_holder::<L>(2, 0, Bound::Default(2), HOLDER_YIELDS_TWO_WAITERS);
            }

            /// A sleeper that returns without a wake-up must look again and sleep again.
            #[test]
            fn release_wakes_one_waiter_that_also_wakes_spuriously() {
                let _spurious = spinlab::testing::spurious_wake_ups(1);
                release_wakes_every_waiter::<L>(1, Bound::Default(3), HOLDER_YIELDS_ONE_WAITER);
            }

            /// Reciprocating's segment detach racing new pushes; Hapax's episodes and slots.
            #[test]
            fn holder_relocks_while_one_waits() {
                holder_relocks_while_others_wait::<L>(1, 3, Bound::Default(3));
            }

            /// A timed waiter and a plain one while the holder relocks.
            #[test]
            fn holder_relocks_while_a_timed_and_a_plain_waiter_wait() {
                holder_relocks_while_timed_and_plain_wait::<L>(1, 1, 2, $two_waiters.bound);
            }

            /// The same with two waiters: the first release detaches a segment of one or two,
            /// and the relocking holder pushes onto the next stack, possibly beside a waiter.
            #[test]
            fn holder_relocks_while_two_wait() {
                holder_relocks_while_others_wait::<L>(2, 2, $two_waiters.bound);
            }
        }
    )*};
}

models! {
    reciprocating_spin: Reciprocating<Spin>, TWO_SPINNERS;
    reciprocating_futex: Reciprocating<Futex>, TWO_SLEEPERS;
    hapax_spin: Hapax<Spin>, TWO_SPINNERS;
    hapax_futex: Hapax<Futex>, TWO_SLEEPERS;
}

/// Instantiates the models of a gated lock, for one gate over `futex`. Every waiter sleeps at
/// once, at the gate or on the word, so a waiter that passes the gate on to a sleeper leaves
/// its wake-up owed in the room beside the word, made after its release of the word. Threads
/// switch without a preemption wherever one blocks or yields (as in `tests/loom.rs`'s gated
/// models), so one or two preemptions cut a releaser between its release and the wake-up it
/// owes while the others run.
macro_rules! gated_models {
    ($($name:ident: $lock:ty;)*) => {$(
        mod $name {
            use super::*;
            type L = $lock;

            #[test]
            fn mutual_exclusion_2_threads() {
                mutual_exclusion::<L>(2, Bound::Default(2));
            }

            /// Three threads: one holds the word, one heads the gate, one sleeps at it.
            #[test]
            fn mutual_exclusion_3_threads() {
                mutual_exclusion::<L>(3, Bound::Default(1));
            }

            /// The lost wake-up model: the head, woken by the holder's release, takes the word
            /// and passes the gate on to the sleeper behind it, whose wake-up it owes until its
            /// own release; some execution must leave that wake-up owed. No waiter starves:
            /// one that did would claim the word instead of queueing, and the gate would never
            /// hold a waiter behind its head.
            #[test]
            fn release_wakes_two_waiters() {
                let _never = spinlab::testing::starve_at_look(u32::MAX);
                let owed_before = spinlab::testing::gate_wake_ups_owed();
                release_wakes_every_waiter::<L>(2, Bound::Default(1), HOLDER_YIELDS_TWO_WAITERS);
                assert!(
                    spinlab::testing::gate_wake_ups_owed() > owed_before,
                    "no execution left a wake-up owed in the room"
                );
            }

            /// The same with a holder that does not yield: two preemptions let both waiters
            /// sleep before its release, and cut the head between its release of the word and
            /// the wake-up it owes while the others run.
            #[test]
            fn release_wakes_two_waiters_past_a_preempted_holder() {
                let _never = spinlab::testing::starve_at_look(u32::MAX);
                let owed_before = spinlab::testing::gate_wake_ups_owed();
                release_wakes_every_waiter::<L>(2, Bound::Default(2), 0);
                assert!(
                    spinlab::testing::gate_wake_ups_owed() > owed_before,
                    "no execution left a wake-up owed in the room"
                );
            }

            /// Three threads, none starving, so that both waiters queue at the gate.
            #[test]
            fn mutual_exclusion_3_threads_at_the_gate() {
                let _never = spinlab::testing::starve_at_look(u32::MAX);
                mutual_exclusion::<L>(3, Bound::Default(2));
            }

            /// A timed waiter and a plain one, neither starving, so that both reach the gate:
            /// the timed one may give up there (Reciprocating abandons its node, Hapax's timed
            /// acquisition waits unqueued) or as the head on the word, releasing the gate and
            /// waking the plain one at once; or it gets the lock and passes the gate on.
            #[test]
            fn timed_waiter_at_the_gate_with_plain_waiter() {
                let _never = spinlab::testing::starve_at_look(u32::MAX);
                timed_waiters_race_holder::<L>(1, 1, Bound::Default(1), HOLDER_YIELDS_TWO_WAITERS);
            }
        }
    )*};
}

gated_models! {
    gated_reciprocating_futex: Gated<Reciprocating<Futex>, Futex>;
    gated_hapax_futex: Gated<Hapax<Futex>, Futex>;
}
