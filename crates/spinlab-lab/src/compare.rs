//! `spinlab compare A.json B.json`: two results documents side by side.
//!
//! Rows are matched by experiment (the k-th run of an experiment in A with the k-th in B) and
//! by configuration: the row's naming keys (strings such as `lock`, `wait`, `placement`,
//! `measure`, and counts such as `threads`). For every figure measured over repetitions (a key
//! with a `_ci95_` sibling) the table shows A and B with their 95% intervals, B/A, and a `*`
//! where the figure [`moved`]: the difference exceeds the 95% interval of a difference of two
//! independent estimates, √(a² + b²) for half-widths a and b. That is a change the repetitions
//! do not explain, at 5% per figure: of N figures that did not change, about N/20 are marked
//! by chance, and the summary line says how many that is.
//!
//! The seeds' claims are checked against both documents, and the scorecard's figures and
//! verdicts are set side by side the same way: a `*` where a figure moved or the verdicts
//! contradict each other (an unsettled verdict contradicts none).
//!
//! Not "beyond both intervals": with equal half-widths h that rule marks a difference over h,
//! where the difference's own 95% half-width is h√2, so it marks one unchanged figure in six
//! (the test `an_unchanged_figure_is_marked_one_time_in_twenty`).
//! The repetitions of one run cannot see what changes between runs (the host's placement of a
//! virtual machine's CPUs, above all), so a real change between runs is still marked.

use crate::error::LabError;
use crate::experiments::contention::UNCONTENDED_FLOOR_NS;
use crate::reading::scorecard::{Finding, Verdict};
use crate::reading::Context;
use crate::report::recommend::recommend;
use crate::report::scorecard::findings;
use crate::report::transfer::Transfers;
use crate::results::format::number;
pub use crate::results::load;
use crate::results::{table, transfers_moved, Results, Row};
use serde_json::Value;
use std::path::Path;

/// Keys that name a row's configuration even though their values are numbers.
/// (Not `matrix_n` nor interference's `units`: a run calibrates them to its machine's speed,
/// so two runs of one command differ in them; wakeup rows are named by their `computation`.)
const NUMERIC_CONFIG: &[&str] = &["threads", "waiters", "light_units", "hold_ns"];
/// String keys that describe an outcome, not a configuration.
const NOT_CONFIG: &[&str] = &[
    "stop",
    "skipped",
    "origin",
    "alias",
    "unavailable",
    "cpus",
    "line_transfer_cpus",
    "collapsed",
    "below_floor",
    "timed_out",
    "core_shared",
    "failed",
];

/// A row's configuration: its naming keys and their values.
fn identity(row: &Row) -> Vec<(String, String)> {
    row.0
        .iter()
        .filter(|(k, v)| match v {
            Value::String(_) | Value::Bool(_) => !NOT_CONFIG.contains(&k.as_str()),
            Value::Number(_) => NUMERIC_CONFIG.contains(&k.as_str()),
            _ => false,
        })
        .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string)))
        .collect()
}

/// The figures of a row that carry an interval: `(figure key, interval key)`.
fn figures(row: &Row) -> Vec<(String, String)> {
    row.0
        .keys()
        .filter_map(|k| {
            let figure = if let Some(rest) = k.strip_prefix("ci95_") {
                rest.to_string()
            } else {
                let (name, unit) = k.split_once("_ci95_")?;
                format!("{name}_{unit}")
            };
            row.get(&figure).filter(|v| v.is_number()).map(|_| (figure, k.clone()))
        })
        .collect()
}

/// One compared figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The experiment.
    pub experiment: String,
    /// The configuration in words.
    pub config: String,
    /// The figure's key.
    pub figure: String,
    /// A's value and interval.
    pub a: f64,
    /// A's 95% half-width, where the row has one.
    pub a_ci: Option<f64>,
    /// B's value.
    pub b: f64,
    /// B's 95% half-width, where the row has one.
    pub b_ci: Option<f64>,
    /// B / A (`None` when A is 0).
    pub ratio: Option<f64>,
    /// The figure [`moved`] from A to B.
    pub marked: bool,
    /// How the machine differed under the two rows, when it did (`machine_under`).
    pub machine: Option<String>,
}

/// Everything the comparison found.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Matched figures.
    pub lines: Vec<Line>,
    /// Measured rows of A with no measured match in B, and of B with none in A.
    pub only_a: usize,
    /// See `only_a`.
    pub only_b: usize,
}

