//! `spinlab run barrier`: seed 001's barriers (§4.3).
//!
//! - Fig. 3a / Table 2 (`scenario` `3a`): the heavy thread does the wakeup experiment's long
//!   matrix multiply while the light thread waits in the barrier; then the heavy thread
//!   arrives. `twork_s` is the heavy thread's computation, `twakeup_ns` from the heavy thread's
//!   arrival (a counter read just before its `wait`) to the light thread's departure (just
//!   after its `wait` returns), `tcall_ns` the time the heavy thread spends in its `wait`.
//! - Fig. 3b / Fig. 4 (`scenario` `3b`): the pseudo-benchmark. Per iteration the heavy thread
//!   does 10 units of work and the light thread 0..10 units (a unit is one 10×10
//!   floating-point matrix multiply), then both meet at the barrier. `completion_s` is the
//!   whole loop's wall time; `ratio_to_pthread` its ratio to the pthread barrier's at the same
//!   light load and placement (below 1: faster than pthreads).
//!
//! Barriers come from the registry: `barrier:POLICY` and the references `pthread` and `std`.

use super::driver::one_run;
use super::lab::Lab;
use super::options::Common;
use super::settings::{Length, Step};
use super::wakeup::{
    add_summary, episode_rounds, episodes, medians, placement_pairs, Matmul, Rendezvous, WakeFigures, KEY_MATRIX_N,
    MATRIX_N, WORK_MS,
};
use super::Experiment;
use crate::error::LabError;
use crate::machine::Placement;
use crate::measure::partner::with_partner;
use crate::measure::pin::with_pinned;
use crate::measure::{interleave, Progress, Rep, StoppingRule};
use crate::reading::advice::{lowest_tie, total_order, Advice, Contribution, Figure, Topic, Unit};
use crate::reading::plot::{self, Axis, Scale};
use crate::reading::scorecard::{mean_of, needs, why_missing, Claim, Estimate, Finding, Need, Observed, Remeasure};
use crate::reading::{measured_as, series_by, Context, Panel};
use crate::results::format::number;
use crate::results::keys::{BARRIER, PLACEMENT};
use crate::results::rows::BarrierRow;
use crate::results::table::{col, Column};
use crate::results::{Row, Run};
use crate::select::{self, Bounds};
use clap::Args;
use spinlab_registry::{self as registry, DynBarrier};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::time::Instant;

/// Completion time of the heavy/light pseudo-benchmark.
pub const COMPLETION_S: &str = "completion_s";
/// The light thread's work, in units of 10x10 multiplies.
pub const LIGHT_UNITS: &str = "light_units";

/// The barriers measured when `--barriers` is not given: spinlab's sense-reversing barrier over
/// seed 001's spin-loops (`pause`), the plain spinner, `yield`, `futex`, spin-then-park and the
/// monitor waits (its mwmon), and the two references.
pub const DEFAULT_BARRIERS: &[&str] = &[
    "barrier:spin",
    "barrier:pause",
    "barrier:yield",
    "barrier:futex",
    "barrier:spin-park",
    "barrier:umwait",
    "barrier:mwaitx",
    "barrier:wfe",
    "pthread",
    "std",
];

/// Seed 001's heavy thread: 10 units per iteration.
pub const HEAVY_UNITS: usize = 10;
/// Seed 001's unit: a 10×10 multiply.
pub const UNIT_N: usize = 10;

