//! `index.html`: one self-contained page (inline CSS and SVG, no script, nothing fetched; a
//! content security policy forbids anything else) that opens with the verdict and then shows
//! the scorecard, the machine and one figure per experiment.

use super::escape::escape;
use super::figures::{self, Figure};
use super::recommend::Advice;
use super::scorecard::{self, Scorecard};
use super::verdict;
use crate::reading::Context;
use crate::results::read::{MachineCard, PlacementCard};
use crate::results::Results;

pub(crate) const STYLE: &str = "
body { font-family: sans-serif; margin: 0 auto; max-width: 960px; padding: 16px 24px; color: #222; }
h1 { margin-bottom: 0; } .sub { color: #555; margin-top: 4px; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: 4px; margin-top: 36px; }
table { border-collapse: collapse; margin: 8px 0; font-size: 14px; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
table.verdict td.choice { font-weight: bold; white-space: nowrap; }
table.verdict td.why { max-width: 320px; } table.verdict tr.missing td { color: #777; }
table.verdict details p { margin: 4px 0; font-weight: normal; }
a.mark, span.mark { font-weight: normal; color: #7a4b00; }
.caveats ul { margin: 4px 0; padding-left: 0; list-style: none; font-size: 14px; }
td.verdict-reproduced { background: #e8f5e9; } td.verdict-differs { background: #fdecea; }
td.verdict-unsettled { background: #fff7e6; } td.verdict-cannot-test-here, td.verdict-not-measured { color: #777; }
figure { margin: 12px 0; }
.panel > svg { max-width: 100%; height: auto; display: block; }
figcaption { color: #333; font-size: 14px; margin: 4px 0 18px 0; }
.grid { display: flex; flex-wrap: wrap; gap: 8px; }
.grid .panel { flex: 0 1 auto; max-width: 100%; }
.note { color: #7a4b00; background: #fff7e6; border-left: 3px solid #e0a000; padding: 4px 8px; font-size: 14px; margin: 4px 0; }
.missing { color: #777; font-style: italic; }
.warn { background: #fff4e0; border-left: 4px solid #e0a030; padding: 6px 10px; }
nav a { margin-right: 12px; }
.scale { display: inline-block; width: 160px; height: 12px; vertical-align: middle;
  background: linear-gradient(to right, #2166ac, #ffffff, #b2182b); border: 1px solid #ccc; }
";

/// The whole page.
pub fn page(results: &Results, advice: &[Advice], card: &Scorecard) -> String {
    let ctx = Context::new(results);
    // The suite's runs have a section of their own, after the experiments'.
    let figures: Vec<Figure> =
        figures::all(&ctx).into_iter().filter(|f| f.experiment != super::apps::EXPERIMENT).collect();
    let apps = super::apps::html(results);
    let machine = results.machine_card();
    let cpu = &results.cpu_model();
    let total: f64 = results.runs.iter().map(|r| r.elapsed_s).sum();
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n",
    );
    out.push_str(&format!("<title>spinlab report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n", escape(cpu)));
    out.push_str("<h1>spinlab report</h1>\n");
    out.push_str(&format!(
        "<p class=\"sub\">{} &middot; {} usable CPU(s) &middot; {} &middot; {:.0} s of measurement &middot; <code>{}</code></p>\n",
        escape(cpu),
        ctx.cpus,
        escape(&utc_date(results.created_unix_s)),
        total,
        escape(&results.command.join(" "))
    ));
    out.push_str(
        "<nav><a href=\"#verdict\">verdict</a><a href=\"#scorecard\">scorecard</a><a href=\"#machine\">machine</a>",
    );
    for f in &figures {
        out.push_str(&format!("<a href=\"#exp-{0}\">{0}</a>", escape(&f.experiment)));
    }
    if !apps.is_empty() {
        out.push_str("<a href=\"#exp-apps\">real programs</a>");
    }
    out.push_str("</nav>\n");
    if let Some(t) = super::transfer::Transfers::of(results) {
        let class = if t.moved().is_some() { " class=\"warn\"" } else { "" };
        let note = t.moved().map_or(String::new(), |n| format!(": {n}"));
        out.push_str(&format!(
            "<p{class}>One-way cache-line transfer between two CPUs during this run: {}{}.</p>\n",
            escape(&t.range()),
            escape(&note)
        ));
    }

    out.push_str(&verdict::html(results, advice));
    out.push_str(&scorecard::html(card));

    out.push_str("<h2 id=\"machine\">The machine</h2>\n");
    out.push_str(&machine_card(&machine));

    for f in &figures {
        let runs: Vec<&crate::results::Run> = results.runs.iter().filter(|r| r.experiment == f.experiment).collect();
        out.push_str(&section(f, &runs));
    }
    out.push_str(&apps);
    out.push_str(
        "<p class=\"sub\">Written by <code>spinlab report</code>. The numbers are in results.json (schema \
         spinlab.results/1, see docs/results.md) and results.csv next to this file; \
         <code>spinlab compare A.json B.json</code> sets two runs side by side.</p>\n</body>\n</html>\n",
    );
    out
}

fn section(f: &Figure, runs: &[&crate::results::Run]) -> String {
    let name = escape(&f.experiment);
    let mut out = format!("<section id=\"exp-{name}\">\n<h2>{name}</h2>\n");
    let seconds: f64 = runs.iter().map(|r| r.elapsed_s).sum();
    let reps: Vec<String> = runs
        .iter()
        .filter_map(|r| {
            let params = r.known_params();
            Some(format!("{}-{}", params.min_reps?, params.max_reps?))
        })
        .collect();
    out.push_str(&format!(
        "<p class=\"sub\">{} run(s), {:.1} s{}; see docs/{name}.md for how to read it.</p>\n",
        runs.len(),
        seconds,
        if reps.is_empty() { String::new() } else { format!(", repetitions {}", reps.join(", ")) }
    ));
    out.push_str(&format!("<figure class=\"experiment\" data-experiment=\"{name}\">\n"));
    let small = f.panels.len() > 2 && f.experiment == "interference";
    if small {
        out.push_str("<div class=\"grid\">\n");
    }
    for (i, p) in f.panels.iter().enumerate() {
        out.push_str("<div class=\"panel\">\n");
        out.push_str(&p.svg);
        // Small multiples share one caption: the first panel's.
        if !small || i == 0 {
            out.push_str(&format!("\n<figcaption>{}</figcaption>\n", escape(&p.caption)));
        }
        out.push_str("</div>\n");
    }
    if small {
        out.push_str("</div>\n<p>colour scale: <span class=\"scale\"></span> speed-up &larr; 0% &rarr; slowdown</p>\n");
    }
    if f.panels.is_empty() {
        out.push_str("<figcaption class=\"missing\">No chart: nothing was measured.</figcaption>\n");
    }
    out.push_str("</figure>\n");
    for note in &f.notes {
        out.push_str(&format!("<p class=\"note\">{}</p>\n", escape(note)));
    }
    out.push_str("</section>\n");
    out
}

fn machine_card(card: &MachineCard) -> String {
    let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
    let or_unknown = |n: Option<u64>| n.map_or("?".to_string(), |n| n.to_string());
    let mut rows: Vec<(&str, String)> = Vec::new();
    let mut add = |k: &'static str, v: Option<String>| {
        if let Some(v) = v {
            rows.push((k, v));
        }
    };
    add("CPU", card.cpu_model.clone());
    add(
        "logical CPUs",
        card.logical_cpus.map(|n| format!("{n} (this run may use {})", card.allowed_cpus.clone().unwrap_or_default())),
    );
    add("virtual machine", card.hypervisor.map(yes));
    let topology = card.topology.clone().unwrap_or_default();
    add(
        "topology",
        Some(format!(
            "{} package(s), {} core(s), {} thread(s) per core, {} NUMA node(s), {} last-level cache group(s), SMT {}",
            or_unknown(topology.packages),
            or_unknown(topology.cores),
            or_unknown(topology.threads_per_core),
            or_unknown(topology.numa_nodes),
            or_unknown(topology.llc_groups),
            topology.smt.map_or("?".to_string(), yes),
        )),
    );
    add("placements", topology.placements.as_deref().map(placements));
    if let Some(features) = &card.wait_features {
        let text: Vec<String> = features.listed().into_iter().map(|(k, has)| format!("{k} {}", yes(has))).collect();
        add("wait instructions", Some(text.join(", ")));
    }
    let tsc = card.tsc.unwrap_or_default();
    add(
        "cycle counter",
        tsc.frequency_hz
            .map(|hz| format!("{:.3} GHz, invariant {}", hz as f64 / 1e9, tsc.invariant.map_or("?".to_string(), yes))),
    );
    add("performance counters", card.perf_counters.and_then(|p| p.readable).map(yes));
    add("kernel", card.kernel.clone());
    add("cpufreq governor", card.cpufreq_governor.clone());
    add("cpuidle", card.cpuidle.clone());
    add("clock source", card.clocksource.clone());
    add("spinlab", card.spinlab_version.clone());
    let mut out = String::from("<table class=\"machine\">\n");
    for (k, v) in rows {
        out.push_str(&format!("<tr><th>{}</th><td>{}</td></tr>\n", escape(k), escape(&v)));
    }
    out.push_str("</table>\n");
    out.push_str(&absent(&card.absent));
    out
}

/// Each placement, and why it is unavailable where it is.
fn placements(placements: &[PlacementCard]) -> String {
    let text: Vec<String> = placements
        .iter()
        .map(|p| {
            let name = p.placement.as_deref().unwrap_or("?");
            match &p.skipped {
                Some(why) => format!("{name}: unavailable ({why})"),
                None => format!("{name}: yes"),
            }
        })
        .collect();
    text.join("; ")
}

/// The list of what the machine lacks, or nothing.
fn absent(absent: &[String]) -> String {
    let mut out = String::new();
    if !absent.is_empty() {
        out.push_str("<p>What this machine lacks (the experiments that need it say so below):</p>\n<ul>\n");
        for a in absent {
            out.push_str(&format!("<li>{}</li>\n", escape(a)));
        }
        out.push_str("</ul>\n");
    }
    out
}

/// `2026-04-01 12:34 UTC` from seconds since the epoch.
fn utc_date(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", secs / 3600, secs % 3600 / 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_escapes() {
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_date(1_700_000_000), "2023-11-14 22:13 UTC");
        assert_eq!(escape("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
    }
}