/// Whether a figure measured as `a` ± `a_ci` in one run and `b` ± `b_ci` in another moved:
/// the difference exceeds its own 95% half-width, √(a_ci² + b_ci²) for two independent
/// estimates; a figure without an interval adds nothing to it.
pub fn moved(a: f64, a_ci: Option<f64>, b: f64, b_ci: Option<f64>) -> bool {
    (b - a).abs() > a_ci.unwrap_or_default().hypot(b_ci.unwrap_or_default())
}

/// How many of `n` unchanged figures [`moved`] marks by chance, in words.
fn by_chance(n: usize) -> String {
    format!("at 5% per figure, about {:.1} of {n} unchanged figures are marked by chance", n as f64 / 20.0)
}

/// The line transfer measured just before and just after a row (contention's checks around
/// each configuration), else around its run (`spinlab report`'s checks), when known.
fn transfers(run: &crate::results::Run, row: &Row) -> Option<(f64, f64)> {
    crate::results::rows::transfers_of(&run.experiment, row).or_else(|| match run.transfers() {
        [Some(before), Some(after)] => Some((before, after)),
        _ => None,
    })
}

/// How the machine differed under two compared rows, in words: it moved a line at a
/// different cost during one of them ([`transfers_moved`]), or
/// at costs more than a quarter apart in the two documents. A figure that follows the line
/// transfer (contention throughput, hand-offs, spin wake-ups) then compares two machines.
fn machine_under(a: Option<(f64, f64)>, b: Option<(f64, f64)>) -> Option<String> {
    let span = |(x, y): (f64, f64)| (x.min(y), x.max(y));
    let moved_within = |t: Option<(f64, f64)>| t.is_some_and(|(x, y)| transfers_moved(x, y));
    if let Some(which) = moved_under(moved_within(a), moved_within(b)) {
        return Some(which.to_string());
    }
    let ((alo, ahi), (blo, bhi)) = (span(a?), span(b?));
    let range = |lo, hi| Transfers { lo, hi }.range();
    apart((alo, ahi), (blo, bhi), TRANSFERS_APART)
        .then(|| format!("line {} in A, {} in B", range(alo, ahi), range(blo, bhi)))
}

/// Line transfers whose ranges lie further apart than this factor come from two placements
/// of the CPUs, not from one placement's noise.
const TRANSFERS_APART: f64 = 1.25;

/// Whether the ranges `a` and `b` (lowest, highest) lie more than `factor` apart.
fn apart(a: (f64, f64), b: (f64, f64), factor: f64) -> bool {
    b.0 > factor * a.1 || a.0 > factor * b.1
}

/// "machine moved under A", "… B" or "… A and B", from whether each document saw it move.
fn moved_under(a: bool, b: bool) -> Option<&'static str> {
    match (a, b) {
        (true, true) => Some("machine moved under A and B"),
        (true, false) => Some("machine moved under A"),
        (false, true) => Some("machine moved under B"),
        (false, false) => None,
    }
}

/// Matches the rows of `a` and `b`.
pub fn compare(a: &Results, b: &Results) -> Comparison {
    let mut out = Comparison::default();
    let mut seen: Vec<(&str, usize)> = Vec::new();
    let mut matched_b: Vec<(usize, usize)> = Vec::new();
    for run_a in &a.runs {
        let k = seen.iter().filter(|(e, _)| *e == run_a.experiment).count();
        seen.push((&run_a.experiment, k));
        let run_b = b.runs.iter().filter(|r| r.experiment == run_a.experiment).nth(k);
        for row_a in run_a.rows.iter().filter(|r| !r.is_skipped()) {
            let id = identity(row_a);
            let found =
                run_b.and_then(|rb| rb.rows.iter().enumerate().find(|(_, r)| !r.is_skipped() && identity(r) == id));
            let Some((j, row_b)) = found else {
                out.only_a += 1;
                continue;
            };
            let run_b_index = b.runs.iter().position(|r| std::ptr::eq(r, run_b.expect("found in it"))).unwrap_or(0);
            matched_b.push((run_b_index, j));
            let machine = machine_under(transfers(run_a, row_a), transfers(run_b.expect("found in it"), row_b));
            let config = id
                .iter()
                .map(|(k, v)| if NUMERIC_CONFIG.contains(&k.as_str()) { format!("{k} {v}") } else { v.clone() })
                .collect::<Vec<_>>()
                .join(", ");
            for (figure, ci_key) in figures(row_a) {
                let (Some(va), Some(vb)) = (row_a.number(&figure), row_b.number(&figure)) else { continue };
                let (a_ci, b_ci) = (row_a.number(&ci_key), row_b.number(&ci_key));
                out.lines.push(Line {
                    experiment: run_a.experiment.clone(),
                    config: config.clone(),
                    figure,
                    a: va,
                    a_ci,
                    b: vb,
                    b_ci,
                    ratio: (va != 0.0).then(|| vb / va),
                    marked: moved(va, a_ci, vb, b_ci),
                    machine: machine.clone(),
                });
            }
        }
    }
    out.only_b = b
        .runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.rows.iter().enumerate().map(move |(j, row)| (i, j, row)))
        .filter(|(i, j, row)| !row.is_skipped() && !matched_b.contains(&(*i, *j)))
        .count();
    out
}

