//! `spinlab run floor`: the physical limits every other figure is read against.
//!
//! - `timer`: two back-to-back cycle-counter reads (the overhead subtracted everywhere);
//!   `instant-now`: one `Instant::now()` (the OS clock, for comparison).
//! - `cas-store`, `cas-swap`: an uncontended compare-and-swap followed by a store or a swap,
//!   the least a lock/unlock pair can cost.
//! - `ping-pong`: one-way latency of a cache line bouncing between two pinned threads, for
//!   each CPU pair: the floor for any lock hand-off between those CPUs.
//! - `spin-hint`: one `pause` (or the architecture's hint).
//! - `wait-period`: one iteration of each available wait policy's loop (re-read + body),
//!   running alone; for policies that spin then sleep, also the length of the spin phase.
//! - `futex-wake-no-waiter`: FUTEX_WAKE when nobody sleeps (the Tcall floor of seed 001).
//! - `futex-wake-to-run`: from a waker's decision to the sleeper running again, per placement.
//! - `sched-yield`: `sched_yield` with nobody else to run.
//! - `yield-forfeit`: what a `sched_yield` costs the yielder in CPU time when another thread
//!   wants its CPU: some kernels charge it the rest of its time slice.

use super::driver::one_run;
use super::lab::Lab;
use super::options::Common;
use super::settings::{self, Length};
use super::Experiment;
use crate::error::LabError;
use crate::machine::Placement;
use crate::measure::clock::{now, read_pair_ticks, thread_cpu_s};
use crate::measure::partner::{with_partner, with_partners, Announced};
use crate::measure::pin::with_pinned;
use crate::measure::team::{MEASURING, STARTING, STOPPED};
use crate::measure::{interleave, repeat, Clock, Progress, Rep, Series, StoppingRule, Summary};
use crate::reading::plot::{self, Axis, Bar, Scale};
use crate::reading::{measured_as, Context, Panel};
use crate::results::keys::{MEASURE, PLACEMENT, WAIT};
use crate::results::rows::FloorRow;
use crate::results::table::{col, Column};
use crate::results::{Row, Run};
use clap::Args;
use spinlab::sys::futex::{self, FutexWait};
use spinlab::wait::{visit_policies, Episode, PolicyVisitor, Step, Unavailable, Wait};
use spinlab::CachePadded;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Nanoseconds per operation (`Row::summary("", "ns", …)`).
pub const NS: &str = "ns";
/// The measure of what a yield costs the yielder (its row's `ns`: CPU time per yield).
pub const YIELD_FORFEIT: &str = "yield-forfeit";

/// Options of `spinlab run floor`.
#[derive(Args, Clone, Debug, Default)]
#[group(skip)]
pub struct Floor {
    /// Measure ping-pong on every CPU pair even on machines with more than 16 CPUs (by
    /// default, large machines get the first few pairs of each placement)
    #[arg(long)]
    pub all_pairs: bool,
}

const COLUMNS: &[Column] = &[
    col(MEASURE, "measure"),
    col(WAIT, "wait"),
    col(PLACEMENT, "placement"),
    col("cpus", "cpus"),
    col(NS, "ns (mean)"),
    col("median_ns", "median"),
    col("ci95_ns", "±95%"),
    col("min_ns", "min"),
    col("spin_phase_ns", "spin phase ns"),
    col("yielder_cpu_share", "yielder's CPU share"),
    col("reps", "reps"),
];

/// Length of one batch of a single-thread loop, and batches per repetition. A repetition's
/// value is its median batch, so an interrupt or a preemption (only ever a slowdown) spoils a
/// batch, not the repetition; 30 repetitions still take well under a second.
const BATCH_SECONDS: f64 = 0.0005;
const LOOP_BATCHES: usize = 11;
/// Round trips per ping-pong batch, and batches per repetition (whose median is the
/// repetition's value).
pub(crate) const BATCH: u32 = 100;
pub(crate) const BATCHES: u32 = 51;
/// Wake-ups per wake-to-run repetition.
const WAKEUPS: u32 = 50;
/// Pairs per placement on machines with more than 16 CPUs.
const PAIRS_PER_PLACEMENT: usize = 4;
/// `yield-forfeit`: one repetition's window.
const FORFEIT_WINDOW: Duration = Duration::from_millis(200);
/// How long both threads spin side by side before the window (several time slices).
const FORFEIT_SETTLE: Duration = Duration::from_millis(20);
/// A partner not counted in after this long calls the repetition off.
const FORFEIT_START_LIMIT: Duration = Duration::from_secs(10);
/// How much of its own running the yielder does between two yields.
const YIELD_EVERY_NS: f64 = 200_000.0;
/// A gap at least this long between two of the yielder's clock reads is time it did not run,
/// and does not count towards the next yield.
const OFF_CPU_NS: f64 = 20_000.0;

