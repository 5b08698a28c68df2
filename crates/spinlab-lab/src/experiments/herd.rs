//! `spinlab run herd`: seed 004's workload. N threads are released together by a barrier;
//! each takes one shared lock for a short critical section, `--per-round` times; then they
//! meet at the barrier again, `--rounds` times. Reported per lock and thread count: wall
//! time, and the user and system CPU time all the threads spent (seed 004's wall, user, sys
//! columns). Oversubscription is the point: seed 004 ran 8 to 64 threads, and found that
//! backoff bought 2.5% while a lock whose waiters sleep cut wall and system time.

use super::driver::one_run;
use super::lab::Lab;
use super::options::Common;
use super::options::Threads;
use super::ratios::add_ratios_to_each_reference;
use super::settings::{smoke_locks, Length, Step};
use super::Experiment;
use crate::error::LabError;
use crate::experiments::contention::WORK_NS;
use crate::lockbox::LockBox;
use crate::measure::pin::pin_or_die;
use crate::measure::stats::paired_ratio_ci95;
use crate::measure::team::{spawn_team, StartLine};
use crate::measure::work::{spin, SharedLines};
use crate::measure::{self, interleave_stoppable, Progress, Rep, StoppingRule, Summary, Taken};
use crate::reading::advice::{lowest_tie, total_order, Advice, Contribution, Figure, Topic, Unit};
use crate::reading::plot::{self, Axis, Band, Scale};
use crate::reading::scorecard::{words, Claim, Estimate, Finding, Observed, Verdict as Judged};
use crate::reading::{measured, rows_of, series_per, Context, Panel};
use crate::results::format::number;
use crate::results::keys::{LOCK, ORIGIN, THREADS};
use crate::results::table::{col, Column};
use crate::results::{Row, Run};
use crate::select::{self, Bounds, LockChoice, ThreadCount};
use clap::Args;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Wall time of one herd repetition (`Row::summary("wall", "s", …)`).
pub const WALL_S: &str = "wall_s";
/// System CPU time of one herd repetition.
pub const SYS_S: &str = "sys_s";
/// The floor row's `lock`: the same herd with no lock at all (see `herd_rep`).
pub const FLOOR_LOCK: &str = "floor: no lock";
/// [`WALL_S`] over the floor's, measured in the same interleaved rounds.
pub const WALL_OVER_FLOOR: &str = "wall_over_floor";

/// The locks measured when `--locks` is not given (seed 004's spin lock, its backoff
/// variant, a sleeping lock, spinlab's default, and std).
pub const DEFAULT_LOCKS: &[&str] = &["ttas:spin", "ttas:backoff", "ttas:futex", "default", "std"];

/// `--rounds`: up to 100 times the default's meetings per repetition.
pub const ROUNDS: Bounds = Bounds::new(1, 10_000);
/// `--per-round`: up to 200 times the default's acquisitions per thread and round.
pub const PER_ROUND: Bounds = Bounds::new(1, 10_000);

/// Options of `spinlab run herd` (no `Default`: `cli_defaults` gives clap's).
#[derive(Args, Clone, Debug)]
#[group(skip)]
pub struct Herd {
    /// Times the threads meet at the barrier per repetition, within [`ROUNDS`]
    #[arg(long, value_name = "N", default_value = "100", value_parser = |s: &str| ROUNDS.parse::<usize>(s),
          allow_hyphen_values = true, help = ROUNDS.help("Times the threads meet at the barrier per repetition"))]
    pub rounds: usize,
    /// Acquisitions per thread between two barriers, within [`PER_ROUND`]
    #[arg(long, value_name = "N", default_value = "50", value_parser = |s: &str| PER_ROUND.parse::<usize>(s),
          allow_hyphen_values = true, help = PER_ROUND.help("Acquisitions per thread between two barriers"))]
    pub per_round: usize,
    /// Busy work inside the critical section, in nanoseconds, within contention's [`WORK_NS`]
    #[arg(long, value_name = "NS", default_value = "100", value_parser = |s: &str| WORK_NS.parse::<u64>(s),
          allow_hyphen_values = true, help = WORK_NS.help("Busy work inside the critical section, in nanoseconds"))]
    pub cs_ns: u64,
}

