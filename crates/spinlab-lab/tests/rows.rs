//! The row types against the documents a release wrote and against docs/results.md: every
//! committed row reads back through its type and writes the same keys, in the same order,
//! with the same values; every key a type writes is documented for its experiment, and every
//! documented key is one a type writes.

use spinlab_lab::results::rows::{self, RowType};
use spinlab_lab::results::{Results, Row};
use std::path::Path;

fn document(relative: &str) -> Results {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    spinlab_lab::results::load(&path).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// Rows that do not write themselves back as they were read: `(experiment, row index, why)`.
fn round_trip_failures<R: RowType>(results: &Results, hand_made: fn(&Row) -> bool) -> Vec<(usize, String)> {
    let mut failures = Vec::new();
    for run in results.runs.iter().filter(|r| r.experiment == R::EXPERIMENT) {
        for (i, row) in run.rows.iter().enumerate().filter(|(_, r)| !hand_made(r)) {
            let again: Row = R::from_row(row).unwrap().to_row();
            // Compared as text: a map's equality ignores the order of its keys.
            if serde_json::to_string(&again).unwrap() != serde_json::to_string(row).unwrap() {
                let keys = |r: &Row| r.0.keys().cloned().collect::<Vec<_>>().join(",");
                failures.push((i, format!("read  {}\nwrote {}", keys(row), keys(&again))));
            }
        }
    }
    failures
}

fn all_round_trip(relative: &str, results: &Results, hand_made: fn(&Row) -> bool) {
    let mut failures = Vec::new();
    macro_rules! each {
        ($($t:ty),*) => {$(
            failures.extend(round_trip_failures::<$t>(results, hand_made).into_iter().map(|(i, why)| (<$t>::EXPERIMENT, i, why)));
        )*};
    }
    each!(
        rows::FloorRow,
        rows::ContentionRow,
        rows::HerdRow,
        rows::InterferenceRow,
        rows::HandoffRow,
        rows::WakeupRow,
        rows::BarrierRow,
        rows::SprRow
    );
    let shown: Vec<String> = failures.iter().take(5).map(|(e, i, why)| format!("{e} row {i}:\n{why}")).collect();
    assert!(failures.is_empty(), "{relative}: {} rows change when written back:\n{}", failures.len(), shown.join("\n"));
}

#[test]
fn a_released_document_reads_back_through_the_row_types_unchanged() {
    let path = "../../docs/machines/kvm-xeon-16/results.json";
    all_round_trip(path, &document(path), |_| false);
}

#[test]
fn the_report_fixture_reads_back_through_the_row_types_unchanged() {
    let path = "tests/fixtures/report/results.json";
    // Its spr rows without CPUs were made by hand, in an order no build wrote.
    all_round_trip(path, &document(path), |row| row.get("app").is_some() && row.get("cpus").is_none());
}

/// Keys docs/results.md documents for `experiment`: every `key` in backquotes in the first
/// column of its section's table.
fn documented(doc_md: &str, experiment: &str) -> Vec<String> {
    let section = doc_md.split(&format!("## `{experiment}`")).nth(1).unwrap_or_else(|| panic!("no `{experiment}`"));
    let section = section.split("\n## ").next().unwrap();
    let mut keys = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let first = line.split('|').nth(1).unwrap();
        // Fragments such as `_median_` stand for the summary keys, which are checked apart.
        let pieces = first.split('`').skip(1).step_by(2).filter(|k| !k.starts_with('_'));
        keys.extend(pieces.map(str::to_string));
    }
    keys
}

/// Whether `key` is a summary key (`X_median_UNIT`, …, `median_UNIT`) of a documented `X_UNIT`
/// (`UNIT`), as "(+ `X_median_UNIT`, …)" or "with the summary keys" in the table implies.
fn summary_of_documented(key: &str, documented: &[String]) -> bool {
    ["median", "sd", "ci95", "min", "max"].iter().any(|part| {
        let bare = key.strip_prefix(&format!("{part}_")).is_some_and(|unit| documented.iter().any(|k| k == unit));
        let named = key
            .split_once(&format!("_{part}_"))
            .is_some_and(|(name, unit)| documented.iter().any(|k| *k == format!("{name}_{unit}")));
        bare || named
    })
}

#[test]
fn every_key_a_row_type_writes_is_documented_and_every_documented_key_is_written() {
    let doc_md = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results.md")).unwrap();
    // Keys every experiment's rows share, documented once under "Conventions for rows".
    let common = ["skipped", "reps", "stop"];
    for (experiment, keys) in rows::ALL {
        let documented = documented(&doc_md, experiment);
        for key in *keys {
            let ok =
                common.contains(key) || documented.iter().any(|k| k == key) || summary_of_documented(key, &documented);
            assert!(
                ok,
                "{experiment}: the row type writes `{key}`, which docs/results.md's `{experiment}` table lacks"
            );
        }
        for key in &documented {
            assert!(
                keys.contains(&key.as_str()),
                "{experiment}: docs/results.md documents `{key}`, which no field writes"
            );
        }
    }
}