/// A list of registry barrier names.
#[derive(Clone, Debug)]
pub struct Barriers(pub Vec<&'static str>);

/// Parses a comma-separated barrier list; an unknown name gets the registry's list of valid
/// ones.
pub fn parse_barriers(text: &str) -> Result<Barriers, String> {
    let mut out = Vec::new();
    for item in select::split_list(text)? {
        let entry = registry::BARRIERS.info(item).map_err(|e| e.to_string())?;
        if !out.contains(&entry.name.as_str()) {
            out.push(entry.name.as_str());
        }
    }
    Ok(Barriers(out))
}

/// `--iterations`: Fig. 3b's loop up to seed 001's own million.
pub const ITERATIONS: Bounds = Bounds::new(1, 1_000_000);

/// Options of `spinlab run barrier` (no `Default`: `cli_defaults` gives clap's).
#[derive(Args, Clone, Debug)]
#[group(skip)]
pub struct BarrierExperiment {
    /// Barriers, comma-separated: barrier:POLICY, pthread, std; `spinlab list` shows every
    /// barrier name and whether this CPU can run it
    #[arg(long, value_name = "LIST", value_parser = parse_barriers)]
    pub barriers: Option<Barriers>,
    /// Loop iterations of the Fig. 3b pseudo-benchmark (seed 001: 1000000), within
    /// [`ITERATIONS`]
    #[arg(long, value_name = "N", default_value = "2000", value_parser = |s: &str| ITERATIONS.parse::<usize>(s),
          allow_hyphen_values = true,
          help = ITERATIONS.help("Loop iterations of the Fig. 3b pseudo-benchmark (seed 001: 1000000)"))]
    pub iterations: usize,
    /// Matrix size of Fig. 3a's heavy computation (default: scaled so one multiply takes
    /// --work-ms), within [`MATRIX_N`]
    #[arg(long, value_name = "N", value_parser = |s: &str| MATRIX_N.parse::<usize>(s), allow_hyphen_values = true,
          help = MATRIX_N.help("Matrix size of Fig. 3a's heavy computation (default: scaled so one multiply \
                                takes --work-ms)"))]
    pub size: Option<usize>,
    /// Target length of Fig. 3a's computation when --size is not given, in milliseconds,
    /// within [`WORK_MS`]
    #[arg(long, value_name = "MS", default_value = "10", value_parser = |s: &str| WORK_MS.parse::<usize>(s),
          allow_hyphen_values = true,
          help = WORK_MS.help("Target length of Fig. 3a's computation when --size is not given, in milliseconds"))]
    pub work_ms: usize,
    /// Light-thread loads of Fig. 3b, comma-separated units (default 0..10), each 0 to
    /// [`HEAVY_UNITS`]
    #[arg(long, value_name = "LIST", value_parser = parse_units, allow_hyphen_values = true,
          help = format!("Light-thread loads of Fig. 3b, comma-separated units (default 0..10); accepted: \
                          each 0 to {HEAVY_UNITS} units"))]
    pub light_units: Option<Units>,
}

/// A list of light-thread loads.
#[derive(Clone, Debug)]
pub struct Units(pub Vec<usize>);

fn parse_units(text: &str) -> Result<Units, String> {
    let mut out = Vec::new();
    for item in select::split_list(text)? {
        match item.trim().parse::<usize>() {
            Ok(u) if u <= HEAVY_UNITS => out.push(u),
            _ => return Err(format!("`{item}` is not a light-thread load; accepted: each 0 to {HEAVY_UNITS} units")),
        }
    }
    Ok(Units(out))
}

const COLUMNS: &[Column] = &[
    col("scenario", "fig"),
    col(BARRIER, "barrier"),
    col(PLACEMENT, "placement"),
    col(LIGHT_UNITS, "light"),
    col("twork_s", "Twork s"),
    col("twakeup_ns", "Twakeup ns"),
    col("tcall_ns", "Tcall ns"),
    col(COMPLETION_S, "completion s"),
    col("completion_sd_s", "±sd"),
    col("ratio_to_pthread", "vs pthread"),
    col("reps", "reps"),
];

/// A two-party barrier as seed 001's rendezvous: both sides call `wait`.
struct AtBarrier(Box<dyn DynBarrier>);

impl Rendezvous for AtBarrier {
    #[inline]
    fn wait(&self) {
        self.0.wait();
    }
    #[inline]
    fn notify(&self) {
        self.0.wait();
    }
}