/// The rows measured on `home` alone: the timer, `Instant::now`, the CAS pairs, the spin
/// hint, each policy's period, a futex wake with no waiter and `sched_yield`.
fn one_cpu_rows(
    policies: &[Probe],
    rule: &StoppingRule,
    progress: &Progress,
    lab: &Lab,
    home: usize,
) -> Result<Vec<Row>, LabError> {
    let clock = lab.clock;
    let mut rows = Vec::new();
    progress.step("timer");
    let s = repeat(rule, Some(progress), |_| Ok(clock.ns(read_pair_ticks(10_001) as f64)))?;
    rows.push(measured("timer", &s).with("cpus", home.to_string()));
    progress.inc();

    progress.step("instant-now");
    let instant_loop = |n: u64| {
        ticks_for(n, || {
            black_box(Instant::now());
        })
    };
    let n = ops_for(&clock, instant_loop);
    let s = repeat(rule, Some(progress), |_| Ok(median_batch(&clock, n, instant_loop)))?;
    rows.push(measured("instant-now", &s).with("cpus", home.to_string()));
    progress.inc();

    progress.step("cas-store, cas-swap");
    let word = CachePadded::new(AtomicU32::new(0));
    let pair_loop = |swap: bool, n: u64| {
        let w = black_box(&*word);
        ticks_for(n, || {
            let _ = w.compare_exchange(0, 1, Acquire, Relaxed);
            if swap {
                w.swap(0, Release);
            } else {
                w.store(0, Release);
            }
        })
    };
    let ns = [ops_for(&clock, |n| pair_loop(false, n)), ops_for(&clock, |n| pair_loop(true, n))];
    let both = interleave(2, rule, Some(progress), |i, _| Ok(median_batch(&clock, ns[i], |n| pair_loop(i == 1, n))))?;
    rows.push(measured("cas-store", &both[0]).with("cpus", home.to_string()));
    rows.push(measured("cas-swap", &both[1]).with("cpus", home.to_string()));
    progress.inc();

    progress.step("spin-hint");
    let hint_loop = |n: u64| ticks_for(n, std::hint::spin_loop);
    let n = ops_for(&clock, hint_loop);
    let s = repeat(rule, Some(progress), |_| Ok(median_batch(&clock, n, hint_loop)))?;
    rows.push(measured("spin-hint", &s).with("cpus", home.to_string()));
    progress.inc();

    progress.step("wait-period");
    rows.extend(wait_periods(policies, rule, progress, lab, home)?);
    progress.inc();

    progress.step("futex-wake-no-waiter");
    let word = AtomicU32::new(0);
    let wake_loop = |n: u64| {
        ticks_for(n, || {
            futex::wake_one(&word);
        })
    };
    let n = ops_for(&clock, wake_loop);
    let s = repeat(rule, Some(progress), |_| Ok(median_batch(&clock, n, wake_loop)))?;
    rows.push(measured("futex-wake-no-waiter", &s).with("cpus", home.to_string()));
    progress.inc();

    progress.step("sched-yield");
    let yield_loop = |n: u64| ticks_for(n, std::thread::yield_now);
    let n = ops_for(&clock, yield_loop);
    let s = repeat(rule, Some(progress), |_| Ok(median_batch(&clock, n, yield_loop)))?;
    rows.push(measured("sched-yield", &s).with("cpus", home.to_string()));
    progress.inc();
    Ok(rows)
}

