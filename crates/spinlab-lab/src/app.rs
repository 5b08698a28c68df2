//! `spinlab app`: a real program under each lock, through `libspinlab_preload.so`.
//!
//! The program runs once per repetition without the library (the baseline) and once under
//! each lock, interleaved (baseline, A, B, baseline, A, B, …) so a drift of the machine's
//! speed spreads over every treatment. Each run is a child process: wall time from a
//! monotonic clock around spawn and reap, user and system CPU time from the child's rusage
//! (`wait4`), and its exit status. Each treatment repeats until the FAME rule is satisfied for
//! its wall time (or `--reps N` times exactly). See docs/app.md.

use crate::error::LabError;
use crate::experiments::Common;
use crate::machine::{MachineInfo, Topology};
use crate::measure::fame::{StoppingRule, Verdict};
use crate::measure::stats::Summary;
use crate::results::output::Outputs;
use crate::results::table::{self, col, Column};
use crate::results::{Results, Row, Run};
use crate::select::{self, LockChoice};
use clap::Args;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The preload library's file name, next to the `spinlab` binary.
pub const PRELOAD: &str = "libspinlab_preload.so";

/// A `--locks` value for `spinlab app`.
#[derive(Clone, Debug)]
pub struct AppLocks(pub Vec<LockChoice>);

fn parse_locks(text: &str) -> Result<AppLocks, String> {
    let locks = select::lock_list(text)?;
    for lock in &locks {
        if let Some(why) = refused(lock) {
            return Err(why);
        }
    }
    Ok(AppLocks(locks))
}

/// The room the preload library has for a lock inside glibc's `pthread_mutex_t` on 64-bit
/// Linux: the bytes before the type field glibc keeps reading (the preload library checks the
/// same facts against the running glibc when it starts).
const PTHREAD_MUTEX_LOCK_ROOM: usize = 16;

/// Why the preload library cannot run `lock`, if it cannot.
fn refused(lock: &LockChoice) -> Option<String> {
    let name = lock.name();
    let ops = &lock.entry.ops;
    if ops.size > PTHREAD_MUTEX_LOCK_ROOM || ops.align > 8 || !ops.zero_is_unlocked {
        return Some(format!(
            "`{name}` cannot be preloaded: it does not fit in a pthread_mutex_t: it takes {} bytes \
             aligned to {}{}, and a pthread_mutex_t has \
             {PTHREAD_MUTEX_LOCK_ROOM} bytes aligned to 8 for it; use tas, ttas, ticket, mcs, fair or \
             bounded with a wait policy, clh with a policy that may sleep, parking_lot or pthread",
            ops.size,
            ops.align,
            if ops.zero_is_unlocked { "" } else { " and is not unlocked when all-zero" }
        ));
    }
    lock.unavailable().map(|why| format!("`{name}` cannot run on this CPU: {why}"))
}