fn two() -> NonZeroU32 {
    NonZeroU32::new(2).expect("2 is not zero")
}

/// What one run of the Fig. 3b loop did.
#[derive(Clone, Copy, Debug)]
pub struct PseudoBenchmark {
    /// Wall seconds from the start until both threads are done.
    pub completion_s: f64,
    /// The sum of the results of the light thread's multiplies, one after the other: a light
    /// thread that skipped some of its work returns less.
    pub light_checksum: f64,
    /// The same for the heavy thread, summed after its clock has stopped.
    pub heavy_checksum: f64,
}

/// One run of the Fig. 3b loop: [`HEAVY_UNITS`] of work per iteration for the heavy thread
/// (pinned to `cpus.0`, the calling thread) and `light_units` for the light one (`cpus.1`).
pub fn pseudo_benchmark(
    barrier: &dyn DynBarrier,
    cpus: (usize, usize),
    iterations: usize,
    light_units: usize,
) -> Result<PseudoBenchmark, LabError> {
    let go = AtomicBool::new(false);
    let ready = std::sync::Barrier::new(2);
    let light = || {
        let mut unit = Matmul::new(UNIT_N);
        // A local, returned once at the end: nothing shared is written inside the loop.
        let mut checksum = 0.0;
        ready.wait();
        while !go.load(Acquire) {
            std::hint::spin_loop();
        }
        for _ in 0..iterations {
            for _ in 0..light_units {
                checksum += unit.run();
            }
            barrier.wait();
        }
        checksum
    };
    let heavy = || {
        with_pinned(cpus.0, || {
            let mut unit = Matmul::new(UNIT_N);
            let mut checksum = 0.0;
            ready.wait();
            let started = Instant::now();
            go.store(true, Release);
            for _ in 0..iterations {
                for _ in 0..HEAVY_UNITS {
                    checksum += unit.run();
                }
                barrier.wait();
            }
            // The light thread leaves the last barrier with the heavy one; waiting for it
            // would add the join, not the benchmark.
            (started.elapsed().as_secs_f64(), checksum)
        })
    };
    let sides = with_partner(cpus.1, light, heavy)?;
    let (completion_s, heavy_checksum) = sides.main;
    Ok(PseudoBenchmark { completion_s, light_checksum: sides.partner, heavy_checksum })
}

/// Where both of seed 001's barrier figures are measured: one placement's CPU pair, and the
/// barriers (those that cannot run here get skipped rows).
struct Scene<'a> {
    placement: Placement,
    cpus: (usize, usize),
    entries: &'a [&'a registry::BarrierEntry],
    runnable: &'a [&'a registry::BarrierEntry],
}

impl Scene<'_> {
    /// The pair as the rows name it.
    fn cpu_text(&self) -> String {
        format!("{},{}", self.cpus.0, self.cpus.1)
    }
}

/// A row of `scenario` for barrier `e` at `placement`, before any figure.
fn barrier_row(scenario: &str, e: &registry::BarrierEntry, placement: Placement) -> Row {
    Row::new().with("scenario", scenario).with(BARRIER, &e.name).with(PLACEMENT, placement.name())
}

