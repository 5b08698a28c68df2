//! `spinlab apps`: a suite of real multithreaded programs from Debian, each under every lock
//! chosen through the preload library and under glibc (no library), each measured by its
//! own metric, parsed from its own output.
//!
//! Per program: its packages are installed when missing (or the program is a skipped row);
//! what it needs is prepared once in a temporary folder (a database, an input file), untimed;
//! one unmeasured run under glibc warms the caches and proves the command works; then rounds
//! run glibc and every lock once each, interleaved, so that a drift of the machine spreads
//! over every treatment. A lock repeats until the FAME rule settles its metric (or `--reps`);
//! glibc runs in every round while any lock does, so that each lock's ratio to glibc has its
//! interval from the rounds both ran in ([`paired_ratio_ci95`]).
//!
//! A run fails when it exits non-zero or by a signal, runs past its time limit (killed with
//! its process group), or its check finds a wrong result. The lock's row then says why and
//! the lock is not run again on that program; the suite goes on. A program with a server
//! (memcached) starts it before each run on a port chosen free, under the lock, and drives
//! it with a load generator that runs plain; the server is stopped after the load and killed
//! if spinlab is interrupted. See docs/apps.md.

mod install;
pub mod metric;
pub mod server;
pub mod suite;
pub mod verdict;

use crate::app::{self, kill_the_group_on_termination, run_once, Launch};
use crate::error::LabError;
use crate::experiments::options::{Output as OutputOptions, Repetition};
use crate::machine::{MachineInfo, Topology};
use crate::measure::fame::{StoppingRule, Verdict};
use crate::measure::load::Meter;
use crate::measure::pin::allowed_cpus;
use crate::measure::stats::{paired_ratio_ci95, Summary};
use crate::results::output::Outputs;
use crate::results::rows::{AppsRow, Nullable, RowType};
use crate::results::table::{self, col};
use crate::results::{Results, Run};
use crate::select::{self, LockChoice, TimeBounds};
use clap::Args;
use install::{absent_binary, install};
use metric::Output;
use server::Running;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use suite::{Better, Context, Entry};

/// The name of the treatment without the library.
pub const GLIBC: &str = "glibc";

/// `--timeout`: per run, from a millisecond to an hour (an entry's own limit may be lower).
pub const TIMEOUT: TimeBounds = TimeBounds { min: Duration::from_millis(1), max: Duration::from_secs(3600) };

/// `--input-mb`: the size of generated inputs (pigz's), in MiB.
pub const INPUT_MB: select::Bounds = select::Bounds::new(1, 4096).unit("MiB");

/// A `--locks` value: locks the preload library can run.
#[derive(Clone, Debug)]
pub struct Locks(pub Vec<LockChoice>);

fn parse_locks(text: &str) -> Result<Locks, String> {
    let locks = select::lock_list(text)?;
    if let Some(why) = locks.iter().find_map(app::refused) {
        return Err(why);
    }
    Ok(Locks(locks))
}

