//! Lock algorithms. Each is one file, generic over a [`Wait`](crate::wait::Wait) policy, and
//! implements `lock_api`'s raw traits: [`lock_api::RawMutex`] and [`lock_api::RawMutexTimed`]
//! for all, [`lock_api::RawMutexFair`] for those that hand the lock over in order.
//!
//! | lock     | from      | uncontended cost        | order of hand-over            |
//! |----------|-----------|-------------------------|-------------------------------|
//! | [`Tas`]  |           | swap + store            | none (whoever's atomic wins)  |
//! | [`Ttas`] | seed 000  | swap + store            | none                          |
//! | [`Ticket`] |         | fetch-add + store       | FIFO                          |
//! | [`Mcs`]  |           | swap + CAS              | FIFO, each waiter on its own line |
//! | [`Clh`]  |           | swap + store            | FIFO, each waiter on its predecessor's line |
//! | [`Fair`] | seed 003  | bit-set + CAS           | round-robin over waiters' slots |
//! | [`Bounded`] |        | CAS + CAS               | none, but a waiter starving past 0.5 ms claims the next release |
//!
//! (Costs are for pure spin policies; with a policy that may sleep, the unlocks of `Tas` and
//! `Ttas` become a swap, so they can see whether to wake anyone.)

mod bounded;
mod clh;
mod fair;
mod mcs;
mod queue_node;
mod tas;
mod ticket;
mod ttas;
mod word;

pub use bounded::{Bounded, STARVATION_NS};
pub use clh::{Clh, ClhGuard};
pub use fair::{Fair, FAIR_SLOTS};
pub use mcs::{Mcs, McsGuard};
pub use tas::Tas;
pub use ticket::Ticket;
pub use ttas::Ttas;

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
        // SAFETY: `lock_until` acquires exactly as `lock` does, or returns `None` having left
        // the lock's state consistent (documented per lock).
        unsafe impl<W: $crate::wait::Wait> lock_api::RawMutexTimed for $lock<W> {
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