impl BarrierExperiment {
    /// Fig. 3a at one placement: Twork, Twakeup and Tcall of a matrix-multiply episode per
    /// barrier, the barriers interleaved.
    fn fig_3a(
        &self,
        lab: &Lab,
        scene: &Scene<'_>,
        size: usize,
        rule: &StoppingRule,
        progress: &Progress,
    ) -> Result<Vec<Row>, LabError> {
        let mut rows = Vec::new();
        progress.step(&format!("3a, {}", scene.placement));
        let mut work = Matmul::new(size);
        let rounds = episode_rounds(scene.cpus.0, &mut work);
        let mut figures = vec![WakeFigures::default(); scene.runnable.len()];
        let series = interleave(scene.runnable.len(), rule, Some(progress), |i, rep| {
            let barrier = AtBarrier(scene.runnable[i].build(two()).map_err(|e| LabError::failed(e.to_string()))?);
            let stamps = episodes(Some(&barrier), scene.cpus, rounds, &mut work, &lab.clock)?;
            let medians = medians(&stamps, &lab.clock);
            if rep != Rep::Warmup {
                figures[i].push(&medians);
            }
            Ok(medians.work_s)
        })?;
        let mut next = 0;
        for e in scene.entries {
            let row =
                barrier_row("3a", e, scene.placement).with(KEY_MATRIX_N, size).with("cpus", scene.cpu_text().as_str());
            if let Err(why) = e.availability {
                rows.push(row.skipped(why.to_string()));
                continue;
            }
            let i = next;
            next += 1;
            rows.push(figures[i].episode_row(row, &series[i], rounds));
        }
        Ok(rows)
    }

    /// Fig. 3b at one placement and light load: the pseudo-benchmark's completion time per
    /// barrier, and its ratio to pthread's.
    fn fig_3b(
        &self,
        scene: &Scene<'_>,
        light: usize,
        rule: &StoppingRule,
        progress: &Progress,
    ) -> Result<Vec<Row>, LabError> {
        let built: Vec<Box<dyn DynBarrier>> = scene
            .runnable
            .iter()
            .map(|e| e.build(two()).map_err(|e| LabError::failed(e.to_string())))
            .collect::<Result<_, _>>()?;
        let warmup_iterations = (self.iterations / 10).max(1);
        let series = interleave(built.len(), rule, Some(progress), |i, rep| {
            let n = if rep == Rep::Warmup { warmup_iterations } else { self.iterations };
            pseudo_benchmark(&*built[i], scene.cpus, n, light).map(|run| run.completion_s)
        })?;
        let mut config_rows = Vec::new();
        let mut next = 0;
        for e in scene.entries {
            let row =
                barrier_row("3b", e, scene.placement).with(LIGHT_UNITS, light).with("cpus", scene.cpu_text().as_str());
            if let Err(why) = e.availability {
                config_rows.push(row.skipped(why.to_string()));
                continue;
            }
            let i = next;
            next += 1;
            let mut row = add_summary(row, "completion", "s", &series[i].samples);
            row.set("iterations", self.iterations);
            if let Some(c) = row.number(COMPLETION_S) {
                row.set("barrier_ns", c * 1e9 / self.iterations as f64);
            }
            row.set("stop", series[i].verdict);
            config_rows.push(row);
        }
        let pthread =
            config_rows.iter().find(|r| r.text(BARRIER) == Some("pthread")).and_then(|r| r.number(COMPLETION_S));
        for row in config_rows.iter_mut() {
            let ratio = match (row.number(COMPLETION_S), pthread) {
                (Some(c), Some(p)) if p > 0.0 => Some(c / p),
                _ => None,
            };
            if !row.is_skipped() {
                row.set("ratio_to_pthread", ratio);
            }
        }
        Ok(config_rows)
    }
}

