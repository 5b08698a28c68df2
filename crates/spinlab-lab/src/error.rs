//! The lab's one error type: a line for the user, and whether it was their input.

use std::fmt;

/// Why a command failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabError {
    /// The input was wrong (exit status 2): the message names the bad input and what is
    /// accepted.
    Usage(String),
    /// The input was fine but something failed while running (exit status 1).
    Failed(String),
}

impl LabError {
    /// A usage error.
    pub fn usage(message: impl Into<String>) -> LabError {
        LabError::Usage(message.into())
    }

    /// A failure.
    pub fn failed(message: impl Into<String>) -> LabError {
        LabError::Failed(message.into())
    }

    /// The process exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            LabError::Usage(_) => 2,
            LabError::Failed(_) => 1,
        }
    }
}

impl fmt::Display for LabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabError::Usage(m) | LabError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for LabError {}
