//! The experiments: one trait, one file each.
//!
//! An experiment is a `clap::Args` struct holding its own options, implementing
//! [`Experiment`]. It receives the [`Lab`] (the machine, calibrated clocks and work, shared by
//! every experiment of an invocation, so `spinlab report` calibrates once) and the
//! [`Common`] options every experiment understands, and returns runs of rows. The same impl
//! declares what `spinlab report` does with it: its report settings
//! ([`Experiment::report_steps`]), its charts ([`Experiment::figures`]), its part of the
//! recommendation ([`Experiment::advice`]) and the seeds' claims it checks
//! ([`Experiment::scorecard`]).
//!
//! Adding one: a file here and its line in the `experiments!` list below (which declares the
//! module and makes it a `spinlab run` subcommand and a report step), and a page in docs/.

pub mod moved;
pub mod settings;

use crate::error::LabError;
use crate::machine::{MachineInfo, Placement, Topology};
use crate::measure::stats::paired_ratio_ci95;
use crate::measure::{pin, Clock, Progress, StoppingRule, Work};
use crate::reading::advice::Contribution;
use crate::reading::scorecard::Finding;
use crate::reading::{Context, Panel};
use crate::results::keys::{LOCK, ORIGIN};
use crate::results::table::{self, Column};
use crate::results::{Row, Run};
use crate::select::{self, LockChoice, ThreadCount};
use clap::{ArgMatches, Args, FromArgMatches, Subcommand};
use settings::{Length, Step};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One experiment.
pub trait Experiment {
    /// Its name: `spinlab run NAME`, and `experiment` in results.
    fn name(&self) -> &'static str;

    /// What it measures, in one line: `spinlab run --help`.
    fn about(&self) -> &'static str;

    /// The [`Common`] options it uses (long names without dashes); giving it another is a
    /// usage error rather than silently ignored.
    fn uses(&self) -> &'static [&'static str];

    /// Measures, and returns one or more runs.
    fn run(&self, lab: &Lab, common: &Common) -> Result<Vec<Run>, LabError>;

    /// The columns its tables show.
    fn columns(&self) -> &'static [Column];

    /// The human-readable form of one of its runs (a table of [`Experiment::columns`], plus
    /// whatever an experiment adds).
    fn render(&self, run: &Run) -> String {
        table::render(&run.rows, self.columns())
    }

    /// The runs `spinlab report` makes of it at `length` on `cpus` usable CPUs: these options
    /// (or variants of them) with repetition settings, and the label of each run's progress
    /// line.
    fn report_steps(&self, length: Length, cpus: usize) -> Vec<Step>;

    /// Its charts in the report, from its runs in a document (`ctx` for what they share with
    /// other experiments). An empty list gets a generic chart of the rows' first figure.
    fn figures(&self, ctx: &Context<'_>, runs: &[&Run]) -> Vec<Result<Panel, String>>;

    /// Its part of the recommendation, if it has one.
    fn advice(&self, _ctx: &Context<'_>) -> Option<Contribution> {
        None
    }

    /// The seeds' claims its rows speak to, each checked against the document behind `ctx`
    /// (every claim it owns, also when its rows are missing: the finding then says why).
    fn scorecard(&self, _ctx: &Context<'_>) -> Vec<Finding> {
        Vec::new()
    }
}

/// What every experiment of one invocation shares: the machine and its calibrations.
pub struct Lab {
    /// The topology, restricted to the CPUs this process may use.
    pub topology: Topology,
    /// `spinlab info`'s facts, for the results' `machine`.
    pub machine: MachineInfo,
    /// The cycle counter's rate and read cost.
    pub clock: Clock,
    /// Calibrated busy work.
    pub work: Work,
    /// Whether to show progress bars.
    pub show_progress: bool,
}

