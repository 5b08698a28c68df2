//! `barrier`'s row: one barrier in one scenario at one placement.

use super::{row_type, Nullable};

row_type! {
    /// Scenario `3a`'s Twork, Twakeup and Tcall at a barrier, or scenario `3b`'s completion
    /// time at one light load (seed 001 Table 2, Fig. 4).
    BarrierRow for "barrier" {
        scenario: Option<String>,
        barrier: Option<String>,
        placement: Option<String>,
        light_units: Option<u64>,
        matrix_n: Option<u64>,
        cpus: Option<String>,
        skipped: Option<String>,
        twork_s: Option<f64>,
        twork_median_s: Option<f64>,
        twork_sd_s: Option<f64>,
        twork_ci95_s: Nullable<f64>,
        twork_min_s: Option<f64>,
        twork_max_s: Option<f64>,
        completion_s: Option<f64>,
        completion_median_s: Option<f64>,
        completion_sd_s: Option<f64>,
        completion_ci95_s: Nullable<f64>,
        completion_min_s: Option<f64>,
        completion_max_s: Option<f64>,
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
        iterations: Option<u64>,
        barrier_ns: Option<f64>,
        stop: Option<String>,
        ratio_to_pthread: Option<f64>,
    }
}