/// A `--programs` value.
#[derive(Clone, Debug)]
pub struct Programs(pub Vec<&'static Entry>);

fn parse_programs(text: &str) -> Result<Programs, String> {
    suite::pick(text).map(Programs)
}

/// The locks run when `--locks` is not given: the default, the reference locks the library
/// can run, and every algorithm over `spin-park` that fits in a `pthread_mutex_t`.
pub fn default_locks() -> Vec<LockChoice> {
    let mut names: Vec<String> = vec![select::DEFAULT_ALIAS.to_string()];
    names.extend(spinlab_registry::REFERENCE_LOCKS.iter().map(|r| r.to_string()));
    names.extend(spinlab_registry::ALGORITHMS.iter().map(|a| format!("{a}:spin-park")));
    let mut out: Vec<LockChoice> = Vec::new();
    for name in &names {
        let Ok(lock) = select::lock(name) else { continue };
        if app::refused(&lock).is_none() && !out.iter().any(|l| l.name() == lock.name()) {
            out.push(lock);
        }
    }
    out
}

/// `spinlab apps`'s options.
#[derive(Args, Clone, Debug)]
#[command(
    mut_arg("maiv", |a| a.help(format!("FAME: stop repeating a lock when another run would move the mean of its \
                                        metric by less than PCT percent; accepted: {}", select::MAIV_ACCEPTED))),
    mut_arg("min_reps", |a| a.help(select::REPS.help("At least this many runs per lock and program (default 3)"))),
    mut_arg("max_reps", |a| a.help(select::REPS.help("At most this many runs per lock and program (default 10)"))),
    mut_arg("quiet", |a| a.help("No progress lines on stderr")),
)]
pub struct AppsOptions {
    /// Locks, comma-separated (default: the default, parking_lot, pthread and every algorithm
    /// over spin-park that fits in a pthread_mutex_t)
    #[arg(long, value_name = "LIST", value_parser = parse_locks)]
    pub locks: Option<Locks>,
    /// Programs of the suite, comma-separated (default: all)
    #[arg(long, value_name = "LIST", value_parser = parse_programs,
          help = format!("Programs of the suite, comma-separated (default: all): {}",
                         suite::SUITE.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")))]
    pub programs: Option<Programs>,
    /// Exactly N runs per lock and program (instead of the FAME rule)
    #[arg(long, value_name = "N", value_parser = select::reps, conflicts_with_all = ["min_reps", "max_reps"],
          allow_hyphen_values = true,
          help = select::REPS.help("Exactly N runs per lock and program (instead of the FAME rule)"))]
    pub reps: Option<usize>,
    /// How many runs (the FAME rule).
    #[command(flatten)]
    pub repetition: Repetition,
    /// Kill a run that takes longer than this (an entry's own limit may be lower)
    #[arg(long, value_name = "TIME", default_value = "120s", value_parser = |s: &str| TIMEOUT.parse(s),
          allow_hyphen_values = true,
          help = TIMEOUT.help("Kill a run that takes longer than this, with its process group; the lock fails on \
                               that program (an entry's own limit may be lower)"))]
    pub timeout: Duration,
    /// Size of generated inputs (pigz's file)
    #[arg(long, value_name = "MIB", default_value = "64", value_parser = |s: &str| INPUT_MB.parse::<u64>(s),
          help = INPUT_MB.help("Size of generated inputs (pigz's file)"))]
    pub input_mb: u64,
    /// Do not install missing packages: their programs are skipped
    #[arg(long)]
    pub no_install: bool,
    /// Where the results go.
    #[command(flatten)]
    pub output: OutputOptions,
}

impl AppsOptions {
    /// The settings of a run of the suite with these options.
    pub fn settings(&self) -> Result<Settings, LabError> {
        let rule = match self.reps {
            Some(n) => StoppingRule { maiv_pct: self.repetition.maiv, min_reps: n, max_reps: n },
            None => self.repetition.rule(3, 10)?,
        };
        Ok(Settings {
            locks: self.locks.as_ref().map_or_else(default_locks, |l| l.0.clone()),
            rule,
            timeout: self.timeout,
            preload: app::preload_path()?,
            input_bytes: self.input_mb << 20,
            install: !self.no_install,
            quiet: self.output.quiet,
            scratch: std::env::temp_dir().join(format!("spinlab-apps-{}", std::process::id())),
        })
    }

    /// The programs chosen.
    pub fn entries(&self) -> Vec<&'static Entry> {
        self.programs.as_ref().map_or_else(|| suite::SUITE.iter().collect(), |p| p.0.clone())
    }
}

/// How a run of the suite runs.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The locks, besides glibc.
    pub locks: Vec<LockChoice>,
    /// When to stop repeating a lock.
    pub rule: StoppingRule,
    /// A run's time limit (an entry's own may be lower).
    pub timeout: Duration,
    /// The preload library.
    pub preload: PathBuf,
    /// The size of generated inputs.
    pub input_bytes: u64,
    /// Install missing packages.
    pub install: bool,
    /// No progress lines.
    pub quiet: bool,
    /// The folder the programs' temporary folders go in (removed after the suite).
    pub scratch: PathBuf,
}

/// Runs `spinlab apps`.
pub fn run(sys_root: &Path, options: &AppsOptions) -> Result<(), LabError> {
    let outputs = Outputs::check(options.output.json.as_deref(), options.output.csv.as_deref())?;
    let settings = options.settings()?;
    let topology = Topology::read(sys_root).map_err(|e| LabError::failed(format!("reading the topology: {e}")))?;
    let machine = MachineInfo::gather(sys_root, &topology);
    let run = measure(&options.entries(), &settings);
    let rows: Vec<AppsRow> = run.rows_as();
    let mut text = format!("apps ({:.1} s)\n{}\n", run.elapsed_s, render(&rows));
    for line in verdict::lines(&rows) {
        text.push_str(&line);
        text.push('\n');
    }
    let mut results = Results::new(&machine);
    results.runs = vec![run];
    outputs.show_and_write(&text, &results)
}

