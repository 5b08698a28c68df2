//! `spinlab run interference`: seed 000's experiment. An active thread runs one of 000's
//! workloads while N waiters wait, with one wait policy, on a lock the harness holds for the
//! whole measurement (000 §III.B: the worst case of a contended lock, every thread but one
//! blocked); its time is compared with the same work run in isolation. Reported per active
//! workload, policy, waiter count and placement: the slowdown, the isolated time, and the
//! waiters' re-read interval (000's responsiveness: the time between two reads of the lock).
//!
//! The isolated run and the co-run are measured as pairs, back to back (A B, then B A, after
//! one warm-up pair), and each pair's co-run is divided by the same pair's isolated run, so
//! drift in the machine's speed cancels in each ratio. The FAME rule watches that ratio.
//!
//! How the waiters wait: exactly as a thread blocked in the library's TTAS lock
//! (`ttas:POLICY`), whose contended path is `Wait::spin` on the lock word until it changes,
//! and, for a policy whose spin phase ends, marking the word "sleepers" and `Wait::sleep`.
//! The waiters run that loop on a word the harness holds at "locked", through the same
//! `Wait::spin`, with an `Episode` of their own: the episode counts the policy's loop
//! iterations (each one re-read of the word plus the policy's body) and the waiter reads the
//! count once the word changes, so the loop measured is the library's loop, with nothing
//! added to it. (The registry lock's word is private, so the harness cannot hold a registry
//! lock and read its waiters' episodes.) See docs/interference.md.

use super::driver::one_run;
use super::lab::Lab;
use super::moved::{around, discarded, mark, until_still, LINE_TRANSFER_CPUS};
use super::options::Common;
use super::options::Waits;
use super::settings::{Length, Step};
use super::Experiment;
use crate::error::LabError;
use crate::machine::Placement;
use crate::measure::clock::{cpu_clock_s, now, this_thread_cpu_clock, thread_cpu_s};
use crate::measure::memory::check_room;
use crate::measure::partner::{with_partners, Announced};
use crate::measure::pin::with_pinned;
use crate::measure::sharing::{BusyNeighbour, SHARED_CORE_PCT};
use crate::measure::{repeat, Clock, Progress, Rep, StoppingRule, Summary, Verdict};
use crate::reading::plot;
use crate::reading::scorecard::{mean_of, why_missing, words, Claim, Estimate, Finding, Observed, Verdict as Judged};
use crate::reading::{distinct, measured, rows_of, Context, Panel};
use crate::results::format::number;
use crate::results::keys::{LOCK, PLACEMENT, WAIT};
use crate::results::table::{col, Column};
use crate::results::{Row, Run, ATTEMPTS, TRANSFER_AFTER_NS, TRANSFER_BEFORE_NS};
use crate::select::{self, Bounds};
use crate::workloads::counters::{Counted, Ipc};
use crate::workloads::{Active, CacheSizes, Caches, Sizes, Workload};
use clap::Args;
use spinlab::sys::futex::FutexWait;
use spinlab::wait::{visit_policies, Episode, PolicyVisitor, Spun, Unavailable, Wait};
use spinlab::CachePadded;
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

/// Slowdown of the active workload vs isolation (`Row::summary("slowdown", "pct", …)`).
pub const SLOWDOWN_PCT: &str = "slowdown_pct";
/// The active workload.
pub const ACTIVE: &str = "active";

/// The active workloads when `--active` is not given (the closing note's three: the lowest
/// CPI, a memory-bound one, and one of each kind).
pub const DEFAULT_ACTIVE: &[Workload] = &[Workload::Add, Workload::MbvInt, Workload::Hash];
/// The policies when `--waits` is not given: 000's loop and its four variants, the spin
/// hint, and the three that give the CPU away.
pub const DEFAULT_WAITS: &[&str] = &["spin", "pause", "idiv", "fdiv", "cas", "miss", "yield", "futex", "spin-park"];
/// Seed 000 ran one and three spinning threads next to the active one.
pub const DEFAULT_WAITERS: &[usize] = &[1, 3];

/// Lock word values, as in the library's TTAS lock (`lock/word.rs`).
const LOCKED: u32 = 1;
const LOCKED_SLEEPERS: u32 = 2;
const UNLOCKED: u32 = 0;

/// The waiters' CPU time during the active call, as a percentage of the active thread's. At
/// `same-cpu` it is what the waiters take from the active thread's CPU, measured from the two
/// threads' own clocks: other processes' turns on that CPU do not enter it, as they enter the
/// wall-time slowdown. On an otherwise idle CPU the wall slowdown comes to the same figure.
pub const WAITER_CPU_PCT: &str = "waiter_cpu_pct";

/// How long the harness lets the waiters settle into their loop (or their sleep) before the
/// active thread starts.
const SETTLE: Duration = Duration::from_millis(2);

/// A workload list option's value.
#[derive(Clone, Debug)]
pub struct Actives(pub Vec<Workload>);
/// A waiter-count list option's value.
#[derive(Clone, Debug)]
pub struct Counts(pub Vec<usize>);

fn parse_actives(s: &str) -> Result<Actives, String> {
    Workload::parse_list(s).map(Actives)
}

