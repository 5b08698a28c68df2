//! Barriers: `n` threads wait until all `n` have arrived, then all go on, phase after phase.
//!
//! One algorithm, the sense-reversing barrier, over every wait policy: with
//! [`Spin`](crate::wait::Spin) or [`Pause`](crate::wait::Pause) it is seed 001's *spin-loops*
//! barrier, with [`Futex`](crate::wait::Futex) a sleeping one (what a pthread barrier does),
//! and with [`Umwait`](crate::wait::Umwait), [`Mwaitx`](crate::wait::Mwaitx) or
//! [`Wfe`](crate::wait::Wfe) seed 001's monitor/mwait barrier (*mwmon*), run in user mode.
//! [`Compact`] is the same barrier with its two words side by side (16 bytes), for memory that
//! cannot hold two cache lines, such as a `pthread_barrier_t` under the preload library. The
//! registry adds `std::sync::Barrier` and `pthread_barrier_t` as references.
//!
//! Seed 001's mwmon barrier (its Listing 2) counts departures as well as arrivals, so the
//! barrier cannot be re-entered before the last thread has left the previous phase. Sense
//! reversal removes that second count: each phase has its own number, a thread waits for the
//! number to move past the one it arrived in, and a fast thread that arrives at the next phase
//! is counted towards the next phase, not the old one.

mod sense;

pub use sense::{Barrier, Compact};

use core::fmt;

/// What [`Barrier::wait`] returns: whether this thread was the phase's leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarrierWaitResult {
    leader: bool,
}

impl BarrierWaitResult {
    /// `true` for exactly one thread per phase: the last to arrive, which released the others.
    ///
    /// ```
    /// let barrier = spinlab::Barrier::<spinlab::wait::Pause>::new(1).unwrap();
    /// assert!(barrier.wait().is_leader(), "alone, every thread leads");
    /// ```
    #[inline]
    pub fn is_leader(&self) -> bool {
        self.leader
    }
}

/// A barrier cannot be made for this many threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidParties {
    /// The number asked for.
    pub parties: usize,
}

impl fmt::Display for InvalidParties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a barrier needs between 1 and {} threads, not {}", u32::MAX, self.parties)
    }
}

impl std::error::Error for InvalidParties {}
