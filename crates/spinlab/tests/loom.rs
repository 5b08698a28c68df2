#![cfg(loom)]
//! Model checks of every lock algorithm under loom: each algorithm over one spinning policy
//! and over each kind of sleeping policy that it treats differently, and every policy over
//! one algorithm at least.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p spinlab --release --test loom`.
//!
//! Under loom the futex is a model of the kernel's (a loom `Mutex` and `Condvar` keyed by the
//! word's address, `sys/futex.rs`): a waiter that sleeps is woken only by a wake on its word,
//! so a lost wake-up leaves it asleep and loom reports the deadlock. Loom has no clock: a
//! deadline expires after three iterations of a spin phase (of the whole wait, across its
//! sleeps, in the models that set `testing::deadlines_span_sleeps`), or once a futex wait with a
//! deadline has slept (during which a wake-up may pick it, and then it returns woken), so every
//! model with a timed waiter explores both its time-out and its success paths. The
//! `*_expired_at_entry_*` models make a timed futex wait return at once without comparing the
//! word, as the real one does once its deadline has passed, and the `*_spuriously` models let
//! one untimed wait return as if woken when nobody woke it, as a real one may (a signal, or a
//! wake-up aimed at a past user of the address).
//!
//! The critical section is a non-atomic increment of a loom `UnsafeCell`: loom fails any
//! execution in which two threads touch it without a happens-before edge between them, so a
//! lock that lets two holders in, or that releases without `Release` ordering, fails here even
//! when the final count happens to be right.
//!
//! Loom cannot show two kinds of bug, so these models do not cover them: a timed acquisition
//! that gives up although the lock was free (a deadline here counts steps, so no model can
//! tell that time-out from a fair one), and orderings that need stores to land in a
//! modification order other than the order they execute in (loom appends each store).
//!
//! An algorithm sees its policy only through `Wait`'s constants and methods, so one policy
//! stands for every other that gives the algorithm the same answers under loom: whether it may
//! sleep, whether a crowd spins, and when its spin phase ends. The table beside `models!` says
//! which pairs stand for which. Each model body is written once, generic over the lock;
//! `models!` instantiates all of them for each pair, and the macros after it add the models of
//! one algorithm's own paths. Preemption bounds keep the file to a few minutes on two CPUs;
//! `LOOM_MAX_PREEMPTIONS` overrides them for a deeper run, except where a bound is fixed.

use lock_api::RawMutex;
use loom::sync::Arc;
use loom::thread;
use spinlab::lock::{Adaptive, Bounded, Clh, Fair, Gate, Gated, Mcs, McsQueue, Tas, Ticket, Ttas};
use spinlab::wait::{
    Backoff, Cas, FpDiv, Futex, IntDiv, Miss, Mwaitx, Pause, PauseYieldPark, Spin, SpinPark, SpinYieldPark, Tpause,
    Umwait, Wait, Wfe, Yield,
};

// Loom maps a fresh stack for every thread of every execution; see the module for why the
// test binary reuses them.
mod loom_stacks;
// The lock trait, the count, the bound and the scenarios every lock faces.
mod loom_common;
use loom_common::*;

macro_rules! impl_lock {
    ($($lock:ident),*) => {$(
        impl<W: Wait> Lock for $lock<W> {
            fn new_unlocked() -> Self {
                $lock::new()
            }
        }
    )*};
}
impl_lock!(Tas, Ttas, Ticket, Mcs, McsQueue, Clh, Fair, Bounded);

impl<W: Wait, const CROWD_CPUS: usize> Lock for Adaptive<W, CROWD_CPUS> {
    fn new_unlocked() -> Self {
        Adaptive::new()
    }
}

impl<L: Lock + Gate, W: Wait> Lock for Gated<L, W> {
    fn new_unlocked() -> Self {
        Gated::with_gate(L::new_unlocked())
    }
}

/// Two threads each take the lock twice: a releaser re-locks at once, racing the waiter it
/// may just have woken or handed over to (and, for queue locks, reusing its queue node).
fn relock_races_handover<L: Lock>(bound: Bound) {
    check(bound, || {
        fn twice<L: Lock>(shared: &Shared<L>) {
            shared.locked_bump();
            shared.locked_bump();
        }
        let shared = Shared::<L>::new();
        let other = spawn_each(&shared, 1, twice);
        twice(&shared);
        for other in other {
            other.join().unwrap();
        }
        assert_eq!(shared.count(), 4);
        shared.assert_free_and_working();
    });
}

/// A holder takes the lock three times while a waiter queues, so that its releases can find
/// the queue's head away (woken and not back, or not yet at the word) several times in a row:
/// a gated lock counts those absences in the word, in laps, beside its sleepers.
fn holder_relocks_while_the_head_is_away<L: Lock>(bound: Bound) {
    check(bound, || {
        let shared = Shared::<L>::new();
        let other = spawn_each(&shared, 1, Shared::locked_bump);
        for _ in 0..3 {
            shared.locked_bump();
        }
        for other in other {
            other.join().unwrap();
        }
        assert_eq!(shared.count(), 4);
        shared.assert_free_and_working();
    });
}

