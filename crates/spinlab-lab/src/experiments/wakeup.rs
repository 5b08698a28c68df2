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

pub mod tradeoff;

use super::driver::one_run;
use super::lab::Lab;
use super::moved::{around, mark, until_still, Kept};
use super::options::Common;
use super::settings::{Length, Step};
use super::Experiment;
use crate::error::LabError;
use crate::machine::Placement;
use crate::measure::clock::{fenced_interval, fenced_now, fenced_overhead, now};
use crate::measure::partner::{with_partner, Announced};
use crate::measure::pin::with_pinned;
use crate::measure::{interleave, Clock, Rep, Series, Summary};
use crate::reading::advice::{lowest_tie, tie_words, Advice, Contribution, Figure, Margin, RunnerUp, Topic, Unit};
use crate::reading::plot::{self, Axis, Point, Scale};
use crate::reading::scorecard::{why_missing, words, Claim, Estimate, Finding, Observed, Verdict as Judged};
use crate::reading::{distinct, rows_of, Context, Panel};
use crate::results::format::{duration_words, number};
use crate::results::keys::{PLACEMENT, WAIT};
use crate::results::table::{col, Column};
use crate::results::{Row, Run};
use crate::select::Bounds;
use clap::Args;
use spinlab::registry::{self, DynEvent};
use spinlab::wait::{visit_policies, PolicyVisitor, Unavailable, Wait};
use spinlab::{CachePadded, Event};
use std::hint::black_box;
use std::time::Instant;
use tradeoff::{long_computation, tradeoff, wakeups_apart, PolicyPoint, Tradeoff, WakeupPoint, Wakeups};

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

