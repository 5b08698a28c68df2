//! `spinlab run wakeup`: seed 001's condition wait and notification (§4.2, Fig. 2b, Table 1).
//!
//! Two pinned threads. The worker does a fixed floating-point computation (an N×N matrix
//! multiply, N scaled so one multiply takes `--work-ms` on this machine; seed 001 used 512×512
//! on a 2.8 GHz Netburst Xeon), while the waiter waits on a notify primitive; then the worker
//! notifies it. Per primitive, seed 001's three figures:
//!
//! - `twork_s`: the worker's computation time, taken while the waiter waits. A waiter that
//!   competes for what the worker needs (the core under SMT, the CPU under `same-cpu`) shows up
//!   here; `none` (no waiter at all) is the isolation baseline.
//! - `twakeup_ns`: from the moment the worker calls notify until the waiter runs again (a
//!   cycle-counter read just before the call, one just after the waiter's wait returns).
//! - `tcall_ns`: how long the notify call takes the worker.
//!
//! A second, short computation (`--short-size`, default one 10×10 unit of the barrier
//! pseudo-benchmark) makes the wait shorter than spin-then-park's spin budget, where that
//! policy should wake like a spinner. The episode driver and the matrix kernel here are shared
//! with `spinlab run barrier` (Fig. 3a is the same scenario with a barrier).

mod advice;
mod claims;
pub mod episode;
mod figures;
pub mod tradeoff;

use super::driver::one_run;
use super::lab::Lab;
use super::moved::{around, mark, until_still, Kept};
use super::options::Common;
use super::settings::{Length, Step};
use super::Experiment;
use crate::error::LabError;
use crate::machine::Placement;
use crate::measure::clock::fenced_overhead;
use crate::measure::pin::with_pinned;
use crate::measure::{interleave, Clock, Rep, Series, Summary};
use crate::reading::advice::{Contribution, Topic};
use crate::reading::scorecard::Finding;
use crate::reading::{measured_as, Context, Panel};
use crate::results::keys::{PLACEMENT, WAIT};
use crate::results::table::{col, Column};
use crate::results::{Row, Run};
use crate::select::Bounds;
use advice::co_runners;
use claims::{against_spin, spinner_on_sibling, Time, MWAIT_WAKEUP, PTHREADS_CALL, PTHREADS_WAKEUP};
use clap::Args;
pub use episode::{episode_rounds, episodes, medians, rounds_for, Matmul, Medians, Rendezvous, Stamps, WakeFigures};
use figures::charts;
use spinlab::wait::{visit_policies, PolicyVisitor, Unavailable, Wait};
use spinlab::{CachePadded, Event};
use spinlab_registry::{self as registry, DynEvent};
use std::time::Instant;

/// The worker's matrix size, the computation's length (the option's bounds are [`MATRIX_N`]).
pub const KEY_MATRIX_N: &str = "matrix_n";
/// Which computation a row measured: `long` (the `--work-ms` one) or `short`.
pub const KEY_COMPUTATION: &str = "computation";

/// Seed 001's Twakeup: from the notify call to the waiter running again.
pub const TWAKEUP_NS: &str = "twakeup_ns";
/// Seed 001's Tcall: what the notify call costs the notifier.
pub const TCALL_NS: &str = "tcall_ns";
/// The worker's computation while the waiter waits, vs alone.
pub const TWORK_VS_ALONE_PCT: &str = "twork_vs_alone_pct";

/// The policies measured when `--waits` is not given: seed 001's spin-loops (`pause`), its
/// kernel-sleeping primitive without the mutex (`futex`), the plain spinner and `yield` for
/// scale, spinlab's spin-then-park, and the user-mode monitor waits (seed 001's mwmon).
pub const DEFAULT_WAITS: &[&str] = &["spin", "pause", "yield", "futex", "spin-park", "umwait", "mwaitx", "wfe"];

/// The reference primitive's row name: a notification count under a `pthread_mutex_t` and a
/// `pthread_cond_t` (the registry's `pthread` event), seed 001's *pthreads*.
pub const PTHREAD_COND: &str = "pthread-cond";
/// The row with no waiter: the worker alone.
pub const NONE: &str = "none";