impl Lab {
    /// Reads the machine under `sys_root` and calibrates (about 0.1 s).
    pub fn new(sys_root: &Path, show_progress: bool) -> Result<Lab, LabError> {
        let full = Topology::read(sys_root).map_err(|e| LabError::failed(format!("reading the topology: {e}")))?;
        let allowed = pin::allowed_cpus();
        let topology = full.restrict(&allowed);
        if topology.cpus.is_empty() {
            return Err(LabError::failed(format!(
                "none of the CPUs this process may use ({allowed:?}) is listed as online under {}",
                sys_root.display()
            )));
        }
        let machine = MachineInfo::gather(sys_root, &full);
        // Calibrate pinned, so a migration does not land in the middle of a timing.
        let first = topology.cpus[0].id;
        let (clock, work) = pin::with_pinned(first, || (Clock::calibrate(), Work::calibrate()));
        Ok(Lab { topology, machine, clock, work, show_progress })
    }

    /// The first usable CPU: where one-thread measurements and calibrations run.
    pub fn home_cpu(&self) -> usize {
        self.topology.cpus[0].id
    }

    /// Usable CPUs.
    pub fn cpus(&self) -> usize {
        self.topology.cpus.len()
    }

    /// A progress bar over `total` steps.
    pub fn progress(&self, what: &str, total: u64) -> Progress {
        Progress::new(what, total, self.show_progress)
    }
}

/// A lock list option's value.
#[derive(Clone, Debug)]
pub struct Locks(pub Vec<LockChoice>);
/// A wait-policy list option's value.
#[derive(Clone, Debug)]
pub struct Waits(pub Vec<&'static str>);
/// A thread-count list option's value.
#[derive(Clone, Debug)]
pub struct Threads(pub Vec<ThreadCount>);
/// A placement list option's value.
#[derive(Clone, Debug)]
pub struct Placements(pub Vec<Placement>);

fn parse_locks(s: &str) -> Result<Locks, String> {
    select::lock_list(s).map(Locks)
}
fn parse_waits(s: &str) -> Result<Waits, String> {
    select::wait_list(s).map(Waits)
}
fn parse_threads(s: &str) -> Result<Threads, String> {
    select::thread_list(s).map(Threads)
}
fn parse_placements(s: &str) -> Result<Placements, String> {
    select::placement_list(s).map(Placements)
}

/// Options every experiment understands (each uses those it lists in [`Experiment::uses`]).
/// `Common::default()` is what an empty command line gives (`--maiv 1`, nothing else set).
#[derive(Args, Clone, Debug, Default)]
pub struct Common {
    /// Locks, comma-separated: ALGORITHM:POLICY (e.g. ttas:spin, mcs:spin-park), a reference
    /// lock (std, parking_lot, pthread), or `default` (spinlab's default lock); `spinlab list`
    /// shows every lock name and whether this CPU can run it
    #[arg(long, value_name = "LIST", value_parser = parse_locks)]
    pub locks: Option<Locks>,
    /// Wait policies, comma-separated (e.g. spin, pause, futex, spin-park); `spinlab list` shows
    /// every policy name and whether this CPU has what it needs
    #[arg(long, value_name = "LIST", value_parser = parse_waits)]
    pub waits: Option<Waits>,
    /// Thread counts, comma-separated: numbers, `cpus`, or multiples of the CPUs like `4x`, each
    /// up to [`select::max_threads`]
    #[arg(long, value_name = "LIST", value_parser = parse_threads, allow_hyphen_values = true,
          help = format!("Thread counts, comma-separated; {}", select::THREADS_ACCEPTED))]
    pub threads: Option<Threads>,
    /// Placements, comma-separated: same-cpu, smt, core, llc, node
    #[arg(long, value_name = "LIST", value_parser = parse_placements)]
    pub placement: Option<Placements>,
    /// Length of one repetition, within [`select::DURATION`]
    #[arg(long, value_name = "TIME", value_parser = select::duration, allow_hyphen_values = true,
          help = select::DURATION.help("Length of one repetition"))]
    pub duration: Option<Duration>,
    /// How many runs (the FAME rule).
    #[command(flatten)]
    pub repetition: Repetition,
    /// Where the results go.
    #[command(flatten)]
    pub output: Output,
}