const COLUMNS: &[Column] = &[
    col(LOCK, "lock"),
    col(THREADS, "threads"),
    col(WALL_S, "wall s"),
    col("wall_ci95_s", "±95%"),
    col("user_s", "user s"),
    col(SYS_S, "sys s"),
    col("wall_vs_best_reference", "wall vs best ref"),
    col("wall_vs_best_reference_ci95", "±95%"),
    col(WALL_OVER_FLOOR, "x floor"),
    col("collapsed_done_pct", "collapsed: done %"),
    col("reps", "reps"),
];

/// A repetition under a lock is called off once it has run [`COLLAPSE_FACTOR`] times as long as
/// its critical sections would take one after another with [`HANDOVER_ALLOWANCE_NS`] between
/// two of them, and at least [`COLLAPSE_AFTER_MIN`]. A healthy lock stays far inside that: an
/// acquisition takes it less than the allowance, even at many threads per CPU. A spin-only
/// FIFO lock with more threads than CPUs hands each acquisition to a thread that is not
/// running and takes a scheduler's time slice per hand-over: it would run for minutes and say
/// nothing more. The lock is then reported `collapsed`, with the share it finished.
pub const COLLAPSE_FACTOR: f64 = 20.0;
/// The hand-over allowed per acquisition in [`COLLAPSE_FACTOR`]'s estimate.
pub const HANDOVER_ALLOWANCE_NS: f64 = 1_000.0;
/// The least a repetition runs before it may be called off (a herd of a few thousand
/// acquisitions would otherwise be judged on a scheduler's hiccup).
pub const COLLAPSE_AFTER_MIN: Duration = Duration::from_secs(1);

/// How long a repetition of `herd` over `threads` threads may run under a lock before it is
/// called off.
pub fn collapse_after(herd: &Herd, threads: usize) -> Duration {
    let acquisitions = (threads * herd.rounds * herd.per_round) as f64;
    let serial_ns = acquisitions * (herd.cs_ns as f64 + HANDOVER_ALLOWANCE_NS);
    Duration::from_secs_f64(COLLAPSE_FACTOR * serial_ns * 1e-9).max(COLLAPSE_AFTER_MIN)
}

/// One repetition: wall seconds, and the threads' user and system CPU seconds.
struct Times {
    wall_s: f64,
    user_s: f64,
    sys_s: f64,
    lost_updates: u64,
    /// Acquisitions made, and whether the repetition was called off before all were.
    done: u64,
    called_off: bool,
}

/// CPU time of one thread, in seconds.
#[derive(Clone, Copy)]
struct CpuTimes {
    user_s: f64,
    sys_s: f64,
}

impl CpuTimes {
    /// The calling thread's, so far.
    fn of_this_thread() -> CpuTimes {
        // SAFETY: rusage is plain data; getrusage fills it.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: RUSAGE_THREAD on the calling thread, `u` is valid.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        CpuTimes { user_s: secs(u.ru_utime), sys_s: secs(u.ru_stime) }
    }

    /// What was used between `earlier` and these.
    fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes { user_s: self.user_s - earlier.user_s, sys_s: self.sys_s - earlier.sys_s }
    }
}

/// What one herd thread reports: when it finished, the CPU time it used, and how many
/// sections it ran.
struct Finished {
    at: Instant,
    cpu: CpuTimes,
    done: u64,
}

