//! The lock table: every algorithm over every policy, and the reference locks.

use crate::in_place::{boxed, ops, poll_until, DynMutex, Named, RawLockOps, Stored};
use crate::table::{add_algorithm, policy_list, Algorithm, Entry, Kind, Table};
use spinlab::lock::{
    Adaptive, Bounded, Clh, Cna, CnaGated, CnaQueue, Fair, Gated, Hapax, Hmcs, HmcsQueue, Malthusian, Mcs, McsQueue,
    Reciprocating, Tas, Ticket, Ttas,
};
use spinlab::wait::Wait;
use std::time::Instant;

/// The lock algorithms, in registry order.
pub const ALGORITHMS: [&str; 14] = [
    "tas",
    "ttas",
    "ticket",
    "mcs",
    "clh",
    "cna",
    "cna-gated",
    "hmcs",
    "reciprocating",
    "hapax",
    "fair",
    "bounded",
    "adaptive",
    "malthusian",
];

/// The reference locks, measured beside spinlab's.
pub const REFERENCE_LOCKS: [&str; 3] = ["std", "parking_lot", "pthread"];

/// Locks: `algorithm:policy` and the references, each a [`DynMutex`] when built.
#[derive(Clone, Copy, Debug)]
pub struct Locks;

/// One lock the registry can build.
pub type LockEntry = Entry<Locks>;

/// What a lock entry says beyond the facts every entry carries.
#[derive(Clone, Debug)]
pub struct LockFacts {
    /// The algorithm (`ttas`, …) or the reference lock's name.
    pub algorithm: &'static str,
    /// Whether unlocking hands the lock over in order (`RawMutexFair`).
    pub fair: bool,
    /// Whether unlocking hands the lock to a chosen waiter, in order or not (every `fair`
    /// lock, `cna` and `hmcs` ungated, and `malthusian`'s MCS queue), rather than freeing it for whichever running thread comes first:
    /// with more threads than CPUs, such a hand-over waits for its waiter to be scheduled.
    pub hands_over: bool,
    /// Whether at most about one thread per CPU waits in the lock while the surplus sleep
    /// (`malthusian` over a policy whose waiters give their CPU away): its hand-overs then go
    /// to threads that run.
    pub restricts: bool,
    /// The fairness guarantee, in words: how long or how often a waiter can be passed over
    /// (`spinlab::lock`'s module docs give each precisely).
    pub bound: &'static str,
    /// Whether a timed acquisition waits natively (otherwise it polls `try_lock`).
    pub timed_native: bool,
    /// What one lock and unlock cost with nobody else about, in atomic operations.
    pub uncontended: &'static str,
    /// Memory beyond the lock's own bytes (`ops.size`, guard included): per waiting thread,
    /// and any shared by all locks.
    pub per_waiter: &'static str,
    /// The lock in caller-provided memory.
    pub ops: RawLockOps,
}

/// An algorithm's costs with one kind of policy ([`LockFacts::uncontended`],
/// [`LockFacts::per_waiter`]).
#[derive(Clone, Copy, Debug)]
struct Costs {
    uncontended: &'static str,
    per_waiter: &'static str,
}

/// Every lock: the algorithms over every policy, then the references.
///
/// ```
/// let lock = spinlab_registry::LOCKS.build("mcs:spin-park", ()).unwrap();
/// lock.lock();
/// assert!(!lock.try_lock());
/// // SAFETY: this thread holds the lock.
/// unsafe { lock.unlock() };
/// let err = spinlab_registry::LOCKS.build("mcs:sleepy", ()).err().unwrap().to_string();
/// assert!(err.starts_with("unknown name `mcs:sleepy`: a lock is ALGORITHM:POLICY"), "{err}");
/// ```
pub static LOCKS: Table<Locks> = Table::new();

impl Kind for Locks {
    type Built = Box<dyn DynMutex>;
    type Args = ();
    type Facts = LockFacts;
    type Ops = RawLockOps;

    fn rows() -> Vec<LockEntry> {
        let mut rows = Vec::new();
        // Adding an algorithm is one line here (after its file in `lock/` and its
        // `algorithm!` line below).
        add_algorithm::<Locks, TasAlgorithm>(&mut rows);
        add_algorithm::<Locks, TtasAlgorithm>(&mut rows);
        add_algorithm::<Locks, TicketAlgorithm>(&mut rows);
        add_algorithm::<Locks, McsAlgorithm>(&mut rows);
        add_algorithm::<Locks, ClhAlgorithm>(&mut rows);
        add_algorithm::<Locks, CnaAlgorithm>(&mut rows);
        add_algorithm::<Locks, CnaGatedAlgorithm>(&mut rows);
        add_algorithm::<Locks, HmcsAlgorithm>(&mut rows);
        add_algorithm::<Locks, ReciprocatingAlgorithm>(&mut rows);
        add_algorithm::<Locks, HapaxAlgorithm>(&mut rows);
        add_algorithm::<Locks, FairAlgorithm>(&mut rows);
        add_algorithm::<Locks, BoundedAlgorithm>(&mut rows);
        add_algorithm::<Locks, AdaptiveAlgorithm>(&mut rows);
        add_algorithm::<Locks, MalthusianAlgorithm>(&mut rows);
        rows.push(reference::<StdMutex>("std", false, "none", Costs { uncontended: "CAS + swap", per_waiter: "none" }));
        rows.push(reference::<Stored<parking_lot::RawMutex>>(
            "parking_lot",
            false,
            "eventual fairness: a fair hand-off about every 0.5 ms",
            Costs {
                uncontended: "CAS + CAS",
                per_waiter: "a parked thread's entry in a process-wide hash table of queues",
            },
        ));
        rows.push(reference::<PthreadMutex>(
            "pthread",
            false,
            "none",
            Costs { uncontended: "CAS + swap (glibc)", per_waiter: "none" },
        ));
        rows
    }