/// How many times to measure: the FAME rule's options, the same for `spinlab run` and
/// `spinlab app` (where a repetition is one run of the program).
#[derive(Args, Clone, Debug)]
pub struct Repetition {
    /// FAME: stop repeating when another repetition would move the mean by less than PCT percent
    #[arg(long, value_name = "PCT", default_value = "1", value_parser = select::maiv, allow_hyphen_values = true,
          help = format!("FAME: stop repeating when another repetition would move the mean by less than PCT \
                          percent; accepted: {}", select::MAIV_ACCEPTED))]
    pub maiv: f64,
    /// At least this many measured repetitions, within [`select::REPS`]
    #[arg(long, value_name = "N", value_parser = select::reps, allow_hyphen_values = true,
          help = select::REPS.help("At least this many measured repetitions"))]
    pub min_reps: Option<usize>,
    /// At most this many measured repetitions, within [`select::REPS`]
    #[arg(long, value_name = "N", value_parser = select::reps, allow_hyphen_values = true,
          help = select::REPS.help("At most this many measured repetitions"))]
    pub max_reps: Option<usize>,
}

impl Default for Repetition {
    fn default() -> Self {
        Repetition { maiv: 1.0, min_reps: None, max_reps: None }
    }
}

impl Repetition {
    /// The stopping rule, with the measurement's default counts where none were given.
    pub fn rule(&self, default_min: usize, default_max: usize) -> Result<StoppingRule, LabError> {
        // A bound given alone moves the other default out of its way.
        let min_reps = self.min_reps.unwrap_or(match self.max_reps {
            Some(max) => default_min.min(max),
            None => default_min,
        });
        let max_reps = self.max_reps.unwrap_or(default_max.max(min_reps));
        if min_reps > max_reps {
            return Err(LabError::usage(format!(
                "--min-reps {min_reps} is above --max-reps {max_reps}; the minimum cannot exceed the maximum"
            )));
        }
        Ok(StoppingRule { maiv_pct: self.maiv, min_reps, max_reps })
    }
}

/// Where the results go, the same for `spinlab run` and `spinlab app`.
#[derive(Args, Clone, Debug, Default)]
pub struct Output {
    /// Write the results document (spinlab.results/1) to FILE (`-`: stdout, tables go to stderr)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the rows as CSV to FILE (`-`: stdout)
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// No progress bar
    #[arg(long)]
    pub quiet: bool,
}

/// An experiment's options as `spinlab run NAME` with no options gives them (its documented
/// defaults, which a derived `Default` may not be).
pub fn cli_defaults<T: Args + FromArgMatches>() -> T {
    let command = T::augment_args(clap::Command::new("spinlab-report"));
    let matches = command
        .try_get_matches_from(["spinlab-report"])
        .unwrap_or_else(|e| panic!("an experiment's options must parse with no arguments: {e}"));
    T::from_arg_matches(&matches).unwrap_or_else(|e| panic!("an experiment's default options: {e}"))
}

/// Declares each experiment's module and lists it in [`entries`].
macro_rules! experiments {
    ($($module:ident :: $options:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Every experiment, in the order a report runs them (the floors first).
        /// `spinlab run NAME`, `spinlab report` and its `--only` all read this list.
        fn entries() -> Vec<Entry> {
            vec![$(entry::<$module::$options>()),*]
        }
    };
}

// The one list an experiment is added to: `module::Options`, in report order.
experiments! {
    floor::Floor,
    contention::Contention,
    herd::Herd,
    interference::Interference,
    handoff::Handoff,
    wakeup::Wakeup,
    barrier::BarrierExperiment,
    spr::Spr,
}

/// An experiment of the list: its options as an empty command line gives them, and how the
/// command line adds and reads them.
struct Entry {
    defaults: Box<dyn Experiment>,
    args: fn(clap::Command) -> clap::Command,
    parse: fn(&ArgMatches) -> Result<Box<dyn Experiment>, clap::Error>,
}

fn entry<T: Experiment + Args + FromArgMatches + 'static>() -> Entry {
    Entry {
        // The options an empty command line gives: a derived `Default` would set clap's
        // `default_value`s to zero (Spr's did, and hung the report).
        defaults: Box::new(cli_defaults::<T>()),
        args: T::augment_args,
        parse: |matches| Ok(Box::new(T::from_arg_matches(matches)?)),
    }
}

