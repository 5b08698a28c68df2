//! The trade-off between what a wait policy costs a thread doing work and how quickly it
//! wakes: one point per policy at one placement, from the wake-up rows of this experiment and
//! the interference experiment's slowdowns where it measured the same policies there. The
//! wake-up figure draws it; the recommendation picks its kindest and its quickest policy.

use super::{KEY_MATRIX_N, TWAKEUP_NS, TWORK_VS_ALONE_PCT};
use crate::experiments::interference::{SLOWDOWN_PCT, WAITER_CPU_PCT};
use crate::reading::scorecard::{mean_of, Estimate};
use crate::reading::{measured, Context};
use crate::results::keys::{PLACEMENT, WAIT};
use crate::results::Row;

/// The placements in closeness order, for charts that pick the most telling one.
pub const PLACEMENT_ORDER: [&str; 5] = ["smt", "same-cpu", "core", "llc", "node"];

/// The wake-up rows of the long computation (the one whose Twork shows interference).
pub fn long_computation<'a>(rows: &[&'a Row]) -> Vec<&'a Row> {
    let rows = measured(rows.iter().copied());
    let largest = rows.iter().filter_map(|r| r.number(KEY_MATRIX_N)).fold(f64::NAN, f64::max);
    rows.into_iter().filter(|r| largest.is_nan() || r.number(KEY_MATRIX_N) == Some(largest)).collect()
}

/// One wait policy on the trade-off.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyPoint {
    /// The policy's name.
    pub wait: String,
    /// What it costs the thread doing work, in percent ([`Tradeoff::interference`] says which
    /// slowdown).
    pub interference_pct: f64,
    /// Its 95% half-interval (0 where the figure has none).
    pub interference_ci95_pct: f64,
    /// Its wake-up latency, Twakeup.
    pub wakeup_ns: f64,
}

/// The trade-off at one placement.
#[derive(Clone, Debug, PartialEq)]
pub struct Tradeoff {
    /// Where the waiter runs relative to the worker.
    pub placement: String,
    /// Two or more policies.
    pub points: Vec<PolicyPoint>,
    /// What the interference figure is.
    pub interference: &'static str,
}

/// The trade-off at the closest placement where two or more policies have both figures.
pub fn tradeoff(ctx: &Context<'_>) -> Option<Tradeoff> {
    let wake = ctx.rows_of("wakeup");
    let wake = long_computation(&wake);
    let inter = measured(ctx.rows_of("interference"));
    for placement in PLACEMENT_ORDER {
        // Interference's own figure where it measured these policies here; else the worker's
        // slowdown in the wake-up experiment. Never a mix of the two. On a shared CPU the
        // figure is what the waiters take of it, from the threads' own clocks, which other
        // processes' turns on that CPU leave alone (results from before it have the wall
        // slowdown only, which idle comes to the same).
        let (key, what) = match placement {
            "same-cpu" if inter.iter().any(|r| r.number(WAITER_CPU_PCT).is_some()) => (
                WAITER_CPU_PCT,
                "mean CPU time the waiters took on the worker's CPU, as a share of the worker's, over the \
                 interference workloads",
            ),
            _ => (SLOWDOWN_PCT, "mean slowdown of the interference workloads"),
        };
        let mut from_interference = Vec::new();
        let mut from_wakeup = Vec::new();
        for row in wake.iter().filter(|r| r.text(PLACEMENT) == Some(placement)) {
            let Some(wait) = row.text(WAIT) else { continue };
            let Some(wakeup_ns) = row.number(TWAKEUP_NS) else { continue };
            let slowdowns: Vec<Estimate> = inter
                .iter()
                .filter(|r| r.text(WAIT) == Some(wait) && r.text(PLACEMENT) == Some(placement))
                .filter_map(|r| Estimate::of(r, key))
                .collect();
            if let Some(mean) = mean_of(&slowdowns) {
                from_interference.push(PolicyPoint {
                    wait: wait.to_string(),
                    interference_pct: mean.value,
                    interference_ci95_pct: mean.ci95,
                    wakeup_ns,
                });
            }
            if let Some(pct) = row.number(TWORK_VS_ALONE_PCT) {
                let point = PolicyPoint {
                    wait: wait.to_string(),
                    interference_pct: pct,
                    interference_ci95_pct: 0.0,
                    wakeup_ns,
                };
                from_wakeup.push(point);
            }
        }
        let found = |points, interference| Some(Tradeoff { placement: placement.to_string(), points, interference });
        if from_interference.len() >= 2 {
            return found(from_interference, what);
        }
        if from_wakeup.len() >= 2 {
            return found(from_wakeup, "slowdown of the worker's computation while the waiter waits (Twork vs alone)");
        }
    }
    None
}

/// One wait policy's wake-up latency.
#[derive(Clone, Debug, PartialEq)]
pub struct WakeupPoint {
    /// The policy's name.
    pub wait: String,
    /// Its wake-up latency, Twakeup.
    pub wakeup_ns: f64,
    /// Its 95% half-interval.
    pub wakeup_ci95_ns: f64,
}

/// The wake-up latencies at one placement.
#[derive(Clone, Debug, PartialEq)]
pub struct Wakeups {
    /// Where the waiter ran relative to the worker.
    pub placement: String,
    /// Two or more policies.
    pub points: Vec<WakeupPoint>,
}

/// The wake-up latencies (long computation) at the closest placement where the waiter has a
/// CPU of its own (not `same-cpu`) and two or more policies were measured: what a waiter
/// whose co-runners do not mind it costs to wake. On a shared CPU a spinning waiter holds the
/// CPU its notifier needs, so its wake-up there says nothing about this case.
pub fn wakeups_apart(ctx: &Context<'_>) -> Option<Wakeups> {
    let wake = ctx.rows_of("wakeup");
    let wake = long_computation(&wake);
    PLACEMENT_ORDER.iter().filter(|&&p| p != "same-cpu").find_map(|&placement| {
        let points: Vec<WakeupPoint> = wake
            .iter()
            .filter(|r| r.text(PLACEMENT) == Some(placement))
            .filter_map(|r| {
                let wakeup = Estimate::of(r, TWAKEUP_NS)?;
                Some(WakeupPoint {
                    wait: r.text(WAIT)?.to_string(),
                    wakeup_ns: wakeup.value,
                    wakeup_ci95_ns: wakeup.ci95,
                })
            })
            .collect();
        (points.len() >= 2).then(|| Wakeups { placement: placement.to_string(), points })
    })
}
