//! spinlab: locks, events, barriers and reader-writer locks in which *how a thread waits* is
//! a separate, pluggable policy.
//!
//! - [`wait`]: the [`Wait`](wait::Wait) trait and its policies (spin, pause, divides, CAS,
//!   cache miss, backoff, yield, futex, spin-then-park, umwait, tpause, mwaitx, wfe).
//! - [`lock`]: lock algorithms (TAS, TTAS, ticket, MCS, CLH, fair bitmask, bounded bypass), each generic over a
//!   policy and implementing [`lock_api::RawMutex`].
//! - [`Event`], [`Condvar`], [`Barrier`] and [`rwlock`]: seed 001's wait/notify and barriers,
//!   a condition variable for any spinlab lock, and writer-preferring and phase-fair
//!   reader-writer locks, each over any policy.
//! - [`registry`]: every lock by its `algorithm:policy` name, plus the reference locks
//!   (`std`, `parking_lot`, `pthread`), for the lab, the C ABI and the preload library.
//!
//! ```
//! let counter = spinlab::Mutex::new(0u64);
//! std::thread::scope(|s| {
//!     for _ in 0..4 {
//!         s.spawn(|| for _ in 0..1000 { *counter.lock() += 1; });
//!     }
//! });
//! assert_eq!(*counter.lock(), 4000);
//! ```
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(not(target_os = "linux"))]
compile_error!("spinlab waits on Linux futexes and reads Linux sysfs; other systems are not supported yet");

mod padded;
mod sync;

pub mod barrier;
pub mod condvar;
pub mod event;
pub mod lock;
#[cfg(not(loom))]
pub mod registry;
pub mod rwlock;
pub mod sys;
pub mod wait;

pub use barrier::Barrier;
pub use condvar::Condvar;
pub use event::Event;
pub use padded::CachePadded;

/// The lock spinlab recommends when you have no measurement telling you otherwise: waiters
/// queue in MCS order in front of a bounded-bypass word ([`lock::Gated`] over [`lock::Mcs`]
/// and [`lock::Bounded`]); they spin with `pause` for a few microseconds, offering the CPU
/// with `sched_yield` every microsecond, then sleep on a futex ([`wait::SpinYieldPark`]).
/// The registry calls it `mcs:spin-yield-park`.
///
/// Why this one:
/// - Uncontended, it is one compare-and-swap to lock and one to unlock, with no system call:
///   the cost of `std::sync::Mutex`.
/// - Contended, a running thread takes a free lock at once (barging), so the lock never waits
///   for a sleeping or preempted thread to be scheduled: the convoy that makes strict FIFO
///   locks collapse when threads outnumber CPUs.
/// - Only the waiter at the head of the queue contends for the word; the others sleep in
///   queue order, each on its own node, so a hand-over wakes one of them (a ticket queue
///   wakes them all: with 75 threads waiting for CPython's GIL that herd made
///   `ticket:futex` crawl). A crowd of spinners would take the CPU from the holder: on the 2-CPU
///   guest, 16 threads of a C program hammering one mutex ran 3x faster than under glibc's
///   mutex with this lock, and 1.6-2.3x slower with every waiter on the word
///   (`bounded:spin-yield-park`).
/// - Barging is bounded: the head that has waited 0.5 ms claims the next release
///   ([`lock::STARVATION_NS`]), as parking_lot's eventual fairness and the Linux mutex's
///   hand-off bit do.
///
/// It takes 16 bytes (a 4-byte word and the MCS tail pointer); a waiter's queue node comes
/// from a per-thread cache. `ttas:spin-park`, the
/// previous default, stays in the registry as the seeds' subject. `spinlab run contention`
/// and `spinlab app` measure them against the others on your machine.
pub type DefaultRawMutex = lock::Gated<lock::Mcs<wait::SpinYieldPark>, wait::SpinYieldPark>;

/// A mutex over spinlab's default lock ([`DefaultRawMutex`]); see its docs for why.
pub type Mutex<T> = lock_api::Mutex<DefaultRawMutex, T>;

/// The guard of a [`Mutex`].
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, DefaultRawMutex, T>;
