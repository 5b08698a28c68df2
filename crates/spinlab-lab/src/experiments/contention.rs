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

use super::floor;
use super::moved::{around, discarded, mark, until_still, LINE_TRANSFER_CPUS};
use super::settings::{smoke_locks, Length, Step};
use super::Threads;
use super::{add_ratios_to_each_reference, finish, Common, Experiment, Lab};
use crate::error::LabError;
use crate::lockbox::LockBox;
use crate::machine::topology::{format_cpu_list, Group, GroupBy, Placement, Topology};
use crate::measure::clock::{cpu_clock_s, now, this_thread_cpu_clock, thread_cpu_s};
use crate::measure::histogram::Histogram;
use crate::measure::pin::{pin_or_die, with_pinned};
use crate::measure::stats::{jain, mean, paired_ratio_ci95, population_rsd_pct};
use crate::measure::team::{spawn_team, StartLine, MEASURING, STARTING, STOPPED};
use crate::measure::work::{spin, SharedLines};
use crate::measure::{self, interleave, interleave_stoppable, Clock, Progress, Rep, StoppingRule, Summary, Taken};
use crate::reading::advice::{missing_reason, Advice, Compared, Contribution, Figure, Margin, RunnerUp, Topic, Unit};
use crate::reading::caveat;
use crate::reading::plot::{self, Axis, Band, Scale, Series};
use crate::reading::scorecard::{words, Claim, Estimate, Finding, MachineState, Observed, Verdict as Judged};
use crate::reading::{distinct, measured, value_string, Context, Panel};
use crate::results::format::{duration_words, number, section_words};
use crate::results::keys::{BELOW_FLOOR, LOCK, MEASURE, ORIGIN, PLACEMENT, THREADS};
use crate::results::table::{col, Column};
use crate::results::{Row, Run, TRANSFER_AFTER_NS, TRANSFER_BEFORE_NS};
use crate::select::{self, Bounds, LockChoice, ThreadCount};
use clap::Args;
use serde_json::json;
use spinlab::CachePadded;
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::OnceLock;
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

/// Lock/unlock pairs per batch of the uncontended measurement, and batches per repetition.
const UNCONTENDED_BATCH: u64 = 10_000;
const UNCONTENDED_BATCHES: usize = 21;

/// One repetition's figures.
struct RepResult {
    elapsed_s: f64,
    /// From the stop signal until every thread had finished its last acquisition and left.
    drain_s: f64,
    /// From the opening of the start line until the last thread had left: every thread's CPU
    /// time falls inside it.
    ran_s: f64,
    per_thread: Vec<u64>,
    /// Counted acquisitions that took the lock from another thread, all threads together.
    handovers: u64,
    /// CPU time each thread used, from the start line until it left.
    per_thread_cpu_s: Vec<f64>,
    /// Distinct CPUs the threads were pinned to.
    cpus_used: usize,
    wait: Histogram,
    hold: Histogram,
    lost_updates: u64,
    /// Every acquisition each thread made, counted or not (outside the window), and how many
    /// of them, all threads together, took the lock from another thread.
    made_per_thread: Vec<u64>,
    made_handovers: u64,
}

/// Everything measured for one lock at one configuration, over all repetitions.
#[derive(Default)]
struct Totals {
    per_thread: Vec<u64>,
    jain: Vec<f64>,
    rsd_pct: Vec<f64>,
    cpu_busy_pct: Vec<f64>,
    jain_cpu_time: Vec<f64>,
    /// Each repetition's hand-overs, as a percentage of its acquisitions.
    handovers_pct: Vec<f64>,
    wait: Histogram,
    hold: Histogram,
    /// Each repetition's longest wait and longest hold, in ticks: the maxima over the whole run
    /// are one sample each, these give them an interval.
    rep_max_wait: Vec<f64>,
    rep_max_hold: Vec<f64>,
    lost_updates: u64,
    /// The longest drain of any repetition, and whether one of them showed a collapse.
    max_drain_s: f64,
    collapsed: bool,
}

/// A repetition whose threads take longer than this to drain after the stop, or longer than
/// its own measured window, has collapsed: each of them needs one more acquisition, and a
/// lock that hands over to threads that are not running (a FIFO queue lock with more threads
/// than CPUs) serves them one time slice at a time. Such a lock is not repeated again at that
/// configuration; its row says `collapsed` and keeps what was measured.
pub const COLLAPSE_DRAIN: Duration = Duration::from_millis(100);

struct Setting<'a> {
    cpus: &'a [usize],
    duration: Duration,
    cs_iterations: u64,
    ncs_iterations: u64,
    lines: &'a SharedLines,
    overhead_ticks: u64,
}

/// What one thread counted in one repetition.
struct ThreadTally {
    acquisitions: u64,
    /// Counted acquisitions that took the lock from another thread ([`SharedLines::touch_as`]).
    handovers: u64,
    /// Every acquisition it made, counted or not (those that ended before the window opened,
    /// or after it closed), and those of them that took the lock from another thread.
    made: u64,
    made_handovers: u64,
    /// Its CPU time when it left, all of it (the window's share is taken off by the caller).
    cpu_s: f64,
    wait: Histogram,
    hold: Histogram,
}

/// One repetition: every thread of `s` takes `lock` in a loop, or, with no lock, runs the
/// same work (the critical section's and the one outside it) without one, so that what it
/// counts is how evenly the scheduler alone shared the CPUs out.
///
/// The measured window opens only once every thread is past the start line and in its loop.
/// The line wakes its sleeping threads together, and they leave it one at a time through its
/// mutex: with several threads on each CPU the last leaves it time slices after the first,
/// and a window opened at the line would count that stagger as the scheduler's unfairness
/// (docs/contention.md, "The scheduler's own fairness").
fn contended_rep(lock: Option<&LockBox>, s: &Setting<'_>) -> Result<RepResult, LabError> {
    let threads = s.cpus.len();
    let phase = CachePadded::new(AtomicU8::new(STARTING));
    let in_loop = CachePadded::new(AtomicUsize::new(0));
    // Each thread's CPU-time clock, which the main thread reads as it opens the window.
    let clocks: Vec<OnceLock<libc::clockid_t>> = (0..threads).map(|_| OnceLock::new()).collect();
    let line = StartLine::new(threads);
    s.lines.reset();
    let worker = |i: usize| {
        pin_or_die(s.cpus[i]);
        // Below THREADS_CEILING, far below u16::MAX.
        let me = u16::try_from(i).expect("a thread number fits 16 bits");
        let mut tally = ThreadTally {
            acquisitions: 0,
            handovers: 0,
            made: 0,
            made_handovers: 0,
            cpu_s: 0.0,
            wait: Histogram::default(),
            hold: Histogram::default(),
        };
        let mut seed = i as u64 + 1;
        if !line.arrive() {
            return None;
        }
        clocks[i].get_or_init(this_thread_cpu_clock);
        // Release: the main thread that sees every thread here finds every clock.
        in_loop.fetch_add(1, Release);
        while phase.load(Relaxed) != STOPPED {
            // An acquisition counts if it ended inside the window: the phase is read again
            // after it, so one that began before the window opened and ended after counts (a
            // hand-over it made is the window's), and one that ends after the stop does not
            // (threads queued behind a slow hand-off would otherwise inflate the count after
            // the clock stopped).
            let Some(lock) = lock else {
                seed = spin(s.ncs_iterations, spin(s.cs_iterations, seed));
                match phase.load(Relaxed) {
                    MEASURING => tally.acquisitions += 1,
                    STOPPED => break,
                    _ => {}
                }
                continue;
            };
            let asked = now();
            lock.lock();
            let acquired = now();
            let handed_over = s.lines.touch_as(me);
            seed = spin(s.cs_iterations, seed);
            let releasing = now();
            // SAFETY: this thread acquired the lock just above.
            unsafe { lock.unlock() };
            tally.made += 1;
            tally.made_handovers += u64::from(handed_over);
            match phase.load(Relaxed) {
                MEASURING => {}
                STOPPED => break,
                _ => {
                    seed = spin(s.ncs_iterations, seed);
                    continue;
                }
            }
            tally.wait.record(acquired.wrapping_sub(asked).saturating_sub(s.overhead_ticks));
            tally.hold.record(releasing.wrapping_sub(acquired).saturating_sub(s.overhead_ticks));
            tally.acquisitions += 1;
            tally.handovers += u64::from(handed_over);
            seed = spin(s.ncs_iterations, seed);
        }
        // All it used; the main thread takes off what it had used when the window opened.
        tally.cpu_s = thread_cpu_s();
        black_box(seed);
        Some(tally)
    };
    let (elapsed_s, drain_s, ran_s, tallies, cpu_at_open) = std::thread::scope(|scope| {
        let handles = spawn_team(scope, &line, threads, &worker)?;
        line.open();
        while in_loop.load(Acquire) < threads {
            std::thread::sleep(Duration::from_micros(50));
        }
        // Every thread is running its loop, so every clock is live and set. The CPU time each
        // thread used until now falls outside [opened, joined].
        let opened = Instant::now();
        let cpu_at_open: Vec<f64> =
            clocks.iter().map(|c| cpu_clock_s(*c.get().expect("each thread set its clock"))).collect();
        phase.store(MEASURING, Relaxed);
        std::thread::sleep(s.duration);
        phase.store(STOPPED, Relaxed);
        let elapsed = opened.elapsed().as_secs_f64();
        let stopped = Instant::now();
        let tallies: Vec<ThreadTally> = handles
            .into_iter()
            .map(|h| h.join().expect("a contention thread panicked").expect("the start line was opened"))
            .collect();
        let ran = opened.elapsed().as_secs_f64();
        Ok::<_, LabError>((elapsed, stopped.elapsed().as_secs_f64(), ran, tallies, cpu_at_open))
    })?;
    let mut r = RepResult {
        elapsed_s,
        drain_s,
        ran_s,
        per_thread: Vec::with_capacity(threads),
        handovers: 0,
        per_thread_cpu_s: Vec::with_capacity(threads),
        cpus_used: distinct_cpus(s.cpus),
        wait: Histogram::default(),
        hold: Histogram::default(),
        lost_updates: 0,
        made_per_thread: Vec::with_capacity(threads),
        made_handovers: 0,
    };
    for (tally, at_open) in tallies.into_iter().zip(cpu_at_open) {
        r.per_thread.push(tally.acquisitions);
        r.handovers += tally.handovers;
        r.per_thread_cpu_s.push(tally.cpu_s - at_open);
        r.made_per_thread.push(tally.made);
        r.made_handovers += tally.made_handovers;
        r.wait.merge(&tally.wait);
        r.hold.merge(&tally.hold);
    }
    // Every acquisition touched the lines, counted or not: a mutual-exclusion failure shows as
    // fewer touches than acquisitions.
    if lock.is_some() {
        let made: u64 = r.made_per_thread.iter().sum();
        r.lost_updates = s.lines.total().map_or(0, |seen| made.saturating_sub(seen));
    }
    Ok(r)
}

