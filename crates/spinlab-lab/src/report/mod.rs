//! `spinlab report`: every experiment on this machine, in one go, into a folder:
//! `results.json` (one `spinlab.results/1` document), `results.csv`, and `index.html` (the
//! verdict, the scorecard, the machine, a figure per experiment). The terminal gets one
//! progress bar per experiment and, at the end, a summary of 40 lines at most.
//!
//! - [`settings`]: how long each experiment runs (short by default, the papers' lengths with
//!   `--full`).
//! - [`figures`] and [`plot`](crate::reading::plot): the charts, from the rows' keys.
//! - [`recommend`]: the recommendation, from the numbers; [`verdict`] lays it out.
//! - [`scorecard`]: the seeds' claims against this run (and other machines' committed runs).
//! - [`settle`]: more repetitions, within a budget, for the claims the runs left unsettled.
//! - [`html`]: the page; [`terminal`]: the summary; [`lines`] and [`escape`]: the text
//!   helpers both use.
//! - [`apps`]: the section "real programs" (`--apps`: the suite of `spinlab apps`).

pub mod apps;
pub mod escape;
pub mod figures;
pub mod html;
pub mod lines;
pub mod recommend;
pub mod scorecard;
pub mod settings;
pub mod settle;
pub mod terminal;
pub mod transfer;
pub mod verdict;

use crate::error::LabError;
use crate::experiments::settings::{Length, Step};
use crate::experiments::{self, check_options, Lab};
use crate::measure::load::Meter;
use crate::measure::pin::allowed_cpus;
use crate::reading::scorecard::Remeasure;
use crate::results::output::Outputs;
use crate::results::{Results, Row, Run, TRANSFER_AFTER_NS, TRANSFER_BEFORE_NS};
use clap::Args;
use scorecard::Scorecard;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A list of experiment names (`--only`).
#[derive(Clone, Debug)]
pub struct Only(pub Vec<String>);

fn parse_only(text: &str) -> Result<Only, String> {
    let known: Vec<&str> = experiments::all().iter().map(|e| e.name()).collect();
    let mut names = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !known.contains(&name) {
            return Err(format!("`{name}` is not an experiment; the experiments are {}", known.join(", ")));
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    if names.is_empty() {
        return Err(format!("give at least one experiment: {}", known.join(", ")));
    }
    Ok(Only(names))
}

/// Options of `spinlab report`.
#[derive(Args, Clone, Debug)]
pub struct ReportOptions {
    /// Folder for index.html, results.json and results.csv (created if missing)
    #[arg(long, value_name = "DIR", default_value = "report")]
    pub out: PathBuf,
    /// Run the experiments at the papers' lengths (much longer) instead of short settings
    #[arg(long)]
    pub full: bool,
    /// Only these experiments, comma-separated (default: all of them, the floors first)
    #[arg(long, value_name = "LIST", value_parser = parse_only)]
    pub only: Option<Only>,
    /// Measure nothing: draw the report of an existing results document (results.json);
    /// repeatable, to join the documents of one machine measured in parts (`--only`)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["full", "only", "smoke"])]
    pub from: Vec<PathBuf>,
    /// The least measuring that still exercises every experiment (for tests; numbers are noise)
    #[arg(long, hide = true, conflicts_with = "full")]
    pub smoke: bool,
    /// Another machine's results.json (e.g. docs/machines/NAME/results.json), shown as a
    /// column of the scorecard; repeatable
    #[arg(long, value_name = "FILE",
          help = format!("Another machine's results.json (e.g. docs/machines/NAME/results.json), shown as a column \
                          of the scorecard; repeatable, at most {}", scorecard::MAX_BESIDE))]
    pub beside: Vec<PathBuf>,
    /// Seconds all re-measurements of unsettled claims may take, 0 for none (default: 90,
    /// none with --smoke)
    #[arg(long, value_name = "S", value_parser = parse_settle_total, conflicts_with = "from",
          help = format!("Seconds all re-measurements of unsettled claims may take, 0 for none (default: {}, \
                          none with --smoke); accepted: {}", settle::TOTAL_BUDGET_S, settle::TOTAL_BOUNDS.accepted()))]
    pub settle_s: Option<u64>,
    /// Seconds the re-measurements of one unsettled claim may take (default: 20)
    #[arg(long, value_name = "S", value_parser = parse_settle_claim, conflicts_with = "from",
          help = format!("Seconds the re-measurements of one unsettled claim may take (default: {}); accepted: {}",
                         settle::CLAIM_BUDGET_S, settle::CLAIM_BOUNDS.accepted()))]
    pub settle_claim_s: Option<u64>,
    /// Also run the suite of real programs (`spinlab apps` with its defaults; it takes
    /// minutes) and add the section "real programs"
    #[arg(long, conflicts_with = "from")]
    pub apps: bool,
    /// No progress bars
    #[arg(long)]
    pub quiet: bool,
}

