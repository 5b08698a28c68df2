//! `floor`'s row: one physical limit of the machine.

use super::{row_type, Nullable};

row_type! {
    /// One floor measure (`measure`): per operation, per loop iteration, per hand-over or per
    /// wake-up, at the policy, placement and CPUs it names.
    FloorRow for "floor" {
        measure: Option<String>,
        ns: Option<f64>,
        median_ns: Option<f64>,
        sd_ns: Option<f64>,
        ci95_ns: Nullable<f64>,
        min_ns: Option<f64>,
        max_ns: Option<f64>,
        reps: Option<u64>,
        stop: Option<String>,
        wait: Option<String>,
        placement: Option<String>,
        cpus: Option<String>,
        skipped: Option<String>,
        spin_phase_ns: Option<f64>,
        max_wakeup_ns: Option<f64>,
        p99_wakeup_ns: Option<f64>,
        wakeups: Option<u64>,
        discarded: Option<u64>,
        yielder_cpu_share: Option<f64>,
        yields_per_rep: Option<f64>,
    }
}
