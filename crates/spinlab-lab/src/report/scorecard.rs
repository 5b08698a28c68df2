//! The scorecard: the seeds' headline claims against this run, and against other machines'
//! committed results (`--beside`), as a terminal table, a section near the top of the page
//! and `scorecard[]` in results.json. Every experiment checks its own claims
//! ([`Experiment::scorecard`](crate::experiments::Experiment::scorecard)); this module only
//! collects and lays them out. docs/scorecard.md explains each line.
//!
//! A claim this machine cannot test says what hardware would ([`Claim::needs`]) and which
//! other documents tested it: the `--beside` ones, or without them the machines committed
//! under [`MACHINES`] when the report runs from the repository's root. Those documents are
//! read from the tree, never built into the binary.

use super::escape::escape;
use super::lines::{columns, cut, wrap};
use super::verdict;
use crate::error::LabError;
use crate::experiments;
use crate::reading::caveat::{self, Caveat};
use crate::reading::scorecard::{Claim, Finding, Verdict};
use crate::reading::Context;
use crate::results::{Remeasured, Results, ScorecardLine, TestedIn};
use std::path::{Path, PathBuf};

/// Every claim checked against the document behind `ctx`, seed by seed (within a seed, in the
/// order of the experiments that check them).
///
/// A claim the document re-measured (`remeasured[]`) is judged on a copy of the document whose
/// runs of its experiment are the re-measurement's; every other claim, figure and line of the
/// report reads the runs as they are.
pub fn findings(ctx: &Context<'_>) -> Vec<Finding> {
    let mut all: Vec<Finding> = experiments::all().iter().flat_map(|e| e.scorecard(ctx)).collect();
    for f in all.iter_mut() {
        f.repetitions = f.claim.remeasure.and_then(|r| most_repetitions(ctx.results, r.experiment));
    }
    for again in &ctx.results.remeasured {
        let Some(at) = all.iter().position(|f| f.claim.id == again.claim) else { continue };
        if let Some(f) = remeasured_finding(ctx.results, &all[at].claim, again) {
            all[at] = f;
        }
    }
    all.sort_by(|a, b| a.claim.seed.cmp(b.claim.seed));
    all
}

/// The most repetitions a run of `experiment` allowed (its `max_reps`).
fn most_repetitions(results: &Results, experiment: &str) -> Option<usize> {
    results
        .runs
        .iter()
        .filter(|r| r.experiment == experiment)
        .filter_map(|r| r.params.get("max_reps").and_then(serde_json::Value::as_u64))
        .max()
        .map(|n| n as usize)
}

/// `claim` judged on `results` with its experiment's runs replaced by `again`'s.
fn remeasured_finding(results: &Results, claim: &Claim, again: &Remeasured) -> Option<Finding> {
    let experiment = claim.remeasure?.experiment;
    let mut doc = results.clone();
    doc.remeasured.clear();
    doc.runs.retain(|r| r.experiment != experiment);
    doc.runs.extend(again.runs.iter().cloned());
    let ctx = Context::new(&doc);
    let owner = experiments::all().into_iter().find(|e| e.name() == experiment)?;
    let mut f = owner.scorecard(&ctx).into_iter().find(|f| f.claim.id == claim.id)?;
    f.rows.push_str(&format!(" (re-measured with {} repetitions, docs/scorecard.md)", again.repetitions));
    f.repetitions = Some(again.repetitions);
    Some(f)
}

/// The findings of this run and of the `--beside` documents.
pub struct Scorecard {
    /// This run's.
    pub findings: Vec<Finding>,
    /// Other machines', one column each.
    pub beside: Vec<Beside>,
    /// Every caveat of a whole pass of this run ([`caveat::pass_caveats`]): a claim read from
    /// such a pass carries its number.
    pub all_caveats: Vec<Caveat>,
    /// The machines committed under [`MACHINES`], read where no `--beside` was given: what a
    /// claim that cannot be tested here says about them.
    pub committed: Vec<Beside>,
    /// What settling did in this run ([`super::settle`]): empty when the report measured
    /// nothing or settled nothing.
    pub attempts: Vec<super::settle::Attempt>,
}

impl Scorecard {
    /// The claims checked against `ctx`, beside `beside`.
    pub fn new(ctx: &Context<'_>, beside: Vec<Beside>) -> Scorecard {
        Scorecard {
            findings: findings(ctx),
            beside,
            all_caveats: caveat::pass_caveats(ctx.results),
            committed: Vec::new(),
            attempts: Vec::new(),
        }
    }

    /// The committed machines' documents, which the lines of claims that cannot be tested
    /// here name.
    pub fn with_committed(mut self, committed: Vec<Beside>) -> Scorecard {
        self.committed = committed;
        self
    }

    /// The lines for results.json.
    pub fn lines(&self) -> Vec<ScorecardLine> {
        self.findings
            .iter()
            .map(|f| {
                let mut line = f.entry();
                if matches!(f.verdict, Verdict::CannotTest(_)) {
                    line.tested_in = self
                        .tested_elsewhere(f)
                        .iter()
                        .map(|(b, o)| TestedIn { document: b.path.clone(), verdict: o.verdict.name().to_string() })
                        .collect();
                }
                line
            })
            .collect()
    }

