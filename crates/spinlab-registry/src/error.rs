//! Why a name could not be turned into a primitive.

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
