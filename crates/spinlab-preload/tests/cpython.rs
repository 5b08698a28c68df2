//! A real program's own thread tests under the preload library: CPython's `test_threading`,
//! `test_thread`, `test_queue` and `test_threading_local`, run by its regression-test driver
//! (`python3 -m test`), once with each of two spinlab locks. Every test case that does not
//! pass under a lock, or runs under one lock only, must end the same way without the library:
//! failed, errored, skipped or absent. (Compared, not assumed to pass: on a given machine some
//! fail without the library too. A case that passes with the library needs no comparison, so
//! only the others run without it.)
//!
//! CPython takes its GIL with a pthread mutex and condition variable (timed waits on
//! `CLOCK_MONOTONIC`), so every thread switch in these tests goes through the replacements.
//! The `mcs:futex` run counts as well (`SPINLAB_STATS_FILE`): its cases must end as without the
//! library, and its processes' profiles must name the interpreter's mutexes.
//!
//! Timing-sensitive cases can end differently once under load whatever the lock, so a case
//! whose ending differs is run again alone, three more times each way, and counts as a
//! difference only if the endings of the two sides never meet. A whole run can also hang, as
//! a deadlock in a replacement makes it: many cases wait for a subprocess with no time limit.
//! regrtest's own time-out ([`HUNG`]) then dumps every thread's traceback, naming the case,
//! and the run is tried once more: a hang shows in the log (on stderr, past the harness's
//! capture), and a second one fails the test.
//!
//! Needs a `python3` with CPython's test package (`SPINLAB_PYTHON` names one explicitly);
//! Debian and Ubuntu ship it as `libpython3.X-testsuite`.

use spinlab_c_tests::{libraries, run, scratch_dir, try_run, Ran};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const MODULES: [&str; 4] = ["test_threading", "test_thread", "test_queue", "test_threading_local"];
/// spinlab's default lock, and a queue lock whose waiters sleep at once.
const LOCKS: [&str; 2] = ["adaptive:pause-yield-park", "mcs:futex"];
/// The lock whose run also counts (`SPINLAB_STATS_FILE`): the cases must end the same with the
/// statistics on, and every process's profile must be readable. Not `SPINLAB_STATS=1`: its
/// table on stderr would fail the cases that check a child interpreter's stderr is empty.
const COUNTED: &str = "mcs:futex";
/// How long one test module may run before regrtest dumps every thread's traceback and exits
/// (`--timeout`): several times what the slowest takes (half a minute).
const HUNG: Duration = Duration::from_secs(150);
/// A watchdog for a run that hung past regrtest's own time-out.
const LIMIT: Duration = Duration::from_secs(240);
const RERUNS: usize = 3;

/// The interpreter itself (not a wrapper such as pyenv's shim) of the first candidate that has
/// the test package.
fn python() -> PathBuf {
    let candidates: Vec<String> = match std::env::var("SPINLAB_PYTHON") {
        Ok(explicit) => vec![explicit],
        Err(_) => vec!["python3".into(), "/usr/bin/python3".into()],
    };
    for candidate in &candidates {
        let probe = Command::new(candidate)
            .args(["-c", "import sys, test.test_threading, test.libregrtest; print(sys.executable)"])
            .output();
        if let Ok(output) = probe {
            let executable = String::from_utf8_lossy(&output.stdout).trim().to_string();
            if output.status.success() && !executable.is_empty() {
                return PathBuf::from(executable);
            }
        }
    }
    panic!(
        "none of {candidates:?} is a python3 with CPython's test package (test.test_threading): \
         install it (Debian/Ubuntu: apt-get install libpython3.X-testsuite, X the minor version of \
         python3) or name one with SPINLAB_PYTHON"
    );
}

/// How a test case ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ending {
    Passed,
    Failed,
    Errored,
    Skipped,
}

/// A run of regrtest that takes longer than this (several times a normal one) names its
/// slowest cases on stderr, past the harness's capture, so that a slow CI log says where.
const SLOW: Duration = Duration::from_secs(150);

/// The `count` slowest cases of a `--junit-xml` report, slowest first, with their seconds.
fn slowest(xml: &str, count: usize) -> Vec<(f64, String)> {
    let attribute =
        |case: &str, key: &str| case.split(&format!("{key}=\"")).nth(1)?.split('"').next().map(String::from);
    let mut cases: Vec<(f64, String)> = xml
        .split("<testcase ")
        .skip(1)
        .filter_map(|case| Some((attribute(case, "time")?.parse().ok()?, attribute(case, "name")?)))
        .collect();
    cases.sort_by(|a, b| b.0.total_cmp(&a.0));
    cases.truncate(count);
    cases
}

