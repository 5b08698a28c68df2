//! The scorecard: the seeds' headline claims against this run, and against other machines'
//! committed results (`--beside`), as a terminal table, a section near the top of the page
//! and `scorecard[]` in results.json. Every experiment checks its own claims
//! ([`Experiment::scorecard`](crate::experiments::Experiment::scorecard)); this module only
//! collects and lays them out. docs/scorecard.md explains each line.

use super::html::escape;
use crate::error::LabError;
use crate::experiments;
use crate::reading::scorecard::Finding;
use crate::reading::Context;
use crate::results::table::{self, col};
use crate::results::{Results, Row, ScorecardLine};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Every claim checked against the document behind `ctx`, seed by seed (within a seed, in the
/// order of the experiments that check them).
pub fn findings(ctx: &Context<'_>) -> Vec<Finding> {
    let mut all: Vec<Finding> = experiments::all().iter().flat_map(|e| e.scorecard(ctx)).collect();
    all.sort_by(|a, b| a.claim.seed.cmp(b.claim.seed));
    all
}

/// The findings of this run and of the `--beside` documents.
pub struct Scorecard {
    /// This run's.
    pub findings: Vec<Finding>,
    /// Other machines', one column each.
    pub beside: Vec<Beside>,
}

impl Scorecard {
    /// The claims checked against `ctx`, beside `beside`.
    pub fn new(ctx: &Context<'_>, beside: Vec<Beside>) -> Scorecard {
        Scorecard { findings: findings(ctx), beside }
    }

    /// The lines for results.json.
    pub fn lines(&self) -> Vec<ScorecardLine> {
        self.findings.iter().map(Finding::entry).collect()
    }
}

/// Another machine's results, shown as a column beside this run's.
pub struct Beside {
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
    paths
        .iter()
        .map(|path| {
            let results = crate::results::load(path)?;
            let ctx = Context::new(&results);
            Ok(Beside { label: label(path, &results), findings: findings(&ctx) })
        })
        .collect()
}

fn label(path: &Path, results: &Results) -> String {
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| path.display().to_string());
    match results.machine.get("cpu_model").and_then(Value::as_str) {
        Some(cpu) => format!("{folder} ({cpu})"),
        None => folder,
    }
}

fn verdict_text(f: &Finding) -> String {
    let why = f.verdict.why();
    let load = f.under_load.as_ref().map_or(String::new(), |w| format!(" [under load: {w}]"));
    if why.is_empty() {
        format!("{}{load}", f.verdict.name())
    } else {
        format!("{}: {why}{load}", f.verdict.name())
    }
}

/// The terminal table: one line per claim, with the verdict of every `beside` column after
/// this run's.
pub fn terminal(card: &Scorecard) -> String {
    let (findings, beside) = (&card.findings, &card.beside);
    let rows: Vec<Row> = findings
        .iter()
        .map(|f| {
            let load = if f.under_load.is_some() { " (under load)" } else { "" };
            let mut row = Row::new()
                .with("claim", f.claim.id)
                .with("here", f.value_text())
                .with("verdict", format!("{}{load}", f.verdict.name()));
            for (b, (key, _)) in beside.iter().zip(BESIDE_COLUMNS) {
                row.set(key, other(b, f).map_or("-".to_string(), |o| o.verdict.name().to_string()));
            }
            row
        })
        .collect();
    let mut columns = vec![col("claim", "claim (seed-subject)"), col("here", "this run"), col("verdict", "verdict")];
    columns.extend(BESIDE_COLUMNS.iter().take(beside.len()).map(|(key, heading)| col(key, heading)));
    let legend: String =
        beside.iter().zip(BESIDE_COLUMNS).map(|(b, (_, heading))| format!("{heading}: {}\n", b.label)).collect();
    format!(
        "\nscorecard (the seeds' claims against this run; the paper's figures, the reasons and the rows are in \
         index.html, results.json and docs/scorecard.md):\n{legend}{}\n{}\n",
        table::render(&rows, &columns),
        tally(findings)
    )
}

/// The terminal's columns for `--beside` documents (named in a legend above the table).
const BESIDE_COLUMNS: [(&str, &str); MAX_BESIDE] =
    [("beside_0", "machine B"), ("beside_1", "machine C"), ("beside_2", "machine D"), ("beside_3", "machine E")];

/// `4 reproduced, 2 differ, …`.
pub fn tally(findings: &[Finding]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for f in findings {
        match counts.iter_mut().find(|(n, _)| *n == f.verdict.name()) {
            Some((_, c)) => *c += 1,
            None => counts.push((f.verdict.name(), 1)),
        }
    }
    let parts: Vec<String> = counts.iter().map(|(n, c)| format!("{c} {n}")).collect();
    format!("{} claims: {}", findings.len(), parts.join(", "))
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
            escape(&verdict_text(f)),
        ));
        for b in beside {
            let cell = other(b, f).map_or("-".to_string(), |o| format!("{}; {}", o.figure_text(), verdict_text(o)));
            out.push_str(&format!("<td>{}</td>", escape(&cell)));
        }
        out.push_str(&format!("<td>{}</td></tr>\n", escape(&f.rows)));
    }
    out.push_str("</table>\n");
    out
}
