//! spinlab: locks, events, barriers and reader-writer locks in which *how a thread waits* is
//! a separate, pluggable policy.
//!
//! - [`wait`]: the [`Wait`](wait::Wait) trait and its policies (spin, pause, divides, CAS,
//!   cache miss, backoff, yield, futex, spin-then-park, umwait, tpause, mwaitx, wfe).
//! - [`lock`]: lock algorithms (TAS, TTAS, ticket, MCS, CLH, fair bitmask), each generic over a
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

/// The lock spinlab recommends when you have no measurement telling you otherwise: a
/// test-and-test-and-set lock whose waiters spin with `pause` for a few microseconds, then
/// sleep on a futex ([`lock::Ttas`] over [`wait::SpinPark`]).
///
/// Why this one:
/// - Uncontended, it is one compare-and-swap to lock and one swap to unlock, with no system
///   call: the cost of `std::sync::Mutex`.
/// - Briefly contended (critical sections shorter than the spin budget), waiters never pay
///   a sleep and wake-up, which dominate the hand-off time of a pure futex lock.
/// - Oversubscribed or long critical sections, waiters stop burning the CPU the holder
///   needs: seed 000 measured a spinning waiter slowing its co-runner by up to 50%, seed 004
///   found sleeping beat backoff for a herd.
/// - It does not queue. Queue locks (MCS, CLH, ticket) hand over in order, which collapses
///   when a waiter is preempted and threads outnumber CPUs; the `fair` lock is there when
///   you need fairness more than throughput.
///
/// `spinlab run contention` measures it against the others on your machine.
pub type DefaultRawMutex = lock::Ttas<wait::SpinPark>;

/// A mutex over spinlab's default lock ([`DefaultRawMutex`]); see its docs for why.
pub type Mutex<T> = lock_api::Mutex<DefaultRawMutex, T>;

/// The guard of a [`Mutex`].
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, DefaultRawMutex, T>;