/// try_lock fails while another thread holds the lock and succeeds once it is released.
fn try_lock_fails_while_held<L: Lock>(bound: Bound) {
    check(bound, || {
        let shared = Shared::<L>::new();
        let guard = shared.lock.lock();
        let failed = spawn_each(&shared, 1, |shared| shared.lock.try_lock().is_none());
        for failed in failed {
            assert!(failed.join().unwrap(), "try_lock succeeded while another thread held the lock");
        }
        // SAFETY: we hold the lock through `guard`.
        unsafe { shared.lock.unlock(guard) };
        let succeeded = spawn_each(&shared, 1, Shared::try_bump);
        for succeeded in succeeded {
            assert!(succeeded.join().unwrap(), "try_lock failed on a free lock");
        }
        assert_eq!(shared.count(), 1);
        shared.assert_free_and_working();
    });
}

/// try_lock races a thread that locks and unlocks: whichever way it goes, the two never hold
/// the lock together and a failed try_lock leaves nothing behind.
fn try_lock_races_lock<L: Lock>(bound: Bound) {
    check(bound, || {
        let shared = Shared::<L>::new();
        let locker = spawn_each(&shared, 1, Shared::locked_bump);
        let tried = shared.try_bump();
        for locker in locker {
            locker.join().unwrap();
        }
        assert_eq!(shared.count(), 1 + tried as usize);
        shared.assert_free_and_working();
    });
}

/// try_lock races a thread that locks and unlocks twice. For queue locks the second
/// acquisition can reuse a node that try_lock saw free a moment before.
fn try_lock_races_relock<L: Lock>(bound: Bound) {
    check(bound, || {
        fn thrice<L: Lock>(shared: &Shared<L>) {
            shared.locked_bump();
            shared.locked_bump();
            shared.locked_bump();
        }
        let shared = Shared::<L>::new();
        let locker = spawn_each(&shared, 1, thrice);
        let tried = shared.try_bump();
        for locker in locker {
            locker.join().unwrap();
        }
        assert_eq!(shared.count(), 3 + tried as usize);
        shared.assert_free_and_working();
    });
}

/// A timed waiter woken by a release can find the lock taken again by a thread that never
/// waited, and time out while it spins, as a plain waiter sleeps on. With a word that marks
/// only "held" or "held with sleepers" (`tas`, `ttas`), the barger's acquisition marks it held,
/// so the timed waiter must mark it again as it leaves (`WordLock::give_up`), or the barger's
/// release wakes nobody and the plain waiter sleeps for ever. Deadlines here count the whole
/// wait (`testing::deadlines_span_sleeps`): by default a woken waiter spins its budget out before
/// its deadline can pass, and no model reaches this time-out.
fn woken_timed_waiter_gives_up_behind_a_barger<L: Lock>(bound: Bound) {
    let _span = spinlab::testing::deadlines_span_sleeps();
    waiters_race_holder::<L>(1, 1, bound, HOLDER_YIELDS_TWO_WAITERS, true);
}

/// A timed waiter and a plain one contend with no thread holding the lock first: the timed
/// one may get it, wait behind the other, or give up while the other holds or waits.
fn timed_races_lock<L: Lock>(bound: Bound) {
    check(bound, || {
        let shared = Shared::<L>::new();
        let timed = spawn_each(&shared, 1, Shared::timed_bump);
        shared.locked_bump();
        join_and_check(&shared, timed, Vec::new(), 1);
    });
}

/// Two threads each go hand over hand through two locks (lock `a`, lock `b`, unlock `a`,
/// unlock `b`). Queue locks take a node per acquisition from a per-thread cache, so a node
/// released by one lock is reused by the other while threads queue on both; Fair's waiters
/// use one signal word per thread for every lock.
fn hand_over_hand<L: Lock>(bound: Bound) {
    check(bound, || {
        fn walk<L: Lock>(pair: &(Arc<Shared<L>>, Arc<Shared<L>>)) {
            let (a, b) = pair;
            let guard_a = a.lock.lock();
            a.bump();
            let guard_b = b.lock.lock();
            // SAFETY: we hold `a` through `guard_a`.
            unsafe { a.lock.unlock(guard_a) };
            b.bump();
            // SAFETY: we hold `b` through `guard_b`.
            unsafe { b.lock.unlock(guard_b) };
        }
        let pair = Arc::new((Shared::<L>::new(), Shared::<L>::new()));
        let other = {
            let pair = pair.clone();
            thread::spawn(move || walk(&pair))
        };
        walk(&pair);
        other.join().unwrap();
        for shared in [&pair.0, &pair.1] {
            assert_eq!(shared.count(), 2);
            shared.assert_free_and_working();
        }
    });
}