/// `--waiters`: waiting threads beside the active one, up to the thread limit of a small
/// machine ([`select::THREADS_FLOOR`]).
pub const WAITERS: Bounds = Bounds::new(1, select::THREADS_FLOOR as u64);
/// `--active-ms`: one call of the active workload, up to 10 s.
pub const ACTIVE_MS: Bounds = Bounds::new(1, 10_000).unit(" ms");

/// The shortest call at `same-cpu`, in milliseconds, whatever `--active-ms` says. There the
/// slowdown is the share of the CPU the scheduler gives the waiters, which is only defined
/// over many of its periods (a tick is 4 ms at 250 Hz, 10 ms at 100 Hz): a call of a few
/// periods measures where the period boundaries fell, so the same command scatters from run
/// to run, most of all under load, where calls of many periods agree (docs/interference.md,
/// "Measurement decisions").
pub const SAME_CPU_MIN_MS: usize = 100;

/// How long one call is calibrated to take at `placement`, given `--active-ms`.
fn call_ms(active_ms: usize, placement: Placement) -> usize {
    match placement {
        Placement::SameCpu => active_ms.max(SAME_CPU_MIN_MS),
        _ => active_ms,
    }
}
/// `--units` (hidden, for tests): units of work per call.
pub const UNITS: Bounds = Bounds::new(1, 1_000_000);

fn parse_counts(s: &str) -> Result<Counts, String> {
    let mut out = Vec::new();
    for item in select::split_list(s)? {
        let n: usize = WAITERS.parse(item).map_err(|e| format!("{e} (waiters per co-run)"))?;
        if !out.contains(&n) {
            out.push(n);
        }
    }
    Ok(Counts(out))
}

/// Options of `spinlab run interference`.
#[derive(Args, Clone, Debug, Default)]
#[group(skip)]
pub struct Interference {
    /// Active workloads, comma-separated: add, mul, branch, l1, l2, mbv-int, mbv-fp, sort, hash
    /// [default: add,mbv-int,hash]
    #[arg(long, value_name = "LIST", value_parser = parse_actives)]
    pub active: Option<Actives>,
    /// Waiter counts, comma-separated, each within [`WAITERS`] [default: 1,3]
    #[arg(long, value_name = "LIST", value_parser = parse_counts,
          help = WAITERS.help("Waiter counts, comma-separated [default: 1,3]"))]
    pub waiters: Option<Counts>,
    /// Length of one call of the active workload, in milliseconds (its work is fixed once,
    /// calibrated to this in isolation; at `same-cpu` at least [`SAME_CPU_MIN_MS`]), within
    /// [`ACTIVE_MS`] [default: 10]
    #[arg(long, value_name = "MS", value_parser = |s: &str| ACTIVE_MS.parse::<usize>(s), allow_hyphen_values = true,
          help = ACTIVE_MS.help("Length of one call of the active workload, in milliseconds (its work is fixed \
                                 once, calibrated to this in isolation; at same-cpu at least 100) [default: 10]"))]
    pub active_ms: Option<usize>,
    /// Size the workloads for these caches instead of this machine's: L1D,L2,LLC (e.g.
    /// 32K,512K,32M), each within [`CacheSizes::LIMITS`]
    #[arg(long, value_name = "L1D,L2,LLC", value_parser = CacheSizes::parse,
          help = format!("Size the workloads for these caches instead of this machine's: L1D,L2,LLC (e.g. \
                          32K,512K,32M); accepted: {}", CacheSizes::ACCEPTED))]
    pub cache_sizes: Option<CacheSizes>,
    /// Units of work per call instead of calibrating (for tests and exact comparisons), within
    /// [`UNITS`]
    #[arg(long, value_name = "N", value_parser = |s: &str| UNITS.parse::<usize>(s), hide = true)]
    pub units: Option<usize>,
}

const COLUMNS: &[Column] = &[
    col(ACTIVE, "active"),
    col(WAIT, "wait"),
    col("waiters", "waiters"),
    col(PLACEMENT, "placement"),
    col(SLOWDOWN_PCT, "slowdown %"),
    col("slowdown_ci95_pct", "±95%"),
    col("isolated_s", "isolated s"),
    col("cpu_slowdown_pct", "CPU-time slowdown %"),
    col("corun_cpu_share_pct", "co-run CPU share %"),
    col(WAITER_CPU_PCT, "waiters' CPU %"),
    col("reread_ns", "re-read ns"),
    col("active_ipc", "IPC"),
    col(CORE_SHARED, "one core?"),
    col("reps", "reps"),
    col(ATTEMPTS, "attempts"),
];

/// What one waiter saw.
#[derive(Clone, Copy, Debug, Default)]
struct WaiterReport {
    /// Counter ticks from the start of its wait to the harness's release.
    waited_ticks: u64,
    /// Iterations of the policy's loop (each one re-read of the word).
    iterations: u64,
    /// Times it went to sleep.
    sleeps: u64,
}

/// One co-run: `waiter_cpus.len()` waiters wait with the policy while the calling thread runs
/// `active`; then the harness releases the word and joins them.
type CoRun = fn(waiter_cpus: &[usize], active: &mut dyn FnMut()) -> Result<CoRunReport, LabError>;

/// What one co-run saw besides the active call's own times.
struct CoRunReport {
    waiters: Vec<WaiterReport>,
    /// CPU seconds all the waiters used while the active call ran.
    waiters_cpu_s: f64,
}

/// What one wait on the word took.
struct Waited {
    /// Iterations of the policy's loop.
    iterations: u64,
    /// Times the waiter went to sleep.
    sleeps: u64,
}

