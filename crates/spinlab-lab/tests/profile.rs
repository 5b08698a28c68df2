//! `spinlab profile`: the page, the pprof file and the table, drawn from a kept profile file
//! (`--from`), and bad input. Runs of a program under the preload library are in
//! tests/profile_run.rs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SPINLAB: &str = env!("CARGO_BIN_EXE_spinlab");

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile/profile.1234.json")
}

fn spinlab(args: &[&str]) -> Output {
    Command::new(SPINLAB).args(args).output().expect("spinlab runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spinlab-profile-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `go tool pprof` with `args`: Go's own reader of the format. scripts/test installs Go where
/// it is missing.
fn pprof(args: &[&str]) -> String {
    let output = Command::new("go")
        .arg("tool")
        .arg("pprof")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("go could not be run ({e}): install Go (scripts/test does)"));
    assert!(output.status.success(), "go tool pprof {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_kept_profile_gives_the_page_the_table_and_a_pprof_file_that_go_reads() {
    let out = scratch("from");
    let output = spinlab(&["profile", "--from", fixture().to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let table = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = table.lines().collect();
    let rows = lines.iter().filter(|l| l.starts_with("  "));
    assert!(rows.clone().all(|l| l.chars().count() <= 100), "within 100 columns:\n{table}");
    assert!(rows.clone().any(|l| l.contains("mutex (static, never contended)")), "{table}");
    // Most wait first: the condition variable, then the hot mutex, then the array of 1000.
    let order: Vec<usize> =
        ["cond make_queue (pool.c:33)", "mutex make_queue (pool.c:31)", "mutex make_buckets (pool.c:52)"]
            .iter()
            .map(|site| lines.iter().position(|l| l.contains(site)).unwrap_or_else(|| panic!("{site} in\n{table}")))
            .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{table}");
    let buckets = lines.iter().find(|l| l.contains("make_buckets")).unwrap();
    assert!(buckets.contains(" 1000 ") && buckets.contains("20000") && buckets.contains("1.5%"), "{buckets}");

    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    for text in
        ["make_queue (pool.c:31)", "make_buckets (pool.c:52)", "where the program waits", "100 timed, 20 timed out"]
    {
        assert!(page.contains(text), "{text} in the page");
    }
    assert_eq!(page.matches("<svg").count(), 1 + 4, "the bars, then a histogram for each of 4 sites");

    // Go's reader: three contended sites, each with its stack, innermost first, and values.
    let raw = pprof(&["-raw", out.join("profile.pb.gz").to_str().unwrap()]);
    assert!(raw.contains("contentions/count[dflt] delay/nanoseconds"), "{raw}");
    for sample in ["480  300000000", "9000   45000000", "300     600000"] {
        assert!(raw.contains(sample), "{sample} in\n{raw}");
    }
    assert!(raw.contains("make_buckets /src/pool.c:52") && raw.contains("main /src/pool.c:88"), "{raw}");
    let top = pprof(&["-top", "-sample_index=delay", out.join("profile.pb.gz").to_str().unwrap()]);
    // make_queue made the cond (300 ms) and the hot mutex (45 ms): one function, 345 ms.
    let first = top.lines().find(|l| l.ends_with(" make_queue")).unwrap_or_default();
    assert!(first.trim_start().starts_with("345ms"), "{top}");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn bad_input_gets_one_line_and_status_2() {
    let out = scratch("bad");
    let not_json = std::env::temp_dir().join(format!("spinlab-profile-test-{}.json", std::process::id()));
    std::fs::write(&not_json, "{\"format\": \"spinlab.profile/1\"}").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["profile", "--top", "0", "--", "true"], "accepted: 1 to 1000"),
        (vec!["profile", "--lock", "mcs:spin,tas:spin", "--", "true"], "more than one lock"),
        (vec!["profile", "--lock", "hapax:spin", "--", "true"], "cannot be preloaded"),
        (vec!["profile", "--out", out.to_str().unwrap()], "no command to profile"),
        (vec!["profile", "--from", "/nonexistent/p.1.json"], "reading /nonexistent/p.1.json"),
        (vec!["profile", "--from", not_json.to_str().unwrap()], "is not a spinlab.profile/1 file"),
    ];
    for (args, says) in cases {
        let output = spinlab(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?} says {says}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let _ = std::fs::remove_file(&not_json);
}