/// CLH keeps the node a holder takes over on release (its predecessor's) in the holder's own
/// node, in the field where a timed-out waiter publishes its predecessor. Here the holder has
/// such a node (it acquires a lock that was used before, so the tail is a released node), and
/// `timed` waiters with a deadline and `plain` ones without queue behind it: they time out
/// behind it (taking themselves out of the tail, or marking their node abandoned for the
/// waiter behind), sleep on its node, or get the lock and take its node over. With
/// `Relock::Everyone` every thread then takes the lock again, reusing the nodes it took over
/// or got back. The loom node pool fails any execution that gives a node back twice (a
/// holder that gave back a predecessor it did not own), and a node used by two queues at
/// once breaks mutual exclusion or hangs a waiter.
fn holder_with_predecessor<L: Lock>(timed: usize, plain: usize, relock: Relock, bound: Bound, holder_yields: usize) {
    check(bound, move || {
        let shared = Shared::<L>::new();
        shared.locked_bump();
        let guard = shared.lock.lock();
        let (timed_waiters, plain_waiters) = match relock {
            Relock::Nobody => {
                (spawn_each(&shared, timed, Shared::timed_bump), spawn_each(&shared, plain, Shared::locked_bump))
            }
            Relock::Everyone => (
                spawn_each(&shared, timed, |shared| {
                    let acquired = shared.timed_bump();
                    shared.locked_bump();
                    acquired
                }),
                spawn_each(&shared, plain, |shared| {
                    shared.locked_bump();
                    shared.locked_bump();
                }),
            ),
        };
        shared.bump_slowly_and_unlock(guard, holder_yields);
        if let Relock::Everyone = relock {
            shared.locked_bump();
        }
        // The warm-up, the holder's rounds and the waiters' untimed ones; then the timed
        // acquisitions that succeeded.
        let rounds = relock.rounds();
        let acquired = 1 + rounds + (rounds - 1) * timed + rounds * plain;
        join_and_check(&shared, timed_waiters, plain_waiters, acquired);
    });
}

/// Who takes the lock again in [`holder_with_predecessor`].
#[derive(Clone, Copy)]
enum Relock {
    /// Nobody: with two waiters, a thread that queues again behind them (a third spinner)
    /// takes a spinning model past loom's limit on branches.
    Nobody,
    /// The holder and every waiter.
    Everyone,
}

impl Relock {
    /// How many times the holder and each waiter try to take the lock.
    fn rounds(self) -> usize {
        match self {
            Relock::Nobody => 1,
            Relock::Everyone => 2,
        }
    }
}

/// Instantiates the models of [`holder_with_predecessor`] for CLH over one policy.
macro_rules! clh_holder_models {
    ($($name:ident: $policy:ty;)*) => {$(
        mod $name {
            use super::*;
            type L = Clh<$policy>;

            #[test]
            fn holder_with_predecessor_and_timed_successor() {
                holder_with_predecessor::<L>(1, 0, Relock::Everyone, Bound::Default(3), HOLDER_YIELDS_ONE_WAITER);
            }

            #[test]
            fn holder_with_predecessor_and_timed_successor_ahead_of_plain() {
                holder_with_predecessor::<L>(1, 1, Relock::Nobody, Bound::Default(2), HOLDER_YIELDS_TWO_WAITERS);
            }

            /// The lost wake-up model for a holder with a predecessor: with a sleeping policy
            /// the waiter sleeps on the holder's node, whose release must wake it.
            #[test]
            fn holder_with_predecessor_wakes_its_successor() {
                holder_with_predecessor::<L>(0, 1, Relock::Everyone, Bound::Default(3), HOLDER_YIELDS_ONE_WAITER);
            }
        }
    )*};
}

// `futex` stands for `spin-park` here as in `models!`.
clh_holder_models! {
    clh_holder_spin: Spin;
    clh_holder_futex: Futex;
}

/// MCS's bypass bound rests on one rule: an attempt that begins while a waiter is queued lines
/// up behind it. The holder waits until the waiter has joined the queue, then starts a
/// newcomer that locks twice and releases at once, racing the newcomer's first attempt: the
/// waiter must take the lock before either of the newcomer's acquisitions. With a sleeping
/// policy the release also races the waiter, as the queue's head, going to sleep on the word.
fn newcomer_queues_behind_waiter<W: Wait>(bound: Bound) {
    check(bound, || {
        let lock = Arc::new(Mcs::<W>::new());
        let order = Arc::new(loom::sync::Mutex::new(Vec::new()));
        let held = lock.lock();
        let take = |me: &'static str, times: usize| {
            let (lock, order) = (lock.clone(), order.clone());
            move || {
                for _ in 0..times {
                    let guard = lock.lock();
                    order.lock().unwrap().push(me);
                    // SAFETY: locked just above by this thread.
                    unsafe { lock.unlock(guard) };
                }
            }
        };
        let waiter = thread::spawn(take("waiter", 1));
        while !lock.has_queue() {
            thread::yield_now();
        }
        let newcomer = thread::spawn(take("newcomer", 2));
        // SAFETY: locked above by this thread.
        unsafe { lock.unlock(held) };
        waiter.join().unwrap();
        newcomer.join().unwrap();
        assert_eq!(*order.lock().unwrap(), ["waiter", "newcomer", "newcomer"]);
        assert!(!lock.is_locked());
    });
}