/// Nanoseconds per uncontended lock/unlock pair, one repetition: the median of
/// `UNCONTENDED_BATCHES` batches of `UNCONTENDED_BATCH` pairs, so that an interrupt or a
/// preemption spoils one batch rather than the repetition. `pairs(n)` runs `n` pairs in one
/// loop compiled for the lock (`RawLockOps::pairs`), as seed 003 timed its locks: through the
/// per-operation function pointers the contention loop uses, two indirect calls per pair hid
/// half of a read-modify-write's cost (the fair lock measured 1.04-1.17 times the spinlock
/// that way, 2.0 times inlined).
fn median_pair_ns(lab: &Lab, pairs: impl Fn(u64)) -> f64 {
    let mut batches: Vec<u64> = (0..UNCONTENDED_BATCHES)
        .map(|_| {
            let batch_started = now();
            pairs(UNCONTENDED_BATCH);
            now().wrapping_sub(batch_started).saturating_sub(lab.clock.overhead_ticks)
        })
        .collect();
    batches.sort_unstable();
    lab.clock.ns(batches[batches.len() / 2] as f64) / UNCONTENDED_BATCH as f64
}

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

/// One lock at one configuration: its throughput per repetition and what its threads counted.
struct Measured {
    series: measure::Series,
    totals: Totals,
}

impl Totals {
    /// Adds one measured repetition; returns its throughput for the stopping rule, as the
    /// last value once a repetition has collapsed.
    fn add(&mut self, r: &RepResult, collapse_after_s: f64) -> Taken {
        self.max_drain_s = self.max_drain_s.max(r.drain_s);
        self.collapsed |= r.drain_s > collapse_after_s;
        for (sum, c) in self.per_thread.iter_mut().zip(&r.per_thread) {
            *sum += c;
        }
        let shares: Vec<f64> = r.per_thread.iter().map(|&c| c as f64).collect();
        self.jain.push(jain(&shares));
        self.rsd_pct.push(population_rsd_pct(&shares));
        let available_s = r.ran_s * r.cpus_used as f64;
        self.cpu_busy_pct.push(100.0 * r.per_thread_cpu_s.iter().sum::<f64>() / available_s);
        self.jain_cpu_time.push(jain(&r.per_thread_cpu_s));
        let acquisitions = r.per_thread.iter().sum::<u64>();
        if acquisitions > 0 {
            self.handovers_pct.push(100.0 * r.handovers as f64 / acquisitions as f64);
        }
        self.wait.merge(&r.wait);
        self.hold.merge(&r.hold);
        if let (Some(wait), Some(hold)) = (r.wait.max(), r.hold.max()) {
            self.rep_max_wait.push(wait as f64);
            self.rep_max_hold.push(hold as f64);
        }
        self.lost_updates += r.lost_updates;
        let throughput = acquisitions as f64 / r.elapsed_s;
        if self.collapsed {
            Taken::Last(throughput)
        } else {
            Taken::Value(throughput)
        }
    }
}

/// The floor under every uncontended lock/unlock pair: one atomic read-modify-write that takes
/// a word (Acquire) and a plain store that gives it back (Release), what a test-and-set or
/// ticket spin lock does and no lock can do with less. Each read-modify-write a lock may take
/// with is timed (x86's `cmpxchg`, `xchg` and `xadd` cost differently), and the floor is the
/// cheapest. Its own padded word, timed as the locks are.
#[derive(Clone, Copy)]
enum UncontendedFloor {
    CompareAndSwap,
    Swap,
    FetchAdd,
}

impl UncontendedFloor {
    const ALL: [UncontendedFloor; 3] =
        [UncontendedFloor::CompareAndSwap, UncontendedFloor::Swap, UncontendedFloor::FetchAdd];

    fn pairs(self, word: &AtomicU32, n: u64) {
        for _ in 0..n {
            // As `RawLockOps::pairs`: the word's address passes through `black_box` each time.
            let word = black_box(word);
            // Nothing else touches the word, so each of these takes it from 0.
            match self {
                UncontendedFloor::CompareAndSwap => drop(word.compare_exchange(0, 1, Acquire, Relaxed)),
                UncontendedFloor::Swap => drop(word.swap(1, Acquire)),
                UncontendedFloor::FetchAdd => drop(word.fetch_add(1, Acquire)),
            }
            word.store(0, Release);
        }
    }
}

/// How far below the floor an uncontended pair may time before it is flagged: identical
/// instructions time up to a few percent apart with the loop placed differently in the binary
/// (a lock's `xadd` and store against the floor's own loop of the same two instructions).
const UNCONTENDED_SLACK: f64 = 0.05;

/// What the uncontended pass measured: each lock's pair, and the floor's in the same rounds.
struct Uncontended {
    locks: Vec<Option<Summary>>,
    /// The cheapest of the [`UncontendedFloor`] pairs.
    floor: Option<Summary>,
    /// For each lock, why its pair is below the floor, when it is (`below_floor`).
    below_floor: Vec<Option<String>>,
}

/// Table 3, on the home CPU: each lock's uncontended lock/unlock pair, in nanoseconds, with
/// the floors' ([`UncontendedFloor`]) as more subjects of the same interleaved rounds.
fn measure_uncontended(
    instances: &[LockBox],
    rule: &StoppingRule,
    progress: &Progress,
    lab: &Lab,
) -> Result<Uncontended, LabError> {
    let word = CachePadded::new(AtomicU32::new(0));
    let subjects = instances.len() + UncontendedFloor::ALL.len();
    let series = with_pinned(lab.home_cpu(), || {
        interleave(subjects, rule, Some(progress), |i, _| {
            Ok(match instances.get(i) {
                // SAFETY: one thread measures at a time, and the lock is free between
                // measurements.
                Some(lock) => median_pair_ns(lab, |n| unsafe { lock.pairs(n) }),
                None => median_pair_ns(lab, |n| UncontendedFloor::ALL[i - instances.len()].pairs(&word, n)),
            })
        })
    })?;
    progress.inc();
    let mut summaries: Vec<Option<Summary>> = series.iter().map(|s| Summary::of(&s.samples)).collect();
    let floors = summaries.split_off(instances.len());
    let floor = floors.into_iter().flatten().min_by(|a, b| a.mean.total_cmp(&b.mean));
    let below_floor = summaries
        .iter()
        .map(|u| match (u, &floor) {
            (Some(u), Some(f)) => {
                floor::below_floor(u, f, "cost", UNCONTENDED_SLACK).map(|why| format!("uncontended: {why}"))
            }
            _ => None,
        })
        .collect();
    Ok(Uncontended { locks: summaries, floor, below_floor })
}