/// Runs `entries` under every lock of `settings` and glibc: one `apps` run, one row per
/// program and treatment (a skipped row per program that cannot run here).
pub fn measure(entries: &[&Entry], settings: &Settings) -> Run {
    kill_the_group_on_termination();
    let meter = Meter::start(&allowed_cpus());
    let started = Instant::now();
    let missing = if settings.install { install(entries, settings.quiet) } else { None };
    let mut rows = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        if !settings.quiet {
            eprintln!("[{}/{}] {} ({:.0} s so far)", i + 1, entries.len(), entry.name, started.elapsed().as_secs_f64());
        }
        let program = match absent_binary(entry) {
            Some(binary) => {
                let why = match (&missing, settings.install) {
                    (_, false) => {
                        format!("{binary} is not installed (package {}; --no-install)", entry.packages.join(", "))
                    }
                    (Some(why), true) => format!("{binary} is not installed: {why}"),
                    (None, true) => {
                        format!("{binary} is not installed, even after installing {}", entry.packages.join(", "))
                    }
                };
                vec![skipped_row(entry, why)]
            }
            None => program(entry, settings),
        };
        rows.extend(program);
    }
    let _ = std::fs::remove_dir_all(&settings.scratch);
    let load = meter.finish();
    let mut run = Run::new(AppsRow::EXPERIMENT);
    run.param("programs", entries.iter().map(|e| declared(e)).collect::<Vec<_>>())
        .param("locks", settings.locks.iter().map(|l| l.name()).collect::<Vec<_>>())
        .param("preload", settings.preload.display().to_string())
        .param("rule", settings.rule)
        .param("timeout_s", settings.timeout.as_secs_f64())
        .param("input_bytes", settings.input_bytes)
        .param("warmup_runs", 1)
        .stamp_load(&load);
    run.rows = rows.iter().map(RowType::to_row).collect();
    run.elapsed_s = started.elapsed().as_secs_f64();
    run
}

/// An entry as the run's parameters record it.
fn declared(entry: &Entry) -> serde_json::Value {
    serde_json::json!({
        "program": entry.name,
        "packages": entry.packages,
        "threads": entry.threads,
        "server": entry.server.map(|s| s.command.join(" ")),
        "command": entry.command.join(" "),
        "metric": entry.metric.name,
        "unit": entry.metric.unit,
        "better": entry.metric.better.name(),
        "time_limit_s": entry.time_limit.as_secs_f64(),
    })
}

/// A program's row that says why it did not run.
fn skipped_row(entry: &Entry, why: String) -> AppsRow {
    AppsRow { skipped: Some(why), ..head(entry, None) }
}

/// The naming keys of a row of `entry` under `lock` (`None`: glibc).
fn head(entry: &Entry, lock: Option<&LockChoice>) -> AppsRow {
    let metric = entry.metric;
    AppsRow {
        program: Some(entry.name.to_string()),
        lock: Some(lock.map_or(GLIBC, label).to_string()),
        lock_name: lock.filter(|l| l.via_alias).map(|l| l.name().to_string()),
        origin: Some(lock.map_or("baseline", LockChoice::origin).to_string()),
        metric: Some(metric.name.to_string()),
        unit: Some(metric.unit.to_string()),
        better: Some(metric.better.name().to_string()),
        ..AppsRow::default()
    }
}

fn label(lock: &LockChoice) -> &str {
    if lock.via_alias {
        select::DEFAULT_ALIAS
    } else {
        lock.name()
    }
}

/// glibc or one lock on one program, and its runs.
struct Treatment {
    /// `None` for glibc.
    lock: Option<LockChoice>,
    /// The metric of each run that succeeded, in round order.
    values: Vec<f64>,
    walls: Vec<f64>,
    verdict: Verdict,
    failed: Option<String>,
}

impl Treatment {
    fn name(&self) -> &str {
        self.lock.as_ref().map_or(GLIBC, label)
    }
}

/// The files of one entry's runs, in its temporary folder.
struct Files {
    stdout: PathBuf,
    stderr: PathBuf,
    server_stderr: PathBuf,
}