/// One repetition under `lock`, or, with `None`, the floor: the same threads, barrier and
/// busy work, where each section writes a line of the thread's own instead of taking the lock
/// and writing the shared one. No lock can make the herd finish sooner than that: it only adds
/// the sections' serialisation and the hand-overs between them.
///
/// With `limit`, the repetition is called off once it has run that long: every thread stops
/// taking the lock (a thread already waiting for it still gets it once) and goes through the
/// remaining barriers, so the team ends. The threads check a shared flag before each section,
/// the floor's too, so every treatment pays the same load.
fn herd_rep(
    lock: Option<&LockBox>,
    cpus: &[usize],
    herd: &Herd,
    cs_iterations: u64,
    lines: &SharedLines,
    limit: Option<Duration>,
) -> Result<Times, LabError> {
    let n = cpus.len();
    let line = StartLine::new(n);
    let round = Barrier::new(n);
    let own_lines = SharedLines::new(n);
    let call_off = AtomicBool::new(false);
    let finished = AtomicUsize::new(0);
    let main = std::thread::current();
    lines.reset();
    let worker = |i: usize| {
        pin_or_die(cpus[i]);
        let cpu_at_start = CpuTimes::of_this_thread();
        let mut seed = i as u64 + 1;
        let mut done = 0u64;
        if !line.arrive() {
            return None;
        }
        for _ in 0..herd.rounds {
            round.wait();
            for _ in 0..herd.per_round {
                if call_off.load(Relaxed) {
                    break;
                }
                match lock {
                    Some(lock) => {
                        lock.lock();
                        lines.touch();
                        seed = spin(cs_iterations, seed);
                        // SAFETY: acquired just above.
                        unsafe { lock.unlock() };
                    }
                    None => {
                        own_lines.touch_one(i);
                        seed = spin(cs_iterations, seed);
                    }
                }
                done += 1;
            }
        }
        black_box(seed);
        let at = Instant::now();
        if finished.fetch_add(1, AcqRel) + 1 == n {
            main.unpark();
        }
        Some(Finished { at, cpu: CpuTimes::of_this_thread().since(cpu_at_start), done })
    };
    let (started, results, called_off) = std::thread::scope(|scope| {
        // The round barrier is only reached past the start line, which a refused thread calls
        // off: no thread waits at it for one that never started.
        let handles = spawn_team(scope, &line, n, &worker)?;
        line.open();
        let started = Instant::now();
        let called_off = limit.is_some_and(|l| call_off_at(started + l, &finished, n, &call_off));
        let results: Vec<Finished> = handles
            .into_iter()
            .map(|h| h.join().expect("a herd thread panicked").expect("the start line was opened"))
            .collect();
        Ok::<_, LabError>((started, results, called_off))
    })?;
    Ok(Times::of(&results, started, lock.is_some().then_some(lines), called_off))
}

/// Waits until every one of the `n` threads has finished or `deadline` has passed, and at
/// the deadline tells them to stop taking the lock; returns whether it did.
fn call_off_at(deadline: Instant, finished: &AtomicUsize, n: usize, call_off: &AtomicBool) -> bool {
    // Parked, not polling: the last thread to finish unparks this one.
    while finished.load(Acquire) < n {
        let now = Instant::now();
        if now >= deadline {
            call_off.store(true, Relaxed);
            return true;
        }
        std::thread::park_timeout(deadline - now);
    }
    false
}

impl Times {
    /// The repetition's times from its threads' results; `locked`: the shared lines the lock
    /// guarded, whose touches count the lost updates.
    fn of(results: &[Finished], started: Instant, locked: Option<&SharedLines>, called_off: bool) -> Times {
        let end = results.iter().map(|r| r.at).max().unwrap_or(started);
        let done: u64 = results.iter().map(|r| r.done).sum();
        let lost_updates = match locked {
            Some(lines) => lines.total().map_or(0, |seen| done.saturating_sub(seen)),
            None => 0,
        };
        Times {
            wall_s: end.saturating_duration_since(started).as_secs_f64(),
            user_s: results.iter().map(|r| r.cpu.user_s).sum(),
            sys_s: results.iter().map(|r| r.cpu.sys_s).sum(),
            lost_updates,
            done,
            called_off,
        }
    }
}

/// A lock whose repetition was called off: how far it got.
#[derive(Clone, Copy)]
struct Collapse {
    limit_s: f64,
    done: u64,
    planned: u64,
    ran_s: f64,
}

/// One thread count's configuration: the threads' CPUs and the critical section's work.
struct HerdAt<'a> {
    n: usize,
    cpus: Vec<usize>,
    cs_iterations: u64,
    rule: &'a StoppingRule,
    lines: &'a SharedLines,
    /// The shorter herd the warm-up runs.
    warmup: &'a Herd,
}

/// What one thread count measured: for the floor (treatment 0) and each lock, its walls per
/// round, CPU times, lost updates and collapse.
struct HerdMeasured {
    series: Vec<measure::Series>,
    cpu_times: Vec<(Vec<f64>, Vec<f64>)>,
    lost: Vec<u64>,
    collapsed: Vec<Option<Collapse>>,
}

