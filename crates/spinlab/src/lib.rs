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
#[cfg(all(test, not(loom), target_os = "linux", target_arch = "x86_64"))]
mod release_watch;
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

/// The lock spinlab recommends when you have no measurement telling you otherwise
/// ([`lock::Adaptive`] over [`wait::PauseYieldPark`]; the registry calls it
/// `adaptive:pause-yield-park`): a bounded-bypass word ([`lock::Bounded`]) whose waiters pause
/// for 100 ns, then offer the CPU with `sched_yield` up to 64 times (pausing 2 µs after a
/// yield that came back at once), then sleep on a futex;
/// where the process may run on more than 4 CPUs, the waiters first queue at an MCS gate, and
/// only the queue's head waits for the word. (The registry, and so the C ABI and the preload
/// library, builds whichever of the two this machine gets once, when it builds its table:
/// [`lock::Adaptive`]'s docs say why.)
///
/// Why this one:
/// - Uncontended, it is one compare-and-swap to lock and one to unlock (on an AMD CPU, a load
///   and a subtraction, `lock xadd`, which is cheaper there), with no system call: the cost
///   of `std::sync::Mutex`. It takes 8 bytes: the word and the gate's tail, which holds a
///   queue node's 32-bit number rather than its address.
/// - Contended, a running thread takes a free lock at once (barging), so the lock never waits
///   for a sleeping or preempted thread to be scheduled: the convoy that makes strict FIFO
///   locks collapse when threads outnumber CPUs.
/// - On a machine of a few CPUs, every waiter waits on the word and stays runnable while it
///   waits a little: a CPU whose pinned threads all wait is not left idle, which is what held
///   a queue whose waiters sleep in turn (`mcs:spin-yield-park`, the default until
///   2026-11-25) to 0.55-0.76 of the better of parking_lot and std with 16 threads pinned to
///   2 CPUs.
/// - On a larger machine that crowd of waiters is many CPUs, each taking the lock's line from
///   the holder: on a 16-CPU guest the word alone took 3.0-5.4x glibc's time in a program
///   that only takes the lock, and behind the gate 0.52-0.56x (docs/contention.md).
/// - Barging is bounded: a waiter that has waited 0.5 ms claims the next release
///   ([`lock::STARVATION_NS`]), as parking_lot's eventual fairness and the Linux mutex's
///   hand-off bit do.
///
/// `bounded:pause-yield-park` (the word alone, 4 bytes; the default from 2026-11-25 to
/// 2026-11-27) and `mcs:pause-yield-park` (always gated) stay in the registry, and
/// `ttas:spin-park`, an earlier default, stays as the seeds' subject. `spinlab run
/// contention` and `spinlab app` measure them against the others on your machine.
pub type DefaultRawMutex = lock::Adaptive<wait::PauseYieldPark>;

/// A mutex over spinlab's default lock ([`DefaultRawMutex`]); see its docs for why.
pub type Mutex<T> = lock_api::Mutex<DefaultRawMutex, T>;

/// The guard of a [`Mutex`].
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, DefaultRawMutex, T>;
