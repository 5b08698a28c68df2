//! A real program's own thread tests under the preload library: GLib's installed tests
//! (Debian's `libglib2.0-tests`, in /usr/libexec/installed-tests/glib/), run once without the
//! library and once under each of three settings. Every test case must pass in every run, and
//! each run must list the same cases with the same outcomes (GLib's tests print TAP).
//!
//! What the chosen binaries lock: a `GRWLock` is a `pthread_rwlock_t` (made with
//! `pthread_rwlock_init(…, NULL)`), so `rwlock` (GLib's own `GRWLock` tests: 54 locks, up to
//! ten threads) goes through the rwlock replacement, as do `threadtests`, `type` and `signals`,
//! through GObject's type system, which guards its tables with a `GRWLock`. `GMutex`, `GCond`
//! and `GOnce` are GLib's own futex code on Linux and call no pthread lock: `thread`, `once`,
//! `onceinit`, `thread-pool` and `asyncqueue` show that threads, thread-local data and
//! GLib's own waits still work with the library loaded. (`rec-mutex` is left out: its
//! `GRecMutex` is a recursive pthread mutex, which the library passes to glibc, and it is
//! the slowest of GLib's thread tests.) The statistics of each preloaded run (`SPINLAB_STATS=1`
//! for the table, `SPINLAB_STATS_FILE` for the profiles read here) prove that the rwlocks went
//! through spinlab: the binaries that take a `GRWLock` have non-zero `rwlock` sites, and no
//! rwlock stayed glibc's.
//!
//! A process that takes no pthread lock prints no statistics, so they cannot show that the
//! library was loaded into the other binaries. The dynamic loader's own account does, for
//! every run: with glibc's `LD_DEBUG=files` it logs each library whose initialiser it calls,
//! a file per process (`LD_DEBUG_OUTPUT`, so the programs' stderr, which some GLib tests
//! check, is left alone). It must have called libspinlab_preload.so's initialiser in every
//! process of a preloaded run (each program the binary starts included), and in none of a run
//! without it.
//!
//! Needs the GLib tests installed (`SPINLAB_GLIB_TESTS` names another directory); Debian and
//! Ubuntu ship them as `libglib2.0-tests`.

use serde_json::Value;
use spinlab_c_tests::{libraries, run, scratch_dir, Ran};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// The binaries, and whether each takes a `GRWLock` (so must show `rwlock` rows).
const BINARIES: [(&str, bool); 9] = [
    ("rwlock", true),
    ("threadtests", true),
    ("type", true),
    ("signals", true),
    ("thread", false),
    ("once", false),
    ("onceinit", false),
    ("thread-pool", false),
    ("asyncqueue", false),
];

/// The preloaded settings: spinlab's defaults; queue-lock mutexes and rwlocks whose waiters
/// sleep at once; and a non-default rwlock policy that spins, then sleeps.
const SETTINGS: [&[(&str, &str)]; 3] = [
    &[],
    &[("SPINLAB_LOCK", "mcs:futex"), ("SPINLAB_RWLOCK", "rw-reader:spin-yield-park")],
    &[("SPINLAB_LOCK", "ticket:spin-park"), ("SPINLAB_RWLOCK", "rw-reader:spin-park")],
];

/// A watchdog for a hung binary, far above what any takes (`rwlock` is the longest).
const LIMIT: Duration = Duration::from_secs(180);

/// The installed tests' directory, or a panic that says how to install them.
fn tests_dir() -> PathBuf {
    let dir = std::env::var_os("SPINLAB_GLIB_TESTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/libexec/installed-tests/glib"));
    assert!(
        dir.join("rwlock").is_file(),
        "GLib's installed tests are not in {} (no `rwlock` there): install them (Debian/Ubuntu: \
         apt-get install libglib2.0-tests) or name their directory with SPINLAB_GLIB_TESTS",
        dir.display()
    );
    dir
}

/// How a test case ended, from its TAP line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Passed,
    Skipped,
    Failed,
}

