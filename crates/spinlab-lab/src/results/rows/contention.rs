//! `contention`'s row: one lock at one thread count and placement.

use super::{row_type, Nullable};
use serde::{Deserialize, Serialize};

/// One group's share of a row's acquisitions (`per_group[]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupCount {
    /// The group's name.
    pub group: String,
    /// Its CPUs, as a kernel CPU list.
    pub cpus: String,
    /// Threads pinned to its CPUs.
    pub threads: u64,
    /// Their acquisitions.
    pub acquisitions: u64,
}

/// The share of a row's hand-overs that stayed inside a group at one level of the locks'
/// topology (`handovers_in_group[]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelShare {
    /// `core`, `llc` or `node`.
    pub level: String,
    /// The groups of that level the threads' CPUs fall in.
    pub groups: u64,
    /// Whether `SPINLAB_TOPOLOGY` declared the level's groups (rather than sysfs).
    pub declared: bool,
    /// Hand-overs from a thread of the same group, in percent of hand-overs: mean over
    /// repetitions.
    pub pct: f64,
    /// Half-width of the 95% interval of `pct`.
    #[serde(default)]
    pub ci95_pct: Nullable<f64>,
}

row_type! {
    /// A lock's throughput, fairness, waits and holds at one configuration, its uncontended
    /// pair, and its ratios to the other locks of that configuration.
    ContentionRow for "contention" {
        lock: Option<String>,
        origin: Option<String>,
        alias: Option<String>,
        threads: Option<u64>,
        placement: Option<String>,
        skipped: Option<String>,
        cpus: Option<String>,
        throughput_ops_s: Option<f64>,
        throughput_median_ops_s: Option<f64>,
        throughput_sd_ops_s: Option<f64>,
        throughput_ci95_ops_s: Nullable<f64>,
        throughput_min_ops_s: Option<f64>,
        throughput_max_ops_s: Option<f64>,
        reps: Option<u64>,
        stop: Option<String>,
        drain_max_ms: Option<f64>,
        collapsed: Option<bool>,
        per_thread: Option<Vec<u64>>,
        per_group: Option<Vec<GroupCount>>,
        group_max_min_ratio: Nullable<f64>,
        jain: Nullable<f64>,
        jain_min: Nullable<f64>,
        rsd_pct: Nullable<f64>,
        cpu_busy_pct: Nullable<f64>,
        jain_cpu_time: Nullable<f64>,
        jain_no_lock: Option<f64>,
        jain_no_lock_ci95: Nullable<f64>,
        jain_no_lock_min: Nullable<f64>,
        mean_wait_ns: Nullable<f64>,
        p99_wait_ns: Nullable<f64>,
        max_wait_ns: Nullable<f64>,
        mean_hold_ns: Nullable<f64>,
        max_hold_ns: Nullable<f64>,
        rep_max_wait_ns: Option<f64>,
        rep_max_wait_ci95_ns: Nullable<f64>,
        rep_max_hold_ns: Option<f64>,
        rep_max_hold_ci95_ns: Nullable<f64>,
        rep_max_wait_over_hold_x: Option<f64>,
        rep_max_wait_over_hold_ci95_x: Nullable<f64>,
        bound: Option<String>,
        acquisitions: Option<u64>,
        uncontended_ns: Option<f64>,
        uncontended_ci95_ns: Nullable<f64>,
        uncontended_reps: Option<u64>,
        uncontended_floor_ns: Option<f64>,
        uncontended_floor_ci95_ns: Nullable<f64>,
        uncontended_vs_floor: Option<f64>,
        below_floor: Option<String>,
        lost_updates: Option<u64>,
        handovers_pct: Option<f64>,
        handovers_ci95_pct: Nullable<f64>,
        handovers_in_group: Option<Vec<LevelShare>>,
        throughput_vs_std: Option<f64>,
        throughput_vs_std_ci95: Nullable<f64>,
        throughput_vs_parking_lot: Option<f64>,
        throughput_vs_parking_lot_ci95: Nullable<f64>,
        throughput_vs_pthread: Option<f64>,
        throughput_vs_pthread_ci95: Nullable<f64>,
        throughput_vs_best_reference: Option<f64>,
        throughput_vs_best_reference_ci95: Nullable<f64>,
        throughput_vs_baseline: Option<f64>,
        throughput_vs_baseline_ci95: Nullable<f64>,
        uncontended_vs_best_reference: Option<f64>,
        attempts: Option<u64>,
        moved_under_ns: Option<Vec<[f64; 2]>>,
        line_transfer_cpus: Option<String>,
        line_transfer_before_ns: Option<f64>,
        line_transfer_after_ns: Option<f64>,
    }
}