/// Waits as a thread blocked in `Ttas<W>` does, until the word reads `UNLOCKED`.
fn wait_like_ttas<W: Wait>(word: &AtomicU32) -> Waited {
    let mut episode = Episode::new(None);
    let (mut iterations, mut sleeps) = (0u64, 0u64);
    loop {
        let seen = word.load(Relaxed);
        if seen == UNLOCKED {
            break;
        }
        match W::spin(word, seen, &mut episode) {
            Spun::Changed => {}
            Spun::TimedOut => unreachable!("no deadline"),
            Spun::Exhausted => {
                // TTAS's park: mark that a sleeper may exist, sleep while it holds.
                iterations += episode.iterations() as u64;
                episode.restart_spinning();
                if word.swap(LOCKED_SLEEPERS, Acquire) == UNLOCKED {
                    // Released in between. Undo the mark, and wake anyone who saw it and
                    // went to sleep on it (nobody else will: the harness has released).
                    word.store(UNLOCKED, Release);
                    W::wake_all(word);
                    break;
                }
                if W::sleep(word, LOCKED_SLEEPERS, None) != FutexWait::ValueChanged {
                    sleeps += 1;
                }
            }
        }
    }
    Waited { iterations: iterations + episode.iterations() as u64, sleeps }
}

/// Releases the word as TTAS's unlock does: wakes sleepers only if one may exist (all of
/// them, since none of them will hand the lock on).
fn release<W: Wait>(word: &AtomicU32) {
    if word.swap(UNLOCKED, Release) == LOCKED_SLEEPERS {
        W::wake_all(word);
    }
}

fn co_run<W: Wait>(waiter_cpus: &[usize], active: &mut dyn FnMut()) -> Result<CoRunReport, LabError> {
    let word = CachePadded::new(AtomicU32::new(LOCKED));
    let arrived = Announced::new();
    let released_at = CachePadded::new(AtomicU64::new(0));
    // Each waiter's CPU-time clock, published before it announces itself.
    let clocks: Vec<AtomicI32> = waiter_cpus.iter().map(|_| AtomicI32::new(0)).collect();
    let waiter = |i: usize| {
        clocks[i].store(this_thread_cpu_clock(), Relaxed);
        arrived.announce();
        let wait_began = now();
        let waited = wait_like_ttas::<W>(&word);
        WaiterReport {
            waited_ticks: released_at.load(Acquire).saturating_sub(wait_began),
            iterations: waited.iterations,
            sleeps: waited.sleeps,
        }
    };
    // Returns the CPU seconds all the waiters used while the active call ran.
    let harness = || {
        arrived.wait_for(waiter_cpus.len(), false);
        std::thread::sleep(SETTLE);
        // The waiters are all waiting (they leave only once the word is released below), so
        // their clocks are live; `wait_for` acquired the announcements that follow their stores.
        let waiters_cpu = || clocks.iter().map(|c| cpu_clock_s(c.load(Relaxed))).sum::<f64>();
        let before = waiters_cpu();
        active();
        let used = waiters_cpu() - before;
        released_at.store(now(), Release);
        release::<W>(&word);
        used
    };
    // If a waiter cannot start, the ones that did leave once the word is released.
    let sides = with_partners(waiter_cpus, waiter, || release::<W>(&word), harness)?;
    Ok(CoRunReport { waiters: sides.partner, waiters_cpu_s: sides.main })
}

/// A policy as this experiment sees it.
#[derive(Clone, Copy)]
struct Policy {
    name: &'static str,
    availability: Result<(), Unavailable>,
    co_run: CoRun,
}

fn policies() -> Vec<Policy> {
    struct Collect(Vec<Policy>);
    impl PolicyVisitor for Collect {
        fn visit<W: Wait>(&mut self) {
            self.0.push(Policy { name: W::NAME, availability: W::availability(), co_run: co_run::<W> });
        }
    }
    let mut c = Collect(Vec::new());
    visit_policies(&mut c);
    c.0
}

/// Where the active thread and the waiters run at one placement.
struct CoRunCpus {
    active: usize,
    waiters: Vec<usize>,
}

/// The CPUs of the active thread and of `waiters` waiters at `placement`.
fn cpus_at(lab: &Lab, placement: Placement, waiters: usize) -> Result<CoRunCpus, String> {
    let cpus = lab.topology.placement_cpus(placement)?;
    let active = cpus[0];
    if placement == Placement::SameCpu {
        return Ok(CoRunCpus { active, waiters: vec![active; waiters] });
    }
    // The other CPUs at this placement, round-robin: with more waiters than CPUs (three
    // waiters, one other core), waiters share a CPU, time-sliced among themselves.
    let others: Vec<usize> = cpus.iter().copied().filter(|&c| c != active).collect();
    Ok(CoRunCpus { active, waiters: (0..waiters).map(|i| others[i % others.len()]).collect() })
}

fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
}

/// What one `spinlab run interference` measures: its options resolved for this machine.
struct Plan {
    rule: StoppingRule,
    actives: Vec<Workload>,
    waiter_counts: Vec<usize>,
    wait_names: Vec<&'static str>,
    placements: Vec<Placement>,
    active_ms: usize,
    /// The policies of `wait_names`, in its order.
    policies: Vec<Policy>,
    caches: Caches,
    sizes: Sizes,
    /// Why the active thread's instructions per cycle cannot be counted, if they cannot.
    no_ipc: Option<String>,
}