#[test]
fn mcs_spin_newcomer_queues_behind_waiter() {
    newcomer_queues_behind_waiter::<Spin>(Bound::Default(2));
}

#[test]
fn mcs_spin_park_newcomer_queues_behind_waiter() {
    newcomer_queues_behind_waiter::<SpinPark>(Bound::Default(2));
}

/// How to run the models in which two threads wait at once.
#[derive(Clone, Copy)]
struct TwoWaiters {
    /// The bound of the two in which neither waiter has a deadline (`mutual_exclusion_3_threads`,
    /// `release_wakes_two_waiters`).
    bound: Bound,
    /// How often the holder yields in `release_wakes_two_waiters`.
    holder_yields: usize,
    /// The bound of the three in which one or both have a deadline
    /// (`timed_waiter_queued_with_plain_waiter`, its `expired_at_entry` twin and
    /// `two_timed_waiters_race_holder`).
    timed: Bound,
}

/// For TAS, TTAS, ticket and the bounded word with a policy that never sleeps, whose waiters
/// both spin on one shared word. Loom's scheduler lets two spinners hand the CPU to each other
/// at every yield while the holder never runs again; given two preemptions, or a holder that
/// yields, it explores such schedules without end ("Model exceeded maximum number of
/// branches"). These locks are also checked with three threads at bound 2 and a yielding
/// holder where a third thread waits with a deadline, which ends its spinning.
const SPINNERS_ON_ONE_WORD: TwoWaiters =
    TwoWaiters { bound: Bound::Fixed(1), holder_yields: 0, timed: Bound::Default(2) };

/// For everything else: queue locks spin on words of their own, and sleeping policies stop
/// spinning.
const OTHERS: TwoWaiters =
    TwoWaiters { bound: Bound::Default(2), holder_yields: HOLDER_YIELDS_TWO_WAITERS, timed: Bound::Default(2) };

/// For a gated lock over `futex`, whose two waiters sleep, at the gate and on the word. Its
/// three timed models run at one preemption: at two each takes minutes on two CPUs. One
/// reaches what they exist for, a give-up racing the other threads. Threads switch without a
/// preemption wherever one blocks (each waiter here sleeps at once) or yields (the holder, a
/// claimant), and one preemption cuts any one thread at any point, so that the others run
/// inside that window: a timed waiter between the end of its futex wait and its count-out or
/// its release of the gate, a waiter between its mark and its sleep, a releaser between its
/// release and the wake-up it owes. What one misses is two such windows open at once:
/// `release_wakes_two_waiters` keeps two for that, as do the gates' and the word's own timed
/// models. A claimant that withdraws its claim without checking that the lock is still held
/// (the lost wake-up that `Bounded::claim`'s compare-and-swap prevents) fails them at one as
/// at two.
const SLEEPERS_AT_A_GATE: TwoWaiters = TwoWaiters { timed: Bound::Default(1), ..OTHERS };

/// Instantiates every model for one lock type.
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
                mutual_exclusion::<L>(3, $two_waiters.bound);
            }

            #[test]
            fn relock_races_handover() {
                super::relock_races_handover::<L>(Bound::Default(3));
            }

            #[test]
            fn try_lock_fails_while_held() {
                super::try_lock_fails_while_held::<L>(Bound::Default(3));
            }

            #[test]
            fn try_lock_races_lock() {
                super::try_lock_races_lock::<L>(Bound::Default(3));
            }

            #[test]
            fn try_lock_races_relock() {
                super::try_lock_races_relock::<L>(Bound::Default(3));
            }

            #[test]
            fn timed_waiter_races_holder() {
                timed_waiters_race_holder::<L>(1, 0, Bound::Default(3), HOLDER_YIELDS_ONE_WAITER);
            }

            #[test]
            fn timed_waiter_queued_with_plain_waiter() {
                timed_waiters_race_holder::<L>(1, 1, $two_waiters.timed, HOLDER_YIELDS_TWO_WAITERS);
            }

            #[test]
            fn timed_waiter_expired_at_entry_queued_with_plain_waiter() {
                let _expired = spinlab::testing::timed_waits_expire_at_entry();
                timed_waiters_race_holder::<L>(1, 1, $two_waiters.timed, HOLDER_YIELDS_TWO_WAITERS);
            }

            #[test]
            fn two_timed_waiters_race_holder() {
                timed_waiters_race_holder::<L>(2, 0, $two_waiters.timed, HOLDER_YIELDS_TWO_WAITERS);
            }

            #[test]
            fn timed_races_lock() {
                super::timed_races_lock::<L>(Bound::Default(3));
            }

            #[test]
            fn hand_over_hand() {
                super::hand_over_hand::<L>(Bound::Default(3));
            }

            #[test]
            fn release_wakes_one_waiter() {
                release_wakes_every_waiter::<L>(1, Bound::Default(3), HOLDER_YIELDS_ONE_WAITER);
            }

            #[test]
            fn release_wakes_two_waiters() {
                let two_waiters = $two_waiters;
                release_wakes_every_waiter::<L>(2, two_waiters.bound, two_waiters.holder_yields);
            }

            #[test]
            fn release_wakes_one_waiter_that_also_wakes_spuriously() {
                let _spurious = spinlab::testing::spurious_wake_ups(1);
                release_wakes_every_waiter::<L>(1, Bound::Default(3), HOLDER_YIELDS_ONE_WAITER);
            }
        }
    )*};
}