impl Experiment for BarrierExperiment {
    fn name(&self) -> &'static str {
        "barrier"
    }

    fn about(&self) -> &'static str {
        "Barriers: Twork, Twakeup, Tcall, and the heavy/light pseudo-benchmark (seed 001)"
    }

    fn uses(&self) -> &'static [&'static str] {
        &["placement"]
    }

    fn columns(&self) -> &'static [Column] {
        COLUMNS
    }

    fn run(&self, lab: &Lab, common: &Common) -> Result<Vec<Run>, LabError> {
        let started = Instant::now();
        let rule_3a = common.rule(10, 30)?;
        let rule_3b = common.rule(3, 5)?;
        let names: Vec<&'static str> =
            self.barriers.as_ref().map_or_else(|| DEFAULT_BARRIERS.to_vec(), |b| b.0.clone());
        let entries: Vec<&registry::BarrierEntry> = names
            .iter()
            .map(|n| registry::BARRIERS.info(n).map_err(|e| LabError::usage(e.to_string())))
            .collect::<Result<_, _>>()?;
        let placements =
            common.placement.as_ref().map_or_else(|| vec![Placement::Smt, Placement::Core], |p| p.0.clone());
        let loads: Vec<usize> = self.light_units.as_ref().map_or_else(|| (0..=HEAVY_UNITS).collect(), |u| u.0.clone());
        let home = lab.home_cpu();
        let size = self.size.unwrap_or_else(|| with_pinned(home, || Matmul::size_for(self.work_ms as f64 * 1e-3)));
        let pairs = placement_pairs(lab, &placements);
        let runnable: Vec<&registry::BarrierEntry> =
            entries.iter().copied().filter(|e| e.availability.is_ok()).collect();

        let mut run = Run::new(self.name());
        run.param("barriers", &names)
            .param("placements", placements.iter().map(|p| p.name()).collect::<Vec<_>>())
            .param("matrix_n_3a", size)
            .param("iterations_3b", self.iterations)
            .param("heavy_units", HEAVY_UNITS)
            .param("unit", format!("{UNIT_N}x{UNIT_N} f64 matrix multiply"))
            .param("light_units", &loads)
            .param("maiv_pct", rule_3a.maiv_pct)
            .param("min_reps_3a", rule_3a.min_reps)
            .param("max_reps_3a", rule_3a.max_reps)
            .param("min_reps_3b", rule_3b.min_reps)
            .param("max_reps_3b", rule_3b.max_reps);

        one_run(lab, started, run, (pairs.len() * (1 + loads.len())) as u64, |progress| {
            let mut rows = Vec::new();
            for (placement, pair) in &pairs {
                let placement = *placement;
                let cpus = match pair {
                    Ok(cpus) => *cpus,
                    Err(why) => {
                        for e in &entries {
                            rows.push(barrier_row("3a", e, placement).skipped(why.clone()));
                        }
                        for &l in &loads {
                            for e in &entries {
                                rows.push(barrier_row("3b", e, placement).with(LIGHT_UNITS, l).skipped(why.clone()));
                            }
                        }
                        for _ in 0..=loads.len() {
                            progress.inc();
                        }
                        continue;
                    }
                };
                let scene = Scene { placement, cpus, entries: &entries, runnable: &runnable };
                rows.extend(self.fig_3a(lab, &scene, size, &rule_3a, progress)?);
                progress.inc();
                // Fig. 3b, one light load at a time, the barriers interleaved.
                for &light in &loads {
                    progress.step(&format!("3b, {placement}, light {light}"));
                    rows.extend(self.fig_3b(&scene, light, &rule_3b, progress)?);
                    progress.inc();
                }
            }
            Ok(rows)
        })
    }

    fn report_steps(&self, length: Length, _cpus: usize) -> Vec<Step> {
        let barrier = match length {
            Length::Full => self.clone(),
            Length::Short => BarrierExperiment { iterations: 300, work_ms: 5, ..self.clone() },
            Length::Smoke => BarrierExperiment {
                size: Some(12),
                iterations: 20,
                barriers: Some(Barriers(vec!["barrier:pause", "pthread"])),
                ..self.clone()
            },
        };
        let c = length.common(&barrier, 2, 4, 0);
        vec![Step::new(barrier, c, "barrier: barriers and unequal work")]
    }

    fn figures(&self, _ctx: &Context<'_>, runs: &[&Run]) -> Vec<Result<Panel, String>> {
        chart(&measured_as::<BarrierRow>(runs))
    }

    fn advice(&self, ctx: &Context<'_>) -> Option<Contribution> {
        Some(Contribution { topic: Topic::Barriers, lines: vec![quickest(ctx)], reads: &["barrier"] })
    }

    fn scorecard(&self, ctx: &Context<'_>) -> Vec<Finding> {
        vec![
            completion_over(ctx, &SPIN_VS_PTHREADS, &["barrier:pause"], &["pthread"], (1.03, f64::INFINITY)),
            completion_over(
                ctx,
                &MWAIT_VS_PTHREADS,
                &["pthread"],
                &["barrier:umwait", "barrier:mwaitx"],
                (1.04, f64::INFINITY),
            ),
        ]
    }
}

