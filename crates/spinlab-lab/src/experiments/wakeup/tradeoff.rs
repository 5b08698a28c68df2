//! The trade-off between what a wait policy costs a thread doing work and how quickly it
//! wakes: one point per policy at one placement, from the wake-up rows of this experiment and
//! the interference experiment's slowdowns where it measured the same policies there. The
//! wake-up figure draws it; the recommendation picks its kindest and its quickest policy.

use crate::reading::scorecard::{mean_of, Estimate};
use crate::reading::Context;
use crate::results::rows::{InterferenceRow, WakeupRow};

/// The placements in closeness order, for charts that pick the most telling one.
pub const PLACEMENT_ORDER: [&str; 5] = ["smt", "same-cpu", "core", "llc", "node"];

/// The measured wake-up rows of the long computation (the one whose Twork shows
/// interference): those of the largest matrix, or all where none names one.
pub fn long_computation(rows: Vec<WakeupRow>) -> Vec<WakeupRow> {
    let rows: Vec<WakeupRow> = rows.into_iter().filter(|r| r.skipped.is_none()).collect();
    let largest = rows.iter().filter_map(|r| r.matrix_n).max();
    rows.into_iter().filter(|r| largest.is_none() || r.matrix_n == largest).collect()
}

/// One wait policy on the trade-off.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyPoint {
    /// The policy's name.
    pub wait: String,
    /// What it costs the thread doing work, in percent ([`Tradeoff::interference`] says which
    /// slowdown).
    pub interference_pct: f64,
    /// Its 95% half-interval, where the figure has one.
    pub interference_ci95_pct: Option<f64>,
    /// Its wake-up latency, Twakeup.
    pub wakeup_ns: f64,
}

impl PolicyPoint {
    /// What it costs the thread doing work, with its interval.
    pub fn interference(&self) -> Estimate {
        Estimate::with_ci95(self.interference_pct, self.interference_ci95_pct)
    }
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
    let wake = long_computation(ctx.rows_as::<WakeupRow>());
    let inter: Vec<InterferenceRow> = ctx.measured_as();
    for placement in PLACEMENT_ORDER {
        // Interference's own figure where it measured these policies here; else the worker's
        // slowdown in the wake-up experiment. Never a mix of the two. On a shared CPU the
        // figure is what the waiters take of it, from the threads' own clocks, which other
        // processes' turns on that CPU leave alone (results from before it have the wall
        // slowdown only, which idle comes to the same).
        let waiter_cpu = placement == "same-cpu" && inter.iter().any(|r| r.waiter_cpu_pct.is_some());
        let (figure, what): (fn(&InterferenceRow) -> Option<Estimate>, _) = if waiter_cpu {
            (
                |r| Estimate::of(r.waiter_cpu_pct, r.waiter_cpu_ci95_pct.get()),
                "mean CPU time the waiters took on the worker's CPU, as a share of the worker's, over the \
                 interference workloads",
            )
        } else {
            (|r| Estimate::of(r.slowdown_pct, r.slowdown_ci95_pct.get()), "mean slowdown of the interference workloads")
        };
        let mut from_interference = Vec::new();
        let mut from_wakeup = Vec::new();
        for row in wake.iter().filter(|r| r.placement.as_deref() == Some(placement)) {
            let Some(wait) = row.wait.as_deref() else { continue };
            let Some(wakeup_ns) = row.twakeup_ns else { continue };
            let slowdowns: Vec<Estimate> = inter
                .iter()
                .filter(|r| r.wait.as_deref() == Some(wait) && r.placement.as_deref() == Some(placement))
                .filter_map(figure)
                .collect();
            if let Some(mean) = mean_of(&slowdowns) {
                from_interference.push(PolicyPoint {
                    wait: wait.to_string(),
                    interference_pct: mean.value,
                    interference_ci95_pct: mean.ci95(),
                    wakeup_ns,
                });
            }
            if let Some(pct) = row.twork_vs_alone_pct {
                let point = PolicyPoint {
                    wait: wait.to_string(),
                    interference_pct: pct,
                    interference_ci95_pct: None,
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
    /// Its 95% half-interval, where it has one.
    pub wakeup_ci95_ns: Option<f64>,
}

impl WakeupPoint {
    /// Its wake-up latency with its interval.
    pub fn wakeup(&self) -> Estimate {
        Estimate::with_ci95(self.wakeup_ns, self.wakeup_ci95_ns)
    }
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
    let wake = long_computation(ctx.rows_as::<WakeupRow>());
    PLACEMENT_ORDER.iter().filter(|&&p| p != "same-cpu").find_map(|&placement| {
        let points: Vec<WakeupPoint> = wake
            .iter()
            .filter(|r| r.placement.as_deref() == Some(placement))
            .filter_map(|r| {
                let wakeup = Estimate::of(r.twakeup_ns, r.twakeup_ci95_ns.get())?;
                Some(WakeupPoint { wait: r.wait.clone()?, wakeup_ns: wakeup.value, wakeup_ci95_ns: wakeup.ci95() })
            })
            .collect();
        (points.len() >= 2).then(|| Wakeups { placement: placement.to_string(), points })
    })
}
