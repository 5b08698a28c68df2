//! One configuration measured: the active workload's call timed alone and beside the waiters,
//! interleaved, and the row it makes.

use super::corun::{cpu_list, reread_ticks, Policy, WaiterReport};
use super::{ACTIVE, WAITER_CPU_PCT};
use crate::error::LabError;
use crate::machine::Placement;
use crate::measure::clock::{now, thread_cpu_s};
use crate::measure::pin::with_pinned;
use crate::measure::{repeat, Clock, Progress, Rep, StoppingRule, Summary, Verdict};
use crate::results::keys::{LOCK, PLACEMENT, WAIT};
use crate::results::Row;
use crate::workloads::counters::{Counted, Ipc};
use crate::workloads::{Active, Workload};

/// One co-run configuration: the active workload on its CPU, one policy's waiters on theirs.
pub(super) struct CoRunAt<'a> {
    pub(super) workload: Workload,
    pub(super) placement: Placement,
    pub(super) active_cpu: usize,
    pub(super) waiter_cpus: &'a [usize],
    pub(super) policy: &'a Policy,
}

/// The active workload, built and calibrated on its CPU, and the checksum every call must
/// return.
pub(super) struct Calibrated {
    pub(super) active: Active,
    pub(super) checksum: u64,
}

/// One timed call of the active workload.
pub(super) struct Call {
    pub(super) seconds: f64,
    pub(super) cpu_s: f64,
    pub(super) ipc: Option<f64>,
    pub(super) checksum: u64,
}

/// The active thread on one side of the comparison (alone, or beside the waiters), one value
/// per measured repetition.
#[derive(Default)]
pub(super) struct Side {
    /// Wall seconds per call.
    pub(super) seconds: Vec<f64>,
    /// CPU seconds per call: what separates losing the CPU (time-sharing, the scheduler) from
    /// running slower on it (shared hardware).
    pub(super) cpu_s: Vec<f64>,
    /// Instructions per cycle, where counted.
    pub(super) ipc: Vec<f64>,
}

/// One co-run configuration's measurements.
pub(super) struct Measured {
    pub(super) isolated: Side,
    pub(super) corun: Side,
    /// Whether the stopping rule was met on the pairs' ratio.
    pub(super) converged: bool,
    /// The waiters' reports from every measured co-run.
    pub(super) reports: Vec<WaiterReport>,
    /// Each measured co-run's mean interval between two reads of the watched word, in ticks.
    pub(super) rereads: Vec<f64>,
    /// CPU seconds the waiters used during each measured co-run's call, in `corun`'s order.
    pub(super) waiters_cpu_s: Vec<f64>,
}

/// Times one call of `active` (its instructions per cycle too, with `counters`).
pub(super) fn timed_call(active: &mut Active, counters: Option<&Ipc>, clock: &Clock) -> Call {
    let cpu_before = thread_cpu_s();
    let call_started = now();
    let Counted { value: checksum, ipc } = match counters {
        Some(c) => c.measure(|| active.run()),
        None => Counted { value: active.run(), ipc: None },
    };
    let seconds = clock.ns(clock.corrected(call_started, now()) as f64) * 1e-9;
    Call { seconds, cpu_s: thread_cpu_s() - cpu_before, ipc, checksum }
}

