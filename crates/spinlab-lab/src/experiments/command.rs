//! `spinlab run NAME [OPTIONS]`: the subcommand glue that makes every experiment of the
//! list a subcommand, and the check that an experiment takes each option given.

use super::options::Common;
use super::{entries, Experiment};
use crate::error::LabError;
use clap::{ArgMatches, Args, FromArgMatches, Subcommand};

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
