//! The report's section "real programs" (`spinlab report --apps`, or a document holding an
//! `apps` run): each program's metric under each lock as a ratio to glibc with its interval,
//! a chart of the ratios, the best lock per program and the default's verdict (the lines of
//! [`apps::verdict`](crate::apps::verdict)). Absent when the document has no `apps` run.

use super::escape::escape;
use crate::apps::verdict::{self, programs};
use crate::apps::GLIBC;
use crate::reading::plot::{self, Axis, Scale};
use crate::results::format::number;
use crate::results::rows::{AppsRow, RowType};
use crate::results::Results;

/// The experiment name of the suite's runs.
pub const EXPERIMENT: &str = AppsRow::EXPERIMENT;

/// Every `apps` row of the document.
pub fn rows(results: &Results) -> Vec<AppsRow> {
    results.runs.iter().filter(|r| r.experiment == EXPERIMENT).flat_map(|r| r.rows_as::<AppsRow>()).collect()
}

/// The chart: for each program, one bar per lock, its ratio to glibc (1 is glibc).
fn chart(rows: &[AppsRow]) -> Result<String, String> {
    let programs = programs(rows);
    let names: Vec<String> = programs.iter().map(|p| p.name.to_string()).collect();
    let mut locks: Vec<&str> = Vec::new();
    for row in rows.iter().filter(|r| r.skipped.is_none()) {
        if let Some(lock) = row.lock.as_deref().filter(|l| *l != GLIBC && !locks.contains(l)) {
            locks.push(lock);
        }
    }
    fn of<'a>(lock: &str, p: &verdict::Program<'a>) -> Option<&'a AppsRow> {
        p.rows.iter().copied().find(|r| r.lock.as_deref() == Some(lock))
    }
    let groups: Vec<(String, Vec<Option<f64>>)> = locks
        .iter()
        .map(|lock| (lock.to_string(), programs.iter().map(|p| of(lock, p)?.ratio_to_glibc.get()).collect()))
        .collect();
    let intervals: Vec<Vec<Option<(f64, f64)>>> = locks
        .iter()
        .map(|lock| {
            let ends = |row: &AppsRow| Some((row.ratio_to_glibc.get()?, row.ratio_ci95_to_glibc.get()?));
            programs.iter().map(|p| ends(of(lock, p)?).map(|(r, ci)| (r - ci, r + ci))).collect()
        })
        .collect();
    let all = groups.iter().flat_map(|(_, v)| v.iter().flatten().copied()).chain([1.0]);
    let y = Axis::numeric("metric / glibc's (above 1: better than glibc)", Scale::Log, all, false);
    let title = "real programs: each lock against glibc, with 95% intervals";
    plot::grouped_bars_within(title, &names, "program", &y, &groups, &intervals, Some((1.0, "glibc")))
}

fn cell(row: Option<&AppsRow>) -> String {
    let Some(row) = row else { return "<td>-</td>".to_string() };
    if let Some(why) = &row.failed {
        return format!("<td class=\"verdict-differs\" title=\"{}\">failed</td>", escape(why));
    }
    if row.lock.as_deref() == Some(GLIBC) {
        let value = row.metric_value.map_or("-".to_string(), number);
        return format!("<td>{} {}</td>", value, escape(row.unit.as_deref().unwrap_or("")));
    }
    format!("<td>{}</td>", escape(&verdict::ratio_words(row)))
}

