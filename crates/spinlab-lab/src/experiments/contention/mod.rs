//! `spinlab run contention`: seed 003's experiments on the machine at hand.
//!
//! Threads pinned round-robin to the usable CPUs (alternating between the groups, so every
//! group gets its share of threads) take one shared lock in a loop: a critical section that
//! writes `--cs-lines` shared cache lines and then does `--cs-ns` of busy work, then
//! `--ncs-ns` of private work outside. The main thread sleeps `--duration` and stops them.
//!
//! - throughput vs threads, including oversubscription (Fig. 7, Fig. 8's ratio);
//! - acquisitions per thread and per group (Tables 1-2), Jain's index, relative std-dev;
//! - wait (time inside `lock()`) and hold (time from acquiring to releasing), taken with the
//!   cycle counter after `lock()` returns and before `unlock()`, never inside the timed busy
//!   work: mean, p99, max (lockmeter's Table 4);
//! - one thread's uncontended lock/unlock pair (Table 3).
//!
//! Locks are interleaved within each thread count: one shared warm-up, then rounds in which
//! every lock runs once.

mod advice;
mod claims;
mod figures;
mod measure;
mod rows;

use super::driver::one_run;
use super::lab::Lab;
use super::moved::{around, discarded, mark, until_still};
use super::options::Common;
use super::options::Threads;
use super::settings::{smoke_locks, Length, Step};
use super::Experiment;
use crate::error::LabError;
use crate::lockbox::LockBox;
use crate::machine::topology::{format_cpu_list, Group, GroupBy, Placement, Topology};
use crate::measure::work::SharedLines;
use crate::measure::StoppingRule;
use crate::reading::advice::{Contribution, Topic};
use crate::reading::scorecard::Finding;
use crate::reading::{Context, Panel};
use crate::results::keys::{LOCK, ORIGIN, PLACEMENT, THREADS};
use crate::results::rows::ContentionRow;
use crate::results::table::{col, Column};
use crate::results::{Row, Run};
use crate::select::{self, Bounds, LockChoice, ThreadCount};
use advice::best_locks;
use claims::fairlock_claims;
use clap::Args;
use figures::throughput_chart;
use measure::{measure_contended, measure_uncontended, Setting, UNCONTENDED_BATCH, UNCONTENDED_BATCHES};
use serde_json::json;
use spinlab::sys::topology::{self, Level};
use std::time::{Duration, Instant};

/// Acquisitions per second of all threads (mean over repetitions; `Row::summary("throughput", "ops_s", …)`).
pub const THROUGHPUT_OPS_S: &str = "throughput_ops_s";
/// Half-width of the 95% interval of [`THROUGHPUT_OPS_S`].
pub const THROUGHPUT_CI95_OPS_S: &str = "throughput_ci95_ops_s";
/// One thread's uncontended lock/unlock pair.
pub const UNCONTENDED_NS: &str = "uncontended_ns";
/// The row key of the uncontended floor measured beside the locks (the cheapest
/// read-modify-write and a store).
pub const UNCONTENDED_FLOOR_NS: &str = "uncontended_floor_ns";
/// Acquisitions per thread, over all repetitions.
pub const PER_THREAD: &str = "per_thread";
/// Jain's fairness index of the per-thread acquisitions (1 is even).
pub const JAIN: &str = "jain";
/// How much of the CPUs the threads were pinned to they used: their CPU time over the run's
/// length times those CPUs, in percent.
pub const CPU_BUSY_PCT: &str = "cpu_busy_pct";
/// Jain's index of the CPU time each thread got: how evenly the scheduler (and the lock's
/// sleeping) shared the CPUs out.
pub const JAIN_CPU_TIME: &str = "jain_cpu_time";
/// Jain's index of the same threads running the same work with no lock, in the same rounds
/// (mean over repetitions): how evenly the scheduler alone shares the CPUs out over one
/// window, the most a lock that serves the threads that are running can show in [`JAIN`].
pub const JAIN_NO_LOCK: &str = "jain_no_lock";
/// What the progress line calls the no-lock subject of the rounds.
const NO_LOCK: &str = "no lock";
/// The longest time a repetition's threads took to finish their last acquisition after the
/// window closed, in milliseconds.
pub const DRAIN_MAX_MS: &str = "drain_max_ms";
/// Set (true) on a row whose lock collapsed at that configuration: its threads took longer
/// than [`COLLAPSE_DRAIN`] (or the window, where that is longer) to drain after a window, so it
/// was not repeated further.
pub const COLLAPSED: &str = "collapsed";
/// Acquisitions that took the lock from another thread, in percent of all (mean over
/// repetitions; absent with `--cs-lines 0`, where no shared line records the last holder).
pub const HANDOVERS_PCT: &str = "handovers_pct";

