//! docs/c.md tells a C programmer which lock names collapse when threads outnumber CPUs. Its
//! table is checked here against the registry, so that a lock or policy added later cannot
//! land in the wrong row, or in none.

use std::collections::BTreeSet;
use std::path::Path;

fn guide() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/c.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The words between backticks in `text`.
fn quoted(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The lock names a cell of the table stands for: groups separated by `;`, each either
/// "`a`, `b` over `p`, `q`" (every algorithm over every policy; "any policy" is all of them)
/// or plain names.
fn names_in(cell: &str) -> BTreeSet<String> {
    let every_policy: Vec<String> = spinlab::wait::policies().iter().map(|p| p.name.to_string()).collect();
    let mut names = BTreeSet::new();
    for group in cell.split(';') {
        match group.split_once(" over ") {
            Some((algorithms, policies)) => {
                let policies: Vec<String> = if policies.contains("any policy") {
                    every_policy.clone()
                } else {
                    quoted(policies).iter().map(|p| p.to_string()).collect()
                };
                for algorithm in quoted(algorithms) {
                    names.extend(policies.iter().map(|policy| format!("{algorithm}:{policy}")));
                }
            }
            None => names.extend(quoted(group).iter().map(|name| name.to_string())),
        }
    }
    names
}

/// The first cells of the rows of the table under "## When threads outnumber CPUs".
fn rows() -> Vec<(String, String)> {
    let guide = guide();
    let section = guide.split("## When threads outnumber CPUs").nth(1).expect("docs/c.md has the section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|line| line.starts_with("| `"))
        .map(|line| {
            let mut cells = line.trim_matches('|').split(" | ");
            (cells.next().unwrap().to_string(), cells.next().unwrap_or_default().to_string())
        })
        .collect()
}

#[test]
fn the_c_guide_names_exactly_the_locks_that_collapse_and_every_lock_once() {
    let rows = rows();
    assert_eq!(rows.len(), 5, "{rows:?}");
    let locks = spinlab_registry::LOCKS.entries();
    let collapsing: BTreeSet<String> = locks.iter().filter(|e| e.facts.fair).map(|e| e.name.clone()).collect();
    assert!(!collapsing.is_empty());

    let (first, behaviour) = &rows[0];
    assert!(behaviour.contains("**collapse**"), "{behaviour}");
    assert_eq!(names_in(first), collapsing, "the collapse row of docs/c.md and the registry's in-order spinning locks");

    let mut seen = BTreeSet::new();
    for (cell, behaviour) in &rows {
        for name in names_in(cell) {
            let entry = spinlab_registry::LOCKS.info(&name).unwrap_or_else(|e| panic!("docs/c.md names {name}: {e}"));
            assert_eq!(entry.facts.fair, behaviour.contains("**collapse**"), "{name} is in the wrong row");
            assert!(seen.insert(name.clone()), "{name} is in two rows");
        }
    }
    let all: BTreeSet<String> = locks.iter().map(|e| e.name.clone()).collect();
    let missing: Vec<_> = all.difference(&seen).collect();
    assert!(missing.is_empty(), "docs/c.md's table leaves out {missing:?}");
}

#[test]
fn the_gated_row_holds_the_in_order_locks_over_policies_that_leave_the_cpu() {
    let rows = rows();
    for name in names_in(&rows[1].0) {
        let entry = spinlab_registry::LOCKS.info(&name).unwrap();
        assert!(["ticket", "mcs", "clh", "fair", "reciprocating", "hapax"].contains(&entry.facts.algorithm), "{name}");
        // An in-order algorithm that does not hand over in order is the registry's gated lock,
        // whose guarantee names the queue's head at the word.
        assert!(!entry.facts.fair && entry.facts.bound.contains("the head passed over"), "{name} is not a gated lock");
    }
    assert!(names_in(&rows[1].0).contains("mcs:pause-yield-park"), "every sleeping policy is in the row");
    assert!(names_in(&rows[1].0).contains("fair:yield"), "yield's waiters offer their CPU: gated too");
    assert!(names_in(&rows[1].0).contains("hapax:futex") && names_in(&rows[1].0).contains("reciprocating:spin-park"));
    assert!(names_in(&rows[2].0).contains("cna:spin") && names_in(&rows[2].0).contains("hmcs:pause"), "convoys");
    assert!(names_in(&rows[3].0).contains("cna:futex"), "cna over a sleeping policy is the CNA-gated word");
    assert!(names_in(&rows[3].0).contains("hmcs:futex"), "hmcs over a sleeping policy is the HMCS-gated word");
    // The convoy row hands over to chosen waiters; the barging row frees the word.
    for name in names_in(&rows[2].0) {
        let facts = &spinlab_registry::LOCKS.info(&name).unwrap().facts;
        assert!(facts.hands_over && !facts.fair, "{name} does not convoy");
    }
    for name in names_in(&rows[3].0) {
        assert!(!spinlab_registry::LOCKS.info(&name).unwrap().facts.hands_over, "{name} does not barge");
    }
    assert!(names_in(&rows[3].0).contains("adaptive:pause-yield-park"), "the default barges");
    assert!(names_in(&rows[4].0).contains("malthusian:futex"), "malthusian restricts, ungated");
}

/// The header's word on `spinlab_mutex_t` names the same locks as the guide's collapse row,
/// checked against the registry as that row is.
#[test]
fn the_header_warns_of_exactly_the_locks_that_collapse() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include/spinlab.h");
    let header = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let text: String =
        header.lines().map(|l| l.trim_start().trim_start_matches('*').trim()).collect::<Vec<_>>().join(" ");
    let warning = text.split("When threads outnumber CPUs: ").nth(1).expect("the header warns of collapse");
    let (cell, _) = warning.split_once(" hand the lock over in order").expect("the warning says what they do");
    let collapsing: BTreeSet<String> =
        spinlab_registry::LOCKS.entries().iter().filter(|e| e.facts.fair).map(|e| e.name.clone()).collect();
    assert_eq!(names_in(cell), collapsing, "include/spinlab.h's warning and the registry's in-order spinning locks");
}