/// The section, or nothing when the document has no `apps` rows.
pub fn html(results: &Results) -> String {
    let rows = rows(results);
    if rows.is_empty() {
        return String::new();
    }
    let seconds: f64 = results.runs.iter().filter(|r| r.experiment == EXPERIMENT).map(|r| r.elapsed_s).sum();
    let mut out = String::from("<section id=\"exp-apps\">\n<h2>real programs</h2>\n");
    out.push_str(&format!(
        "<p class=\"sub\">{:.0} s; each program's own metric under each lock as a ratio to the same program \
         under glibc (no library), oriented so that above 1 is better, with the 95% interval of the rounds both \
         ran in; see docs/apps.md.</p>\n",
        seconds
    ));
    let programs = programs(&rows);
    let mut locks: Vec<&str> = Vec::new();
    for p in &programs {
        for lock in p.rows.iter().filter_map(|r| r.lock.as_deref()) {
            if !locks.contains(&lock) {
                locks.push(lock);
            }
        }
    }
    out.push_str("<table class=\"apps\">\n<tr><th>lock</th>");
    for p in &programs {
        let metric = p.rows.first().and_then(|r| r.metric.as_deref()).unwrap_or("");
        out.push_str(&format!("<th>{}<br><small>{}</small></th>", escape(p.name), escape(metric)));
    }
    out.push_str("</tr>\n");
    for lock in &locks {
        out.push_str(&format!("<tr><th>{}</th>", escape(lock)));
        for p in &programs {
            out.push_str(&cell(p.rows.iter().copied().find(|r| r.lock.as_deref() == Some(*lock))));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    if !programs.is_empty() {
        match chart(&rows) {
            Ok(svg) => out.push_str(&format!(
                "<figure class=\"experiment\" data-experiment=\"apps\">\n<div class=\"panel\">\n{svg}\n<figcaption>Each \
                 lock's metric over glibc's, per program, with its 95% interval (logarithmic; the dashed line is \
                 glibc).</figcaption>\n\
                 </div>\n</figure>\n"
            )),
            Err(why) => out.push_str(&format!("<p class=\"note\">A chart could not be drawn: {}</p>\n", escape(&why))),
        }
    }
    out.push_str("<ul>\n");
    for line in verdict::lines(&rows) {
        out.push_str(&format!("<li>{}</li>\n", escape(&line)));
    }
    for row in rows.iter().filter(|r| r.skipped.is_some() && r.lock.as_deref() == Some(GLIBC)) {
        out.push_str(&format!(
            "<li>skipped: {}: {}</li>\n",
            escape(row.program.as_deref().unwrap_or("?")),
            escape(row.skipped.as_deref().unwrap_or(""))
        ));
    }
    out.push_str("</ul>\n</section>\n");
    out
}

/// The terminal summary's lines: the default's verdict, when the document has `apps` rows.
pub fn terminal(results: &Results) -> Vec<String> {
    let rows = rows(results);
    if rows.is_empty() {
        return Vec::new();
    }
    vec![format!("real programs: {}", verdict::default_line(&rows))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::rows::Nullable;
    use crate::results::Run;

    fn row(program: &str, lock: &str, ratio: f64) -> AppsRow {
        AppsRow {
            program: Some(program.into()),
            lock: Some(lock.into()),
            metric: Some("ops_per_s".into()),
            unit: Some("ops/s".into()),
            metric_value: Some(1000.0 * ratio),
            ratio_to_glibc: Nullable::Value(ratio),
            ratio_ci95_to_glibc: Nullable::Value(0.02),
            ..AppsRow::default()
        }
    }

    #[test]
    fn the_section_shows_each_ratio_a_chart_the_best_lock_and_the_defaults_verdict() {
        let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        let mut run = Run::new(EXPERIMENT);
        let mut failed = row("b", "mcs:spin-park", 1.0);
        failed.failed = Some("run 1: killed by signal 11".into());
        failed.ratio_to_glibc = Nullable::Null;
        let rows = [
            row("a", GLIBC, 1.0),
            row("a", "default", 1.05),
            row("a", "mcs:spin-park", 1.2),
            row("b", GLIBC, 1.0),
            failed,
        ];
        run.rows = rows.iter().map(RowType::to_row).collect();
        results.runs.push(run);
        let html = html(&results);
        assert!(html.contains("<h2>real programs</h2>"), "{html}");
        assert!(
            html.contains("1.050x ±0.020") && html.contains("title=\"run 1: killed by signal 11\">failed"),
            "{html}"
        );
        assert!(html.contains("<svg") && html.contains("data-series=\"default\""), "a chart with a series per lock");
        assert!(html.contains("best on a: mcs:spin-park (1.20x glibc)"), "{html}");
        assert!(html.contains("misses &gt;= 1.00x glibc and &gt;= 0.95x the best lock on 1 of 1 programs"), "{html}");
        assert_eq!(terminal(&results).len(), 1);
    }

    #[test]
    fn a_document_without_the_suite_has_no_section() {
        let results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        assert!(html(&results).is_empty() && terminal(&results).is_empty());
    }
}