fn parse_settle_total(text: &str) -> Result<u64, String> {
    settle::TOTAL_BOUNDS.parse(text)
}

fn parse_settle_claim(text: &str) -> Result<u64, String> {
    settle::CLAIM_BOUNDS.parse(text)
}

impl ReportOptions {
    /// The settling budget: the options', else the defaults (none for a smoke report).
    fn budget(&self) -> settle::Budget {
        let default = if self.smoke { 0 } else { settle::TOTAL_BUDGET_S };
        settle::Budget {
            claim_s: self.settle_claim_s.unwrap_or(settle::CLAIM_BUDGET_S) as f64,
            total_s: self.settle_s.unwrap_or(default) as f64,
        }
    }
}

/// The three files of a report.
struct Files {
    json: PathBuf,
    csv: PathBuf,
    index: PathBuf,
}

/// The three files of a report in `dir`.
fn paths(dir: &Path) -> Files {
    Files { json: dir.join("results.json"), csv: dir.join("results.csv"), index: dir.join("index.html") }
}

/// Runs `spinlab report`.
pub fn report(sys_root: &Path, options: &ReportOptions) -> Result<(), LabError> {
    std::fs::create_dir_all(&options.out)
        .map_err(|e| LabError::usage(format!("--out {}: cannot create the folder: {e}", options.out.display())))?;
    let Files { json, csv, index } = paths(&options.out);
    // Checked before anything runs, so a long run never ends in a failure to save it.
    let outputs = Outputs::check(Some(&json), Some(&csv))?;
    crate::results::output::Sink::check("index.html", &index)?;
    // Read before anything runs, so a bad path fails at once rather than after the run.
    let beside = scorecard::beside(&options.beside)?;

    let (mut results, attempts) = if options.from.is_empty() {
        measure(sys_root, options)?
    } else {
        (crate::results::load_together(&options.from)?, Vec::new())
    };
    let ctx = crate::reading::Context::new(&results);
    // Without `--beside`, the machines committed in the repository (when run from its root)
    // say where the claims this machine cannot test were tested.
    let committed = if options.beside.is_empty() { scorecard::committed(Path::new(".")) } else { Vec::new() };
    let mut card = Scorecard::new(&ctx, beside).with_committed(committed);
    card.attempts = attempts;
    // Drawn from the runs every time, as the scorecard is: a document written before these
    // lines existed renders the same as a new one.
    let advice = recommend::recommend(&ctx);
    results.scorecard = card.lines();
    results.recommendation = advice.iter().map(|a| a.entry()).collect();
    outputs.write(&results)?;
    let page = html::page(&results, &advice, &card);
    std::fs::write(&index, page).map_err(|e| LabError::failed(format!("writing {}: {e}", index.display())))?;
    print!("{}", terminal::summary(&results, &advice, &card, [&index, &json, &csv]));
    Ok(())
}

fn measure(sys_root: &Path, options: &ReportOptions) -> Result<(Results, Vec<settle::Attempt>), LabError> {
    let length = if options.smoke {
        Length::Smoke
    } else if options.full {
        Length::Full
    } else {
        Length::Short
    };
    let lab = Lab::new(sys_root, !options.quiet)?;
    let steps: Vec<Step> = settings::plan(length, lab.cpus())
        .into_iter()
        .filter(|s| options.only.as_ref().is_none_or(|o| o.0.iter().any(|n| n == s.experiment.name())))
        .collect();
    let mut results = Results::new(&lab.machine);
    let started = Instant::now();
    for (i, step) in steps.iter().enumerate() {
        if !options.quiet {
            eprintln!("[{}/{}] {} ({:.0} s so far)", i + 1, steps.len(), step.label, started.elapsed().as_secs_f64());
        }
        check_options(step.experiment.as_ref(), &step.common)?;
        let meter = Meter::start(&allowed_cpus());
        let transfer_before = line_transfer_ns(&lab);
        let step_started = Instant::now();
        let mut runs = match crate::experiments::measure(step.experiment.as_ref(), &lab, &step.common) {
            Ok(runs) => runs,
            // One experiment failing leaves the others' results standing; the report says why.
            Err(e) => {
                eprintln!("warning: {} failed: {e}", step.experiment.name());
                let mut run = Run::new(step.experiment.name());
                run.rows.push(Row::new().skipped(format!("the experiment failed: {e}")));
                run.elapsed_s = step_started.elapsed().as_secs_f64();
                vec![run]
            }
        };
        let load = meter.finish();
        let transfer_after = line_transfer_ns(&lab);
        for run in runs.iter_mut() {
            run.stamp_load(&load);
            if let (Some(before), Some(after)) = (transfer_before, transfer_after) {
                run.param(TRANSFER_BEFORE_NS, before).param(TRANSFER_AFTER_NS, after);
            }
            run.param("report_length", length.name());
        }
        results.runs.extend(runs);
    }
    let budget = options.budget();
    let attempts = if budget.total_s > 0.0 {
        let mut again = |remeasure: &Remeasure, repetitions: usize| {
            if !options.quiet {
                eprintln!(
                    "re-measuring {} with {repetitions} repetitions ({:.0} s so far)",
                    remeasure.experiment,
                    started.elapsed().as_secs_f64()
                );
            }
            measure_again(&lab, length, remeasure, repetitions)
        };
        settle::settle(&mut results, budget, &mut again)
    } else {
        Vec::new()
    };
    if options.apps {
        if !options.quiet {
            eprintln!("real programs ({:.0} s so far)", started.elapsed().as_secs_f64());
        }
        results.runs.push(measure_apps(options.quiet));
    }
    Ok((results, attempts))
}

