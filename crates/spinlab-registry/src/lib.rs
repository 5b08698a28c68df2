//! spinlab's primitives by name: the one table of names → constructors that the lab, the C
//! ABI and the preload library all read, in the role Concurrency Kit's regression adapters
//! play: every primitive reached by name, through the same small set of verbs.
//!
//! Four kinds, each one [`Table`] of [`Entry`] rows ([`LOCKS`], [`BARRIERS`], [`EVENTS`],
//! [`RWLOCKS`]), each found by name with [`Table::info`] and built with [`Table::build`]:
//!
//! - locks are `algorithm:policy` (`ttas:pause`, `mcs:spin-park`, `fair:futex`), with the
//!   reference locks people already use, `std`, `parking_lot` and `pthread`, so every
//!   measurement can put them side by side with spinlab's;
//! - barriers are `barrier:POLICY` and events `event:POLICY`, with the references `std` and
//!   `pthread`;
//! - reader-writer locks are `rw-writer:POLICY` (writer-preferring), `rw-phase:POLICY`
//!   (phase-fair) and `rw-reader:POLICY` (reader-preferring), with the references `std`,
//!   `parking_lot` and `pthread`.
//!
//! Every entry carries the same facts (name, policy, origin, whether it may sleep, whether
//! this CPU can run it) and its kind's own in `facts`. Locks, spinlab's barriers and most
//! reader-writer locks also have a form for memory the caller owns (their `Raw…Ops` tables);
//! [`Entry::fits`] says whether it fits a given room.
//!
//! ```
//! use spinlab_registry::LOCKS;
//! let lock = LOCKS.build("mcs:spin-park", ()).unwrap();
//! lock.lock();
//! assert!(!lock.try_lock());
//! // SAFETY: this thread holds the lock.
//! unsafe { lock.unlock() };
//! assert!(!LOCKS.info("mcs:spin-park").unwrap().facts.fair, "a gated lock hands over to any runner");
//! let err = LOCKS.build("mcs:sleepy", ()).err().unwrap();
//! assert!(err.to_string().contains("ttas"));
//! ```
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod barriers;
mod error;
mod events;
mod fits;
mod in_place;
mod locks;
mod rwlocks;
mod table;

pub use barriers::{BarrierEntry, BarrierFacts, Barriers, DynBarrier, RawBarrierOps, BARRIERS, REFERENCE_BARRIERS};
pub use error::RegistryError;
pub use events::{DynEvent, EventEntry, Events, EVENTS, REFERENCE_EVENTS};
pub use fits::DoesNotFit;
pub use in_place::{DynMutex, RawLockOps};
pub use locks::{LockEntry, LockFacts, Locks, ALGORITHMS, LOCKS, REFERENCE_LOCKS};
pub use rwlocks::{
    DynRwLock, RawRwLockOps, RwFairness, RwLockEntry, RwLockFacts, RwLocks, REFERENCE_RWLOCKS, RWLOCKS, RW_ALGORITHMS,
};
pub use table::{Entry, Kind, Origin, Table};