impl Herd {
    /// The floor and every lock at one thread count, interleaved.
    fn measure_at(
        &self,
        at: &HerdAt<'_>,
        available: &[&LockChoice],
        instances: &[LockBox],
        progress: &Progress,
    ) -> Result<HerdMeasured, LabError> {
        let (n, cpus) = (at.n, &at.cpus);
        // Treatment 0 is the floor (no lock); 1.. are the locks.
        let taken = |i: usize| (i > 0).then(|| &instances[i - 1]);
        let treatments = instances.len() + 1;
        let mut cpu_times: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); treatments];
        let mut lost = vec![0u64; treatments];
        let mut collapsed: Vec<Option<Collapse>> = vec![None; treatments];
        let series = interleave_stoppable(treatments, at.rule, Some(progress), |i, rep| {
            progress.detail(&format!(
                "{}, {}",
                if i == 0 { FLOOR_LOCK } else { available[i - 1].name() },
                match rep {
                    Rep::Warmup => "warm-up".to_string(),
                    Rep::Measured(k) => format!("repetition {}", k + 1),
                }
            ));
            let herd = if rep == Rep::Warmup { at.warmup } else { self };
            let limit = (i > 0).then(|| collapse_after(herd, n));
            let t = herd_rep(taken(i), cpus, herd, at.cs_iterations, at.lines, limit)?;
            lost[i] += t.lost_updates;
            if t.called_off {
                collapsed[i] = Some(Collapse {
                    limit_s: limit.map_or(0.0, |l| l.as_secs_f64()),
                    done: t.done,
                    planned: (n * herd.rounds * herd.per_round) as u64,
                    ran_s: t.wall_s,
                });
                // Its wall is where it was stopped, not the herd's: no sample.
                return Ok(Taken::Last(f64::NAN));
            }
            if rep == Rep::Warmup {
                return Ok(Taken::Value(f64::NAN));
            }
            cpu_times[i].0.push(t.user_s);
            cpu_times[i].1.push(t.sys_s);
            Ok(Taken::Value(t.wall_s))
        })?;
        Ok(HerdMeasured { series, cpu_times, lost, collapsed })
    }

    /// One thread count's rows: the floor's, then one per lock (skipped where it cannot run
    /// here), with the ratios to the floor and to the reference locks.
    fn rows_at(&self, n: usize, locks: &[LockChoice], m: &HerdMeasured) -> Vec<Row> {
        let HerdMeasured { series, cpu_times, lost, collapsed } = m;
        let times = |mut row: Row, i: usize| {
            if let Some(s) = Summary::of(&series[i].samples) {
                row = row.summary("wall", "s", &s);
            }
            row.set("stop", series[i].verdict);
            row.set("user_s", Summary::of(&cpu_times[i].0).map(|s| s.mean));
            row.set(SYS_S, Summary::of(&cpu_times[i].1).map(|s| s.mean));
            row
        };
        let floor = Summary::of(&series[0].samples).map(|s| s.mean).filter(|&w| w > 0.0);
        let mut config_rows = vec![times(Row::new().with(LOCK, FLOOR_LOCK).with(THREADS, n), 0)];
        // Each row's wall per round, in the rows' order (none for a skipped lock).
        let mut rounds: Vec<&[f64]> = vec![&series[0].samples];
        let mut next = 1;
        for lock in locks {
            let mut row = Row::new().with(LOCK, lock.name()).with(ORIGIN, lock.origin());
            if lock.via_alias {
                row.set("alias", select::DEFAULT_ALIAS);
            }
            row.set(THREADS, n);
            if let Some(why) = lock.unavailable() {
                config_rows.push(row.skipped(why));
                rounds.push(&[]);
                continue;
            }
            let i = next;
            next += 1;
            row = times(row, i);
            if let (Some(w), Some(f)) = (row.number(WALL_S), floor) {
                row.set(WALL_OVER_FLOOR, w / f);
            }
            row.set("acquisitions_per_rep", n * self.rounds * self.per_round);
            row.set("lost_updates", lost[i]);
            if let Some(c) = collapsed[i] {
                add_collapse(&mut row, lock, n, &c);
            }
            if lost[i] > 0 {
                eprintln!("warning: {} lost {} updates at {n} threads: mutual exclusion failed", lock.name(), lost[i]);
            }
            config_rows.push(row);
            rounds.push(&series[i].samples);
        }
        add_ratios_to_each_reference(&mut config_rows, &rounds, WALL_S, "wall");
        let best_ref = config_rows
            .iter()
            .filter(|r| r.text(ORIGIN) == Some("reference"))
            .filter_map(|r| r.number(WALL_S))
            .fold(f64::NAN, f64::min);
        if best_ref.is_finite() && best_ref > 0.0 {
            let best = config_rows
                .iter()
                .position(|r| r.text(ORIGIN) == Some("reference") && r.number(WALL_S) == Some(best_ref));
            let best_rounds = best.map_or(&[][..], |i| rounds[i]);
            for (row, own) in config_rows.iter_mut().zip(&rounds) {
                if let Some(w) = row.number(WALL_S) {
                    row.set("wall_vs_best_reference", w / best_ref);
                    row.set("wall_vs_best_reference_ci95", paired_ratio_ci95(own, best_rounds));
                }
            }
        }
        config_rows
    }
}