/// `--size` (here and in `spinlab run barrier`): matrices up to 2048×2048, three of them
/// 96 MiB, one multiply several seconds (seed 001 used 512).
pub const MATRIX_N: Bounds = Bounds::new(1, 2048);
/// `--short-size`: as [`MATRIX_N`], with 0 to leave the short computation out.
pub const SHORT_N: Bounds = Bounds::new(0, 2048);
/// `--work-ms` (here and in `spinlab run barrier`): one multiply up to a second.
pub const WORK_MS: Bounds = Bounds::new(1, 1000).unit(" ms");

/// Options of `spinlab run wakeup` (no `Default`: `cli_defaults` gives clap's).
#[derive(Args, Clone, Debug)]
#[group(skip)]
pub struct Wakeup {
    /// Matrix size of the long computation (default: scaled so one multiply takes --work-ms),
    /// within [`MATRIX_N`]
    #[arg(long, value_name = "N", value_parser = |s: &str| MATRIX_N.parse::<usize>(s), allow_hyphen_values = true,
          help = MATRIX_N.help("Matrix size of the long computation (default: scaled so one multiply takes --work-ms)"))]
    pub size: Option<usize>,
    /// Target length of the long computation when --size is not given, in milliseconds, within
    /// [`WORK_MS`]
    #[arg(long, value_name = "MS", default_value = "10", value_parser = |s: &str| WORK_MS.parse::<usize>(s),
          allow_hyphen_values = true,
          help = WORK_MS.help("Target length of the long computation when --size is not given, in milliseconds"))]
    pub work_ms: usize,
    /// Matrix size of the short computation (a wait shorter than spin-then-park's budget);
    /// 0 leaves it out; within [`SHORT_N`]
    #[arg(long, value_name = "N", default_value = "10", value_parser = |s: &str| SHORT_N.parse::<usize>(s),
          allow_hyphen_values = true,
          help = SHORT_N.help("Matrix size of the short computation (a wait shorter than spin-then-park's budget); \
                               0 leaves it out"))]
    pub short_size: usize,
}

const COLUMNS: &[Column] = &[
    col(WAIT, "wait"),
    col(PLACEMENT, "placement"),
    col(KEY_MATRIX_N, "N"),
    col("twork_s", "Twork s"),
    col("twork_sd_s", "±sd"),
    col(TWORK_VS_ALONE_PCT, "vs alone %"),
    col(TWAKEUP_NS, "Twakeup ns"),
    col("twakeup_sd_ns", "±sd"),
    col(TCALL_NS, "Tcall ns"),
    col("tcall_sd_ns", "±sd"),
    col("reps", "reps"),
];

/// Runs episodes of one primitive: (CPUs, rounds, work, clock).
type EpisodeRunner = Box<dyn Fn((usize, usize), usize, &mut Matmul, &Clock) -> Result<Vec<Stamps>, LabError>>;

/// One notify primitive: its row name, why it cannot run here, and its episode runner.
struct Primitive {
    name: String,
    unavailable: Option<String>,
    episodes: EpisodeRunner,
}

fn event_episodes<W: Wait>(
    cpus: (usize, usize),
    rounds: usize,
    work: &mut Matmul,
    clock: &Clock,
) -> Result<Vec<Stamps>, LabError> {
    // Padded: a monitor wait ends on any write to the line (seed 001 §2).
    let event = CachePadded::new(Event::<W>::new());
    episodes(Some(&*event), cpus, rounds, work, clock)
}

