//! `interference`'s row: one active workload beside waiters of one policy.

use super::{row_type, Nullable};

row_type! {
    /// How much waiters of one policy, at one placement, slow an active workload down, and
    /// what the waiters themselves did meanwhile.
    InterferenceRow for "interference" {
        active: Option<String>,
        behaviour: Option<String>,
        wait: Option<String>,
        lock: Option<String>,
        waiters: Option<u64>,
        placement: Option<String>,
        skipped: Option<String>,
        active_cpu: Option<u64>,
        waiter_cpus: Option<String>,
        slowdown_pct: Option<f64>,
        slowdown_median_pct: Option<f64>,
        slowdown_sd_pct: Option<f64>,
        slowdown_ci95_pct: Nullable<f64>,
        slowdown_min_pct: Option<f64>,
        slowdown_max_pct: Option<f64>,
        reps: Option<u64>,
        isolated_s: Nullable<f64>,
        corun_s: Nullable<f64>,
        stop: Option<String>,
        cpu_slowdown_pct: Option<f64>,
        cpu_slowdown_ci95_pct: Nullable<f64>,
        isolated_cpu_share_pct: Nullable<f64>,
        corun_cpu_share_pct: Nullable<f64>,
        waiter_cpu_pct: Option<f64>,
        waiter_cpu_ci95_pct: Nullable<f64>,
        reread_ns: Option<f64>,
        reread_ci95_ns: Nullable<f64>,
        waiter_sleeps: Option<u64>,
        active_ipc: Option<f64>,
        isolated_ipc: Option<f64>,
        units: Option<u64>,
        attempts: Option<u64>,
        moved_under_ns: Option<Vec<[f64; 2]>>,
        line_transfer_cpus: Option<String>,
        line_transfer_before_ns: Option<f64>,
        line_transfer_after_ns: Option<f64>,
        core_busy_neighbour_before_pct: Nullable<f64>,
        core_busy_neighbour_after_pct: Nullable<f64>,
        core_shared: Option<String>,
    }
}
