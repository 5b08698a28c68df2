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
//!
//! Names come from the `spinlab-registry` crate: every lock by its `algorithm:policy` name,
//! plus the reference locks (`std`, `parking_lot`, `pthread`), for the lab, the C ABI and the
//! preload library.
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
// Under loom the models make their settings here; elsewhere only the unit tests do.
#[cfg(loom)]
#[doc(hidden)]
pub mod testing;
#[cfg(not(loom))]
mod testing;

pub mod barrier;
pub mod condvar;
pub mod event;
pub mod lock;
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
/// yield that came back at once while the holder left the lock's line alone), then sleep on
/// a futex. Where the process may run on more
/// than 4 CPUs, the waiters first queue at an MCS gate, and only the queue's head waits for
/// the word. (The registry, and so the C ABI and the preload library, builds whichever of the
/// two this machine gets once, when it builds its table: [`lock::Adaptive`]'s docs say why.)
///
/// Why this one:
/// - Uncontended, it is one compare-and-swap to lock and one to unlock, with no system call:
///   the cost of `std::sync::Mutex`. It takes 8 bytes: the word and the gate's tail, which holds a
///   queue node's 32-bit number rather than its address.
/// - Contended, a running thread takes a free lock at once (barging), so the lock never waits
///   for a sleeping or preempted thread to be scheduled: the convoy that makes strict FIFO
///   locks collapse when threads outnumber CPUs.
/// - On a machine of a few CPUs, every waiter waits on the word and stays runnable while it
///   waits a little, so a CPU whose pinned threads all wait is not left idle, as it is under a
///   queue whose waiters sleep in turn.
/// - On a larger machine that crowd of waiters would be many CPUs, each taking the lock's line
///   from the holder; behind the gate only the queue's head looks at the word, and the others
///   wait on their own queue nodes.
/// - Barging is bounded: a waiter that has waited 0.5 ms claims the next release
///   ([`lock::STARVATION_NS`]), as parking_lot's eventual fairness and the Linux mutex's
///   hand-off bit do.
///
/// The measurements behind each choice are in docs/design.md, "The default lock".
/// `bounded:pause-yield-park` (the word alone, 4 bytes), `mcs:pause-yield-park` (always gated)
/// and `ttas:spin-park` (the seeds' subject) stay in the registry: `spinlab run contention`
/// and `spinlab app` measure them against the others on your machine.
///
/// ```
/// assert_eq!(size_of::<spinlab::DefaultRawMutex>(), 8, "the word and the gate's tail");
/// ```
pub type DefaultRawMutex = lock::Adaptive<wait::PauseYieldPark>;

/// A mutex over spinlab's default lock ([`DefaultRawMutex`]); see its docs for why.
pub type Mutex<T> = lock_api::Mutex<DefaultRawMutex, T>;

/// The guard of a [`Mutex`].
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, DefaultRawMutex, T>;