/// The suite of `spinlab apps` with its defaults; a run with one skipped row when it cannot
/// start (no preload library).
fn measure_apps(quiet: bool) -> Run {
    let mut options: crate::apps::AppsOptions = crate::experiments::options::cli_defaults();
    options.output.quiet = quiet;
    match options.settings() {
        Ok(settings) => crate::apps::measure(&options.entries(), &settings),
        Err(e) => {
            eprintln!("warning: the real programs cannot run: {e}");
            let mut run = Run::new(apps::EXPERIMENT);
            run.rows.push(Row::new().skipped(format!("the suite could not start: {e}")));
            run
        }
    }
}

/// Every report step of `remeasure`'s experiment at `length`, restricted as it declares, with
/// `repetitions` of each configuration.
fn measure_again(lab: &Lab, length: Length, remeasure: &Remeasure, repetitions: usize) -> Result<Vec<Run>, LabError> {
    let mut runs = Vec::new();
    for step in settings::plan(length, lab.cpus()).into_iter().filter(|s| s.experiment.name() == remeasure.experiment) {
        let common = settle::restricted(&step.common, remeasure, repetitions)?;
        check_options(step.experiment.as_ref(), &common)?;
        let meter = Meter::start(&allowed_cpus());
        let started = Instant::now();
        let mut these = crate::experiments::measure(step.experiment.as_ref(), lab, &common)?;
        let load = meter.finish();
        // Settling charges a round the runs' `elapsed_s`: the wall time not in them yet goes
        // on the last, so the budget sees every second the round took.
        let unrecorded = started.elapsed().as_secs_f64() - these.iter().map(|r| r.elapsed_s).sum::<f64>();
        if let Some(last) = these.last_mut().filter(|_| unrecorded > 0.0) {
            last.elapsed_s += unrecorded;
        }
        for run in these.iter_mut() {
            run.stamp_load(&load);
            run.param("report_length", length.name());
        }
        runs.extend(these);
    }
    Ok(runs)
}

/// One repetition of the floor's ping-pong between the first two usable CPUs (a few
/// milliseconds): the cost of moving a line, taken around every run so that a machine that
/// changed under one is seen. `None` with one usable CPU, or when the two threads could not
/// start (the run's own figures stand either way).
fn line_transfer_ns(lab: &Lab) -> Option<f64> {
    let probe = experiments::floor::first_pair_transfer(&allowed_cpus(), &lab.clock);
    probe.ok().flatten().map(|t| t.ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settling_budgets_are_checked_and_a_smoke_report_settles_nothing_unless_asked() {
        assert_eq!(parse_settle_total("0"), Ok(0));
        let too_long = parse_settle_total("3601").unwrap_err();
        assert!(too_long.contains("3601") && too_long.contains("3600"), "{too_long}");
        assert!(parse_settle_claim("0").unwrap_err().contains("1"), "a claim's budget of 0 is refused");
        assert!(parse_settle_claim("ten").is_err());
        let mut options = ReportOptions {
            out: PathBuf::from("r"),
            full: false,
            only: None,
            from: Vec::new(),
            smoke: false,
            beside: Vec::new(),
            settle_s: None,
            settle_claim_s: None,
            apps: false,
            quiet: true,
        };
        assert_eq!(options.budget(), settle::Budget::DEFAULT);
        options.smoke = true;
        assert_eq!(options.budget().total_s, 0.0);
        options.settle_s = Some(30);
        options.settle_claim_s = Some(5);
        assert_eq!(options.budget(), settle::Budget { claim_s: 5.0, total_s: 30.0 });
    }
}