    fn expected() -> String {
        format!(
            "a lock is ALGORITHM:POLICY with ALGORITHM one of {} and POLICY one of {}, or a reference lock: {}",
            ALGORITHMS.join(", "),
            policy_list(),
            REFERENCE_LOCKS.join(", ")
        )
    }

    fn in_place(facts: &LockFacts) -> Option<(&RawLockOps, usize, usize)> {
        Some((&facts.ops, facts.ops.size, facts.ops.align))
    }
}

/// A lock algorithm, as the registry sees it: a name and the lock it builds for each policy.
trait LockAlgorithm {
    const NAME: &'static str;
    /// Whether the algorithm hands the lock over in order, with a policy whose waiters keep
    /// their CPU and with one whose waiters give it away (a gated lock does not).
    const FAIR: bool;
    const LEAVING_FAIR: bool;
    /// Whether it hands the lock to a chosen waiter (in order or not), with each kind of
    /// policy: an in-order lock does, unless it is gated.
    const HANDS_OVER: bool = Self::FAIR;
    const LEAVING_HANDS_OVER: bool = Self::LEAVING_FAIR;
    /// Whether it keeps all but about one thread per CPU out of the lock, passive.
    const RESTRICTS: bool = false;
    /// The fairness guarantee with a policy whose waiters keep their CPU, and with one whose
    /// waiters give it away.
    const BOUND: &'static str;
    const LEAVING_BOUND: &'static str;
    /// Its costs with a policy whose waiters keep their CPU, and with one whose waiters give
    /// it away.
    const COSTS: Costs;
    const LEAVING_COSTS: Costs = Self::COSTS;
    /// The lock built for `W`; for an algorithm whose lock changes with the policy, one type
    /// for a policy whose waiters keep their CPU and one for a policy whose waiters give it
    /// away ([`Wait::LEAVES_CPU`]: they sleep, or yield).
    fn built<W: Wait>() -> Built;
}

/// What an entry needs of the type it builds.
struct Built {
    timed_native: bool,
    ops: RawLockOps,
    make: fn(()) -> Box<dyn DynMutex>,
}

impl Built {
    fn of<T: Named>() -> Built {
        Built { timed_native: T::TIMED_NATIVE, ops: ops::<T>(), make: |()| boxed::<T>() }
    }
}

impl<A: LockAlgorithm> Algorithm<Locks> for A {
    const NAME: &'static str = <A as LockAlgorithm>::NAME;

    fn over<W: Wait>() -> (LockFacts, fn(()) -> Box<dyn DynMutex>) {
        let Built { timed_native, ops, make } = A::built::<W>();
        let costs = if W::LEAVES_CPU { A::LEAVING_COSTS } else { A::COSTS };
        let facts = LockFacts {
            algorithm: <A as LockAlgorithm>::NAME,
            // A gated lock hands the lock to whichever running thread takes it first; only
            // its waiters keep the algorithm's order.
            fair: if W::LEAVES_CPU { A::LEAVING_FAIR } else { A::FAIR },
            hands_over: if W::LEAVES_CPU { A::LEAVING_HANDS_OVER } else { A::HANDS_OVER },
            // Passive threads that keep their CPU take it from the active ones.
            restricts: A::RESTRICTS && W::LEAVES_CPU,
            bound: if W::LEAVES_CPU { A::LEAVING_BOUND } else { A::BOUND },
            timed_native,
            uncontended: costs.uncontended,
            per_waiter: costs.per_waiter,
            ops,
        };
        (facts, make)
    }
}

fn reference<T: Named>(name: &'static str, fair: bool, bound: &'static str, costs: Costs) -> LockEntry {
    let Built { timed_native, ops, make } = Built::of::<T>();
    let Costs { uncontended, per_waiter } = costs;
    let facts = LockFacts {
        algorithm: name,
        fair,
        hands_over: fair,
        restricts: false,
        bound,
        timed_native,
        uncontended,
        per_waiter,
        ops,
    };
    Entry::reference(name, facts, make)
}

