//! The runner on fake programs: shell one-liners declared as entries, each misbehaving only
//! under a lock (`SPINLAB_LOCK` set), so that glibc's rows stand and the lock's row fails.
//! The preload library is a path that does not exist: the dynamic loader says so on stderr
//! and runs the program anyway, which is all these tests need. Nothing here is timed.

use super::suite::{Better, Context, Entry, Metric, Ready, Server};
use super::*;
use crate::measure::fame::StoppingRule;
use std::sync::Mutex;

fn result_42(out: &Output) -> Result<f64, String> {
    metric_after(out, "result ")
}

fn metric_after(out: &Output, label: &str) -> Result<f64, String> {
    out.stdout
        .lines()
        .find_map(|l| l.strip_prefix(label))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("no `{label}`"))
}

fn is_42(out: &Output, _: &Context) -> Result<(), String> {
    match result_42(out)? {
        42.0 => Ok(()),
        other => Err(format!("the result is {other}, not 42")),
    }
}

const fn fake(name: &'static str, command: &'static [&'static str], time_limit_ms: u64) -> Entry {
    Entry {
        name,
        packages: &[],
        binaries: &["sh"],
        threads: 2,
        prepare: suite::nothing,
        server: None,
        command,
        metric: Metric { name: "result", unit: "1", better: Better::Higher, parse: result_42 },
        check: is_42,
        time_limit: Duration::from_millis(time_limit_ms),
    }
}

static WRONG: Entry =
    fake("wrong", &["sh", "-c", "[ -n \"$SPINLAB_LOCK\" ] && echo result 41 || echo result 42"], 20_000);
static HANG: Entry = fake("hang", &["sh", "-c", "[ -n \"$SPINLAB_LOCK\" ] && exec sleep 600; echo result 42"], 300);
static CRASH: Entry = fake("crash", &["sh", "-c", "[ -n \"$SPINLAB_LOCK\" ] && kill -SEGV $$; echo result 42"], 20_000);

fn settings(locks: &[&str], reps: usize, scratch: &str) -> Settings {
    Settings {
        locks: locks.iter().map(|l| select::lock(l).unwrap()).collect(),
        rule: StoppingRule { maiv_pct: 1.0, min_reps: reps, max_reps: reps },
        timeout: Duration::from_secs(60),
        preload: PathBuf::from("/nonexistent/libspinlab_preload.so"),
        input_bytes: 1,
        install: false,
        quiet: true,
        scratch: std::env::temp_dir().join(format!("spinlab-apps-test-{scratch}-{}", std::process::id())),
    }
}

fn rows_of(run: &Run) -> Vec<AppsRow> {
    run.rows_as()
}

#[test]
fn a_wrong_result_a_hang_and_a_crash_are_failed_rows_with_their_reasons_and_the_run_goes_on() {
    let run = measure(&[&WRONG, &HANG, &CRASH], &settings(&["ttas:spin"], 2, "fail"));
    let rows = rows_of(&run);
    assert_eq!(rows.len(), 6, "{rows:#?}");
    for program in ["wrong", "hang", "crash"] {
        let glibc = rows.iter().find(|r| r.program.as_deref() == Some(program) && r.lock.as_deref() == Some(GLIBC));
        let glibc = glibc.unwrap_or_else(|| panic!("{program} has a glibc row"));
        assert_eq!((glibc.failed.as_deref(), glibc.metric_value, glibc.reps), (None, Some(42.0), Some(2)), "{program}");
    }
    let failed = |program: &str| {
        let row = rows.iter().find(|r| r.program.as_deref() == Some(program) && r.lock.as_deref() == Some("ttas:spin"));
        let row = row.unwrap_or_else(|| panic!("{program} has a lock row"));
        assert_eq!(row.stop.as_deref(), Some("failed"), "{program}");
        assert_eq!(row.ratio_to_glibc, Nullable::Null, "{program}: a failed lock has no ratio");
        row.failed.clone().unwrap_or_else(|| panic!("{program} under the lock fails"))
    };
    assert_eq!(failed("wrong"), "run 1: wrong result: the result is 41, not 42");
    assert!(failed("hang").starts_with("run 1: killed at its time limit of 300ms"), "{}", failed("hang"));
    assert!(failed("crash").starts_with("run 1: killed by signal 11"), "{}", failed("crash"));
    let lines = verdict::lines(&rows);
    let crash = "failed: crash under ttas:spin: run 1: killed by signal 11";
    assert!(lines.iter().any(|l| l.starts_with(crash)), "{lines:?}");
}

#[test]
fn a_program_that_is_not_installed_is_a_skipped_row_with_the_reason() {
    static ABSENT: Entry = Entry {
        binaries: &["spinlab-no-such-program"],
        packages: &["spinlab-no-such-package"],
        ..fake("absent", &["spinlab-no-such-program"], 1000)
    };
    let run = measure(&[&ABSENT, &WRONG], &settings(&["ttas:spin"], 1, "absent"));
    let rows = rows_of(&run);
    assert_eq!(
        rows[0].skipped.as_deref(),
        Some("spinlab-no-such-program is not installed (package spinlab-no-such-package; --no-install)")
    );
    assert_eq!(rows.len(), 3, "the next program still ran: {rows:#?}");
}

/// What the fake server's load saw, one line per run: the server's lock and pid, the load's
/// lock.
static SEEN: Mutex<Vec<(String, u32, String)>> = Mutex::new(Vec::new());

fn record(out: &Output, ctx: &Context) -> Result<(), String> {
    assert!(ctx.port.is_some_and(|p| p != 0), "a server's entry gets a port");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let [server_lock, server_pid, load_lock, ..] = lines[..] else { return Err(format!("{lines:?}")) };
    let pid = server_pid.parse().map_err(|_| format!("pid {server_pid}"))?;
    SEEN.lock().unwrap().push((server_lock.to_string(), pid, load_lock.to_string()));
    is_42(out, ctx)
}

#[test]
fn the_server_runs_under_the_lock_the_load_runs_plain_and_the_server_is_stopped_after_each_run() {
    static SERVED: Entry = Entry {
        server: Some(Server {
            command: &["sh", "-c", "echo \"lock=$SPINLAB_LOCK\" > {dir}/server.lock; echo $$ > {dir}/server.pid; exec sleep 600"],
            ready: Ready::Started,
        }),
        check: record,
        ..fake(
            "served",
            &["sh", "-c", "while [ ! -s {dir}/server.pid ]; do sleep 0.01; done; cat {dir}/server.lock {dir}/server.pid; rm {dir}/server.pid; echo \"load=$SPINLAB_LOCK\"; echo result 42"],
            20_000,
        )
    };
    let run = measure(&[&SERVED], &settings(&["ttas:spin"], 1, "served"));
    let rows = rows_of(&run);
    assert!(rows.iter().all(|r| r.failed.is_none() && r.skipped.is_none()), "{rows:#?}");
    let seen = SEEN.lock().unwrap().clone();
    // The warm-up under glibc, then one round of glibc and the lock.
    let locks: Vec<(&str, &str)> = seen.iter().map(|(s, _, l)| (s.as_str(), l.as_str())).collect();
    assert_eq!(locks, [("lock=", "load="), ("lock=", "load="), ("lock=ttas:spin", "load=")]);
    for (_, pid, _) in &seen {
        // SAFETY: kill with signal 0 only asks whether the process exists.
        let alive = unsafe { libc::kill(*pid as libc::pid_t, 0) } == 0;
        assert!(!alive, "the server {pid} was stopped and reaped after its run");
    }
}

/// The scratch folder of the interrupted child (`a_server_is_killed_when_the_suite_is_interrupted`).
const CHILD_SCRATCH: &str = "SPINLAB_APPS_TEST_CHILD_SCRATCH";

/// Run by [`a_server_is_killed_when_the_suite_is_interrupted`] in a child process of its own,
/// which it interrupts; does nothing when run otherwise.
#[test]
#[ignore = "run by a_server_is_killed_when_the_suite_is_interrupted, in a process it interrupts"]
fn child_runs_a_server_until_interrupted() {
    static FOREVER: Entry = Entry {
        server: Some(Server {
            command: &["sh", "-c", "echo $$ > {dir}/server.pid; exec sleep 600"],
            ready: Ready::Started,
        }),
        ..fake("forever", &["sh", "-c", "echo $$ > {dir}/load.pid; exec sleep 600"], 600_000)
    };
    let Some(scratch) = std::env::var_os(CHILD_SCRATCH) else { return };
    let mut settings = settings(&[], 1, "child");
    settings.scratch = PathBuf::from(scratch);
    measure(&[&FOREVER], &settings);
}

/// Whether process `pid` is gone (or a zombie nobody has reaped yet: it runs no more).
fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

#[test]
fn a_server_is_killed_when_the_suite_is_interrupted() {
    use std::os::unix::process::ExitStatusExt;
    let scratch = std::env::temp_dir().join(format!("spinlab-apps-test-interrupted-{}", std::process::id()));
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "apps::tests::child_runs_a_server_until_interrupted", "--ignored", "--test-threads=1"])
        .env(CHILD_SCRATCH, &scratch)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let dir = scratch.join("forever");
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name)).ok().map(|t| t.trim().to_string()).filter(|t| !t.is_empty())
    };
    let started = Instant::now();
    let (server, load) = loop {
        if let (Some(server), Some(load)) = (read("server.pid"), read("load.pid")) {
            break (server, load);
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the child started its server and load");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!gone(&server) && !gone(&load));
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGINT), "spinlab dies of the interrupt it passed on");
    let started = Instant::now();
    while !(gone(&server) && gone(&load)) {
        assert!(started.elapsed() < Duration::from_secs(10), "server {server} and load {load} outlived the interrupt");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

#[test]
fn the_default_locks_are_the_default_the_references_and_each_algorithm_over_spin_park_that_fits() {
    let names: Vec<String> = default_locks()
        .iter()
        .map(|l| if l.via_alias { "default".to_string() } else { l.name().to_string() })
        .collect();
    assert_eq!(names[..3], ["default", "parking_lot", "pthread"], "{names:?}");
    assert!(!names.iter().any(|n| n == "std" || n.starts_with("hapax")), "std and hapax do not fit: {names:?}");
    for lock in default_locks().iter().skip(3) {
        assert!(lock.name().ends_with(":spin-park") && app::refused(lock).is_none(), "{}", lock.name());
    }
    assert!(names.iter().any(|n| n == "mcs:spin-park") && names.iter().any(|n| n == "malthusian:spin-park"));
    eprintln!("{}", names.join(","));
}

#[test]
fn the_options_default_to_the_fame_rule_two_minutes_a_run_and_64_mib_of_input() {
    let options: AppsOptions = crate::experiments::options::cli_defaults();
    assert!(options.locks.is_none() && options.programs.is_none() && !options.no_install);
    assert_eq!((options.timeout, options.input_mb), (Duration::from_secs(120), 64));
    let rule = options.repetition.rule(3, 10).unwrap();
    assert_eq!((rule.min_reps, rule.max_reps), (3, 10));
    assert_eq!(options.entries().len(), suite::SUITE.len());
}

#[test]
fn when_glibc_fails_in_a_later_round_the_locks_stop_with_the_runs_they_had() {
    // The third run without the library (warm-up, round 1, round 2) exits 3; the lock still
    // runs in round 2, after glibc.
    static LATE: Entry = fake(
        "late",
        &[
            "sh",
            "-c",
            "n=$(cat {dir}/n 2>/dev/null || echo 0); echo $((n + 1)) > {dir}/n; \
                       [ -z \"$SPINLAB_LOCK\" ] && [ $n -ge 2 ] && exit 3; echo result 42",
        ],
        20_000,
    );
    let rows = rows_of(&measure(&[&LATE], &settings(&["ttas:spin"], 3, "late")));
    assert!(rows[0].failed.as_deref().is_some_and(|f| f.starts_with("run 2: exit status 3")), "{rows:#?}");
    assert_eq!((rows[1].stop.as_deref(), rows[1].reps, rows[1].failed.as_deref()), (Some("stopped"), Some(2), None));
}