impl Experiment for Floor {
    fn name(&self) -> &'static str {
        "floor"
    }

    fn about(&self) -> &'static str {
        "Physical floors: timer, CAS pairs, cache-line ping-pong, spin hint, wait-policy periods, futex wake and wake-to-run, sched_yield and what it costs the yielder"
    }

    fn uses(&self) -> &'static [&'static str] {
        &["waits", "placement"]
    }

    fn columns(&self) -> &'static [Column] {
        COLUMNS
    }

    fn run(&self, lab: &Lab, common: &Common) -> Result<Vec<Run>, LabError> {
        let started = Instant::now();
        let rule = common.rule(5, 30)?;
        let placements = common.placements_or_all();
        let policies: Vec<Probe> =
            probes().into_iter().filter(|p| common.waits.as_ref().is_none_or(|w| w.0.contains(&p.name))).collect();
        let pairs = self.pairs(lab, &placements);

        let mut run = Run::new(self.name());
        run.stopping_rule(&rule)
            .param("placements", placements.iter().map(|p| p.name()).collect::<Vec<_>>())
            .param("waits", policies.iter().map(|p| p.name).collect::<Vec<_>>())
            .param("loop_batch_s", BATCH_SECONDS)
            .param("loop_batches_per_rep", LOOP_BATCHES)
            .param("ping_pong_batch_round_trips", BATCH)
            .param("ping_pong_batches_per_rep", BATCHES)
            .param("wakeups_per_rep", WAKEUPS)
            .param("yield_forfeit_window_s", FORFEIT_WINDOW.as_secs_f64())
            .param("yield_forfeit_every_ns", YIELD_EVERY_NS)
            .param("tsc_hz", lab.clock.ticks_per_second)
            .param("timer_overhead_ticks", lab.clock.overhead_ticks);

        let steps = 9 + placements.len() as u64 * 2;
        one_run(lab, started, run, steps, |progress| {
            let home = lab.home_cpu();
            let mut rows = with_pinned(home, || one_cpu_rows(&policies, &rule, progress, lab, home))?;

            progress.step("yield-forfeit");
            rows.push(yield_forfeit_row(home, &rule, progress, lab)?);
            progress.inc();

            progress.step("ping-pong");
            rows.extend(ping_pongs(&pairs, &rule, progress, lab)?);
            progress.inc();
            for &placement in &placements {
                progress.step(&format!("futex-wake-to-run, {placement}"));
                rows.push(wake_to_run_row(placement, &rule, progress, lab)?);
                progress.inc();
            }
            Ok(rows)
        })
    }

    fn report_steps(&self, length: Length, _cpus: usize) -> Vec<settings::Step> {
        let common = length.common(self, 3, 8, 0);
        vec![settings::Step::new(self.clone(), common, "floor: the machine's physical limits")]
    }

    fn figures(&self, _ctx: &Context<'_>, runs: &[&Run]) -> Vec<Result<Panel, String>> {
        chart(&measured_as::<FloorRow>(runs))
    }
}

/// The CPU pairs at one placement, or why it has none.
struct PairsAt {
    placement: Placement,
    pairs: Result<Vec<(usize, usize)>, String>,
}

impl Floor {
    /// The ping-pong pairs per placement (all, or a few on large machines), or why none.
    fn pairs(&self, lab: &Lab, placements: &[Placement]) -> Vec<PairsAt> {
        let all = lab.topology.all_pairs();
        let limit = if self.all_pairs || lab.cpus() <= 16 { usize::MAX } else { PAIRS_PER_PLACEMENT };
        placements
            .iter()
            .map(|&p| {
                if p == Placement::SameCpu {
                    return PairsAt {
                        placement: p,
                        pairs: Err("a line does not move between two threads on one CPU; their hand-off is a \
                                    context switch (see futex-wake-to-run at same-cpu)"
                            .to_string()),
                    };
                }
                let found: Vec<(usize, usize)> =
                    all.iter().filter(|(_, _, q)| *q == p).map(|&(a, b, _)| (a, b)).take(limit).collect();
                let pairs = if found.is_empty() {
                    Err(lab.topology.pair(p).err().unwrap_or_else(|| "no such pair".to_string()))
                } else {
                    Ok(found)
                };
                PairsAt { placement: p, pairs }
            })
            .collect()
    }
}

/// Ticks for `n` calls of `op` back to back. Inlined, so the loop timed is the one written
/// out at each call.
#[inline(always)]
fn ticks_for(n: u64, mut op: impl FnMut()) -> u64 {
    let started = now();
    for _ in 0..n {
        op();
    }
    now() - started
}

/// Operations that take about `BATCH_SECONDS` in `run(n)` (which returns ticks for `n`
/// operations), from two trials: the first pays for any lazy initialisation (a policy's
/// calibration, page faults), the second is timed.
fn ops_for(clock: &Clock, mut run: impl FnMut(u64) -> u64) -> u64 {
    run(64);
    let ticks_per_op = (run(256) as f64 / 256.0).max(1.0);
    ((clock.ticks_per_second as f64 * BATCH_SECONDS) / ticks_per_op).clamp(16.0, 50_000_000.0) as u64
}