macro_rules! algorithm {
    ($marker:ident, $lock:ident, $name:literal, fair: $fair:literal, bound: $bound:expr) => {
        algorithm!($marker, $lock, $name, fair: $fair, hands over: $fair, bound: $bound);
    };
    // A lock built as it is over every policy, which may hand the lock to a chosen waiter
    // without keeping an order (`cna`, `hmcs`).
    ($marker:ident, $lock:ident, $name:literal, fair: $fair:literal, hands over: $hands_over:literal, bound: $bound:expr) => {
        struct $marker;
        impl LockAlgorithm for $marker {
            const NAME: &'static str = $name;
            const COSTS: Costs = costs_of($name).0;
            const LEAVING_COSTS: Costs = costs_of($name).1;
            const FAIR: bool = $fair;
            const LEAVING_FAIR: bool = $fair;
            const HANDS_OVER: bool = $hands_over;
            const LEAVING_HANDS_OVER: bool = $hands_over;
            const BOUND: &'static str = $bound;
            const LEAVING_BOUND: &'static str = $bound;
            fn built<W: Wait>() -> Built {
                Built::of::<Stored<$lock<W>>>()
            }
        }
    };
    // An in-order lock whose waiters give their CPU away (they sleep, or yield) is built as
    // the gate of a bounded-bypass word (`lock::Gated`): handing the lock itself to a waiter
    // that is not running is a convoy.
    ($marker:ident, $lock:ident, $name:literal, fair: $fair:literal, bound: $bound:literal, gated when leaving) => {
        algorithm!($marker, $lock, $name, fair: $fair, bound: $bound, gated on $lock when leaving, bound: GATED_BOUND);
    };
    // The same with a queue of its own as the gate (MCS: the classic lock, one word).
    ($marker:ident, $lock:ident, $name:literal, fair: $fair:literal, bound: $bound:literal, gated on $gate:ident when leaving) => {
        algorithm!($marker, $lock, $name, fair: $fair, bound: $bound, gated on $gate when leaving, bound: GATED_BOUND);
    };
    // The same with the gated lock's guarantee in words of its own.
    ($marker:ident, $lock:ident, $name:literal, fair: $fair:literal, bound: $bound:literal, gated on $gate:ident when leaving, bound: $leaving:expr) => {
        algorithm!($marker, $lock, $name, fair: $fair, hands over: $fair, bound: $bound, gated on $gate when leaving, bound: $leaving);
    };
    // The same for a lock that hands over to a chosen waiter without keeping an order (`cna`,
    // `hmcs`): gated, the word is freed instead.
    ($marker:ident, $lock:ident, $name:literal, fair: $fair:literal, hands over: $hands_over:literal, bound: $bound:expr, gated on $gate:ident when leaving, bound: $leaving:expr) => {
        struct $marker;
        impl LockAlgorithm for $marker {
            const NAME: &'static str = $name;
            const COSTS: Costs = costs_of($name).0;
            const LEAVING_COSTS: Costs = GATED_COSTS;
            const FAIR: bool = $fair;
            const LEAVING_FAIR: bool = false;
            const HANDS_OVER: bool = $hands_over;
            const LEAVING_HANDS_OVER: bool = false;
            const BOUND: &'static str = $bound;
            const LEAVING_BOUND: &'static str = $leaving;
            fn built<W: Wait>() -> Built {
                if W::LEAVES_CPU {
                    Built::of::<Stored<Gated<$gate<W>, W>>>()
                } else {
                    Built::of::<Stored<$lock<W>>>()
                }
            }
        }
    };
}

/// A gated lock's costs: the word's (`spinlab::lock::Gated`), and its gate's node or slot
/// per queued waiter.
const GATED_COSTS: Costs = Costs {
    uncontended: "CAS + CAS (the word's)",
    per_waiter: "the gate's, for each queued waiter: an MCS, CNA, HMCS, CLH or reciprocating queue node (a 128-byte line; HMCS: one more per node group queued at the root and, once contended, a 128-byte line per NUMA node), a slot of the ticket or hapax locks' waiting array (hapax: and 16 bytes per thread), or a fair-lock slot",
};

/// Each algorithm's costs with a policy whose waiters keep their CPU, and with one whose
/// waiters give it away, as `spinlab::lock`'s module docs give them. Over a policy that may
/// sleep, an unlock that must see whether to wake a sleeper is a swap, not a store. A name
/// with no entry here fails to build: every algorithm states its costs.
const fn costs_of(name: &str) -> (Costs, Costs) {
    const fn both(uncontended: &'static str, per_waiter: &'static str) -> (Costs, Costs) {
        (Costs { uncontended, per_waiter }, Costs { uncontended, per_waiter })
    }
    const QUEUE_NODE: &str = "one queue node (a 128-byte line, pooled per thread) per waiting thread";
    const SWAP_STORE: &str = "swap + store; CAS + swap where waiters may sleep";
    match name.as_bytes() {
        b"tas" | b"ttas" => both(SWAP_STORE, "none"),
        b"ticket" => both("fetch-add + store", "none"),
        b"mcs" => both("swap + store", QUEUE_NODE),
        b"clh" => both("swap + store", "one queue node (a 128-byte line) per waiting thread, passed from thread to thread, and one per lock"),
        b"cna" => both(SWAP_STORE, QUEUE_NODE),
        b"cna-gated" => both("CAS + CAS (the word's)", QUEUE_NODE),
        b"hmcs" => both(SWAP_STORE, "one queue node (a 128-byte line, pooled per thread) per waiting thread and per group queued at the root; once contended, a 128-byte line per NUMA node and a 16-byte header per lock"),
        b"reciprocating" => both("swap + CAS", "one queue node (a 128-byte line, pooled per thread) per waiting thread and per holder that found the lock free"),
        b"hapax" => both("swap + CAS", "16 bytes per thread, and an 8 KiB waiting array shared by all hapax locks"),
        b"fair" => both("bit-set + CAS", "one of 62 process-wide thread slots, with its own padded line, kept by each thread that has waited until it exits"),
        b"bounded" => both("CAS + CAS", "none"),
        b"malthusian" => both(
            "MCS's swap + store, and a load of the wrapper's word each way; CAS + swap where waiters may sleep",
            "MCS's queue node per waiting thread, which passive threads keep too, linked in a stack",
        ),
        b"adaptive" => both("CAS + CAS", "on more than 4 CPUs, one MCS queue node (a 128-byte line) per queued waiter"),
        _ => panic!("an algorithm without its costs in `costs_of`"),
    }
}