/// Per level of the locks' topology where the threads span two groups or more, the share of
/// hand-overs from a thread of the same group ([`LevelShare`](crate::results::rows::LevelShare)).
pub const HANDOVERS_IN_GROUP: &str = "handovers_in_group";

/// The locks measured when `--locks` is not given: one of each family, the default, and the
/// references.
pub const DEFAULT_LOCKS: &[&str] = &[
    "ttas:spin",
    "ticket:spin",
    "fair:spin",
    "mcs:spin-park",
    "fair:spin-park",
    "default",
    "std",
    "parking_lot",
    "pthread",
];

fn parse_groups(s: &str) -> Result<GroupBy, String> {
    GroupBy::parse(s)
}

fn parse_lock(s: &str) -> Result<LockChoice, String> {
    select::lock(s)
}

/// `--cs-ns` and `--ncs-ns`: up to 10 ms of busy work. After the stop every thread finishes
/// one more critical section, one after another, so the drain grows with threads times this
/// length.
pub const WORK_NS: Bounds = Bounds::new(0, 10_000_000).unit(" ns (10 ms)");
/// `--cs-lines`: up to 4096 lines (256 KiB of 64-byte lines) moved per acquisition; 0 writes
/// none, and the run cannot count lost updates.
pub const CS_LINES: Bounds = Bounds::new(0, 4096);

/// Options of `spinlab run contention` (no `Default`: `cli_defaults` gives clap's).
#[derive(Args, Clone, Debug)]
#[group(skip)]
pub struct Contention {
    /// Busy work inside the critical section, in nanoseconds, within [`WORK_NS`]
    #[arg(long, value_name = "NS", default_value = "100", value_parser = |s: &str| WORK_NS.parse::<u64>(s),
          allow_hyphen_values = true, help = WORK_NS.help("Busy work inside the critical section, in nanoseconds"))]
    pub cs_ns: u64,
    /// Shared cache lines written inside the critical section, within [`CS_LINES`]
    #[arg(long, value_name = "N", default_value = "1", value_parser = |s: &str| CS_LINES.parse::<u64>(s),
          allow_hyphen_values = true, help = CS_LINES.help("Shared cache lines written inside the critical section"))]
    pub cs_lines: u64,
    /// Private busy work between critical sections, in nanoseconds, within [`WORK_NS`]
    #[arg(long, value_name = "NS", default_value = "100", value_parser = |s: &str| WORK_NS.parse::<u64>(s),
          allow_hyphen_values = true, help = WORK_NS.help("Private busy work between critical sections, in nanoseconds"))]
    pub ncs_ns: u64,
    /// Group threads by: auto (NUMA nodes, or halves of the CPU list on a one-node machine),
    /// node, llc, halves
    #[arg(long, value_name = "BY", default_value = "auto", value_parser = parse_groups)]
    pub groups: GroupBy,
    /// Lock whose throughput the others are divided by (`throughput_vs_baseline`); ignored
    /// when not measured; a name from `spinlab list`
    #[arg(long, value_name = "LOCK", default_value = "ttas:spin", value_parser = parse_lock)]
    pub baseline: LockChoice,
}