/// Marks `row` collapsed, with what its called-off repetition did (also said on stderr).
fn add_collapse(row: &mut Row, lock: &LockChoice, threads: usize, c: &Collapse) {
    row.set("collapsed", true);
    row.set("collapse_after_s", c.limit_s);
    row.set("collapsed_done_pct", 100.0 * c.done as f64 / c.planned.max(1) as f64);
    row.set("collapsed_ops_s", c.done as f64 / c.ran_s.max(f64::MIN_POSITIVE));
    eprintln!(
        "note: {} collapsed at {threads} threads: a repetition made {} of its {} acquisitions in {:.1} s \
         (called off after {:.1} s); not repeated further",
        lock.name(),
        c.done,
        c.planned,
        c.ran_s,
        c.limit_s
    );
}

impl Experiment for Herd {
    fn name(&self) -> &'static str {
        "herd"
    }

    fn about(&self) -> &'static str {
        "A herd of threads released by a barrier takes one lock (seed 004)"
    }

    fn uses(&self) -> &'static [&'static str] {
        &["locks", "threads"]
    }

    fn columns(&self) -> &'static [Column] {
        COLUMNS
    }

    fn run(&self, lab: &Lab, common: &Common) -> Result<Vec<Run>, LabError> {
        let started = Instant::now();
        let rule = common.rule(3, 10)?;
        let locks = common.locks_or(DEFAULT_LOCKS);
        let threads = common.threads_or(
            &[
                ThreadCount::PerCpu(2),
                ThreadCount::PerCpu(4),
                ThreadCount::PerCpu(8),
                ThreadCount::PerCpu(16),
                ThreadCount::PerCpu(32),
            ],
            lab.cpus(),
        )?;
        let cs_iterations = lab.work.iterations(self.cs_ns as f64);
        let lines = SharedLines::new(1);
        let cpu_ids = lab.topology.cpu_ids();

        let mut run = Run::new(self.name());
        run.param("locks", locks.iter().map(|l| l.name()).collect::<Vec<_>>())
            .param("threads", &threads)
            .param("rounds", self.rounds)
            .param("per_round", self.per_round)
            .param("cs_ns", self.cs_ns)
            .param("cs_iterations", cs_iterations)
            .param("barrier", "std::sync::Barrier")
            .param(
                "floor",
                "the same herd with no lock: each section writes the thread's own line, interleaved with the locks",
            )
            .stopping_rule(&rule)
            .param("default_lock", select::DEFAULT_LOCK);

        let available: Vec<&LockChoice> = locks.iter().filter(|l| l.unavailable().is_none()).collect();
        let instances: Vec<LockBox> = available
            .iter()
            .map(|l| LockBox::new(l.entry).map_err(|e| LabError::failed(e.to_string())))
            .collect::<Result<_, _>>()?;
        one_run(lab, started, run, threads.len() as u64, |progress| {
            // Seed 004's machine ran one thread per CPU at 8 threads; here threads are pinned
            // round-robin over the usable CPUs.
            let warmup = Herd { rounds: (self.rounds / 4).max(1), ..self.clone() };
            let mut rows = Vec::new();
            for &n in &threads {
                progress.step(&format!("{n} threads"));
                let cpus = (0..n).map(|i| cpu_ids[i % cpu_ids.len()]).collect();
                let at = HerdAt { n, cpus, cs_iterations, rule: &rule, lines: &lines, warmup: &warmup };
                let measured = self.measure_at(&at, &available, &instances, progress)?;
                progress.inc();
                rows.extend(self.rows_at(n, &locks, &measured));
            }
            Ok(rows)
        })
    }

    fn report_steps(&self, length: Length, _cpus: usize) -> Vec<Step> {
        let herd = match length {
            Length::Full => self.clone(),
            Length::Short => Herd { rounds: 50, ..self.clone() },
            Length::Smoke => Herd { rounds: 2, per_round: 5, ..self.clone() },
        };
        let mut c = length.common(&herd, 2, 4, 0);
        if length == Length::Smoke {
            c.threads = Some(Threads(vec![ThreadCount::PerCpu(2)]));
            c.locks = smoke_locks();
        }
        vec![Step::new(herd, c, "herd: threads released at once")]
    }

    fn figures(&self, ctx: &Context<'_>, runs: &[&Run]) -> Vec<Result<Panel, String>> {
        charts(ctx, &rows_of(runs))
    }

    fn advice(&self, ctx: &Context<'_>) -> Option<Contribution> {
        Some(Contribution { topic: Topic::Herds, lines: vec![quickest(ctx)], reads: &["herd"] })
    }

    fn scorecard(&self, ctx: &Context<'_>) -> Vec<Finding> {
        vec![
            spin_over(
                ctx,
                &BACKOFF_GAIN,
                "ttas:backoff",
                (0.0, 10.0),
                "Steiner's point in the same post: backoff delays the next thread that could take the lock, \
                 and here most of the herd waits preempted, not spinning",
            ),
            spin_over(
                ctx,
                &SLEEPING_WINS,
                "ttas:futex",
                (5.0, f64::INFINITY),
                "a futex wake-up on this machine costs more than the spinning it saves, at these thread counts",
            ),
        ]
    }
}