const SPIN_VS_PTHREADS: Claim = Claim {
    id: "001-barrier-spin-vs-pthreads",
    seed: "001",
    source: "§4.3, Fig. 4",
    claim: "between a heavy and a light thread on one hyper-threaded core, a spinning barrier is slower than \
            the pthread barrier",
    paper: "spin-loops 26% and pthreads 12% below mwmon's throughput on average over light loads 0 to 10: \
            spin-loops take about 1.125x pthreads' time",
    needs: &[needs::SMT],
    remeasure: Some(Remeasure { experiment: "barrier", options: &[("placement", "smt")] }),
};

const MWAIT_VS_PTHREADS: Claim = Claim {
    id: "001-barrier-mwait-vs-pthreads",
    seed: "001",
    source: "§4.3, Fig. 4",
    claim: "a barrier whose waiter sleeps in MWAIT beats the pthread barrier",
    paper: "12% better throughput than pthreads on average (1.22x at light load 0, 1.09x at 10)",
    needs: &[needs::SMT, needs::MONITOR_WAIT],
    remeasure: Some(Remeasure { experiment: "barrier", options: &[("placement", "smt")] }),
};

/// The mean over light loads of `numerator`'s completion time over `denominator`'s (the
/// first of each list measured), heavy and light thread on one core's two hardware threads
/// (scenario 3b).
fn completion_over(
    ctx: &Context<'_>,
    claim: &Claim,
    numerator: &[&'static str],
    denominator: &[&'static str],
    range: (f64, f64),
) -> Finding {
    let smt = Placement::Smt.name();
    let rows: Vec<BarrierRow> = ctx
        .measured_as::<BarrierRow>()
        .into_iter()
        .filter(|r| r.placement.as_deref() == Some(smt) && r.completion_s.is_some())
        .collect();
    let measured_first = |names: &[&'static str]| -> Option<&'static str> {
        names.iter().copied().find(|n| rows.iter().any(|r| r.barrier.as_deref() == Some(*n)))
    };
    let rows_words = format!(
        "barrier 3b at {smt}: completion_s of {} over {}, per light load",
        numerator.join(" or "),
        denominator.join(" or ")
    );
    let at_smt = |r: &BarrierRow| r.placement.as_deref() == Some(smt);
    let (Some(top), Some(bottom)) = (measured_first(numerator), measured_first(denominator)) else {
        let names: Vec<&str> = numerator.iter().chain(denominator).copied().collect();
        let by_name: Vec<Need<'_, BarrierRow>> =
            names.iter().map(|&b| Box::new(move |r: &BarrierRow| r.barrier.as_deref() == Some(b)) as Box<_>).collect();
        let mut needs: Vec<&dyn Fn(&BarrierRow) -> bool> = vec![&at_smt];
        needs.extend(by_name.iter().map(|n| n.as_ref()));
        return Finding::without(claim, &rows_words, why_missing(ctx, &needs));
    };
    let completion = |r: &BarrierRow| Estimate::of(r.completion_s, r.completion_ci95_s.get());
    let ratios: Vec<Estimate> = rows
        .iter()
        .filter(|r| r.barrier.as_deref() == Some(top))
        .filter_map(|t| {
            let b = rows.iter().find(|r| r.barrier.as_deref() == Some(bottom) && r.light_units == t.light_units)?;
            completion(t)?.ratio(&completion(b)?)
        })
        .collect();
    let Some(here) = mean_of(&ratios) else {
        return Finding::without(claim, &rows_words, why_missing(ctx, &[&at_smt]));
    };
    let detail = format!("{top} over {bottom} at {} light loads", ratios.len());
    let reason = "a modern core gives a PAUSE-spinning sibling fewer of its resources than Netburst did, and \
                  today's futex wake-up and user-mode monitor instructions cost other multiples";
    Finding::judged(claim, ctx, "barrier", Observed { here, unit: "x", detail, rows: rows_words }, range, reason)
}

fn chart(rows: &[BarrierRow]) -> Vec<Result<Panel, String>> {
    let rows: Vec<&BarrierRow> = rows.iter().filter(|r| r.completion_s.is_some()).collect();
    let series = series_by(&rows, |r| r.barrier.as_deref(), |r| Some((r.light_units? as f64, r.completion_s?)));
    if series.is_empty() {
        return Vec::new();
    }
    let x = Axis::numeric(
        "light thread's work (units of 10x10 multiplies; the heavy thread does 10)",
        Scale::Linear,
        series.iter().flat_map(|s| s.points.iter().map(|p| p.0)),
        true,
    );
    let y = Axis::numeric(
        "completion time (s)",
        Scale::Linear,
        series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
        true,
    );
    vec![plot::lines("Barrier: completion time vs light-thread load", &x, &y, &series, None).map(|svg| Panel {
        svg,
        caption: "Seed 001's asymmetric pseudo-benchmark: how long the heavy and light threads take to finish as the \
                  light thread's work grows towards the heavy thread's, per barrier; a barrier whose waiter steals \
                  from its sibling stretches the heavy thread's time."
            .to_string(),
    })]
}

fn quickest(ctx: &Context<'_>) -> Advice {
    let situation = "a barrier between threads with unequal work";
    let brief = "barrier, unequal work";
    let rows: Vec<BarrierRow> =
        ctx.measured_as::<BarrierRow>().into_iter().filter(|r| r.completion_s.is_some()).collect();
    let barriers = {
        let mut b: Vec<&str> = rows.iter().filter_map(|r| r.barrier.as_deref()).collect();
        b.dedup();
        b.sort_unstable();
        b.dedup();
        b
    };
    // Each barrier's mean completion over the light loads, its interval from theirs.
    let means: Vec<(&str, Estimate)> = barriers
        .iter()
        .filter_map(|&b| {
            let each: Vec<Estimate> = rows
                .iter()
                .filter(|r| r.barrier.as_deref() == Some(b))
                .filter_map(|r| Estimate::of(r.completion_s, r.completion_ci95_s.get()))
                .collect();
            Some((b, mean_of(&each)?))
        })
        .collect();
    let order = total_order(&TIE_ORDER, barriers.iter().copied());
    let Some(tie) = lowest_tie(&means, |(b, e)| (*b, *e), &order) else {
        return Advice::missing(situation, brief, ctx.missing_reason("barrier"));
    };
    let (best, mean) = *tie.chosen;
    let (worst, worst_mean) =
        means.iter().copied().max_by(|a, b| a.1.value.total_cmp(&b.1.value)).unwrap_or((best, mean));
    let mut why = format!("{} s mean completion over the light-thread loads measured", number(mean.value));
    if worst != best {
        why.push_str(&format!("; {worst}: {} s", number(worst_mean.value)));
    }
    why.push_str(&tie.words(|(b, _)| b, &order));
    let completion = |(_, mean): &(&str, Estimate)| Figure::new(*mean, Unit::Seconds, "mean completion");
    let runner_up = tie.runner_up_by(|(b, _)| b, completion);
    Advice::new(situation, brief, format!("barrier {best}"), why).chosen_by(completion(tie.chosen), runner_up)
}

/// The barriers a tie is resolved towards, in order: spinlab's and the C API's default, then
/// glibc's, then the others by how soon a waiter gives its CPU up (seeds 000 and 002: of two
/// barriers that finish alike, the gentler costs a co-runner or a sibling less): sleeping at
/// once, yielding, the monitor waits, `pause`, a bare spin. Every barrier of
/// [`DEFAULT_BARRIERS`] is here, so a tie in the report never falls back to the figures.
const TIE_ORDER: [&str; 10] = [
    "barrier:spin-park",
    "pthread",
    "barrier:futex",
    "std",
    "barrier:yield",
    "barrier:umwait",
    "barrier:mwaitx",
    "barrier:wfe",
    "barrier:pause",
    "barrier:spin",
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn every_default_barrier_has_a_place_in_the_tie_order() {
        for barrier in DEFAULT_BARRIERS {
            assert!(TIE_ORDER.contains(barrier), "{barrier}");
        }
        assert_eq!(TIE_ORDER.len(), DEFAULT_BARRIERS.len());
    }

    #[test]
    fn barrier_lists_are_checked_against_the_registry() {
        assert_eq!(parse_barriers("pthread,barrier:futex,pthread").unwrap().0, ["pthread", "barrier:futex"]);
        let err = parse_barriers("barrier:nap").unwrap_err();
        assert!(err.contains("barrier:POLICY") && err.contains("pthread"), "{err}");
        assert!(parse_units("0,10").is_ok() && parse_units("11").is_err());
    }

    /// A barrier that counts, around a real one, the waits of the heavy side (the thread that
    /// calls `pseudo_benchmark`) and of the light side, and the phases' leaders.
    struct Witness {
        barrier: Box<dyn DynBarrier>,
        heavy: std::thread::ThreadId,
        heavy_waits: AtomicUsize,
        light_waits: AtomicUsize,
        leaders: AtomicUsize,
    }

    impl DynBarrier for Witness {
        fn wait(&self) -> bool {
            let side = if std::thread::current().id() == self.heavy { &self.heavy_waits } else { &self.light_waits };
            side.fetch_add(1, Relaxed);
            let leader = self.barrier.wait();
            self.leaders.fetch_add(usize::from(leader), Relaxed);
            leader
        }

        fn parties(&self) -> usize {
            self.barrier.parties()
        }
    }

    #[test]
    fn the_pseudo_benchmark_runs_every_iteration_through_the_barrier() {
        let cpu = crate::measure::pin::allowed_cpus()[0];
        let witness = Witness {
            barrier: registry::BARRIERS.build("barrier:futex", two()).unwrap(),
            heavy: std::thread::current().id(),
            heavy_waits: AtomicUsize::new(0),
            light_waits: AtomicUsize::new(0),
            leaders: AtomicUsize::new(0),
        };
        let (iterations, light_units) = (20, 3);
        // Same CPU, so a lost phase would hang rather than spin past.
        let run = pseudo_benchmark(&witness, (cpu, cpu), iterations, light_units).unwrap();
        assert!(run.completion_s > 0.0);
        assert_eq!(
            witness.heavy_waits.load(Relaxed),
            iterations,
            "the heavy thread met the barrier once per iteration"
        );
        assert_eq!(
            witness.light_waits.load(Relaxed),
            iterations,
            "the light thread met the barrier once per iteration"
        );
        assert_eq!(witness.leaders.load(Relaxed), iterations, "one leader per phase: every phase was completed");
        // Every multiply returns the same value; summed in the same order, the checksum of
        // the light thread's units is that of exactly iterations x light_units of them.
        let one_unit = Matmul::new(UNIT_N).run();
        let all_units: f64 = std::iter::repeat_n(one_unit, iterations * light_units).sum();
        assert_eq!(
            run.light_checksum, all_units,
            "the light thread did {light_units} units in each of {iterations} iterations"
        );
        let heavy_units: f64 = std::iter::repeat_n(one_unit, iterations * HEAVY_UNITS).sum();
        assert_eq!(
            run.heavy_checksum, heavy_units,
            "the heavy thread did {HEAVY_UNITS} units in each of {iterations} iterations"
        );
    }
}