/// Each case of a TAP report (`ok 3 /thread/rwlock3`, `ok 4 /x # SKIP why`, `not ok 5 /y`)
/// with its outcome; checks that the plan (`1..N`) was met.
fn outcomes(tap: &str, label: &str) -> BTreeMap<String, Outcome> {
    let mut cases = BTreeMap::new();
    let mut planned = None;
    for line in tap.lines() {
        if let Some(count) = line.strip_prefix("1..") {
            planned = count.trim().parse::<usize>().ok();
            continue;
        }
        let (outcome, rest) = if let Some(rest) = line.strip_prefix("not ok ") {
            (Outcome::Failed, rest)
        } else if let Some(rest) = line.strip_prefix("ok ") {
            (if line.contains("# SKIP") { Outcome::Skipped } else { Outcome::Passed }, rest)
        } else {
            continue;
        };
        let name = rest.split_whitespace().nth(1).unwrap_or(rest).to_string();
        cases.insert(name, outcome);
    }
    assert_eq!(planned, Some(cases.len()), "{label}: the TAP plan and the cases reported differ:\n{tap}");
    cases
}

/// A finished run of one binary.
struct Finished {
    cases: BTreeMap<String, Outcome>,
    ran: Ran,
    /// Its processes: the binary's, and those of any program it started.
    processes: usize,
    /// Those into which the loader loaded the preload library and called its initialiser.
    preloaded: usize,
    /// The profiles its processes wrote (`SPINLAB_STATS_FILE`).
    profiles: Vec<Value>,
}