fn policy_primitives(names: &[&str]) -> Vec<Primitive> {
    type Run = fn((usize, usize), usize, &mut Matmul, &Clock) -> Result<Vec<Stamps>, LabError>;
    struct Collect(Vec<(&'static str, Result<(), Unavailable>, Run)>);
    impl PolicyVisitor for Collect {
        fn visit<W: Wait>(&mut self) {
            self.0.push((W::NAME, W::availability(), event_episodes::<W>));
        }
    }
    let mut all = Collect(Vec::new());
    visit_policies(&mut all);
    names
        .iter()
        .filter_map(|n| all.0.iter().find(|p| p.0 == *n))
        .map(|&(name, availability, run)| Primitive {
            name: name.to_string(),
            unavailable: availability.err().map(|e| e.to_string()),
            episodes: Box::new(run),
        })
        .collect()
}

fn primitives(names: &[&str]) -> Vec<Primitive> {
    let mut list = policy_primitives(names);
    list.push(Primitive {
        name: PTHREAD_COND.to_string(),
        unavailable: None,
        episodes: Box::new(|cpus, rounds, work, clock| {
            let event = registry::EVENTS.build("pthread", ()).expect("the registry has the pthread event");
            episodes(Some(&event), cpus, rounds, work, clock)
        }),
    });
    list.push(Primitive {
        name: NONE.to_string(),
        unavailable: None,
        episodes: Box::new(|cpus, rounds, work, clock| episodes::<Box<dyn DynEvent>>(None, cpus, rounds, work, clock)),
    });
    list
}

/// A placement and its CPU pair (worker, waiter), or why the machine has none.
pub type PairAt = (Placement, Result<(usize, usize), String>);

/// The CPU pair (worker, waiter) for each placement, or why the machine has none.
pub fn placement_pairs(lab: &Lab, placements: &[Placement]) -> Vec<PairAt> {
    placements.iter().map(|&p| (p, lab.topology.pair(p))).collect()
}

/// Adds mean, sd, … of the repetitions under `name`_`unit`.
pub fn add_summary(row: Row, name: &str, unit: &str, samples: &[f64]) -> Row {
    match Summary::of(samples) {
        Some(s) => row.summary(name, unit, &s),
        None => row,
    }
}

/// One placement's and size's rows, one per primitive (skipped where it cannot run here),
/// from what the kept attempt measured, each with its Twork against the work alone.
fn size_rows(
    list: &[Primitive],
    base: &dyn Fn(&str) -> Row,
    cpus: (usize, usize),
    rounds: usize,
    kept: &Kept<(Vec<WakeFigures>, Vec<Series>)>,
) -> Vec<Row> {
    let (figures, series) = &kept.result;
    let mut config_rows = Vec::new();
    let mut next = 0;
    for p in list {
        let row = base(&p.name).with("cpus", format!("{},{}", cpus.0, cpus.1));
        if let Some(why) = &p.unavailable {
            config_rows.push(row.skipped(why.clone()));
            continue;
        }
        let i = next;
        next += 1;
        let mut row = figures[i].episode_row(row, &series[i], rounds);
        mark(&mut row, kept);
        config_rows.push(row);
    }
    let alone = config_rows.iter().find(|r| r.text(WAIT) == Some(NONE)).and_then(|r| r.number("twork_s"));
    if let Some(alone) = alone.filter(|a| *a > 0.0) {
        for row in config_rows.iter_mut() {
            if let Some(w) = row.number("twork_s") {
                row.set(TWORK_VS_ALONE_PCT, 100.0 * (w / alone - 1.0));
            }
        }
    }
    config_rows
}

impl Experiment for Wakeup {
    fn name(&self) -> &'static str {
        "wakeup"
    }

    fn about(&self) -> &'static str {
        "Condition wait and notification: Twork, Twakeup, Tcall per notify primitive (seed 001)"
    }

    fn uses(&self) -> &'static [&'static str] {
        &["waits", "placement"]
    }

    fn columns(&self) -> &'static [Column] {
        COLUMNS
    }

    fn run(&self, lab: &Lab, common: &Common) -> Result<Vec<Run>, LabError> {
        let started = Instant::now();
        let rule = common.rule(10, 30)?;
        let waits: Vec<&str> = common.waits.as_ref().map_or_else(|| DEFAULT_WAITS.to_vec(), |w| w.0.clone());
        let placements = common
            .placement
            .as_ref()
            .map_or_else(|| vec![Placement::SameCpu, Placement::Smt, Placement::Core], |p| p.0.clone());
        let home = lab.home_cpu();
        let long = self.size.unwrap_or_else(|| with_pinned(home, || Matmul::size_for(self.work_ms as f64 * 1e-3)));
        let sizes: Vec<usize> = if self.short_size > 0 { vec![long, self.short_size] } else { vec![long] };
        let list = primitives(&waits);
        let pairs = placement_pairs(lab, &placements);

        let mut run = Run::new(self.name());
        run.param("waits", list.iter().map(|p| p.name.as_str()).collect::<Vec<_>>())
            .param("placements", placements.iter().map(|p| p.name()).collect::<Vec<_>>())
            .param("matrix_sizes", &sizes)
            .param("work_ms_target", self.size.is_none().then_some(self.work_ms))
            .param("ticks_per_second", lab.clock.ticks_per_second)
            .param("timer_overhead_ns", lab.clock.overhead_ns())
            .param("fenced_timer_overhead_ns", lab.clock.ns(fenced_overhead() as f64))
            .stopping_rule(&rule)
            .param("rule_watches", "twork_s");

        one_run(lab, started, run, (pairs.len() * sizes.len()) as u64, |progress| {
            let mut rows = Vec::new();
            for (placement, pair) in &pairs {
                for (i, &n) in sizes.iter().enumerate() {
                    progress.step(&format!("{placement}, {n}x{n}"));
                    // The size is calibrated on each run: the row is named by its role.
                    let computation = if i == 0 { "long" } else { "short" };
                    let base = |name: &str| {
                        Row::new()
                            .with(WAIT, name)
                            .with(PLACEMENT, placement.name())
                            .with(KEY_COMPUTATION, computation)
                            .with(KEY_MATRIX_N, n)
                    };
                    let cpus = match pair {
                        Ok(cpus) => *cpus,
                        Err(why) => {
                            rows.extend(list.iter().map(|p| base(&p.name).skipped(why.clone())));
                            progress.inc();
                            continue;
                        }
                    };
                    let runnable: Vec<&Primitive> = list.iter().filter(|p| p.unavailable.is_none()).collect();
                    let mut work = Matmul::new(n);
                    let rounds = episode_rounds(cpus.0, &mut work);
                    // Where waiter and notifier run on two CPUs, a line transfer between them just
                    // before and just after the configuration: a spinner's wake-up is about one
                    // transfer, so one the host moved those CPUs under is measured again (`moved`).
                    let kept = until_still(|attempt| {
                        if attempt > 1 {
                            progress
                                .step(&format!("{placement}, {n}x{n} again, attempt {attempt} (the machine moved)"));
                        }
                        around(&[cpus.0, cpus.1], &lab.clock, || {
                            let mut figures = vec![WakeFigures::default(); runnable.len()];
                            let series = interleave(runnable.len(), &rule, Some(progress), |i, rep| {
                                let stamps = (runnable[i].episodes)(cpus, rounds, &mut work, &lab.clock)?;
                                let medians = medians(&stamps, &lab.clock);
                                if rep != Rep::Warmup {
                                    figures[i].push(&medians);
                                }
                                Ok(medians.work_s)
                            })?;
                            Ok((figures, series))
                        })
                    })?;
                    rows.extend(size_rows(&list, &base, cpus, rounds, &kept));
                    progress.inc();
                }
            }
            Ok(rows)
        })
    }

    fn report_steps(&self, length: Length, _cpus: usize) -> Vec<Step> {
        let wakeup = match length {
            Length::Full => self.clone(),
            Length::Short => Wakeup { work_ms: 5, ..self.clone() },
            Length::Smoke => Wakeup { size: Some(12), short_size: 4, ..self.clone() },
        };
        let c = length.common(&wakeup, 3, 5, 0);
        vec![Step::new(wakeup, c, "wakeup: notify and wake-up cost")]
    }

    fn figures(&self, ctx: &Context<'_>, runs: &[&Run]) -> Vec<Result<Panel, String>> {
        charts(ctx, measured_as(runs))
    }

    fn advice(&self, ctx: &Context<'_>) -> Option<Contribution> {
        Some(Contribution { topic: Topic::WaitPolicies, lines: co_runners(ctx), reads: &["wakeup", "interference"] })
    }

    fn scorecard(&self, ctx: &Context<'_>) -> Vec<Finding> {
        vec![
            against_spin(ctx, &PTHREADS_WAKEUP, Time::Wakeup, &[PTHREAD_COND], (50.0, f64::INFINITY)),
            against_spin(ctx, &PTHREADS_CALL, Time::Call, &[PTHREAD_COND], (22.0, f64::INFINITY)),
            against_spin(ctx, &MWAIT_WAKEUP, Time::Wakeup, &["umwait", "mwaitx"], (11.0, 174.0)),
            spinner_on_sibling(ctx),
        ]
    }
}
