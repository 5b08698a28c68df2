//! `spinlab app`: a real program under each lock, through `libspinlab_preload.so`.
//!
//! The program runs once per repetition without the library (the baseline) and once under
//! each lock, interleaved (baseline, A, B, baseline, A, B, …) so a drift of the machine's
//! speed spreads over every treatment. Each run is a child process: wall time from a
//! monotonic clock around spawn and reap, user and system CPU time from the child's rusage
//! (`wait4`), and its exit status. Each treatment repeats until the FAME rule is satisfied for
//! its wall time (or `--reps N` times exactly). With `--timeout`, each run is a process group
//! of its own, killed whole when it runs past the limit; that treatment's row says so and it
//! is not run again. See docs/app.md.

use crate::error::LabError;
use crate::experiments::options::{Output, Repetition};
use crate::machine::{MachineInfo, Topology};
use crate::measure::fame::{StoppingRule, Verdict};
use crate::measure::load::Meter;
use crate::measure::pin::allowed_cpus;
use crate::measure::stats::Summary;
use crate::measure::team;
use crate::results::output::Outputs;
use crate::results::table::{self, col, Column};
use crate::results::{Results, Row, Run};
use crate::select::{self, LockChoice, TimeBounds};
use clap::Args;
use core::alloc::Layout;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering::SeqCst};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The preload library's file name, next to the `spinlab` binary.
pub const PRELOAD: &str = "libspinlab_preload.so";

/// A `--locks` value for `spinlab app`.
#[derive(Clone, Debug)]
pub struct AppLocks(pub Vec<LockChoice>);

pub(crate) fn parse_locks(text: &str) -> Result<AppLocks, String> {
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
/// same facts against the running glibc when it starts): 16 bytes aligned to 8.
const PTHREAD_MUTEX_LOCK_ROOM: Layout = Layout::new::<[u64; 2]>();

/// The name under which the preload library keeps glibc's mutexes (`SPINLAB_LOCK=pthread`).
const GLIBC: &str = "pthread";

/// Why the preload library cannot run `lock`, if it cannot.
pub(crate) fn refused(lock: &LockChoice) -> Option<String> {
    let name = lock.name();
    if name == GLIBC {
        // The preload library keeps glibc's own mutexes: nothing needs to fit.
        return None;
    }
    let why = match lock.entry.fits(PTHREAD_MUTEX_LOCK_ROOM) {
        Ok(ops) if ops.zero_is_unlocked => None,
        Ok(_) => Some("a zeroed pthread_mutex_t would not hold it unlocked".to_string()),
        Err(does_not_fit) => Some(format!("it does not fit in a pthread_mutex_t: {does_not_fit}")),
    };
    if let Some(why) = why {
        return Some(format!(
            "`{name}` cannot be preloaded: {why}; use tas, ttas, ticket, mcs, clh, cna, cna-gated, reciprocating, fair, bounded, adaptive or malthusian \
             with a wait policy, hmcs with one whose waiters keep their CPU, parking_lot or pthread"
        ));
    }
    lock.unavailable().map(|why| format!("`{name}` cannot run on this CPU: {why}"))
}

/// `--timeout`: from a millisecond to a day (a program's whole test suite can take hours).
pub const TIMEOUT: TimeBounds = TimeBounds { min: Duration::from_millis(1), max: Duration::from_secs(24 * 3600) };

/// `spinlab app`'s options.
#[derive(Args, Clone, Debug)]
// The shared repetition and output options, in the words of a program's runs.
#[command(
    mut_arg("maiv", |a| a.help(format!("FAME: stop repeating when another run would move the mean wall time by \
                                        less than PCT percent; accepted: {}", select::MAIV_ACCEPTED))),
    mut_arg("min_reps", |a| a.help(select::REPS.help("At least this many runs per lock (default 3)"))),
    mut_arg("max_reps", |a| a.help(select::REPS.help("At most this many runs per lock (default 10)"))),
    mut_arg("quiet", |a| a.help("No progress lines on stderr")),
)]
pub struct AppOptions {
    /// Locks to run the program under, comma-separated: ALGORITHM:POLICY (tas, ttas, ticket,
    /// mcs, clh, cna, cna-gated, hmcs, reciprocating, fair, bounded, adaptive, malthusian), parking_lot, pthread (glibc's
    /// own, through the library), or `default`; `spinlab list` shows every lock name
    #[arg(long, value_name = "LIST", value_parser = parse_locks)]
    pub locks: AppLocks,
    /// Exactly N runs per lock and of the baseline (instead of the FAME rule), within
    /// [`select::REPS`]
    #[arg(long, value_name = "N", value_parser = select::reps, conflicts_with_all = ["min_reps", "max_reps"],
          allow_hyphen_values = true,
          help = select::REPS.help("Exactly N runs per lock and of the baseline (instead of the FAME rule)"))]
    pub reps: Option<usize>,
    /// How many runs (the FAME rule).
    #[command(flatten)]
    pub repetition: Repetition,
    /// Kill a run that takes longer than this, with everything it started (its process
    /// group); its row says `timed_out` and that lock is not run again; within [`TIMEOUT`]
    #[arg(long, value_name = "TIME", value_parser = |s: &str| TIMEOUT.parse(s), allow_hyphen_values = true,
          help = TIMEOUT.help("Kill a run that takes longer than this, with everything it started (its process \
                               group); its row says timed_out and that lock is not run again (default: no limit)"))]
    pub timeout: Option<Duration>,
    /// After the timed runs, run the program once more under each lock with the preload
    /// library's statistics, and show per lock the wait at each of its top lock sites
    #[arg(long)]
    pub profile: bool,
    /// Where the results go.
    #[command(flatten)]
    pub output: Output,
    /// The program and its arguments, after `--`
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl AppOptions {
    fn rule(&self) -> Result<StoppingRule, LabError> {
        if let Some(n) = self.reps {
            return Ok(StoppingRule { maiv_pct: self.repetition.maiv, min_reps: n, max_reps: n });
        }
        self.repetition.rule(3, 10)
    }
}