/// One co-run configuration: the active workload on its CPU, one policy's waiters on theirs.
struct CoRunAt<'a> {
    workload: Workload,
    placement: Placement,
    active_cpu: usize,
    waiter_cpus: &'a [usize],
    policy: &'a Policy,
}

/// The active workload, built and calibrated on its CPU, and the checksum every call must
/// return.
struct Calibrated {
    active: Active,
    checksum: u64,
}

/// One timed call of the active workload.
struct Call {
    seconds: f64,
    cpu_s: f64,
    ipc: Option<f64>,
    checksum: u64,
}

/// The active thread on one side of the comparison (alone, or beside the waiters), one value
/// per measured repetition.
#[derive(Default)]
struct Side {
    /// Wall seconds per call.
    seconds: Vec<f64>,
    /// CPU seconds per call: what separates losing the CPU (time-sharing, the scheduler) from
    /// running slower on it (shared hardware).
    cpu_s: Vec<f64>,
    /// Instructions per cycle, where counted.
    ipc: Vec<f64>,
}

/// One co-run configuration's measurements.
struct Measured {
    isolated: Side,
    corun: Side,
    /// Whether the stopping rule was met on the pairs' ratio.
    converged: bool,
    /// The waiters' reports from every measured co-run.
    reports: Vec<WaiterReport>,
    /// Each measured co-run's mean interval between two reads of the watched word, in ticks.
    rereads: Vec<f64>,
    /// CPU seconds the waiters used during each measured co-run's call, in `corun`'s order.
    waiters_cpu_s: Vec<f64>,
}

