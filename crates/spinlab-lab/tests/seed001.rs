//! `spinlab run wakeup`, `barrier` and `spr` end to end on tiny settings: the rows carry the
//! keys docs/results.md promises, a placement this machine lacks is a skipped row with its
//! reason, SPR's results equal the serial ones, and bad input gets one line listing what is
//! accepted.

use serde_json::Value;
use std::process::{Command, Output};

fn spinlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spinlab")).args(args).output().expect("spinlab runs")
}

/// Runs `args` with `--json -` and returns the rows of its one run.
fn rows(args: &[&str]) -> Vec<Value> {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--quiet", "--json", "-"]);
    let o = spinlab(&all);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("a JSON document on stdout");
    let runs = doc["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1);
    runs[0]["rows"].as_array().expect("rows").clone()
}

fn measured(rows: &[Value]) -> Vec<&Value> {
    rows.iter().filter(|r| r.get("skipped").is_none()).collect()
}

fn assert_keys(row: &Value, keys: &[&str]) {
    for k in keys {
        assert!(row.get(k).is_some_and(|v| !v.is_null()), "row lacks `{k}`: {row}");
    }
}

/// The placements to ask for: two threads on one CPU always exist; `core` where there are
/// two CPUs; `smt` exists only on SMT machines, and otherwise must come back skipped.
fn placements() -> &'static str {
    "same-cpu,smt,core"
}

fn skipped_placements_say_why(rows: &[Value]) {
    for r in rows.iter().filter(|r| r.get("skipped").is_some()) {
        assert!(r["skipped"].as_str().is_some_and(|s| !s.is_empty()), "{r}");
    }
}

#[test]
fn wakeup_rows_have_twork_twakeup_and_tcall_for_every_primitive() {
    let rows = rows(&[
        "run",
        "wakeup",
        "--size",
        "12",
        "--short-size",
        "4",
        "--min-reps",
        "2",
        "--max-reps",
        "2",
        "--placement",
        placements(),
    ]);
    skipped_placements_say_why(&rows);
    let done = measured(&rows);
    for wait in ["spin", "pause", "yield", "futex", "spin-park", "pthread-cond"] {
        let row = done.iter().find(|r| r["wait"] == wait && r["placement"] == "same-cpu").expect(wait);
        assert_keys(
            row,
            &[
                "wait",
                "placement",
                "matrix_n",
                "twork_s",
                "twork_sd_s",
                "twakeup_ns",
                "twakeup_sd_ns",
                "tcall_ns",
                "tcall_sd_ns",
                "reps",
            ],
        );
    }
    let alone = done.iter().find(|r| r["wait"] == "none").expect("the worker alone");
    assert_keys(alone, &["twork_s"]);
    assert!(alone.get("twakeup_ns").is_none());
    // Every monitor policy is a row: measured, or skipped with the missing feature.
    for wait in ["umwait", "mwaitx", "wfe"] {
        assert!(rows.iter().any(|r| r["wait"] == wait), "{wait} missing");
    }
}

#[test]
fn barrier_rows_cover_3a_and_every_light_load_of_3b_with_the_pthread_ratio() {
    let rows = rows(&[
        "run",
        "barrier",
        "--size",
        "12",
        "--iterations",
        "50",
        "--min-reps",
        "2",
        "--max-reps",
        "2",
        "--barriers",
        "barrier:pause,barrier:futex,pthread,std",
        "--placement",
        placements(),
    ]);
    skipped_placements_say_why(&rows);
    let done = measured(&rows);
    let fig3a: Vec<_> = done.iter().filter(|r| r["scenario"] == "3a").collect();
    assert_eq!(fig3a.len() % 4, 0);
    // Same-cpu is measured on every machine: its four barriers must be there, so the key
    // checks below never run over nothing.
    assert_eq!(fig3a.iter().filter(|r| r["placement"] == "same-cpu").count(), 4, "{fig3a:?}");
    for r in &fig3a {
        assert_keys(r, &["barrier", "placement", "twork_s", "twakeup_ns", "tcall_ns", "reps"]);
    }
    for light in 0..=10 {
        let at: Vec<_> = done
            .iter()
            .filter(|r| r["scenario"] == "3b" && r["light_units"] == light && r["placement"] == "same-cpu")
            .collect();
        assert_eq!(at.len(), 4, "light {light}");
        for r in &at {
            assert_keys(r, &["barrier", "light_units", "completion_s", "ratio_to_pthread"]);
        }
        let pthread = at.iter().find(|r| r["barrier"] == "pthread").unwrap();
        assert_eq!(pthread["ratio_to_pthread"].as_f64(), Some(1.0));
    }
}

#[test]
fn spr_rows_have_speedup_and_sync_and_equal_the_serial_results() {
    let rows = rows(&[
        "run",
        "spr",
        "--spmv-cols",
        "20000",
        "--spmv-rows",
        "3000",
        "--spmv-block-rows",
        "64",
        "--tc-vertices",
        "100",
        "--tc-edges",
        "400",
        "--min-reps",
        "2",
        "--max-reps",
        "2",
        "--barriers",
        "barrier:pause,barrier:futex,pthread",
        "--placement",
        placements(),
    ]);
    skipped_placements_say_why(&rows);
    let done = measured(&rows);
    for app in ["spmv", "tc"] {
        for barrier in ["serial", "barrier:pause", "barrier:futex", "pthread"] {
            let row = done
                .iter()
                .find(|r| r["app"] == app && r["barrier"] == barrier && r["placement"] == "same-cpu")
                .expect(barrier);
            assert_keys(row, &["app", "barrier", "time_s", "speedup", "worker_sync_pct", "equal_to_serial"]);
            assert_eq!(row["equal_to_serial"], true, "{app} with {barrier}");
        }
    }
}

/// Bad input: status 2, one line on stderr containing every needle.
fn assert_refused(args: &[&str], needles: &[&str]) {
    let o = spinlab(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: `{n}` missing from: {err}");
    }
}

#[test]
fn unknown_policies_barriers_and_applications_are_refused_with_the_valid_names() {
    assert_refused(&["run", "wakeup", "--waits", "nap"], &["nap", "spin-park", "futex"]);
    assert_refused(&["run", "barrier", "--barriers", "barrier:nap"], &["barrier:POLICY", "pthread", "std"]);
    assert_refused(&["run", "barrier", "--light-units", "11"], &["0 to 10"]);
    assert_refused(&["run", "spr", "--apps", "lu"], &["spmv", "tc"]);
    assert_refused(&["run", "spr", "--tc-block", "12"], &["16"]);
    assert_refused(&["run", "barrier", "--threads", "2"], &["--threads", "--placement"]);
}