/// One run of the program.
#[derive(Clone, Debug)]
pub(crate) struct Sample {
    pub(crate) wall_s: f64,
    pub(crate) user_s: f64,
    pub(crate) sys_s: f64,
    /// The exit status, `signal N`, or `timeout`.
    pub(crate) status: String,
    /// Killed at `--timeout`.
    pub(crate) timed_out: bool,
}

/// The `status` of a run killed at `--timeout`.
pub(crate) const TIMED_OUT: &str = "timeout";

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

/// Runs every treatment once a round, until the stopping rule (or `--timeout`) has stopped
/// each; says each round's walls on stderr unless `--quiet`.
fn run_rounds(
    options: &AppOptions,
    rule: &StoppingRule,
    preload: &Path,
    stderr_path: &Path,
    treatments: &mut [Treatment],
) -> Result<(), LabError> {
    let mut round = 0;
    while treatments.iter().any(|t| !t.verdict.stop()) {
        round += 1;
        for t in treatments.iter_mut().filter(|t| !t.verdict.stop()) {
            let launch = Launch {
                command: &options.command,
                lock: t.lock.as_ref(),
                preload,
                stdout: None,
                stderr_path,
                profile: None,
            };
            let Ran { sample, first_stderr_line } = run_once(&launch, options.timeout)?;
            if t.first_stderr.is_none() && sample.status != "0" {
                t.first_stderr = first_stderr_line;
            }
            if sample.timed_out {
                // A run that hangs under this lock would hang again: go on with the others.
                t.verdict = Verdict::Stopped;
            }
            t.samples.push(sample);
        }
        for t in treatments.iter_mut().filter(|t| !t.verdict.stop()) {
            let walls: Vec<f64> = t.samples.iter().map(|s| s.wall_s).collect();
            t.verdict = rule.verdict(&walls);
        }
        if !options.output.quiet {
            let line: Vec<String> = treatments
                .iter()
                .map(|t| match t.samples.last() {
                    Some(s) if s.timed_out => format!("{} killed at --timeout", t.label()),
                    last => format!("{} {:.3}s", t.label(), last.map_or(f64::NAN, |s| s.wall_s)),
                })
                .collect();
            eprintln!("round {round}: {}", line.join(", "));
        }
    }
    Ok(())
}