    /// The other documents this report reads a claim in: the `--beside` ones, or the
    /// committed machines where none was given.
    fn others(&self) -> &[Beside] {
        if self.beside.is_empty() {
            &self.committed
        } else {
            &self.beside
        }
    }

    /// The other documents that judged `f`'s claim (reproduced, differs or unsettled), with
    /// their findings.
    pub fn tested_elsewhere(&self, f: &Finding) -> Vec<(&Beside, &Finding)> {
        self.others().iter().filter_map(|b| other(b, f).filter(|o| judged(o)).map(|o| (b, o))).collect()
    }

    /// What a claim this machine cannot test needs, and where it was tested: `needs two SMT
    /// siblings of one core; docs/machines/big/results.json: reproduced (--beside it shows the
    /// figure)`. `None` for a claim judged here, or one with no need a machine can lack.
    pub fn cannot_test_words(&self, f: &Finding) -> Option<String> {
        if !matches!(f.verdict, Verdict::CannotTest(_)) {
            return None;
        }
        let needs = f.claim.needs_words()?;
        Some(format!("needs {needs}; {}", self.where_tested(&[f.claim])))
    }

    /// Where the other documents tested `claims`, in words.
    fn where_tested(&self, claims: &[Claim]) -> String {
        let others = self.others();
        if others.is_empty() {
            return format!(
                "no other machine's document was read (run from the repository's root to read {MACHINES}, or give \
                 --beside)"
            );
        }
        let mut tested = Vec::new();
        for b in others {
            let judged: Vec<&Finding> = claims
                .iter()
                .filter_map(|c| b.findings.iter().find(|o| o.claim.id == c.id))
                .filter(|o| judged(o))
                .collect();
            if judged.is_empty() {
                continue;
            }
            let shown = if self.beside.is_empty() { " (--beside shows it)" } else { "" };
            let how = if claims.len() == 1 {
                format!("tested in {}: {}", b.path, judged[0].verdict.name())
            } else {
                format!("{} judged {} of them ({})", b.path, judged.len(), counts(judged.into_iter()))
            };
            tested.push(format!("{how}{shown}"));
        }
        if tested.is_empty() {
            let whose = if self.beside.is_empty() {
                format!("committed under {MACHINES}")
            } else {
                "given --beside".to_string()
            };
            let them = if claims.len() == 1 { "it" } else { "them" };
            format!("none of the {} document(s) {whose} tests {them} either", others.len())
        } else {
            tested.join("; ")
        }
    }
}

/// Where the committed machines' documents lie in the repository: one folder per machine,
/// each with its `results.json`.
pub const MACHINES: &str = "docs/machines";

/// The committed machines' documents under `root`'s [`MACHINES`], in the order of their
/// folders' names: none where the folder is missing (a report run outside the repository).
/// A document that does not load is left out, and said in one line on stderr: it stands for
/// another machine and is no reason to fail this one's report.
pub fn committed(root: &Path) -> Vec<Beside> {
    let Ok(entries) = std::fs::read_dir(root.join(MACHINES)) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> =
        entries.filter_map(|e| e.ok()).map(|e| e.path().join("results.json")).filter(|p| p.is_file()).collect();
    paths.sort();
    paths
        .iter()
        .filter_map(|path| match read_beside(path) {
            Ok(mut b) => {
                // Named as from the repository's root, whatever `root` is.
                b.path = path.strip_prefix(root).unwrap_or(path).display().to_string();
                Some(b)
            }
            Err(e) => {
                eprintln!("warning: {}: not read as a committed machine: {e}", path.display());
                None
            }
        })
        .collect()
}

/// Another machine's results, shown as a column beside this run's.
pub struct Beside {
    /// The document's path, as given or as from the repository's root.
    pub path: String,
    /// The column's heading: the folder the document lies in (`docs/machines/NAME/results.json`
    /// gives `NAME`), with its CPU.
    pub label: String,
    /// Its findings, by claim.
    pub findings: Vec<Finding>,
}

/// The most `--beside` documents a report shows.
pub const MAX_BESIDE: usize = 4;

/// Reads each `--beside` document and checks the claims against it.
pub fn beside(paths: &[PathBuf]) -> Result<Vec<Beside>, LabError> {
    if paths.len() > MAX_BESIDE {
        return Err(LabError::usage(format!(
            "--beside was given {} times; accepted: at most {MAX_BESIDE} other machines' results.json",
            paths.len()
        )));
    }
    paths.iter().map(|path| read_beside(path)).collect()
}

fn read_beside(path: &Path) -> Result<Beside, LabError> {
    let results = crate::results::load(path)?;
    let ctx = Context::new(&results);
    Ok(Beside { path: path.display().to_string(), label: label(path, &results), findings: findings(&ctx) })
}

fn label(path: &Path, results: &Results) -> String {
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| path.display().to_string());
    match results.machine_card().cpu_model {
        Some(cpu) => format!("{folder} ({cpu})"),
        None => folder,
    }
}