const COLUMNS: &[Column] = &[
    col(LOCK, "lock"),
    col(THREADS, "threads"),
    col(PLACEMENT, "placement"),
    col(THROUGHPUT_OPS_S, "ops/s"),
    col(THROUGHPUT_CI95_OPS_S, "±95%"),
    col("throughput_vs_best_reference", "vs best ref"),
    col("throughput_vs_best_reference_ci95", "±95%"),
    col(JAIN, "jain"),
    col("rsd_pct", "rsd %"),
    col(CPU_BUSY_PCT, "cpu busy %"),
    col(JAIN_CPU_TIME, "jain cpu"),
    col(JAIN_NO_LOCK, "jain no lock"),
    col(HANDOVERS_PCT, "hand-overs %"),
    col("group_max_min_ratio", "group max/min"),
    col("mean_wait_ns", "mean wait ns"),
    col("p99_wait_ns", "p99 wait ns"),
    col("max_wait_ns", "max wait ns"),
    col("max_hold_ns", "max hold ns"),
    col("bound", "fairness bound"),
    col(UNCONTENDED_NS, "uncontended ns"),
    col("uncontended_vs_floor", "uncontended / floor"),
    col("reps", "reps"),
];

/// A repetition whose threads take longer than this to drain after the stop, or longer than
/// its own measured window, has collapsed: each of them needs one more acquisition, and a
/// lock that hands over to threads that are not running (a FIFO queue lock with more threads
/// than CPUs) serves them one time slice at a time. Such a lock is not repeated again at that
/// configuration; its row says `collapsed` and keeps what was measured.
pub const COLLAPSE_DRAIN: Duration = Duration::from_millis(100);

/// The critical section of the report's second contention run, in nanoseconds: long enough
/// that the recommendation has a measured answer for long critical sections too.
pub const LONG_CS_NS: u64 = 10_000;

/// The thread counts measured when `--threads` is not given.
const DEFAULT_THREADS: &[ThreadCount] = &[
    ThreadCount::Exact(1),
    ThreadCount::Exact(2),
    ThreadCount::PerCpu(1),
    ThreadCount::PerCpu(2),
    ThreadCount::PerCpu(4),
    ThreadCount::PerCpu(8),
];

/// What one `spinlab run contention` measures: its options resolved for this machine.
struct Plan {
    rule: StoppingRule,
    locks: Vec<LockChoice>,
    threads: Vec<usize>,
    duration: Duration,
    groups: Vec<Group>,
    /// `None`: spread round-robin over the groups (what no `--placement` gives).
    placements: Vec<Option<Placement>>,
    cs_iterations: u64,
    ncs_iterations: u64,
}

/// One configuration: a thread count at a placement.
struct At {
    threads: usize,
    placement: Option<Placement>,
}

impl At {
    /// A row of this configuration for `lock`, before any figure.
    fn row(&self, lock: &LockChoice) -> Row {
        let mut row = Row::new().with(LOCK, lock.name()).with(ORIGIN, lock.origin());
        if lock.via_alias {
            row.set("alias", select::DEFAULT_ALIAS);
        }
        row.with(THREADS, self.threads).with(PLACEMENT, self.placement.map_or("spread", |p| p.name()))
    }

    /// Its progress line.
    fn label(&self) -> String {
        format!("{} threads{}", self.threads, self.placement.map_or(String::new(), |p| format!(", {p}")))
    }
}

impl Contention {
    /// The options checked and resolved for this machine.
    fn plan(&self, lab: &Lab, common: &Common) -> Result<Plan, LabError> {
        Ok(Plan {
            rule: common.rule(3, 10)?,
            locks: common.locks_or(DEFAULT_LOCKS),
            threads: common.threads_or(DEFAULT_THREADS, lab.cpus())?,
            duration: common.duration.unwrap_or(Duration::from_millis(200)),
            groups: groups(lab, self.groups),
            placements: match &common.placement {
                None => vec![None],
                Some(p) => p.0.iter().copied().map(Some).collect(),
            },
            cs_iterations: lab.work.iterations(self.cs_ns as f64),
            ncs_iterations: lab.work.iterations(self.ncs_ns as f64),
        })
    }