/// Runs `spinlab app`.
pub fn run(sys_root: &Path, options: &AppOptions) -> Result<(), LabError> {
    if options.command.is_empty() {
        return Err(LabError::usage(
            "no command to run; give it after `--`: spinlab app --locks LIST -- COMMAND [ARGS...]",
        ));
    }
    let rule = options.rule()?;
    let outputs = Outputs::check(options.output.json.as_deref(), options.output.csv.as_deref())?;
    let preload = preload_path()?;
    let topology = Topology::read(sys_root).map_err(|e| LabError::failed(format!("reading the topology: {e}")))?;
    let machine = MachineInfo::gather(sys_root, &topology);
    let stderr_path = std::env::temp_dir().join(format!("spinlab-app-{}.stderr", std::process::id()));

    let mut treatments: Vec<Treatment> = std::iter::once(None)
        .chain(options.locks.0.iter().cloned().map(Some))
        .map(|lock| Treatment { lock, samples: Vec::new(), verdict: Verdict::Continue, first_stderr: None })
        .collect();

    if options.timeout.is_some() {
        kill_the_group_on_termination();
    }
    let meter = Meter::start(&allowed_cpus());
    let started = Instant::now();
    // One unmeasured baseline run: fills the page cache and proves the command starts.
    let launch = Launch {
        command: &options.command,
        lock: None,
        preload: &preload,
        stdout: None,
        stderr_path: &stderr_path,
        profile: None,
    };
    let warm = run_once(&launch, options.timeout)?.sample;
    if warm.timed_out {
        let _ = std::fs::remove_file(&stderr_path);
        return Err(LabError::usage(format!(
            "the warm-up run of `{}` without the library did not finish within --timeout {:?}; give a longer \
             --timeout ({})",
            options.command.join(" "),
            options.timeout.unwrap_or_default(),
            TIMEOUT.accepted()
        )));
    }
    if !options.output.quiet {
        eprintln!("warm-up (baseline): {:.3} s wall, exit {}", warm.wall_s, warm.status);
    }
    run_rounds(options, &rule, &preload, &stderr_path, &mut treatments)?;
    let _ = std::fs::remove_file(&stderr_path);
    let load = meter.finish();
    let profiles = if options.profile { profile_each(options, &preload, &treatments)? } else { Vec::new() };

    let mut run = Run::new("app");
    run.param("command", &options.command)
        .param("locks", options.locks.0.iter().map(|l| l.name()).collect::<Vec<_>>())
        .param("preload", preload.display().to_string())
        .param("rule", rule)
        .param("fixed_reps", options.reps)
        .param("timeout_s", options.timeout.map(|t| t.as_secs_f64()))
        .param("warmup_runs", 1)
        .stamp_load(&load);
    run.rows = rows(&treatments, options.timeout);
    for row in run.rows.iter_mut() {
        let Some((_, waits)) = profiles.iter().find(|(label, _)| row.text("lock") == Some(label.as_str())) else {
            continue;
        };
        let top: Vec<serde_json::Value> = waits
            .iter()
            .take(PROFILE_SITES)
            .map(|(site, ns)| serde_json::json!({ "site": site, "wait_s": *ns as f64 * 1e-9 }))
            .collect();
        row.set("profile_wait_s", waits.iter().map(|(_, ns)| *ns).sum::<u64>() as f64 * 1e-9);
        row.set("profile_sites", top);
    }
    run.elapsed_s = started.elapsed().as_secs_f64();
    for row in &run.rows {
        if let Some(note) = row.text("note") {
            let lock = row.text("lock").unwrap_or("?");
            eprintln!("warning: {lock}: {note}");
        }
    }

    let mut text = format!("app ({:.1} s): {}\n{}\n", run.elapsed_s, options.command.join(" "), render(&run.rows));
    if options.profile {
        text.push_str(&render_waits(&profiles));
    }
    let mut results = Results::new(&machine);
    results.runs = vec![run];
    outputs.show_and_write(&text, &results)
}

/// Sites per lock in `profile_sites`.
const PROFILE_SITES: usize = 8;

/// A lock's label and the total wait at each of its sites, most first.
type Waits = (String, Vec<(String, u64)>);

