//! Asking the OS for a large allocation before making it.
//!
//! Rust aborts the process when an allocation fails. The few allocations whose size comes
//! from the command line (workload matrices, the SPR kernels' data) are tried first with
//! `try_reserve_exact`, which returns the refusal (an address-space limit such as `ulimit -v`,
//! or more than the kernel will overcommit) instead, so it becomes a one-line error.

use crate::error::LabError;

/// Whether the OS grants `bytes` for `what` right now: the block is reserved and given back at
/// once; the caller then allocates it for real.
pub fn check_room(bytes: u64, what: &str) -> Result<(), LabError> {
    let granted = usize::try_from(bytes).is_ok_and(|b| Vec::<u8>::new().try_reserve_exact(b).is_ok());
    if granted {
        Ok(())
    } else {
        Err(LabError::usage(format!(
            "the system refused {} MiB of memory for {what}; choose smaller sizes, or raise the \
             process's memory limit (ulimit -v)",
            bytes.div_ceil(1 << 20)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_possible_block_is_granted_and_an_impossible_one_refused() {
        assert!(check_room(1 << 20, "a test").is_ok());
        // Half of a 64-bit address space: no kernel maps it.
        let err = check_room(1 << 63, "a test buffer").unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("refused") && err.to_string().contains("a test buffer"), "{err}");
    }
}