const BACKOFF_GAIN: Claim = Claim {
    id: "004-backoff-gain",
    seed: "004",
    source: "the post's two tables",
    claim: "exponential backoff in the spin loop gains a little wall time on a highly contended lock",
    paper: "about 2.5% of wall time (71.78 to 69.84 s at 64 CPUs, 2.7%; 6.3% at 8), ia64, one inode lock",
};

const SLEEPING_WINS: Claim = Claim {
    id: "004-sleeping-wins",
    seed: "004",
    source: "the post's closing paragraph",
    claim: "with many threads on one lock, sleeping waiters beat spinning ones",
    paper: "the rw-semaphore cut wall and system time (no figure given)",
};

/// How much longer the spinning herd (`ttas:spin`) takes than the herd under `lock`, at the
/// largest thread count (the most contended), in percent.
fn spin_over(ctx: &Context<'_>, claim: &Claim, lock: &str, range: (f64, f64), reason: &str) -> Finding {
    let rows = measured(ctx.rows_of("herd"));
    let largest = rows.iter().filter_map(|r| r.number(THREADS)).fold(f64::NAN, f64::max);
    let at =
        |name: &str| rows.iter().find(|r| r.text(LOCK) == Some(name) && r.number(THREADS) == Some(largest)).copied();
    let rows_words = format!("herd, ttas:spin and {lock} at the largest thread count ({largest}): wall_s");
    let walls = (at("ttas:spin").and_then(|r| Estimate::of(r, WALL_S)), at(lock).and_then(|r| Estimate::of(r, WALL_S)));
    let (Some(spin), Some(other)) = walls else {
        return Finding::without(claim, &rows_words, Judged::NotMeasured(ctx.missing_reason("herd")));
    };
    let Some(ratio) = spin.ratio(&other) else {
        return Finding::without(claim, &rows_words, Judged::NotMeasured(format!("{lock}'s wall time is zero")));
    };
    let here = Estimate { value: 100.0 * (ratio.value - 1.0), ci95: 100.0 * ratio.ci95 };
    let mut detail = format!("ttas:spin {}, {lock} {}", words(&spin, " s"), words(&other, " s"));
    if let Some(floor) = at(FLOOR_LOCK).and_then(|r| Estimate::of(r, WALL_S)) {
        detail.push_str(&format!("; with no lock at all {}", words(&floor, " s")));
    }
    Finding::judged(claim, ctx, "herd", Observed { here, unit: "%", detail, rows: rows_words }, range, reason)
}