/// `--profile`: one more run under each lock with statistics on, after the timed rounds (so
/// the profiler's cost is in none of the timed runs), within `--timeout`; a lock whose timed
/// runs were killed at the timeout is not run again. Per lock, its label and the total wait
/// at each site, most first.
fn profile_each(options: &AppOptions, preload: &Path, treatments: &[Treatment]) -> Result<Vec<Waits>, LabError> {
    let dir = std::env::temp_dir().join(format!("spinlab-app-profile-{}", std::process::id()));
    let mut out = Vec::new();
    for t in treatments.iter().filter(|t| t.lock.is_some() && !t.samples.iter().any(|s| s.timed_out)) {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| LabError::failed(format!("making {}: {e}", dir.display())))?;
        if !options.output.quiet {
            eprintln!("profiling under {}", t.label());
        }
        let prefix = dir.join("profile");
        let stderr_path = dir.join("stderr");
        let launch = Launch {
            command: &options.command,
            lock: t.lock.as_ref(),
            preload,
            stdout: None,
            stderr_path: &stderr_path,
            profile: Some(&prefix),
        };
        if run_once(&launch, options.timeout)?.sample.timed_out {
            continue;
        }
        let files = crate::profile::files_of(&prefix).map_err(LabError::failed)?;
        let profiles = files
            .iter()
            .map(|f| crate::profile::Profile::read(f))
            .collect::<Result<Vec<_>, _>>()
            .map_err(LabError::failed)?;
        out.push((t.label().to_string(), crate::profile::waits_by_site(&profiles)));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(out)
}

/// The sites with the most wait under any lock, one row each, with their total wait under
/// every lock: which lock removes which wait. Six locks to a table, to keep within 100
/// columns.
fn render_waits(profiles: &[Waits]) -> String {
    let mut sites: Vec<(String, u64)> = Vec::new();
    for (site, ns) in profiles.iter().flat_map(|(_, waits)| waits) {
        match sites.iter_mut().find(|(s, _)| s == site) {
            Some((_, most)) => *most = (*most).max(*ns),
            None => sites.push((site.clone(), *ns)),
        }
    }
    sites.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    sites.truncate(PROFILE_SITES);
    let mut out = String::from("wait per lock site (one profiled run per lock):\n");
    if sites.is_empty() {
        out.push_str("  no lock site under any lock\n");
        return out;
    }
    for chunk in profiles.chunks(6) {
        out.push_str(&format!("  {:<36}", "site"));
        for (lock, _) in chunk {
            out.push_str(&format!(" {:>9}", crate::profile::fit(lock, 9)));
        }
        out.push('\n');
        for (site, _) in &sites {
            out.push_str(&format!("  {:<36}", crate::profile::fit(site, 36)));
            for (_, waits) in chunk {
                let ns = waits.iter().find(|(s, _)| s == site).map_or(0, |w| w.1);
                out.push_str(&format!(" {:>9}", crate::profile::duration(ns)));
            }
            out.push('\n');
        }
    }
    out
}

/// The library next to this executable, or a usage error saying how to build it.
pub(crate) fn preload_path() -> Result<PathBuf, LabError> {
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

/// One run of the command.
pub(crate) struct Ran {
    pub(crate) sample: Sample,
    /// The first line it wrote to stderr, if it wrote any.
    pub(crate) first_stderr_line: Option<String>,
}

/// What to run, and where its output goes.
pub(crate) struct Launch<'a> {
    /// The program and its arguments.
    pub(crate) command: &'a [String],
    /// The lock to run it under through `preload`; `None` runs it plain.
    pub(crate) lock: Option<&'a LockChoice>,
    pub(crate) preload: &'a Path,
    /// The file for its stdout; `None` discards it.
    pub(crate) stdout: Option<&'a Path>,
    pub(crate) stderr_path: &'a Path,
    /// With the preload library's statistics written to `PREFIX.PID.json` files
    /// (`SPINLAB_STATS_FILE`); `None`: without statistics.
    pub(crate) profile: Option<&'a Path>,
}

/// Sets `cmd`'s environment to run under `lock` through `preload` (after any `LD_PRELOAD`
/// already set), or plain with `None`.
pub(crate) fn preload_env(cmd: &mut Command, lock: Option<&LockChoice>, preload: &Path) {
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
}