/// Every lock of `locks` at one setting, interleaved after one shared warm-up; a lock whose
/// threads collapse is not repeated further. The same threads with no lock are one more
/// subject of the rounds ([`Contended::no_lock`]).
fn measure_contended(
    locks: &[&LockChoice],
    instances: &[LockBox],
    setting: &Setting<'_>,
    rule: &StoppingRule,
    progress: &Progress,
) -> Result<Contended, LabError> {
    let warmup = Setting { duration: (setting.duration / 4).max(Duration::from_millis(10)), ..*setting };
    let mut totals: Vec<Totals> =
        (0..=locks.len()).map(|_| Totals { per_thread: vec![0; setting.cpus.len()], ..Default::default() }).collect();
    let collapse_after_s = COLLAPSE_DRAIN.max(setting.duration).as_secs_f64();
    let mut series = interleave_stoppable(locks.len() + 1, rule, Some(progress), |i, rep| {
        let (name, lock) = match instances.get(i) {
            Some(lock) => (locks[i].name(), Some(lock)),
            None => (NO_LOCK, None),
        };
        progress.detail(&format!("{name}, {}", rep_label(rep)));
        let t = &mut totals[i];
        if rep == Rep::Warmup {
            let r = contended_rep(lock, &warmup)?;
            t.max_drain_s = t.max_drain_s.max(r.drain_s);
            t.collapsed = r.drain_s > collapse_after_s;
            return Ok(if t.collapsed { Taken::Last(f64::NAN) } else { Taken::Value(f64::NAN) });
        }
        let taken = t.add(&contended_rep(lock, setting)?, collapse_after_s);
        // With no lock the figure kept is the fairness, so the rounds go on until it is stable.
        Ok(match (lock, t.jain.last()) {
            (None, Some(&jain)) => Taken::Value(jain),
            _ => taken,
        })
    })?;
    let no_lock = totals.pop().expect("the no-lock subject");
    series.pop();
    let locks = series.into_iter().zip(totals).map(|(series, totals)| Measured { series, totals }).collect();
    Ok(Contended { locks, no_lock })
}

/// What one setting measured: each lock, and the same threads with no lock.
struct Contended {
    locks: Vec<Measured>,
    /// The threads running the loop's work with no lock, in the same rounds: the evenness
    /// the scheduler gives them by itself (`jain_no_lock`), which a lock that serves running
    /// threads cannot exceed.
    no_lock: Totals,
}

