//! The trade-off between what a wait policy costs a thread doing work and how quickly it
//! wakes: one point per policy at one placement, from the wake-up rows of this experiment and
//! the interference experiment's slowdowns where it measured the same policies there. The
//! wake-up figure draws it; the recommendation picks its kindest and its quickest policy.

use crate::reading::{measured, Context};
use crate::results::Row;

/// The placements in closeness order, for charts that pick the most telling one.
pub const PLACEMENT_ORDER: [&str; 5] = ["smt", "same-cpu", "core", "llc", "node"];

/// The wake-up rows of the long computation (the one whose Twork shows interference).
pub fn long_computation<'a>(rows: &[&'a Row]) -> Vec<&'a Row> {
    let rows = measured(rows.iter().copied());
    let largest = rows.iter().filter_map(|r| r.number("matrix_n")).fold(f64::NAN, f64::max);
    rows.into_iter().filter(|r| largest.is_nan() || r.number("matrix_n") == Some(largest)).collect()
}

/// A wait policy's (name, interference %, wake-up ns).
pub type PolicyPoint = (String, f64, f64);

/// Per wait policy at one placement: (interference %, wake-up ns, what the interference is).
pub fn tradeoff(ctx: &Context<'_>) -> Option<(String, Vec<PolicyPoint>, &'static str)> {
    let wake = ctx.rows_of("wakeup");
    let wake = long_computation(&wake);
    let inter = measured(ctx.rows_of("interference"));
    for placement in PLACEMENT_ORDER {
        // Interference's own slowdowns where it measured these policies here; else the
        // worker's slowdown in the wake-up experiment. Never a mix of the two.
        let mut from_interference = Vec::new();
        let mut from_wakeup = Vec::new();
        for row in wake.iter().filter(|r| r.text("placement") == Some(placement)) {
            let Some(wait) = row.text("wait") else { continue };
            let Some(latency) = row.number("twakeup_ns") else { continue };
            let slowdowns: Vec<f64> = inter
                .iter()
                .filter(|r| r.text("wait") == Some(wait) && r.text("placement") == Some(placement))
                .filter_map(|r| r.number("slowdown_pct"))
                .collect();
            if !slowdowns.is_empty() {
                from_interference.push((
                    wait.to_string(),
                    slowdowns.iter().sum::<f64>() / slowdowns.len() as f64,
                    latency,
                ));
            }
            if let Some(pct) = row.number("twork_vs_alone_pct") {
                from_wakeup.push((wait.to_string(), pct, latency));
            }
        }
        if from_interference.len() >= 2 {
            return Some((placement.to_string(), from_interference, "mean slowdown of the interference workloads"));
        }
        if from_wakeup.len() >= 2 {
            return Some((
                placement.to_string(),
                from_wakeup,
                "slowdown of the worker's computation while the waiter waits (Twork vs alone)",
            ));
        }
    }
    None
}