/// A dense N×N floating-point matrix multiply, `c = a·b`: the unit of work of seed 001's
/// experiments (512×512 in Table 1, 10×10 in the barrier pseudo-benchmark). Each thread owns
/// its own matrices.
pub struct Matmul {
    n: usize,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Matmul {
    /// An `n`×`n` multiply with fixed, non-trivial inputs.
    pub fn new(n: usize) -> Matmul {
        let a = (0..n * n).map(|i| 1.0 + (i % 7) as f64 * 0.125).collect();
        let b = (0..n * n).map(|i| 0.5 + (i % 5) as f64 * 0.25).collect();
        Matmul { n, a, b, c: vec![0.0; n * n] }
    }

    /// The matrix size.
    pub fn n(&self) -> usize {
        self.n
    }

    /// One multiply (i-k-j order, so the inner loop streams rows); returns a corner of the
    /// product so the work cannot be optimised away.
    #[inline(never)]
    pub fn run(&mut self) -> f64 {
        let n = self.n;
        let (a, b) = (black_box(&self.a), black_box(&self.b));
        self.c.fill(0.0);
        for i in 0..n {
            let row = &mut self.c[i * n..(i + 1) * n];
            for k in 0..n {
                let aik = a[i * n + k];
                for (c, b) in row.iter_mut().zip(&b[k * n..(k + 1) * n]) {
                    *c += aik * b;
                }
            }
        }
        black_box(self.c[n * n - 1])
    }

    /// The size whose multiply takes about `target_s` here: times a 64×64 multiply and scales
    /// by the cube (at least 8).
    pub fn size_for(target_s: f64) -> usize {
        let mut m = Matmul::new(64);
        m.run();
        let best = (0..5)
            .map(|_| {
                let started = Instant::now();
                m.run();
                started.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min)
            .max(1e-9);
        ((64.0 * (target_s / best).cbrt()).round() as usize).max(8)
    }
}

/// The two sides of a two-thread rendezvous: the waiter (seed 001's lightweight thread) and
/// the notifier (the worker). For an event they are `wait` and `notify_one`; for a barrier
/// both are the barrier's `wait`.
pub trait Rendezvous: Sync {
    /// The waiting side.
    fn wait(&self);
    /// The notifying side.
    fn notify(&self);
}

impl<W: Wait> Rendezvous for Event<W> {
    #[inline]
    fn wait(&self) {
        Event::wait(self)
    }
    #[inline]
    fn notify(&self) {
        self.notify_one()
    }
}

impl Rendezvous for Box<dyn DynEvent> {
    fn wait(&self) {
        (**self).wait()
    }
    fn notify(&self) {
        self.notify_one()
    }
}

/// One episode's cycle counts: the worker's computation, notify-to-running, the notify call.
#[derive(Clone, Copy, Debug)]
pub struct Stamps {
    /// The worker's computation.
    pub work: u64,
    /// From just before the notify call to just after the waiter's wait returned (`None`
    /// without a waiter).
    pub wakeup: Option<u64>,
    /// The notify call (`None` without a waiter).
    pub call: Option<u64>,
}

/// The worker's side of one episode, in counter ticks.
struct Notified {
    /// The computation.
    work: u64,
    /// Just before the notify call.
    notify_called: u64,
    /// The notify call.
    call: u64,
}

/// `rounds` episodes of Fig. 2b: the waiter (pinned to `cpus.1`) says it is about to wait and
/// waits on `rv`; the worker (the calling thread, pinned to `cpus.0` for the duration) sees
/// that, computes `work`, and notifies. With `rv` `None` the worker computes alone.
pub fn episodes<R: Rendezvous + ?Sized>(
    rv: Option<&R>,
    cpus: (usize, usize),
    rounds: usize,
    work: &mut Matmul,
    clock: &Clock,
) -> Result<Vec<Stamps>, LabError> {
    let Some(rv) = rv else {
        return Ok(with_pinned(cpus.0, || {
            (0..rounds)
                .map(|_| {
                    let work_started = now();
                    work.run();
                    Stamps { work: clock.corrected(work_started, now()), wakeup: None, call: None }
                })
                .collect()
        }));
    };
    let armed = Announced::new();
    fenced_overhead();
    // The waiter's stamps: just after each wait returned.
    let waiter = || {
        (0..rounds)
            .map(|_| {
                armed.announce();
                rv.wait();
                fenced_now()
            })
            .collect::<Vec<u64>>()
    };
    let worker = || {
        with_pinned(cpus.0, || {
            (0..rounds)
                .map(|r| {
                    armed.wait_for(r + 1, cpus.0 != cpus.1);
                    let work_started = now();
                    work.run();
                    let notify_called = fenced_now();
                    rv.notify();
                    let notify_returned = fenced_now();
                    Notified {
                        work: clock.corrected(work_started, notify_called),
                        notify_called,
                        call: fenced_interval(notify_called, notify_returned),
                    }
                })
                .collect::<Vec<_>>()
        })
    };
    let sides = with_partner(cpus.1, waiter, worker)?;
    Ok(sides
        .main
        .iter()
        .zip(sides.partner)
        .map(|(worker, waiter_running)| Stamps {
            work: worker.work,
            wakeup: Some(fenced_interval(worker.notify_called, waiter_running)),
            call: Some(worker.call),
        })
        .collect())
}

/// One repetition's figures: the median episode of each.
#[derive(Clone, Copy, Debug)]
pub struct Medians {
    /// Twork.
    pub work_s: f64,
    /// Twakeup (NaN without a waiter).
    pub wakeup_ns: f64,
    /// Tcall (NaN without a waiter).
    pub call_ns: f64,
}

/// Per-repetition values from `rounds` episodes: the median episode of each figure (one
/// preempted episode spoils itself, not the repetition), in seconds and nanoseconds.
pub fn medians(stamps: &[Stamps], clock: &Clock) -> Medians {
    fn median(mut xs: Vec<u64>) -> Option<u64> {
        xs.sort_unstable();
        xs.get(xs.len() / 2).copied()
    }
    let ns = |ticks: Option<u64>| ticks.map_or(f64::NAN, |t| clock.ns(t as f64));
    Medians {
        work_s: ns(median(stamps.iter().map(|s| s.work).collect())) * 1e-9,
        wakeup_ns: ns(median(stamps.iter().filter_map(|s| s.wakeup).collect())),
        call_ns: ns(median(stamps.iter().filter_map(|s| s.call).collect())),
    }
}

/// One primitive's Twakeup and Tcall, one value per measured repetition.
#[derive(Clone, Default)]
pub struct WakeFigures {
    wakeup_ns: Vec<f64>,
    call_ns: Vec<f64>,
}

impl WakeFigures {
    /// Adds one measured repetition's.
    pub fn push(&mut self, medians: &Medians) {
        self.wakeup_ns.push(medians.wakeup_ns);
        self.call_ns.push(medians.call_ns);
    }

    /// `row` with their summaries (`twakeup_ns`, …, `tcall_ns`, …).
    pub fn summarized(&self, row: Row) -> Row {
        add_summary(add_summary(row, "twakeup", "ns", &self.wakeup_ns), "tcall", "ns", &self.call_ns)
    }
}

/// Episodes per repetition: enough for about 30 ms of computation, at least 3, at most 50.
pub fn rounds_for(work_s: f64) -> usize {
    ((0.03 / work_s.max(1e-9)).ceil() as usize).clamp(3, 50)
}

/// [`rounds_for`] one episode of `work`, timed once on `cpu`.
pub fn episode_rounds(cpu: usize, work: &mut Matmul) -> usize {
    let per_episode = with_pinned(cpu, || {
        let started = Instant::now();
        work.run();
        started.elapsed().as_secs_f64()
    });
    rounds_for(per_episode)
}

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
            let event = registry::new_event("pthread").expect("the registry has the pthread event");
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
        let mut row = figures[i].summarized(add_summary(row, "twork", "s", &series[i].samples));
        row.set("reps", series[i].samples.len());
        row.set("episodes_per_rep", rounds);
        row.set("stop", series[i].verdict);
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
        charts(ctx, &rows_of(runs))
    }