/// One run of `launch`; with `timeout`, killed (its whole process group) once it runs past it.
pub(crate) fn run_once(launch: &Launch<'_>, timeout: Option<Duration>) -> Result<Ran, LabError> {
    let Launch { command, lock, preload, stdout, stderr_path, profile } = *launch;
    let create =
        |path: &Path| File::create(path).map_err(|e| LabError::failed(format!("creating {}: {e}", path.display())));
    let stderr = create(stderr_path)?;
    let stdout = match stdout {
        Some(path) => Stdio::from(create(path)?),
        None => Stdio::null(),
    };
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..]).stdin(Stdio::null()).stdout(stdout).stderr(stderr);
    if timeout.is_some() {
        // A group of its own, so the timeout reaches whatever the program started too.
        cmd.process_group(0);
    }
    preload_env(&mut cmd, lock, preload);
    cmd.env_remove("SPINLAB_STATS");
    match profile {
        Some(prefix) => cmd.env("SPINLAB_STATS_FILE", prefix),
        None => cmd.env_remove("SPINLAB_STATS_FILE"),
    };
    let start = Instant::now();
    let child = cmd.spawn().map_err(|e| LabError::failed(format!("cannot run `{}`: {e}", command[0])))?;
    let pid = child.id() as libc::pid_t;
    if timeout.is_some() {
        RUNNING_GROUP.store(pid, SeqCst);
    }
    let watch = Watch::default();
    let exited = std::thread::scope(|s| {
        if let Some(limit) = timeout {
            let watch = &watch;
            if let Err(e) = team::spawn(s, move || watch.kill_after(pid, limit)) {
                // SAFETY: killing our own child's group; the child is not reaped yet.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                let _ = reap(pid);
                return Err(e);
            }
        }
        let exited = wait_for_exit(pid);
        watch.exited();
        exited.map_err(|e| LabError::failed(format!("waiting for `{}`: {e}", command[0])))
    });
    let reaped = reap(pid);
    RUNNING_GROUP.store(0, SeqCst);
    exited?;
    let Reaped { status, usage } =
        reaped.map_err(|e| LabError::failed(format!("waiting for `{}`: {e}", command[0])))?;
    let wall_s = start.elapsed().as_secs_f64();
    drop(child);
    let timed_out = watch.fired();
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    let status = if timed_out {
        TIMED_OUT.to_string()
    } else if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status).to_string()
    } else if libc::WIFSIGNALED(status) {
        format!("signal {}", libc::WTERMSIG(status))
    } else {
        format!("status {status}")
    };
    let first_stderr_line = std::fs::read_to_string(stderr_path)
        .ok()
        .and_then(|t| t.lines().find(|l| !l.trim().is_empty()).map(str::to_string));
    let sample = Sample { wall_s, user_s: seconds(usage.ru_utime), sys_s: seconds(usage.ru_stime), status, timed_out };
    Ok(Ran { sample, first_stderr_line })
}