/// One repetition of a single-thread loop: `LOOP_BATCHES` batches of `n` operations; the
/// median batch's nanoseconds per operation, less the timer overhead.
fn median_batch(clock: &Clock, n: u64, mut run: impl FnMut(u64) -> u64) -> f64 {
    let mut ticks: Vec<u64> = (0..LOOP_BATCHES).map(|_| run(n)).collect();
    ticks.sort_unstable();
    clock.ns(ticks[ticks.len() / 2].saturating_sub(clock.overhead_ticks) as f64) / n as f64
}

/// A row for a measure with its repetitions' summary under `ns`.
fn measured(measure: &str, series: &Series) -> Row {
    let row = Row::new().with(MEASURE, measure);
    match Summary::of(&series.samples) {
        Some(s) => row.summary("", "ns", &s).with("stop", series.verdict),
        None => row.skipped("no repetition produced a value"),
    }
}

/// A wait policy as the floor sees it: its name, whether it runs here, and its loop timed.
struct Probe {
    name: &'static str,
    availability: Result<(), Unavailable>,
    /// Runs `n` loop iterations alone.
    time: fn(u64) -> PolicyLoop,
}

/// Iterations of a policy's loop, run alone.
struct PolicyLoop {
    ticks: u64,
    /// How many times the spin phase ended (and was restarted).
    phases_ended: u64,
}

/// How long a policy's spin phase lasts, added up over the measured repetitions.
#[derive(Clone, Copy, Default)]
struct SpinPhases {
    iterations: u64,
    ended: u64,
}

fn time_policy<W: Wait>(iterations: u64) -> PolicyLoop {
    let word = AtomicU32::new(0);
    let mut episode = Episode::new(None);
    let mut phases_ended = 0;
    let started = now();
    for _ in 0..iterations {
        if black_box(&word).load(Relaxed) != 0 {
            break;
        }
        match W::step(&word, 0, &mut episode) {
            Step::Continue => {}
            Step::Exhausted => {
                phases_ended += 1;
                episode.restart_spinning();
            }
            Step::TimedOut => break,
        }
    }
    PolicyLoop { ticks: now() - started, phases_ended }
}

fn probes() -> Vec<Probe> {
    struct Collect(Vec<Probe>);
    impl PolicyVisitor for Collect {
        fn visit<W: Wait>(&mut self) {
            self.0.push(Probe { name: W::NAME, availability: W::availability(), time: time_policy::<W> });
        }
    }
    let mut c = Collect(Vec::new());
    visit_policies(&mut c);
    c.0
}

fn wait_periods(
    probes: &[Probe],
    rule: &StoppingRule,
    progress: &Progress,
    lab: &Lab,
    home: usize,
) -> Result<Vec<Row>, LabError> {
    let clock = lab.clock;
    let mut rows = Vec::new();
    let mut timed: Vec<(&Probe, u64)> = Vec::new();
    for p in probes {
        let row = Row::new().with(MEASURE, "wait-period").with(WAIT, p.name).with("cpus", home.to_string());
        if let Err(e) = p.availability {
            rows.push(row.skipped(e.to_string()));
            continue;
        }
        if (p.time)(64).phases_ended >= 64 {
            rows.push(row.skipped("sleeps at once: no spin loop to time (see futex-wake-to-run)"));
            continue;
        }
        timed.push((p, ops_for(&clock, |n| (p.time)(n).ticks)));
    }
    let mut phases = vec![SpinPhases::default(); timed.len()];
    let series = interleave(timed.len(), rule, Some(progress), |i, rep| {
        let (p, n) = timed[i];
        Ok(median_batch(&clock, n, |n| {
            let run = (p.time)(n);
            if rep != Rep::Warmup {
                phases[i].iterations += n;
                phases[i].ended += run.phases_ended;
            }
            run.ticks
        }))
    })?;
    for (i, (p, _)) in timed.iter().enumerate() {
        let mut row = measured("wait-period", &series[i]).with(WAIT, p.name).with("cpus", home.to_string());
        let SpinPhases { iterations, ended } = phases[i];
        if ended > 0 {
            if let Some(period) = row.number(NS) {
                row.set("spin_phase_ns", period * iterations as f64 / ended as f64);
            }
        }
        // Keep the registry's policy order.
        rows.push(row);
    }
    let order: Vec<&str> = probes.iter().map(|p| p.name).collect();
    rows.sort_by_key(|r| order.iter().position(|n| Some(*n) == r.text(WAIT)));
    Ok(rows)
}

