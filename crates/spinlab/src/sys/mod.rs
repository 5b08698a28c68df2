//! What spinlab needs from the OS and the CPU: one small file each.

pub mod cpu;
pub mod futex;
pub mod tsc;