/// Every experiment with its default options, in the order a report runs them (the floors
/// first). `spinlab report` can run each with a [`Common`] of its choosing.
pub fn all() -> Vec<Box<dyn Experiment>> {
    entries().into_iter().map(|e| e.defaults).collect()
}

/// `spinlab run NAME [OPTIONS]`: one subcommand per experiment of the list, each taking the
/// [`Common`] options and its own.
pub struct RunCommand {
    /// The experiment, with the options given.
    pub experiment: Box<dyn Experiment>,
    /// The common options given.
    pub common: Common,
}

impl std::fmt::Debug for RunCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunCommand").field("experiment", &self.experiment.name()).field("common", &self.common).finish()
    }
}

impl FromArgMatches for RunCommand {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let Some((name, options)) = matches.subcommand() else {
            return Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand));
        };
        let Some(entry) = entries().into_iter().find(|e| e.defaults.name() == name) else {
            return Err(clap::Error::new(clap::error::ErrorKind::InvalidSubcommand));
        };
        Ok(RunCommand { experiment: (entry.parse)(options)?, common: Common::from_arg_matches(options)? })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = RunCommand::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Subcommand for RunCommand {
    fn augment_subcommands(command: clap::Command) -> clap::Command {
        entries().into_iter().fold(command, |command, e| {
            // After the options: deriving `Args` makes a struct's doc comment the about.
            let run = (e.args)(Common::augment_args(clap::Command::new(e.defaults.name())));
            command.subcommand(run.about(e.defaults.about()).long_about(None))
        })
    }

    fn augment_subcommands_for_update(command: clap::Command) -> clap::Command {
        RunCommand::augment_subcommands(command)
    }

    fn has_subcommand(name: &str) -> bool {
        entries().iter().any(|e| e.defaults.name() == name)
    }
}

impl Common {
    /// The stopping rule, with the experiment's default counts where none were given.
    pub fn rule(&self, default_min: usize, default_max: usize) -> Result<StoppingRule, LabError> {
        self.repetition.rule(default_min, default_max)
    }

    /// The names of the experiment-selectable options that were given.
    pub fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        if self.locks.is_some() {
            given.push("locks");
        }
        if self.waits.is_some() {
            given.push("waits");
        }
        if self.threads.is_some() {
            given.push("threads");
        }
        if self.placement.is_some() {
            given.push("placement");
        }
        if self.duration.is_some() {
            given.push("duration");
        }
        given
    }

    /// Locks given, or `default` names.
    pub fn locks_or(&self, default: &[&str]) -> Vec<LockChoice> {
        match &self.locks {
            Some(l) => l.0.clone(),
            None => select::default_locks(default),
        }
    }

    /// Thread counts given, or `default`, resolved for `cpus`; a usage error when one is above
    /// [`select::max_threads`].
    pub fn threads_or(&self, default: &[ThreadCount], cpus: usize) -> Result<Vec<usize>, LabError> {
        let given = self.threads.as_ref();
        select::resolve_threads(given.map_or(default, |t| &t.0), cpus).map_err(|e| {
            LabError::usage(match given {
                Some(_) => format!("--threads: {e}"),
                None => format!("the default thread counts are too many here: {e}; give --threads"),
            })
        })
    }

    /// Placements given, or all of them.
    pub fn placements_or_all(&self) -> Vec<Placement> {
        self.placement.as_ref().map_or_else(|| Placement::ALL.to_vec(), |p| p.0.clone())
    }
}