// Which pairs stand for which. Under loom a policy can differ from another, to an algorithm,
// only in `Wait`'s answers, and they fall into four kinds:
// - Never sleeps; the spin phase ends only at a deadline: `spin`. `pause`, `idiv`, `fdiv`,
//   `cas`, `miss`, `backoff`, `umwait`, `tpause`, `mwaitx` and `wfe` too: their loop bodies
//   make no access loom sees. `yield` adds a loom yield beside the one every step makes; its
//   `LEAVES_CPU` is read by the registry, which gates the in-order locks over it, not by a lock.
// - Sleeps at once: `futex`.
// - Sleeps after two steps: `spin-park`, and `spin-yield-park`, whose yields come beside the
//   step's own and whose `relax_running` is spin-park's.
// - A crowd spins (`CROWD_SPINS`), three steps, then sleeps: `pause-yield-park`. Only the
//   bounded word reads `CROWD_SPINS`, and only this kind times a deadline out in the spin phase
//   of a wait that may sleep; the wait's arm for that is the one a spinning policy takes.
//
// | algorithm                                | branches on                  | pairs            |
// |------------------------------------------|------------------------------|------------------|
// | tas, ttas, ticket, mcs (both), clh, fair | `MAY_SLEEP`, the phase's end | spin, futex      |
// | bounded                                  | also `CROWD_SPINS`, steps    | spin, spin-park  |
// | gated (ticket, mcs, clh, fair gates)     | the word's and the gate's    | yield, futex     |
// | adaptive, each way                       | the CPU count (forced)       | pause-yield-park |
// | (every other policy)                     |                              | tas              |
//
// Futex and spin-park are one kind to all but the bounded word. Each waits by its policy's spin
// phase on one word, then marks it and sleeps (tas attempts where the others re-read), and a
// spin-park waiter's two more steps only look again: a change they see takes the arm that a
// futex waiter takes when the change comes before its first look. The bounded word counts steps:
// a spinner's lost race costs one, which may go on or end the phase, and a waiter that finds a
// wake-up in flight steps before it naps. Spin-park takes both arms, futex only the ending one.
// A gated lock's word runs those arms in the bounded word's own code, which bounded_spin_park
// checks and no gate reads, so each gated futex pair stands for spin-park too; and over `futex`
// nearly every hand-over of a gate leaves its wake-up owed (`Gate::due`, `Gate::settle`).
// Adaptive's crowd (`usize::MAX`) is the bounded word's lock and unlock, so it stands for
// `Bounded<PauseYieldPark>`; its gated side is the MCS gate over pause-yield-park, whose head
// spins in the crowd instead of as the one spinner.
models! {
    tas_spin: Tas<Spin>, SPINNERS_ON_ONE_WORD;
    tas_futex: Tas<Futex>, OTHERS;
    ttas_spin: Ttas<Spin>, SPINNERS_ON_ONE_WORD;
    ttas_futex: Ttas<Futex>, OTHERS;
    ticket_spin: Ticket<Spin>, SPINNERS_ON_ONE_WORD;
    ticket_futex: Ticket<Futex>, OTHERS;
    mcs_spin: Mcs<Spin>, OTHERS;
    mcs_futex: Mcs<Futex>, OTHERS;
    // The classic MCS lock, the gate of the registry's `mcs` over sleeping policies.
    mcs_queue_spin: McsQueue<Spin>, OTHERS;
    mcs_queue_futex: McsQueue<Futex>, OTHERS;
    clh_spin: Clh<Spin>, OTHERS;
    clh_futex: Clh<Futex>, OTHERS;
    fair_spin: Fair<Spin>, OTHERS;
    fair_futex: Fair<Futex>, OTHERS;
    // Under loom a bounded-bypass waiter starves at its second look at a held lock, so these
    // also check claims (HANDOFF) racing releases, sleepers and time-outs.
    bounded_spin: Bounded<Spin>, SPINNERS_ON_ONE_WORD;
    bounded_spin_park: Bounded<SpinPark>, OTHERS;
    // The registry's in-order locks over the policies whose waiters leave the CPU: each queue
    // as the gate of a bounded word. Over `futex` every waiter behind the head sleeps at once,
    // so nearly every hand-over of a gate leaves its wake-up owed to the release of the word:
    // in the guard (MCS), in the gate's own word (ticket) or in the room beside the word (CLH,
    // fair).
    gated_ticket_futex: Gated<Ticket<Futex>, Futex>, SLEEPERS_AT_A_GATE;
    gated_mcs_futex: Gated<McsQueue<Futex>, Futex>, SLEEPERS_AT_A_GATE;
    gated_clh_futex: Gated<Clh<Futex>, Futex>, SLEEPERS_AT_A_GATE;
    gated_fair_futex: Gated<Fair<Futex>, Futex>, SLEEPERS_AT_A_GATE;
    // Over `yield`, which never sleeps and never ends its spin phase, a waiter that finds
    // nobody queued queues at once, and each gate hands itself over as it does over a
    // spinning policy: the gate's waiters and the head spin on words of their own.
    gated_ticket_yield: Gated<Ticket<Yield>, Yield>, OTHERS;
    gated_mcs_yield: Gated<McsQueue<Yield>, Yield>, OTHERS;
    gated_clh_yield: Gated<Clh<Yield>, Yield>, OTHERS;
    gated_fair_yield: Gated<Fair<Yield>, Yield>, OTHERS;
    // spinlab's default on a large machine (its waiters queue at the MCS gate) and on a small
    // one (the word alone): the two paths `Adaptive` chooses between, each forced. Every waiter
    // spins (`CROWD_SPINS`) before it counts itself in to sleep, so these models have two
    // waiters racing the holder's release in the spin phase, in the sleeper count and in the
    // claim at once. Few of them sleep, which keeps the gated side's timed models small enough
    // to run at two preemptions.
    adaptive_pause_yield_park_gated: Adaptive<PauseYieldPark, 0>, OTHERS;
    adaptive_pause_yield_park_crowd: Adaptive<PauseYieldPark, { usize::MAX }>, OTHERS;
    // Every other policy once, over the cheapest algorithm to model.
    tas_pause: Tas<Pause>, SPINNERS_ON_ONE_WORD;
    tas_idiv: Tas<IntDiv>, SPINNERS_ON_ONE_WORD;
    tas_fdiv: Tas<FpDiv>, SPINNERS_ON_ONE_WORD;
    tas_cas: Tas<Cas>, SPINNERS_ON_ONE_WORD;
    tas_miss: Tas<Miss>, SPINNERS_ON_ONE_WORD;
    tas_backoff: Tas<Backoff>, SPINNERS_ON_ONE_WORD;
    tas_umwait: Tas<Umwait>, SPINNERS_ON_ONE_WORD;
    tas_tpause: Tas<Tpause>, SPINNERS_ON_ONE_WORD;
    tas_mwaitx: Tas<Mwaitx>, SPINNERS_ON_ONE_WORD;
    tas_wfe: Tas<Wfe>, SPINNERS_ON_ONE_WORD;
    tas_spin_yield_park: Tas<SpinYieldPark>, OTHERS;
}

