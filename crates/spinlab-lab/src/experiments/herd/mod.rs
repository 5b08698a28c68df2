//! `spinlab run herd`: seed 004's workload. N threads are released together by a barrier;
//! each takes one shared lock for a short critical section, `--per-round` times; then they
//! meet at the barrier again, `--rounds` times. Reported per lock and thread count: wall
//! time, and the user and system CPU time all the threads spent (seed 004's wall, user, sys
//! columns). Oversubscription is the point: seed 004 ran 8 to 64 threads, and found that
//! backoff bought 2.5% while a lock whose waiters sleep cut wall and system time.

mod advice;
mod claims;
mod figures;
mod measure;

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
use crate::measure::stats::paired_ratio_ci95;
use crate::measure::work::SharedLines;
use crate::measure::{interleave_stoppable, Progress, Rep, Series, StoppingRule, Summary, Taken};
use crate::reading::advice::{Contribution, Topic};
use crate::reading::scorecard::Finding;
use crate::reading::{measured_as, Context, Panel};
use crate::results::keys::{LOCK, ORIGIN, THREADS};
use crate::results::table::{col, Column};
use crate::results::{Row, Run};
use crate::select::{self, Bounds, LockChoice, ThreadCount};
use advice::quickest;
use claims::{spin_over, BACKOFF_GAIN, SLEEPING_WINS};
use clap::Args;
use figures::charts;
use measure::herd_rep;
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
    series: Vec<Series>,
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
        charts(ctx, &measured_as(runs))
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
        let entry = spinlab_registry::LOCKS.info("ttas:spin-park").unwrap();
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