impl Contention {
    /// The options checked and resolved for this machine.
    fn plan(&self, lab: &Lab, common: &Common) -> Result<Plan, LabError> {
        Ok(Plan {
            rule: common.rule(3, 10)?,
            locks: common.locks_or(DEFAULT_LOCKS),
            threads: common.threads_or(DEFAULT_THREADS, lab.cpus())?,
            duration: common.duration.unwrap_or(Duration::from_millis(200)),
            groups: lab.topology.groups(self.groups),
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
            .param("groups_by", groups_by_label(&lab.topology, self.groups))
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

    /// One configuration's rows: one per lock (skipped where it cannot run here), with the
    /// ratios between them.
    fn rows(
        &self,
        plan: &Plan,
        lab: &Lab,
        at: &At,
        cpus: &[usize],
        measured: &Contended,
        uncontended: &Uncontended,
    ) -> Vec<Row> {
        let mut figures = measured.locks.iter().zip(uncontended.locks.iter().zip(&uncontended.below_floor));
        let mut rows = Vec::new();
        let mut rounds: Vec<&[f64]> = Vec::new();
        for lock in &plan.locks {
            if let Some(why) = lock.unavailable() {
                rows.push(at.row(lock).skipped(why));
                rounds.push(&[]);
                continue;
            }
            let (m, (u, below)) = figures.next().expect("one measurement per available lock");
            rounds.push(&m.series.samples);
            let t = &m.totals;
            let mut row = at.row(lock).with("cpus", format_cpu_list(cpus));
            if let Some(sum) = Summary::of(&m.series.samples) {
                row = row.summary("throughput", "ops_s", &sum);
            }
            row.set("stop", m.series.verdict);
            add_drain(&mut row, lock, at, t);
            add_counts(&mut row, &plan.groups, cpus, t);
            add_no_lock(&mut row, &measured.no_lock);
            add_waits(&mut row, &lab.clock, t);
            // The algorithm's guarantee, beside the waits it shows here.
            row.set("bound", lock.entry.bound);
            row.set("acquisitions", t.wait.count());
            if let Some(u) = u {
                row.set(UNCONTENDED_NS, u.mean);
                row.set("uncontended_ci95_ns", u.ci95);
                row.set("uncontended_reps", u.reps);
                add_uncontended_floor(&mut row, u, uncontended.floor.as_ref());
            }
            if let Some(why) = below {
                row.set(BELOW_FLOOR, why);
            }
            if self.cs_lines > 0 {
                add_lost_updates(&mut row, lock, at, t);
                add_handovers(&mut row, t);
            }
            rows.push(row);
        }
        add_ratios(&mut rows, &rounds, self.baseline.name());
        rows
    }
}

/// The floor's uncontended pair beside the lock's, and their ratio.
fn add_uncontended_floor(row: &mut Row, u: &Summary, floor: Option<&Summary>) {
    let Some(f) = floor.filter(|f| f.mean > 0.0) else { return };
    row.set(UNCONTENDED_FLOOR_NS, f.mean);
    row.set("uncontended_floor_ci95_ns", f.ci95);
    row.set("uncontended_vs_floor", u.mean / f.mean);
}

/// A figure measured once per thread count and placement, and so repeated on each of its
/// rows: `heading`, then one line per configuration from the first of its rows that `line`
/// can describe; nothing when no row can.
fn per_configuration(run: &Run, heading: &str, line: impl Fn(&Row) -> Option<String>) -> String {
    let mut out = String::new();
    let mut seen = Vec::new();
    for row in run.rows.iter().filter(|r| !r.is_skipped()) {
        let at = (row.get(THREADS).map(|t| t.to_string()).unwrap_or_default(), row.text(PLACEMENT).unwrap_or("?"));
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

/// The longest drain after the stop, and whether the lock collapsed (also said on stderr).
fn add_drain(row: &mut Row, lock: &LockChoice, at: &At, t: &Totals) {
    row.set(DRAIN_MAX_MS, t.max_drain_s * 1e3);
    if t.collapsed {
        row.set(COLLAPSED, true);
        eprintln!(
            "note: {} collapsed at {} threads: its threads took {:.0} ms to finish one more acquisition each after the stop; not repeated further",
            lock.name(),
            at.threads,
            t.max_drain_s * 1e3
        );
    }
}

/// Acquisitions per thread and per group, and how evenly they were shared.
fn add_counts(row: &mut Row, groups: &[Group], cpus: &[usize], t: &Totals) {
    row.set(PER_THREAD, &t.per_thread);
    row.set("per_group", per_group(groups, cpus, &t.per_thread));
    if let Some(ratio) = group_max_min_ratio(groups, cpus, &t.per_thread) {
        row.set("group_max_min_ratio", ratio);
    }
    row.set(JAIN, mean(&t.jain));
    row.set("jain_min", t.jain.iter().copied().fold(f64::INFINITY, f64::min));
    row.set("rsd_pct", mean(&t.rsd_pct));
    row.set(CPU_BUSY_PCT, mean(&t.cpu_busy_pct));
    row.set(JAIN_CPU_TIME, mean(&t.jain_cpu_time));
}

/// The fairness of the same threads with no lock, measured in the same rounds.
fn add_no_lock(row: &mut Row, t: &Totals) {
    if let Some(s) = Summary::of(&t.jain) {
        row.set(JAIN_NO_LOCK, s.mean);
        row.set("jain_no_lock_ci95", s.ci95);
        row.set("jain_no_lock_min", t.jain.iter().copied().fold(f64::INFINITY, f64::min));
    }
}

/// How many different CPUs are in `cpus`.
fn distinct_cpus(cpus: &[usize]) -> usize {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    sorted.len()
}

/// Time inside `lock()` and time holding the lock, in nanoseconds.
fn add_waits(row: &mut Row, clock: &Clock, t: &Totals) {
    let ns = |ticks: f64| clock.ns(ticks);
    row.set("mean_wait_ns", t.wait.mean().map(ns));
    row.set("p99_wait_ns", t.wait.percentile(99.0).map(|v| ns(v as f64)));
    row.set("max_wait_ns", t.wait.max().map(|v| ns(v as f64)));
    row.set("mean_hold_ns", t.hold.mean().map(ns));
    row.set("max_hold_ns", t.hold.max().map(|v| ns(v as f64)));
    // The longest wait and hold of a repetition, as a mean over repetitions with its interval,
    // and their ratio per repetition: figures a rerun can be compared with.
    let in_ns = |ticks: &[f64]| Summary::of(&ticks.iter().map(|&t| ns(t)).collect::<Vec<_>>());
    for (key, ticks) in [("rep_max_wait", &t.rep_max_wait), ("rep_max_hold", &t.rep_max_hold)] {
        if let Some(s) = in_ns(ticks) {
            row.set(&format!("{key}_ns"), s.mean);
            row.set(&format!("{key}_ci95_ns"), s.ci95);
        }
    }
    let ratios: Vec<f64> =
        t.rep_max_wait.iter().zip(&t.rep_max_hold).filter(|(_, &hold)| hold > 0.0).map(|(w, h)| w / h).collect();
    if let Some(s) = Summary::of(&ratios) {
        row.set("rep_max_wait_over_hold_x", s.mean);
        row.set("rep_max_wait_over_hold_ci95_x", s.ci95);
    }
}

/// How often the lock changed threads: the share of acquisitions that took it from another
/// thread, each one at least a transfer of the lock's line and the shared lines to a new
/// cache. A round-robin lock hands over at nearly every acquisition; a barging lock whose
/// releaser takes it back seldom does.
fn add_handovers(row: &mut Row, t: &Totals) {
    if let Some(s) = Summary::of(&t.handovers_pct) {
        row.set(HANDOVERS_PCT, s.mean);
        row.set("handovers_ci95_pct", s.ci95);
    }
}

/// Updates lost to a mutual-exclusion failure (a warning on stderr when there are any).
fn add_lost_updates(row: &mut Row, lock: &LockChoice, at: &At, t: &Totals) {
    row.set("lost_updates", t.lost_updates);
    if t.lost_updates > 0 {
        eprintln!(
            "warning: {} lost {} updates at {} threads: two threads were inside its critical section at once",
            lock.name(),
            t.lost_updates,
            at.threads
        );
    }
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
        for row in run.rows.iter().filter(|r| !r.is_skipped()) {
            let groups = row.get("per_group").and_then(|g| g.as_array()).cloned().unwrap_or_default();
            let parts: Vec<String> = groups
                .iter()
                .map(|g| format!("{}: {}", g["group"].as_str().unwrap_or("?"), g["acquisitions"]))
                .collect();
            out.push_str(&format!(
                "  {:<16} {:>4} threads  {}\n",
                row.text(LOCK).unwrap_or("?"),
                row.get(THREADS).map(|t| t.to_string()).unwrap_or_default(),
                parts.join("  ")
            ));
        }
        out.push_str(&per_configuration(
            run,
            "one-way cache-line transfer (ping-pong), just before and just after the locks ran:",
            |row| {
                let (pair, before, after) =
                    (row.text(LINE_TRANSFER_CPUS)?, row.number(TRANSFER_BEFORE_NS)?, row.number(TRANSFER_AFTER_NS)?);
                Some(format!("CPUs {pair}: {before:.0} ns before, {after:.0} ns after{}", discarded(row)))
            },
        ));
        out.push_str(&per_configuration(
            run,
            "Jain's index with no lock (the same threads and work, the scheduler alone, in the same rounds):",
            |row| {
                let (jain, lowest) = (row.number(JAIN_NO_LOCK)?, row.number("jain_no_lock_min")?);
                Some(format!("{jain:.3} (lowest window {lowest:.3})"))
            },
        ));
        if let Some(floor) = run.rows.iter().find_map(|r| r.number(UNCONTENDED_FLOOR_NS)) {
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
        let progress = lab.progress("contention", 1 + (plan.placements.len() * plan.threads.len()) as u64);

        // Table 3: one thread, no contention.
        progress.step("uncontended lock/unlock");
        let instances: Vec<LockBox> = available
            .iter()
            .map(|l| LockBox::new(l.entry).map_err(|e| LabError::failed(e.to_string())))
            .collect::<Result<_, _>>()?;
        let uncontended = measure_uncontended(&instances, &plan.rule, &progress, lab)?;
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
                        measure_contended(&available, &instances, &setting, &plan.rule, &progress)
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
        finish(&progress, run, rows, started)
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

const FAIR_UNCONTENDED: Claim = Claim {
    id: "003-fairlock-uncontended-cost",
    seed: "003",
    source: "§6.2, Table 3",
    claim: "uncontended, the fairlock costs about twice a spinlock",
    paper: "5 910 851 µs against 2 937 928 µs for 10^8 lock/unlock pairs by one thread (2.01x)",
};

const FAIR_THROUGHPUT: Claim = Claim {
    id: "003-fairlock-throughput",
    seed: "003",
    source: "§6.2, Fig. 8",
    claim: "under contention the fairlock keeps most of a spinlock's throughput",
    paper: "64% of the spinlock's throughput on average, 2 to 8 threads pinned one per CPU (2-quad 8-way NUMA-Q)",
};

const SPINLOCK_FAVOURS_NODE: Claim = Claim {
    id: "003-spinlock-favours-node",
    seed: "003",
    source: "§6.1, Table 1",
    claim: "a spinlock favours the CPUs of one node",
    paper: "quad 0's two threads acquired it 30 times as often as quad 1's (4 threads, two per quad; 4x with 8)",
};

const MAX_WAIT_RATIO: Claim = Claim {
    id: "003-max-wait-spinlock-vs-fairlock",
    seed: "003",
    source: "§6.3, Table 4",
    claim: "a spinlock's longest wait is far longer than the fairlock's",
    paper: "two thousand times longer (the kernel's runqueue_lock under the Reflex benchmark, lockmeter)",
};

const FAIR_WAIT_VS_HOLD: Claim = Claim {
    id: "003-fairlock-max-wait-vs-hold",
    seed: "003",
    source: "§6.3",
    claim: "the fairlock's longest wait stays a small multiple of its longest hold",
    paper: "a little more than three times the longest hold (runqueue_lock, Reflex)",
};

/// The spinlock seed 003 measured against (Linux's spinlock: test and test-and-set).
const SPINLOCK: &str = "ttas:spin";

/// Whether `lock` names seed 003's fairlock: a `fair:` registry entry that hands over in order.
fn is_seed_fairlock(lock: &str) -> bool {
    lock.starts_with("fair:") && spinlab::registry::lock_info(lock).is_ok_and(|entry| entry.fair)
}

/// One contention run, read at one thread per CPU (every CPU contending, as in seed 003's
/// measurements).
struct OnePerCpu<'a> {
    run: Option<&'a Run>,
    threads: String,
}

impl<'a> OnePerCpu<'a> {
    /// The run with the shortest (`longest == false`) critical section that has work in it
    /// (an empty one only where no other was run), or the longest.
    fn pick(ctx: &Context<'a>, longest: bool) -> OnePerCpu<'a> {
        let runs = ctx.runs_of("contention");
        let run = if longest {
            runs.iter().max_by(|a, b| cs_ns(a).total_cmp(&cs_ns(b))).copied()
        } else {
            let Sections { empty, shortest, .. } = sections(&runs);
            shortest.or(empty)
        };
        OnePerCpu { run, threads: ctx.cpus.to_string() }
    }

    fn row(&self, lock: &str) -> Option<&'a Row> {
        self.run?.rows.iter().find(|r| {
            !r.is_skipped() && r.text(LOCK) == Some(lock) && value_string(r, THREADS).as_deref() == Some(&self.threads)
        })
    }

    /// Seed 003's fairlock: the first `fair:POLICY` lock measured that hands the lock over in
    /// round-robin order (`fair:spin` in the report). Over a policy whose waiters give their
    /// CPU away (one that may sleep, or `yield`) the registry builds the fair lock as a gate in
    /// front of a word that running threads may take (`lock::Gated`): a different lock, with
    /// a different cost and fairness, so it does not stand for the seed's.
    fn fairlock(&self) -> Option<&'a Row> {
        let name = self.run?.rows.iter().filter_map(|r| r.text(LOCK)).find(|l| is_seed_fairlock(l))?;
        self.row(name)
    }

    /// Why no fairlock figure can be read: the run is missing, or it measured no lock that is
    /// seed 003's fairlock (only gated fair locks, say).
    fn no_fairlock(&self, ctx: &Context<'_>) -> Judged {
        let Some(run) = self.run else {
            return Judged::NotMeasured(missing_reason(ctx, "contention"));
        };
        let gated = run.rows.iter().filter_map(|r| r.text(LOCK)).find(|l| l.starts_with("fair:"));
        let mut why = "not measured: the contention run has no lock that hands over as seed 003's fairlock does \
                       (fair:spin, or fair over another spinning policy)"
            .to_string();
        if let Some(first) = gated {
            why.push_str(&format!(
                "; {first} is the fair lock as a gate in front of a word that running threads may take, another lock"
            ));
        }
        Judged::NotMeasured(why)
    }

    fn words(&self, figure: &str) -> String {
        let ns = self.run.map_or(0.0, cs_ns);
        format!(
            "contention, {SPINLOCK} and the fairlock, {} threads (one per CPU), {}: {figure}",
            self.threads,
            section_words(ns)
        )
    }
}

/// `key` of the fairlock over the spinlock's (or the spinlock's over the fairlock's).
fn fair_vs_spin(
    ctx: &Context<'_>,
    claim: &Claim,
    at: &OnePerCpu<'_>,
    key: &str,
    fair_over_spin: bool,
    range: (f64, f64),
    reason: &str,
) -> Finding {
    let rows = at.words(key);
    let Some(fair) = at.fairlock() else {
        return Finding::without(claim, &rows, at.no_fairlock(ctx));
    };
    let Some(spin) = at.row(SPINLOCK) else {
        return Finding::without(claim, &rows, Judged::NotMeasured(missing_reason(ctx, "contention")));
    };
    let (Some(f), Some(s)) = (Estimate::of(fair, key), Estimate::of(spin, key)) else {
        return Finding::without(claim, &rows, Judged::NotMeasured(missing_reason(ctx, "contention")));
    };
    let Some(here) = (if fair_over_spin { f.ratio(&s) } else { s.ratio(&f) }) else {
        return Finding::without(claim, &rows, Judged::NotMeasured(format!("a {key} of zero")));
    };
    let detail = format!("{} {}, {SPINLOCK} {}", fair.text(LOCK).unwrap_or("fair"), words(&f, ""), words(&s, ""));
    Finding::judged(claim, ctx, "contention", Observed { here, unit: "x", detail, rows }, range, reason).read_from(fair)
}

/// The uncontended floor measured in the same rounds as the fairlock's uncontended pair:
/// uncontended costs follow what an atomic costs on this machine at that time.
fn uncontended_floor(at: &OnePerCpu<'_>) -> Option<MachineState> {
    let estimate = Estimate::of(at.fairlock()?, UNCONTENDED_FLOOR_NS)?;
    Some(MachineState { name: "uncontended floor", unit: "ns", estimate })
}

/// The spinlock's busiest group of CPUs over its idlest, where the groups are NUMA nodes.
fn node_favoured(ctx: &Context<'_>, at: &OnePerCpu<'_>) -> Finding {
    let rows = at.words("group_max_min_ratio of the spinlock, threads grouped by node");
    let by_node = at.run.and_then(|r| r.params.get("groups_by")).and_then(|v| v.as_str()) == Some("node");
    if at.run.is_some() && !by_node {
        let why = "one NUMA node: there is no second node to be favoured over".to_string();
        return Finding::without(&SPINLOCK_FAVOURS_NODE, &rows, Judged::CannotTest(why));
    }
    let Some((spin, value)) = at.row(SPINLOCK).and_then(|r| Some((r, r.number("group_max_min_ratio")?))) else {
        return Finding::without(&SPINLOCK_FAVOURS_NODE, &rows, Judged::NotMeasured(missing_reason(ctx, "contention")));
    };
    let here = Estimate { value, ci95: 0.0 };
    let reason = "today's interconnects hand a line to a remote node at a smaller multiple of a local hand-off";
    let observed = Observed { here, unit: "x", detail: String::new(), rows };
    Finding::judged(&SPINLOCK_FAVOURS_NODE, ctx, "contention", observed, (10.0, f64::INFINITY), reason).read_from(spin)
}

/// The fairlock's longest wait over its longest hold.
fn fair_wait_vs_hold(ctx: &Context<'_>, at: &OnePerCpu<'_>) -> Finding {
    let rows =
        at.words("rep_max_wait_over_hold_x of the fairlock (each repetition's longest wait over its longest hold)");
    let Some(fair) = at.fairlock() else {
        return Finding::without(&FAIR_WAIT_VS_HOLD, &rows, at.no_fairlock(ctx));
    };
    let (Some(here), Some(wait), Some(hold)) = (
        Estimate::of(fair, "rep_max_wait_over_hold_x"),
        fair.number("rep_max_wait_ns"),
        fair.number("rep_max_hold_ns"),
    ) else {
        return Finding::without(&FAIR_WAIT_VS_HOLD, &rows, Judged::NotMeasured(missing_reason(ctx, "contention")));
    };
    let detail =
        format!("longest wait {}, longest hold {} per repetition (means)", duration_words(wait), duration_words(hold));
    let reason = "a thread preempted while it holds or waits for the lock (other work on these CPUs, or more \
                  threads than CPUs) sets both maxima, not the hand-over order";
    Finding::judged(
        &FAIR_WAIT_VS_HOLD,
        ctx,
        "contention",
        Observed { here, unit: "x", detail, rows },
        (1.5, 6.0),
        reason,
    )
    .read_from(fair)
}

/// Seed 003's claims: cost and throughput from the run with the shortest critical section,
/// waits and holds from the one with the longest.
fn fairlock_claims(ctx: &Context<'_>) -> Vec<Finding> {
    let short = OnePerCpu::pick(ctx, false);
    let long = OnePerCpu::pick(ctx, true);
    vec![
        fair_vs_spin(
            ctx,
            &FAIR_UNCONTENDED,
            &short,
            UNCONTENDED_NS,
            true,
            (1.5, 3.0),
            "the fairlock releases with a read-modify-write where the spinlock stores, so the ratio is what a core charges for one such atomic against a plain store",
        )
        .beside(uncontended_floor(&short)),
        fair_vs_spin(
            ctx,
            &FAIR_THROUGHPUT,
            &short,
            THROUGHPUT_OPS_S,
            true,
            (0.45, 0.9),
            "with few CPUs the round-robin hand-over moves the line between as few caches as the spinlock's",
        ),
        node_favoured(ctx, &short),
        fair_vs_spin(
            ctx,
            &MAX_WAIT_RATIO,
            &long,
            "rep_max_wait_ns",
            false,
            (200.0, 20000.0),
            "with one thread per CPU on few CPUs a spinlock has few rivals to lose to; preemption sets both maxima",
        ),
        fair_wait_vs_hold(ctx, &long),
    ]
}

fn rep_label(rep: Rep) -> String {
    match rep {
        Rep::Warmup => "warm-up".to_string(),
        Rep::Measured(n) => format!("repetition {}", n + 1),
    }
}

fn groups_by_label(topology: &Topology, by: GroupBy) -> &'static str {
    match by {
        GroupBy::Auto if topology.nodes.len() > 1 => "node",
        GroupBy::Auto | GroupBy::Halves => "halves of the CPU list",
        GroupBy::Node => "node",
        GroupBy::Llc if topology.llcs.is_empty() => "halves of the CPU list",
        GroupBy::Llc => "llc",
    }
}

fn per_group(groups: &[Group], cpus: &[usize], per_thread: &[u64]) -> serde_json::Value {
    groups
        .iter()
        .map(|g| {
            let members: Vec<usize> = (0..cpus.len()).filter(|&i| g.cpus.contains(&cpus[i])).collect();
            json!({
                "group": g.label,
                "cpus": format_cpu_list(&g.cpus),
                "threads": members.len(),
                "acquisitions": members.iter().map(|&i| per_thread[i]).sum::<u64>(),
            })
        })
        .collect()
}

/// The busiest group's acquisitions over the idlest's, among groups that have threads (seed
/// 003's "favours Quad 0 30 times over Quad 1"); `None` with fewer than two such groups.
fn group_max_min_ratio(groups: &[Group], cpus: &[usize], per_thread: &[u64]) -> Option<f64> {
    let occupied: Vec<u64> = groups
        .iter()
        .filter(|g| cpus.iter().any(|c| g.cpus.contains(c)))
        .map(|g| cpus.iter().zip(per_thread).filter(|(c, _)| g.cpus.contains(c)).map(|(_, n)| n).sum())
        .collect();
    if occupied.len() < 2 {
        return None;
    }
    let (max, min) = (*occupied.iter().max()?, *occupied.iter().min()?);
    Some(if min == 0 { f64::INFINITY } else { max as f64 / min as f64 })
}

/// Ratios within one configuration: to the best reference lock and to the baseline lock.
/// `rounds` holds each row's throughput per measured round (empty for a skipped lock), in the
/// rows' order: a ratio's interval comes from the ratios within each round.
fn add_ratios(rows: &mut [Row], rounds: &[&[f64]], baseline: &str) {
    let best_ref = rows
        .iter()
        .filter(|r| r.text(ORIGIN) == Some("reference"))
        .filter_map(|r| r.number(THROUGHPUT_OPS_S))
        .fold(f64::NAN, f64::max);
    let rounds_of = |found: Option<usize>| found.map_or(&[][..], |i| rounds[i]);
    let best_ref_rounds = rounds_of(
        rows.iter().position(|r| r.text(ORIGIN) == Some("reference") && r.number(THROUGHPUT_OPS_S) == Some(best_ref)),
    );
    let base_rounds = rounds_of(rows.iter().position(|r| r.text(LOCK) == Some(baseline)));
    let best_ref_uncontended = rows
        .iter()
        .filter(|r| r.text(ORIGIN) == Some("reference"))
        .filter_map(|r| r.number(UNCONTENDED_NS))
        .fold(f64::NAN, f64::min);
    let base = rows.iter().find(|r| r.text(LOCK) == Some(baseline)).and_then(|r| r.number(THROUGHPUT_OPS_S));
    add_ratios_to_each_reference(rows, rounds, THROUGHPUT_OPS_S, "throughput");
    for (row, own) in rows.iter_mut().zip(rounds) {
        let Some(t) = row.number(THROUGHPUT_OPS_S) else { continue };
        if best_ref.is_finite() && best_ref > 0.0 {
            row.set("throughput_vs_best_reference", t / best_ref);
            row.set("throughput_vs_best_reference_ci95", paired_ratio_ci95(own, best_ref_rounds));
        }
        if let Some(b) = base.filter(|b| *b > 0.0) {
            row.set("throughput_vs_baseline", t / b);
            row.set("throughput_vs_baseline_ci95", paired_ratio_ci95(own, base_rounds));
        }
        if let Some(u) = row.number(UNCONTENDED_NS) {
            if best_ref_uncontended.is_finite() && best_ref_uncontended > 0.0 {
                row.set("uncontended_vs_best_reference", u / best_ref_uncontended);
            }
        }
    }
}

/// The critical section of the report's second contention run, in nanoseconds: long enough
/// that the recommendation has a measured answer for long critical sections too.
pub const LONG_CS_NS: u64 = 10_000;

/// A contention run's critical section (`--cs-ns`), in nanoseconds.
fn cs_ns(run: &Run) -> f64 {
    run.params.get("cs_ns").and_then(|v| v.as_f64()).unwrap_or(0.0)
}

/// The contention runs the recommendation and the scorecard read, by critical section.
struct Sections<'a> {
    /// The first run with nothing in the critical section but its shared lines.
    empty: Option<&'a Run>,
    /// The run with the shortest critical section that has work in it.
    shortest: Option<&'a Run>,
    /// The run with the longest critical section of [`LONG_SECTION_NS`] or more, unless it
    /// is `shortest` itself.
    longest: Option<&'a Run>,
}

/// Where a critical section counts as long for the recommendation.
const LONG_SECTION_NS: f64 = 1000.0;

fn sections<'a>(runs: &[&'a Run]) -> Sections<'a> {
    let by_cs = |a: &&&Run, b: &&&Run| cs_ns(a).total_cmp(&cs_ns(b));
    let empty = runs.iter().find(|r| cs_ns(r) == 0.0).copied();
    let shortest = runs.iter().filter(|r| cs_ns(r) > 0.0).min_by(by_cs).copied();
    let longest = runs
        .iter()
        .filter(|r| cs_ns(r) >= LONG_SECTION_NS)
        .max_by(by_cs)
        .copied()
        .filter(|l| shortest.is_none_or(|s| !std::ptr::eq(s, *l)));
    Sections { empty, shortest, longest }
}