/// Ticks for each batch of `BATCH` round trips of a line bouncing between threads pinned
/// to `a` and `b` (measured on `a`'s counter). Batches, so that one preemption of either
/// thread spoils one batch rather than the whole repetition.
pub(crate) fn ping_pong_batches(a: usize, b: usize, batches: u32) -> Result<Vec<u64>, LabError> {
    let line = CachePadded::new(AtomicU32::new(0));
    let start = Barrier::new(2);
    let round_trips = batches * BATCH;
    let pong = || {
        start.wait();
        for i in 0..round_trips {
            let ping = 2 * i + 1;
            while line.load(Acquire) != ping {}
            line.store(ping + 1, Release);
        }
    };
    let ping = || {
        with_pinned(a, || {
            start.wait();
            let mut ticks = Vec::with_capacity(batches as usize);
            for batch in 0..batches {
                let batch_started = now();
                for i in batch * BATCH..(batch + 1) * BATCH {
                    line.store(2 * i + 1, Release);
                    while line.load(Acquire) != 2 * i + 2 {}
                }
                ticks.push(now() - batch_started);
            }
            ticks
        })
    };
    // The ponger is started before the pinger runs: a refusal leaves no thread at the start
    // barrier waiting for a partner.
    Ok(with_partner(b, pong, ping)?.main)
}

/// One repetition of ping-pong between CPUs `a` and `b`: the one-way time of a line
/// transfer, in nanoseconds (the median batch's round trip, halved).
pub(crate) fn one_way_ns(a: usize, b: usize, clock: &Clock) -> Result<f64, LabError> {
    let mut batches = ping_pong_batches(a, b, BATCHES)?;
    batches.sort_unstable();
    let median = batches[batches.len() / 2];
    Ok(clock.ns(median.saturating_sub(clock.overhead_ticks) as f64) / (2.0 * BATCH as f64))
}

/// A line transfer measured between two CPUs.
#[derive(Clone, Copy)]
pub(crate) struct Transfer {
    /// The CPU pair.
    pub a: usize,
    /// See `a`.
    pub b: usize,
    /// One-way time, in nanoseconds ([`one_way_ns`]).
    pub ns: f64,
}

/// Why a lock's `figure` (in nanoseconds) is below its physical floor's, when it is by more
/// than both 95% intervals and the fraction `slack` of the floor; `what` names the figure
/// ("latency", "cost"). No lock can move its cache line fewer times, or take and release
/// itself with fewer atomics, than its floor does, so such a figure measures something else (a
/// timer read taken early, a clock offset, work the compiler removed) and must not be read as
/// the lock's. `slack` is for figures whose intervals are narrower than what the code's place
/// in the binary moves them by (the same instructions, aligned differently, time a few
/// percent apart).
pub(crate) fn below_floor(figure: &Summary, floor: &Summary, what: &str, slack: f64) -> Option<String> {
    // A summary of one repetition has no interval, and so widens the margin by nothing.
    let margin: f64 = [figure.ci95, floor.ci95].into_iter().flatten().sum();
    (figure.mean + margin < floor.mean * (1.0 - slack)).then(|| {
        format!(
            "{:.1} ns is below the floor's {:.1} ns (beyond both 95% intervals): not a {what} this lock can have",
            figure.mean, floor.mean
        )
    })
}

/// [`one_way_ns`] between the first CPU of `cpus` and the first one after it that differs;
/// `None` when all are one CPU.
pub(crate) fn first_pair_transfer(cpus: &[usize], clock: &Clock) -> Result<Option<Transfer>, LabError> {
    let Some((&a, rest)) = cpus.split_first() else { return Ok(None) };
    let Some(&b) = rest.iter().find(|&&c| c != a) else { return Ok(None) };
    Ok(Some(Transfer { a, b, ns: one_way_ns(a, b, clock)? }))
}

fn ping_pongs(pairs: &[PairsAt], rule: &StoppingRule, progress: &Progress, lab: &Lab) -> Result<Vec<Row>, LabError> {
    let clock = lab.clock;
    let mut rows = Vec::new();
    let flat: Vec<(Placement, usize, usize)> = pairs
        .iter()
        .filter_map(|at| {
            at.pairs.as_ref().ok().map(|v| v.iter().map(|&(a, b)| (at.placement, a, b)).collect::<Vec<_>>())
        })
        .flatten()
        .collect();
    let series = interleave(flat.len(), rule, Some(progress), |i, _| {
        let (_, a, b) = flat[i];
        one_way_ns(a, b, &clock)
    })?;
    for PairsAt { placement: p, pairs } in pairs {
        match pairs {
            Err(why) => rows.push(Row::new().with(MEASURE, "ping-pong").with(PLACEMENT, p.name()).skipped(why.clone())),
            Ok(_) => {
                for (i, &(q, a, b)) in flat.iter().enumerate() {
                    if q == *p {
                        rows.push(
                            measured("ping-pong", &series[i])
                                .with(PLACEMENT, p.name())
                                .with("cpus", format!("{a},{b}")),
                        );
                    }
                }
            }
        }
    }
    Ok(rows)
}