    /// The run, with the plan as its parameters.
    fn describe(&self, plan: &Plan, lab: &Lab) -> Run {
        let mut run = Run::new(self.name());
        run.param("locks", plan.locks.iter().map(|l| l.name()).collect::<Vec<_>>())
            .param("threads", &plan.threads)
            .param("placements", plan.placements.iter().map(|p| p.map_or("spread", |p| p.name())).collect::<Vec<_>>())
            .param("duration_s", plan.duration.as_secs_f64())
            .param("cs_ns", self.cs_ns)
            .param("cs_lines", self.cs_lines)
            .param("ncs_ns", self.ncs_ns)
            .param("cs_iterations", plan.cs_iterations)
            .param("ncs_iterations", plan.ncs_iterations)
            .param("work_ns_per_iteration", lab.work.ns_per_iteration)
            .param("groups_by", groups_by_label(lab, self.groups))
            .param("groups_declared", declared_groups(lab, self.groups).is_some())
            .param(
                "groups",
                plan.groups
                    .iter()
                    .map(|g| json!({"group": g.label, "cpus": format_cpu_list(&g.cpus)}))
                    .collect::<Vec<_>>(),
            )
            .param("baseline", self.baseline.name())
            .stopping_rule(&plan.rule)
            .param("uncontended_batch_ops", UNCONTENDED_BATCH)
            .param("uncontended_batches_per_rep", UNCONTENDED_BATCHES)
            .param("default_lock", select::DEFAULT_LOCK);
        run
    }
}

/// A figure measured once per thread count and placement, and so repeated on each of its
/// rows: `heading`, then one line per configuration from the first of its rows that `line`
/// can describe; nothing when no row can.
fn per_configuration(rows: &[ContentionRow], heading: &str, line: impl Fn(&ContentionRow) -> Option<String>) -> String {
    let mut out = String::new();
    let mut seen = Vec::new();
    for row in rows {
        let at = (row.threads.map(|t| t.to_string()).unwrap_or_default(), row.placement.as_deref().unwrap_or("?"));
        if seen.contains(&at) {
            continue;
        }
        let Some(text) = line(row) else { continue };
        if seen.is_empty() {
            out.push_str(heading);
            out.push('\n');
        }
        out.push_str(&format!("  {:>4} threads, {}: {text}\n", at.0, at.1));
        seen.push(at);
    }
    out
}