    fn advice(&self, ctx: &Context<'_>) -> Option<Contribution> {
        Some(Contribution { topic: Topic::WaitPolicies, lines: co_runners(ctx), reads: &["wakeup", "interference"] })
    }

    fn scorecard(&self, ctx: &Context<'_>) -> Vec<Finding> {
        vec![
            against_spin(ctx, &PTHREADS_WAKEUP, TWAKEUP_NS, &[PTHREAD_COND], (50.0, 800.0)),
            against_spin(ctx, &PTHREADS_CALL, TCALL_NS, &[PTHREAD_COND], (22.0, 356.0)),
            against_spin(ctx, &MWAIT_WAKEUP, TWAKEUP_NS, &["umwait", "mwaitx"], (11.0, 174.0)),
            spinner_on_sibling(ctx),
        ]
    }
}

const PTHREADS_WAKEUP: Claim = Claim {
    id: "001-twakeup-pthreads-vs-spin",
    seed: "001",
    source: "Table 1",
    claim: "a waiter blocked in a pthread condition variable wakes far later than a spinning one",
    paper: "Twakeup 116989 cycles for pthreads against 584 for spin with PAUSE (200x), Xeon with HT",
};

const PTHREADS_CALL: Claim = Claim {
    id: "001-tcall-pthreads-vs-spin",
    seed: "001",
    source: "Table 1",
    claim: "notifying a pthread condition variable costs the notifier far more than setting a flag",
    paper: "Tcall 70042 cycles for pthreads against 785 for spin (89x)",
};

const MWAIT_WAKEUP: Claim = Claim {
    id: "001-twakeup-mwait-vs-spin",
    seed: "001",
    source: "Table 1",
    claim: "a waiter in MWAIT wakes between a spinner and a sleeping thread",
    paper: "Twakeup 25381 cycles for mwait against 584 for spin (43x) and 116989 for pthreads",
};

const SPINNER_ON_SIBLING: Claim = Claim {
    id: "001-spinner-slows-sibling",
    seed: "001",
    source: "§4.2, Table 1",
    claim: "a spinning waiter on the sibling hardware thread slows the worker more than the other primitives",
    paper: "Twork 4.2446 s beside spin against 3.566 s on average beside halt, pthreads and mwait (19% \
            longer), 2.8 GHz Netburst Xeon with HT",
};

/// Seed 001's spinning waiter: a spin loop with PAUSE.
const SPIN: &str = "pause";

/// Where the seed's waiter was (the worker's sibling), or the nearest this document has.
fn table_1_placement(rows: &[&Row]) -> Option<&'static str> {
    [Placement::Smt, Placement::Core]
        .into_iter()
        .map(Placement::name)
        .find(|p| rows.iter().any(|r| r.text(PLACEMENT) == Some(*p)))
}