/// One program under glibc and every lock: its rows.
fn program(entry: &Entry, settings: &Settings) -> Vec<AppsRow> {
    let dir = settings.scratch.join(entry.name);
    let ctx = Context { dir: dir.clone(), threads: entry.threads, port: None, input_bytes: settings.input_bytes };
    let rows = match std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display())) {
        Ok(()) => match (entry.prepare)(&ctx) {
            Ok(()) => rounds(entry, settings, &ctx),
            Err(why) => vec![skipped_row(entry, format!("preparing it failed: {why}"))],
        },
        Err(why) => vec![skipped_row(entry, why)],
    };
    let _ = std::fs::remove_dir_all(&dir);
    rows
}

fn rounds(entry: &Entry, settings: &Settings, ctx: &Context) -> Vec<AppsRow> {
    let files = Files {
        stdout: ctx.dir.join("run.stdout"),
        stderr: ctx.dir.join("run.stderr"),
        server_stderr: ctx.dir.join("server.stderr"),
    };
    let mut treatments: Vec<Treatment> = std::iter::once(None)
        .chain(settings.locks.iter().cloned().map(Some))
        .map(|lock| Treatment { lock, values: Vec::new(), walls: Vec::new(), verdict: Verdict::Continue, failed: None })
        .collect();
    // One unmeasured run under glibc: fills the caches and proves the command works here.
    if let Err(why) = run_one(entry, ctx, None, settings, &files) {
        let mut rows = vec![AppsRow { failed: Some(why), ..head(entry, None) }];
        rows.extend(
            settings
                .locks
                .iter()
                .map(|l| AppsRow { skipped: Some("it fails under glibc".into()), ..head(entry, Some(l)) }),
        );
        return rows;
    }
    let mut round = 0;
    // glibc runs in every round while any lock does, so that every lock's round has glibc's
    // beside it, and on until its own rule stops it.
    while treatments.iter().any(|t| !t.verdict.stop()) {
        let locks_going = treatments[1..].iter().any(|t| !t.verdict.stop());
        round += 1;
        for t in treatments
            .iter_mut()
            .filter(|t| !t.verdict.stop() || (t.lock.is_none() && t.failed.is_none() && locks_going))
        {
            match run_one(entry, ctx, t.lock.as_ref(), settings, &files) {
                Ok((value, wall)) => {
                    t.values.push(value);
                    t.walls.push(wall);
                }
                Err(why) => {
                    // A lock under which the program fails once would fail again.
                    t.failed = Some(format!("run {round}: {why}"));
                    t.verdict = Verdict::Stopped;
                }
            }
        }
        for t in treatments.iter_mut().filter(|t| t.failed.is_none()) {
            t.verdict = settings.rule.verdict(&t.values);
        }
        if treatments[0].failed.is_some() {
            // Without glibc's figures no ratio can be drawn: every lock stops with what it has.
            for t in treatments[1..].iter_mut().filter(|t| !t.verdict.stop()) {
                t.verdict = Verdict::Stopped;
            }
            break;
        }
        if !settings.quiet {
            let line: Vec<String> = treatments
                .iter()
                .map(|t| match (&t.failed, t.values.last()) {
                    (Some(_), _) => format!("{} failed", t.name()),
                    (None, Some(v)) => format!("{} {}", t.name(), table::format_number(*v)),
                    (None, None) => format!("{} -", t.name()),
                })
                .collect();
            eprintln!("  {} round {round} ({}): {}", entry.name, entry.metric.unit, line.join(", "));
        }
    }
    rows(entry, &treatments)
}

