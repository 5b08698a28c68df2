//! `apps`'s row: one program of the suite under one lock, or under glibc (no library).

use super::{row_type, Nullable};

row_type! {
    /// A program's own metric under one lock, and its ratio to the same program under glibc
    /// (docs/apps.md).
    AppsRow for "apps" {
        program: Option<String>,
        lock: Option<String>,
        lock_name: Option<String>,
        origin: Option<String>,
        metric: Option<String>,
        unit: Option<String>,
        better: Option<String>,
        skipped: Option<String>,
        failed: Option<String>,
        metric_value: Option<f64>,
        metric_median_value: Option<f64>,
        metric_sd_value: Option<f64>,
        metric_ci95_value: Nullable<f64>,
        metric_min_value: Option<f64>,
        metric_max_value: Option<f64>,
        reps: Option<u64>,
        stop: Option<String>,
        ratio_to_glibc: Nullable<f64>,
        ratio_ci95_to_glibc: Nullable<f64>,
        wall_s: Option<f64>,
    }
}
