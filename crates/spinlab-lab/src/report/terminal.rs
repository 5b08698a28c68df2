//! The terminal summary of `spinlab report`: the verdict, the scorecard in brief and where the
//! files are, in at most [`LINES`] lines of at most [`COLUMNS`] columns. Everything else (the
//! reasoning, each claim's figure and reason, the runs) is in index.html and results.json.
//!
//! The verdict, the caveats and the files are always shown; the scorecard's claims get the
//! lines that are left, those judged here or on a `--beside` machine first. A table wider than
//! the columns is cut in its widest column, with an ellipsis.

pub use super::lines::COLUMNS;
use super::lines::{cut, wrap};
use super::recommend::Advice;
use super::scorecard::{self, Scorecard};
use super::transfer::Transfers;
use super::verdict;
use crate::reading::caveat;
use crate::results::Results;
use std::path::Path;

/// The most lines the summary takes.
pub const LINES: usize = 40;
/// The most lines the caveats take: beyond it they are cut to a line each, then told per
/// pass, then counted.
const CAVEAT_LINES: usize = 8;

/// The summary, ending with a newline.
pub fn summary(results: &Results, advice: &[Advice], card: &Scorecard, files: [&Path; 3]) -> String {
    let total: f64 = results.runs.iter().map(|r| r.elapsed_s).sum();
    let mut head = format!("spinlab report: {} runs, {total:.1} s of measurement", results.runs.len());
    let mut note = Vec::new();
    if let Some(t) = Transfers::of(results) {
        head.push_str(&format!("; one-way cache-line transfer {}", t.range()));
        if let Some(moved) = t.moved() {
            note = wrap(&format!("note: {moved}"), "  ", "    ");
        }
    }
    let all = caveat::pass_caveats(results);
    let mut top = vec![String::new(), cut(&head)];
    top.extend(note);
    top.push(String::new());
    top.extend(verdict::terminal(advice, &all));
    top.extend(verdict::terminal_caveats(results, &all, CAVEAT_LINES));
    top.extend(super::apps::terminal(results).iter().flat_map(|l| wrap(l, "", "    ")));
    top.push(String::new());
    let [index, json, csv] = files.map(|p| p.display().to_string());
    let bottom = vec![
        String::new(),
        cut(&format!("wrote {index}")),
        cut(&format!("      {json}")),
        cut(&format!("      {csv}")),
    ];
    let room = LINES.saturating_sub(top.len() + bottom.len());
    let mut out = top;
    out.extend(scorecard::terminal(card, room));
    out.extend(bottom);
    let mut text = out.join("\n");
    text.push('\n');
    text
}