/// `key` of the first of `waits` measured, over the PAUSE spinner's (seed 001's "spin"), at
/// Table 1's placement.
fn against_spin(ctx: &Context<'_>, claim: &Claim, key: &str, waits: &[&str], range: (f64, f64)) -> Finding {
    let rows = long_computation(&ctx.rows_of("wakeup"));
    let Some(placement) = table_1_placement(&rows) else {
        return Finding::without(claim, "wakeup", Judged::NotMeasured(ctx.missing_reason("wakeup")));
    };
    let at = |wait: &str| rows.iter().find(|r| r.text(WAIT) == Some(wait) && r.text(PLACEMENT) == Some(placement));
    let rows_words = format!("wakeup, {} and {SPIN} at {placement}, long computation: {key}", waits.join(" or "));
    let Some((wait, other)) = waits.iter().find_map(|w| at(w).map(|r| (*w, *r))) else {
        let needs: Vec<(&str, &str)> = waits.iter().map(|w| (WAIT, *w)).collect();
        return Finding::without(claim, &rows_words, why_missing(ctx, "wakeup", &needs));
    };
    let (Some(spin), Some(other)) = (at(SPIN).and_then(|r| Estimate::of(r, key)), Estimate::of(other, key)) else {
        return Finding::without(claim, &rows_words, Judged::NotMeasured(ctx.missing_reason("wakeup")));
    };
    let Some(here) = other.ratio(&spin) else {
        return Finding::without(claim, &rows_words, Judged::NotMeasured(format!("{SPIN}'s {key} is zero")));
    };
    let detail = format!("{wait} {}, {SPIN} {}", words(&other, " ns"), words(&spin, " ns"));
    let reason = "the kernel's wake-up path and the CPU are not the 2008 Xeon's: a futex wake-up, and a \
                  cache line moving between cores, cost other multiples of each other today";
    let behind: Vec<&Row> = [at(wait), at(SPIN)].into_iter().flatten().copied().collect();
    Finding::judged(claim, ctx, "wakeup", Observed { here, unit: "x", detail, rows: rows_words }, range, reason)
        .read_from_rows(&behind)
}

/// How much longer the worker's computation takes beside a spinning waiter on its sibling
/// than beside the sleeping primitives (seed 001: Twork 4.2446 s against 3.566 s, 1.19x), in
/// percent.
fn spinner_on_sibling(ctx: &Context<'_>) -> Finding {
    let rows = long_computation(&ctx.rows_of("wakeup"));
    let smt = Placement::Smt.name();
    let rows_words =
        format!("wakeup at {smt}: twork of {SPIN} over the mean of futex and pthread-cond, from twork_vs_alone_pct");
    let at = |wait: &str| rows.iter().find(|r| r.text(WAIT) == Some(wait) && r.text(PLACEMENT) == Some(smt));
    let slowdown = |wait: &str| at(wait).and_then(|r| r.number(TWORK_VS_ALONE_PCT));
    let sleepers: Vec<f64> = ["futex", PTHREAD_COND].iter().filter_map(|w| slowdown(w)).collect();
    let (Some(spin), false) = (slowdown(SPIN), sleepers.is_empty()) else {
        return Finding::without(&SPINNER_ON_SIBLING, &rows_words, why_missing(ctx, "wakeup", &[(PLACEMENT, smt)]));
    };
    let others = sleepers.iter().sum::<f64>() / sleepers.len() as f64;
    let here = Estimate { value: 100.0 * ((1.0 + spin / 100.0) / (1.0 + others / 100.0) - 1.0), ci95: 0.0 };
    let detail = format!("{SPIN} {}%, sleeping primitives {}%", number(spin), number(others));
    let reason = "a modern core shares its pipeline between two threads differently from Netburst, and a \
                  spin with PAUSE yields more of it";
    Finding::judged(
        &SPINNER_ON_SIBLING,
        ctx,
        "wakeup",
        Observed { here, unit: "%", detail, rows: rows_words },
        (9.5, 38.0),
        reason,
    )
}