/// A policy that may sleep but never ends its spin phase. A ticket waiter over it sees its
/// turn only through the release's bump of its waiting-array slot: with a real policy a
/// waiter that missed the bump (a release that skipped it, or a waiter that read `serving`
/// before its slot) would spin out its budget, then sleep and look at `serving` again, so no
/// other model can tell the miss from a correct run. Here it spins for ever, and loom reports
/// the execution that never ends.
struct SpinsUntilBumped;

impl Wait for SpinsUntilBumped {
    const NAME: &'static str = "spins-until-bumped";
    const MAY_SLEEP: bool = true;
    fn relax(_: &loom::sync::atomic::AtomicU32, _: u32, _: &mut spinlab::wait::Episode) -> bool {
        true
    }
}

/// The ticket lock, alone and as a gate, with waiters that see their turn only through the
/// bump of their waiting-array slot ([`SpinsUntilBumped`]).
macro_rules! slot_bump_models {
    ($($name:ident: $lock:ty;)*) => {$(
        mod $name {
            use super::*;
            type L = $lock;

            #[test]
            fn release_wakes_one_waiter() {
                release_wakes_every_waiter::<L>(1, Bound::Default(3), HOLDER_YIELDS_ONE_WAITER);
            }

            #[test]
            fn release_wakes_two_waiters() {
                // Two waiters that never stop spinning, as two on one shared word.
                let two_waiters = SPINNERS_ON_ONE_WORD;
                release_wakes_every_waiter::<L>(2, two_waiters.bound, two_waiters.holder_yields);
            }

            #[test]
            fn relock_races_handover() {
                super::relock_races_handover::<L>(Bound::Default(3));
            }

            #[test]
            fn hand_over_hand() {
                super::hand_over_hand::<L>(Bound::Default(3));
            }
        }
    )*};
}

