//! `spinlab compare A.json B.json` on canned documents (tests/fixtures/compare/).

use spinlab_lab::compare::{compare, load};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compare").join(name)
}

fn spinlab_compare(a: &Path, b: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_spinlab")).arg("compare").arg(a).arg(b).output().unwrap()
}

#[test]
fn matching_rows_get_ratios_and_a_mark_only_beyond_the_differences_interval() {
    let a = load(&fixture("compare_a.json")).unwrap();
    let b = load(&fixture("compare_b.json")).unwrap();
    let c = compare(&a, &b);
    let line = |config: &str, figure: &str| {
        c.lines
            .iter()
            .find(|l| l.config == config && l.figure == figure)
            .unwrap_or_else(|| panic!("{config} {figure}: {c:?}"))
    };
    // 2e6 / 1e6, intervals of 1e4: far beyond √(1e4² + 1e4²).
    let spin = line("ttas:spin, threads 2, spread", "throughput_ops_s");
    assert_eq!(spin.ratio, Some(2.0));
    assert!(spin.marked);
    // 5.5e5 / 5e5: a difference of 5e4 inside √(1e5² + 1e5²).
    let std = line("std, threads 2, spread", "throughput_ops_s");
    assert!((std.ratio.unwrap() - 1.1).abs() < 1e-12);
    assert!(!std.marked);
    // The floor's timer: 10.05 / 10, inside 0.1.
    let timer = line("timer", "ns");
    assert!((timer.ratio.unwrap() - 1.005).abs() < 1e-12 && !timer.marked);
    assert_eq!(c.lines.len(), 3);
    // ttas:spin at 4 threads is only in A; the skipped ping-pong row is not counted.
    assert_eq!((c.only_a, c.only_b), (1, 0));
}

#[test]
fn the_command_prints_both_sides_and_exits_zero() {
    let out = spinlab_compare(&fixture("compare_a.json"), &fixture("compare_b.json"));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("A: ") && text.contains("(CPU A)") && text.contains("(CPU B)"), "{text}");
    assert!(text.contains("2.000") && text.contains("1.100") && text.contains("1.005"), "{text}");
    assert!(text.contains("3 figures compared; 1 marked *"), "{text}");
}

#[test]
fn bad_files_fail_with_one_line_naming_the_file_and_the_problem() {
    let good = fixture("compare_a.json");
    for (file, expected) in [
        ("not_json.txt", "not a spinlab results document: not JSON"),
        ("not_results.json", "not a spinlab results document (no \"schema\": \"spinlab.results/1\")"),
        ("schema_v2.json", "schema version `spinlab.results/2`; this spinlab reads `spinlab.results/1` only"),
        ("missing.json", "cannot be read"),
    ] {
        let bad = fixture(file);
        for (a, b) in [(&bad, &good), (&good, &bad)] {
            let out = spinlab_compare(a, b);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{file}: {err}");
            assert_eq!(err.lines().count(), 1, "{file}: one line: {err}");
            assert!(err.contains(file) && err.contains(expected), "{file}: {err}");
        }
    }
}

#[test]
fn a_report_compared_with_itself_matches_every_row_and_every_claim() {
    // The report fixture holds hand-off rows of one lock at two hold times: they are two
    // configurations, not one matched twice.
    let report = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/results.json");
    let mut doc = load(&report).unwrap();
    let handoff = doc.runs.iter_mut().find(|r| r.experiment == "handoff").unwrap();
    let shorter: Vec<_> = handoff
        .rows
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.set("hold_ns", 0);
            r.set("handoff_ns", 2.0 * r.number("handoff_ns").unwrap());
            r
        })
        .collect();
    handoff.rows.extend(shorter);
    let c = compare(&doc, &doc);
    assert_eq!((c.only_a, c.only_b), (0, 0));
    assert!(c.lines.iter().all(|l| !l.marked && l.ratio.is_none_or(|r| r == 1.0)), "{c:?}");
    assert!(c.lines.iter().any(|l| l.config.contains("hold_ns 0")), "{c:?}");
    let out = spinlab_compare(&report, &report);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("scorecard (the seeds' claims"), "{text}");
    assert!(text.contains("002-linux-loop-smt") && text.contains("with a figure in both; 0 marked *"), "{text}");
}

#[test]
fn a_machine_that_moved_its_lines_at_another_cost_is_named_before_the_figures() {
    let with_transfers = |name: &str, before: f64, after: f64| {
        let mut doc = load(&fixture(name)).unwrap();
        let contention = doc.runs.iter_mut().find(|r| r.experiment == "contention").unwrap();
        for row in &mut contention.rows {
            row.set("line_transfer_cpus", "0,1");
            row.set("line_transfer_before_ns", before);
            row.set("line_transfer_after_ns", after);
        }
        doc
    };
    let render = |a: &spinlab_lab::results::Results, b: &spinlab_lab::results::Results| {
        spinlab_lab::compare::render("a.json", "b.json", a, b, &compare(a, b))
    };
    // The same guest with its CPUs placed near each other by the host, then apart.
    let near = with_transfers("compare_a.json", 39.0, 71.0);
    let far = with_transfers("compare_b.json", 207.0, 220.0);
    let text = render(&near, &far);
    assert!(text.contains("one-way cache-line transfer: A 39-71 ns, B 207-220 ns"), "{text}");
    assert!(text.contains("note: the machine moved a cache line at a different cost"), "{text}");
    // The CPU pair is not a configuration: the rows still match.
    assert_eq!(compare(&near, &far).lines.len(), 3);
    // Within a quarter of each other: the figures are stated, with no warning.
    let close = with_transfers("compare_b.json", 75.0, 80.0);
    let text = render(&near, &close);
    assert!(text.contains("A 39-71 ns, B 75-80 ns") && !text.contains("note: the machine"), "{text}");
    // Documents that measured no transfer say nothing about it.
    let plain = load(&fixture("compare_a.json")).unwrap();
    assert!(!render(&plain, &plain).contains("cache-line transfer"));
}
