//! `handoff`'s row: one lock's hand-over (or the bare line's) at one placement.

use super::{row_type, Nullable};

row_type! {
    /// The time from a holder's release to the waiter's acquisition, and its ratio to the
    /// bare line's hand-over measured in the same rounds.
    HandoffRow for "handoff" {
        lock: Option<String>,
        origin: Option<String>,
        wait: Nullable<String>,
        placement: Option<String>,
        cpus: Option<String>,
        hold_ns: Option<u64>,
        skipped: Option<String>,
        handoff_ns: Option<f64>,
        handoff_median_ns: Option<f64>,
        handoff_sd_ns: Option<f64>,
        handoff_ci95_ns: Nullable<f64>,
        handoff_min_ns: Option<f64>,
        handoff_max_ns: Option<f64>,
        reps: Option<u64>,
        stop: Option<String>,
        ratio_to_floor: Option<f64>,
        counter_offset_ns: Option<f64>,
        below_floor: Option<String>,
        p99_handoff_ns: Option<f64>,
        max_handoff_ns: Option<f64>,
    }
}
