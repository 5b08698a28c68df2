//! The `spinlab` command line.

use crate::error::LabError;
use crate::experiments::{check_options, Common, Experiment, Lab, RunCommand};
use crate::machine::{MachineInfo, Topology};
use crate::measure::load::Meter;
use crate::measure::pin::allowed_cpus;
use crate::results::output::Outputs;
use crate::results::Results;
use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::{Path, PathBuf};

/// spinlab: which lock and which wait policy, on this machine, for this critical section and
/// this many threads?
#[derive(Parser, Debug)]
#[command(name = "spinlab", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Read the machine's topology from this sysfs root instead of /sys (for tests)
    #[arg(long, global = true, hide = true, value_name = "DIR", default_value = "/sys")]
    sys_root: PathBuf,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The machine: CPU, topology, wait instructions, clocks, counters, and what is absent
    Info {
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Everything in the registry: locks, wait policies, barriers, events and reader-writer
    /// locks, with availability here and where each kind of name is accepted
    List {
        /// Print JSON, every field of every name, instead of tables
        #[arg(long)]
        json: bool,
        /// Print every field as a table column (the default table keeps to 100 columns)
        #[arg(long, conflicts_with = "json")]
        wide: bool,
    },
    /// Run an experiment
    Run {
        #[command(subcommand)]
        experiment: Box<RunCommand>,
    },
    /// The main job: every experiment on this machine (short settings), then DIR/index.html
    /// with plots and a recommendation, DIR/results.json and DIR/results.csv
    Report(Box<crate::report::ReportOptions>),
    /// Two results documents side by side: matching rows, B/A ratios, and a mark where the
    /// difference exceeds its 95% interval, the root of the sum of the squared half-widths
    Compare {
        /// The first results document (spinlab.results/1)
        a: PathBuf,
        /// The second results document
        b: PathBuf,
    },
    /// A program under each lock through the preload library, and once without it (the
    /// baseline): wall, user and system time and exit status per lock
    App(Box<crate::app::AppOptions>),
    /// Where a program waits: it runs once under one lock with the preload library's
    /// statistics, then DIR/index.html, DIR/profile.pb.gz (pprof) and the top lock sites
    Profile(Box<crate::profile::ProfileOptions>),
    /// A suite of real programs from Debian (sysbench, RocksDB, memcached, pigz, CPython),
    /// each under each lock and under glibc, each by its own metric, with ratios to glibc
    Apps(Box<crate::apps::AppsOptions>),
}

/// Writes to stdout, ignoring a closed pipe (`spinlab list | head`).
fn print_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Runs the command line; returns the exit status.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind::*;
            return match e.kind() {
                DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand => {
                    let _ = e.print();
                    if e.kind() == DisplayHelpOnMissingArgumentOrSubcommand {
                        2
                    } else {
                        0
                    }
                }
                _ => {
                    // clap's first line names the bad input and, through our value parsers,
                    // what is accepted; the usage block after it is left out.
                    let text = e.render().to_string();
                    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("error: bad arguments");
                    eprintln!("{first}");
                    2
                }
            };
        }
    };
    // The locks read SPINLAB_TOPOLOGY themselves and ignore a malformed value; the lab refuses it.
    if let Err(line) = spinlab::sys::topology::declared_from_env() {
        eprintln!("error: {line}");
        return 2;
    }
    match execute(&cli) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

fn execute(cli: &Cli) -> Result<(), LabError> {
    match &cli.command {
        Command::Info { json } => info(&cli.sys_root, *json),
        Command::List { json, wide } => {
            list(*json, *wide);
            Ok(())
        }
        Command::Report(options) => crate::report::report(&cli.sys_root, options),
        Command::Compare { a, b } => {
            print_out(&crate::compare::run(a, b)?);
            Ok(())
        }
        Command::App(options) => crate::app::run(&cli.sys_root, options),
        Command::Profile(options) => crate::profile::run(options),
        Command::Apps(options) => crate::apps::run(&cli.sys_root, options),
        Command::Run { experiment } => run(&cli.sys_root, experiment.experiment.as_ref(), &experiment.common),
    }
}

fn info(sys_root: &Path, json: bool) -> Result<(), LabError> {
    let topology = Topology::read(sys_root).map_err(|e| LabError::failed(format!("reading the topology: {e}")))?;
    let machine = MachineInfo::gather(sys_root, &topology);
    if json {
        let text = serde_json::to_string_pretty(&machine).map_err(|e| LabError::failed(e.to_string()))?;
        print_out(&format!("{text}\n"));
    } else {
        print_out(&machine.render());
    }
    Ok(())
}

fn list(json: bool, wide: bool) {
    use crate::list::{Detail, Listing};
    let listing = Listing::gather();
    if json {
        print_out(&format!("{}\n", serde_json::to_string_pretty(&listing.to_json()).unwrap_or_default()));
    } else {
        print_out(&listing.render(if wide { Detail::Wide } else { Detail::Brief }));
    }
}

fn run(sys_root: &Path, experiment: &dyn Experiment, common: &Common) -> Result<(), LabError> {
    check_options(experiment, common)?;
    // Before anything runs: a results path that cannot be written fails now, not after.
    let outputs = Outputs::check(common.output.json.as_deref(), common.output.csv.as_deref())?;
    let lab = Lab::new(sys_root, !common.output.quiet)?;
    let meter = Meter::start(&allowed_cpus());
    let mut runs = crate::experiments::measure(experiment, &lab, common)?;
    let load = meter.finish();
    for run in runs.iter_mut() {
        run.stamp_load(&load);
    }
    let mut results = Results::new(&lab.machine);
    let mut text = String::new();
    for run in &runs {
        text.push_str(&format!("{} ({:.1} s)\n", run.experiment, run.elapsed_s));
        text.push_str(&experiment.render(run));
        if let Some(why) = run.under_load() {
            text.push_str(&format!("under load: {why}; these figures may not hold\n"));
        }
        text.push('\n');
    }
    if outputs.uses_stdout() {
        eprint!("{text}");
    } else {
        print_out(&text);
    }
    results.runs = runs;
    outputs.write(&results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        // clap checks names, groups and flags only in debug builds, at first use; run the
        // checks here so a release build cannot ship a definition that panics.
        Cli::command().debug_assert();
    }
}
