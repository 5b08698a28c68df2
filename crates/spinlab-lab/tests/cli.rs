//! The `spinlab` command end to end, on tiny settings: the documents have the keys
//! docs/results.md promises, and bad input gets one clear line and a non-zero exit.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// Runs spinlab; one that runs past two minutes (input that should have been refused, such
/// as `--duration 1e9`) is killed and fails the test instead of hanging it.
fn spinlab(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_spinlab"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spinlab runs");
    let pid = child.id() as libc::pid_t;
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    match finished.recv_timeout(Duration::from_secs(120)) {
        Ok(output) => output.expect("spinlab runs"),
        Err(_) => {
            // SAFETY: kill has no memory effects; `pid` is our child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("spinlab {args:?} was still running after 120 s");
        }
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scratch file path unique to this test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spinlab-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn json_file(path: &PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("results written")).expect("valid JSON")
}

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name).join("sys").display().to_string()
}

fn assert_keys(v: &Value, keys: &[&str], what: &str) {
    for k in keys {
        assert!(v.get(k).is_some(), "{what} lacks `{k}`: {v}");
    }
}

/// Bad input: status 2, exactly one line on stderr, which contains every `needle`, nothing
/// on stdout, and no panic.
fn assert_refused(args: &[&str], needles: &[&str]) {
    let o = spinlab(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line expected, got:\n{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: `{n}` missing from: {err}");
    }
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "{err}");
    assert!(o.stdout.is_empty(), "{args:?} printed: {}", stdout(&o));
}