/// The comparison as text: a table per experiment.
pub fn render(a_name: &str, b_name: &str, a: &Results, b: &Results, c: &Comparison) -> String {
    let cpu = |r: &Results| r.cpu_model();
    let mut out = format!("A: {a_name} ({})\nB: {b_name} ({})\n", cpu(a), cpu(b));
    out.push_str(&line_transfers(a, b));
    out.push_str(&uncontended_floors(a, b));
    let mut experiments: Vec<&str> = Vec::new();
    for line in &c.lines {
        if !experiments.contains(&line.experiment.as_str()) {
            experiments.push(&line.experiment);
        }
    }
    for experiment in experiments {
        let rows: Vec<Row> = c
            .lines
            .iter()
            .filter(|l| l.experiment == experiment)
            .map(|l| {
                Row::new()
                    .with("config", &l.config)
                    .with("figure", &l.figure)
                    .with("a", number(l.a))
                    .with("a_ci", l.a_ci.filter(|c| *c > 0.0).map_or(String::new(), number))
                    .with("b", number(l.b))
                    .with("b_ci", l.b_ci.filter(|c| *c > 0.0).map_or(String::new(), number))
                    .with("ratio", l.ratio.map_or("-".to_string(), |r| format!("{r:.3}")))
                    .with("mark", mark_words(l.marked, l.machine.as_deref()))
            })
            .collect();
        out.push_str(&format!("\n{experiment}\n"));
        out.push_str(&table::render(
            &rows,
            &[
                table::col("config", "configuration"),
                table::col("figure", "figure"),
                table::col("a", "A"),
                table::col("a_ci", "±95%"),
                table::col("b", "B"),
                table::col("b_ci", "±95%"),
                table::col("ratio", "B/A"),
                table::col("mark", ""),
            ],
        ));
        out.push('\n');
    }
    out.push_str(&recommendations(a, b));
    out.push_str(&scorecard(a, b));
    let marked = c.lines.iter().filter(|l| l.marked).count();
    let under_machine = c.lines.iter().filter(|l| l.marked && l.machine.is_some()).count();
    out.push_str(&format!(
        "\n{} figures compared; {marked} marked * (the difference exceeds its 95% interval, √(A's² + B's²); {}), {under_machine} of them where the machine moved a line at another cost under one of the two rows or between them (named beside the mark). Rows only in A: {}; only in B: {}.\n",
        c.lines.len(),
        by_chance(c.lines.len()),
        c.only_a,
        c.only_b
    ));
    out
}

/// A line on the machine under the two documents: the cache-line transfer each measured, a
/// note for a document whose machine changed under it, and a warning when the two ranges lie
/// apart by more than a quarter. On a virtual machine the host can place the virtual CPUs
/// closer or further apart from one day to the next, and which lock is fastest moves with the
/// cost of moving its line.
fn line_transfers(a: &Results, b: &Results) -> String {
    let (Some(ta), Some(tb)) = (Transfers::of(a), Transfers::of(b)) else {
        return String::new();
    };
    let mut out = format!("one-way cache-line transfer: A {}, B {}\n", ta.range(), tb.range());
    for (name, t) in [("A", &ta), ("B", &tb)] {
        if let Some(note) = t.moved() {
            out.push_str(&format!("note: within {name} itself {note}\n"));
        }
    }
    if apart((ta.lo, ta.hi), (tb.lo, tb.hi), TRANSFERS_APART) {
        out.push_str(
            "note: the machine moved a cache line at a different cost in the two runs (a virtual machine whose \
             host placed its CPUs differently?): figures that depend on it, contention throughput above all, \
             compare two machines, not two runs of one\n",
        );
    }
    out
}