/// Times one call of `active` (its instructions per cycle too, with `counters`).
fn timed_call(active: &mut Active, counters: Option<&Ipc>, clock: &Clock) -> Call {
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
fn measure(
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

fn slowdowns_pct(without: &[f64], with: &[f64]) -> Vec<f64> {
    without.iter().zip(with).map(|(i, c)| 100.0 * (c / i - 1.0)).collect()
}

/// One co-run configuration's row.
fn row(at: &CoRunAt<'_>, m: &Measured, clock: &Clock, units: u64) -> Row {
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

impl Interference {
    /// The options checked and resolved for this machine.
    fn plan(&self, lab: &Lab, common: &Common) -> Result<Plan, LabError> {
        let rule = common.rule(3, 5)?;
        let wait_names: Vec<&'static str> =
            common.waits.as_ref().map_or_else(|| DEFAULT_WAITS.to_vec(), |w| w.0.clone());
        let all_policies = policies();
        let chosen = wait_names.iter().filter_map(|n| all_policies.iter().find(|p| p.name == *n)).copied().collect();
        let home = lab.home_cpu();
        let caches = match self.cache_sizes {
            Some(sizes) => Caches { sizes, assumed: Vec::new() },
            None => CacheSizes::read(Path::new("/sys"), home),
        };
        Ok(Plan {
            rule,
            actives: self.active.as_ref().map_or_else(|| DEFAULT_ACTIVE.to_vec(), |a| a.0.clone()),
            waiter_counts: self.waiters.as_ref().map_or_else(|| DEFAULT_WAITERS.to_vec(), |w| w.0.clone()),
            wait_names,
            placements: common.placements_or_all(),
            active_ms: self.active_ms.unwrap_or(10),
            policies: chosen,
            sizes: Sizes::for_caches(caches.sizes),
            caches,
            no_ipc: with_pinned(home, Ipc::open).err(),
        })
    }

    /// The run, with the plan as its parameters.
    fn describe(&self, plan: &Plan) -> Run {
        let mut run = Run::new(self.name());
        run.param("active", plan.actives.iter().map(|w| w.name()).collect::<Vec<_>>())
            .param("waits", &plan.wait_names)
            .param("waiters", &plan.waiter_counts)
            .param("placements", plan.placements.iter().map(|p| p.name()).collect::<Vec<_>>())
            .param("active_ms", plan.active_ms)
            .param("same_cpu_active_ms", call_ms(plan.active_ms, Placement::SameCpu))
            .param("cache_l1d_bytes", plan.caches.sizes.l1d)
            .param("cache_l2_bytes", plan.caches.sizes.l2)
            .param("cache_llc_bytes", plan.caches.sizes.llc)
            .param("caches_assumed", &plan.caches.assumed)
            .param("settle_ms", SETTLE.as_secs_f64() * 1e3)
            .param("waiting", "as in ttas:POLICY: Wait::spin on a word held locked, then mark and sleep")
            .stopping_rule(&plan.rule);
        if let Some(why) = &plan.no_ipc {
            run.param("active_ipc", format!("not measured: {why}"));
        }
        if plan.wait_names.contains(&"miss") {
            describe_miss_chase(&mut run, spinlab::wait::chase_size());
        }
        run
    }

    /// `workload` built on `cpu`, so its pages are that CPU's, and calibrated there to the
    /// call length of `placement`.
    fn calibrated(&self, workload: Workload, plan: &Plan, cpu: usize, placement: Placement) -> Calibrated {
        with_pinned(cpu, || {
            let mut active = Active::new(workload, &plan.sizes, self.units.unwrap_or(1) as u64);
            if self.units.is_none() {
                active.calibrate(Duration::from_millis(call_ms(plan.active_ms, placement) as u64));
            }
            let checksum = active.run();
            Calibrated { active, checksum }
        })
    }
}

impl Experiment for Interference {
    fn name(&self) -> &'static str {
        "interference"
    }

    fn about(&self) -> &'static str {
        "Slowdown of an active workload next to waiters of each policy, per placement (seed 000)"
    }

    fn uses(&self) -> &'static [&'static str] {
        &["waits", "placement"]
    }

    fn render(&self, run: &Run) -> String {
        let mut out = crate::results::table::render(&run.rows, COLUMNS);
        let mut first = true;
        for row in run.rows.iter().filter(|r| r.number(ATTEMPTS).is_some_and(|n| n > 1.0)) {
            let (Some(pair), Some(before), Some(after)) =
                (row.text(LINE_TRANSFER_CPUS), row.number(TRANSFER_BEFORE_NS), row.number(TRANSFER_AFTER_NS))
            else {
                continue;
            };
            if first {
                if !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(
                    "measured again, the machine having moved a cache line at a different cost before and after:\n",
                );
                first = false;
            }
            out.push_str(&format!(
                "  {}, {} x{}, {}: CPUs {pair}: {before:.0} ns before, {after:.0} ns after{}\n",
                row.text(ACTIVE).unwrap_or("?"),
                row.text(WAIT).unwrap_or("?"),
                row.get("waiters").map(|w| w.to_string()).unwrap_or_default(),
                row.text(PLACEMENT).unwrap_or("?"),
                discarded(row)
            ));
        }
        out
    }

    fn columns(&self) -> &'static [Column] {
        COLUMNS
    }

    fn run(&self, lab: &Lab, common: &Common) -> Result<Vec<Run>, LabError> {
        let started = Instant::now();
        let plan = self.plan(lab, common)?;
        let run = self.describe(&plan);
        let mut rows: Vec<Row> = plan
            .policies
            .iter()
            .filter_map(|p| p.availability.err().map(|e| Row::new().with(WAIT, p.name).skipped(e.to_string())))
            .collect();
        let usable: Vec<&Policy> = plan.policies.iter().filter(|p| p.availability.is_ok()).collect();
        let offered: Vec<Placement> = plan
            .placements
            .iter()
            .copied()
            .filter(|&p| match lab.topology.placement_cpus(p) {
                Ok(_) => true,
                Err(why) => {
                    rows.push(Row::new().with(PLACEMENT, p.name()).skipped(why));
                    false
                }
            })
            .collect();

        let configs = (plan.actives.len() * offered.len() * plan.waiter_counts.len() * usable.len()) as u64;
        // The CPU beside the active one at `core`, where the busy-neighbour probe runs.
        let core_neighbour = offered
            .contains(&Placement::Core)
            .then(|| cpus_at(lab, Placement::Core, 1).ok())
            .flatten()
            .map(|c| (BusyNeighbour::calibrated_on(c.active), c.waiters[0]));
        one_run(lab, started, run, configs, |progress| {
            for &workload in &plan.actives {
                for &placement in &offered {
                    let Ok(CoRunCpus { active: active_cpu, .. }) = cpus_at(lab, placement, 1) else { continue };
                    check_room(plan.sizes.bytes(workload), &format!("the {workload} workload's data"))?;
                    let mut calibrated = self.calibrated(workload, &plan, active_cpu, placement);
                    // At `core`, whether the two CPUs share a physical core, between every two rows
                    // there: each row gets the probes just before and just after it (`core_shared`).
                    let neighbour = core_neighbour.as_ref().filter(|_| placement == Placement::Core);
                    let probe = || neighbour.map(|(probe, other)| probe.slowdown_pct(active_cpu, *other)).transpose();
                    let mut before = probe()?;
                    for &n in &plan.waiter_counts {
                        let waiter_cpus = cpus_at(lab, placement, n).map_err(LabError::failed)?.waiters;
                        for &policy in &usable {
                            progress.step(&format!("{workload}, {} x{n}, {placement}", policy.name));
                            let at = CoRunAt { workload, placement, active_cpu, waiter_cpus: &waiter_cpus, policy };
                            // Where the waiters run on other CPUs, a line transfer between the active
                            // CPU and a waiter's just before and just after the row: a row the host
                            // moved those CPUs under is measured again (`moved`).
                            let pair = [active_cpu, waiter_cpus[0]];
                            let kept = until_still(|attempt| {
                                if attempt > 1 {
                                    progress.step(&format!(
                                        "{workload}, {} x{n}, {placement} again, attempt {attempt} (the machine moved)",
                                        policy.name
                                    ));
                                }
                                around(&pair, &lab.clock, || {
                                    measure(&at, &mut calibrated, &plan.rule, progress, &lab.clock)
                                })
                            })?;
                            let mut row = row(&at, &kept.result, &lab.clock, calibrated.active.units());
                            if !row.is_skipped() {
                                mark(&mut row, &kept);
                            }
                            let after = probe()?;
                            if let (Some(before), Some(after)) = (before, after) {
                                tag_core_sharing(&mut row, before, after);
                            }
                            before = after;
                            rows.push(row);
                            progress.inc();
                        }
                    }
                }
            }
            Ok(rows)
        })
    }

    fn report_steps(&self, length: Length, _cpus: usize) -> Vec<Step> {
        let interference = match length {
            Length::Full => self.clone(),
            // One waiter count instead of 1 and 3: interference is most of a short report.
            Length::Short => Interference { active_ms: Some(3), waiters: Some(Counts(vec![1])), ..self.clone() },
            Length::Smoke => Interference {
                active: Workload::parse_list("add").ok().map(Actives),
                waiters: Some(Counts(vec![1])),
                units: Some(1),
                ..self.clone()
            },
        };
        let mut c = length.common(&interference, 2, 4, 0);
        if length == Length::Smoke {
            c.waits = select::wait_list("spin,futex").ok().map(Waits);
        }
        vec![Step::new(interference, c, "interference: what waiters cost a co-running thread")]
    }

    fn figures(&self, _ctx: &Context<'_>, runs: &[&Run]) -> Vec<Result<Panel, String>> {
        heatmaps(&rows_of(runs))
    }

    fn scorecard(&self, ctx: &Context<'_>) -> Vec<Finding> {
        let sibling = Placement::Smt;
        vec![
            mean_slowdown(ctx, &ONE_LINUX_LOOP_ON_SIBLING, "spin", sibling, Workloads::All, (4.0, 20.0)),
            mean_slowdown(ctx, &LINUX_LOOP_ON_SIBLING, "spin", sibling, Workloads::Multiple, (21.0, 84.0)),
            mean_slowdown(ctx, &MISS_LOOP_ON_SIBLING, "miss", sibling, Workloads::Multiple, (-5.0, 5.0)),
            mean_slowdown(ctx, &LINUX_LOOP_OTHER_CORE, "spin", Placement::Core, Workloads::All, (-5.0, 5.0)),
            responsiveness(ctx),
        ]
    }
}

