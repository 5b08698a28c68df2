//! Row keys that name a configuration and that more than one experiment writes, shared by
//! the experiments that write them and the code that reads them (docs/results.md).

/// The lock, by registry name (`ttas:spin`, `std`).
pub const LOCK: &str = "lock";
/// The wait policy, by registry name.
pub const WAIT: &str = "wait";
/// The barrier, by registry name.
pub const BARRIER: &str = "barrier";
/// Threads taking part.
pub const THREADS: &str = "threads";
/// Where the threads run relative to each other (`smt`, `core`, …), or `spread`.
pub const PLACEMENT: &str = "placement";
/// `spinlab` or `reference` (std, parking_lot, pthread).
pub const ORIGIN: &str = "origin";
/// What a floor row measures (`ping-pong`, `wait-period`, …).
pub const MEASURE: &str = "measure";

/// Set on a row whose figure is below its physical floor by more than both intervals: why, in
/// words. The report lists every such row under its figure.
pub const BELOW_FLOOR: &str = "below_floor";