/// `spinlab app`'s options.
#[derive(Args, Clone, Debug)]
pub struct AppOptions {
    /// Locks to run the program under, comma-separated: ALGORITHM:POLICY (tas, ttas, ticket,
    /// mcs, fair, bounded; clh with a policy that may sleep), parking_lot, pthread (glibc's
    /// own, through the library), or `default`; `spinlab list` shows every lock name
    #[arg(long, value_name = "LIST", value_parser = parse_locks)]
    pub locks: AppLocks,
    /// Exactly N runs per lock and of the baseline (instead of the FAME rule)
    #[arg(long, value_name = "N", value_parser = select::positive, conflicts_with_all = ["min_reps", "max_reps"])]
    pub reps: Option<usize>,
    /// FAME: stop repeating when another run would move the mean wall time by less than PCT percent
    #[arg(long, value_name = "PCT", default_value = "1", value_parser = select::percent, allow_hyphen_values = true)]
    pub maiv: f64,
    /// At least this many runs per lock (default 3)
    #[arg(long, value_name = "N", value_parser = select::positive)]
    pub min_reps: Option<usize>,
    /// At most this many runs per lock (default 10)
    #[arg(long, value_name = "N", value_parser = select::positive)]
    pub max_reps: Option<usize>,
    /// Write the results document (spinlab.results/1) to FILE (`-`: stdout, tables go to stderr)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the rows as CSV to FILE (`-`: stdout)
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// No progress lines on stderr
    #[arg(long)]
    pub quiet: bool,
    /// The program and its arguments, after `--`
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl AppOptions {
    fn rule(&self) -> Result<StoppingRule, LabError> {
        if let Some(n) = self.reps {
            return Ok(StoppingRule { maiv_pct: self.maiv, min_reps: n, max_reps: n });
        }
        let common = Common { maiv: self.maiv, min_reps: self.min_reps, max_reps: self.max_reps, ..Common::default() };
        common.rule(3, 10)
    }
}

/// One run of the program.
#[derive(Clone, Debug)]
struct Sample {
    wall_s: f64,
    user_s: f64,
    sys_s: f64,
    status: String,
}

/// The baseline or one lock, and its runs.
struct Treatment {
    /// `None` for the baseline.
    lock: Option<LockChoice>,
    samples: Vec<Sample>,
    verdict: Verdict,
    first_stderr: Option<String>,
}

impl Treatment {
    fn label(&self) -> &str {
        self.lock.as_ref().map_or("baseline", |l| if l.via_alias { "default" } else { l.name() })
    }
}

/// Runs `spinlab app`.
pub fn run(sys_root: &Path, options: &AppOptions) -> Result<(), LabError> {
    if options.command.is_empty() {
        return Err(LabError::usage(
            "no command to run; give it after `--`: spinlab app --locks LIST -- COMMAND [ARGS...]",
        ));
    }
    let rule = options.rule()?;
    let outputs = Outputs::check(options.json.as_deref(), options.csv.as_deref())?;
    let preload = preload_path()?;
    let topology = Topology::read(sys_root).map_err(|e| LabError::failed(format!("reading the topology: {e}")))?;
    let machine = MachineInfo::gather(sys_root, &topology);
    let stderr_path = std::env::temp_dir().join(format!("spinlab-app-{}.stderr", std::process::id()));

    let mut treatments: Vec<Treatment> = std::iter::once(None)
        .chain(options.locks.0.iter().cloned().map(Some))
        .map(|lock| Treatment { lock, samples: Vec::new(), verdict: Verdict::Continue, first_stderr: None })
        .collect();

    let load_before = crate::machine::load_average();
    let started = Instant::now();
    // One unmeasured baseline run: fills the page cache and proves the command starts.
    let warm = run_once(&options.command, None, &preload, &stderr_path)?;
    if !options.quiet {
        eprintln!("warm-up (baseline): {:.3} s wall, exit {}", warm.0.wall_s, warm.0.status);
    }
    let mut round = 0;
    while treatments.iter().any(|t| !t.verdict.stop()) {
        round += 1;
        for t in treatments.iter_mut().filter(|t| !t.verdict.stop()) {
            let (sample, stderr) = run_once(&options.command, t.lock.as_ref(), &preload, &stderr_path)?;
            if t.first_stderr.is_none() && sample.status != "0" {
                t.first_stderr = stderr;
            }
            t.samples.push(sample);
        }
        for t in treatments.iter_mut().filter(|t| !t.verdict.stop()) {
            let walls: Vec<f64> = t.samples.iter().map(|s| s.wall_s).collect();
            t.verdict = rule.verdict(&walls);
        }
        if !options.quiet {
            let line: Vec<String> = treatments
                .iter()
                .map(|t| format!("{} {:.3}s", t.label(), t.samples.last().map_or(f64::NAN, |s| s.wall_s)))
                .collect();
            eprintln!("round {round}: {}", line.join(", "));
        }
    }
    let _ = std::fs::remove_file(&stderr_path);
    let load_after = crate::machine::load_average();

    let mut run = Run::new("app");
    run.param("command", &options.command)
        .param("locks", options.locks.0.iter().map(|l| l.name()).collect::<Vec<_>>())
        .param("preload", preload.display().to_string())
        .param("rule", rule)
        .param("fixed_reps", options.reps)
        .param("warmup_runs", 1)
        .param("load_average_start", load_before)
        .param("load_average_end", load_after);
    run.rows = rows(&treatments);
    run.elapsed_s = started.elapsed().as_secs_f64();
    for row in &run.rows {
        if let Some(note) = row.get("note").and_then(|n| n.as_str()) {
            let lock = row.get("lock").and_then(|l| l.as_str()).unwrap_or("?");
            eprintln!("warning: {lock}: {note}");
        }
    }

    let text = format!("app ({:.1} s): {}\n{}\n", run.elapsed_s, options.command.join(" "), render(&run.rows));
    if outputs.uses_stdout() {
        eprint!("{text}");
    } else {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
    let mut results = Results::new(&machine);
    results.runs = vec![run];
    outputs.write(&results)
}

/// The library next to this executable, or a usage error saying how to build it.
fn preload_path() -> Result<PathBuf, LabError> {
    let exe = std::env::current_exe().map_err(|e| LabError::failed(format!("finding the spinlab executable: {e}")))?;
    let path = exe.with_file_name(PRELOAD);
    if path.is_file() {
        Ok(path)
    } else {
        Err(LabError::usage(format!(
            "{} is missing; build it with `cargo build --release -p spinlab-preload` (or `--workspace`, \
             with the profile this spinlab was built with)",
            path.display()
        )))
    }
}

/// One run of `command` (under `lock` through `preload`, or plain), its figures and, when it
/// wrote any, the first line of its stderr.
fn run_once(
    command: &[String],
    lock: Option<&LockChoice>,
    preload: &Path,
    stderr_path: &Path,
) -> Result<(Sample, Option<String>), LabError> {
    let stderr =
        File::create(stderr_path).map_err(|e| LabError::failed(format!("creating {}: {e}", stderr_path.display())))?;
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(stderr);
    match lock {
        Some(lock) => {
            let mut value = preload.as_os_str().to_os_string();
            if let Some(existing) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
                value.push(":");
                value.push(existing);
            }
            cmd.env("LD_PRELOAD", value).env("SPINLAB_LOCK", lock.name());
        }
        None => {
            cmd.env_remove("SPINLAB_LOCK");
        }
    }
    let start = Instant::now();
    let child = cmd.spawn().map_err(|e| LabError::failed(format!("cannot run `{}`: {e}", command[0])))?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data; zeroes are a valid value for it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own child, not yet reaped (std's Child is never waited on here;
        // dropping it does not reap), and both pointers are to live locals.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(LabError::failed(format!("waiting for `{}`: {err}", command[0])));
        }
    }
    let wall_s = start.elapsed().as_secs_f64();
    drop(child);
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    let status = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status).to_string()
    } else if libc::WIFSIGNALED(status) {
        format!("signal {}", libc::WTERMSIG(status))
    } else {
        format!("status {status}")
    };
    let first_line = std::fs::read_to_string(stderr_path)
        .ok()
        .and_then(|t| t.lines().find(|l| !l.trim().is_empty()).map(str::to_string));
    Ok((Sample { wall_s, user_s: seconds(usage.ru_utime), sys_s: seconds(usage.ru_stime), status }, first_line))
}