const ONE_LINUX_LOOP_ON_SIBLING: Claim = Claim {
    id: "000-linux-loop-one-sibling",
    seed: "000",
    source: "§IV.B",
    claim: "one thread in the Linux spin loop on the same core slows the active thread",
    paper: "9.5% on average over the workloads on UltraSPARC T1, 8.6% on T2 (one spinning strand)",
};

const LINUX_LOOP_ON_SIBLING: Claim = Claim {
    id: "002-linux-loop-smt",
    seed: "002",
    source: "slide \"Results\"",
    claim: "the Linux spin loop on the same core slows the active thread's real work heavily",
    paper: "42% on average over the multiple-behaviour workloads (61% worst case), UltraSPARC T2, spinning \
            strands on the active thread's core (seed 000 Fig. 7: three in its pipe)",
};

const MISS_LOOP_ON_SIBLING: Claim = Claim {
    id: "002-miss-loop-smt",
    seed: "002",
    source: "slide \"Results\"",
    claim: "a spin loop that waits on a load that always misses nearly removes that slowdown",
    paper: "1.5% on average over the multiple-behaviour workloads (2% worst case), UltraSPARC T2",
};

const LINUX_LOOP_OTHER_CORE: Claim = Claim {
    id: "000-linux-loop-other-core",
    seed: "000",
    source: "§V.B.2",
    claim: "a spinning thread on another core does not slow the active thread",
    paper: "negligible (not charted); under 3% from another pipe of the same T2 core",
};

const RESPONSIVENESS: Claim = Claim {
    id: "002-miss-loop-responsiveness",
    seed: "002",
    source: "slide \"Results\"; seed 000 §V.D",
    claim: "the cache-miss loop pays for it in responsiveness: it reads the lock far less often",
    paper: "about 220 cycles between two reads of the lock instead of 10 (22x); 170 ns on T2",
};

/// Which active workloads a claim averages over (seed 000 §III.D's two groups).
#[derive(Clone, Copy, PartialEq)]
enum Workloads {
    All,
    Multiple,
}

/// The active thread's slowdown beside waiters of `wait` at `placement` (the most waiters
/// measured there), averaged over the active workloads, against `range` (percent). The
/// figure is the CPU-time slowdown: on a sibling or another core the active thread keeps its
/// CPU, and the seeds' figures are what the waiters cost the work per cycle it runs.
fn mean_slowdown(
    ctx: &Context<'_>,
    claim: &Claim,
    wait: &str,
    placement: Placement,
    workloads: Workloads,
    range: (f64, f64),
) -> Finding {
    let at: Vec<&Row> = measured(ctx.rows_of("interference"))
        .into_iter()
        .filter(|r| r.text(WAIT) == Some(wait) && r.text(PLACEMENT) == Some(placement.name()))
        .filter(|r| workloads == Workloads::All || r.text("behaviour") == Some("multiple"))
        .collect();
    let most = at.iter().filter_map(|r| r.number("waiters")).fold(f64::NAN, f64::max);
    let rows: Vec<&Row> = at.into_iter().filter(|r| r.number("waiters") == Some(most)).collect();
    let group = if workloads == Workloads::All { "every" } else { "each multiple-behaviour" };
    let mut rows_words =
        format!("interference, wait {wait}, at {placement}, the most waiters measured, {group} active workload");
    // At `core`, only rows whose CPUs were two cores when probed: the others measured one
    // core's two hardware threads (a virtual machine's host can run its CPUs so), which is
    // another claim's placement.
    let (rows, one_core): (Vec<&Row>, Vec<&Row>) =
        rows.into_iter().partition(|r| placement != Placement::Core || on_two_cores(r));
    if !one_core.is_empty() {
        rows_words.push_str(&format!(
            ", less {} measured while the two CPUs shared one physical core or the host moved them ({CORE_SHARED})",
            one_core.iter().map(|r| r.text(ACTIVE).unwrap_or("?")).collect::<Vec<_>>().join(", ")
        ));
        if rows.is_empty() {
            let why = "every row was measured while the two CPUs shared one physical core (a virtual machine's host \
                       ran them on one core's two hardware threads, which the guest cannot see) or moved between \
                       probes: no row measured two cores";
            return Finding::without(claim, &rows_words, Judged::CannotTest(why.to_string()));
        }
    }
    let per_workload: Vec<Estimate> = rows.iter().filter_map(|r| Estimate::of(r, "cpu_slowdown_pct")).collect();
    let Some(here) = mean_of(&per_workload) else {
        let why = why_missing(ctx, "interference", &[(PLACEMENT, placement.name()), (WAIT, wait)]);
        return Finding::without(claim, &rows_words, why);
    };
    let detail = rows
        .iter()
        .zip(&per_workload)
        .map(|(r, e)| format!("{} {}", r.text(ACTIVE).unwrap_or("?"), words(e, "%")))
        .collect::<Vec<_>>()
        .join(", ");
    let detail = format!("{most} waiter(s): {detail}");
    let reason = match placement {
        Placement::Core => {
            "the two cores still share a last-level cache, memory bandwidth and, in a virtual \
                            machine, the host's scheduling"
        }
        _ => {
            "an x86 core shares its pipeline between its two hardware threads differently from the T1/T2's \
              fine-grained multithreading, and holds only one waiter beside the active thread"
        }
    };
    Finding::judged(claim, ctx, "interference", Observed { here, unit: "%", detail, rows: rows_words }, range, reason)
        .read_from_rows(&rows)
}