#[test]
fn info_json_describes_the_machine_and_what_is_absent() {
    let o = spinlab(&["info", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_keys(
        &v,
        &[
            "cpu_model",
            "logical_cpus",
            "topology",
            "wait_features",
            "umwait_control",
            "tsc",
            "perf_counters",
            "kernel",
            "cpufreq_governor",
            "absent",
        ],
        "info",
    );
    assert_keys(
        &v["topology"],
        &["smt", "cores", "numa_nodes", "llc_groups", "hybrid", "placements", "detail"],
        "topology",
    );
    assert_keys(&v["wait_features"], &["pause", "waitpkg", "monitorx", "wfe"], "wait_features");
    assert_keys(&v["tsc"], &["invariant", "frequency_hz"], "tsc");
    assert_keys(&v["perf_counters"], &["readable", "detail"], "perf_counters");
    assert!(v["logical_cpus"].as_u64().unwrap() >= 1);
    // Whatever the machine lacks is said in words.
    let absent: Vec<&str> = v["absent"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    if v["perf_counters"]["readable"] == false {
        assert!(absent.iter().any(|a| a.contains("performance counters")), "{absent:?}");
    }
    if v["wait_features"]["waitpkg"] == false {
        assert!(absent.iter().any(|a| a.contains("WAITPKG")), "{absent:?}");
    }
    if v["topology"]["smt"] == false {
        assert!(absent.iter().any(|a| a.contains("smt")), "{absent:?}");
    }
}

#[test]
fn info_reads_the_topology_of_a_canned_tree() {
    let root = fixture("two-socket-smt");
    let o = spinlab(&["info", "--json", "--sys-root", &root]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["topology"]["smt"], true);
    assert_eq!(v["topology"]["numa_nodes"], 2);
    assert_eq!(v["topology"]["packages"], 2);
    let groups: Vec<(&str, bool)> = v["lock_groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["level"].as_str().unwrap(), g["declared"].as_bool().unwrap()))
        .collect();
    assert_eq!(groups, [("core", false), ("llc", false), ("node", false)]);
    let text = stdout(&spinlab(&["info", "--sys-root", &fixture("hybrid-p-e")]));
    assert!(text.contains("performance: CPUs 0-3") && text.contains("efficiency: CPUs 4-7"), "{text}");
}

#[test]
fn info_text_says_what_is_absent() {
    let o = spinlab(&["info"]);
    assert!(o.status.success());
    let text = stdout(&o);
    for field in ["CPU", "logical CPUs", "placement core", "WAITPKG", "TSC", "perf counters", "kernel"] {
        assert!(text.contains(field), "{field} missing:\n{text}");
    }
}

#[test]
fn list_shows_every_lock_with_availability() {
    let o = spinlab(&["list", "--json"]);
    assert!(o.status.success());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let locks = v["locks"].as_array().unwrap();
    let names: Vec<&str> = locks.iter().filter_map(|l| l["lock"].as_str()).collect();
    for name in ["ttas:spin", "mcs:spin-park", "fair:futex", "std", "parking_lot", "pthread"] {
        assert!(names.contains(&name), "{name} missing");
    }
    for lock in locks {
        assert_keys(lock, &["lock", "origin", "available", "fair", "may_sleep"], "lock");
        if lock["available"] == false {
            assert!(lock["unavailable"].as_str().is_some_and(|r| r.contains("needs")), "{lock}");
        }
    }
    let default: Vec<&Value> = locks.iter().filter(|l| l["default"] == true).collect();
    assert_eq!(default.len(), 1);
    assert_eq!(default[0]["lock"], "adaptive:pause-yield-park");
    // The in-order locks over a policy whose waiters keep their CPU are listed as collapsing
    // when oversubscribed (over a policy that sleeps or yields they are gated, lock::Gated,
    // and hold up); CNA, which hands over out of order, convoys where it is not gated, and
    // HMCS, never gated, over every policy.
    let waits = v["waits"].as_array().unwrap();
    let leaving: Vec<&str> =
        waits.iter().filter(|w| w["leaves_cpu"] == true).filter_map(|w| w["wait"].as_str()).collect();
    assert!(leaving.contains(&"yield") && leaving.contains(&"futex") && !leaving.contains(&"pause"), "{leaving:?}");
    for wait in waits {
        assert!(wait["may_sleep"] == false || wait["leaves_cpu"] == true, "a sleeper leaves its CPU: {wait}");
    }
    for lock in locks {
        let collapses = lock["oversubscribed"].as_str().is_some_and(|o| o.starts_with("collapses"));
        let algorithm = lock["algorithm"].as_str().unwrap_or("");
        let gated_in_order = ["ticket", "mcs", "clh", "fair", "reciprocating", "hapax"].contains(&algorithm);
        let keeps_cpu = lock["wait"].as_str().is_some_and(|w| !leaving.contains(&w));
        assert_eq!(collapses, gated_in_order && keeps_cpu, "{lock}");
        let convoys = lock["oversubscribed"].as_str().is_some_and(|o| o.starts_with("convoys"));
        let restricts = lock["oversubscribed"].as_str().is_some_and(|o| o.starts_with("restricts"));
        // CNA and HMCS are gated as the in-order locks are.
        let chooses = ["cna", "hmcs", "malthusian"].contains(&algorithm) && keeps_cpu;
        assert_eq!(convoys, chooses, "{lock}");
        assert_eq!(restricts, algorithm == "malthusian" && !keeps_cpu, "{lock}");
    }
    assert!(waits.iter().any(|w| w["wait"] == "spin-park"));
    let text = stdout(&spinlab(&["list"]));
    assert!(text.contains("ticket:pause") && text.contains("pthread"));
}

fn list_json() -> Value {
    let o = spinlab(&["list", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("list --json prints JSON")
}

/// `(name, available)` of every row of `kind` in `spinlab list --json`, the name under `key`.
fn listed(v: &Value, kind: &str, key: &str) -> Vec<(String, bool)> {
    v[kind]
        .as_array()
        .unwrap_or_else(|| panic!("list --json has no `{kind}` array"))
        .iter()
        .map(|row| {
            let name = row[key].as_str().unwrap_or_else(|| panic!("{kind} row without `{key}`: {row}"));
            (name.to_string(), row["available"].as_bool().unwrap_or_else(|| panic!("no `available`: {row}")))
        })
        .collect()
}

#[test]
fn list_shows_barriers_events_and_rwlocks_with_availability() {
    let v = list_json();
    let kinds: [(&str, &str, &[&str]); 3] = [
        ("barriers", "barrier", &["barrier:spin", "barrier:futex", "barrier:spin-park", "std", "pthread"]),
        ("events", "event", &["event:pause", "event:futex", "event:spin-park", "std", "pthread"]),
        ("rwlocks", "rwlock", &["rw-writer:futex", "rw-phase:spin-park", "std", "parking_lot", "pthread"]),
    ];
    for (kind, key, expected) in kinds {
        let names: Vec<String> = listed(&v, kind, key).into_iter().map(|(n, _)| n).collect();
        for name in expected {
            assert!(names.iter().any(|n| n == name), "{kind}: {name} missing from {names:?}");
        }
        for row in v[kind].as_array().unwrap() {
            assert_keys(row, &[key, "origin", "may_sleep", "available"], kind);
            if row["available"] == false {
                assert!(row["unavailable"].as_str().is_some_and(|r| r.contains("needs")), "{row}");
            }
        }
    }
    let phase = v["rwlocks"].as_array().unwrap().iter().find(|r| r["rwlock"] == "rw-phase:futex").unwrap();
    assert_eq!(phase["fairness"], "phase-fair");
    // Every policy has its barrier and its event.
    for (wait, _) in listed(&v, "waits", "wait") {
        assert!(listed(&v, "barriers", "barrier").iter().any(|(n, _)| *n == format!("barrier:{wait}")), "{wait}");
        assert!(listed(&v, "events", "event").iter().any(|(n, _)| *n == format!("event:{wait}")), "{wait}");
    }
    let text = stdout(&spinlab(&["list"]));
    for needle in [
        "barriers (",
        "barrier:pause",
        "wait/notify events (",
        "event:futex",
        "reader-writer locks (",
        "rw-phase:futex",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from the table:\n{text}");
    }
}

/// One table of `spinlab list`'s text: the first line of its heading, the column headers,
/// and each row's cells.
struct ListTable {
    heading: String,
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

/// The tables of `spinlab list`'s text. A row that comfy-table wrapped over several lines
/// would read as several rows here, each but the first with an empty name.
fn list_tables(text: &str) -> Vec<ListTable> {
    let cells =
        |line: &str| -> Vec<String> { line.trim_matches('│').split('┆').map(|c| c.trim().to_string()).collect() };
    let mut tables: Vec<ListTable> = Vec::new();
    for line in text.lines() {
        if line.starts_with('│') {
            let table = tables.last_mut().expect("a table row after a heading");
            if table.headers.is_empty() {
                table.headers = cells(line);
            } else {
                table.rows.push(cells(line));
            }
        } else if line.contains(" names; taken by ") {
            tables.push(ListTable { heading: line.to_string(), headers: Vec::new(), rows: Vec::new() });
        }
    }
    tables
}

/// The registry's names of each kind, sorted, in `spinlab list`'s order of tables.
fn registry_names_by_kind() -> Vec<(&'static str, Vec<String>)> {
    use spinlab_registry as registry;
    let sorted = |names: Vec<&str>| {
        let mut names: Vec<String> = names.into_iter().map(str::to_string).collect();
        names.sort();
        names
    };
    vec![
        ("locks (", sorted(registry::LOCKS.names())),
        ("wait policies (", sorted(spinlab::wait::policies().iter().map(|p| p.name).collect())),
        ("barriers (", sorted(registry::BARRIERS.names())),
        ("wait/notify events (", sorted(registry::EVENTS.names())),
        ("reader-writer locks (", sorted(registry::RWLOCKS.names())),
    ]
}

#[test]
fn list_fits_in_100_columns_and_names_every_registered_name() {
    let o = spinlab(&["list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "{} columns:\n{line}", line.chars().count());
    }
    let tables = list_tables(&text);
    let kinds = registry_names_by_kind();
    assert_eq!(tables.len(), kinds.len(), "{text}");
    for (table, (heading, names)) in tables.iter().zip(kinds) {
        assert!(table.heading.starts_with(heading), "`{}` where `{heading}` was expected", table.heading);
        let mut listed: Vec<String> = table.rows.iter().map(|r| r[0].clone()).collect();
        listed.sort();
        assert_eq!(listed, names, "{heading}: one row per registered name, none wrapped");
    }
    // What a user picks a lock by is there; the long texts are not.
    let locks = &tables[0];
    assert_eq!(locks.headers, ["lock", "fairness", "bytes", "sleeps", "threads > CPUs", "available"]);
    let row = |name: &str| locks.rows.iter().find(|r| r[0] == name).unwrap_or_else(|| panic!("{name} missing"));
    assert_eq!(row("ticket:spin")[1], "FIFO");
    assert_eq!(row("ticket:spin")[4], "collapses");
    assert_eq!(row("ttas:pause")[1], "none");
    assert_eq!(row("ttas:pause")[4], "holds up");
    // The bytes a lock takes in place, guard included: what a pthread_mutex_t must hold.
    assert_eq!(row("mcs:spin")[2], "8");
    assert_eq!(row("mcs:futex")[2], "16", "gated: the word, and the queue's tail beside it");
    assert_eq!(row("hapax:spin")[2], "24");
    assert_eq!(row("hapax:futex")[2], "24", "gated: the word and its room before Hapax's two words");
    assert_eq!(row("reciprocating:futex")[2], "12", "gated: the word, its room and the arrivals");
    assert_eq!(row("hmcs:spin")[2], "16");
    assert_eq!(row("hmcs:futex")[2], "40", "gated: the word before HMCS's queues, and two owed wake-ups");
    for gated in ["hapax:futex", "reciprocating:yield"] {
        assert_eq!(row(gated)[1], "queue order", "{gated}");
        assert_eq!(row(gated)[4], "holds up", "{gated}");
    }
    for r in &locks.rows {
        assert!(r[5] == "yes" || r[5].starts_with("needs "), "{r:?}");
        assert!(!r[5].contains("CPUID"), "the brief reason leaves the CPUID bit to --wide: {r:?}");
    }
    assert!(text.contains("--wide"), "the default table says where the other columns are");
}

#[test]
fn list_wide_carries_every_field_of_the_json() {
    let v = list_json();
    let o = spinlab(&["list", "--wide"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let tables = list_tables(&text);
    let keys =
        [("locks", "lock"), ("waits", "wait"), ("barriers", "barrier"), ("events", "event"), ("rwlocks", "rwlock")];
    assert_eq!(tables.len(), keys.len(), "{text}");
    // Every field of the JSON, under the header the table gives it.
    let header = |key: &str| {
        match key {
            "may_sleep" => "may sleep",
            "leaves_cpu" => "leaves its CPU",
            "timed" => "timed lock",
            "oversubscribed" => "threads > CPUs",
            "per_waiter" => "per waiter",
            "unavailable" => "why not",
            other => other,
        }
        .to_string()
    };
    for (table, (kind, name_key)) in tables.iter().zip(keys) {
        let rows = v[kind].as_array().unwrap();
        assert_eq!(table.rows.len(), rows.len(), "{kind}: one line per name");
        for (cells, row) in table.rows.iter().zip(rows) {
            assert_eq!(cells[0], row[name_key].as_str().unwrap(), "{kind}: the JSON's order");
            for (key, value) in row.as_object().unwrap() {
                let column = table.headers.iter().position(|h| *h == header(key));
                let column = column.unwrap_or_else(|| panic!("{kind}: no `{}` column for `{key}`", header(key)));
                let shown = match value {
                    Value::String(s) => s.clone(),
                    Value::Null => "-".to_string(),
                    other => other.to_string(),
                };
                assert_eq!(cells[column], shown, "{kind} {}: `{key}`", cells[0]);
            }
        }
    }
    assert!(tables[0].headers.iter().any(|h| h == "bound"), "{:?}", tables[0].headers);
}

#[test]
fn list_json_keeps_every_field_and_refuses_wide() {
    let v = list_json();
    let keys = |kind: &str| -> Vec<String> {
        let mut keys: Vec<String> = v[kind].as_array().unwrap()[0].as_object().unwrap().keys().cloned().collect();
        keys.retain(|k| k != "unavailable");
        keys
    };
    let lock_keys = [
        "lock",
        "algorithm",
        "wait",
        "origin",
        "fair",
        "bound",
        "bytes",
        "uncontended",
        "per_waiter",
        "may_sleep",
        "timed",
        "default",
        "oversubscribed",
        "available",
    ];
    assert_eq!(keys("locks"), lock_keys);
    assert_eq!(keys("waits"), ["wait", "may_sleep", "leaves_cpu", "available"]);
    assert_eq!(keys("barriers"), ["barrier", "wait", "origin", "may_sleep", "available"]);
    assert_eq!(keys("events"), ["event", "wait", "origin", "may_sleep", "available"]);
    assert_eq!(keys("rwlocks"), ["rwlock", "algorithm", "wait", "origin", "fairness", "may_sleep", "available"]);
    let top: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(top, ["locks", "waits", "barriers", "events", "rwlocks", "experiments", "aliases"]);
    for lock in v["locks"].as_array().unwrap() {
        assert!(lock["bound"].as_str().is_some_and(|b| !b.is_empty()), "{lock}");
        assert!(lock["uncontended"].as_str().is_some_and(|c| !c.is_empty()), "{lock}");
        assert!(lock["per_waiter"].as_str().is_some_and(|c| !c.is_empty()), "{lock}");
        assert!(lock["bytes"].as_u64().is_some_and(|b| b > 0), "{lock}");
        assert_eq!(lock["available"] == false, lock.get("unavailable").is_some(), "{lock}");
    }
    assert_refused(&["list", "--json", "--wide"], &["--wide", "--json"]);
    assert_refused(&["list", "--narrow"], &["--narrow"]);
}

#[test]
fn every_listed_name_is_built_by_the_registry_and_every_registry_name_is_listed() {
    use spinlab_registry::{self as registry, RegistryError};
    let v = list_json();
    let two = std::num::NonZeroU32::new(2).unwrap();
    // What the registry's constructor says of a listed name must match its `available`.
    fn agrees<T>(kind: &str, name: &str, available: bool, built: Result<T, RegistryError>) {
        match built {
            Ok(_) => assert!(available, "{kind} {name}: built, but listed as unavailable"),
            Err(RegistryError::Unavailable { .. }) => assert!(!available, "{kind} {name}: listed as available"),
            Err(e) => panic!("{kind} {name} is listed, but the registry does not know it: {e}"),
        }
    }
    let (locks, barriers) = (listed(&v, "locks", "lock"), listed(&v, "barriers", "barrier"));
    let (events, rwlocks) = (listed(&v, "events", "event"), listed(&v, "rwlocks", "rwlock"));
    let waits = listed(&v, "waits", "wait");
    for (name, available) in &locks {
        agrees("lock", name, *available, registry::LOCKS.build(name, ()));
    }
    for (name, available) in &barriers {
        agrees("barrier", name, *available, registry::BARRIERS.build(name, two));
    }
    for (name, available) in &events {
        agrees("event", name, *available, registry::EVENTS.build(name, ()));
    }
    for (name, available) in &rwlocks {
        agrees("rwlock", name, *available, registry::RWLOCKS.build(name, ()));
    }
    // And nothing the registry builds is left out.
    let sorted = |rows: &[(String, bool)]| {
        let mut names: Vec<String> = rows.iter().map(|(n, _)| n.clone()).collect();
        names.sort();
        names
    };
    let registry_sorted = |names: Vec<&str>| {
        let mut names: Vec<String> = names.into_iter().map(str::to_string).collect();
        names.sort();
        names
    };
    assert_eq!(sorted(&locks), registry_sorted(registry::LOCKS.names()));
    assert_eq!(sorted(&barriers), registry_sorted(registry::BARRIERS.names()));
    assert_eq!(sorted(&events), registry_sorted(registry::EVENTS.names()));
    assert_eq!(sorted(&rwlocks), registry_sorted(registry::RWLOCKS.names()));
    let policies: Vec<&str> = spinlab::wait::policies().iter().map(|p| p.name).collect();
    assert_eq!(sorted(&waits), registry_sorted(policies));
    // The command line takes every listed name: clap parses options in order, so a refusal of
    // the bad option after the list says the list itself was accepted.
    let all = |rows: &[(String, bool)]| rows.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(",");
    assert_refused(&["run", "contention", "--locks", &all(&locks), "--duration", "0"], &["--duration"]);
    assert_refused(&["run", "contention", "--baseline", "pthread", "--duration", "0"], &["--duration"]);
    assert_refused(&["run", "floor", "--waits", &all(&waits), "--maiv", "0"], &["--maiv"]);
    assert_refused(&["run", "barrier", "--barriers", &all(&barriers), "--iterations", "0"], &["--iterations"]);
    assert_refused(&["run", "spr", "--barriers", &all(&barriers), "--tc-block", "0"], &["--tc-block"]);
}

#[test]
fn each_run_option_that_takes_names_says_where_they_come_from() {
    for (subcommand, options) in [
        ("contention", &["--locks", "--waits", "--baseline"][..]),
        ("herd", &["--locks", "--waits"][..]),
        ("barrier", &["--barriers"][..]),
        ("spr", &["--barriers"][..]),
    ] {
        let o = spinlab(&["run", subcommand, "--help"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let help = stdout(&o);
        for option in options {
            let line = help
                .lines()
                .skip_while(|l| !l.trim_start().starts_with(option))
                .take_while(|l| l.trim_start().starts_with(option) || !l.trim_start().starts_with("--"))
                .collect::<Vec<_>>()
                .join(" ");
            assert!(line.contains("spinlab list"), "{subcommand} {option}: {line}");
        }
    }
    let app = stdout(&spinlab(&["app", "--help"]));
    assert!(app.contains("spinlab list"), "{app}");
}

#[test]
fn run_floor_writes_json_and_csv() {
    let (json, csv) = (scratch("floor.json"), scratch("floor.csv"));
    let o = spinlab(&[
        "run",
        "floor",
        "--waits",
        "spin,pause,futex,umwait",
        "--placement",
        "same-cpu,core,smt,node",
        "--min-reps",
        "2",
        "--max-reps",
        "2",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("ping-pong"), "a table on stdout");
    let v = json_file(&json);
    assert_eq!(v["schema"], "spinlab.results/1");
    assert_keys(&v, &["machine", "runs", "command", "created_unix_s"], "document");
    let run = &v["runs"][0];
    assert_eq!(run["experiment"], "floor");
    let rows = run["rows"].as_array().unwrap();
    let measures: Vec<&str> = rows.iter().filter_map(|r| r["measure"].as_str()).collect();
    for m in [
        "timer",
        "cas-store",
        "cas-swap",
        "ping-pong",
        "spin-hint",
        "wait-period",
        "futex-wake-no-waiter",
        "futex-wake-to-run",
        "sched-yield",
        "yield-forfeit",
    ] {
        assert!(measures.contains(&m), "{m} missing");
    }
    // Two threads on one CPU: the yielder's share of it is a fraction, and it yielded. Where
    // the share is far from even, the cost per yield has the side it implies: a yielder that
    // got less than half was charged, one that got more was not.
    let forfeit = rows.iter().find(|r| r["measure"] == "yield-forfeit").unwrap();
    assert_eq!(forfeit["placement"], "same-cpu");
    let share = forfeit["yielder_cpu_share"].as_f64().unwrap();
    assert!(share > 0.0 && share < 1.0, "{forfeit}");
    assert!(forfeit["yields_per_rep"].as_f64().unwrap() >= 1.0, "{forfeit}");
    if (share - 0.5).abs() > 0.1 {
        assert_eq!(forfeit["ns"].as_f64().unwrap() > 0.0, share < 0.5, "{forfeit}");
    }
    for row in rows {
        assert!(row.get("skipped").is_some() || row["ns"].is_number(), "{row}");
    }
    let timer = rows.iter().find(|r| r["measure"] == "timer").unwrap();
    assert_keys(timer, &["ns", "median_ns", "sd_ns", "ci95_ns", "reps"], "timer row");
    // futex has no spin loop; the row says so instead of inventing a period.
    let futex = rows.iter().find(|r| r["wait"] == "futex").unwrap();
    assert!(futex["skipped"].as_str().unwrap().contains("sleeps at once"));
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    assert!(csv_text.starts_with("experiment,measure,"));
    assert_eq!(csv_text.lines().count(), rows.len() + 1);
}

#[test]
fn run_contention_rows_carry_every_figure() {
    let json = scratch("contention.json");
    let o = spinlab(&[
        "run",
        "contention",
        "--locks",
        "ttas:spin,default,std,ttas:umwait",
        "--threads",
        "1,2,2x",
        "--duration",
        "20ms",
        "--min-reps",
        "2",
        "--max-reps",
        "2",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json_file(&json);
    let run = &v["runs"][0];
    assert_eq!(run["experiment"], "contention");
    assert_keys(&run["params"], &["cs_ns", "ncs_ns", "duration_s", "groups_by", "locks", "threads"], "params");
    let rows = run["rows"].as_array().unwrap();
    let measured: Vec<&Value> = rows.iter().filter(|r| r.get("skipped").is_none()).collect();
    assert!(!measured.is_empty());
    for row in &measured {
        assert_keys(
            row,
            &[
                "lock",
                "threads",
                "throughput_ops_s",
                "per_thread",
                "per_group",
                "jain",
                "rsd_pct",
                "mean_wait_ns",
                "p99_wait_ns",
                "max_wait_ns",
                "max_hold_ns",
                "uncontended_ns",
                "reps",
            ],
            "contention row",
        );
        let threads = row["threads"].as_u64().unwrap() as usize;
        assert_eq!(row["per_thread"].as_array().unwrap().len(), threads);
        let per_group: u64 =
            row["per_group"].as_array().unwrap().iter().map(|g| g["acquisitions"].as_u64().unwrap()).sum();
        let per_thread: u64 = row["per_thread"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum();
        assert_eq!(per_group, per_thread, "groups partition the threads");
        assert_eq!(row["lost_updates"], 0, "mutual exclusion: {row}");
        let jain = row["jain"].as_f64().unwrap();
        assert!(jain > 0.0 && jain <= 1.0 + 1e-9);
        // CPU time cannot exceed the CPUs the threads were pinned to for as long as they ran,
        // and every thread ran.
        let busy = row["cpu_busy_pct"].as_f64().unwrap();
        assert!(busy > 0.0 && busy <= 100.0 + 1e-9, "cpu_busy_pct {busy}: {row}");
        let jain_cpu = row["jain_cpu_time"].as_f64().unwrap();
        assert!(jain_cpu > 0.0 && jain_cpu <= 1.0 + 1e-9);
        // The same threads with no lock, in the same rounds: an index, its lowest window no
        // higher than its mean, and a lone thread shares with nobody.
        let (no_lock, lowest) = (row["jain_no_lock"].as_f64().unwrap(), row["jain_no_lock_min"].as_f64().unwrap());
        assert!(lowest > 0.0 && lowest <= no_lock + 1e-9 && no_lock <= 1.0 + 1e-9, "{row}");
        if threads == 1 {
            assert_eq!(no_lock, 1.0, "{row}");
        }
        // A lone thread never takes the lock from another.
        let handovers = row["handovers_pct"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&handovers), "handovers_pct {handovers}: {row}");
        if threads == 1 {
            assert_eq!(handovers, 0.0, "{row}");
        }
        // The uncontended floor was measured in the same rounds, and the ratio is the two
        // figures' (no value is asserted: these are timings).
        let (u, floor) = (row["uncontended_ns"].as_f64().unwrap(), row["uncontended_floor_ns"].as_f64().unwrap());
        assert!(floor > 0.0, "{row}");
        assert!((row["uncontended_vs_floor"].as_f64().unwrap() - u / floor).abs() < 1e-9, "{row}");
        // A line transfer is measured exactly when the threads span two CPUs (a CPU list such
        // as "0-1" or "0,2"; "0" is one CPU).
        let spans_two = row["cpus"].as_str().unwrap().contains([',', '-']);
        assert_eq!(row.get("line_transfer_before_ns").is_some(), spans_two, "{row}");
        if spans_two {
            for key in ["line_transfer_before_ns", "line_transfer_after_ns"] {
                assert!(row[key].as_f64().unwrap() > 0.0, "{key}: {row}");
            }
        }
    }
    // The alias is resolved and recorded.
    let default = measured.iter().find(|r| r["lock"] == "adaptive:pause-yield-park").expect("default lock measured");
    assert_eq!(default["alias"], "default");
    // Thread counts 1, 2 and 2x (= 2 × CPUs) for each lock.
    let cpus = v["machine"]["logical_cpus"].as_u64().unwrap();
    let counts: Vec<u64> =
        measured.iter().filter(|r| r["lock"] == "std").map(|r| r["threads"].as_u64().unwrap()).collect();
    let mut expected = vec![1, 2, 2 * cpus];
    expected.dedup();
    assert_eq!(counts, expected);
    // A lock this CPU cannot run is a skipped row with the reason, not an error.
    let machine_has_waitpkg = v["machine"]["wait_features"]["waitpkg"] == true;
    let umwait: Vec<&Value> = rows.iter().filter(|r| r["lock"] == "ttas:umwait").collect();
    if !machine_has_waitpkg {
        assert!(umwait.iter().all(|r| r["skipped"].as_str().unwrap().contains("WAITPKG")));
    }
}

#[test]
fn run_herd_rows_have_wall_user_sys() {
    let json = scratch("herd.json");
    let o = spinlab(&[
        "run",
        "herd",
        "--locks",
        "ttas:spin,ttas:futex,std",
        "--threads",
        "2,4",
        "--rounds",
        "3",
        "--per-round",
        "2",
        "--min-reps",
        "2",
        "--max-reps",
        "2",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json_file(&json);
    let rows = v["runs"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 8, "a floor and three locks at each of two thread counts");
    for row in rows {
        assert_keys(row, &["lock", "threads", "wall_s", "user_s", "sys_s", "reps"], "herd row");
        assert!(row["wall_s"].as_f64().unwrap() > 0.0);
    }
    let (floors, locks): (Vec<&Value>, Vec<&Value>) = rows.iter().partition(|r| r["lock"] == "floor: no lock");
    assert_eq!(floors.len(), 2, "one floor per thread count: {floors:?}");
    for row in locks {
        assert_eq!(row["lost_updates"], 0);
        let floor = floors.iter().find(|f| f["threads"] == row["threads"]).unwrap();
        let over = row["wall_s"].as_f64().unwrap() / floor["wall_s"].as_f64().unwrap();
        assert!((row["wall_over_floor"].as_f64().unwrap() - over).abs() < 1e-9 * over, "{row}");
    }
}

#[test]
fn bad_input_gets_one_clear_line() {
    assert_refused(&["run", "contention", "--locks", "ttas:spin,nope"], &["`nope`", "ttas", "pthread", "default"]);
    assert_refused(&["run", "contention", "--threads", "0"], &["--threads", "at least one thread"]);
    assert_refused(&["run", "herd", "--threads", "1,,2"], &["--threads", "malformed"]);
    assert_refused(&["run", "contention", "--threads", "2,x"], &["`x`"]);
    assert_refused(&["run", "contention", "--duration", "-1"], &["--duration", "negative"]);
    assert_refused(&["run", "contention", "--duration", "-5ms"], &["negative"]);
    assert_refused(&["run", "floor", "--placement", "socket"], &["socket", "same-cpu"]);
    assert_refused(&["run", "floor", "--locks", "std"], &["does not take --locks"]);
    assert_refused(&["run", "floor", "--min-reps", "5", "--max-reps", "2"], &["--min-reps"]);
    assert_refused(&["run", "floor", "--maiv", "0"], &["--maiv"]);
    assert_refused(&["run", "nonsense"], &["nonsense"]);
}

#[test]
fn an_unwritable_output_fails_before_anything_runs() {
    let started = std::time::Instant::now();
    // Default settings would take minutes; the refusal must come first.
    assert_refused(&["run", "contention", "--json", "/nonexistent-dir/r.json"], &["--json", "/nonexistent-dir/r.json"]);
    assert_refused(&["run", "herd", "--csv", "/nonexistent-dir/r.csv"], &["--csv"]);
    assert!(started.elapsed().as_secs() < 10);
}

/// Refused, and not by a signal: the process exited with status 2 on its own.
fn assert_refused_not_crashed(args: &[&str], needles: &[&str]) {
    use std::os::unix::process::ExitStatusExt;
    let o = spinlab(args);
    assert_eq!(o.status.signal(), None, "{args:?} was killed by a signal: {}", stderr(&o));
    assert_refused(args, needles);
}

#[test]
fn contention_with_100000_threads_is_refused_instead_of_aborting() {
    // Started, that many threads fail in setting up their stack guards and the process
    // aborts (SIGABRT); the count is refused first.
    assert_refused_not_crashed(
        &["run", "contention", "--threads", "100000", "--duration", "1ms"],
        &["--threads", "`100000`", "32 per usable CPU", "never below 1024 nor above 8192"],
    );
}

#[test]
fn herd_with_a_million_threads_is_refused_instead_of_panicking() {
    // Started, they meet the OS's thread limit; the count is refused before any is spawned.
    assert_refused_not_crashed(&["run", "herd", "--threads", "1000000"], &["--threads", "`1000000`", "8192"]);
}

#[test]
fn a_duration_of_1e9_seconds_is_refused_instead_of_running_for_31_years() {
    assert_refused(&["run", "contention", "--duration", "1e9"], &["--duration", "`1e9`", "1ms to 1h"]);
    assert_refused(&["run", "contention", "--duration", "2h"], &["--duration", "1ms to 1h"]);
    assert_refused(&["run", "contention", "--duration", "500us"], &["--duration", "1ms to 1h"]);
    assert_refused(&["run", "contention", "--duration", "inf"], &["--duration", "1ms to 1h"]);
}

#[test]
fn thread_counts_past_this_machines_limit_are_refused_once_the_cpus_are_known() {
    // 1025 per CPU passes the parser (at most 8192 per CPU) and is above the limit on any
    // machine: 32 per CPU, never below 1024 nor above 8192.
    for experiment in ["contention", "herd"] {
        assert_refused_not_crashed(
            &["run", experiment, "--threads", "2,1025x", "--quiet"],
            &["--threads", "more than this machine allows", "usable CPUs", "32 per usable CPU"],
        );
    }
}

#[test]
fn cs_lines_is_parsed_as_a_count_not_as_nanoseconds() {
    for bad in ["1.5", "-1", "lots"] {
        let o = spinlab(&["run", "contention", "--cs-lines", bad]);
        let err = stderr(&o);
        assert!(!err.contains("nanoseconds"), "{err}");
        assert_refused(&["run", "contention", "--cs-lines", bad], &["--cs-lines", "whole number", "0 to 4096"]);
    }
    assert_refused(&["run", "contention", "--cs-lines", "4097"], &["--cs-lines", "above the limit", "0 to 4096"]);
}

/// Every numeric option of every subcommand: a value past its limit is refused with one line
/// naming the option and the accepted range, the range is in the option's --help, and the
/// limit itself is accepted (shown by a bad option after it being the one refused).
#[test]
fn every_numeric_option_states_and_enforces_its_limits() {
    let ok_then_bad = |command: &[&str], option: &str, at_limit: &str| {
        let mut args: Vec<&str> = command.to_vec();
        args.extend([option, at_limit, "--maiv", "0"]);
        assert_refused(&args, &["--maiv"]);
    };
    // (command, option, a value past the limit, the value at the limit, the accepted range)
    let cases: &[(&[&str], &str, &str, &str, &str)] = &[
        (&["run", "contention"], "--cs-ns", "10000001", "10000000", "0 to 10000000 ns"),
        (&["run", "contention"], "--ncs-ns", "99999999999999999999", "0", "0 to 10000000 ns"),
        (&["run", "contention"], "--cs-lines", "4097", "4096", "0 to 4096"),
        (&["run", "contention"], "--min-reps", "1001", "1000", "1 to 1000"),
        (&["run", "contention"], "--max-reps", "0", "1", "1 to 1000"),
        (&["run", "contention"], "--duration", "3601", "1h", "1ms to 1h"),
        (&["run", "herd"], "--rounds", "10001", "10000", "1 to 10000"),
        (&["run", "herd"], "--per-round", "0", "10000", "1 to 10000"),
        (&["run", "herd"], "--cs-ns", "-5", "10000000", "0 to 10000000 ns"),
        (&["run", "interference"], "--waiters", "1025", "1024", "1 to 1024"),
        (&["run", "interference"], "--active-ms", "10001", "10000", "1 to 10000 ms"),
        (&["run", "interference"], "--cache-sizes", "32K,512K,2G", "1K,1K,1G", "each from 1K to 1G"),
        (&["run", "handoff"], "--hold-ns", "1000,10000001", "0,10000000", "0 to 10000000 ns"),
        (&["run", "handoff"], "--handoffs", "1", "1000000", "2 to 1000000"),
        (&["run", "wakeup"], "--size", "2049", "2048", "1 to 2048"),
        (&["run", "wakeup"], "--work-ms", "1001", "1000", "1 to 1000 ms"),
        (&["run", "wakeup"], "--short-size", "2049", "0", "0 to 2048"),
        (&["run", "barrier"], "--iterations", "1000001", "1000000", "1 to 1000000"),
        (&["run", "barrier"], "--size", "0", "2048", "1 to 2048"),
        (&["run", "barrier"], "--work-ms", "0", "1000", "1 to 1000 ms"),
        (&["run", "barrier"], "--light-units", "0,11", "0,10", "each 0 to 10"),
        (&["run", "spr"], "--spmv-cols", "100000001", "100000000", "1 to 100000000"),
        (&["run", "spr"], "--spmv-rows", "10000001", "10000000", "1 to 10000000"),
        (&["run", "spr"], "--spmv-per-row", "65", "64", "1 to 64"),
        (&["run", "spr"], "--spmv-block-rows", "1000001", "1000000", "1 to 1000000"),
        (&["run", "spr"], "--tc-vertices", "8193", "8192", "1 to 8192"),
        (&["run", "spr"], "--tc-edges", "10000001", "10000000", "1 to 10000000"),
        (&["app"], "--reps", "1001", "1000", "1 to 1000"),
        (&["app"], "--min-reps", "0", "1000", "1 to 1000"),
        (&["app"], "--timeout", "25h", "24h", "1ms to 24h"),
        (&["app"], "--timeout", "0", "1ms", "1ms to 24h"),
    ];
    for &(command, option, past, at_limit, range) in cases {
        let mut args: Vec<&str> = command.to_vec();
        args.extend([option, past]);
        assert_refused_not_crashed(&args, &[option, range]);
        ok_then_bad(command, option, at_limit);
        let mut help_args: Vec<&str> = command.to_vec();
        help_args.push("--help");
        let help = stdout(&spinlab(&help_args));
        let line = help.lines().find(|l| l.trim_start().starts_with(option)).unwrap_or_default();
        assert!(line.contains(range), "{command:?} --help: {option} does not state `{range}`: {line}");
    }
    for command in [&["run", "floor"][..], &["app"][..]] {
        let mut args: Vec<&str> = command.to_vec();
        args.extend(["--maiv", "101"]);
        assert_refused(&args, &["--maiv", "above 0 and at most 100"]);
    }
    assert_refused(&["run", "spr", "--tc-block", "12"], &["--tc-block", "[8, 16, 32, 64]"]);
}

#[test]
fn an_spmv_matrix_past_its_nonzero_limit_is_refused_before_anything_runs() {
    let started = std::time::Instant::now();
    assert_refused(
        &["run", "spr", "--apps", "tc,spmv", "--spmv-rows", "10000000", "--spmv-per-row", "64", "--quiet"],
        &["--spmv-rows", "non-zeroes", "268435456"],
    );
    assert!(started.elapsed().as_secs() < 10, "refused only after tc ran");
}

#[test]
fn info_marks_declared_lock_groups_and_refuses_a_malformed_declaration() {
    let info = |declared: &str| {
        Command::new(env!("CARGO_BIN_EXE_spinlab"))
            .args(["info", "--sys-root", &fixture("two-socket-smt")])
            .env("SPINLAB_TOPOLOGY", declared)
            .output()
            .expect("spinlab runs")
    };
    let o = info("node:0|1");
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let node = text.lines().find(|l| l.starts_with("lock groups node")).unwrap_or_default();
    assert!(node.contains(" 0 | 1 | ") && node.ends_with("(declared by SPINLAB_TOPOLOGY)"), "{text}");
    let llc = text.lines().find(|l| l.starts_with("lock groups llc")).unwrap_or_default();
    assert!(llc.ends_with("(from sysfs)"), "{text}");
    let o = info("node:0|0");
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o).lines().collect::<Vec<_>>(),
        ["error: SPINLAB_TOPOLOGY=node:0|0 is malformed: CPU 0 is in two `node` groups; valid values: LEVEL:CPUS|CPUS|...[;LEVEL:...] with LEVEL one of core, llc, node and CPUS a CPU list such as 0-3,8"]
    );
}

#[test]
fn apps_refuses_an_unknown_program_a_lock_that_does_not_fit_and_a_bad_timeout_in_one_line() {
    assert_refused(&["apps", "--programs", "pigz,nginx"], &["`nginx` is not a program of the suite", "sysbench-mutex"]);
    assert_refused(&["apps", "--locks", "hapax:spin"], &["cannot be preloaded", "pthread_mutex_t"]);
    assert_refused(&["apps", "--timeout", "2d"], &["--timeout", "1h"]);
    assert_refused(&["apps", "--input-mb", "0"], &["--input-mb", "4096"]);
}