/// Throughput vs threads per lock, and (for the first run) per-thread fairness bars.
fn throughput_chart(ctx: &Context<'_>, run: &Run, fairness: bool) -> Vec<Result<Panel, String>> {
    let rows = measured(run.rows.iter());
    let cs_ns = run.params.get("cs_ns").and_then(|v| v.as_f64());
    let cs = cs_ns.map_or(String::new(), |ns| format!(", {}", section_words(ns)));
    let placements = distinct(&rows, PLACEMENT);
    let mut series = Vec::new();
    let mut threads: Vec<f64> = Vec::new();
    for (i, lock) in distinct(&rows, LOCK).iter().enumerate() {
        for placement in &placements {
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| {
                    r.text(LOCK) == Some(lock.as_str())
                        && value_string(r, PLACEMENT).as_deref() == Some(placement.as_str())
                })
                .filter_map(|r| Some((r.number(THREADS)?, r.number(THROUGHPUT_OPS_S)?)))
                .collect();
            if points.is_empty() {
                continue;
            }
            threads.extend(points.iter().map(|p| p.0));
            let name = if placements.len() > 1 { format!("{lock} ({placement})") } else { lock.clone() };
            series.push(Series { name, points, color: i });
        }
    }
    let mut out = Vec::new();
    if series.is_empty() {
        return out;
    }
    let x = Axis::log_at("threads (log scale)", &threads);
    let y = Axis::numeric(
        "throughput (acquisitions/s, all threads, log scale)",
        Scale::Log,
        series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
        false,
    );
    let band = Band { from: ctx.cpus as f64, label: format!("oversubscribed: threads > {} CPUs", ctx.cpus) };
    let collapses = collapse_words(&rows);
    out.push(plot::lines(&format!("Throughput vs threads{cs}"), &x, &y, &series, Some(&band)).map(|svg| Panel {
        svg,
        caption: format!(
            "Lock acquisitions per second of all threads together, per lock and thread count{cs}; the shaded region \
             has more threads than the {} usable CPUs, where a spinning waiter burns the time slice its lock holder \
             needs.{collapses}",
            ctx.cpus
        ),
    }));
    if fairness {
        out.extend(fairness_panel(ctx, &rows));
    }
    out
}