/// Waits until child `pid` has exited, leaving it unreaped (`WNOWAIT`): while it is a zombie
/// its pid, and so its process group's id, cannot be reused, so the watch can still kill
/// the group safely.
fn wait_for_exit(pid: libc::pid_t) -> std::io::Result<()> {
    loop {
        // SAFETY: siginfo_t is plain data; zeroes are a valid value for it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our own child (std's Child is never waited on here); `info` is a
        // live local.
        let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if r == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// A child reaped.
struct Reaped {
    /// Its wait status.
    status: libc::c_int,
    /// Its resource usage, with its reaped descendants'.
    usage: libc::rusage,
}

/// Reaps child `pid`.
fn reap(pid: libc::pid_t) -> std::io::Result<Reaped> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data; zeroes are a valid value for it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own child, not yet reaped (dropping std's Child does not reap),
        // and both pointers are to live locals.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok(Reaped { status, usage });
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// The timeout of one run: a thread that kills the run's process group at the deadline unless
/// told first that the program exited.
#[derive(Default)]
struct Watch {
    state: Mutex<WatchState>,
    changed: Condvar,
}

#[derive(Default)]
struct WatchState {
    exited: bool,
    fired: bool,
}

impl Watch {
    fn lock(&self) -> std::sync::MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Kills process group `group` once `limit` has passed, unless [`Watch::exited`] came
    /// first.
    fn kill_after(&self, group: libc::pid_t, limit: Duration) {
        let state = self.lock();
        let (mut state, _) = self
            .changed
            .wait_timeout_while(state, limit, |s| !s.exited)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !state.exited {
            // SAFETY: kill has no memory effects. `exited` is set only after the leader has
            // exited and before it is reaped, so `group` still names this run's group.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            state.fired = true;
        }
    }

    /// The program exited: the watch stands down.
    fn exited(&self) {
        self.lock().exited = true;
        self.changed.notify_all();
    }

    /// Whether the watch killed the run.
    fn fired(&self) -> bool {
        self.lock().fired
    }
}

/// The process group of the run in progress under `--timeout` (0: none). A run in a group of
/// its own does not get the terminal's Ctrl-C, so spinlab passes it on.
static RUNNING_GROUP: AtomicI32 = AtomicI32::new(0);

/// The process group of a server the run in progress talks to (`spinlab apps`; 0: none).
static SERVER_GROUP: AtomicI32 = AtomicI32::new(0);

/// Names `group` (0: none) as the server's, for [`kill_the_group_on_termination`] to kill.
pub(crate) fn set_server_group(group: libc::pid_t) {
    SERVER_GROUP.store(group, SeqCst);
}

extern "C" fn pass_on_and_die(signal: libc::c_int) {
    let group = RUNNING_GROUP.load(SeqCst);
    let server = SERVER_GROUP.load(SeqCst);
    // SAFETY: kill, signal and raise are async-signal-safe; the handler touches nothing else
    // but atomics.
    unsafe {
        if group > 0 {
            libc::kill(-group, signal);
        }
        // A server may ignore or handle the signal (memcached finishes its connections):
        // nobody is left to stop it once spinlab is gone, so it goes now.
        if server > 0 {
            libc::kill(-server, libc::SIGKILL);
        }
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// On SIGINT, SIGTERM or SIGHUP, sends the same signal to the running program's group before
/// spinlab dies of it, as it would have had the program stayed in spinlab's group, and kills
/// the server's group (see [`set_server_group`]).
pub(crate) fn kill_the_group_on_termination() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installs a handler that only calls async-signal-safe functions.
        unsafe { libc::signal(signal, pass_on_and_die as extern "C" fn(libc::c_int) as libc::sighandler_t) };
    }
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

fn rows(treatments: &[Treatment], timeout: Option<Duration>) -> Vec<Row> {
    // Times of the runs that finished: a killed run's time is the limit, not the program's.
    let finished =
        |t: &Treatment, f: fn(&Sample) -> f64| t.samples.iter().filter(|s| !s.timed_out).map(f).collect::<Vec<f64>>();
    let baseline_wall = Summary::of(&finished(&treatments[0], |s| s.wall_s));
    let baseline_status: Vec<String> =
        statuses(&treatments[0].samples).into_iter().filter(|s| s != TIMED_OUT).collect();
    treatments
        .iter()
        .map(|t| {
            let mut row = Row::new().with("lock", t.label());
            if t.lock.as_ref().is_some_and(|l| l.via_alias) {
                row.set("lock_name", t.lock.as_ref().map(|l| l.name()));
            }
            let wall = Summary::of(&finished(t, |s| s.wall_s));
            if let Some(s) = &wall {
                row = row.summary("wall", "s", s);
            }
            if let Some(s) = Summary::of(&finished(t, |s| s.user_s)) {
                row = row.summary("user", "s", &s);
            }
            if let Some(s) = Summary::of(&finished(t, |s| s.sys_s)) {
                row = row.summary("sys", "s", &s);
            }
            let ratio = match (&wall, &baseline_wall) {
                (Some(w), Some(b)) if b.mean > 0.0 => w.mean / b.mean,
                _ => f64::NAN,
            };
            row.set("ratio_to_baseline", ratio);
            let seen = statuses(&t.samples);
            row.set("exit_status", seen.join(","));
            let killed = t.samples.iter().position(|s| s.timed_out);
            row.set("timed_out", killed.is_some());
            row.set("verdict", t.verdict);
            let mut notes = Vec::new();
            if let (Some(k), Some(limit)) = (killed, timeout) {
                notes.push(format!(
                    "run {} was killed at --timeout {limit:?} with its process group; not run again",
                    k + 1
                ));
            }
            // A timeout has its own note; the statuses compared are those of finished runs.
            let ended: Vec<String> = seen.iter().filter(|s| *s != TIMED_OUT).cloned().collect();
            if ended.len() > 1 {
                notes.push(format!("exit status varied between runs ({})", ended.join(",")));
            }
            if t.lock.is_some() && !ended.is_empty() && ended != baseline_status {
                notes.push(format!(
                    "exit status {} differs from the baseline's {}",
                    ended.join(","),
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
