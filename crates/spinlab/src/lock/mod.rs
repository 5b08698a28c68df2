//! Lock algorithms. Each is one file, generic over a [`Wait`](crate::wait::Wait) policy, and
//! implements `lock_api`'s raw traits: [`lock_api::RawMutex`] and [`lock_api::RawMutexTimed`]
//! for all, [`lock_api::RawMutexFair`] for those that hand the lock over in order.
//!
//! | lock     | from      | uncontended cost        | order of hand-over            |
//! |----------|-----------|-------------------------|-------------------------------|
//! | [`Tas`]  |           | swap + store            | none (whoever's atomic wins)  |
//! | [`Ttas`] | seed 000  | swap + store            | none                          |
//! | [`Ticket`] |         | fetch-add + store       | FIFO                          |
//! | [`Mcs`]  |           | swap + store            | FIFO in the queue, each waiter on its own line; a bypass bound for the rest |
//! | [`Clh`]  |           | swap + store            | FIFO, each waiter on its predecessor's line |
//! | [`Fair`] | seed 003  | bit-set + CAS           | round-robin over waiters' slots |
//! | [`Bounded`] |        | CAS + CAS (AMD: load, fetch-sub) | none, but a bypass bound in time |
//! | [`Gated`] |          | CAS + CAS (AMD: load, fetch-sub) | waiters queue in the gate's order; a bypass bound in time |
//! | [`Adaptive`] |       | CAS + CAS (AMD: load, fetch-sub) | `Bounded`'s on up to 4 CPUs, `Gated` over an MCS queue on more |
//!
//! (Costs are for pure spin policies; with a policy that may sleep, the unlocks of `Tas`,
//! `Ttas` and `Mcs` become a swap, so they can see whether to wake anyone, and `Ticket`'s
//! store is followed by two read-modify-writes: the bump of the next ticket's waiting-array
//! slot and a read of its sleeper count. On an AMD CPU the `Bounded` word's unlock subtracts
//! `LOCKED` where it finds nothing else in the word, cheaper than a CAS there and dearer on
//! the Intel guest measured; elsewhere, and when the word holds more, it makes a CAS. A
//! `Gated` unlock first reads whether the gate is held.)
//!
//! Fairness guarantees, precisely:
//!
//! - `Tas`, `Ttas`: none. A waiter can be passed over without bound (seed 003's Table 4).
//! - `Ticket`, `Clh`: FIFO among the waiters that joined the queue with `lock()`: no
//!   waiter is passed over once it has its ticket or node in the queue.
//! - `Mcs`: FIFO among the waiters in the queue, and each of them passed over by at most one
//!   acquisition of each other thread: those that found the queue empty just before it
//!   joined. Its lock is a word of its own (as in Linux's queued spinlock), taken with one
//!   atomic while nobody is queued; every later attempt lines up in the queue.
//! - In all three, a timed waiter that gives up leaves the order; a `Ticket` timed
//!   acquisition takes no ticket and is not served in order (see [`Ticket`]).
//! - `Fair`: every waiter holding a slot gets the lock within one turn of the round-robin,
//!   that is after at most one acquisition by each other slot holder (seed 003). Past 62
//!   waiters, a thread without a slot takes the lock if it finds it free, and a slot that a
//!   holder gives back at the end of its wait: sleepers in the order they went to sleep, but
//!   a thread still spinning (spinning policies), or one that has just come, first, so no
//!   bound. With a policy that may sleep, such a thread sleeps after one look. As the gate
//!   of a [`Gated`] lock (the registry's `fair` over sleeping policies), each thread moves to
//!   a random free slot every 8th wait, so that which thread follows which changes: each
//!   other slot holder passes a waiter at most twice in one turn there
//!   (`fair_slots::WAITS_PER_MOVE`).
//! - `Bounded`: a bypass bound in time: a running waiter that has waited
//!   [`STARVATION_NS`] gets the lock after at most the current holder and one earlier claimant
//!   (see [`Bounded`]).
//!
//! - `Gated<L, W>`: the waiters that found the lock taken (and, on a machine of at most
//!   [`DEFAULT_CROWD_CPUS`] CPUs over a policy that may sleep, still taken after a look of
//!   about 1 µs) queue in `L`'s order (FIFO, or the fair lock's round-robin); the one at the
//!   head is passed over by running threads for at most [`STARVATION_NS`] of its own waiting
//!   before it claims the next release, and, while it is not running, for at most
//!   [`HEAD_STALL_NS`] of each holder's releases before that holder yields its CPU to it (see
//!   [`Gated`]).
//!
//! - `Adaptive<W>`: `Bounded`'s bound where the process may run on at most
//!   [`DEFAULT_CROWD_CPUS`] CPUs, and `Gated<McsQueue<W>, W>`'s on more (see [`Adaptive`]).
//!
//! The in-order locks pay for their guarantee when threads outnumber CPUs: they hand the lock
//! to the next waiter in line whether or not it is running, so every hand-over waits for that
//! thread to be scheduled (a time slice with a spinning policy, a wake-up with a sleeping one)
//! while runnable threads wait behind it. That convoy takes them to a few percent of a
//! barging lock's throughput. `Bounded` and `Ttas` never hand the lock to a thread that is
//! not running (`Bounded`'s claimant is running when it claims), and [`Gated`] puts an
//! in-order lock in front of a `Bounded` word, so that only its waiters keep the order: the
//! registry builds `ticket`, `mcs`, `clh` and `fair` that way for the policies whose waiters
//! give their CPU away: those that may sleep, and `yield`.