fn charts(ctx: &Context<'_>, rows: &[&Row]) -> Vec<Result<Panel, String>> {
    let rows = long_computation(rows);
    let mut out = Vec::new();
    for placement in distinct(&rows, PLACEMENT) {
        let at: Vec<&Row> = rows.iter().copied().filter(|r| r.text(PLACEMENT) == Some(placement.as_str())).collect();
        let at: Vec<&Row> =
            at.into_iter().filter(|r| r.number(TWAKEUP_NS).is_some() || r.number(TCALL_NS).is_some()).collect();
        if at.is_empty() {
            continue;
        }
        let categories: Vec<String> = at.iter().map(|r| r.text(WAIT).unwrap_or("?").to_string()).collect();
        let groups = vec![
            ("Twakeup: notify to waiter running".to_string(), at.iter().map(|r| r.number(TWAKEUP_NS)).collect()),
            ("Tcall: the notify call itself".to_string(), at.iter().map(|r| r.number(TCALL_NS)).collect::<Vec<_>>()),
        ];
        let values = groups.iter().flat_map(|g: &(String, Vec<Option<f64>>)| g.1.iter().flatten().copied());
        let y = Axis::numeric("nanoseconds (log scale)", Scale::Log, values, false);
        out.push(
            plot::grouped_bars(
                &format!("Wake-up and notify cost, waiter at {placement}"),
                &categories,
                "notify primitive",
                &y,
                &groups,
                None,
            )
            .map(|svg| Panel {
                svg,
                caption: format!(
                    "Seed 001's Twakeup (from the notify call to the waiter running again) and Tcall (what the \
                         notify costs the notifier) per primitive, the waiter at {placement} from the worker."
                ),
            }),
        );
    }
    if let Some(Tradeoff { placement, points, interference: what }) = tradeoff(ctx) {
        let pts: Vec<Point> =
            points.iter().map(|p| Point { label: p.wait.clone(), x: p.interference_pct, y: p.wakeup_ns }).collect();
        let x = Axis::numeric(&format!("{what} (%)"), Scale::Linear, pts.iter().map(|p| p.x), true);
        let y = Axis::numeric("wake-up latency Twakeup (ns, log scale)", Scale::Log, pts.iter().map(|p| p.y), false);
        out.push(
            plot::scatter(&format!("The trade-off at {placement}: wake-up latency vs interference"), &x, &y, &pts).map(
                |svg| Panel {
                    svg,
                    caption: format!(
                    "Each wait policy as one point, waiter and worker at {placement}: left is kinder to the thread \
                     doing work (seeds 000/002), low is quicker to respond (seed 001); the best policies sit near the \
                     bottom-left corner."
                ),
                },
            ),
        );
    }
    out
}

const SENSITIVE: &str = "co-runners sensitive (waiters share a core or CPU with threads doing work)";
const NOT_SENSITIVE: &str = "co-runners not sensitive, wake-up latency matters";
/// [`SENSITIVE`] in a few words.
const SENSITIVE_BRIEF: &str = "co-runners sensitive";
/// [`NOT_SENSITIVE`] in a few words.
const NOT_SENSITIVE_BRIEF: &str = "wake-up latency";

fn co_runners(ctx: &Context<'_>) -> Vec<Advice> {
    vec![kindest(ctx), quickest(ctx)]
}

/// For waiters beside sensitive work: the kindest policy on the trade-off at the closest
/// placement measured, and among those within one percentage point of it, the quickest.
fn kindest(ctx: &Context<'_>) -> Advice {
    let Some(Tradeoff { placement, points, interference: what }) = tradeoff(ctx) else {
        return Advice::missing(
            SENSITIVE,
            SENSITIVE_BRIEF,
            format!(
                "not measured: no placement had two or more wait policies with both a wake-up latency and an \
                 interference figure ({}; {})",
                ctx.missing_reason("wakeup"),
                ctx.missing_reason("interference")
            ),
        );
    };
    // Policies whose interval reaches the least's (or within one percentage point of it) tie;
    // among them the first in KIND_ORDER, else the quickest to wake, so that reruns that differ
    // only by noise choose alike.
    let least = points.iter().min_by(|a, b| a.interference_pct.total_cmp(&b.interference_pct)).expect("two points");
    let reach = (least.interference_pct + least.interference_ci95_pct).max(least.interference_pct + 1.0);
    let tied: Vec<&PolicyPoint> =
        points.iter().filter(|p| p.interference_pct - p.interference_ci95_pct <= reach).collect();
    let kind = KIND_ORDER
        .iter()
        .find_map(|&w| tied.iter().copied().find(|p| p.wait == w))
        .or_else(|| tied.iter().copied().min_by(|a, b| a.wakeup_ns.total_cmp(&b.wakeup_ns)))
        .expect("tradeoff returns at least two points");
    let worst =
        points.iter().max_by(|a, b| a.interference_pct.total_cmp(&b.interference_pct)).expect("at least two points");
    let cost = |p: &PolicyPoint| Estimate { value: p.interference_pct, ci95: p.interference_ci95_pct };
    let runner_up = points
        .iter()
        .filter(|p| !std::ptr::eq(*p, kind))
        .min_by(|a, b| a.interference_pct.total_cmp(&b.interference_pct))
        .map(|other| RunnerUp {
            name: other.wait.clone(),
            figure: Figure::new(cost(other), Unit::Percent, ""),
            margin: Margin::points(&cost(kind), &cost(other), tied.iter().any(|t| std::ptr::eq(*t, other))),
        });
    let figure = Figure::new(cost(kind), Unit::Percent, format!("at {placement}"));
    Advice::new(
        SENSITIVE,
        SENSITIVE_BRIEF,
        format!("wait policy {}", kind.wait),
        format!(
            "{:.1}% {what}, wake-up {}, at {placement}; the worst here, {}, costs {:.1}%{}",
            kind.interference_pct,
            duration_words(kind.wakeup_ns),
            worst.wait,
            worst.interference_pct,
            tie_words(&others(tied.iter().map(|p| p.wait.as_str()), &kind.wait), &KIND_ORDER)
        ),
    )
    .chosen_by(figure, runner_up)
}