/// `core_shared` when the busy-neighbour probes (`crate::measure::sharing`) just before and
/// just after a row found its two CPUs on one physical core; `moved` when one did and the
/// other did not (the host moved them during the rows); `no` when neither did.
pub const CORE_SHARED: &str = "core_shared";

/// Whether a `core` row was measured on two cores: its probes said so, or it has none (a
/// document from before the probes, or a machine without the `core` pair's probe).
fn on_two_cores(row: &Row) -> bool {
    row.text(CORE_SHARED).is_none_or(|said| said == "no")
}

/// Puts the probes around a `core` row, and what they say, on the row.
fn tag_core_sharing(row: &mut Row, before: f64, after: f64) {
    row.set("core_busy_neighbour_before_pct", before);
    row.set("core_busy_neighbour_after_pct", after);
    let said = match (before >= SHARED_CORE_PCT, after >= SHARED_CORE_PCT) {
        (true, true) => "yes",
        (false, false) => "no",
        _ => "moved",
    };
    row.set(CORE_SHARED, said);
}

/// How the `miss` policy's chase was sized in this process (`spinlab::wait::chase_size`, which
/// sizes it now if nothing has yet): the figures behind every `miss` row, since a chase that
/// hits in a cache the machine does not report measures a different loop.
fn describe_miss_chase(run: &mut Run, chase: &spinlab::wait::ChaseSize) {
    run.param("miss_chase_bytes", chase.bytes())
        .param("miss_chase_times_seed_size", chase.multiple())
        .param("miss_chase_step_ns", chase.step_ns())
        .param("miss_chase_longest_step_ns", chase.longest_step_ns())
        .param("miss_chase_settled", chase.settled)
        .param("miss_chase_huge_page_bytes", chase.huge_page_bytes)
        .param("miss_chase_tried_mib_ns", chase.tried_mib());
    if !chase.settled {
        let warning = format!(
            "miss: no chase shorter than the longest tried ({} MiB) kept its pace, so the miss loop's \
             loads may hit in a cache ({} ns a step)",
            chase.bytes() >> 20,
            number(chase.step_ns())
        );
        eprintln!("warning: {warning}");
        run.param("miss_chase_warning", warning);
    }
}

/// The mean interval between two reads of the watched word in one co-run's reports (its
/// waiters'), in ticks; `None` if they never read it.
fn reread_ticks(reports: &[WaiterReport]) -> Option<f64> {
    let waited: u64 = reports.iter().map(|r| r.waited_ticks).sum();
    let iterations: u64 = reports.iter().map(|r| r.iterations).sum();
    (iterations > 0).then(|| waited as f64 / iterations as f64)
}