/// A finding's verdict with its reason, its caveats' marks (`[1]`: a caveat of a whole pass,
/// said under the verdict) and, in full, any caveat of its own rows.
fn verdict_html(card: &Scorecard, f: &Finding) -> String {
    let all = &card.all_caveats;
    let why = f.verdict.why();
    let mut text = escape(f.verdict.name());
    if !why.is_empty() {
        text.push_str(&format!(": {}", escape(why)));
    }
    if let Some(words) = card.cannot_test_words(f) {
        text.push_str(&format!("; {}", escape(&words)));
    }
    if let (Some(n), Some(more)) = (f.repetitions, f.more_repetitions()) {
        text.push_str(&format!("; {n} repetitions, about {more} more would settle it"));
    }
    let (numbers, _) = verdict::marks(all, &f.caveats);
    text.push_str(&verdict::html_marks(&numbers));
    for c in f.caveats.iter().filter(|c| c.pass.is_none()) {
        text.push_str(&format!(" [{}]", escape(&c.text())));
    }
    text
}

/// Another machine's verdict: its reason, and what doubts its figure in a word or two (its
/// caveats are that document's to say).
fn beside_text(f: &Finding) -> String {
    let why = f.verdict.why();
    let mut text = if why.is_empty() { f.verdict.name().to_string() } else { format!("{}: {why}", f.verdict.name()) };
    let mut briefs: Vec<&str> = f.caveats.iter().map(|c| c.brief()).collect();
    briefs.dedup();
    if !briefs.is_empty() {
        text.push_str(&format!(" ({})", briefs.join(", ")));
    }
    text
}

/// Whether a verdict judged the claim, for or against.
fn judged(f: &Finding) -> bool {
    matches!(f.verdict, Verdict::Reproduced | Verdict::Differs(..) | Verdict::Unsettled(_))
}

/// The terminal's scorecard in at most `room` lines: the tally, the `--beside` machines, and
/// one line per claim judged here or beside, as many as fit; the rest are counted.
pub fn terminal(card: &Scorecard, room: usize) -> Vec<String> {
    let (findings, beside) = (&card.findings, &card.beside);
    let mut out = vec![cut(&format!("scorecard: {}", tally(findings)))];
    for (b, letter) in beside.iter().zip(BESIDE_COLUMNS) {
        out.push(cut(&format!("machine {letter}: {}", b.label)));
    }
    out.extend(cannot_test_lines(card));
    out.extend(unsettled_lines(card));
    let shown: Vec<&Finding> =
        findings.iter().filter(|f| judged(f) || beside.iter().any(|b| other(b, f).is_some_and(judged))).collect();
    // The header and the closing line take two.
    let fits = room.saturating_sub(out.len() + 2).min(shown.len());
    if fits == 0 || out.len() >= room {
        out.truncate(room.max(1));
        return out;
    }
    let mut rows = vec![vec!["claim".to_string(), "this run".to_string(), "verdict".to_string()]];
    rows[0].extend(BESIDE_COLUMNS.iter().take(beside.len()).map(|l| l.to_string()));
    for f in &shown[..fits] {
        let (numbers, own) = verdict::marks(&card.all_caveats, &f.caveats);
        let mut verdict = f.verdict.name().to_string();
        for n in numbers {
            verdict.push_str(&format!(" [{n}]"));
        }
        if own {
            verdict.push_str(" *");
        }
        let mut row = vec![f.claim.id.to_string(), f.value_text(), verdict];
        row.extend(beside.iter().map(|b| other(b, f).map_or("-".to_string(), |o| o.verdict.name().to_string())));
        rows.push(row);
    }
    out.extend(columns(&rows));
    let left = findings.len() - fits;
    let more = if fits < shown.len() { " and more judged ones" } else { "" };
    out.push(cut(&format!(
        "  ({left} more claims{more}; every claim's figure, reason and rows: index.html, docs/scorecard.md)"
    )));
    out
}

/// One line per need of the claims this machine cannot test: what would test them, and where
/// they were tested (`cannot test 6 claims here, for want of two SMT siblings of one core:
/// none of the 1 document(s) committed under docs/machines tests them either`).
fn cannot_test_lines(card: &Scorecard) -> Vec<String> {
    let mut groups: Vec<(String, Vec<Claim>)> = Vec::new();
    for f in card.findings.iter().filter(|f| matches!(f.verdict, Verdict::CannotTest(_))) {
        let Some(needs) = f.claim.needs_words() else { continue };
        match groups.iter_mut().find(|(n, _)| *n == needs) {
            Some((_, claims)) => claims.push(f.claim),
            None => groups.push((needs, vec![f.claim])),
        }
    }
    groups
        .iter()
        .flat_map(|(needs, claims)| {
            let which = if claims.len() == 1 { claims[0].id.to_string() } else { format!("{} claims", claims.len()) };
            wrap(&format!("cannot test {which} here, for want of {needs}: {}", card.where_tested(claims)), "", "  ")
        })
        .collect()
}

/// What settling did, and the claims still unsettled with about how many more repetitions
/// each would need: `still unsettled: 004-backoff-gain (32 repetitions, about 44 more)`.
fn unsettled_lines(card: &Scorecard) -> Vec<String> {
    let mut text = String::new();
    if !card.attempts.is_empty() {
        let spent: f64 = card.attempts.iter().map(|a| a.spent_s).sum();
        let settled = card.attempts.iter().filter(|a| a.verdict != "unsettled").count();
        text = format!(
            "settling re-measured {} unsettled claim(s) in {spent:.0} s: {settled} settled.",
            card.attempts.len()
        );
    }
    let still: Vec<String> = card
        .findings
        .iter()
        .filter(|f| matches!(f.verdict, Verdict::Unsettled(_)))
        .map(|f| match (f.repetitions, f.more_repetitions()) {
            (Some(n), Some(more)) => format!("{} ({n} repetitions, about {more} more)", f.claim.id),
            _ => f.claim.id.to_string(),
        })
        .collect();
    if !still.is_empty() {
        text.push_str(&format!("{}still unsettled: {}", if text.is_empty() { "" } else { " " }, still.join(", ")));
    }
    if text.is_empty() {
        return Vec::new();
    }
    wrap(&text, "", "  ")
}

