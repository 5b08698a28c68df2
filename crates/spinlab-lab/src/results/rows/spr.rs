//! `spr`'s row: one application under one barrier (or serial) at one placement.

use super::{row_type, Nullable};

row_type! {
    /// The computation's wall time with a helper thread throttled by a barrier, and its
    /// speed-up over the serial run (seed 001 §4.4).
    SprRow for "spr" {
        app: Option<String>,
        barrier: Option<String>,
        placement: Option<String>,
        cpus: Option<String>,
        skipped: Option<String>,
        time_s: Option<f64>,
        time_median_s: Option<f64>,
        time_sd_s: Option<f64>,
        time_ci95_s: Nullable<f64>,
        time_min_s: Option<f64>,
        time_max_s: Option<f64>,
        reps: Option<u64>,
        speedup: Option<f64>,
        worker_sync_pct: Nullable<f64>,
        equal_to_serial: Option<bool>,
        stop: Option<String>,
    }
}