/// The caption's sentence on the rows marked `collapsed`, or nothing where none was.
fn collapse_words(rows: &[&Row]) -> String {
    let mut collapsed: Vec<(String, Vec<String>)> = Vec::new();
    for row in rows.iter().filter(|r| r.get(COLLAPSED).and_then(|v| v.as_bool()) == Some(true)) {
        let (Some(lock), Some(threads)) = (row.text(LOCK), value_string(row, THREADS)) else { continue };
        let threads = match row.number(DRAIN_MAX_MS) {
            Some(ms) => format!("{threads} ({} ms)", number(ms)),
            None => threads,
        };
        match collapsed.iter_mut().find(|(l, _)| l == lock) {
            Some((_, counts)) => counts.push(threads),
            None => collapsed.push((lock.to_string(), vec![threads])),
        }
    }
    if collapsed.is_empty() {
        return String::new();
    }
    let each: Vec<String> =
        collapsed.iter().map(|(lock, counts)| format!("{lock} at {} threads", counts.join(", "))).collect();
    format!(
        " Collapsed, and so not repeated further: {}. A lock that hands over in order, to a waiter that may \
         not be running, serves its threads one time slice at a time once they outnumber the CPUs: after a \
         window closed, its threads took longer than {} ms (or the window, where that is longer) to finish one \
         more acquisition each (the longest such drain in brackets).",
        each.join("; "),
        COLLAPSE_DRAIN.as_millis()
    )
}

fn fairness_panel(ctx: &Context<'_>, rows: &[&Row]) -> Option<Result<Panel, String>> {
    let counts: Vec<usize> = {
        let mut c: Vec<usize> = rows.iter().filter_map(|r| r.number(THREADS)).map(|t| t as usize).collect();
        c.sort_unstable();
        c.dedup();
        c
    };
    // Enough threads to show an imbalance, few enough bars to read.
    let wanted = [2 * ctx.cpus, ctx.cpus];
    let n = wanted
        .iter()
        .copied()
        .find(|w| (2..=8).contains(w) && counts.contains(w))
        .or_else(|| counts.iter().rev().copied().find(|c| (2..=8).contains(c)))?;
    let at: Vec<&Row> =
        rows.iter().copied().filter(|r| r.number(THREADS) == Some(n as f64) && r.get(PER_THREAD).is_some()).collect();
    if at.is_empty() {
        return None;
    }
    let mut categories = Vec::new();
    let mut groups: Vec<(String, Vec<Option<f64>>)> =
        (0..n).map(|t| (format!("thread {}", t + 1), Vec::new())).collect();
    let mut values = Vec::new();
    for row in &at {
        let per: Vec<f64> = row
            .get(PER_THREAD)
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
            .unwrap_or_default();
        let mean = per.iter().sum::<f64>() / per.len().max(1) as f64;
        let jain = row.number(JAIN).map_or(String::new(), |j| format!(" J={j:.2}"));
        categories.push(format!("{}{jain}", row.text(LOCK).unwrap_or("?")));
        for (t, group) in groups.iter_mut().enumerate() {
            let share = per.get(t).filter(|_| mean > 0.0).map(|c| c / mean);
            values.extend(share);
            group.1.push(share);
        }
    }
    let y = Axis::numeric("acquisitions / fair share", Scale::Linear, values.into_iter().chain([1.0]), true);
    let no_lock = at.iter().find_map(|r| r.number(JAIN_NO_LOCK)).map_or(String::new(), |j| {
        format!(" The same threads running the same work with no lock (the scheduler alone) had J={j:.2}.")
    });
    Some(
        plot::grouped_bars(
            &format!("Per-thread fairness at {n} threads"),
            &categories,
            "lock (J = Jain's index: 1 is even)",
            &y,
            &groups,
            Some((1.0, "fair share")),
        )
        .map(|svg| Panel {
            svg,
            caption: format!(
                "Each thread's acquisitions at {n} threads as a multiple of the even share (1.0): a bar far above \
                 or below the line is a thread the lock favoured or starved; J is Jain's index.{no_lock}"
            ),
        }),
    )
}

/// The best lock per critical-section length, with threads within and above the CPUs.
fn best_locks(ctx: &Context<'_>) -> Vec<Advice> {
    let mut out = Vec::new();
    let contention: Vec<&Run> = ctx.runs_of("contention");
    let Sections { empty, shortest, longest } = sections(&contention);
    let why_no_contention = missing_reason(ctx, "contention");
    let lengths = [
        ("empty", empty, "not measured: no contention run with an empty critical section (--cs-ns 0)"),
        ("short", shortest, "not measured: no contention run with work in its critical section (--cs-ns above 0)"),
        ("long", longest, "not measured: no contention run with a critical section of 1 µs or more"),
    ];
    for (length, run, not_run) in lengths {
        for oversubscribed in [false, true] {
            let (threads, brief) = if oversubscribed {
                ("threads > CPUs (oversubscribed)", "> CPUs")
            } else {
                ("threads <= CPUs", "<= CPUs")
            };
            let situation = format!("{length} critical section, {threads}");
            let brief = format!("{length} cs, {brief}");
            out.push(match run {
                None if !contention.is_empty() => Advice::missing(&situation, &brief, not_run.to_string()),
                None => Advice::missing(&situation, &brief, why_no_contention.clone()),
                Some(run) => best_lock(ctx, run, (&situation, &brief), oversubscribed),
            });
        }
    }
    out
}

/// The floor's `yield-forfeit` in the document, if it was measured: its run, and the figure
/// (ns) with its interval.
fn yield_forfeit<'a>(ctx: &Context<'a>) -> Option<(&'a Run, Estimate)> {
    ctx.runs_of("floor").into_iter().find_map(|run| {
        let row = run.rows.iter().find(|row| row.text(MEASURE) == Some(floor::YIELD_FORFEIT))?;
        Some((run, Estimate::of(row, floor::NS)?))
    })
}

