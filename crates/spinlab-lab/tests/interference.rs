//! `spinlab run interference` and `spinlab run handoff` end to end on tiny settings: the rows
//! have the keys docs/results.md promises, placements the machine lacks and policies the CPU
//! lacks are skipped rows with a reason, and bad input gets one line listing what is valid.

use serde_json::Value;
use std::process::{Command, Output};

fn spinlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spinlab")).args(args).output().expect("spinlab runs")
}

fn rows(o: &Output) -> Vec<Value> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    doc["runs"][0]["rows"].as_array().expect("rows").clone()
}

fn assert_keys(row: &Value, keys: &[&str]) {
    for k in keys {
        assert!(row.get(k).is_some(), "row lacks `{k}`: {row}");
    }
}

/// Bad input: status 2, one line on stderr containing every needle.
fn assert_refused(args: &[&str], needles: &[&str]) {
    let o = spinlab(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: `{n}` missing from {err}");
    }
}

#[test]
fn interference_on_tiny_settings_yields_rows_with_every_key() {
    let o = spinlab(&[
        "run",
        "interference",
        "--active",
        "add,mul,branch,l1,l2,mbv-int,mbv-fp,sort,hash",
        "--waits",
        "spin,futex,spin-park,umwait",
        "--waiters",
        "1,2",
        "--placement",
        "same-cpu,core,smt,llc,node",
        "--cache-sizes",
        "2K,8K,32K",
        "--units",
        "1",
        "--max-reps",
        "2",
        "--quiet",
        "--json",
        "-",
    ]);
    let rows = rows(&o);
    let measured: Vec<&Value> = rows.iter().filter(|r| r.get("skipped").is_none()).collect();
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let placements = if cpus >= 2 { 2 } else { 1 };
    // Every `core` row says whether its two CPUs shared a physical core, from probes just
    // before and after its workload's rows there (timings: no value is asserted); no other
    // placement's row is probed.
    for row in &measured {
        let at_core = row["placement"] == "core";
        for key in ["core_busy_neighbour_before_pct", "core_busy_neighbour_after_pct"] {
            assert_eq!(row.get(key).is_some_and(|p| p.as_f64().is_some_and(f64::is_finite)), at_core, "{key}: {row}");
        }
        let said = row.get("core_shared").and_then(Value::as_str);
        assert_eq!(said.is_some_and(|s| ["yes", "no", "moved"].contains(&s)), at_core, "{row}");
    }
    assert_eq!(measured.len(), 9 * 3 * 2 * placements, "{rows:?}");
    for row in &measured {
        assert_keys(
            row,
            &[
                "active",
                "wait",
                "waiters",
                "placement",
                "slowdown_pct",
                "slowdown_ci95_pct",
                "isolated_s",
                "reps",
                "reread_ns",
                "waiter_cpu_pct",
            ],
        );
        assert!(row["isolated_s"].as_f64().unwrap() > 0.0, "{row}");
    }
    // The machine may lack SMT, several caches or nodes; those placements are skipped rows
    // naming the reason, never silently dropped.
    for p in ["smt", "llc", "node"] {
        let here = rows.iter().filter(|r| r["placement"] == p).count();
        assert!(here >= 1, "no row for {p}");
    }
    // umwait exists only with WAITPKG: either measured or a skipped row saying so.
    let umwait: Vec<&Value> = rows.iter().filter(|r| r["wait"] == "umwait").collect();
    assert!(!umwait.is_empty());
    if let Some(s) = umwait[0].get("skipped") {
        assert!(s.as_str().unwrap().contains("WAITPKG"), "{s}");
    }
    // A futex waiter sleeps, so its re-read interval is about the whole wait.
    let futex = measured.iter().find(|r| r["wait"] == "futex").unwrap();
    let spin = measured.iter().find(|r| r["wait"] == "spin" && r["placement"] == futex["placement"]).unwrap();
    assert!(futex["reread_ns"].as_f64().unwrap() > spin["reread_ns"].as_f64().unwrap(), "{futex} {spin}");
}