/// The active workload alone and beside the waiters, interleaved round by round on its CPU.
/// Measures the active workload alone and beside the waiters, as pairs: each repetition runs
/// both, back to back (alone first in even repetitions, beside the waiters first in odd ones,
/// so a steady drift favours neither), and the stopping rule watches the pair's ratio, the
/// figure the row reports, rather than either time alone.
pub(super) fn measure(
    at: &CoRunAt<'_>,
    calibrated: &mut Calibrated,
    rule: &StoppingRule,
    progress: &Progress,
    clock: &Clock,
) -> Result<Measured, LabError> {
    let mut sides = [Side::default(), Side::default()];
    let mut reports = Vec::new();
    let mut rereads = Vec::new();
    let mut waiters_cpu_s = Vec::new();
    let mut bad_checksum = None;
    let series = with_pinned(at.active_cpu, || {
        let counters = Ipc::open().ok();
        repeat(rule, Some(progress), |rep| {
            let alone_first = !matches!(rep, Rep::Measured(n) if n % 2 == 1);
            let mut seconds = [0.0; 2];
            for side in if alone_first { [0, 1] } else { [1, 0] } {
                let mut call = None;
                let mut timed = || call = Some(timed_call(&mut calibrated.active, counters.as_ref(), clock));
                if side == 0 {
                    timed();
                } else {
                    let r = (at.policy.co_run)(at.waiter_cpus, &mut timed)?;
                    if rep != Rep::Warmup {
                        rereads.extend(reread_ticks(&r.waiters));
                        reports.extend(r.waiters);
                        waiters_cpu_s.push(r.waiters_cpu_s);
                    }
                }
                let call = call.expect("a co-run runs the active workload once");
                if call.checksum != calibrated.checksum {
                    bad_checksum = Some(call.checksum);
                }
                if rep != Rep::Warmup {
                    sides[side].seconds.push(call.seconds);
                    sides[side].cpu_s.push(call.cpu_s);
                    sides[side].ipc.extend(call.ipc);
                }
                seconds[side] = call.seconds;
            }
            Ok(seconds[1] / seconds[0])
        })
    })?;
    if let Some(sum) = bad_checksum {
        return Err(LabError::failed(format!(
            "workload {} returned checksum {sum:#x}, not {:#x}: its work changed between calls",
            at.workload, calibrated.checksum
        )));
    }
    let [isolated, corun] = sides;
    Ok(Measured { isolated, corun, converged: series.verdict == Verdict::Converged, reports, rereads, waiters_cpu_s })
}

pub(super) fn slowdowns_pct(without: &[f64], with: &[f64]) -> Vec<f64> {
    without.iter().zip(with).map(|(i, c)| 100.0 * (c / i - 1.0)).collect()
}

/// One co-run configuration's row.
pub(super) fn row(at: &CoRunAt<'_>, m: &Measured, clock: &Clock, units: u64) -> Row {
    let mut row = Row::new()
        .with(ACTIVE, at.workload.name())
        .with("behaviour", at.workload.behaviour())
        .with(WAIT, at.policy.name)
        .with(LOCK, format!("ttas:{}", at.policy.name))
        .with("waiters", at.waiter_cpus.len())
        .with(PLACEMENT, at.placement.name())
        .with("active_cpu", at.active_cpu)
        .with("waiter_cpus", cpu_list(at.waiter_cpus));
    let (iso, co) = (&m.isolated.seconds, &m.corun.seconds);
    match Summary::of(&slowdowns_pct(iso, co)) {
        Some(s) => {
            row = row.summary("slowdown", "pct", &s);
            row.set("isolated_s", Summary::of(iso).map(|s| s.mean));
            row.set("corun_s", Summary::of(co).map(|s| s.mean));
            row.set("stop", if m.converged { "converged" } else { "max-reps" });
        }
        None => row = row.skipped("no repetition produced a time"),
    }
    if let Some(s) = Summary::of(&slowdowns_pct(&m.isolated.cpu_s, &m.corun.cpu_s)) {
        row.set("cpu_slowdown_pct", s.mean);
        row.set("cpu_slowdown_ci95_pct", s.ci95);
    }
    let share = |side: &Side| {
        let (cpu, wall): (f64, f64) = (side.cpu_s.iter().sum(), side.seconds.iter().sum());
        (wall > 0.0).then(|| 100.0 * cpu / wall)
    };
    row.set("isolated_cpu_share_pct", share(&m.isolated));
    row.set("corun_cpu_share_pct", share(&m.corun));
    let taken: Vec<f64> =
        m.waiters_cpu_s.iter().zip(&m.corun.cpu_s).filter(|(_, &a)| a > 0.0).map(|(w, a)| 100.0 * w / a).collect();
    if let Some(s) = Summary::of(&taken) {
        row.set(WAITER_CPU_PCT, s.mean);
        row.set("waiter_cpu_ci95_pct", s.ci95);
    }
    let rereads: Vec<f64> = m.rereads.iter().map(|&ticks| clock.ns(ticks)).collect();
    if let Some(s) = Summary::of(&rereads) {
        row.set("reread_ns", s.mean);
        row.set("reread_ci95_ns", s.ci95);
    }
    row.set("waiter_sleeps", m.reports.iter().map(|r| r.sleeps).sum::<u64>());
    if let Some(s) = Summary::of(&m.corun.ipc) {
        row.set("active_ipc", s.mean);
    }
    if let Some(s) = Summary::of(&m.isolated.ipc) {
        row.set("isolated_ipc", s.mean);
    }
    row.set("units", units);
    row
}