/// The reference locks a tie is resolved towards, in order: what people already use.
const PREFERRED_REFERENCES: [&str; 3] = ["std", "parking_lot", "pthread"];

fn is_reference(row: &Row) -> bool {
    row.text(ORIGIN) == Some("reference")
}

/// Half-width of the 95% interval of a row's throughput (0 when unknown).
fn ci(row: &Row) -> f64 {
    row.number(THROUGHPUT_CI95_OPS_S).unwrap_or(0.0)
}

/// The throughput of `row` with its interval.
fn throughput(row: &Row) -> Estimate {
    Estimate::of(row, THROUGHPUT_OPS_S).unwrap_or(Estimate { value: 0.0, ci95: 0.0 })
}

/// How much faster `best` measured than `other`: the ratio of their rounds, paired, where the
/// row carries it (`throughput_vs_REFERENCE`, which leaves out the drift the rounds share),
/// else the ratio of the two means with both intervals.
fn margin_over(best: &Row, other: &Row, tied: bool) -> Option<Margin> {
    let paired = other.text(LOCK).filter(|_| is_reference(other)).and_then(|name| {
        let key = format!("throughput_vs_{name}");
        Some(Estimate { value: best.number(&key)?, ci95: best.number(&format!("{key}_ci95"))? })
    });
    match paired {
        Some(by) if by.value.is_finite() && by.ci95.is_finite() => Some(Margin { by, compared: Compared::Times, tied }),
        _ => Margin::higher(&throughput(best), &throughput(other), tied),
    }
}