/// The smallest and largest uncontended floor (the cheapest read-modify-write and a store,
/// `uncontended_floor_ns`) that a document's contention runs measured, in nanoseconds.
fn floor_range(results: &Results) -> Option<(f64, f64)> {
    let ns: Vec<f64> = results
        .runs
        .iter()
        .filter(|run| run.experiment == "contention")
        .flat_map(|run| run.rows.iter().filter_map(|row| row.number(UNCONTENDED_FLOOR_NS)))
        .filter(|ns| ns.is_finite() && *ns > 0.0)
        .collect();
    Some((ns.iter().copied().reduce(f64::min)?, ns.iter().copied().reduce(f64::max)?))
}

/// A line on the speed the two documents ran the same instructions at: the uncontended floor
/// each measured, and a note when the two ranges lie more than 2% apart. Each run times the
/// floor to within 1% while the host holds still, so ranges further apart are a host that ran
/// the CPUs at another speed, and a ratio to the floor, such as seed 003's cost of the fair
/// lock over the spinlock, moves with that speed (docs/report.md, `spinlab compare`).
fn uncontended_floors(a: &Results, b: &Results) -> String {
    let (Some(fa), Some(fb)) = (floor_range(a), floor_range(b)) else {
        return String::new();
    };
    let range = |(lo, hi): (f64, f64)| {
        if hi - lo < 0.005 {
            format!("{lo:.2} ns")
        } else {
            format!("{lo:.2}-{hi:.2} ns")
        }
    };
    let mut out = format!("uncontended floor (a read-modify-write and a store): A {}, B {}\n", range(fa), range(fb));
    if apart(fa, fb, 1.02) {
        out.push_str(
            "note: the same instructions took different times in the two runs (a host that ran the CPUs at \
             another speed?): figures in nanoseconds, and ratios between unlike instructions such as seed 003's \
             uncontended fairlock-over-spinlock cost, follow it\n",
        );
    }
    out
}

/// The recommendations of `a` and `b` side by side, situation by situation, with a `*` where
/// they name different choices, and how the machine differed under the rows the two lines
/// were chosen from, where they say ([`Advice::transfers`](crate::reading::advice::Advice)).
fn recommendations(a: &Results, b: &Results) -> String {
    let lines_b = recommend(&Context::new(b));
    let (mut marked, mut under_machine) = (0, 0);
    let rows: Vec<Row> = recommend(&Context::new(a))
        .iter()
        .filter_map(|la| Some((la, lines_b.iter().find(|lb| lb.situation == la.situation)?)))
        .map(|(la, lb)| {
            let differ = la.choice != lb.choice;
            let machine = machine_under(la.transfers, lb.transfers);
            marked += usize::from(differ);
            under_machine += usize::from(differ && machine.is_some());
            Row::new()
                .with("situation", &la.situation)
                .with("a", &la.choice)
                .with("b", &lb.choice)
                .with("mark", mark_words(differ, machine.as_deref()))
        })
        .collect();
    let summary = format!(
        "{} situations compared; {marked} marked * (the two name different choices), {under_machine} of them where \
         the machine moved a line at another cost under the rows of one line or between the two (named beside the mark).",
        rows.len()
    );
    section(
        "recommendation (docs/report.md)",
        &rows,
        &[table::col("situation", "if"), table::col("a", "A uses"), table::col("b", "B uses"), table::col("mark", "")],
        &summary,
    )
}

