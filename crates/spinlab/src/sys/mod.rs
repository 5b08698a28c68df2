//! What spinlab's primitives stand on, from the OS and the CPU: one small file each. Public
//! so that code built on spinlab sleeps, decides and reads time as the primitives do; nothing
//! here exists for measurement alone (the lab keeps its own helpers, such as the CPU's brand
//! string, in its own crate).
//!
//! - [`futex`]: sleep while a word holds a value, wake the sleepers on a word. The C
//!   condition variable sleeps here, and the lab times these calls as floors.
//! - [`cpu`]: the wait instructions this CPU has, and how many CPUs this process may run on:
//!   what the policies' availability and the default lock's choice rest on.
//! - [`tsc`]: the cycle counter and its rate, which the hardware policies' deadlines and
//!   backoff count in.
//! - [`phases`]: where the calling thread's waits went (asleep, yielding) and the wake-ups it
//!   sent, counted only with the `phases` feature, for the preload library's profiler.
//! - [`topology`]: the CPUs' groups at the core, last-level cache and NUMA node levels, and
//!   which group the calling thread runs in: what the topology-aware locks choose by.
//! - [`measured`]: the cells that keep what the others measure on first use, without a lock,
//!   so that a child forked mid-measurement never waits for its parent's thread.

pub mod cpu;
pub mod futex;
pub mod measured;
pub mod phases;
pub mod topology;
pub mod tsc;