/// The tied policies other than the one named.
fn others<'a>(tied: impl Iterator<Item = &'a str>, chosen: &str) -> Vec<&'a str> {
    tied.filter(|&w| w != chosen).collect()
}

/// Policies preferred, in order, when several tie for the least interference: those that give
/// the CPU up soonest.
const KIND_ORDER: [&str; 4] = ["futex", "spin-park", "spin-yield-park", "yield"];
/// Policies preferred, in order, when several tie for the quickest wake-up: the gentlest
/// spinning first (seed 000: `pause` leaves the most to a sibling).
const QUICK_ORDER: [&str; 2] = ["pause", "spin"];

/// For waiters whose co-runners do not mind them: the quickest to wake, where the waiter has a
/// CPU of its own (a spinner on its notifier's CPU holds the CPU the notifier needs).
fn quickest(ctx: &Context<'_>) -> Advice {
    let Some(Wakeups { placement, points }) = wakeups_apart(ctx) else {
        return Advice::missing(
            NOT_SENSITIVE,
            NOT_SENSITIVE_BRIEF,
            format!(
                "not measured: no placement where the waiter has a CPU of its own had two or more wait policies \
                 with a wake-up latency ({})",
                ctx.missing_reason("wakeup")
            ),
        );
    };
    let tie = lowest_tie(&points, |p| (p.wait.as_str(), p.wakeup_ns, p.wakeup_ci95_ns), &QUICK_ORDER)
        .expect("two or more points");
    let quick = tie.chosen;
    let slowest = points.iter().max_by(|a, b| a.wakeup_ns.total_cmp(&b.wakeup_ns)).expect("two or more points");
    let wakeup = |p: &WakeupPoint| {
        Figure::new(
            Estimate { value: p.wakeup_ns, ci95: p.wakeup_ci95_ns },
            Unit::Nanoseconds,
            format!("at {placement}"),
        )
    };
    let runner_up = tie.runner_up_by(|p| p.wait.as_str(), wakeup);
    Advice::new(
        NOT_SENSITIVE,
        NOT_SENSITIVE_BRIEF,
        format!("wait policy {}", quick.wait),
        format!(
            "wake-up {} with the waiter on its own CPU (wakeup rows at {placement}, long computation); the slowest \
             there, {}, {}{}",
            duration_words(quick.wakeup_ns),
            slowest.wait,
            duration_words(slowest.wakeup_ns),
            tie.words(|p| p.wait.as_str(), &QUICK_ORDER)
        ),
    )
    .chosen_by(wakeup(quick), runner_up)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::interference::{SLOWDOWN_PCT, WAITER_CPU_PCT};

    #[test]
    fn the_multiply_computes_the_product() {
        let mut m = Matmul::new(3);
        m.run();
        // c[0][0] = Σk a[0][k]·b[k][0], with a = 1 + (i%7)/8 and b = 0.5 + (i%5)/4.
        let expected = 1.0 * 0.5 + 1.125 * (0.5 + 3.0 * 0.25) + 1.25 * (0.5 + 6.0 % 5.0 * 0.25);
        assert!((m.c[0] - expected).abs() < 1e-12, "{} vs {expected}", m.c[0]);
        assert!(Matmul::size_for(1e-4) >= 8);
    }

    #[test]
    fn every_episode_is_stamped_and_the_waiter_is_released_each_time() {
        let clock = Clock::calibrate();
        let cpu = crate::measure::pin::allowed_cpus()[0];
        let event = Event::<spinlab::wait::Futex>::new();
        let stamps = episodes(Some(&event), (cpu, cpu), 5, &mut Matmul::new(8), &clock).unwrap();
        assert_eq!(stamps.len(), 5);
        assert!(stamps.iter().all(|s| s.wakeup.is_some() && s.call.is_some()));
        assert!(!event.try_wait(), "every notification was taken by its own wait");
        let alone = episodes::<Event>(None, (cpu, cpu), 2, &mut Matmul::new(8), &clock).unwrap();
        assert!(alone.iter().all(|s| s.wakeup.is_none()));
    }

    #[test]
    fn the_quickest_policy_comes_from_a_placement_where_the_waiter_has_its_own_cpu() {
        let mut results = crate::results::Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        let mut run = Run::new("wakeup");
        let row = |placement: &str, wait: &str, twakeup: f64, slowdown: f64| {
            Row::new()
                .with(PLACEMENT, placement)
                .with(WAIT, wait)
                .with(KEY_MATRIX_N, 512)
                .with(TWAKEUP_NS, twakeup)
                .with(TWORK_VS_ALONE_PCT, slowdown)
        };
        // On a shared CPU the spinners wait out their time slices; `yield` wakes quickest.
        run.rows.push(row("same-cpu", "spin", 900_000.0, 90.0));
        run.rows.push(row("same-cpu", "yield", 5_010.0, 40.0));
        run.rows.push(row("core", "spin", 45.0, 1.0));
        run.rows.push(row("core", "spin-park", 53.0, 0.5));
        run.rows.push(row("core", "yield", 6_000.0, 0.4));
        results.runs.push(run);
        let ctx = Context::new(&results);
        let advice = co_runners(&ctx);
        let quick = advice.iter().find(|a| a.situation == NOT_SENSITIVE).unwrap();
        assert_eq!(quick.choice, "wait policy spin", "{quick:?}");
        assert!(quick.why.contains("at core") && quick.why.contains("yield"), "{quick:?}");
        // The kindest comes from the closest placement measured, where sharing is what hurts.
        let kind = advice.iter().find(|a| a.situation == SENSITIVE).unwrap();
        assert_eq!(kind.choice, "wait policy yield", "{kind:?}");
        assert!(kind.why.contains("at same-cpu"), "{kind:?}");
    }

    #[test]
    fn the_pthreads_claims_say_the_machine_moved_only_when_it_moved_under_their_rows() {
        use crate::results::{TRANSFER_AFTER_NS, TRANSFER_BEFORE_NS};
        let results_with = |pause_after_ns: f64| {
            let mut results = crate::results::Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
            let mut run = Run::new("wakeup");
            // The run as a whole saw the machine move (under another configuration).
            run.param(TRANSFER_BEFORE_NS, 50.0).param(TRANSFER_AFTER_NS, 200.0);
            let row = |placement: &str, wait: &str, tcall: f64, after: f64| {
                Row::new()
                    .with(PLACEMENT, placement)
                    .with(WAIT, wait)
                    .with(KEY_MATRIX_N, 512)
                    .with(TWAKEUP_NS, 100.0 * tcall)
                    .with(TCALL_NS, tcall)
                    .with(TRANSFER_BEFORE_NS, 50.0)
                    .with(TRANSFER_AFTER_NS, after)
            };
            run.rows.push(row("core", SPIN, 50.0, pause_after_ns));
            run.rows.push(row("core", PTHREAD_COND, 25_000.0, pause_after_ns));
            run.rows.push(row("same-cpu", SPIN, 10.0, 50.0));
            results.runs.push(run);
            results
        };
        let finding = |results: &crate::results::Results| {
            let ctx = Context::new(results);
            against_spin(&ctx, &PTHREADS_CALL, TCALL_NS, &[PTHREAD_COND], (22.0, 356.0))
        };
        // The rows behind the figure held still: no mark, whatever the run saw elsewhere.
        let still = finding(&results_with(55.0));
        assert!(still.here.is_some_and(|e| (e.value - 500.0).abs() < 1e-9), "{:?}", still.here);
        assert_eq!(still.machine_moved, None);
        // It moved under them: marked, with their transfers.
        let moved = finding(&results_with(210.0));
        assert!(moved.machine_moved.as_deref().is_some_and(|w| w.contains("210 ns")), "{:?}", moved.machine_moved);
    }

    #[test]
    fn policies_that_tie_are_named_in_a_fixed_order_so_reruns_agree() {
        let mut results = crate::results::Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        let mut wakeup = Run::new("wakeup");
        let row = |wait: &str, twakeup: f64, ci: f64| {
            Row::new()
                .with(PLACEMENT, "core")
                .with(WAIT, wait)
                .with(KEY_MATRIX_N, 512)
                .with(TWAKEUP_NS, twakeup)
                .with("twakeup_ci95_ns", ci)
        };
        // spin is quickest, but pause's interval reaches it: a tie, and pause comes first.
        wakeup.rows.push(row("spin", 45.0, 5.0));
        wakeup.rows.push(row("pause", 52.0, 5.0));
        wakeup.rows.push(row("futex", 20_000.0, 900.0));
        let mut interference = Run::new("interference");
        let slowdown = |wait: &str, pct: f64, ci: f64| {
            Row::new().with(PLACEMENT, "core").with(WAIT, wait).with(SLOWDOWN_PCT, pct).with("slowdown_ci95_pct", ci)
        };
        // At core futex costs -0.5 ± 3%, pause 1.2 ± 2.5%, spin 9 ± 1%: futex and pause tie.
        interference.rows.push(slowdown("futex", -0.5, 3.0));
        interference.rows.push(slowdown("pause", 1.2, 2.5));
        interference.rows.push(slowdown("spin", 9.0, 1.0));
        results.runs.push(wakeup);
        results.runs.push(interference);
        let ctx = Context::new(&results);
        let advice = co_runners(&ctx);
        let quick = advice.iter().find(|a| a.situation == NOT_SENSITIVE).unwrap();
        assert_eq!(quick.choice, "wait policy pause", "{quick:?}");
        assert!(quick.why.contains("spin within the 95% intervals too"), "{quick:?}");
        let kind = advice.iter().find(|a| a.situation == SENSITIVE).unwrap();
        assert_eq!(kind.choice, "wait policy futex", "{kind:?}");
        assert!(kind.why.contains("pause within the 95% intervals too"), "{kind:?}");
        assert!(!kind.why.contains("spin within"), "spin's 9 ± 1% is outside: {kind:?}");
        // The runner-ups: spin, quicker and tied; pause, 1.7 points more and tied.
        let next = quick.runner_up.as_ref().unwrap();
        assert_eq!((next.name.as_str(), next.margin.tied), ("spin", true), "{quick:?}");
        assert_eq!(next.margin.words(), "0.865x, within the interval");
        let next = kind.runner_up.as_ref().unwrap();
        assert_eq!((next.name.as_str(), next.margin.words().as_str()), ("pause", "+1.7 points, within the interval"));
    }

    #[test]
    fn on_a_shared_cpu_the_kindest_policy_is_read_from_the_cpu_the_waiters_took() {
        let results_with = |taken_measured: bool| {
            let mut results = crate::results::Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
            let mut wakeup = Run::new("wakeup");
            for (wait, twakeup) in [("spin", 900_000.0), ("futex", 30_000.0)] {
                let row = Row::new().with(PLACEMENT, "same-cpu").with(WAIT, wait).with(KEY_MATRIX_N, 512);
                wakeup.rows.push(row.with(TWAKEUP_NS, twakeup));
            }
            // Under load the wall slowdowns crossed (other processes' turns fell in futex's
            // co-runs); the waiters' own CPU time did not.
            let mut interference = Run::new("interference");
            for (wait, wall, taken) in [("spin", 20.0, 98.0), ("futex", 40.0, 0.0)] {
                let mut row = Row::new()
                    .with(PLACEMENT, "same-cpu")
                    .with(WAIT, wait)
                    .with(SLOWDOWN_PCT, wall)
                    .with("slowdown_ci95_pct", 5.0);
                if taken_measured {
                    row = row.with(WAITER_CPU_PCT, taken).with("waiter_cpu_ci95_pct", 1.0);
                }
                interference.rows.push(row);
            }
            results.runs.push(wakeup);
            results.runs.push(interference);
            results
        };
        let results = results_with(true);
        let kind = kindest(&Context::new(&results));
        assert_eq!(kind.choice, "wait policy futex", "{kind:?}");
        assert!(kind.why.starts_with("0.0% mean CPU time the waiters took on the worker's CPU"), "{kind:?}");
        assert!(kind.why.contains("the worst here, spin, costs 98.0%"), "{kind:?}");
        // Results written before the waiters' figure existed: the wall slowdown is read.
        let older = results_with(false);
        let older = kindest(&Context::new(&older));
        assert_eq!(older.choice, "wait policy spin", "{older:?}");
        assert!(older.why.contains("mean slowdown of the interference workloads"), "{older:?}");
    }
}