/// The run's params from `spinlab run interference ARGS --json -`.
fn interference_params(waits: &str) -> serde_json::Map<String, Value> {
    let args = ["run", "interference", "--active", "add", "--waits", waits, "--waiters", "1", "--placement", "core"];
    let tiny = ["--units", "1", "--max-reps", "2", "--quiet", "--json", "-"];
    let o = spinlab(&[&args[..], &tiny[..]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    doc["runs"][0]["params"].as_object().expect("params").clone()
}

#[test]
fn a_run_with_the_miss_loop_says_how_its_chase_was_sized() {
    let params = interference_params("miss,spin");
    let number = |key: &str| params.get(key).and_then(Value::as_f64).unwrap_or_else(|| panic!("{key}: {params:?}"));
    let tried: Vec<(f64, f64)> = params["miss_chase_tried_mib_ns"]
        .as_array()
        .expect("sizes tried")
        .iter()
        .map(|pair| (pair[0].as_f64().unwrap(), pair[1].as_f64().unwrap()))
        .collect();
    // The kept chase is one of the sizes tried, at its time; the longest is listed last.
    let kept_mib = number("miss_chase_bytes") / f64::from(1 << 20);
    let kept = tried.iter().find(|(mib, _)| *mib == kept_mib).unwrap_or_else(|| panic!("{params:?}"));
    assert_eq!(kept.1, number("miss_chase_step_ns"), "{params:?}");
    assert_eq!(tried.last().unwrap().1, number("miss_chase_longest_step_ns"), "{params:?}");
    assert!(tried.windows(2).all(|w| w[1].0 == 2.0 * w[0].0 || w == &tried[tried.len() - 2..]), "{tried:?}");
    assert!(number("miss_chase_times_seed_size") >= 1.0, "{params:?}");
    let settled = params["miss_chase_settled"].as_bool().expect("settled");
    assert_eq!(params.contains_key("miss_chase_warning"), !settled, "{params:?}");
    // Without the miss loop, nothing is sized and nothing is said.
    let params = interference_params("spin");
    assert!(!params.keys().any(|k| k.starts_with("miss_chase")), "{params:?}");
}

#[test]
fn handoff_on_tiny_settings_yields_rows_with_every_key() {
    let o = spinlab(&[
        "run",
        "handoff",
        "--waits",
        "spin,futex",
        "--locks",
        "std,mcs:spin-park",
        "--hold-ns",
        "0,2000",
        "--handoffs",
        "20",
        "--placement",
        "core,smt",
        "--max-reps",
        "2",
        "--quiet",
        "--json",
        "-",
    ]);
    let rows = rows(&o);
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    if cpus < 2 {
        assert!(rows.iter().any(|r| r["placement"] == "core" && r.get("skipped").is_some()));
        return;
    }
    let locks: Vec<&Value> =
        rows.iter().filter(|r| r.get("skipped").is_none() && r["lock"] != "floor: bare line").collect();
    let names: Vec<&str> = locks.iter().map(|r| r["lock"].as_str().unwrap()).collect();
    assert!(names.contains(&"ttas:spin") && names.contains(&"ttas:futex") && names.contains(&"std"));
    assert!(names.contains(&"mcs:spin-park"));
    for row in &locks {
        assert_keys(row, &["lock", "placement", "hold_ns", "handoff_ns", "ratio_to_floor", "reps"]);
        assert!(row["handoff_ns"].as_f64().unwrap() > 0.0, "{row}");
    }
    let floors = rows.iter().filter(|r| r["lock"] == "floor: bare line" && r.get("handoff_ns").is_some()).count();
    assert!(floors >= 2, "one floor per hold time, measured in the same run");
    // The automatic check: a lock row is flagged exactly when it is below its floor by more
    // than both 95% intervals.
    for row in &locks {
        let floor = rows
            .iter()
            .find(|r| {
                r["lock"] == "floor: bare line" && r["hold_ns"] == row["hold_ns"] && r["placement"] == row["placement"]
            })
            .expect("a floor per hold time and placement");
        let ci = |r: &Value| r.get("handoff_ci95_ns").and_then(Value::as_f64).unwrap_or(0.0);
        let below = row["handoff_ns"].as_f64().unwrap() + ci(row) + ci(floor) < floor["handoff_ns"].as_f64().unwrap();
        assert_eq!(row.get("below_floor").is_some(), below, "{row}");
    }
    assert!(rows.iter().any(|r| r["placement"] == "smt"), "smt is a row: measured or skipped");
}

#[test]
fn bad_input_names_what_is_valid() {
    assert_refused(&["run", "interference", "--active", "fft"], &["`fft`", "mbv-int", "hash"]);
    assert_refused(&["run", "interference", "--waits", "nap"], &["`nap`", "spin-park"]);
    assert_refused(&["run", "interference", "--waiters", "0"], &["`0`"]);
    assert_refused(&["run", "interference", "--cache-sizes", "32K,1M"], &["L1D,L2,LLC"]);
    assert_refused(&["run", "interference", "--locks", "std"], &["--locks", "--waits"]);
    assert_refused(&["run", "handoff", "--locks", "ttas:nap"], &["`ttas:nap`"]);
    assert_refused(&["run", "handoff", "--hold-ns", "soon"], &["`soon`"]);
}