fn charts(ctx: &Context<'_>, rows: &[&Row]) -> Vec<Result<Panel, String>> {
    let rows = measured(rows.iter().copied());
    let by_lock = |key: &str| series_per(&rows, LOCK, THREADS, key);
    let threads: Vec<f64> = rows.iter().filter_map(|r| r.number(THREADS)).collect();
    let x = Axis::log_at("threads (log scale)", &threads);
    let band = Band { from: ctx.cpus as f64, label: format!("oversubscribed: threads > {} CPUs", ctx.cpus) };
    let mut out = Vec::new();
    for (key, what, caption) in [
        (
            "wall_s",
            "wall time per repetition (s, log scale)",
            "Wall time for the herd (all threads released by a barrier, each taking one lock in turn) per lock and \
             thread count: lower is better; seed 004 found sleeping waiters win once threads outnumber CPUs. \
             'floor: no lock' is the same herd without the lock, measured in the same rounds: no lock can be \
             faster, and the gap above it is all a lock can change.",
        ),
        (
            "sys_s",
            "system CPU time per repetition (s, log scale)",
            "System CPU time the herd's threads spent in the kernel (futex calls, sched_yield, preemption): the \
             cost of sleeping and of being descheduled, per lock and thread count.",
        ),
    ] {
        let series = by_lock(key);
        if series.is_empty() {
            continue;
        }
        let y = Axis::numeric(what, Scale::Log, series.iter().flat_map(|s| s.points.iter().map(|p| p.1)), false);
        let title = if key == "wall_s" { "Herd: wall time" } else { "Herd: system time" };
        out.push(
            plot::lines(title, &x, &y, &series, Some(&band)).map(|svg| Panel { svg, caption: caption.to_string() }),
        );
    }
    out
}

fn quickest(ctx: &Context<'_>) -> Advice {
    let situation = "many threads released at once (a herd), oversubscribed";
    let brief = "herd, > CPUs";
    let rows: Vec<&Row> =
        ctx.rows_of("herd").into_iter().filter(|r| is_lock(r) && r.number(WALL_S).is_some()).collect();
    let Some(n) = rows.iter().filter_map(|r| r.number(THREADS)).reduce(f64::max) else {
        return Advice::missing(situation, brief, ctx.missing_reason("herd"));
    };
    let mut at: Vec<&Row> = rows.into_iter().filter(|r| r.number(THREADS) == Some(n)).collect();
    let order = total_order(&TIE_ORDER, at.iter().filter_map(|r| r.text(LOCK)));
    at.sort_by(|a, b| a.number(WALL_S).unwrap_or(f64::MAX).total_cmp(&b.number(WALL_S).unwrap_or(f64::MAX)));
    let tie = lowest_tie(
        &at,
        |r| {
            let wall = Estimate::of(r, WALL_S);
            (r.text(LOCK).unwrap_or("?"), wall.map_or(f64::MAX, |w| w.value), wall.map_or(0.0, |w| w.ci95))
        },
        &order,
    )
    .expect("rows at the largest thread count");
    let best = *tie.chosen;
    let worst = at[at.len() - 1];
    let wall = best.number(WALL_S).unwrap_or(0.0);
    let mut why = format!("{} s wall at {n} threads", number(wall));
    if let Some(over) = best.number(WALL_OVER_FLOOR) {
        why.push_str(&format!(", {over:.2}x the herd's with no lock"));
    }
    if let Some(sys) = best.number(SYS_S) {
        why.push_str(&format!(" ({} s system time)", number(sys)));
    }
    if !std::ptr::eq(best, worst) {
        why.push_str(&format!(
            "; {} took {} s ({:.1}x)",
            worst.text(LOCK).unwrap_or("?"),
            number(worst.number(WALL_S).unwrap_or(0.0)),
            worst.number(WALL_S).unwrap_or(0.0) / wall.max(1e-12)
        ));
    }
    why.push_str(&tie.words(|r| r.text(LOCK).unwrap_or("?"), &order));
    let wall_of = |r: &&Row| {
        let wall = Estimate::of(r, WALL_S).unwrap_or(Estimate { value: 0.0, ci95: 0.0 });
        Figure::new(wall, Unit::Seconds, format!("wall at {n} threads"))
    };
    let runner_up = tie.runner_up_by(|r| r.text(LOCK).unwrap_or("?"), wall_of);
    Advice::new(situation, brief, best.text(LOCK).unwrap_or("?").to_string(), why).chosen_by(wall_of(&best), runner_up)
}

/// A measured lock's row: not skipped, and not the floor.
fn is_lock(row: &Row) -> bool {
    !row.is_skipped() && row.text(LOCK) != Some(FLOOR_LOCK)
}