/// Whether thread `tid` of this process is asleep (state `S`) right now.
fn asleep(tid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('S')))
        .unwrap_or(false)
}

/// One repetition's wake-ups.
struct WakeUps {
    /// In ticks, of the wake-ups that found the sleeper asleep.
    latencies: Vec<u64>,
    /// How many did not (their latencies are left out).
    discarded: u32,
}

/// One repetition of futex wake-to-run between the calling thread (the waker, pinned by the
/// caller) and a sleeper on `b`.
fn wake_to_run_ticks(b: usize, wakeups: u32) -> Result<WakeUps, LabError> {
    let word = CachePadded::new(AtomicU32::new(0));
    let ready = Announced::new();
    let ack = CachePadded::new(AtomicU32::new(0));
    let woken_at = CachePadded::new(AtomicU64::new(0));
    let tid = AtomicU64::new(0);
    // Per wake-up, the ticks from the waker's stamp to the sleeper running, if it slept.
    let sleeper = || {
        // SAFETY: gettid has no preconditions.
        tid.store(unsafe { libc::syscall(libc::SYS_gettid) } as u64, Release);
        let mut latencies = Vec::with_capacity(wakeups as usize);
        for i in 0..wakeups {
            ready.announce();
            let mut slept = false;
            while word.load(Acquire) == i {
                slept |= futex::wait(&word, i, None) == FutexWait::Woken;
            }
            let running = now();
            latencies.push(if slept { Some(running.wrapping_sub(woken_at.load(Acquire))) } else { None });
            ack.store(i + 1, Release);
        }
        latencies
    };
    // Per wake-up, whether the futex call woke the sleeper.
    let waker = || {
        let mut woke = Vec::with_capacity(wakeups as usize);
        while tid.load(Acquire) == 0 {
            std::thread::yield_now();
        }
        let tid = tid.load(Acquire) as i64;
        for i in 0..wakeups {
            // Wait until the sleeper is in the kernel (yielding, so a sleeper on this same
            // CPU gets to run and go to sleep). Bounded, so a sleeper that never shows as
            // asleep cannot hang the run; such a wake-up is discarded.
            let deadline = Instant::now() + Duration::from_millis(50);
            while (!ready.reached(i as usize + 1) || !asleep(tid)) && Instant::now() < deadline {
                std::thread::yield_now();
            }
            woken_at.store(now(), Release);
            word.store(i + 1, Release);
            woke.push(futex::wake_one(&word) == 1);
            while ack.load(Acquire) != i + 1 {
                std::thread::yield_now();
            }
        }
        woke
    };
    let sides = with_partner(b, sleeper, waker)?;
    let mut found = WakeUps { latencies: Vec::new(), discarded: 0 };
    for (latency, woke) in sides.partner.into_iter().zip(sides.main) {
        match (latency, woke) {
            (Some(t), true) => found.latencies.push(t),
            _ => found.discarded += 1,
        }
    }
    Ok(found)
}

fn wake_to_run_row(placement: Placement, rule: &StoppingRule, progress: &Progress, lab: &Lab) -> Result<Row, LabError> {
    let base = Row::new().with(MEASURE, "futex-wake-to-run").with(PLACEMENT, placement.name());
    let (a, b) = match lab.topology.pair(placement) {
        Ok(pair) => pair,
        Err(why) => return Ok(base.skipped(why)),
    };
    let clock = lab.clock;
    let mut all = Vec::new();
    let mut discarded = 0;
    let series = repeat(rule, Some(progress), |rep| {
        let WakeUps { latencies: mut valid, discarded: lost } = with_pinned(a, || wake_to_run_ticks(b, WAKEUPS))?;
        if valid.is_empty() {
            return Ok(f64::NAN);
        }
        valid.sort_unstable();
        let median = valid[valid.len() / 2];
        if rep != Rep::Warmup {
            discarded += lost;
            all.extend(valid);
        }
        Ok(clock.ns(median.saturating_sub(clock.overhead_ticks) as f64))
    })?;
    let mut row =
        measured("futex-wake-to-run", &series).with(PLACEMENT, placement.name()).with("cpus", format!("{a},{b}"));
    all.sort_unstable();
    if let Some(&max) = all.last() {
        row.set("max_wakeup_ns", clock.ns(max as f64));
        row.set("p99_wakeup_ns", clock.ns(all[(all.len() * 99 / 100).min(all.len() - 1)] as f64));
    }
    row.set("wakeups", all.len());
    row.set("discarded", discarded);
    Ok(row)
}