fn best_lock(ctx: &Context<'_>, run: &Run, (situation, brief): (&str, &str), oversubscribed: bool) -> Advice {
    let rows: Vec<&Row> = run.rows.iter().filter(|r| !r.is_skipped() && r.number(THROUGHPUT_OPS_S).is_some()).collect();
    let counts: Vec<f64> = {
        let mut c: Vec<f64> = rows.iter().filter_map(|r| r.number(THREADS)).collect();
        c.sort_by(f64::total_cmp);
        c.dedup();
        c
    };
    let cpus = ctx.cpus as f64;
    // Threads <= CPUs: the most threads that still fit (contended: 2 or more). Oversubscribed:
    // twice the CPUs where measured, else the least oversubscription measured.
    let n = if oversubscribed {
        counts.iter().copied().find(|&t| t == 2.0 * cpus).or_else(|| counts.iter().copied().find(|&t| t > cpus))
    } else {
        counts.iter().rev().copied().find(|&t| t <= cpus && t >= 2.0)
    };
    let Some(n) = n else {
        return Advice::missing(
            situation,
            brief,
            if oversubscribed {
                format!("not measured: no contention run had more threads than the {} CPUs", ctx.cpus)
            } else {
                format!("not measured: with {} usable CPU(s) no contended thread count fits within the CPUs", ctx.cpus)
            },
        );
    };
    // In the order the run measured them (its `--locks`), then sorted, fastest first.
    let listed: Vec<&Row> = rows.iter().copied().filter(|r| r.number(THREADS) == Some(n)).collect();
    let mut at = listed.clone();
    at.sort_by(|a, b| b.number(THROUGHPUT_OPS_S).unwrap_or(0.0).total_cmp(&a.number(THROUGHPUT_OPS_S).unwrap_or(0.0)));
    let Some(&fastest) = at.first() else {
        return Advice::missing(situation, brief, "not measured".to_string());
    };
    // Locks whose interval reaches the fastest's are a tie on this run; among them the choice
    // follows a fixed order, so that reruns that differ only by noise name the same lock:
    // spinlab's default, then the reference locks people already use, then the first lock with
    // a fairness guarantee (its `bound` is not "none": equal speed, and no starvation) in the
    // order the run measured them, then the first in that order. Never the fastest of a tie:
    // within the intervals, which one that is is noise.
    let fastest_t = fastest.number(THROUGHPUT_OPS_S).unwrap_or(0.0);
    let ties = |r: &&Row| fastest_t - ci(fastest) <= r.number(THROUGHPUT_OPS_S).unwrap_or(0.0) + ci(r);
    // The tied locks in the run's order (the order the choice and the line's words follow).
    let tied: Vec<&Row> = listed.iter().copied().filter(ties).collect();
    let named = |name: &str| tied.iter().copied().find(|r| r.text(LOCK) == Some(name));
    let guaranteed = || tied.iter().copied().find(|r| r.text("bound").is_some_and(|b| b != "none"));
    let best = std::iter::once(select::DEFAULT_LOCK)
        .chain(PREFERRED_REFERENCES)
        .find_map(named)
        .or_else(guaranteed)
        .or_else(|| tied.first().copied())
        .unwrap_or(fastest);
    let name = best.text(LOCK).unwrap_or("?");
    let t = best.number(THROUGHPUT_OPS_S).unwrap_or(0.0);
    let mut why = format!("{} acquisitions/s at {n} threads", number(t));
    match run.params.get("cs_ns").and_then(|v| v.as_f64()) {
        Some(0.0) => why.push_str(" with an empty critical section"),
        Some(ns) => why.push_str(&format!(" with a {} critical section", duration_words(ns))),
        None => {}
    }
    if let Some(reference) = at.iter().find(|r| is_reference(r) && !std::ptr::eq(**r, best)) {
        let rt = reference.number(THROUGHPUT_OPS_S).unwrap_or(0.0);
        if rt > 0.0 {
            let which = if is_reference(best) { "the next reference lock" } else { "the best reference lock" };
            why.push_str(&format!(
                "; {:.2}x {which} ({}, {})",
                t / rt,
                reference.text(LOCK).unwrap_or("?"),
                number(rt)
            ));
        }
    } else if is_reference(best) {
        why.push_str("; no spinlab lock beat it");
    }
    // How evenly the choice served its threads, beside how evenly the scheduler alone shares
    // the CPUs out to the same threads: with more threads than CPUs no lock that serves the
    // running threads can be fairer than the latter.
    if let Some(jain) = best.number(JAIN) {
        why.push_str(&format!("; Jain {jain:.3} over its threads' acquisitions"));
        if let Some(alone) = best.number(JAIN_NO_LOCK) {
            why.push_str(&format!(" (the same threads with no lock: {alone:.3})"));
        }
    }
    // With more threads than CPUs, what a waiter's yield costs it here: where the kernel
    // charges a yielder the rest of its time slice, waiting that yields makes the threads' CPU
    // time, and their acquisitions with it, less even than the scheduler alone would
    // (docs/floor.md, `yield-forfeit`). The floor's load comes with the figure as a caveat; a
    // move of the line transfer does not bear on two threads sharing one CPU.
    let mut floor_caveat = None;
    if let Some((run, forfeit)) = oversubscribed.then(|| yield_forfeit(ctx)).flatten() {
        // Within its interval of zero, the figure says nothing was charged.
        let cost = if forfeit.low() > 0.0 {
            format!("{} of", duration_words(forfeit.value))
        } else {
            "no measurable".to_string()
        };
        why.push_str(&format!(
            "; each sched_yield here cost the yielding thread {cost} CPU time beside a busy one (floor: yield-forfeit)"
        ));
        floor_caveat = caveat::load_of(ctx, run);
    }
    let others: Vec<String> = tied
        .iter()
        .filter(|r| !std::ptr::eq(**r, best))
        .map(|r| format!("{} ({})", r.text(LOCK).unwrap_or("?"), number(r.number(THROUGHPUT_OPS_S).unwrap_or(0.0))))
        .collect();
    if !others.is_empty() {
        let rule = if std::ptr::eq(best, fastest) {
            String::new()
        } else {
            format!(
                ", and {name} comes first among tied locks (spinlab's default, then std, parking_lot, pthread, then \
                 the first with a fairness guarantee in the run's list of locks, then the first in that list)"
            )
        };
        why.push_str(&format!("; {} within the 95% intervals: a tie on this run{rule}", others.join(", ")));
    }
    if let Some(u) = best.number(UNCONTENDED_NS) {
        why.push_str(&format!("; {} ns per uncontended lock/unlock", number(u)));
    }
    // The runner-up: the fastest of the other locks, tied with the choice or not.
    let runner_up = at.iter().copied().find(|r| !std::ptr::eq(*r, best)).and_then(|other| {
        let margin = margin_over(best, other, tied.iter().any(|t| std::ptr::eq(*t, other)))?;
        let name = other.text(LOCK).unwrap_or("?").to_string();
        Some(RunnerUp { name, figure: Figure::new(throughput(other), Unit::Acquisitions, ""), margin })
    });
    let figure = Figure::new(throughput(best), Unit::Acquisitions, format!("at {n} threads"));
    let mut line = Advice::new(situation, brief, name.to_string(), why).chosen_by(figure, runner_up);
    line.caveats = caveat::of_row(ctx, run, best);
    line.caveats.extend(floor_caveat);
    line.transfers = best.transfers();
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 30 ms repetition on `cpus` with `cs_iterations` inside the lock and 10 outside.
    fn short_setting<'a>(cpus: &'a [usize], lines: &'a SharedLines, cs_iterations: u64) -> Setting<'a> {
        Setting {
            cpus,
            duration: Duration::from_millis(30),
            cs_iterations,
            ncs_iterations: 10,
            lines,
            overhead_ticks: 0,
        }
    }

    #[test]
    fn every_thread_but_the_first_to_acquire_counts_a_hand_over() {
        // Each thread that acquired at all took the lock from another at least once, except
        // the repetition's first holder; and no acquisition is more than one hand-over. Four
        // threads on the first CPU, so that the scheduler, not the lock, moves it between them.
        let lines = SharedLines::new(1);
        let cpus = [0; 4];
        let setting = short_setting(&cpus, &lines, 0);
        for name in ["ttas:spin", "ticket:spin-park", "std"] {
            let lock = LockBox::new(spinlab::registry::lock_info(name).unwrap()).unwrap();
            let r = contended_rep(Some(&lock), &setting).unwrap();
            // Every acquisition touched the line once: the ones the window counted and the
            // ones it did not, each thread's counted ones among those it made.
            let made: u64 = r.made_per_thread.iter().sum();
            assert_eq!(lines.total(), Some(made), "{name}");
            assert!(r.per_thread.iter().zip(&r.made_per_thread).all(|(counted, made)| counted <= made), "{name}");
            assert!(r.handovers <= r.made_handovers, "{name}");
            // Over everything the repetition made (a window opened mid-run may count a
            // thread's retakes and not the hand-over before them).
            let acquired = r.made_per_thread.iter().filter(|&&c| c > 0).count() as u64;
            assert!(
                r.made_handovers + 1 >= acquired,
                "{name}: {} hand-overs, {acquired} threads acquired",
                r.made_handovers
            );
            assert!(r.made_handovers <= made, "{name}: {} hand-overs in {made}", r.made_handovers);
            assert_eq!(r.lost_updates, 0, "{name}");
        }
        // One thread never hands over.
        let alone = Setting { cpus: &cpus[..1], ..setting };
        let lock = LockBox::new(spinlab::registry::lock_info("ttas:spin").unwrap()).unwrap();
        let r = contended_rep(Some(&lock), &alone).unwrap();
        assert!(r.per_thread[0] > 0);
        assert_eq!(r.handovers, 0);
    }

    #[test]
    fn with_no_lock_the_threads_run_the_same_work_and_touch_nothing() {
        let lines = SharedLines::new(1);
        let cpus = [0; 3];
        let r = contended_rep(None, &short_setting(&cpus, &lines, 5)).unwrap();
        assert_eq!(lines.total(), Some(0), "no lock, no critical section's lines");
        assert_eq!((r.lost_updates, r.handovers), (0, 0));
        assert!(r.per_thread.iter().sum::<u64>() > 0, "{:?}", r.per_thread);
        assert_eq!(r.per_thread_cpu_s.len(), 3);
        assert!(r.per_thread_cpu_s.iter().all(|&s| s >= 0.0), "{:?}", r.per_thread_cpu_s);
        // One CPU, shared: the threads' CPU time within the window fits in it.
        assert!(r.per_thread_cpu_s.iter().sum::<f64>() <= r.ran_s + 0.005, "{:?} in {}", r.per_thread_cpu_s, r.ran_s);
    }

    #[test]
    fn a_lock_below_the_uncontended_floor_is_flagged_and_one_above_is_not() {
        let floor = Summary::exact(2.5, 0.1);
        let below = |u: f64, ci: f64, floor: &Summary| {
            floor::below_floor(&Summary::exact(u, ci), floor, "cost", UNCONTENDED_SLACK)
        };
        assert!(below(1.0, 0.2, &floor).is_some_and(|why| why.starts_with("1.0 ns is below")));
        assert_eq!(below(5.0, 0.2, &floor), None);
        // Two percent below, with intervals far narrower: code placement, not a broken figure.
        assert_eq!(below(2.45, 0.001, &Summary::exact(2.5, 0.001)), None);
        let mut above = Row::new();
        add_uncontended_floor(&mut above, &Summary::exact(5.0, 0.2), Some(&floor));
        assert_eq!(above.number("uncontended_vs_floor"), Some(2.0));
        assert_eq!(above.number("uncontended_floor_ns"), Some(2.5));
        let mut no_floor = Row::new();
        add_uncontended_floor(&mut no_floor, &Summary::exact(1.0, 0.2), None);
        assert_eq!(no_floor.number("uncontended_vs_floor"), None);
    }

    #[test]
    fn the_chart_names_each_collapsed_lock_with_its_thread_counts_and_drains() {
        let row = |lock: &str, threads: u64, drain_ms: Option<f64>| {
            let mut row = Row::new().with(LOCK, lock).with(THREADS, threads);
            if let Some(ms) = drain_ms {
                row.set(DRAIN_MAX_MS, ms);
                row.set(COLLAPSED, true);
            }
            row
        };
        let rows = [
            row("ticket:spin", 4, Some(130.0)),
            row("default", 4, None),
            row("ticket:spin", 8, Some(420.0)),
            row("fair:spin", 16, Some(2500.0)),
            row("default", 16, None).with(COLLAPSED, false),
        ];
        let words = collapse_words(&rows.iter().collect::<Vec<_>>());
        assert!(
            words.contains("ticket:spin at 4 (130 ms), 8 (420 ms) threads; fair:spin at 16 (2500 ms) threads."),
            "{words}"
        );
        assert!(!words.contains("default"), "{words}");
        assert!(words.contains("longer than 100 ms"), "{words}");
        let calm = [row("default", 4, None), row("ticket:spin", 2, None)];
        assert_eq!(collapse_words(&calm.iter().collect::<Vec<_>>()), "");
    }

    /// Rounds in which the machine ran at half speed and then at full move both locks alike:
    /// the interval of their ratio comes from the ratio within each round, not from the drift.
    #[test]
    fn ratio_intervals_come_from_the_rounds_both_locks_ran_in() {
        let row = |lock: &str, origin: &str, rounds: &[f64]| {
            let s = Summary::of(rounds).unwrap();
            Row::new().with(LOCK, lock).with(ORIGIN, origin).summary("throughput", "ops_s", &s)
        };
        let std_rounds = [10.0, 20.0, 20.0, 10.0];
        let pl_rounds = std_rounds.map(|x| x * 0.9);
        let steady = std_rounds.map(|x| x * 0.99);
        let unsteady = [10.0, 20.0, 24.0, 8.0];
        let collapsed = [5.0, 10.0];
        let mut rows = vec![
            row("default", "spinlab", &steady),
            row("std", "reference", &std_rounds),
            row("parking_lot", "reference", &pl_rounds),
            row("ticket:spin", "spinlab", &collapsed),
            row("mcs:spin", "spinlab", &unsteady),
            Row::new().with(LOCK, "tpause").skipped("no WAITPKG"),
        ];
        let rounds: [&[f64]; 6] = [&steady, &std_rounds, &pl_rounds, &collapsed, &unsteady, &[]];
        add_ratios(&mut rows, &rounds, "ticket:spin");
        let vs_best = |i: usize| rows[i].number("throughput_vs_best_reference").unwrap();
        let ci = |i: usize, key: &str| rows[i].number(key);
        // std is the best reference (mean 15 against 13.5); the default is 0.99 of it in every
        // round, so its ratio has no spread although either throughput alone swings twofold.
        assert!((vs_best(0) - 0.99).abs() < 1e-9);
        assert!(ci(0, "throughput_vs_best_reference_ci95").unwrap() < 1e-9);
        assert_eq!(ci(1, "throughput_vs_best_reference_ci95"), Some(0.0));
        // Ratios 1.0, 1.0, 1.2, 0.8 round by round: an interval the drift alone would not give.
        let unsteady_ci = ci(4, "throughput_vs_best_reference_ci95").unwrap();
        let expected = Summary::of(&[1.0, 1.0, 1.2, 0.8]).unwrap().ci95.unwrap();
        assert!((unsteady_ci - expected).abs() < 1e-9, "{unsteady_ci} against {expected}");
        // A lock stopped after two rounds pairs with the other's first two: 0.5 of std in both,
        // and the default 1.98 of it in both (its later rounds have no partner). Paired from
        // the last rounds instead, they would spread from 0.25 to 1 and from 0.99 to 3.96.
        assert!(ci(3, "throughput_vs_best_reference_ci95").unwrap() < 1e-9);
        assert!(ci(0, "throughput_vs_baseline_ci95").unwrap() < 1e-9);
        assert_eq!(rows[5].number("throughput_vs_best_reference"), None);
        // Each reference on its own, from its own rounds: parking_lot is 0.9 of std in every
        // round, so the default is 1.1 of it, with no spread; the skipped lock gets none.
        assert!((ci(0, "throughput_vs_parking_lot").unwrap() - 1.1).abs() < 1e-9);
        assert!(ci(0, "throughput_vs_parking_lot_ci95").unwrap() < 1e-9);
        assert!((ci(0, "throughput_vs_std").unwrap() - 0.99).abs() < 1e-9);
        assert!((ci(2, "throughput_vs_std").unwrap() - 0.9).abs() < 1e-9);
        assert_eq!(ci(1, "throughput_vs_std"), Some(1.0));
        assert_eq!(rows[5].number("throughput_vs_std"), None);
    }
}
