//! The command-line options every experiment shares: [`Common`] (lists of locks, policies,
//! thread counts and placements, the repetition rule, the outputs), and [`cli_defaults`],
//! an experiment's options as an empty command line gives them.

use crate::error::LabError;
use crate::machine::Placement;
use crate::measure::StoppingRule;
use crate::select::{self, LockChoice, ThreadCount};
use clap::{Args, FromArgMatches};
use std::path::PathBuf;
use std::time::Duration;

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

/// Options every experiment understands (each uses those it lists in
/// [`Experiment::uses`](super::Experiment::uses)).
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
    }
}