slot_bump_models! {
    ticket_spins_until_bumped: Ticket<SpinsUntilBumped>;
    gated_ticket_spins_until_bumped: Gated<Ticket<SpinsUntilBumped>, SpinPark>;
}

/// The ticket lock counts at most 2^14 timed waiters asleep, so that their count cannot carry
/// into its `OWED` bit; past that a timed waiter looks again after a yield instead of
/// sleeping. With the cap at one, the second of two timed waiters is such a waiter. (Behind a
/// gated lock's word, two timed waiters seldom find the gate held, so a gated model would not
/// reach it.)
mod ticket_timed_sleeper_cap {
    use super::*;

    #[test]
    fn second_timed_waiter_may_not_sleep() {
        let _cap = spinlab::testing::ticket_timed_sleepers_at_most(1);
        timed_waiters_race_holder::<Ticket<Futex>>(2, 0, Bound::Default(2), HOLDER_YIELDS_TWO_WAITERS);
    }
}

/// `woken_timed_waiter_gives_up_behind_a_barger` for the glibc-style words, where the race
/// was found (by a stress test, before a model could reach it), and for the bounded word,
/// whose woken sleeper that finds the lock held leaves the next wake-up to that holder. Over
/// `spin-park` the `tas` and `ttas` models fail without `give_up`'s mark (loom reports the
/// plain waiter and the barger blocked). A `futex` waiter marks the word again before each
/// sleep and here never spins out a deadline after one; its models check the other paths.
macro_rules! woken_timed_waiter_models {
    ($($name:ident: $lock:ty;)*) => {$(
        #[test]
        fn $name() {
            woken_timed_waiter_gives_up_behind_a_barger::<$lock>(Bound::Default(2));
        }
    )*};
}

woken_timed_waiter_models! {
    woken_timed_waiter_gives_up_behind_a_barger_tas_spin_park: Tas<SpinPark>;
    woken_timed_waiter_gives_up_behind_a_barger_tas_futex: Tas<Futex>;
    woken_timed_waiter_gives_up_behind_a_barger_ttas_spin_park: Ttas<SpinPark>;
    woken_timed_waiter_gives_up_behind_a_barger_ttas_futex: Ttas<Futex>;
    woken_timed_waiter_gives_up_behind_a_barger_bounded_spin_park: Bounded<SpinPark>;
    woken_timed_waiter_gives_up_behind_a_barger_bounded_futex: Bounded<Futex>;
}

/// The fair lock with more waiters than slots: under `testing::fair_slots(1)` the first waiter
/// takes the only slot and the second waits without one, counted as wanting it. When the
/// first is granted the lock it gives the slot back, and the second takes it and queues in the
/// round-robin on the same signal word, whose last grant's wake-up call may still be on its
/// way. In `waiters_relock` each waiter takes the lock twice, so the slot can pass back and
/// forth, and a thread that gave its slot away hands over from the slot it last held.
macro_rules! past_the_slots_models {
    ($($name:ident: $lock:ty, $two_waiters:expr;)*) => {$(
        mod $name {
            use super::*;
            type L = $lock;

            #[test]
            fn release_wakes_two_waiters() {
                let _one = spinlab::testing::fair_slots(1);
                release_wakes_every_waiter::<L>(2, Bound::Default(2), HOLDER_YIELDS_TWO_WAITERS);
            }

            #[test]
            fn timed_waiter_queued_with_plain_waiter() {
                let _one = spinlab::testing::fair_slots(1);
                timed_waiters_race_holder::<L>(1, 1, $two_waiters.timed, HOLDER_YIELDS_TWO_WAITERS);
            }

            #[test]
            fn waiters_relock() {
                let _one = spinlab::testing::fair_slots(1);
                // The one who gave its slot away waits without one too when it relocks, and two
                // threads without a slot sleep on the turn word. Every thread takes the lock
                // twice: with two preemptions the model ran past ten minutes, so one.
                holder_with_predecessor::<L>(0, 2, Relock::Everyone, Bound::Fixed(1), 0);
            }
        }
    )*};
}

// `futex` stands for `spin-park` here as in `models!`.
past_the_slots_models! {
    fair_futex_past_its_slots: Fair<Futex>, OTHERS;
    gated_fair_futex_past_its_slots: Gated<Fair<Futex>, Futex>, SLEEPERS_AT_A_GATE;
}

