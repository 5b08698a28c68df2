//! The experiments: one trait, one file or folder each.
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
//! Adding one: its module here, its line in the list of experiments below (which makes it a `spinlab run`
//! subcommand and a report step), and a page in docs/.

pub mod barrier;
pub mod command;
pub mod contention;
pub mod driver;
pub mod floor;
pub mod handoff;
pub mod herd;
pub mod interference;
pub mod lab;
pub mod moved;
pub mod options;
pub mod ratios;
pub mod settings;
pub mod spr;
pub mod wakeup;

pub use command::{check_options, RunCommand};
pub use lab::Lab;
pub use options::{cli_defaults, Common, Locks, Output, Placements, Repetition, Threads, Waits};

use crate::error::LabError;
use crate::reading::advice::Contribution;
use crate::reading::scorecard::Finding;
use crate::reading::{Context, Panel};
use crate::results::table::{self, Column};
use crate::results::Run;
use clap::{ArgMatches, Args, FromArgMatches};
use settings::{Length, Step};

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

/// Runs `experiment`, and puts each run's rows through its row type
/// ([`write_through`](crate::results::rows::write_through)), as `spinlab run` and
/// `spinlab report` write them.
pub fn measure(experiment: &dyn Experiment, lab: &Lab, common: &Common) -> Result<Vec<Run>, LabError> {
    let mut runs = experiment.run(lab, common)?;
    for run in &mut runs {
        crate::results::rows::write_through(run)
            .map_err(|e| LabError::failed(format!("{e}: the experiment wrote a row its type does not hold")))?;
    }
    Ok(runs)
}

/// Every experiment, in the order a report runs them (the floors first).
/// `spinlab run NAME`, `spinlab report` and its `--only` all read this list.
fn entries() -> Vec<Entry> {
    vec![
        entry::<floor::Floor>(),
        entry::<contention::Contention>(),
        entry::<herd::Herd>(),
        entry::<interference::Interference>(),
        entry::<handoff::Handoff>(),
        entry::<wakeup::Wakeup>(),
        entry::<barrier::BarrierExperiment>(),
        entry::<spr::Spr>(),
    ]
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
        // `default_value`s to zero, and a zero count can keep an experiment from ending.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floors_come_first_and_every_name_is_unique() {
        // The floors first: every other figure is read against them. Names are unique, since
        // `spinlab run NAME` and `report --only` find an experiment by its name.
        let names: Vec<&str> = all().iter().map(|e| e.name()).collect();
        assert_eq!(names.first(), Some(&"floor"));
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
    }
}