/// The locks a tie is resolved towards, in order: spinlab's default, then the references people
/// already use; then the others in the order the run measured them (its `--locks`).
const TIE_ORDER: [&str; 4] = [select::DEFAULT_LOCK, "std", "parking_lot", "pthread"];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Results;

    fn herd_run(rows: &[(&str, f64, Option<f64>)]) -> Results {
        let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        let mut run = Run::new("herd");
        for &(lock, wall, over) in rows {
            let mut row = Row::new().with(LOCK, lock).with(THREADS, 16).with(WALL_S, wall).with("wall_ci95_s", 0.0);
            row.set(WALL_OVER_FLOOR, over);
            run.rows.push(row);
        }
        results.runs.push(run);
        results
    }

    #[test]
    fn a_repetition_whose_lock_never_comes_free_is_called_off_and_ends() {
        let entry = spinlab::registry::lock_info("ttas:spin-park").unwrap();
        let lock = LockBox::new(entry).unwrap();
        let lines = SharedLines::new(1);
        let herd = Herd { rounds: 10, per_round: 5, cs_ns: 0 };
        let cpus = vec![crate::measure::pin::allowed_cpus()[0]; 4];
        lock.lock();
        let t = std::thread::scope(|s| {
            let rep = s.spawn(|| herd_rep(Some(&lock), &cpus, &herd, 0, &lines, Some(Duration::from_millis(1))));
            // Held 200 times the limit: no thread can make a section before it is called off.
            std::thread::sleep(Duration::from_millis(200));
            // SAFETY: locked above, by this thread.
            unsafe { lock.unlock() };
            rep.join().unwrap().unwrap()
        });
        assert!(t.called_off);
        // Each thread makes at most the one section it was already waiting for.
        assert!(t.done <= 4, "{} sections after the call-off", t.done);
        assert_eq!(lines.total(), Some(t.done), "every section made wrote the shared line once");
        assert_eq!(t.lost_updates, 0);

        // The floor with no limit, and a lock left free, finish every section.
        let t = herd_rep(None, &cpus, &herd, 0, &lines, None).unwrap();
        assert!(!t.called_off && t.done == 4 * 10 * 5);
        let t = herd_rep(Some(&lock), &cpus, &herd, 0, &lines, Some(Duration::from_secs(600))).unwrap();
        assert!(!t.called_off && t.done == 4 * 10 * 5 && t.lost_updates == 0);
    }

    #[test]
    fn the_limit_grows_with_the_herd_and_is_never_under_a_second() {
        let herd = Herd { rounds: 100, per_round: 50, cs_ns: 100 };
        assert_eq!(collapse_after(&herd, 4), COLLAPSE_AFTER_MIN);
        // 512 threads: 2.56 M acquisitions x 1.1 µs x 20.
        let big = collapse_after(&herd, 512).as_secs_f64();
        assert!((big - 56.32).abs() < 1e-6, "{big}");
    }

    #[test]
    fn the_herd_line_names_the_fastest_lock_never_the_floor_and_its_distance_from_it() {
        let results =
            herd_run(&[(FLOOR_LOCK, 0.020, None), ("ttas:spin", 0.030, Some(1.5)), ("std", 0.022, Some(1.1))]);
        let advice = quickest(&Context::new(&results));
        assert_eq!(advice.choice, "std", "{}", advice.why);
        assert!(advice.why.contains("1.10x the herd's with no lock"), "{}", advice.why);
        assert!(advice.why.contains("ttas:spin took 0.03 s (1.4x)"), "{}", advice.why);
        assert_eq!(advice.figure.as_ref().map(|f| f.words()).as_deref(), Some("22 ms wall at 16 threads"));
        let next = advice.runner_up.as_ref().expect("ttas:spin came next");
        assert_eq!((next.name.as_str(), next.margin.words().as_str()), ("ttas:spin", "1.36x"));
    }

    #[test]
    fn the_sleeping_claim_shows_the_floor_beside_the_two_locks() {
        let results =
            herd_run(&[(FLOOR_LOCK, 0.020, None), ("ttas:spin", 0.030, Some(1.5)), ("ttas:futex", 0.024, None)]);
        let finding = spin_over(&Context::new(&results), &SLEEPING_WINS, "ttas:futex", (5.0, f64::INFINITY), "-");
        let text = format!("{finding:?}");
        assert!(text.contains("with no lock at all 0.02"), "{text}");
    }
}
