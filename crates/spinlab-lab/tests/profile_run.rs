//! `spinlab profile` and `spinlab app --profile` on a real C program (tests/c/waits.c) under
//! the preload library: the sites are named by function and line, and counted exactly.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const SPINLAB: &str = env!("CARGO_BIN_EXE_spinlab");

/// The program, compiled once for both tests: compiling it again while the other test runs it
/// replaces the file under the running process, whose frames the profile then cannot name.
fn waits() -> PathBuf {
    static WAITS: OnceLock<PathBuf> = OnceLock::new();
    WAITS
        .get_or_init(|| {
            spinlab_c_tests::libraries();
            let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/waits.c");
            spinlab_c_tests::compile("waits", &[source], &[])
        })
        .clone()
}

/// The line of waits.c that carries `marker`.
fn line_of(marker: &str) -> usize {
    let source = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/waits.c")).unwrap();
    source.lines().position(|l| l.contains(marker)).expect("the marker is in waits.c") + 1
}

fn spinlab(args: &[&str]) -> Output {
    Command::new(SPINLAB).args(args).output().expect("spinlab runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spinlab-profile-run-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn the_profile_names_each_site_and_counts_its_acquisitions() {
    let program = waits();
    for lock in ["mcs:spin-park", "pthread"] {
        let out = scratch(lock);
        let output =
            spinlab(&["profile", "--lock", lock, "--out", out.to_str().unwrap(), "--", program.to_str().unwrap()]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{lock}: {}\n{stdout}", String::from_utf8_lossy(&output.stderr));
        assert!(stdout.contains("hot 80000 cold 80"), "the program's own output: {stdout}");
        let hot = format!("make_hot (waits.c:{})", line_of("site: make_hot"));
        let cold = format!("make_cold (waits.c:{})", line_of("site: make_cold"));
        let row = stdout.lines().find(|l| l.contains(&hot)).unwrap_or_else(|| panic!("{lock}: {hot} in\n{stdout}"));
        assert!(row.contains(" 80000 "), "{lock}: every acquisition of the hot mutex: {row}");
        assert!(stdout.lines().any(|l| l.contains(&cold) && l.contains(" 80 ")), "{lock}: {cold}\n{stdout}");

        let files = std::fs::read_dir(out.join("raw")).unwrap().count();
        assert_eq!(files, 1, "one process, one file");
        let page = std::fs::read_to_string(out.join("index.html")).unwrap();
        assert!(page.contains(&hot) && page.contains(&cold), "{lock}: the page names both sites");
        let gz = std::fs::metadata(out.join("profile.pb.gz")).unwrap();
        assert!(gz.len() > 20, "a pprof file");
        std::fs::remove_dir_all(&out).unwrap();
    }
}

#[test]
fn app_profile_gives_each_lock_its_waits_by_site() {
    let program = waits();
    let json = scratch("app").with_extension("json");
    let output = spinlab(&[
        "app",
        "--locks",
        "mcs:futex,pthread",
        "--reps",
        "1",
        "--quiet",
        "--profile",
        "--json",
        json.to_str().unwrap(),
        "--",
        program.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    let table = stdout.split("wait per lock site").nth(1).unwrap_or_else(|| panic!("the waits table in\n{stdout}"));
    let header = table.lines().nth(1).unwrap();
    assert!(header.contains("mcs:futex") && header.contains("pthread"), "{header}");
    assert!(table.contains("mutex make_hot (waits.c:"), "{table}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = doc["runs"][0]["rows"].as_array().unwrap();
    assert!(rows[0].get("profile_sites").is_none(), "the baseline runs without the library");
    for row in &rows[1..] {
        let sites = row["profile_sites"].as_array().unwrap();
        assert!(sites.iter().any(|s| s["site"].as_str().unwrap().contains("make_hot")), "{row}");
        // waits.c has two sites, both in `profile_sites`: the total is theirs.
        let sum: f64 = sites.iter().map(|s| s["wait_s"].as_f64().unwrap()).sum();
        let total = row["profile_wait_s"].as_f64().unwrap();
        assert_eq!(sites.len(), 2, "{row}");
        assert!((total - sum).abs() <= 1e-9 * total.max(1.0), "{total} is the sites' {sum}: {row}");
    }
    let _ = std::fs::remove_file(&json);
}