/// CNA's guarantee (`spinlab::lock::Cna`), with its bound written out
/// ([`spinlab::lock::CNA_BYPASS_BOUND`]; a test checks the number).
const CNA_BOUND: &str = "waiters of the holder's NUMA node first; at most 64 hand-overs in a row pass over the oldest waiter, which is also passed at most once by each thread that found the queue empty";

/// HMCS's guarantee (`spinlab::lock::Hmcs`), with its bound written out
/// ([`spinlab::lock::HMCS_PASS_BOUND`]; a test checks the number).
const HMCS_BOUND: &str = "NUMA nodes take turns in the order they queued, each for at most 64 hand-overs in a row within the node while another node's waiters wait; FIFO within a node; a waiter is also passed at most once by each thread that found the queues empty";

/// The Malthusian lock's guarantee (`spinlab::lock::Malthusian`), with its rotation written
/// out ([`spinlab::lock::MALTHUSIAN_ROTATION`]; a test checks the number).
const MALTHUSIAN_BOUND: &str = "MCS queue order among about one thread per CPU, the others passive; the oldest passive thread is let in every 64 counted acquisitions and whenever none waits in the queue, so one with k passive threads ahead of it is let in within (k + 1) × 64";

/// The Malthusian wrapper over an ungated MCS lock, over every policy: restriction, not a
/// gate, keeps its FIFO hand-overs from convoying when threads outnumber CPUs. It hands the
/// lock to a chosen waiter (MCS's next) without being fair (passive threads are passed).
struct MalthusianAlgorithm;

impl LockAlgorithm for MalthusianAlgorithm {
    const NAME: &'static str = "malthusian";
    const COSTS: Costs = costs_of("malthusian").0;
    const FAIR: bool = false;
    const LEAVING_FAIR: bool = false;
    const HANDS_OVER: bool = true;
    const LEAVING_HANDS_OVER: bool = true;
    const RESTRICTS: bool = true;
    const BOUND: &'static str = MALTHUSIAN_BOUND;
    const LEAVING_BOUND: &'static str = MALTHUSIAN_BOUND;

    fn built<W: Wait>() -> Built {
        Built::of::<Stored<Malthusian<Mcs<W>, W>>>()
    }
}

/// What a gated lock adds to its gate's order: who queues, and the bound on the queue's head
/// at the word.
macro_rules! head_at_the_word {
    () => {
        "a thread that finds the lock held queues, on up to 4 CPUs after a look of about 1 µs where waiters may sleep; the head passed over for at most 0.5 ms of its wait, or 0.2 ms of a holder's releases while it cannot run"
    };
}

/// The CNA-gated word's guarantee (`spinlab::lock::CnaGated`): CNA's order at the gate, with
/// its bound written out as in [`CNA_BOUND`], and the gated head's.
const CNA_GATED_BOUND: &str = concat!(
    "none for running threads, which take the word whenever it is free; queued waiters of the gate's head's NUMA node first, at most 64 hand-overs in a row of the gate passing over the oldest queued waiter; ",
    head_at_the_word!()
);

/// The HMCS-gated word's guarantee (`spinlab::lock::HmcsGated`): HMCS's order at the gate,
/// with its bound written out as in [`HMCS_BOUND`], and the gated head's.
const HMCS_GATED_BOUND: &str = concat!(
    "none for running threads, which take the word whenever it is free; queued waiters' NUMA nodes take turns at the gate in the order they queued, each for at most 64 hand-overs in a row within the node while another node's waiters wait; FIFO within a node; ",
    head_at_the_word!()
);

/// The guarantee of an in-order lock built as the gate of a bounded-bypass word.
const GATED_BOUND: &str = concat!("waiters in queue order; ", head_at_the_word!());

/// The same for the reciprocating lock, whose gate admits its waiters in batches.
const RECIPROCATING_GATED_BOUND: &str = concat!(
    "waiters in the gate's order (batches in order, each newest first: overtaken at most once by each thread that queued later); ",
    head_at_the_word!()
);

/// The same for the hapax lock, whose gate orders only its untimed waiters.
const HAPAX_GATED_BOUND: &str =
    concat!("waiters in the gate's order (FIFO among untimed acquisitions); ", head_at_the_word!());

/// The same for the fair lock, whose gate orders only the threads holding one of its slots
/// ([`spinlab::lock::FAIR_SLOTS`]).
const FAIR_GATED_BOUND: &str = concat!(
    "round-robin among the threads holding one of its 62 slots, each moving to a random free slot every 8th wait, so each other slot holder passes a waiter at most twice in one turn (past 62 waiters, slots pass to the others as waits end, to sleepers in the order they slept but first to a thread that has just come: no bound); ",
    head_at_the_word!()
);

