//! `spinlab app`: a program under each lock through the preload library.
//!
//! The preload library is a cdylib, which cargo does not build before this crate's tests, so
//! the positive tests build it with this test's profile and target directory first, as the
//! C libraries' own tests do (`spinlab_c_tests::libraries`).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SPINLAB: &str = env!("CARGO_BIN_EXE_spinlab");

/// Builds libspinlab_preload.so next to the spinlab binary (once per test process), where
/// `spinlab app` looks for it.
fn preload() -> PathBuf {
    spinlab_c_tests::libraries().join("libspinlab_preload.so")
}

fn spinlab(args: &[&str]) -> Output {
    Command::new(SPINLAB).args(args).output().expect("spinlab runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spinlab-app-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn each_lock_and_the_baseline_get_a_row_with_times_and_exit_status() {
    preload();
    let dir = scratch("rows");
    let json = dir.join("app.json");
    let output = spinlab(&[
        "app",
        "--locks",
        "ttas:spin-park,mcs:futex,pthread",
        "--reps",
        "2",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "exit 0",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("mcs:futex") && stdout.contains("baseline"), "{stdout}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["schema"], "spinlab.results/1");
    let run = &doc["runs"][0];
    assert_eq!(run["experiment"], "app");
    let rows = run["rows"].as_array().unwrap();
    let locks: Vec<&str> = rows.iter().map(|r| r["lock"].as_str().unwrap()).collect();
    assert_eq!(locks, ["baseline", "ttas:spin-park", "mcs:futex", "pthread"], "pthread: glibc's, through the library");
    for row in rows {
        for key in ["wall_s", "wall_ci95_s", "user_s", "sys_s", "ratio_to_baseline"] {
            assert!(row[key].as_f64().is_some_and(|x| x >= 0.0), "{key} in {row}");
        }
        assert_eq!(row["reps"], 2, "{row}");
        assert_eq!(row["exit_status"], "0", "{row}");
        assert!(row.get("note").is_none(), "{row}");
    }
    assert_eq!(rows[0]["ratio_to_baseline"], 1.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_exit_status_unlike_the_baselines_is_noted() {
    preload();
    // Under the preload library the program sees LD_PRELOAD and fails; the baseline does not.
    let output = spinlab(&[
        "app",
        "--locks",
        "default",
        "--reps",
        "1",
        "--quiet",
        "--json",
        "-",
        "--",
        "sh",
        "-c",
        "test -z \"$LD_PRELOAD\"",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    let rows = doc["runs"][0]["rows"].as_array().unwrap();
    assert_eq!(rows[0]["exit_status"], "0");
    assert_eq!(rows[1]["lock"], "default");
    assert_eq!(rows[1]["lock_name"], "adaptive:pause-yield-park");
    assert_eq!(rows[1]["exit_status"], "1");
    assert!(rows[1]["note"].as_str().unwrap().contains("differs from the baseline"), "{}", rows[1]);
    assert!(stderr(&output).contains("warning: default:"), "{}", stderr(&output));
}

#[test]
fn bad_input_is_refused_with_one_line_and_status_2() {
    let cases: [(&[&str], &str); 6] = [
        (&["app", "--locks", "mcs:futex"], "no command to run"),
        (&["app", "--locks", "mcs:futex", "--timeout", "2d", "--", "true"], "1ms to 24h"),
        (&["app", "--locks", "mcs:futex", "--reps", "0", "--", "true"], "1 to 1000"),
        (&["app", "--locks", "mcs:futex", "--"], "no command to run"),
        (&["app", "--locks", "std", "--", "true"], "does not fit in a pthread_mutex_t"),
        (&["app", "--locks", "mcs:nope", "--", "true"], "spinlab list"),
    ];
    for (args, expected) in cases {
        let output = spinlab(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        let text = stderr(&output);
        assert_eq!(text.lines().count(), 1, "{args:?}: {text}");
        assert!(text.contains(expected), "{args:?}: {text}");
    }
}

#[test]
fn a_missing_preload_library_says_how_to_build_it() {
    // A copy of the binary in a folder without the library. `cp` writes it, not this process:
    // a file this process held open for writing would be inherited by a child that another
    // test forks meanwhile, and exec would then fail with "Text file busy" (ETXTBSY).
    let dir = scratch("missing");
    let copy = dir.join("spinlab");
    let cp = Command::new("cp").arg(SPINLAB).arg(&copy).status().expect("cp runs");
    assert!(cp.success(), "cp {SPINLAB} {}", copy.display());
    let output = Command::new(&copy).args(["app", "--locks", "default", "--", "true"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains("libspinlab_preload.so is missing") && text.contains("cargo build --release -p spinlab-preload"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Whether process `pid` is gone or a zombie (killed, not yet reaped by whoever adopted it).
fn dead(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits up to 10 s for `path` to hold a process id.
fn pid_in(path: &Path) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(path).ok().map(|t| t.trim().to_string()).filter(|t| !t.is_empty()) {
            return pid;
        }
        assert!(std::time::Instant::now() < deadline, "{} was never written", path.display());
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn a_run_past_the_timeout_is_killed_with_its_children_and_the_next_lock_still_runs() {
    preload();
    let dir = scratch("timeout");
    let pid_file = dir.join("grandchild.pid");
    // Under ttas:spin the program starts a child that outlives the timeout; under mcs:futex
    // and without the library it exits at once.
    let script = format!(
        "if [ \"$SPINLAB_LOCK\" = ttas:spin ]; then sleep 30 & echo $! > {}; wait; fi; exit 0",
        pid_file.display()
    );
    let started = std::time::Instant::now();
    let output = spinlab(&[
        "app",
        "--locks",
        "ttas:spin,mcs:futex",
        "--reps",
        "2",
        "--timeout",
        "300ms",
        "--quiet",
        "--json",
        "-",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(started.elapsed().as_secs() < 10, "the timed-out lock was run again, or not killed");
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    let run = &doc["runs"][0];
    assert_eq!(run["params"]["timeout_s"], 0.3);
    let rows = run["rows"].as_array().unwrap();
    let row = |lock: &str| rows.iter().find(|r| r["lock"] == lock).unwrap_or_else(|| panic!("no {lock} row"));
    let killed = row("ttas:spin");
    assert_eq!(killed["timed_out"], true, "{killed}");
    assert_eq!(killed["exit_status"], "timeout", "{killed}");
    assert_eq!(killed["verdict"], "stopped", "{killed}");
    assert!(killed["note"].as_str().unwrap().contains("killed at --timeout"), "{killed}");
    assert!(killed.get("wall_s").is_none(), "a killed run's time is the limit's, not the program's: {killed}");
    for lock in ["baseline", "mcs:futex"] {
        let r = row(lock);
        assert_eq!(r["timed_out"], false, "{r}");
        assert_eq!(r["exit_status"], "0", "{r}");
        assert_eq!(r["reps"], 2, "{r}");
    }
    // The program's own child was in its process group, and went with it.
    let grandchild = pid_in(&pid_file);
    assert!(dead(&grandchild), "the program's child {grandchild} outlived the timeout");
    assert!(stderr(&output).contains("warning: ttas:spin:"), "{}", stderr(&output));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_baseline_past_the_timeout_is_refused_with_one_line() {
    preload();
    let started = std::time::Instant::now();
    let output = spinlab(&["app", "--locks", "default", "--timeout", "100ms", "--", "sleep", "5"]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("--timeout") && text.contains("1ms to 24h"), "{text}");
    assert!(started.elapsed().as_secs() < 4, "the warm-up was not killed at the timeout");
}

#[test]
fn a_termination_of_spinlab_reaches_the_programs_process_group() {
    use std::os::unix::process::ExitStatusExt;
    preload();
    let dir = scratch("sigterm");
    let pid_file = dir.join("child.pid");
    // With --timeout the program runs in a group of its own, out of reach of signals sent to
    // spinlab's: spinlab must pass them on.
    let script = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
    let mut lab = Command::new(SPINLAB)
        .args(["app", "--locks", "default", "--timeout", "60s", "--quiet", "--", "sh", "-c", &script])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let child = pid_in(&pid_file);
    // SAFETY: kill has no memory effects; the pid is our own child's.
    assert_eq!(unsafe { libc::kill(lab.id() as libc::pid_t, libc::SIGTERM) }, 0);
    let status = lab.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !dead(&child) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(dead(&child), "the program's child {child} outlived spinlab");
    std::fs::remove_dir_all(&dir).unwrap();
}