/// One repetition of `yield-forfeit`: each side's CPU time over the window, and the yields.
#[derive(Clone, Copy, Debug)]
struct Shares {
    spinner_s: f64,
    yielder_s: f64,
    yields: u64,
}

impl Shares {
    /// CPU time each yield cost the yielder, in ns: the spinner's time less the yielder's, per
    /// yield. The scheduler keeps the two threads' virtual runtimes level, and the yielder's
    /// holds what every yield was charged on top of what it ran, so the gap is that charge.
    /// `None` without a yield.
    fn forfeit_ns(self) -> Option<f64> {
        (self.yields > 0).then(|| (self.spinner_s - self.yielder_s) / self.yields as f64 * 1e9)
    }

    /// The yielder's share of the CPU time the two used (an even split is 0.5).
    fn yielder_share(self) -> f64 {
        self.yielder_s / (self.spinner_s + self.yielder_s)
    }
}

/// What one side of `yield-forfeit` used.
struct Side {
    cpu_s: f64,
    yields: u64,
}

/// Two threads pinned to `cpu`: one spins, the other spins too but calls `sched_yield` after
/// every [`YIELD_EVERY_NS`] it has run. Both spin side by side for [`FORFEIT_SETTLE`] first, so
/// that neither starts the window owed time by the scheduler, then for [`FORFEIT_WINDOW`].
/// Each reads its own CPU-time clock when it first sees the window open and when it sees it
/// closed: a thread's CPU time grows only while it runs, and a running thread sees the flag
/// within one loop, so a thread that was not running at either moment reads what it would
/// have read then.
fn yield_shares(cpu: usize, clock: &Clock) -> Result<Shares, LabError> {
    let phase = CachePadded::new(AtomicU8::new(STARTING));
    let in_loop = CachePadded::new(AtomicUsize::new(0));
    let every = clock.ticks(YIELD_EVERY_NS);
    let off_cpu = clock.ticks(OFF_CPU_NS);
    // Partner 0 spins; partner 1 spins and yields.
    let side = |partner: usize| {
        in_loop.fetch_add(1, Release);
        while phase.load(Acquire) == STARTING {
            std::hint::spin_loop();
        }
        let opened = thread_cpu_s();
        let mut yields = 0u64;
        if partner == 1 {
            let (mut ran, mut last) = (0, now());
            while phase.load(Relaxed) != STOPPED {
                let t = now();
                let step = t.wrapping_sub(last);
                last = t;
                if step < off_cpu {
                    ran += step;
                }
                if ran >= every {
                    std::thread::yield_now();
                    yields += 1;
                    ran = 0;
                    last = now();
                }
            }
        } else {
            while phase.load(Relaxed) != STOPPED {
                std::hint::spin_loop();
            }
        }
        Side { cpu_s: thread_cpu_s() - opened, yields }
    };
    let sides = with_partners(
        &[cpu, cpu],
        side,
        || phase.store(STOPPED, Release),
        || {
            // A partner that panics before it counts itself in (it could not be pinned) is
            // joined, and its panic raised, once the window is called off.
            let deadline = Instant::now() + FORFEIT_START_LIMIT;
            while in_loop.load(Acquire) < 2 {
                if Instant::now() > deadline {
                    phase.store(STOPPED, Release);
                    return;
                }
                std::thread::sleep(Duration::from_micros(50));
            }
            std::thread::sleep(FORFEIT_SETTLE);
            phase.store(MEASURING, Release);
            std::thread::sleep(FORFEIT_WINDOW);
            phase.store(STOPPED, Release);
        },
    )?;
    let [spinner, yielder] = [&sides.partner[0], &sides.partner[1]];
    Ok(Shares { spinner_s: spinner.cpu_s, yielder_s: yielder.cpu_s, yields: yielder.yields })
}