algorithm!(TasAlgorithm, Tas, "tas", fair: false, bound: "none");
algorithm!(TtasAlgorithm, Ttas, "ttas", fair: false, bound: "none");
algorithm!(TicketAlgorithm, Ticket, "ticket", fair: true, bound: "FIFO", gated when leaving);
algorithm!(McsAlgorithm, Mcs, "mcs", fair: true, bound: "FIFO in the queue; passed over at most once by each thread that found it empty", gated on McsQueue when leaving);
algorithm!(ClhAlgorithm, Clh, "clh", fair: true, bound: "FIFO", gated when leaving);
// CNA and HMCS are built as the in-order locks are: as they are over a policy whose waiters
// keep their CPU, where they hand the lock to a chosen waiter; over one whose waiters give
// their CPU away their queues gate the word (`CnaGated`, `HmcsGated`), since handing the lock
// to a waiter that is not running is a convoy.
algorithm!(CnaAlgorithm, Cna, "cna", fair: false, hands over: true, bound: CNA_BOUND,
           gated on CnaQueue when leaving, bound: CNA_GATED_BOUND);
// The gated word with CNA's queue as the gate, over every policy (as Fissile locks, which
// put a test-and-set word in front of CNA): running threads barge, so no hand-over convoys.
algorithm!(CnaGatedAlgorithm, CnaGated, "cna-gated", fair: false, hands over: false, bound: CNA_GATED_BOUND);
algorithm!(HmcsAlgorithm, Hmcs, "hmcs", fair: false, hands over: true, bound: HMCS_BOUND,
           gated on HmcsQueue when leaving, bound: HMCS_GATED_BOUND);
algorithm!(ReciprocatingAlgorithm, Reciprocating, "reciprocating", fair: true,
           bound: "overtaken at most once by each thread that arrived later: arrivals admitted in batches, in order, each newest first",
           gated on Reciprocating when leaving, bound: RECIPROCATING_GATED_BOUND);
algorithm!(HapaxAlgorithm, Hapax, "hapax", fair: true, bound: "FIFO among untimed acquisitions",
           gated on Hapax when leaving, bound: HAPAX_GATED_BOUND);
algorithm!(FairAlgorithm, Fair, "fair", fair: true,
           bound: "round-robin among the threads holding one of its 62 slots; past 62 waiters, slots pass to the others as waits end, to sleepers in the order they slept but first to any still spinning: no bound",
           gated on Fair when leaving, bound: FAIR_GATED_BOUND);
algorithm!(BoundedAlgorithm, Bounded, "bounded", fair: false, bound: "a running waiter passed over for at most 0.5 ms");
/// `Adaptive`, whose choice between the word alone and the gated word the registry makes
/// once, when it builds its table, rather than at every acquisition and release: the word
/// alone (`Bounded`) where the process may run on at most `DEFAULT_CROWD_CPUS` CPUs, the
/// word always gated (`Adaptive<W, 0>`) on more. The same lock either way as `Adaptive` would
/// be on this machine; what the choice saves is the lock's own reading of the CPU count at
/// each call, and the room for the gate's guard beside the word, both of which cost a lock
/// behind a table throughput under contention (docs/design.md, "The default lock").
struct AdaptiveAlgorithm;

impl LockAlgorithm for AdaptiveAlgorithm {
    const NAME: &'static str = "adaptive";
    const COSTS: Costs = costs_of("adaptive").0;
    const FAIR: bool = false;
    const LEAVING_FAIR: bool = false;
    const BOUND: &'static str = concat!(
        "on up to 4 CPUs, a running waiter passed over for at most 0.5 ms; on more, waiters in MCS queue order, ",
        head_at_the_word!()
    );
    const LEAVING_BOUND: &'static str = Self::BOUND;

    fn built<W: Wait>() -> Built {
        if Adaptive::<W>::gates() {
            Built::of::<Stored<Adaptive<W, 0>>>()
        } else {
            Built::of::<Stored<Bounded<W>>>()
        }
    }
}

/// `std::sync::Mutex`, with its guard kept beside it. Its guard borrows the mutex, so the
/// guard is stored with its lifetime erased; it never outlives the mutex because it is taken
/// back in `release`, and a held mutex cannot be moved or dropped (it is borrowed).
struct StdMutex {
    mutex: std::sync::Mutex<()>,
    guard: core::cell::UnsafeCell<Option<std::sync::MutexGuard<'static, ()>>>,
}

// SAFETY: `guard` is touched only by the holder of `mutex` (see `Stored`). A std guard is not
// Send, but pthread-style callers unlock on the thread that locked, and std's futex mutex does
// not care which thread unlocks.
unsafe impl Sync for StdMutex {}
// SAFETY: as above.
unsafe impl Send for StdMutex {}

impl Named for StdMutex {
    // std does not promise a layout.
    const ZERO_IS_UNLOCKED: bool = false;
    const TIMED_NATIVE: bool = false;