/// Divides `measure` of every row by each reference lock's (rows whose origin is
/// `reference`), as `{prefix}_vs_{reference}`, with `{prefix}_vs_{reference}_ci95` from the
/// rounds both ran (`rounds`: one slice per row, as `paired_ratio_ci95` pairs them).
///
/// Beside the ratio to the best reference, which each experiment writes too: the best one is
/// picked by this run's means, and where two references are level that picks whichever the
/// noise favoured, so a ratio to "the best" reads low (high, for a time) on average, below the
/// ratio to either reference alone (docs/design.md, "Measurement", has the pooled figures).
/// Only a ratio to one named reference pools across runs.
pub fn add_ratios_to_each_reference(rows: &mut [Row], rounds: &[&[f64]], measure: &str, prefix: &str) {
    let references: Vec<(String, f64, &[f64])> = rows
        .iter()
        .zip(rounds)
        .filter(|(row, _)| row.text(ORIGIN) == Some("reference"))
        .filter_map(|(row, rounds)| Some((row.text(LOCK)?.to_string(), row.number(measure)?, *rounds)))
        .filter(|(_, value, _)| *value > 0.0)
        .collect();
    for (row, own) in rows.iter_mut().zip(rounds) {
        let Some(value) = row.number(measure) else { continue };
        for (name, reference, reference_rounds) in &references {
            row.set(&format!("{prefix}_vs_{name}"), value / reference);
            row.set(&format!("{prefix}_vs_{name}_ci95"), paired_ratio_ci95(own, reference_rounds));
        }
    }
}

/// The end of an experiment's `run` that makes one run: the progress bar removed, the run
/// given its rows and the time since `started`.
pub fn finish(progress: &Progress, mut run: Run, rows: Vec<Row>, started: Instant) -> Result<Vec<Run>, LabError> {
    progress.finish();
    run.rows = rows;
    run.elapsed_s = started.elapsed().as_secs_f64();
    Ok(vec![run])
}

/// Checks that `experiment` uses every option given.
pub fn check_options(experiment: &dyn Experiment, common: &Common) -> Result<(), LabError> {
    for option in common.given() {
        if !experiment.uses().contains(&option) {
            return Err(LabError::usage(format!(
                "`spinlab run {}` does not take --{option}; it takes {}",
                experiment.name(),
                if experiment.uses().is_empty() {
                    "none of --locks/--waits/--threads/--placement/--duration".to_string()
                } else {
                    experiment.uses().iter().map(|o| format!("--{o}")).collect::<Vec<_>>().join(", ")
                }
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Parse {
        #[command(flatten)]
        common: Common,
    }

    #[test]
    fn default_common_options_are_what_an_empty_command_line_gives() {
        let parsed = Parse::parse_from(["x"]).common;
        let default = Common::default();
        assert_eq!(parsed.repetition.maiv, default.repetition.maiv);
        assert_eq!(parsed.given(), default.given());
        assert_eq!(default.rule(3, 10).unwrap(), StoppingRule { maiv_pct: 1.0, min_reps: 3, max_reps: 10 });
        let only_max =
            Common { repetition: Repetition { max_reps: Some(2), ..Repetition::default() }, ..Common::default() };
        assert_eq!(only_max.rule(3, 10).unwrap(), StoppingRule { maiv_pct: 1.0, min_reps: 2, max_reps: 2 });
        let only_min =
            Common { repetition: Repetition { min_reps: Some(20), ..Repetition::default() }, ..Common::default() };
        assert_eq!(only_min.rule(3, 10).unwrap(), StoppingRule { maiv_pct: 1.0, min_reps: 20, max_reps: 20 });
        let both = Common {
            repetition: Repetition { min_reps: Some(5), max_reps: Some(2), ..Repetition::default() },
            ..Common::default()
        };
        assert!(both.rule(3, 10).is_err());
        // The floors first: every other figure is read against them. Names are unique, since
        // `spinlab run NAME` and `report --only` find an experiment by its name.
        let names: Vec<&str> = all().iter().map(|e| e.name()).collect();
        assert_eq!(names.first(), Some(&"floor"));
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
    }
}