/// The terminal's columns for `--beside` documents (named in a legend above the table).
const BESIDE_COLUMNS: [&str; MAX_BESIDE] = ["B", "C", "D", "E"];

/// `4 reproduced, 2 differ, …`.
pub fn tally(findings: &[Finding]) -> String {
    format!("{} claims: {}", findings.len(), counts(findings.iter()))
}

/// `4 reproduced, 2 differs`: the findings' verdicts, counted in first-seen order.
fn counts<'a>(findings: impl Iterator<Item = &'a Finding>) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for f in findings {
        match counts.iter_mut().find(|(n, _)| *n == f.verdict.name()) {
            Some((_, c)) => *c += 1,
            None => counts.push((f.verdict.name(), 1)),
        }
    }
    counts.iter().map(|(n, c)| format!("{c} {n}")).collect::<Vec<_>>().join(", ")
}

fn other<'a>(b: &'a Beside, f: &Finding) -> Option<&'a Finding> {
    b.findings.iter().find(|o| o.claim.id == f.claim.id)
}

/// The page's section.
pub fn html(card: &Scorecard) -> String {
    let (findings, beside) = (&card.findings, &card.beside);
    let mut out = String::from("<h2 id=\"scorecard\">Scorecard: the seeds on this machine</h2>\n");
    out.push_str(
        "<p>Each headline claim of the source documents (docs/sources.md), the paper's figure, this run's figure \
         with its 95% interval, and a verdict: <em>reproduced</em> (the interval lies in the claim's range), \
         <em>differs</em> (it lies outside, with the likely reason), <em>unsettled</em> (it overlaps an end of the \
         range), <em>cannot test here</em> (this machine lacks what the claim needs) or <em>not measured</em>. \
         docs/scorecard.md gives each claim's range and why.</p>\n",
    );
    out.push_str(&format!("<p>{}</p>\n", escape(&tally(findings))));
    out.push_str(
        "<table class=\"scorecard\">\n<tr><th>seed</th><th>claim</th><th>paper</th><th>this run</th><th>verdict</th>",
    );
    for b in beside {
        out.push_str(&format!("<th>{}</th>", escape(&b.label)));
    }
    out.push_str("<th>rows</th></tr>\n");
    for f in findings {
        out.push_str(&format!(
            "<tr id=\"claim-{}\"><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"verdict-{}\">{}</td>",
            escape(f.claim.id),
            escape(f.claim.seed),
            escape(f.claim.source),
            escape(f.claim.claim),
            escape(f.claim.paper),
            escape(&f.figure_text()),
            f.verdict.name().replace(' ', "-"),
            verdict_html(card, f),
        ));
        for b in beside {
            let cell = other(b, f).map_or("-".to_string(), |o| format!("{}; {}", o.figure_text(), beside_text(o)));
            out.push_str(&format!("<td>{}</td>", escape(&cell)));
        }
        out.push_str(&format!("<td>{}</td></tr>\n", escape(&f.rows)));
    }
    out.push_str("</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Row, Run};
    use serde_json::json;

    fn document(runs: Vec<Run>) -> Results {
        let mut results = Results::new(&json!({"allowed_cpus": "0-3", "cpu_model": "test CPU"}));
        results.runs = runs;
        results
    }

    fn slowdown(wait: &str, active: &str, behaviour: &str, placement: &str, pct: f64, ci: f64) -> Row {
        Row::new()
            .with("lock", format!("ttas:{wait}"))
            .with("wait", wait)
            .with("active", active)
            .with("behaviour", behaviour)
            .with("placement", placement)
            .with("waiters", 1)
            .with("cpu_slowdown_pct", pct)
            .with("cpu_slowdown_ci95_pct", ci)
    }

    /// A contention row with exact figures (intervals of zero).
    fn contention_row(lock: &str, threads: u64, uncontended: f64, throughput: f64) -> Row {
        Row::new()
            .with("lock", lock)
            .with("threads", threads)
            .with("uncontended_ns", uncontended)
            .with("uncontended_ci95_ns", 0.0)
            .with("throughput_ops_s", throughput)
            .with("throughput_ci95_ops_s", 0.0)
    }

    fn finding<'a>(all: &'a [Finding], id: &str) -> &'a Finding {
        all.iter().find(|f| f.claim.id == id).unwrap_or_else(|| panic!("no claim {id}"))
    }

    #[test]
    fn every_claim_is_listed_once_and_says_why_when_nothing_was_measured() {
        let empty = document(Vec::new());
        let all = findings(&Context::new(&empty));
        assert!(all.len() >= 19, "{} claims", all.len());
        for (i, f) in all.iter().enumerate() {
            assert!(all[i + 1..].iter().all(|g| g.claim.id != f.claim.id), "{} twice", f.claim.id);
            assert!(f.claim.id.starts_with(f.claim.seed), "{} is not named after its seed", f.claim.id);
            assert_eq!(f.verdict.name(), "not measured", "{}", f.claim.id);
            assert!(f.verdict.why().contains("was not run"), "{}: {}", f.claim.id, f.verdict.why());
        }
        let seeds: Vec<&str> = all.iter().map(|f| f.claim.seed).collect();
        assert!(seeds.windows(2).all(|w| w[0] <= w[1]), "not in seed order: {seeds:?}");
        for seed in ["000", "001", "002", "003", "004"] {
            assert!(seeds.contains(&seed), "no claim of seed {seed}");
        }
    }

    #[test]
    fn a_machine_with_smt_gets_figures_and_verdicts_from_its_rows() {
        let mut run = Run::new("interference");
        run.rows = vec![
            slowdown("spin", "add", "single", "smt", 10.0, 2.0),
            slowdown("spin", "mbv-int", "multiple", "smt", 40.0, 2.0),
            slowdown("spin", "hash", "multiple", "smt", 44.0, 2.0),
            slowdown("miss", "mbv-int", "multiple", "smt", 1.0, 0.5),
            slowdown("miss", "hash", "multiple", "smt", 9.0, 0.5),
        ];
        let results = document(vec![run]);
        let all = findings(&Context::new(&results));

        let one = finding(&all, "000-linux-loop-one-sibling");
        let here = one.here.unwrap();
        assert!((here.value - 94.0 / 3.0).abs() < 1e-9, "mean of all three workloads: {here:?}");
        assert_eq!(one.verdict.name(), "differs", "31% is above 4-20%");
        assert!(one.verdict.why().starts_with("above"), "{}", one.verdict.why());

        let multiple = finding(&all, "002-linux-loop-smt");
        assert!((multiple.here.unwrap().value - 42.0).abs() < 1e-9, "only the multiple-behaviour workloads");
        assert_eq!(multiple.verdict, Verdict::Reproduced);
        assert!(multiple.figure_text().contains("mbv-int 40 ± 2%"), "{}", multiple.figure_text());

        let miss = finding(&all, "002-miss-loop-smt");
        assert_eq!(miss.here.unwrap().value, 5.0);
        assert_eq!(miss.verdict.name(), "unsettled", "5 ± 0.35 overlaps the range's end at 5");
    }

    #[test]
    fn a_placement_the_machine_lacks_is_named_as_the_reason() {
        let mut run = Run::new("interference");
        run.rows = vec![
            Row::new().with("placement", "smt").skipped("no SMT: every core has one logical CPU"),
            slowdown("spin", "add", "single", "core", 0.5, 1.0),
        ];
        let results = document(vec![run]);
        let all = findings(&Context::new(&results));
        let f = finding(&all, "002-linux-loop-smt");
        assert_eq!(f.verdict, Verdict::CannotTest("no SMT: every core has one logical CPU".to_string()));
        assert!(f.here.is_none());
        assert_eq!(finding(&all, "000-linux-loop-other-core").verdict, Verdict::Reproduced);
    }

    #[test]
    fn the_fairlock_claims_read_one_thread_per_cpu() {
        let mut run = Run::new("contention");
        run.param("cs_ns", 100);
        run.param("groups_by", "halves of the CPU list");
        let row = |lock: &str, threads: u64, uncontended: f64, throughput: f64| {
            contention_row(lock, threads, uncontended, throughput)
                .with("rep_max_wait_ns", 3000.0)
                .with("rep_max_hold_ns", 1000.0)
                .with("rep_max_wait_over_hold_x", 3.0)
                .with("rep_max_wait_over_hold_ci95_x", 0.5)
        };
        let floor = |r: Row| r.with("uncontended_floor_ns", 2.9).with("uncontended_floor_ci95_ns", 0.05);
        run.rows = vec![
            row("ttas:spin", 2, 3.0, 100.0),
            row("fair:spin", 2, 6.0, 10.0),
            floor(row("ttas:spin", 4, 3.0, 1000.0)),
            floor(row("fair:spin", 4, 6.0, 640.0)),
        ];
        let results = document(vec![run]);
        let all = findings(&Context::new(&results));
        let cost = finding(&all, "003-fairlock-uncontended-cost");
        assert_eq!((cost.here.unwrap().value, cost.verdict.name()), (2.0, "reproduced"));
        let state = cost.machine_state.expect("the uncontended floor beside the uncontended cost");
        assert_eq!(state.text(), "uncontended floor 2.9 ± 0.05 ns", "the fairlock's row at 4 threads");
        let throughput = finding(&all, "003-fairlock-throughput");
        assert!(throughput.machine_state.is_none(), "throughput does not follow the floor");
        assert_eq!(throughput.here.unwrap().value, 0.64, "at 4 threads, the CPU count, not at 2");
        let wait_vs_hold = finding(&all, "003-fairlock-max-wait-vs-hold").here.unwrap();
        assert_eq!(
            (wait_vs_hold.value, wait_vs_hold.ci95()),
            (3.0, Some(0.5)),
            "the repetitions' ratio, with its interval"
        );
        let node = finding(&all, "003-spinlock-favours-node");
        assert_eq!(node.verdict.name(), "cannot test here", "threads were not grouped by node");
    }

    #[test]
    fn the_node_claim_is_judged_on_declared_nodes_and_says_they_are_declared() {
        let judged = |declared: bool| {
            let mut run = Run::new("contention");
            run.param("cs_ns", 100).param("groups_by", "node").param("groups_declared", declared);
            run.rows = vec![
                // At 4 threads, the CPUs of the test's machine card.
                contention_row("ttas:spin", 4, 3.0, 1000.0).with("group_max_min_ratio", 1.2),
                contention_row("fair:spin", 4, 6.0, 640.0),
            ];
            let results = document(vec![run]);
            let all = findings(&Context::new(&results));
            let node = finding(&all, "003-spinlock-favours-node");
            (node.here.map(|h| h.value), node.verdict.name(), node.figure_text())
        };
        let (value, verdict, text) = judged(true);
        assert_eq!((value, verdict), (Some(1.2), "differs"));
        assert!(text.contains("declared by SPINLAB_TOPOLOGY"), "{text}");
        let (value, verdict, text) = judged(false);
        assert_eq!((value, verdict), (Some(1.2), "differs"));
        assert!(!text.contains("declared"), "{text}");
    }

    #[test]
    fn the_core_claim_leaves_out_rows_measured_while_the_two_cpus_shared_a_core() {
        let shared = |row: Row, said: &str| row.with("core_shared", said);
        let run = |rows: Vec<Row>| {
            let mut run = Run::new("interference");
            run.rows = rows;
            run
        };
        let claim = "000-linux-loop-other-core";
        let mixed = document(vec![run(vec![
            shared(slowdown("spin", "add", "single", "core", 95.0, 5.0), "yes"),
            shared(slowdown("spin", "hash", "multiple", "core", 1.0, 0.5), "no"),
            shared(slowdown("spin", "sort", "multiple", "core", 60.0, 5.0), "moved"),
        ])]);
        let all = findings(&Context::new(&mixed));
        let f = finding(&all, claim);
        assert_eq!((f.here.unwrap().value, f.verdict.name()), (1.0, "reproduced"), "hash alone");
        assert!(f.rows.contains("less add, sort measured while the two CPUs shared"), "{}", f.rows);
        let all_shared = document(vec![run(vec![shared(slowdown("spin", "add", "single", "core", 95.0, 5.0), "yes")])]);
        let all = findings(&Context::new(&all_shared));
        let f = finding(&all, claim);
        assert_eq!(f.verdict.name(), "cannot test here");
        assert!(f.verdict.why().contains("no row measured two cores"), "{}", f.verdict.why());
    }

    #[test]
    fn the_miss_loop_responsiveness_reads_only_rows_measured_on_two_cores() {
        let reread = |wait: &str, active: &str, ns: f64, said: &str| {
            slowdown(wait, active, "multiple", "core", 0.0, 0.0).with("reread_ns", ns).with("core_shared", said)
        };
        let mut run = Run::new("interference");
        run.rows = vec![
            reread("miss", "hash", 400.0, "no"),
            reread("spin", "hash", 2.0, "no"),
            reread("miss", "sort", 100.0, "yes"),
            reread("spin", "sort", 50.0, "moved"),
        ];
        let doc = document(vec![run]);
        let all = findings(&Context::new(&doc));
        assert_eq!(finding(&all, "002-miss-loop-responsiveness").here.unwrap().value, 200.0, "hash's rows alone");
    }

    #[test]
    fn the_fairlock_claims_read_the_seeds_fairlock_not_the_gated_one() {
        let row = |lock: &str, uncontended: f64| contention_row(lock, 4, uncontended, 100.0);
        let run = |rows: Vec<Row>| {
            let mut run = Run::new("contention");
            run.param("cs_ns", 100);
            run.rows = rows;
            run
        };
        // The gated fair lock comes first, as in the report's list; the seed's is read.
        let both = document(vec![run(vec![row("ttas:spin", 3.0), row("fair:spin-park", 9.0), row("fair:spin", 6.0)])]);
        let all = findings(&Context::new(&both));
        let cost = finding(&all, "003-fairlock-uncontended-cost");
        assert_eq!(cost.here.unwrap().value, 2.0, "fair:spin over ttas:spin");
        // A run with only the gated one says why it cannot stand for the seed's.
        let gated = document(vec![run(vec![row("ttas:spin", 3.0), row("fair:spin-park", 9.0)])]);
        let all = findings(&Context::new(&gated));
        let cost = finding(&all, "003-fairlock-uncontended-cost");
        assert!(cost.here.is_none());
        let why = cost.verdict.why();
        assert!(why.contains("fair:spin-park is the fair lock as a gate"), "{why}");
    }

    #[test]
    fn a_claim_whose_run_saw_the_machine_change_says_so_and_one_whose_run_did_not_does_not() {
        let run = |before: f64, after: f64| {
            let mut run = Run::new("interference");
            run.param("line_transfer_before_ns", before).param("line_transfer_after_ns", after);
            run.rows = vec![slowdown("spin", "add", "single", "core", 0.5, 1.0)];
            run
        };
        let claim = "000-linux-loop-other-core";
        let moved = document(vec![run(54.0, 205.0)]);
        let card = Scorecard::new(&Context::new(&moved), Vec::new());
        let f = finding(&card.findings, claim);
        let words = f.machine_moved.as_deref().unwrap();
        assert!(words.contains("54 ns") && words.contains("205 ns"), "{words}");
        // The run's move is a caveat of its whole pass: the claim points to it, once numbered.
        let text = terminal(&card, 40).join("\n");
        let line = text.lines().find(|l| l.contains(claim)).unwrap();
        assert!(line.contains("reproduced [1]"), "{text}");
        let page = html(&card);
        let row = page.split(&format!("id=\"claim-{claim}\"")).nth(1).unwrap().split("</tr>").next().unwrap();
        assert!(row.contains("href=\"#caveat-1\"") && !row.contains("205 ns"), "{row}");
        assert_eq!(card.lines().iter().find(|l| l.id == claim).unwrap().machine_moved.as_deref(), Some(words));
        // Within 1.5 times: the machine held still; claims of other runs are not marked.
        let still = document(vec![run(54.0, 60.0)]);
        assert!(Scorecard::new(&Context::new(&still), Vec::new()).findings.iter().all(|f| f.machine_moved.is_none()));
        assert!(finding(&card.findings, "001-tcall-pthreads-vs-spin").machine_moved.is_none());
    }

    #[test]
    fn a_contention_claim_reads_the_machine_under_its_own_rows_when_they_carry_transfers() {
        let doc = |transfers: Option<(f64, f64)>| {
            let mut run = Run::new("contention");
            run.param("cs_ns", 100).param("line_transfer_before_ns", 40.0).param("line_transfer_after_ns", 200.0);
            run.rows = ["ttas:spin", "fair:spin"]
                .iter()
                .map(|lock| {
                    let row = contention_row(lock, 4, 3.0, 100.0);
                    match transfers {
                        Some((b, a)) => row.with("line_transfer_before_ns", b).with("line_transfer_after_ns", a),
                        None => row,
                    }
                })
                .collect();
            document(vec![run])
        };
        let moved = |transfers| {
            let doc = doc(transfers);
            let all = findings(&Context::new(&doc));
            finding(&all, "003-fairlock-throughput").machine_moved.clone()
        };
        // The run moved (another configuration, measured again), these rows held still.
        assert_eq!(moved(Some((45.0, 50.0))), None);
        // These rows moved: said with their own transfers.
        let words = moved(Some((45.0, 220.0))).unwrap();
        assert!(words.contains("45 ns") && words.contains("220 ns"), "{words}");
        // Rows without transfers of their own: the run's.
        assert!(moved(None).unwrap().contains("200 ns"));
    }

    #[test]
    fn an_interference_claim_reads_the_machine_under_its_own_rows_when_they_carry_transfers() {
        // Two workloads' rows at `core`; the run's transfers moved. `after` per row, `None`:
        // rows without transfers of their own.
        let moved = |afters: [Option<f64>; 2]| {
            let mut run = Run::new("interference");
            run.param("line_transfer_before_ns", 40.0).param("line_transfer_after_ns", 200.0);
            run.rows = [("add", "single"), ("hash", "multiple")]
                .iter()
                .zip(afters)
                .map(|(&(active, behaviour), after)| {
                    let row = slowdown("spin", active, behaviour, "core", 0.5, 1.0);
                    match after {
                        Some(a) => row.with("line_transfer_before_ns", 45.0).with("line_transfer_after_ns", a),
                        None => row,
                    }
                })
                .collect();
            let doc = document(vec![run]);
            let all = findings(&Context::new(&doc));
            finding(&all, "000-linux-loop-other-core").machine_moved.clone()
        };
        // The run moved (under other rows, measured again), these rows held still.
        assert_eq!(moved([Some(50.0), Some(48.0)]), None);
        // One of the figure's rows moved: said with its own transfers.
        let words = moved([Some(50.0), Some(230.0)]).unwrap();
        assert!(words.contains("45 ns") && words.contains("230 ns"), "{words}");
        // A row without transfers of its own: the run's.
        assert!(moved([Some(50.0), None]).unwrap().contains("200 ns"));
    }

    #[test]
    fn the_terminal_counts_every_claim_names_those_judged_and_the_page_carries_every_claim() {
        let empty = document(Vec::new());
        let ctx = Context::new(&empty);
        let mut run = Run::new("interference");
        run.rows = vec![slowdown("spin", "add", "single", "core", 0.5, 1.0)];
        let other = document(vec![run]);
        let beside = vec![Beside {
            path: "big/results.json".to_string(),
            label: "big (EPYC)".to_string(),
            findings: findings(&Context::new(&other)),
        }];
        let card = Scorecard::new(&ctx, beside);
        let text = terminal(&card, 40);
        let n = card.findings.len();
        assert_eq!(text[0], format!("scorecard: {n} claims: {n} not measured"));
        assert_eq!(text[1], "machine B: big (EPYC)");
        // Judged on the other machine alone: named, with both verdicts.
        let claims: Vec<&String> = text.iter().filter(|l| l.starts_with("  0")).collect();
        assert_eq!(claims.len(), 1, "{text:?}");
        assert!(claims[0].contains("000-linux-loop-other-core") && claims[0].contains("not measured"), "{text:?}");
        assert!(claims[0].ends_with("reproduced"), "{text:?}");
        assert!(text.last().unwrap().contains(&format!("{} more claims", n - 1)), "{text:?}");
        // Short of room: the tally and the machines.
        assert_eq!(terminal(&card, 3), text[..2]);
        let page = html(&card);
        for f in &card.findings {
            assert!(page.contains(&format!("id=\"claim-{}\"", f.claim.id)), "page lacks {}", f.claim.id);
        }
        assert!(page.contains("<th>big (EPYC)</th>"));
        assert_eq!(card.lines().len(), card.findings.len());
    }

    /// A document whose interference run could not place waiters on SMT siblings, and one
    /// whose run did: the second reproduces the sibling claim (42% over the multiple-behaviour
    /// workloads).
    fn smt_documents() -> (Results, Results) {
        let mut none = Run::new("interference");
        none.rows = vec![
            Row::new().with("placement", "smt").skipped("no SMT: every core has one logical CPU"),
            slowdown("spin", "add", "single", "core", 0.5, 1.0),
        ];
        let mut smt = Run::new("interference");
        smt.rows = vec![slowdown("spin", "mbv-int", "multiple", "smt", 42.0, 1.0)];
        (document(vec![none]), document(vec![smt]))
    }

    #[test]
    fn a_claim_this_machine_cannot_test_names_the_hardware_and_the_committed_machine_that_tested_it() {
        let (none, smt) = smt_documents();
        let root = std::env::temp_dir().join(format!("spinlab-committed-{}", std::process::id()));
        for (name, doc) in [("big", &smt), ("small", &none)] {
            let folder = root.join(MACHINES).join(name);
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join("results.json"), serde_json::to_string(doc).unwrap()).unwrap();
        }
        let committed = committed(&root);
        std::fs::remove_dir_all(&root).unwrap();
        let paths: Vec<&str> = committed.iter().map(|b| b.path.as_str()).collect();
        assert_eq!(paths, ["docs/machines/big/results.json", "docs/machines/small/results.json"]);

        let card = Scorecard::new(&Context::new(&none), Vec::new()).with_committed(committed);
        let claim = "002-linux-loop-smt";
        let f = finding(&card.findings, claim);
        assert_eq!(f.verdict.name(), "cannot test here");
        let words = card.cannot_test_words(f).unwrap();
        assert!(
            words.starts_with(
                "needs two SMT siblings of one core; tested in docs/machines/big/results.json: reproduced"
            ),
            "{words}"
        );
        assert!(words.ends_with("(--beside shows it)"), "{words}");
        assert!(!words.contains("small"), "the other committed machine cannot test it either: {words}");

        let line = card.lines().into_iter().find(|l| l.id == claim).unwrap();
        assert_eq!(line.needs.as_deref(), Some("two SMT siblings of one core"));
        let tested = vec![TestedIn {
            document: "docs/machines/big/results.json".to_string(),
            verdict: "reproduced".to_string(),
        }];
        assert_eq!(line.tested_in, tested);
        // A claim judged here names no other document; one every machine can test needs nothing.
        let judged_here = card.lines().into_iter().find(|l| l.id == "000-linux-loop-other-core").unwrap();
        assert!(judged_here.tested_in.is_empty() && judged_here.needs.is_some());
        assert!(card.lines().into_iter().find(|l| l.id == "004-backoff-gain").unwrap().needs.is_none());

        let text = terminal(&card, 40).join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.contains("cannot test 3 claims here, for want of two SMT siblings of one core: docs/machines")
                && text.contains("docs/machines/big/results.json judged 2 of them (1 differs, 1 reproduced)"),
            "{text}"
        );
        let page = html(&card);
        let row = page.split(&format!("id=\"claim-{claim}\"")).nth(1).unwrap().split("</tr>").next().unwrap();
        assert!(row.contains("needs two SMT siblings of one core; tested in docs/machines/big/results.json"), "{row}");
        // The monitor-wait claim was not measured here at all, so it names nothing.
        assert!(card.cannot_test_words(finding(&card.findings, "001-twakeup-mwait-vs-spin")).is_none());
    }

    #[test]
    fn without_other_documents_a_claim_that_cannot_be_tested_says_how_to_read_them() {
        let (none, smt) = smt_documents();
        let alone = Scorecard::new(&Context::new(&none), Vec::new());
        let f = finding(&alone.findings, "002-miss-loop-smt");
        assert!(alone.cannot_test_words(f).unwrap().contains("run from the repository's root"));
        // With --beside, the columns are the documents read; the committed ones are not.
        let beside =
            vec![Beside { path: "b.json".into(), label: "b".into(), findings: findings(&Context::new(&none)) }];
        let card = Scorecard::new(&Context::new(&none), beside).with_committed(vec![Beside {
            path: "docs/machines/big/results.json".into(),
            label: "big".into(),
            findings: findings(&Context::new(&smt)),
        }]);
        let words = card.cannot_test_words(finding(&card.findings, "002-miss-loop-smt")).unwrap();
        assert_eq!(
            words,
            "needs two SMT siblings of one core; none of the 1 document(s) given --beside tests it either"
        );
        assert!(card.lines().iter().all(|l| l.tested_in.is_empty()));
    }

    #[test]
    fn a_scorecard_line_written_before_needs_existed_still_reads() {
        let old = json!({"id": "x", "seed": "000", "source": "s", "claim": "c", "paper": "p", "value": null,
                         "ci95": null, "unit": "", "here": "-", "verdict": "cannot test here", "why": "no SMT",
                         "rows": "r"});
        let line: ScorecardLine = serde_json::from_value(old).unwrap();
        assert!(line.needs.is_none() && line.tested_in.is_empty());
    }
}