/// The scorecards of `a` and `b` side by side.
fn scorecard(a: &Results, b: &Results) -> String {
    let card_a = findings(&Context::new(a));
    let card_b = findings(&Context::new(b));
    let (mut marked, mut under_a_move, mut with_figures) = (0, 0, 0);
    let rows: Vec<Row> = card_a
        .iter()
        .filter_map(|fa| Some((fa, card_b.iter().find(|fb| fb.claim.id == fa.claim.id)?)))
        .map(|(fa, fb)| {
            let figure_moved = match (fa.here, fb.here) {
                (Some(ea), Some(eb)) => {
                    with_figures += 1;
                    moved(ea.value, ea.ci95(), eb.value, eb.ci95())
                }
                (None, None) => false,
                _ => true,
            };
            let mark = figure_moved || contradict(&fa.verdict, &fb.verdict);
            marked += usize::from(mark);
            let machine = machine_moved_under(fa, fb).map(str::to_string).or_else(|| machine_state_apart(fa, fb));
            under_a_move += usize::from(mark && machine.is_some());
            let mark_text = mark_words(mark, machine.as_deref());
            Row::new()
                .with("claim", fa.claim.id)
                .with("a", fa.value_text())
                .with("a_verdict", fa.verdict.name())
                .with("b", fb.value_text())
                .with("b_verdict", fb.verdict.name())
                .with("mark", mark_text)
        })
        .collect();
    let summary = format!(
        "{} claims compared, {with_figures} with a figure in both; {marked} marked * (a figure moved beyond its 95% interval, or the verdicts contradict each other; {}), {under_a_move} of them with the machine changing under a run behind the figure (its line transfer moved: the report's caveat) or differing between the two (a figure of the machine measured beside the claim's moved, named beside the mark).",
        rows.len(),
        by_chance(with_figures)
    );
    section(
        "scorecard (the seeds' claims, docs/scorecard.md)",
        &rows,
        &[
            table::col("claim", "claim"),
            table::col("a", "A"),
            table::col("a_verdict", "A verdict"),
            table::col("b", "B"),
            table::col("b_verdict", "B verdict"),
            table::col("mark", ""),
        ],
        &summary,
    )
}

/// A titled table with its summary line, or nothing when there are no rows.
fn section(title: &str, rows: &[Row], columns: &[table::Column], summary: &str) -> String {
    if rows.is_empty() {
        return String::new();
    }
    format!("\n{title}\n{}\n{summary}\n", table::render(rows, columns))
}

/// `*`, with how the machine differed beside it when it did; nothing for an unmarked figure.
fn mark_words(marked: bool, machine: Option<&str>) -> String {
    match (marked, machine) {
        (false, _) => String::new(),
        (true, None) => "*".to_string(),
        (true, Some(how)) => format!("* ({how})"),
    }
}

/// Which of the two documents saw the machine change under a run behind the claim's figure
/// (`Finding::machine_moved`: the run's line transfer before and after it differed), in
/// words: such a figure mixes two machines, and a move between A and B is expected of it.
fn machine_moved_under(fa: &Finding, fb: &Finding) -> Option<&'static str> {
    moved_under(fa.machine_moved.is_some(), fb.machine_moved.is_some())
}

/// The machine's figure measured beside the claim's in each document ([`Finding::machine_state`]),
/// in words, where the two moved ([`moved`]): the claim's figures then come from two states of
/// the machine (a higher uncontended floor in one run than in the other is a host that ran
/// atomics slower, and the fairlock's cost over the spinlock's moves with it).
fn machine_state_apart(fa: &Finding, fb: &Finding) -> Option<String> {
    let (a, b) = (fa.machine_state?, fb.machine_state?);
    moved(a.estimate.value, a.estimate.ci95(), b.estimate.value, b.estimate.ci95())
        .then(|| format!("{} in A, {} in B", a.text(), b.figure()))
}

/// Whether two verdicts on one claim cannot both be right: reproduced against differs, differs
/// on opposite sides of the range, or one document could test the claim and the other could
/// not. An unsettled verdict (its interval straddles an end of the range) contradicts no
/// verdict its interval allows; whether the figures themselves moved is checked apart.
fn contradict(a: &Verdict, b: &Verdict) -> bool {
    match (a, b) {
        (Verdict::Unsettled(_), Verdict::Reproduced | Verdict::Differs(..) | Verdict::Unsettled(_))
        | (Verdict::Reproduced | Verdict::Differs(..), Verdict::Unsettled(_)) => false,
        (Verdict::Differs(side_a, _), Verdict::Differs(side_b, _)) => side_a != side_b,
        _ => a.name() != b.name(),
    }
}