    fn create() -> Self {
        StdMutex { mutex: std::sync::Mutex::new(()), guard: core::cell::UnsafeCell::new(None) }
    }
    fn acquire(&self) {
        let guard = self.mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.keep(guard);
    }
    fn try_acquire(&self) -> bool {
        match self.mutex.try_lock() {
            Ok(guard) => self.keep(guard),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => self.keep(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => return false,
        }
        true
    }
    unsafe fn release(&self) {
        // SAFETY: the caller holds the mutex, so nobody else touches `guard`.
        drop(unsafe { (*self.guard.get()).take() });
    }
    fn held(&self) -> bool {
        matches!(self.mutex.try_lock(), Err(std::sync::TryLockError::WouldBlock))
    }
}

impl StdMutex {
    fn keep(&self, guard: std::sync::MutexGuard<'_, ()>) {
        // SAFETY: see the type's docs for the lifetime; we hold the mutex, so nobody else
        // touches `guard`.
        unsafe {
            let guard: std::sync::MutexGuard<'static, ()> = core::mem::transmute(guard);
            *self.guard.get() = Some(guard);
        }
    }
}

/// A default `pthread_mutex_t` (glibc's futex lock, which spins briefly only for adaptive
/// mutexes; a default one goes straight to the futex).
struct PthreadMutex(core::cell::UnsafeCell<libc::pthread_mutex_t>);

// SAFETY: pthread mutexes are made to be shared between threads; the cell only gives libc the
// mutable pointer it asks for.
unsafe impl Sync for PthreadMutex {}
// SAFETY: an unlocked, never-shared pthread mutex may move.
unsafe impl Send for PthreadMutex {}

impl Named for PthreadMutex {
    // PTHREAD_MUTEX_INITIALIZER is all zeros on glibc and musl.
    const ZERO_IS_UNLOCKED: bool = true;
    const TIMED_NATIVE: bool = true;

    fn create() -> Self {
        PthreadMutex(core::cell::UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER))
    }
    fn acquire(&self) {
        // SAFETY: a live, initialised mutex.
        let r = unsafe { libc::pthread_mutex_lock(self.0.get()) };
        debug_assert_eq!(r, 0);
    }
    fn try_acquire(&self) -> bool {
        // SAFETY: a live, initialised mutex.
        unsafe { libc::pthread_mutex_trylock(self.0.get()) == 0 }
    }
    fn acquire_until(&self, deadline: Instant) -> bool {
        // pthread_mutex_timedlock takes CLOCK_REALTIME; convert the remaining time. A clock
        // step during the wait shifts the deadline, as it would for any pthread caller.
        let left = deadline.saturating_duration_since(Instant::now());
        let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `now` is a valid out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) };
        let total_ns = now.tv_nsec as u128 + left.subsec_nanos() as u128;
        let at = libc::timespec {
            tv_sec: now
                .tv_sec
                .saturating_add(left.as_secs() as libc::time_t + (total_ns / 1_000_000_000) as libc::time_t),
            tv_nsec: (total_ns % 1_000_000_000) as _,
        };
        // SAFETY: a live, initialised mutex and a valid timespec.
        match unsafe { libc::pthread_mutex_timedlock(self.0.get(), &at) } {
            0 => true,
            libc::ETIMEDOUT => false,
            // EINVAL and the like cannot happen for a default mutex; fall back to polling.
            _ => poll_until(|| self.try_acquire(), deadline),
        }
    }
    unsafe fn release(&self) {
        // SAFETY: a live mutex held by the caller.
        unsafe { libc::pthread_mutex_unlock(self.0.get()) };
    }
    fn held(&self) -> bool {
        if self.try_acquire() {
            // SAFETY: we just acquired it.
            unsafe { self.release() };
            false
        } else {
            true
        }
    }
}

