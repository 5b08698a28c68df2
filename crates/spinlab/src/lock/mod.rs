//! Lock algorithms. Each is one file, generic over a [`Wait`](crate::wait::Wait) policy, and
//! implements `lock_api`'s raw traits: [`lock_api::RawMutex`] and [`lock_api::RawMutexTimed`]
//! for all, [`lock_api::RawMutexFair`] for those that hand the lock over in order.
//!
//! | lock         | from     | uncontended cost                 | fairness guarantee                                   |
//! |--------------|----------|----------------------------------|------------------------------------------------------|
//! | [`Tas`]      |          | swap + store                     | none: a waiter can be passed over without bound      |
//! | [`Ttas`]     | seed 000 | swap + store                     | none (seed 003's Table 4)                            |
//! | [`Ticket`]   |          | fetch-add + store                | FIFO among the waiters that took a ticket            |
//! | [`Mcs`]      |          | swap + store                     | FIFO in the queue, each waiter on its own line; each passed at most once by each thread that found the queue empty |
//! | [`Clh`]      |          | swap + store                     | FIFO, each waiter on its predecessor's line          |
//! | [`Cna`]      |          | swap + store                     | its group's waiters first; at most [`CNA_BYPASS_BOUND`] hand-overs in a row pass the oldest waiter |
//! | [`Hmcs`]     |          | swap + store                     | FIFO in each group; a group keeps the lock for at most [`HMCS_PASS_BOUND`] hand-overs in a row while another waits, and groups take turns in order |
//! | [`CnaGated`], [`HmcsGated`] | | CAS + CAS                 | none for running threads; [`Gated`] over a [`CnaQueue`] or an [`HmcsQueue`]: `Cna`'s or `Hmcs`'s order at the gate, the head's bypass bounded in time |
//! | [`Reciprocating`] |     | swap + CAS                       | segments in order, each newest first: overtaken at most once by each later thread |
//! | [`Hapax`]    |          | swap + CAS                       | FIFO among untimed waiters, no pointer shared        |
//! | [`Fair`]     | seed 003 | bit-set + CAS                    | round-robin: one turn of the slot holders; past 62 waiters, none |
//! | [`Bounded`]  |          | CAS + CAS                        | a bypass bound in time ([`STARVATION_NS`])           |
//! | [`Gated`]    |          | CAS + CAS                        | the gate's order for queued waiters; the head's bypass bounded in time |
//! | [`Adaptive`] |          | CAS + CAS                        | `Bounded`'s on up to 4 CPUs, `Gated` over an MCS queue on more |
//! | [`Malthusian`] |        | its inner lock's, and a load each way | the inner lock's among about one thread per CPU; a passive thread with `k` ahead let in within `(k + 1)` × [`MALTHUSIAN_ROTATION`] acquisitions |
//!
//! Costs are for pure spin policies; with one that may sleep, a word's lock is a CAS and its
//! unlock a swap (`Tas`, `Ttas`, `Mcs`, `Cna`, `Hmcs`), and `spinlab list --wide` gives each.
//!
//! The guarantees in full, where the table is short:
//! - In-order locks: a timed waiter that gives up leaves the order; `Ticket`'s and `Hapax`'s
//!   timed acquisitions take no place and are not served in order.
//! - `Fair`: a slot holder gets the lock after at most one acquisition by each other slot
//!   holder (seed 003); past 62 waiters, no bound. As a [`Gated`] lock's gate, threads move to
//!   a random free slot every 8th wait, so another slot holder passes a waiter at most twice.
//! - `Bounded`: a running waiter that has waited [`STARVATION_NS`] gets the lock after at most
//!   the holder and one other claimant. `Gated<L, W>`: queued waiters in `L`'s order; the head
//!   passed by running threads for at most [`STARVATION_NS`] of its waiting and, while it is
//!   not running, for at most [`HEAD_STALL_NS`] of each holder's releases.
//!
//! In-order locks hand the lock to the next waiter whether or not it runs: with more threads
//! than CPUs, a convoy. Over the policies whose waiters give their CPU away the registry gates
//! `ticket`, `mcs`, `clh`, `fair`, `reciprocating`, `hapax`, `cna` (as `cna-gated`, gated
//! over all) and `hmcs` (as `HmcsGated`); `malthusian` keeps about one thread per CPU in an `Mcs`.

mod adaptive;
mod bounded;
mod clh;
mod cna;
mod cna_gated;
mod fair;
mod fair_slots;
#[cfg(all(test, not(loom)))]
mod gate_tests;
mod gated;
mod hapax;
mod hmcs;
mod hmcs_gated;
mod malthusian;
mod mcs;
mod queue_node;
mod reciprocating;
mod tas;
mod ticket;
mod ttas;
mod word;

pub use adaptive::{Adaptive, Owed, DEFAULT_CROWD_CPUS};
pub use bounded::{Bounded, STARVATION_NS};
pub use clh::{Clh, ClhGuard};
pub use cna::{Cna, CnaQueue, CNA_BYPASS_BOUND};
pub use cna_gated::CnaGated;
pub use fair::Fair;
pub use fair_slots::FAIR_SLOTS;
pub use gated::{Gate, Gated, Room, HEAD_STALL_NS};
pub use hapax::{Hapax, HapaxGuard};
pub use hmcs::{Hmcs, HmcsGuard, HmcsQueue, HMCS_PASS_BOUND};
pub use hmcs_gated::HmcsGated;
pub use malthusian::{Malthusian, MALTHUSIAN_ROTATION};
pub use mcs::{Mcs, McsGuard, McsQueue, QueuedWord};
pub use reciprocating::{Reciprocating, ReciprocatingGuard};
pub use tas::{Tas, TestAndSet};
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
