//! `wakeup`'s row: one notify primitive at one placement and computation.

use super::{row_type, Nullable};

row_type! {
    /// Twork, Twakeup and Tcall of one notify primitive (seed 001 Table 1).
    WakeupRow for "wakeup" {
        wait: Option<String>,
        placement: Option<String>,
        computation: Option<String>,
        matrix_n: Option<u64>,
        cpus: Option<String>,
        skipped: Option<String>,
        twork_s: Option<f64>,
        twork_median_s: Option<f64>,
        twork_sd_s: Option<f64>,
        twork_ci95_s: Nullable<f64>,
        twork_min_s: Option<f64>,
        twork_max_s: Option<f64>,
        reps: Option<u64>,
        twakeup_ns: Option<f64>,
        twakeup_median_ns: Option<f64>,
        twakeup_sd_ns: Option<f64>,
        twakeup_ci95_ns: Nullable<f64>,
        twakeup_min_ns: Option<f64>,
        twakeup_max_ns: Option<f64>,
        tcall_ns: Option<f64>,
        tcall_median_ns: Option<f64>,
        tcall_sd_ns: Option<f64>,
        tcall_ci95_ns: Nullable<f64>,
        tcall_min_ns: Option<f64>,
        tcall_max_ns: Option<f64>,
        episodes_per_rep: Option<u64>,
        stop: Option<String>,
        attempts: Option<u64>,
        moved_under_ns: Option<Vec<[f64; 2]>>,
        line_transfer_cpus: Option<String>,
        line_transfer_before_ns: Option<f64>,
        line_transfer_after_ns: Option<f64>,
        twork_vs_alone_pct: Option<f64>,
    }
}