impl Drop for PthreadMutex {
    fn drop(&mut self) {
        // SAFETY: an unlocked mutex nobody uses any more.
        unsafe { libc::pthread_mutex_destroy(self.0.get()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Origin;

    #[test]
    fn every_algorithm_has_every_policy_and_the_references_follow() {
        let names = LOCKS.names();
        let policies = spinlab::wait::policies();
        assert_eq!(names.len(), ALGORITHMS.len() * policies.len() + REFERENCE_LOCKS.len());
        for algorithm in ALGORITHMS {
            for policy in &policies {
                let name = format!("{algorithm}:{}", policy.name);
                assert!(names.contains(&name.as_str()), "{name} missing");
            }
        }
        assert_eq!(&names[names.len() - 3..], REFERENCE_LOCKS);
    }

    #[test]
    fn the_fair_locks_bounds_name_their_slot_count() {
        let slots = format!("its {} slots", spinlab::lock::FAIR_SLOTS);
        for entry in LOCKS.entries().iter().filter(|e| e.name.starts_with("fair:")) {
            assert!(entry.facts.bound.contains(&slots), "{}: {}", entry.name, entry.facts.bound);
        }
        let gated = LOCKS.entries().iter().find(|e| e.name == "fair:spin-park").unwrap();
        assert!(gated.facts.bound.contains("0.2 ms of a holder's releases"), "{}", gated.facts.bound);
    }

    #[test]
    fn a_lock_hands_over_when_it_is_in_order_ungated_or_chooses_its_waiter() {
        for entry in LOCKS.entries() {
            // A gated lock's bound names its head's wait at the word: its word is freed.
            let gated = entry.facts.bound.contains("0.2 ms of a holder's releases");
            let chooses =
                entry.facts.algorithm == "malthusian" || (["cna", "hmcs"].contains(&entry.facts.algorithm) && !gated);
            assert_eq!(entry.facts.hands_over, entry.facts.fair || chooses, "{}", entry.name);
        }
        let (sleeping, spinning) = (LOCKS.info("malthusian:futex").unwrap(), LOCKS.info("malthusian:spin").unwrap());
        assert!(sleeping.facts.hands_over && sleeping.facts.restricts && !spinning.facts.restricts);
        assert!(LOCKS.entries().iter().all(|e| !e.facts.restricts || e.facts.algorithm == "malthusian"));
        assert!(LOCKS.info("mcs:spin").unwrap().facts.hands_over);
        assert!(!LOCKS.info("mcs:futex").unwrap().facts.hands_over, "gated: the word is freed");
        for gated in ["reciprocating:futex", "reciprocating:spin-park", "hapax:futex", "hapax:yield"] {
            let facts = &LOCKS.info(gated).unwrap().facts;
            assert!(!facts.hands_over && !facts.fair, "{gated}: gated, the word is freed");
            assert!(facts.bound.starts_with("waiters in the gate's order ("), "{gated}: {}", facts.bound);
        }
        assert!(LOCKS.info("reciprocating:spin").unwrap().facts.hands_over);
        assert!(LOCKS.info("hapax:pause").unwrap().facts.hands_over);
        assert!(LOCKS.info("cna:spin").unwrap().facts.hands_over && !LOCKS.info("cna:spin").unwrap().facts.fair);
        assert!(!LOCKS.info("cna:futex").unwrap().facts.hands_over, "gated: the word is freed");
        assert!(LOCKS.info("hmcs:spin").unwrap().facts.hands_over && !LOCKS.info("hmcs:spin").unwrap().facts.fair);
        for gated in ["hmcs:futex", "hmcs:spin-park", "hmcs:yield"] {
            let facts = &LOCKS.info(gated).unwrap().facts;
            assert!(!facts.hands_over && !facts.fair, "{gated}: gated, the word is freed");
        }
        assert!(!LOCKS.info("parking_lot").unwrap().facts.hands_over);
    }

    #[test]
    fn cnas_bound_names_its_constant() {
        let bound = format!("at most {} hand-overs in a row", spinlab::lock::CNA_BYPASS_BOUND);
        for entry in LOCKS.entries().iter().filter(|e| e.facts.algorithm == "cna") {
            assert!(entry.facts.bound.contains(&bound), "{}: {}", entry.name, entry.facts.bound);
            // Gated where its waiters leave the CPU, with the owed wake-up beside the word.
            let gated = entry.facts.bound.contains("0.2 ms of a holder's releases");
            assert_eq!(entry.facts.ops.size, if gated { 16 } else { 8 }, "{}", entry.name);
            assert_eq!(gated, !entry.facts.hands_over, "{}", entry.name);
        }
        for entry in LOCKS.entries().iter().filter(|e| e.facts.algorithm == "cna-gated") {
            assert!(entry.facts.bound.contains(&bound), "{}: {}", entry.name, entry.facts.bound);
            assert!(entry.facts.bound.contains("0.2 ms of a holder's releases"), "{}", entry.facts.bound);
            assert!(!entry.facts.fair && !entry.facts.hands_over, "{}: the word is freed, not handed over", entry.name);
            assert_eq!(entry.facts.ops.size, 16, "{}: the word, the tail and the owed wake-up", entry.name);
        }
    }

    #[test]
    fn hmcss_bound_names_its_constant() {
        let bound = format!("at most {} hand-overs in a row", spinlab::lock::HMCS_PASS_BOUND);
        for entry in LOCKS.entries().iter().filter(|e| e.facts.algorithm == "hmcs") {
            assert!(entry.facts.bound.contains(&bound), "{}: {}", entry.name, entry.facts.bound);
            // Gated where its waiters leave the CPU: the bounded word before the queues, and
            // the two owed wake-ups for guard.
            let gated = entry.facts.bound.contains("0.2 ms of a holder's releases");
            assert_eq!(gated, !entry.facts.hands_over, "{}", entry.name);
            assert_eq!(
                (entry.facts.ops.size, entry.facts.ops.align),
                (if gated { 40 } else { 16 }, 8),
                "{}: the word, the root's tail and the groups' queues' pointer, and gated the guard",
                entry.name
            );
        }
    }

    #[test]
    fn the_malthusian_bound_names_its_rotation_and_the_lock_fits_16_bytes() {
        let rotation = format!("every {} counted acquisitions", spinlab::lock::MALTHUSIAN_ROTATION);
        let within = format!("within (k + 1) × {}", spinlab::lock::MALTHUSIAN_ROTATION);
        for entry in LOCKS.entries().iter().filter(|e| e.facts.algorithm == "malthusian") {
            assert!(entry.facts.bound.contains(&rotation) && entry.facts.bound.contains(&within), "{}", entry.name);
            assert!(!entry.facts.fair, "{}", entry.name);
            let ops = &entry.facts.ops;
            assert_eq!((ops.size, ops.align), (16, 8), "{}: MCS's 8 bytes and the word, no guard", entry.name);
        }
    }

    #[test]
    fn unknown_names_list_what_is_accepted() {
        let err = LOCKS.build("ttas:nope", ()).err().unwrap();
        let text = err.to_string();
        assert!(text.contains("`ttas:nope`"));
        for accepted in ["ttas", "fair", "spin-park", "umwait", "parking_lot", "pthread"] {
            assert!(text.contains(accepted), "{text}");
        }
    }

    /// The C ABI and the preload library keep a lock in place, the preload library in the 16
    /// bytes of a `pthread_mutex_t` before the type field glibc reads: every algorithm over
    /// every policy fits there, guard included, but Hapax and gated HMCS, refused there in one
    /// line that names their size. Hapax takes 24 bytes: alone, two 64-bit words and a 64-bit
    /// guard; gated, the bounded word and the room for the owed wake-up before those two
    /// words, with no guard. Gated HMCS takes 40: the bounded word (and 4 bytes of padding)
    /// before HMCS's root tail and pointer, and a guard of the two wake-ups a pass may owe;
    /// ungated, HMCS keeps its word in that padding and has no guard, 16 bytes. CLH's guard
    /// is one pointer, so the spinning CLH is its tail and that pointer, and the sleeping one
    /// a bounded word and its gate. Reciprocating takes 12 either way: alone, its word and a
    /// guard of two node numbers; gated, the bounded word, the room and its word.
    #[test]
    fn every_algorithm_over_every_policy_but_hapax_and_gated_hmcs_takes_at_most_16_bytes_in_place() {
        let pthread_room = core::alloc::Layout::new::<[u64; 2]>();
        for entry in LOCKS.entries().iter().filter(|e| e.origin == Origin::Spinlab) {
            let ops = &entry.facts.ops;
            let gated_hmcs = entry.facts.algorithm == "hmcs" && !entry.facts.hands_over;
            if entry.facts.algorithm == "hapax" || gated_hmcs {
                let size = if gated_hmcs { 40 } else { 24 };
                assert_eq!((ops.size, ops.align), (size, 8), "{}", entry.name);
                let refused = entry.fits(pthread_room).err().unwrap().to_string();
                let expected =
                    format!("`{}` takes {size} bytes aligned to 8, and the room is 16 bytes aligned to 8", entry.name);
                assert_eq!(refused, expected);
                continue;
            }
            assert!(ops.size <= 16 && ops.align <= 8, "{}: {} bytes aligned to {}", entry.name, ops.size, ops.align);
            if entry.facts.algorithm == "clh" {
                assert_eq!(ops.size, 16, "{}", entry.name);
            }
            if entry.facts.algorithm == "reciprocating" {
                assert_eq!((ops.size, ops.align), (12, 4), "{}: three 4-byte words", entry.name);
            }
        }
    }

    /// `pairs` (the lab's uncontended loop) must really take the lock each time and leave it
    /// free: it waits while another holder has the lock, and the lock is free once it returns.
    #[test]
    fn the_pairs_loop_takes_the_lock_and_leaves_it_free() {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        for entry in LOCKS.entries().iter().filter(|e| e.availability.is_ok()) {
            let ops = entry.facts.ops;
            assert!(ops.align <= 16, "{}", entry.name);
            let mut storage = vec![0u128; ops.size.div_ceil(16) + 1];
            let at = storage.as_mut_ptr() as *mut u8;
            let done = AtomicBool::new(false);
            // SAFETY: aligned storage of the right size; `init` before any use, `drop` after
            // the last; the main thread holds the lock until the loop's thread has started.
            unsafe {
                (ops.init)(at);
                (ops.lock)(at);
                let address = at as usize;
                let ran_while_held = std::thread::scope(|s| {
                    s.spawn(|| {
                        (ops.pairs)(address as *const u8, 1000);
                        done.store(true, SeqCst);
                    });
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    let ran = done.load(SeqCst);
                    // Let go before asserting: a failed assertion here would leave the loop's
                    // thread waiting for ever and the scope joining it.
                    (ops.unlock)(at);
                    ran
                });
                assert!(!ran_while_held, "{}: the loop ran while the lock was held", entry.name);
                assert!(done.load(SeqCst), "{}", entry.name);
                assert!((ops.try_lock)(at), "{}: the loop left the lock held", entry.name);
                (ops.unlock)(at);
                (ops.drop)(at);
            }
        }
    }

    #[test]
    fn zeroed_storage_is_an_unlocked_lock_where_the_entry_says_so() {
        for entry in LOCKS.entries().iter().filter(|e| e.availability.is_ok() && e.facts.ops.zero_is_unlocked) {
            let mut storage = vec![0u128; entry.facts.ops.size.div_ceil(16) + 1];
            let at = storage.as_mut_ptr() as *mut u8;
            assert!(entry.facts.ops.align <= 16, "{}", entry.name);
            // SAFETY: zeroed, aligned storage of the right size, allowed by zero_is_unlocked.
            unsafe {
                assert!((entry.facts.ops.try_lock)(at), "{}: zeroed lock not free", entry.name);
                assert!(!(entry.facts.ops.try_lock)(at), "{}", entry.name);
                (entry.facts.ops.unlock)(at);
                (entry.facts.ops.lock)(at);
                (entry.facts.ops.unlock)(at);
                (entry.facts.ops.drop)(at);
            }
        }
    }
}