/// `yield-forfeit`: the CPU time each yield cost the yielder ([`Shares::forfeit_ns`]). Near zero
/// where a yield only lets the other thread run first (the time given up stays owed to the
/// yielder); near what was left of the yielder's time slice where the kernel charges it that
/// rest (Linux since "sched/fair: Forfeit vruntime on yield", upstream 79104becf42b, also in
/// the stable series, e.g. 6.12.63).
fn yield_forfeit_row(cpu: usize, rule: &StoppingRule, progress: &Progress, lab: &Lab) -> Result<Row, LabError> {
    let mut shares = Vec::new();
    let mut yields = Vec::new();
    let series = repeat(rule, Some(progress), |rep| {
        let s = yield_shares(cpu, &lab.clock)?;
        let Some(forfeit) = s.forfeit_ns() else { return Ok(f64::NAN) };
        if rep != Rep::Warmup {
            shares.push(s.yielder_share());
            yields.push(s.yields as f64);
        }
        Ok(forfeit)
    })?;
    let mut row =
        measured(YIELD_FORFEIT, &series).with(PLACEMENT, Placement::SameCpu.name()).with("cpus", cpu.to_string());
    if let (Some(share), Some(per_rep)) = (Summary::of(&shares), Summary::of(&yields)) {
        row.set("yielder_cpu_share", share.mean);
        row.set("yields_per_rep", per_rep.mean);
    }
    Ok(row)
}

fn chart(rows: &[FloorRow]) -> Vec<Result<Panel, String>> {
    // Ping-pong has a row per CPU pair: one bar per placement (the median pair).
    let mut bars: Vec<Bar> = Vec::new();
    let mut pairs: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for row in rows {
        // A log axis has no place for a figure at or below zero (a yield that cost nothing).
        let Some(ns) = row.ns.filter(|&ns| ns > 0.0) else { continue };
        let placement = row.placement.as_deref().unwrap_or("?");
        let (label, color) = match row.measure.as_deref().unwrap_or("?") {
            "wait-period" => (format!("wait period: {}", row.wait.as_deref().unwrap_or("?")), 1),
            "ping-pong" => {
                pairs.entry(placement.to_string()).or_default().push(ns);
                continue;
            }
            "futex-wake-to-run" => {
                // At `same-cpu` the waker and the sleeper share one CPU: no line moves.
                let color = if placement == Placement::SameCpu.name() { 3 } else { 2 };
                (format!("futex wake-to-run: {placement}"), color)
            }
            YIELD_FORFEIT => ("yield forfeit: CPU time a yield cost the yielder".to_string(), 3),
            other => (other.to_string(), 0),
        };
        bars.push(Bar { label, value: ns, color });
    }
    for (placement, mut values) in pairs {
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let label = if n > 1 {
            format!("ping-pong: {placement} (median of {n} pairs)")
        } else {
            format!("ping-pong: {placement}")
        };
        bars.push(Bar { label, value: values[n / 2], color: 2 });
    }
    bars.sort_by_key(|b| b.color);
    let axis = Axis::numeric("nanoseconds per operation (log scale)", Scale::Log, bars.iter().map(|b| b.value), false);
    let legend = [
        ("one thread alone".to_string(), 0),
        ("one wait-loop iteration".to_string(), 1),
        ("between two CPUs".to_string(), 2),
        ("two threads on one CPU".to_string(), 3),
    ];
    vec![plot::hbars("Physical floors", &axis, &bars, &legend).map(|svg| Panel {
        svg,
        caption: "What the machine costs before any lock is involved: a timer read, an uncontended CAS pair, one \
                  iteration of each wait policy's loop, and the one-way hand-over of a cache line or a futex \
                  wake-up between two CPUs, which bound every lock figure below; and what a yield costs a thread \
                  whose CPU another wants, which a waiter that yields pays when threads outnumber CPUs."
            .to_string(),
    })]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_yield_costs_the_yielder_the_gap_to_the_spinner_per_yield() {
        // 0.174 s against 0.026 s over 125 yields: 1.184 ms charged a yield, 13% of the CPU.
        let charged = Shares { spinner_s: 0.174, yielder_s: 0.026, yields: 125 };
        assert!((charged.forfeit_ns().unwrap() - 1_184_000.0).abs() < 1.0, "{charged:?}");
        assert!((charged.yielder_share() - 0.13).abs() < 1e-9);
        // A yielder that got more than half: the figure is below zero, not folded to a cost.
        let ahead = Shares { spinner_s: 0.099, yielder_s: 0.101, yields: 500 };
        assert!((ahead.forfeit_ns().unwrap() + 4_000.0).abs() < 1e-6, "{ahead:?}");
        assert!(ahead.yielder_share() > 0.5);
        assert_eq!(Shares { spinner_s: 0.1, yielder_s: 0.1, yields: 0 }.forfeit_ns(), None);
    }
}