/// Every test case of a `--junit-xml` report with its ending.
fn endings(xml: &str) -> BTreeMap<String, Ending> {
    let mut endings = BTreeMap::new();
    for case in xml.split("<testcase ").skip(1) {
        let Some(name) = case.split("name=\"").nth(1).and_then(|rest| rest.split('"').next()) else { continue };
        // The case's own elements end where the next case begins; attribute values are
        // escaped, so a '<' starts an element.
        let ending = if case.contains("<failure") {
            Ending::Failed
        } else if case.contains("<error") {
            Ending::Errored
        } else if case.contains("<skipped") {
            Ending::Skipped
        } else {
            Ending::Passed
        };
        endings.insert(name.to_string(), ending);
    }
    endings
}

/// Runs the regression tests `args` (modules, `-m` filters) with `lock` preloaded (`None`:
/// without the library) and returns each case's ending.
fn regrtest(python: &Path, lock: Option<&str>, args: &[&str], label: &str) -> BTreeMap<String, Ending> {
    let dir = scratch_dir().join(format!("cpython-{label}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let xml = dir.join("results.xml");
    let xml_arg = xml.display().to_string();
    let dir_arg = dir.display().to_string();
    let timeout = HUNG.as_secs().to_string();
    let mut full: Vec<&str> = vec!["-m", "test", "--tempdir", &dir_arg, "--junit-xml", &xml_arg, "--timeout", &timeout];
    full.extend_from_slice(args);
    let library = libraries().join("libspinlab_preload.so").display().to_string();
    let profiles = dir.join("profile").display().to_string();
    let env: Vec<(&str, &str)> = match lock {
        Some(COUNTED) => {
            vec![("LD_PRELOAD", library.as_str()), ("SPINLAB_LOCK", COUNTED), ("SPINLAB_STATS_FILE", profiles.as_str())]
        }
        Some(lock) => vec![("LD_PRELOAD", library.as_str()), ("SPINLAB_LOCK", lock)],
        None => vec![],
    };
    // regrtest exits non-zero when a case fails; the endings are what is compared.
    let started = Instant::now();
    let (ran, report) = match regrtest_once(python, &full, &env, &xml) {
        Ok(done) => done,
        Err(hung) => {
            // Straight to stderr, past the test harness's capture: a hang that the second run
            // got past must still show in the log.
            let _ = writeln!(
                std::io::stderr(),
                "{label}: regrtest {args:?} ended without a report; running it once more. {hung}"
            );
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            regrtest_once(python, &full, &env, &xml).unwrap_or_else(|hung| panic!("{label}: no report twice. {hung}"))
        }
    };
    if started.elapsed() > SLOW {
        let _ = writeln!(
            std::io::stderr(),
            "{label}: regrtest {args:?} took {:?}; its slowest cases: {:?}",
            started.elapsed(),
            slowest(&report, 5)
        );
    }
    let endings = endings(&report);
    assert!(!endings.is_empty(), "{label}: no test case ran\n{}\n{}", ran.stdout, ran.stderr);
    if lock == Some(COUNTED) {
        check_profiles(&dir, label);
    }
    endings
}

/// One run of regrtest with `args` and `env`, and its report at `xml`; `Err` with the end of
/// what it said if it wrote none, as a hung run does: regrtest's own `--timeout` ([`HUNG`]) dumps every thread's
/// traceback, naming the case, and exits without a report; the watchdog ([`LIMIT`]) kills a
/// run that could not even do that.
fn regrtest_once(python: &Path, args: &[&str], env: &[(&str, &str)], xml: &Path) -> Result<(Ran, String), String> {
    let tail = |text: &str| {
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    };
    match try_run(python, args, env, LIMIT) {
        Ok(ran) => match std::fs::read_to_string(xml) {
            Ok(report) => Ok((ran, report)),
            Err(e) => Err(format!(
                "No report {} ({e}); its last output:\n{}\n{}",
                xml.display(),
                tail(&ran.stdout),
                tail(&ran.stderr)
            )),
        },
        Err(hung) => Err(format!(
            "Killed with its subprocesses after {LIMIT:?}; its last output:\n{}\n{}",
            tail(&hung.stdout),
            tail(&hung.stderr)
        )),
    }
}

/// The profiles the counted run's processes wrote in `dir`: at least one, each a profile of
/// `python` with its sites named, one with a mutex made or contended inside the interpreter.
fn check_profiles(dir: &Path, label: &str) {
    let profiles: Vec<serde_json::Value> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.file_name().is_some_and(|name| name.to_string_lossy().starts_with("profile.")))
        .map(|path| serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap())
        .collect();
    assert!(!profiles.is_empty(), "{label}: no process wrote a profile in {}", dir.display());
    let named = profiles.iter().flat_map(|p| p["sites"].as_array().unwrap()).any(|site| {
        site["kind"] == "mutex" && site["stack"].as_array().unwrap().iter().any(|frame| frame["function"].is_string())
    });
    assert!(profiles.iter().all(|p| p["format"] == "spinlab.profile/1" && p["lock"] == COUNTED), "{label}");
    assert!(named, "{label}: no mutex site with a named frame among {} profiles", profiles.len());
}

/// Checks that `lock` is what the library reports inside this interpreter.
fn assert_preloaded(python: &Path, lock: &str) {
    let library = libraries().join("libspinlab_preload.so").display().to_string();
    let script =
        "import ctypes; f = ctypes.CDLL(None).spinlab_preload_lock; f.restype = ctypes.c_char_p; print(f().decode())";
    let ran = run(python, &["-c", script], &[("LD_PRELOAD", &library), ("SPINLAB_LOCK", lock)], LIMIT);
    assert_eq!(ran.stdout.trim(), lock, "the library is not in effect in {}: {}", python.display(), ran.stderr);
}

fn summary(endings: &BTreeMap<String, Ending>) -> String {
    let mut counts: BTreeMap<Ending, usize> = BTreeMap::new();
    for ending in endings.values() {
        *counts.entry(*ending).or_default() += 1;
    }
    format!("{counts:?}")
}

/// The endings of `case` in `runs` more runs of it alone.
fn rerun(python: &Path, lock: Option<&str>, case: &str) -> BTreeSet<Ending> {
    let module = case.split('.').nth(1).unwrap_or(case);
    (0..RERUNS)
        .filter_map(|i| regrtest(python, lock, &[module, "-m", case], &format!("rerun-{i}")).get(case).copied())
        .collect()
}

#[test]
fn cpython_thread_tests_end_the_same_with_and_without_spinlab_locks() {
    let python = python();
    libraries();
    let mut runs = Vec::new();
    for lock in LOCKS {
        assert_preloaded(&python, lock);
        let started = Instant::now();
        let preloaded = regrtest(&python, Some(lock), &MODULES, lock.replace(':', "-").as_str());
        println!(
            "with SPINLAB_LOCK={lock}: {} cases {} in {:?}",
            preloaded.len(),
            summary(&preloaded),
            started.elapsed()
        );
        runs.push((lock, preloaded));
    }
    // Without the library only what needs comparing: the cases that did not pass, or did not
    // run, under some lock.
    let cases: BTreeSet<&String> = runs.iter().flat_map(|(_, run)| run.keys()).collect();
    let compared: BTreeSet<&String> = cases
        .iter()
        .copied()
        .filter(|case| runs.iter().any(|(_, run)| run.get(*case) != Some(&Ending::Passed)))
        .collect();
    let baseline = if compared.is_empty() {
        BTreeMap::new()
    } else {
        let modules: BTreeSet<&str> = compared.iter().map(|case| case.split('.').nth(1).unwrap_or(case)).collect();
        let mut args: Vec<&str> = modules.into_iter().collect();
        for case in &compared {
            args.extend(["-m", case.as_str()]);
        }
        regrtest(&python, None, &args, "baseline")
    };
    println!("{} without the library: {} cases {}", python.display(), baseline.len(), summary(&baseline));
    let mut differences = Vec::new();
    for (lock, preloaded) in &runs {
        for case in &compared {
            let (before, after) = (baseline.get(*case).copied(), preloaded.get(*case).copied());
            if after == Some(Ending::Passed) || before == after {
                continue;
            }
            let mut without: BTreeSet<Ending> = before.into_iter().collect();
            let mut with: BTreeSet<Ending> = after.into_iter().collect();
            without.extend(rerun(&python, None, case));
            with.extend(rerun(&python, Some(lock), case));
            println!("  {case}: without {without:?}, with {lock} {with:?}");
            if without.is_disjoint(&with) {
                differences.push(format!("{case}: without the library {without:?}, with {lock} {with:?}"));
            }
        }
    }
    assert!(
        differences.is_empty(),
        "test cases that end differently under the preload library:\n{}",
        differences.join("\n")
    );
}

#[test]
fn junit_endings_are_read_from_each_case_element() {
    let xml = r#"<testsuites><testsuite><testcase name="test.a.T.test_noerror" status="run" />
<testcase name="test.a.T.test_f"><system-out /><failure type="AssertionError" message="x &lt;error" /></testcase>
<testcase name="test.a.T.test_e"><error message="boom" /></testcase>
<testcase name="test.a.T.test_s"><skipped>no</skipped></testcase></testsuite></testsuites>"#;
    let endings = endings(xml);
    assert_eq!(endings["test.a.T.test_noerror"], Ending::Passed);
    assert_eq!(endings["test.a.T.test_f"], Ending::Failed);
    assert_eq!(endings["test.a.T.test_e"], Ending::Errored);
    assert_eq!(endings["test.a.T.test_s"], Ending::Skipped);
    let timed = r#"<testcase name="t.a" status="run" time="0.5" /><testcase name="t.b" time="12.25"><failure /></testcase>
<testcase name="t.c" time="3.0" /><testcase name="t.untimed" />"#;
    assert_eq!(slowest(timed, 2), [(12.25, "t.b".to_string()), (3.0, "t.c".to_string())]);
}