/// Runs one binary with `env` and the loader's account on, and checks it exited with 0.
/// `library` is the preload library's path, as `LD_PRELOAD` names it.
fn run_binary(binary: &Path, env: &[(&str, &str)], label: &str, library: &str) -> Finished {
    // A fresh folder per run; `LD_DEBUG_OUTPUT` is a prefix, to which the loader adds `.PID`.
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let program = binary.file_name().map_or("program".into(), |name| name.to_string_lossy());
    let dir = scratch_dir().join("glib-loader").join(format!("{program}-{}", RUNS.fetch_add(1, Relaxed)));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{} cannot be created: {e}", dir.display()));
    let prefix = dir.join("ld").display().to_string();
    let profiles = dir.join("profile").display().to_string();
    let mut env = env.to_vec();
    env.extend([("LD_DEBUG", "files"), ("LD_DEBUG_OUTPUT", prefix.as_str()), ("SPINLAB_STATS_FILE", &profiles)]);
    let ran = run(binary, &["--tap"], &env, LIMIT);
    ran.assert_success(label);
    let cases = outcomes(&ran.stdout, label);
    assert!(!cases.is_empty(), "{label}: no test case ran:\n{}", ran.stdout);
    let files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{} cannot be read: {e}", dir.display()))
        .map(|file| {
            let path = file.expect("a folder entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).expect("a loader log or a profile"))
        })
        .collect();
    let logs: Vec<&String> = files.iter().filter(|(name, _)| name.starts_with("ld.")).map(|(_, text)| text).collect();
    let profiles = files
        .iter()
        .filter(|(name, _)| name.starts_with("profile."))
        .map(|(name, text)| serde_json::from_str(text).unwrap_or_else(|e| panic!("{label}: {name} is not JSON ({e})")))
        .collect();
    assert!(!logs.is_empty(), "{label}: the loader wrote no account in {}", dir.display());
    let initialised = format!("calling init: {library}\n");
    let preloaded = logs.iter().filter(|log| log.contains(&initialised)).count();
    Finished { cases, ran, processes: logs.len(), preloaded, profiles }
}

/// The acquisitions of each site of `kind` in `profiles` (a binary that forks writes one per
/// process that locked something).
fn acquisitions_of(profiles: &[Value], kind: &str) -> Vec<u64> {
    profiles
        .iter()
        .flat_map(|profile| profile["sites"].as_array().expect("a profile lists its sites"))
        .filter(|site| site["kind"] == kind)
        .map(|site| site["acquisitions"].as_u64().expect("acquisitions are a count"))
        .collect()
}

#[test]
fn glib_thread_tests_pass_the_same_with_and_without_the_preload_library() {
    let dir = tests_dir();
    let library = libraries().join("libspinlab_preload.so").display().to_string();
    let mut summary = Vec::new();
    for (name, takes_rwlocks) in BINARIES {
        let binary = dir.join(name);
        let started = Instant::now();
        let label = format!("{name} without the library");
        let without = run_binary(&binary, &[], &label, &library);
        assert_eq!(without.preloaded, 0, "{label}: {} of its processes loaded the library", without.preloaded);
        let baseline = without.cases;
        assert!(
            baseline.values().all(|&o| o != Outcome::Failed),
            "{name} fails without the library, so it cannot tell us anything: {baseline:?}"
        );
        let mut line = format!("{name}: {} cases ({:.1?} without)", baseline.len(), started.elapsed());
        for setting in SETTINGS {
            let label = format!("{name} with {setting:?}");
            let mut env =
                vec![("LD_PRELOAD", library.as_str()), ("SPINLAB_STATS", "1"), ("SPINLAB_STATS_TOP", "10000")];
            env.extend_from_slice(setting);
            let started = Instant::now();
            let with = run_binary(&binary, &env, &label, &library);
            assert_eq!(
                with.preloaded, with.processes,
                "{label}: the library was loaded into {} of its {} processes",
                with.preloaded, with.processes
            );
            assert_eq!(with.cases, baseline, "{label}: the cases or their outcomes differ from the run without");
            let ran = &with.ran;
            let lock =
                setting.iter().find(|(v, _)| *v == "SPINLAB_LOCK").map_or("adaptive:pause-yield-park", |(_, l)| l);
            let heading = format!("spinlab-preload: lock statistics of {name} (pid ");
            let rwlocks = acquisitions_of(&with.profiles, "rwlock");
            if takes_rwlocks {
                assert!(
                    ran.stderr.lines().any(|l| l.starts_with(&heading) && l.contains(&format!("mutexes {lock}:"))),
                    "{label}: no statistics from the library naming the lock {lock}:\n{}",
                    ran.stderr
                );
                assert!(
                    !rwlocks.is_empty() && rwlocks.iter().all(|&n| n > 0),
                    "{label}: its GRWLocks did not go through spinlab:\n{}",
                    ran.stderr
                );
            }
            assert!(
                acquisitions_of(&with.profiles, "glibc-rwlock").is_empty(),
                "{label}: an rwlock stayed glibc's:\n{}",
                ran.stderr
            );
            line += &format!(
                "; {:.1?} with {setting:?}, processes with the library: {}, {} rwlocks, {} acquisitions",
                started.elapsed(),
                with.processes,
                rwlocks.len(),
                rwlocks.iter().sum::<u64>()
            );
        }
        summary.push(line);
    }
    println!("{}", summary.join("\n"));
}

#[test]
fn tap_outcomes_are_read_per_case_and_the_plan_is_checked() {
    let tap = "# random seed: x\n1..3\n# Start of thread tests\nok 1 /thread/a\nok 2 /thread/b # SKIP no\nnot ok 3 /thread/c\n";
    let cases = outcomes(tap, "sample");
    assert_eq!(cases["/thread/a"], Outcome::Passed);
    assert_eq!(cases["/thread/b"], Outcome::Skipped);
    assert_eq!(cases["/thread/c"], Outcome::Failed);
    let profiles: Vec<Value> = [
        r#"{"sites": [{"kind": "rwlock", "acquisitions": 12}, {"kind": "mutex", "acquisitions": 5}]}"#,
        r#"{"sites": [{"kind": "glibc-rwlock", "acquisitions": 3}, {"kind": "rwlock", "acquisitions": 4}]}"#,
    ]
    .iter()
    .map(|text| serde_json::from_str(text).unwrap())
    .collect();
    assert_eq!(acquisitions_of(&profiles, "rwlock"), [12, 4]);
    assert_eq!(acquisitions_of(&profiles, "glibc-rwlock"), [3]);
}

#[test]
#[should_panic(expected = "the TAP plan and the cases reported differ")]
fn a_report_that_stops_before_its_plan_is_refused() {
    outcomes("1..3\nok 1 /a\nok 2 /b\n", "cut short");
}