/// A fair gate whose threads move to a new slot at every wait (`testing::fair_moves(1)`; the
/// other models never move, for time), to the lowest free one: two threads drawing at once
/// pick the same slot, and a waiter that relocks moves between its two waits, so its next
/// scan starts from its new slot and its old slot's signal word may still get a wake-up.
macro_rules! moving_models {
    ($($name:ident: $lock:ty;)*) => {$(
        mod $name {
            use super::*;
            type L = $lock;

            #[test]
            fn release_wakes_two_waiters() {
                let _moves = spinlab::testing::fair_moves(1);
                release_wakes_every_waiter::<L>(2, Bound::Default(2), HOLDER_YIELDS_TWO_WAITERS);
            }

            #[test]
            fn waiters_relock() {
                let _moves = spinlab::testing::fair_moves(1);
                holder_with_predecessor::<L>(0, 2, Relock::Everyone, Bound::Fixed(1), 0);
            }
        }
    )*};
}

// `futex` stands for `spin-park` here as in `models!`.
moving_models! {
    gated_fair_futex_moving: Gated<Fair<Futex>, Futex>;
}

/// The bounded word's waits in which nobody claims, as for the first 0.5 ms of every real wait
/// (the models above make a waiter starve at its second look, so their waiters mostly claim
/// and seldom sleep).
///
/// `release_whose_wake_finds_nobody`: a release that sets `WAKING` and wakes no thread (its
/// one counted sleeper had not reached the kernel yet) leaves `WAKING` to that sleeper, which
/// comes back by itself and ends it, and a release that comes in between sees `WAKING` and
/// wakes nobody. Here the first waiter counts itself in and is preempted, the holder's
/// wake-up finds nobody, the first waiter comes back, takes the lock and releases it while the
/// second sleeps: the second must still be woken. It takes three preemptions (the waiter after
/// counting in, the releaser after its wake-up, the waiter while it holds), one more than the
/// generic two-waiter models get, so the bound is fixed here. With the protocol before
/// `MISSED` (the releaser gave `WAKING` back, nobody made up for the skipped wake-up), this
/// model deadlocked.
///
/// A gated lock's head sleeps on the same word. One gated lock stands for the others here:
/// what a gate does at a hand-over does not depend on how its head took the word, and the
/// `models!` pairs check every gate's. It waits with `spin-park`, whose spinner's steps go on
/// after a lost race (the table beside `models!`). Its timed and spurious models run at one
/// preemption, as `SLEEPERS_AT_A_GATE`'s timed ones do and for the same reason: a gate waiter
/// and the head both sleep, and at two loom explores each for minutes. One preemption still
/// cuts any one thread at any point (a timed waiter between its wait and its count-out, a
/// waiter between its mark and its sleep), and the spurious return comes at every wait of
/// either thread; two windows open at once are `release_wakes_two_waiters`'s, at two. The
/// bounded words keep two everywhere (`$one_window` is the bound of those three models).
macro_rules! never_starving_models {
    ($($name:ident: $lock:ty, $one_window:expr $(, $wake_finds_nobody:ident)?;)*) => {$(
        mod $name {
            use super::*;

            #[test]
            fn release_wakes_two_waiters() {
                let _never = spinlab::testing::starve_at_look(u32::MAX);
                release_wakes_every_waiter::<$lock>(2, Bound::Default(2), HOLDER_YIELDS_TWO_WAITERS);
            }

            #[test]
            fn timed_waiter_queued_with_plain_waiter() {
                let _never = spinlab::testing::starve_at_look(u32::MAX);
                timed_waiters_race_holder::<$lock>(1, 1, $one_window, HOLDER_YIELDS_TWO_WAITERS);
            }

            #[test]
            fn timed_waiter_expired_at_entry_queued_with_plain_waiter() {
                let _never = spinlab::testing::starve_at_look(u32::MAX);
                let _expired = spinlab::testing::timed_waits_expire_at_entry();
                timed_waiters_race_holder::<$lock>(1, 1, $one_window, HOLDER_YIELDS_TWO_WAITERS);
            }

            #[test]
            fn release_wakes_two_waiters_one_of_them_also_spuriously() {
                let _never = spinlab::testing::starve_at_look(u32::MAX);
                let _spurious = spinlab::testing::spurious_wake_ups(1);
                release_wakes_every_waiter::<$lock>(2, $one_window, HOLDER_YIELDS_TWO_WAITERS);
            }

            #[test]
            fn holder_relocks_while_the_head_is_away() {
                let _never = spinlab::testing::starve_at_look(u32::MAX);
                super::holder_relocks_while_the_head_is_away::<$lock>(Bound::Default(2));
            }

            $(
            #[test]
            fn $wake_finds_nobody() {
                let _never = spinlab::testing::starve_at_look(u32::MAX);
                release_wakes_every_waiter::<$lock>(2, Bound::Fixed(3), HOLDER_YIELDS_TWO_WAITERS);
            }
            )?
        }
    )*};
}

never_starving_models! {
    never_starving_bounded_futex: Bounded<Futex>, Bound::Default(2), release_whose_wake_finds_nobody;
    never_starving_bounded_pause_yield_park: Bounded<PauseYieldPark>, Bound::Default(2), release_whose_wake_finds_nobody;
    never_starving_gated_mcs_spin_park: Gated<McsQueue<SpinPark>, SpinPark>, Bound::Default(1);
}