impl Experiment for Contention {
    fn name(&self) -> &'static str {
        "contention"
    }

    fn about(&self) -> &'static str {
        "Throughput and fairness under contention (seed 003)"
    }

    fn uses(&self) -> &'static [&'static str] {
        &["locks", "threads", "placement", "duration"]
    }

    fn columns(&self) -> &'static [Column] {
        COLUMNS
    }

    fn render(&self, run: &Run) -> String {
        let mut out = crate::results::table::render(&run.rows, COLUMNS);
        out.push_str("\nacquisitions per group (all repetitions):\n");
        let rows = run.rows_as::<ContentionRow>();
        let measured: Vec<ContentionRow> = rows.iter().filter(|r| r.skipped.is_none()).cloned().collect();
        for row in &measured {
            let parts: Vec<String> =
                row.per_group.iter().flatten().map(|g| format!("{}: {}", g.group, g.acquisitions)).collect();
            out.push_str(&format!(
                "  {:<16} {:>4} threads  {}\n",
                row.lock.as_deref().unwrap_or("?"),
                row.threads.map(|t| t.to_string()).unwrap_or_default(),
                parts.join("  ")
            ));
        }
        let in_group: Vec<String> = measured.iter().filter_map(in_group_line).collect();
        if !in_group.is_empty() {
            out.push_str("hand-overs within a group, in percent of hand-overs, per level of the locks' topology:\n");
            out.push_str(&in_group.concat());
        }
        out.push_str(&per_configuration(
            &measured,
            "one-way cache-line transfer (ping-pong), just before and just after the locks ran:",
            |row| {
                let (pair, before, after) =
                    (row.line_transfer_cpus.as_deref()?, row.line_transfer_before_ns?, row.line_transfer_after_ns?);
                Some(format!("CPUs {pair}: {before:.0} ns before, {after:.0} ns after{}", discarded(row)))
            },
        ));
        out.push_str(&per_configuration(
            &measured,
            "Jain's index with no lock (the same threads and work, the scheduler alone, in the same rounds):",
            |row| {
                let (jain, lowest) = (row.jain_no_lock?, row.jain_no_lock_min.get()?);
                Some(format!("{jain:.3} (lowest window {lowest:.3})"))
            },
        ));
        if let Some(floor) = rows.iter().find_map(|r| r.uncontended_floor_ns) {
            out.push_str(&format!(
                "uncontended floor (the cheapest read-modify-write and a store, timed in the same rounds): {floor:.2} ns\n"
            ));
        }
        out
    }

    fn run(&self, lab: &Lab, common: &Common) -> Result<Vec<Run>, LabError> {
        let started = Instant::now();
        let plan = self.plan(lab, common)?;
        let run = self.describe(&plan, lab);
        let available: Vec<&LockChoice> = plan.locks.iter().filter(|l| l.unavailable().is_none()).collect();
        one_run(lab, started, run, 1 + (plan.placements.len() * plan.threads.len()) as u64, |progress| {
            // Table 3: one thread, no contention.
            progress.step("uncontended lock/unlock");
            let instances: Vec<LockBox> = available
                .iter()
                .map(|l| LockBox::new(l.entry).map_err(|e| LabError::failed(e.to_string())))
                .collect::<Result<_, _>>()?;
            let uncontended = measure_uncontended(&instances, &plan.rule, progress, lab)?;
            for (lock, why) in available.iter().zip(&uncontended.below_floor) {
                if let Some(why) = why {
                    eprintln!("warning: contention: {}: {why}", lock.name());
                }
            }

            let lines = SharedLines::new(self.cs_lines as usize);
            let order = Topology::spread_order(&plan.groups);
            let mut rows = Vec::new();
            for &placement in &plan.placements {
                for &threads in &plan.threads {
                    let at = At { threads, placement };
                    let cpus = match placement {
                        None => Ok((0..threads).map(|i| order[i % order.len()]).collect()),
                        Some(p) => lab.topology.cpus_for(p, threads),
                    };
                    let cpus = match cpus {
                        Ok(c) => c,
                        Err(why) => {
                            rows.extend(plan.locks.iter().map(|l| at.row(l).skipped(why.clone())));
                            continue;
                        }
                    };
                    progress.step(&at.label());
                    let setting = Setting {
                        cpus: &cpus,
                        duration: plan.duration,
                        cs_iterations: plan.cs_iterations,
                        ncs_iterations: plan.ncs_iterations,
                        lines: &lines,
                        overhead_ticks: lab.clock.overhead_ticks,
                    };
                    // The cost of moving the lock's line between two of these CPUs, just before and
                    // just after the locks ran: on a virtual machine it changes when the host moves
                    // the virtual CPUs, and with it which lock is fastest. A configuration the
                    // machine changed under mixes two machines' figures, so it is measured again,
                    // every lock, up to MAX_ATTEMPTS times in all; the rows keep the last attempt and
                    // say what the earlier ones saw.
                    let kept = until_still(|attempt| {
                        if attempt > 1 {
                            progress.step(&format!("{} again, attempt {attempt} (the machine moved)", at.label()));
                        }
                        around(&cpus, &lab.clock, || {
                            measure_contended(&available, &instances, &setting, &plan.rule, progress)
                        })
                    })?;
                    progress.inc();
                    let mut config_rows = self.rows(&plan, lab, &at, &cpus, &kept.result, &uncontended);
                    for row in config_rows.iter_mut().filter(|r| !r.is_skipped()) {
                        mark(row, &kept);
                    }
                    rows.extend(config_rows);
                }
            }
            Ok(rows)
        })
    }

    fn report_steps(&self, length: Length, cpus: usize) -> Vec<Step> {
        let mut c = length.common(self, 3, 5, 50);
        if length == Length::Smoke {
            c.threads = Some(Threads(vec![ThreadCount::Exact(2), ThreadCount::PerCpu(2)]));
            c.locks = smoke_locks();
        }
        let short = Step::new(self.clone(), c, "contention: throughput and fairness, short critical section");
        let long = Contention { cs_ns: LONG_CS_NS, ..self.clone() };
        let mut c = length.common(&long, 3, 5, 50);
        c.threads = Some(Threads(if cpus >= 2 {
            vec![ThreadCount::PerCpu(1), ThreadCount::PerCpu(2), ThreadCount::PerCpu(4)]
        } else {
            vec![ThreadCount::Exact(2), ThreadCount::Exact(4)]
        }));
        if length == Length::Smoke {
            c.threads = Some(Threads(vec![ThreadCount::PerCpu(2)]));
            c.locks = smoke_locks();
        }
        let long = Step::new(long, c, "contention: long (10 µs) critical section");
        // Nothing inside the lock but the shared line: where a lock's own hand-over is all
        // there is to measure, at one thread per CPU and at 8 per CPU.
        let empty = Contention { cs_ns: 0, ..self.clone() };
        let mut c = length.common(&empty, 3, 5, 50);
        c.threads = Some(Threads(if cpus >= 2 {
            vec![ThreadCount::PerCpu(1), ThreadCount::PerCpu(8)]
        } else {
            vec![ThreadCount::Exact(2), ThreadCount::Exact(8)]
        }));
        if length == Length::Smoke {
            c.threads = Some(Threads(vec![ThreadCount::PerCpu(2)]));
            c.locks = smoke_locks();
        }
        vec![short, long, Step::new(empty, c, "contention: empty critical section")]
    }

    fn figures(&self, ctx: &Context<'_>, runs: &[&Run]) -> Vec<Result<Panel, String>> {
        runs.iter().enumerate().flat_map(|(i, run)| throughput_chart(ctx, run, i == 0)).collect()
    }

    fn advice(&self, ctx: &Context<'_>) -> Option<Contribution> {
        // Each line names its run (`best_lock`), and carries that run's caveats alone.
        Some(Contribution { topic: Topic::Locks, lines: best_locks(ctx), reads: &[] })
    }

    fn scorecard(&self, ctx: &Context<'_>) -> Vec<Finding> {
        fairlock_claims(ctx)
    }
}

