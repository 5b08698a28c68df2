//! The one table of names → constructors that the lab, the C ABI and the preload library all
//! read, in the role Concurrency Kit's regression adapters play: every primitive reached by
//! name, through the same small set of verbs.
//!
//! Locks are named `algorithm:policy` (`ttas:pause`, `mcs:spin-park`, `fair:futex`); the
//! reference locks people already use are `std`, `parking_lot` and `pthread`, so every
//! measurement can put them side by side with spinlab's.
//!
//! Barriers are `barrier:POLICY` and wait/notify events `event:POLICY`, with the references
//! `std` and `pthread` ([`new_barrier`], [`new_event`]); reader-writer locks are
//! `rw-writer:POLICY` (writer-preferring) and `rw-phase:POLICY` (phase-fair), with the
//! references `std`, `parking_lot` and `pthread` ([`new_rwlock`]).
//!
//! Locks, spinlab's barriers and most reader-writer locks also have a form for memory the
//! caller owns (their `Raw…Ops` tables); [`InPlace::fits`] says whether it fits a given room.
//!
//! ```
//! use spinlab_registry;
//! let lock = registry::new_lock("mcs:spin-park").unwrap();
//! lock.lock();
//! assert!(!lock.try_lock());
//! // SAFETY: this thread holds the lock.
//! unsafe { lock.unlock() };
//! let err = registry::new_lock("mcs:sleepy").err().unwrap();
//! assert!(err.to_string().contains("ttas:spin") || err.to_string().contains("ttas"));
//! ```

mod barriers;
mod events;
mod fits;
mod in_place;
mod locks;
mod rwlocks;
mod table;

pub use barriers::{
    barrier_info, barrier_names, barriers, new_barrier, BarrierEntry, DynBarrier, RawBarrierOps, REFERENCE_BARRIERS,
};
pub use events::{event_info, event_names, events, new_event, DynEvent, EventEntry, REFERENCE_EVENTS};
pub use fits::{DoesNotFit, InPlace};
pub use in_place::{DynMutex, RawLockOps};
pub use locks::{lock_info, lock_names, locks, new_lock, LockEntry, ALGORITHMS, REFERENCE_LOCKS};
pub use rwlocks::{
    new_rwlock, rwlock_info, rwlock_names, rwlocks, DynRwLock, RawRwLockOps, RwFairness, RwLockEntry,
    REFERENCE_RWLOCKS, RW_ALGORITHMS,
};
pub use table::{Entry, Table};

use spinlab::wait::Unavailable;
use std::fmt;

/// Why a name could not be turned into a primitive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryError {
    /// No entry has this name. `expected` says what names look like and lists them.
    Unknown {
        /// The name asked for.
        name: String,
        /// What is accepted, for the error message.
        expected: String,
    },
    /// The entry exists but this CPU cannot run its wait policy.
    Unavailable {
        /// The name asked for.
        name: String,
        /// The missing feature.
        reason: Unavailable,
    },
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::Unknown { name, expected } => write!(f, "unknown name `{name}`: {expected}"),
            RegistryError::Unavailable { name, reason } => write!(f, "`{name}` is unavailable here: {reason}"),
        }
    }
}

impl std::error::Error for RegistryError {}

/// Whether an entry is one of spinlab's own primitives or a reference it is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// spinlab's algorithm over one of its wait policies.
    Spinlab,
    /// A primitive people already use (std, parking_lot, pthread).
    Reference,
}

/// The policy names, comma-separated, for error messages.
pub(crate) fn policy_list() -> String {
    spinlab::wait::policies().iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}