/// `spinlab compare`: prints the comparison.
pub fn run(a_path: &Path, b_path: &Path) -> Result<String, LabError> {
    let a = load(a_path)?;
    let b = load(b_path)?;
    let c = compare(&a, &b);
    Ok(render(&a_path.display().to_string(), &b_path.display().to_string(), &a, &b, &c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::scorecard::Side;
    use crate::results::{TRANSFER_AFTER_NS, TRANSFER_BEFORE_NS};

    #[test]
    fn rows_that_differ_only_in_what_the_core_probe_found_still_match() {
        let doc = |shared: &str| {
            let mut run = crate::results::Run::new("interference");
            run.rows = vec![Row::new()
                .with("active", "add")
                .with("wait", "spin")
                .with("placement", "core")
                .with("waiters", 1)
                .with("cpu_slowdown_pct", 1.0)
                .with("cpu_slowdown_ci95_pct", 0.5)
                .with("core_shared", shared)];
            let mut results = Results::new(&serde_json::json!({"cpu_model": "test CPU"}));
            results.runs = vec![run];
            results
        };
        let c = compare(&doc("no"), &doc("yes"));
        assert_eq!((c.lines.len(), c.only_a, c.only_b), (1, 0, 0));
    }

    /// Normal deviates from a fixed seed (splitmix64, then Box-Muller), so the tests below
    /// see the same draws every run.
    struct Normal(u64);

    impl Normal {
        fn uniform(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }

        fn next(&mut self) -> f64 {
            let (u, v) = (1.0 - self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }
    }

    /// The share of `trials` pairs of estimates that `moved` marks: A's true value is 0, B's is
    /// `shift`; each estimate is off by a normal error of its standard error and reports the
    /// exact 95% half-width, 1.96 standard errors.
    fn marked_share(se_a: f64, se_b: f64, shift: f64, trials: usize) -> f64 {
        let mut normal = Normal(7);
        let marked = (0..trials)
            .filter(|_| {
                let a = se_a * normal.next();
                let b = shift + se_b * normal.next();
                moved(a, Some(1.96 * se_a), b, Some(1.96 * se_b))
            })
            .count();
        marked as f64 / trials as f64
    }

    #[test]
    fn apps_rows_match_by_program_and_lock_whatever_failed_says() {
        use crate::results::rows::{AppsRow, Nullable, RowType};
        let doc = |ratio: f64, failed: Option<&str>| {
            let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
            let mut run = crate::results::Run::new(AppsRow::EXPERIMENT);
            for (program, lock) in [("pigz", "glibc"), ("pigz", "default"), ("memcached", "default")] {
                let row = AppsRow {
                    program: Some(program.into()),
                    lock: Some(lock.into()),
                    metric: Some("wall_s".into()),
                    metric_value: Some(2.0),
                    metric_ci95_value: Nullable::Value(0.1),
                    ratio_to_glibc: Nullable::Value(ratio),
                    ratio_ci95_to_glibc: Nullable::Value(0.01),
                    failed: failed.filter(|_| program == "memcached").map(str::to_string),
                    ..AppsRow::default()
                };
                run.rows.push(row.to_row());
            }
            results.runs.push(run);
            results
        };
        let c = compare(&doc(1.0, None), &doc(1.5, Some("run 1: killed by signal 11")));
        assert_eq!((c.only_a, c.only_b), (0, 0), "{:?}", c.lines);
        let ratios: Vec<&Line> = c.lines.iter().filter(|l| l.figure == "ratio_to_glibc").collect();
        assert_eq!(ratios.len(), 3);
        assert!(ratios.iter().all(|l| l.marked && l.config.contains("default") || l.config.contains("glibc")));
        assert!(
            c.lines.iter().any(|l| l.figure == "metric_value" && l.config.starts_with("pigz, glibc")),
            "{:?}",
            c.lines
        );
    }

    #[test]
    fn an_unchanged_figure_is_marked_one_time_in_twenty() {
        // "Beyond both intervals" marked 17% of these with equal intervals, and 6% with one
        // interval three times the other.
        for (se_a, se_b) in [(1.0, 1.0), (1.0, 3.0), (2.5, 0.4)] {
            let share = marked_share(se_a, se_b, 0.0, 40_000);
            assert!((0.04..0.06).contains(&share), "standard errors {se_a} and {se_b}: {share} marked, not 5%");
        }
    }

    #[test]
    fn a_change_of_three_standard_errors_is_marked_most_times() {
        // A shift of three standard errors of the difference is marked with probability
        // P(|Z + 3| > 1.96), 0.85.
        let share = marked_share(1.0, 1.0, 3.0 * 2f64.sqrt(), 40_000);
        assert!((0.82..0.88).contains(&share), "{share} marked, not 85%");
    }

    #[test]
    fn without_intervals_any_difference_moves_and_none_is_no_move() {
        assert!(moved(1.0, None, 1.000_001, None));
        assert!(!moved(5.0, None, 5.0, Some(0.0)));
        assert!(!moved(5.0, Some(0.3), 5.4, Some(0.4)), "0.4 is within √(0.3² + 0.4²) = 0.5");
        assert!(moved(5.0, Some(0.3), 5.6, Some(0.4)), "0.6 is beyond 0.5");
        assert!(moved(5.6, Some(0.4), 5.0, Some(0.3)), "either direction");
        assert!(moved(5.0, None, 5.4, Some(0.3)), "a figure without an interval adds none");
    }

    fn with_floors(floors: &[f64]) -> Results {
        let mut run = crate::results::Run::new("contention");
        run.rows = floors.iter().map(|&f| Row::new().with("lock", "ttas:spin").with(UNCONTENDED_FLOOR_NS, f)).collect();
        let mut results = Results::new(&serde_json::json!({"cpu_model": "test CPU"}));
        results.runs = vec![run];
        results
    }

    #[test]
    fn floors_apart_get_a_note_and_overlapping_ones_none() {
        let apart = uncontended_floors(&with_floors(&[2.395, 2.396]), &with_floors(&[2.451, 2.602]));
        assert!(apart.starts_with("uncontended floor (a read-modify-write and a store): A 2.40 ns, B 2.45-2.60 ns"));
        assert!(apart.contains("note: the same instructions took different times"), "{apart}");
        let overlapping = uncontended_floors(&with_floors(&[2.40, 2.82]), &with_floors(&[2.45, 2.60]));
        assert!(!overlapping.contains("note"), "{overlapping}");
        let within_two_percent = uncontended_floors(&with_floors(&[2.395, 2.396]), &with_floors(&[2.397, 2.817]));
        assert!(!within_two_percent.contains("note"), "{within_two_percent}");
        assert_eq!(uncontended_floors(&with_floors(&[]), &with_floors(&[2.4])), "");
    }

    #[test]
    fn a_claim_whose_run_saw_the_machine_move_says_under_which_document() {
        let claim = crate::reading::scorecard::Claim {
            id: "000-test",
            seed: "000",
            source: "Table 1",
            claim: "a claim",
            paper: "a figure",
            needs: &[],
            remeasure: None,
        };
        let still = Finding::without(&claim, "rows", Verdict::Reproduced);
        let mut moved_under = still.clone();
        moved_under.machine_moved = Some("a cache line took 51 ns before this run and 224 ns after it".into());
        assert_eq!(machine_moved_under(&still, &still), None);
        assert_eq!(machine_moved_under(&moved_under, &still), Some("machine moved under A"));
        assert_eq!(machine_moved_under(&still, &moved_under), Some("machine moved under B"));
        assert_eq!(machine_moved_under(&moved_under, &moved_under), Some("machine moved under A and B"));
    }

    #[test]
    fn a_claim_whose_machine_figure_moved_between_the_documents_names_it() {
        use crate::reading::scorecard::{Estimate, MachineState};
        let claim = crate::reading::scorecard::Claim {
            id: "003-test",
            seed: "003",
            source: "Table 3",
            claim: "a claim",
            paper: "a figure",
            needs: &[],
            remeasure: None,
        };
        let floor = |value, ci95| MachineState {
            name: "uncontended floor",
            unit: "ns",
            estimate: Estimate::within(value, ci95),
        };
        let with = |state| Finding::without(&claim, "rows", Verdict::Reproduced).beside(state);
        let (fast, slow) = (with(Some(floor(2.788, 0.01))), with(Some(floor(3.207, 0.012))));
        assert_eq!(
            machine_state_apart(&fast, &slow).as_deref(),
            Some("uncontended floor 2.79 ± 0.01 ns in A, 3.21 ± 0.012 ns in B")
        );
        assert_eq!(machine_state_apart(&fast, &with(Some(floor(2.795, 0.01)))), None, "within the intervals");
        assert_eq!(machine_state_apart(&fast, &with(None)), None, "one document without the figure");
    }

    #[test]
    fn recommendations_that_name_different_choices_are_marked() {
        let doc = |ttas: f64, std: f64| {
            let mut run = crate::results::Run::new("contention");
            run.param("cs_ns", 100);
            for (lock, origin, t) in [("ttas:spin", "spinlab", ttas), ("std", "reference", std)] {
                run.rows.push(
                    Row::new()
                        .with("lock", lock)
                        .with("origin", origin)
                        .with("threads", 2)
                        .with("throughput_ops_s", t)
                        .with("throughput_ci95_ops_s", t * 0.01),
                );
            }
            let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1", "cpu_model": "test CPU"}));
            results.runs = vec![run];
            results
        };
        let differ = recommendations(&doc(9e6, 6e6), &doc(6e6, 9e6));
        assert!(differ.contains("1 marked *"), "{differ}");
        let same = recommendations(&doc(9e6, 6e6), &doc(9.1e6, 6e6));
        assert!(same.contains("0 marked *"), "{same}");
        // Chosen from rows measured on a machine that differed: said beside the mark.
        let at = |ttas: f64, std: f64, transfer: f64| {
            let mut doc = doc(ttas, std);
            for row in &mut doc.runs[0].rows {
                row.set("line_transfer_before_ns", transfer);
                row.set("line_transfer_after_ns", transfer + 5.0);
            }
            doc
        };
        let apart = recommendations(&at(9e6, 6e6, 45.0), &at(6e6, 9e6, 230.0));
        assert!(apart.contains("* (line 45-50 ns in A, 230-235 ns in B)"), "{apart}");
        assert!(apart.contains("1 marked *") && apart.contains("1 of them where the machine moved"), "{apart}");
        let near = recommendations(&at(9e6, 6e6, 45.0), &at(6e6, 9e6, 48.0));
        assert!(near.contains("0 of them where the machine moved"), "{near}");
    }

    #[test]
    fn rows_under_a_machine_that_moved_or_differed_say_so() {
        assert_eq!(machine_under(Some((45.0, 50.0)), Some((48.0, 52.0))), None);
        assert_eq!(machine_under(Some((51.0, 224.0)), Some((48.0, 52.0))).as_deref(), Some("machine moved under A"));
        assert_eq!(machine_under(Some((45.0, 50.0)), Some((224.0, 51.0))).as_deref(), Some("machine moved under B"));
        assert_eq!(
            machine_under(Some((45.0, 50.0)), Some((218.0, 230.0))).as_deref(),
            Some("line 45-50 ns in A, 218-230 ns in B")
        );
        assert_eq!(
            machine_under(Some((31.0, 31.2)), Some((45.0, 48.0))).as_deref(),
            Some("line 31 ns in A, 45-48 ns in B"),
            "one transfer: one figure, not a range"
        );
        assert_eq!(machine_under(None, Some((218.0, 230.0))), None, "unknown on one side: nothing to say");
        let mut run = crate::results::Run::new("wakeup");
        run.param(TRANSFER_BEFORE_NS, 40.0).param(TRANSFER_AFTER_NS, 51.0);
        assert_eq!(transfers(&run, &Row::new()), Some((40.0, 51.0)), "the run's, for a row without its own");
        let row = Row::new().with(TRANSFER_BEFORE_NS, 31.0).with(TRANSFER_AFTER_NS, 218.0);
        assert_eq!(transfers(&run, &row), Some((31.0, 218.0)), "the row's own first");
        assert_eq!(mark_words(true, Some("machine moved under A")), "* (machine moved under A)");
        assert_eq!(mark_words(false, Some("machine moved under A")), "");
    }

    #[test]
    fn only_verdicts_that_cannot_both_hold_contradict() {
        let below = Verdict::Differs(Side::Below, "below: the claim's range is 1 to 2; why".into());
        let above = Verdict::Differs(Side::Above, "above: the claim's range is 1 to 2; why".into());
        let unsettled = Verdict::Unsettled("the 95% interval overlaps an end of the range".into());
        let cannot = Verdict::CannotTest("no SMT".into());
        assert!(contradict(&Verdict::Reproduced, &below));
        assert!(contradict(&above, &Verdict::Reproduced));
        assert!(contradict(&below, &above));
        assert!(contradict(&cannot, &Verdict::Reproduced));
        assert!(contradict(&unsettled, &cannot));
        assert!(!contradict(&below, &below.clone()));
        assert!(!contradict(&Verdict::Reproduced, &Verdict::Reproduced));
        for settled in [&Verdict::Reproduced, &below, &above, &unsettled] {
            assert!(!contradict(&unsettled, settled) && !contradict(settled, &unsettled));
        }
    }
}