/// One run of `entry` under `lock` (`None`: glibc): its metric and wall time, or why it failed.
fn run_one(
    entry: &Entry,
    base: &Context,
    lock: Option<&LockChoice>,
    settings: &Settings,
    files: &Files,
) -> Result<(f64, f64), String> {
    let port = match entry.server {
        Some(_) => Some(server::free_port().map_err(|e| format!("choosing a free port: {e}"))?),
        None => None,
    };
    let ctx = Context { port, ..base.clone() };
    let server = match &entry.server {
        Some(s) => {
            let args = ctx.expand(s.command);
            Some(Running::start(s, &args, port, lock, &settings.preload, &files.server_stderr)?)
        }
        None => None,
    };
    // With a server, the server runs under the lock and the load plain.
    let load_lock = if server.is_some() { None } else { lock };
    let command = ctx.expand(entry.command);
    let launch = Launch {
        command: &command,
        lock: load_lock,
        preload: &settings.preload,
        stdout: Some(&files.stdout),
        stderr_path: &files.stderr,
        profile: None,
    };
    let limit = settings.timeout.min(entry.time_limit);
    let ran = run_once(&launch, Some(limit));
    let server_gone = server.map(Running::stop).and_then(|gone| gone);
    let ran = ran.map_err(|e| e.to_string())?;
    let sample = ran.sample;
    if sample.timed_out {
        return Err(format!("killed at its time limit of {limit:?}, with its process group"));
    }
    if let Some(why) = server_gone {
        return Err(why);
    }
    let said = ran.first_stderr_line.map_or_else(String::new, |l| format!("; stderr: {l}"));
    if let Some(signal) = sample.status.strip_prefix("signal ") {
        return Err(format!("killed by signal {signal}{said}"));
    }
    if sample.status != "0" {
        return Err(format!("exit status {}{said}", sample.status));
    }
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    let out = Output { stdout: read(&files.stdout), stderr: read(&files.stderr), wall_s: sample.wall_s };
    (entry.check)(&out, &ctx).map_err(|why| format!("wrong result: {why}"))?;
    let value = (entry.metric.parse)(&out).map_err(|why| format!("no metric: {why}"))?;
    if !value.is_finite() || value <= 0.0 {
        return Err(format!("no metric: {} read as {value}", entry.metric.name));
    }
    Ok((value, sample.wall_s))
}

fn rows(entry: &Entry, treatments: &[Treatment]) -> Vec<AppsRow> {
    let glibc = &treatments[0];
    let glibc_mean = Summary::of(&glibc.values).map(|s| s.mean);
    treatments
        .iter()
        .map(|t| {
            let mut row = head(entry, t.lock.as_ref());
            if let Some(s) = Summary::of(&t.values) {
                row.metric_value = Some(s.mean);
                row.metric_median_value = Some(s.median);
                row.metric_sd_value = Some(s.sd);
                row.metric_ci95_value = s.ci95.into();
                row.metric_min_value = Some(s.min);
                row.metric_max_value = Some(s.max);
                row.reps = Some(s.reps as u64);
                row.wall_s = Summary::of(&t.walls).map(|w| w.mean);
                if t.lock.is_none() {
                    row.ratio_to_glibc = Nullable::Value(1.0);
                    row.ratio_ci95_to_glibc = Nullable::Null;
                } else if t.failed.is_none() {
                    let (ratio, ci95) =
                        ratio_to_glibc(entry.metric.better, &t.values, &glibc.values, s.mean, glibc_mean);
                    row.ratio_to_glibc = ratio.into();
                    row.ratio_ci95_to_glibc = ci95.into();
                }
            }
            if t.failed.is_some() && row.ratio_to_glibc == Nullable::Absent {
                row.ratio_to_glibc = Nullable::Null;
            }
            row.failed = t.failed.clone();
            row.stop = Some(if t.failed.is_some() { "failed".to_string() } else { verdict_name(t.verdict) });
            row
        })
        .collect()
}

/// A lock's ratio to glibc, oriented so that above 1 is better (glibc's time over the lock's,
/// the lock's throughput over glibc's), with its interval from the rounds both ran in.
fn ratio_to_glibc(
    better: Better,
    values: &[f64],
    glibc: &[f64],
    mean: f64,
    glibc_mean: Option<f64>,
) -> (Option<f64>, Option<f64>) {
    let Some(glibc_mean) = glibc_mean.filter(|m| *m > 0.0) else { return (None, None) };
    match better {
        Better::Higher => (Some(mean / glibc_mean), paired_ratio_ci95(values, glibc)),
        Better::Lower => (Some(glibc_mean / mean), paired_ratio_ci95(glibc, values)),
    }
}

fn verdict_name(verdict: Verdict) -> String {
    serde_json::to_value(verdict).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// The terminal table of `rows`.
pub fn render(rows: &[AppsRow]) -> String {
    let rows: Vec<crate::results::Row> = rows.iter().map(RowType::to_row).collect();
    let mut columns = vec![
        col("program", "program"),
        col("lock", "lock"),
        col("metric", "metric"),
        col("metric_value", "value"),
        col("metric_ci95_value", "± 95%"),
        col("ratio_to_glibc", "× glibc"),
        col("ratio_ci95_to_glibc", "± 95%"),
        col("reps", "reps"),
    ];
    if rows.iter().any(|r| r.get("failed").is_some() || r.get("skipped").is_some()) {
        columns.push(col("failed", "failed"));
        columns.push(col("skipped", "skipped"));
    }
    table::render(&rows, &columns)
}

#[cfg(test)]
mod tests;