/// One row's in-group shares of hand-overs, one level after another (`declared` where
/// `SPINLAB_TOPOLOGY` declared the level's groups); `None` for a row without them.
fn in_group_line(row: &ContentionRow) -> Option<String> {
    let shares = row.handovers_in_group.as_ref().filter(|s| !s.is_empty())?;
    let parts: Vec<String> = shares
        .iter()
        .map(|s| {
            let ci = s.ci95_pct.get().map_or(String::new(), |ci| format!(" ±{ci:.1}"));
            let declared = if s.declared { ", declared" } else { "" };
            format!("{} {:.1}{ci} ({} groups{declared})", s.level, s.pct, s.groups)
        })
        .collect();
    Some(format!(
        "  {:<16} {:>4} threads  {}\n",
        row.lock.as_deref().unwrap_or("?"),
        row.threads.map(|t| t.to_string()).unwrap_or_default(),
        parts.join("  ")
    ))
}

/// The groups acquisitions are counted by: those `SPINLAB_TOPOLOGY` declares for the locks at
/// the level asked for (`auto` asks for nodes), or else the machine's.
fn groups(lab: &Lab, by: GroupBy) -> Vec<Group> {
    declared_groups(lab, by).unwrap_or_else(|| lab.topology.groups(by))
}

/// The groups `SPINLAB_TOPOLOGY` declares at the level `by` names, over the CPUs the run may
/// use, when there are two or more: the groups the topology-aware locks then choose by, so
/// that the per-group counts and seed 003's node claim read the same groups the locks do.
fn declared_groups(lab: &Lab, by: GroupBy) -> Option<Vec<Group>> {
    let level = match by {
        GroupBy::Auto | GroupBy::Node => Level::Node,
        GroupBy::Llc => Level::Llc,
        GroupBy::Halves => return None,
    };
    let model = topology::machine().groups(level);
    let allowed = lab.topology.cpu_ids();
    let groups: Vec<Group> = model
        .groups
        .iter()
        .map(|cpus| cpus.iter().copied().filter(|c| allowed.contains(c)).collect::<Vec<_>>())
        .filter(|cpus| !cpus.is_empty())
        .enumerate()
        .map(|(i, cpus)| Group { label: format!("{level} {i} (declared, CPUs {})", format_cpu_list(&cpus)), cpus })
        .collect();
    (model.declared && groups.len() > 1).then_some(groups)
}

fn groups_by_label(lab: &Lab, by: GroupBy) -> &'static str {
    let topology = &lab.topology;
    if declared_groups(lab, by).is_some() {
        return if by == GroupBy::Llc { "llc" } else { "node" };
    }
    match by {
        GroupBy::Auto if topology.nodes.len() > 1 => "node",
        GroupBy::Auto | GroupBy::Halves => "halves of the CPU list",
        GroupBy::Node => "node",
        GroupBy::Llc if topology.llcs.is_empty() => "halves of the CPU list",
        GroupBy::Llc => "llc",
    }
}