mod adaptive;
mod bounded;
mod clh;
mod fair;
mod fair_slots;
mod gated;
mod mcs;
mod queue_node;
mod tas;
mod ticket;
mod ttas;
mod word;

pub use adaptive::{Adaptive, Owed, DEFAULT_CROWD_CPUS};
#[cfg(loom)]
#[doc(hidden)]
pub use bounded::{loom_release_by_cas, loom_starve_at_look};
pub use bounded::{Bounded, STARVATION_NS};
pub use clh::{Clh, ClhGuard};
pub use fair::{Fair, FAIR_SLOTS};
#[cfg(loom)]
#[doc(hidden)]
pub use fair_slots::{loom_fair_moves, loom_fair_slots};
pub use gated::{Gate, Gated, Room, HEAD_STALL_NS};
pub use mcs::{Mcs, McsGuard, McsQueue};
pub use tas::{Tas, TestAndSet};
#[cfg(loom)]
#[doc(hidden)]
pub use ticket::loom_ticket_timed_sleepers_at_most;
pub use ticket::Ticket;
pub use ttas::{TestAndTestAndSet, Ttas};
pub use word::{Probe, WordLock};

use std::time::{Duration, Instant};

/// The instant `timeout` from now, or `None` (wait forever) if that is past what `Instant`
/// can represent.
#[inline]
pub(crate) fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// Implements `RawMutexTimed` for a lock with an inherent
/// `lock_until(&self, Option<Instant>) -> Option<Guard>`.
macro_rules! timed_via_lock_until {
    ($lock:ident) => {
        $crate::lock::timed_via_lock_until!($lock<W>, W);
    };
    // A lock with a const parameter after its policy.
    ($lock:ident, const $param:ident: $ty:ty) => {
        $crate::lock::timed_via_lock_until!($lock<W, $param>, W, const $param: $ty);
    };
    ($lock:ty, W $(, const $param:ident: $ty:ty)?) => {
        // SAFETY: `lock_until` acquires exactly as `lock` does, or returns `None` having left
        // the lock's state consistent (documented per lock).
        unsafe impl<W: $crate::wait::Wait $(, const $param: $ty)?> lock_api::RawMutexTimed for $lock {
            type Duration = std::time::Duration;
            type Instant = std::time::Instant;

            #[inline]
            fn try_lock_for(&self, timeout: std::time::Duration) -> Option<Self::Guard> {
                self.lock_until($crate::lock::deadline_after(timeout))
            }

            #[inline]
            fn try_lock_until(&self, deadline: std::time::Instant) -> Option<Self::Guard> {
                self.lock_until(Some(deadline))
            }
        }
    };
}
pub(crate) use timed_via_lock_until;
