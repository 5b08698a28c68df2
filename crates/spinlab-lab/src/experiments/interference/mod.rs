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

mod claims;
mod corun;
mod figures;
mod measure;

use super::driver::one_run;
use super::lab::Lab;
use super::moved::{around, discarded, mark, until_still};
use super::options::Common;
use super::options::Waits;
use super::settings::{Length, Step};
use super::Experiment;
use crate::error::LabError;
use crate::machine::Placement;
use crate::measure::memory::check_room;
use crate::measure::pin::with_pinned;
use crate::measure::sharing::{BusyNeighbour, SHARED_CORE_PCT};
use crate::measure::StoppingRule;
use crate::reading::scorecard::Finding;
use crate::reading::{measured_as, Context, Panel};
use crate::results::format::number;
use crate::results::keys::{PLACEMENT, WAIT};
use crate::results::rows::InterferenceRow;
use crate::results::table::{col, Column};
use crate::results::{Row, Run, ATTEMPTS};
use crate::select::{self, Bounds};
use crate::workloads::counters::Ipc;
use crate::workloads::{Active, CacheSizes, Caches, Sizes, Workload};
use claims::{
    mean_slowdown, responsiveness, Workloads, LINUX_LOOP_ON_SIBLING, LINUX_LOOP_OTHER_CORE, MISS_LOOP_ON_SIBLING,
    ONE_LINUX_LOOP_ON_SIBLING,
};
use clap::Args;
use corun::{cpus_at, policies, CoRunCpus, Policy};
use figures::heatmaps;
use measure::{measure, row, Calibrated, CoRunAt};
use std::path::Path;
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
        for row in run.rows_as::<InterferenceRow>().iter().filter(|r| r.attempts.is_some_and(|n| n > 1)) {
            let (Some(pair), Some(before), Some(after)) =
                (&row.line_transfer_cpus, row.line_transfer_before_ns, row.line_transfer_after_ns)
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
                row.active.as_deref().unwrap_or("?"),
                row.wait.as_deref().unwrap_or("?"),
                row.waiters.map(|w| w.to_string()).unwrap_or_default(),
                row.placement.as_deref().unwrap_or("?"),
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
        heatmaps(&measured_as::<InterferenceRow>(runs))
    }

    fn scorecard(&self, ctx: &Context<'_>) -> Vec<Finding> {
        let sibling = Placement::Smt;
        vec![
            mean_slowdown(ctx, &ONE_LINUX_LOOP_ON_SIBLING, "spin", sibling, Workloads::All, (4.0, 20.0)),
            mean_slowdown(ctx, &LINUX_LOOP_ON_SIBLING, "spin", sibling, Workloads::Multiple, (21.0, f64::INFINITY)),
            mean_slowdown(ctx, &MISS_LOOP_ON_SIBLING, "miss", sibling, Workloads::Multiple, (-5.0, 5.0)),
            mean_slowdown(ctx, &LINUX_LOOP_OTHER_CORE, "spin", Placement::Core, Workloads::All, (-5.0, 5.0)),
            responsiveness(ctx),
        ]
    }
}

/// `core_shared` when the busy-neighbour probes (`crate::measure::sharing`) just before and
/// just after a row found its two CPUs on one physical core; `moved` when one did and the
/// other did not (the host moved them during the rows); `no` when neither did.
pub const CORE_SHARED: &str = "core_shared";

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::moved::LINE_TRANSFER_CPUS;
    use crate::results::{TRANSFER_AFTER_NS, TRANSFER_BEFORE_NS};

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