/// The distinct exit statuses of `samples`, in the order first seen, joined by commas.
fn statuses(samples: &[Sample]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for s in samples {
        if !seen.contains(&s.status) {
            seen.push(s.status.clone());
        }
    }
    seen
}

fn rows(treatments: &[Treatment]) -> Vec<Row> {
    let baseline_wall = Summary::of(&treatments[0].samples.iter().map(|s| s.wall_s).collect::<Vec<_>>());
    let baseline_status = statuses(&treatments[0].samples);
    treatments
        .iter()
        .map(|t| {
            let pick = |f: fn(&Sample) -> f64| t.samples.iter().map(f).collect::<Vec<f64>>();
            let mut row = Row::new().with("lock", t.label());
            if t.lock.as_ref().is_some_and(|l| l.via_alias) {
                row.set("lock_name", t.lock.as_ref().map(|l| l.name()));
            }
            let wall = Summary::of(&pick(|s| s.wall_s));
            if let Some(s) = &wall {
                row = row.summary("wall", "s", s);
            }
            if let Some(s) = Summary::of(&pick(|s| s.user_s)) {
                row = row.summary("user", "s", &s);
            }
            if let Some(s) = Summary::of(&pick(|s| s.sys_s)) {
                row = row.summary("sys", "s", &s);
            }
            let ratio = match (&wall, &baseline_wall) {
                (Some(w), Some(b)) if b.mean > 0.0 => w.mean / b.mean,
                _ => f64::NAN,
            };
            row.set("ratio_to_baseline", ratio);
            let seen = statuses(&t.samples);
            row.set("exit_status", seen.join(","));
            row.set("verdict", t.verdict);
            let mut notes = Vec::new();
            if seen.len() > 1 {
                notes.push(format!("exit status varied between runs ({})", seen.join(",")));
            }
            if t.lock.is_some() && seen != baseline_status {
                notes.push(format!(
                    "exit status {} differs from the baseline's {}",
                    seen.join(","),
                    baseline_status.join(",")
                ));
            }
            if let Some(line) = &t.first_stderr {
                notes.push(format!("stderr: {line}"));
            }
            if !notes.is_empty() {
                row.set("note", notes.join("; "));
            }
            row
        })
        .collect()
}

fn render(rows: &[Row]) -> String {
    let mut columns: Vec<Column> = vec![
        col("lock", "lock"),
        col("wall_s", "wall s"),
        col("wall_ci95_s", "± 95%"),
        col("ratio_to_baseline", "× baseline"),
        col("user_s", "user s"),
        col("sys_s", "sys s"),
        col("exit_status", "exit"),
        col("reps", "reps"),
    ];
    if rows.iter().any(|r| r.get("note").is_some()) {
        columns.push(col("note", "note"));
    }
    table::render(rows, &columns)
}
