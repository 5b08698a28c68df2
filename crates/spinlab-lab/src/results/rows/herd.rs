//! `herd`'s row: one lock (or the lock-free floor) at one thread count.

use super::{row_type, Nullable};

row_type! {
    /// A herd's wall and CPU time under one lock, and its ratios to the floor and to the
    /// reference locks at the same thread count.
    HerdRow for "herd" {
        lock: Option<String>,
        origin: Option<String>,
        alias: Option<String>,
        threads: Option<u64>,
        skipped: Option<String>,
        wall_s: Option<f64>,
        wall_median_s: Option<f64>,
        wall_sd_s: Option<f64>,
        wall_ci95_s: Nullable<f64>,
        wall_min_s: Option<f64>,
        wall_max_s: Option<f64>,
        reps: Option<u64>,
        stop: Option<String>,
        user_s: Nullable<f64>,
        sys_s: Nullable<f64>,
        wall_over_floor: Option<f64>,
        acquisitions_per_rep: Option<u64>,
        lost_updates: Option<u64>,
        collapsed: Option<bool>,
        collapse_after_s: Option<f64>,
        collapsed_done_pct: Option<f64>,
        collapsed_ops_s: Option<f64>,
        wall_vs_std: Option<f64>,
        wall_vs_std_ci95: Nullable<f64>,
        wall_vs_parking_lot: Option<f64>,
        wall_vs_parking_lot_ci95: Nullable<f64>,
        wall_vs_pthread: Option<f64>,
        wall_vs_pthread_ci95: Nullable<f64>,
        wall_vs_best_reference: Option<f64>,
        wall_vs_best_reference_ci95: Nullable<f64>,
    }
}