/// The miss loop's re-read interval over the Linux loop's, both at `core` (waiters alone on
/// their CPU), averaged over the active workloads.
fn responsiveness(ctx: &Context<'_>) -> Finding {
    let rows_words =
        "interference, waits miss and spin, one waiter, at core, on two cores (core_shared): reread_ns".to_string();
    let rows: Vec<&Row> = measured(ctx.rows_of("interference"))
        .into_iter()
        .filter(|r| r.text(PLACEMENT) == Some(Placement::Core.name()) && on_two_cores(r))
        .filter(|r| matches!(r.text(WAIT), Some("miss" | "spin")) && r.number("reread_ns").is_some())
        .collect();
    let reread = |wait: &str| -> Vec<Estimate> {
        rows.iter().filter(|r| r.text(WAIT) == Some(wait)).filter_map(|r| Estimate::of(r, "reread_ns")).collect()
    };
    let (miss, spin) = (mean_of(&reread("miss")), mean_of(&reread("spin")));
    let (Some(miss), Some(spin)) = (miss, spin) else {
        let why = why_missing(ctx, "interference", &[(PLACEMENT, Placement::Core.name())]);
        return Finding::without(&RESPONSIVENESS, &rows_words, why);
    };
    let Some(here) = miss.ratio(&spin) else {
        return Finding::without(&RESPONSIVENESS, &rows_words, Judged::NotMeasured("a re-read of zero".to_string()));
    };
    let mut detail = format!("miss {} ns, spin {} ns per read", number(miss.value), number(spin.value));
    let chase = ctx.runs_of("interference").into_iter().find_map(|run| {
        let param = |key: &str| run.params.get(key).and_then(|v| v.as_f64());
        Some((param("miss_chase_bytes")?, param("miss_chase_times_seed_size")?, param("miss_chase_step_ns")?))
    });
    if let Some((bytes, times, step_ns)) = chase {
        detail.push_str(&format!(
            "; the chase: {} MiB, {}x seed 000's size, {} ns a step alone",
            number(bytes / f64::from(1 << 20)),
            number(times),
            number(step_ns)
        ));
    }
    let reason = "today's cores re-read a cached line in a cycle or two, far faster than the T2's 10-cycle loop, \
                  while a load from memory still costs a few hundred cycles";
    Finding::judged(
        &RESPONSIVENESS,
        ctx,
        "interference",
        Observed { here, unit: "x", detail, rows: rows_words },
        (11.0, 44.0),
        reason,
    )
    .read_from_rows(&rows)
}

fn heatmaps(rows: &[&Row]) -> Vec<Result<Panel, String>> {
    let rows: Vec<&Row> =
        measured(rows.iter().copied()).into_iter().filter(|r| r.number(SLOWDOWN_PCT).is_some()).collect();
    // With several waiter counts, the heat maps show the largest.
    let waiters = rows.iter().filter_map(|r| r.number("waiters")).fold(f64::NAN, f64::max);
    let rows: Vec<&Row> =
        rows.into_iter().filter(|r| waiters.is_nan() || r.number("waiters") == Some(waiters)).collect();
    let actives = distinct(&rows, ACTIVE);
    let waits = distinct(&rows, WAIT);
    let placements = distinct(&rows, PLACEMENT);
    if actives.is_empty() || waits.is_empty() || placements.is_empty() {
        return Vec::new();
    }
    let max = rows.iter().filter_map(|r| r.number(SLOWDOWN_PCT)).fold(5.0f64, |a, b| a.max(b.abs()));
    let waiter_words = if waiters.is_nan() { String::new() } else { format!(" with {waiters} waiter(s)") };
    actives
        .iter()
        .map(|active| {
            let values: Vec<Vec<Option<f64>>> = waits
                .iter()
                .map(|w| {
                    placements
                        .iter()
                        .map(|p| {
                            rows.iter()
                                .find(|r| {
                                    r.text(ACTIVE) == Some(active.as_str())
                                        && r.text(WAIT) == Some(w.as_str())
                                        && r.text(PLACEMENT) == Some(p.as_str())
                                })
                                .and_then(|r| r.number(SLOWDOWN_PCT))
                        })
                        .collect()
                })
                .collect();
            let height = 110 + 24 * waits.len() as u32;
            let width = 150 + 95 * placements.len() as u32;
            plot::heatmap(&format!("{active}: slowdown %"), &placements, &waits, &values, max, (width, height)).map(|svg| Panel {
                svg,
                caption: format!(
                    "Slowdown (%) of the {active} workload vs running alone{waiter_words}, per wait policy (rows) and \
                     where the waiters run (columns); white is none, deep red {max:.0}%, blue a speed-up, grey not measured."
                ),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_same_cpu_call_spans_many_scheduler_periods_and_other_placements_keep_the_option() {
        assert_eq!(call_ms(3, Placement::SameCpu), SAME_CPU_MIN_MS);
        assert_eq!(call_ms(250, Placement::SameCpu), 250, "a longer call is kept");
        for placement in [Placement::Smt, Placement::Core, Placement::Llc, Placement::Node] {
            assert_eq!(call_ms(3, placement), 3, "{placement}");
        }
    }

    #[test]
    fn the_terminal_lists_the_rows_measured_again() {
        let row = |wait: &str, attempts: u64| {
            Row::new()
                .with(ACTIVE, "add")
                .with(WAIT, wait)
                .with("waiters", 1)
                .with(PLACEMENT, "core")
                .with(ATTEMPTS, attempts)
                .with(crate::results::MOVED_UNDER_NS, vec![[48.0, 230.0]; attempts as usize - 1])
                .with(LINE_TRANSFER_CPUS, "0,1")
                .with(TRANSFER_BEFORE_NS, 230.0)
                .with(TRANSFER_AFTER_NS, 225.0)
        };
        let mut run = Run::new("interference");
        run.rows = vec![row("spin", 1), row("miss", 2)];
        let text = Interference::default().render(&run);
        let listed: Vec<&str> = text.lines().filter(|l| l.contains("ns before")).collect();
        assert_eq!(
            listed,
            ["  add, miss x1, core: CPUs 0,1: 230 ns before, 225 ns after (attempt 2; the machine moved under the \
              earlier: 48 then 230 ns)"]
        );
        run.rows = vec![row("spin", 1)];
        assert!(!Interference::default().render(&run).contains("measured again"));
    }
}
