//! One figure per experiment in a document, in run order: the experiment's own charts
//! ([`Experiment::figures`]) and notes on what was skipped. An experiment this build does not
//! know, or whose charts cannot be drawn from its rows, still gets a chart of its first figure
//! per row.

use crate::experiments::{self, Experiment};
use crate::reading::caveat;
use crate::reading::plot::{self, Axis, Bar, Scale};
use crate::reading::{measured, Context, Panel};
use crate::results::rows::{ContentionRow, HandoffRow, RowType};
use crate::results::{Row, Run};
use std::collections::BTreeMap;

/// Everything the report shows for one experiment.
pub struct Figure {
    /// The experiment's name.
    pub experiment: String,
    /// The charts.
    pub panels: Vec<Panel>,
    /// Plain-text notes: configurations skipped and why, charts that could not be drawn.
    pub notes: Vec<String>,
}

/// Keys that name a configuration rather than a figure.
const CONFIG_KEYS: &[&str] = &[
    "measure",
    "lock",
    "wait",
    "barrier",
    "app",
    "active",
    "placement",
    "threads",
    "waiters",
    "light_units",
    "matrix_n",
];

/// A row's configuration in words: `ttas:spin, 4 threads, core`.
pub fn label(row: &Row) -> String {
    let mut parts = Vec::new();
    for key in CONFIG_KEYS {
        match row.get(key) {
            Some(serde_json::Value::String(s)) => parts.push(s.clone()),
            Some(v) if v.is_number() => parts.push(format!("{key} {v}")),
            _ => {}
        }
    }
    if parts.is_empty() {
        parts.push("(row)".to_string());
    }
    parts.join(", ")
}

/// Notes for the skipped rows of `rows`: one line per reason, with the configurations.
fn skipped_notes(rows: &[&Row]) -> Vec<String> {
    let mut by_reason: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in rows.iter().filter(|r| r.is_skipped()) {
        by_reason.entry(row.skipped_reason().unwrap_or("no reason given").to_string()).or_default().push(label(row));
    }
    by_reason
        .into_iter()
        .map(|(reason, configs)| {
            let shown: Vec<&str> = configs.iter().take(6).map(String::as_str).collect();
            let more = if configs.len() > shown.len() {
                format!(" and {} more", configs.len() - shown.len())
            } else {
                String::new()
            };
            format!(
                "Skipped {} configuration{} ({}{more}): {reason}",
                configs.len(),
                if configs.len() == 1 { "" } else { "s" },
                shown.join("; ")
            )
        })
        .collect()
}

/// Notes for the rows whose figure fell below its physical floor (`below_floor`, which the
/// contention and hand-off rows carry), one each: a number no lock or wait can have, shown so
/// that nobody reads it as a measurement.
fn below_floor_notes(runs: &[&Run]) -> Vec<String> {
    runs.iter()
        .flat_map(|run| {
            let why: Vec<Option<String>> = match run.experiment.as_str() {
                ContentionRow::EXPERIMENT => {
                    run.rows_as::<ContentionRow>().into_iter().map(|r| r.below_floor).collect()
                }
                HandoffRow::EXPERIMENT => run.rows_as::<HandoffRow>().into_iter().map(|r| r.below_floor).collect(),
                _ => Vec::new(),
            };
            run.rows
                .iter()
                .zip(why)
                .filter_map(|(row, why)| Some(format!("Below its floor: {} ({})", label(row), why?)))
        })
        .collect()
}

/// The figure for every experiment in the document, in run order (one per experiment name).
pub fn all(ctx: &Context<'_>) -> Vec<Figure> {
    let mut names: Vec<&str> = Vec::new();
    for run in &ctx.results.runs {
        if !names.contains(&run.experiment.as_str()) {
            names.push(&run.experiment);
        }
    }
    let known = experiments::all();
    names
        .into_iter()
        .map(|name| {
            let runs: Vec<&Run> = ctx.runs_of(name);
            figure(ctx, known.iter().find(|e| e.name() == name).map(|e| e.as_ref()), name, &runs)
        })
        .collect()
}

fn figure(ctx: &Context<'_>, experiment: Option<&dyn Experiment>, name: &str, runs: &[&Run]) -> Figure {
    let rows: Vec<&Row> = runs.iter().flat_map(|r| r.rows.iter()).collect();
    let mut fig = Figure { experiment: name.to_string(), panels: Vec::new(), notes: Vec::new() };
    if measured(rows.iter().copied()).is_empty() {
        fig.notes.push(if rows.is_empty() {
            "No rows: the experiment measured nothing on this machine.".to_string()
        } else {
            "Nothing could be measured on this machine.".to_string()
        });
        fig.notes.extend(skipped_notes(&rows));
        return fig;
    }
    let drawn = experiment.map_or_else(Vec::new, |e| e.figures(ctx, runs));
    for panel in drawn {
        match panel {
            Ok(p) => fig.panels.push(p),
            Err(why) => fig.notes.push(format!("A chart could not be drawn: {why}")),
        }
    }
    if fig.panels.is_empty() {
        match generic(name, &rows) {
            Ok(p) => fig.panels.push(p),
            Err(why) => fig.notes.push(why),
        }
    }
    fig.notes.extend(below_floor_notes(runs));
    fig.notes.extend(run_notes(ctx, runs));
    fig.notes.extend(skipped_notes(&rows));
    fig
}

/// A note per run with caveats of its own (under load, the machine moved under it), pointing to
/// where the verdict says them, and per run whose configurations were measured again while
/// the machine moved under them.
fn run_notes(ctx: &Context<'_>, runs: &[&Run]) -> Vec<String> {
    let all = caveat::pass_caveats(ctx.results);
    let marked = runs.iter().filter_map(|run| {
        let own = ctx.index_of(run).map_or_else(Vec::new, |i| caveat::of_run(i, run));
        let each: Vec<String> =
            own.iter().filter_map(|c| Some(format!("[{}] ({})", caveat::number(&all, c)?, c.brief()))).collect();
        (!each.is_empty()).then(|| {
            format!(
                "Caveat {} of {}, said under the verdict: these figures may not hold.",
                each.join(" and "),
                caveat::pass_name(run)
            )
        })
    });
    let again = runs.iter().filter_map(|run| run.remeasured()).map(|words| {
        let mut words = words;
        words[..1].make_ascii_uppercase();
        format!("{words}; the rows carry the line transfers around each attempt (attempts, moved_under_ns).")
    });
    marked.chain(again).collect()
}

/// The first figure key of the rows (a number with a unit suffix), drawn as bars per row.
fn generic(name: &str, rows: &[&Row]) -> Result<Panel, String> {
    let rows = measured(rows.iter().copied());
    let units = [("_ns", "ns"), ("_ops_s", "ops/s"), ("_pct", "%"), ("_s", "s")];
    let key = rows
        .iter()
        .flat_map(|r| r.0.keys())
        .find(|k| {
            !k.contains("_ci95")
                && !k.contains("_sd_")
                && units.iter().any(|(s, _)| k.ends_with(s))
                && rows.iter().any(|r| r.number(k).is_some())
        })
        .ok_or_else(|| format!("no chart: the rows of {name} have no figure with a unit"))?
        .clone();
    let unit = units.iter().find(|(s, _)| key.ends_with(s)).map_or("", |(_, u)| u);
    let bars: Vec<Bar> =
        rows.iter().filter_map(|r| Some(Bar { label: label(r), value: r.number(&key)?, color: 0 })).take(60).collect();
    let positive = bars.iter().all(|b| b.value > 0.0);
    let axis = Axis::numeric(
        &format!("{key} ({unit})"),
        if positive { Scale::Log } else { Scale::Linear },
        bars.iter().map(|b| b.value),
        true,
    );
    let svg = plot::hbars(&format!("{name}: {key}"), &axis, &bars, &[])?;
    Ok(Panel { svg, caption: format!("{key} for each configuration of {name} (the first figure its rows carry).") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::keys::BELOW_FLOOR;
    use crate::results::Results;

    #[test]
    fn an_experiment_nothing_could_measure_says_why() {
        let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        let mut run = Run::new("interference");
        run.rows.push(Row::new().with("wait", "spin").with("placement", "smt").skipped("no SMT siblings"));
        results.runs.push(run);
        let ctx = Context::new(&results);
        assert_eq!(ctx.cpus, 2);
        let figures = all(&ctx);
        assert_eq!(figures.len(), 1);
        assert!(figures[0].panels.is_empty());
        assert!(figures[0].notes.iter().any(|n| n.contains("no SMT siblings")), "{:?}", figures[0].notes);
    }

    #[test]
    fn a_figure_below_its_floor_is_named_under_its_chart() {
        let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        let mut run = Run::new("handoff");
        run.rows.push(Row::new().with("lock", "floor: bare line").with("placement", "core").with("handoff_ns", 70.0));
        run.rows.push(Row::new().with("lock", "ttas:spin").with("placement", "core").with("handoff_ns", 90.0));
        run.rows.push(
            Row::new()
                .with("lock", "ttas:cas")
                .with("placement", "core")
                .with("handoff_ns", 35.0)
                .with(BELOW_FLOOR, "35.0 ns is below the floor's 70.0 ns"),
        );
        results.runs.push(run);
        results.runs[0].param("under_load", "other processes used 23% of the measured CPUs' time");
        let figures = all(&Context::new(&results));
        let caveat = "Caveat [1] (under load) of handoff, said under the verdict: these figures may not hold.";
        assert!(figures[0].notes.iter().any(|n| n == caveat), "{:?}", figures[0].notes);
        assert!(figures[0].notes.iter().all(|n| !n.contains("23%")), "the load is said once, under the verdict");
        let below: Vec<&String> = figures[0].notes.iter().filter(|n| n.starts_with("Below its floor")).collect();
        assert_eq!(below.len(), 1, "{:?}", figures[0].notes);
        assert!(below[0].contains("ttas:cas, core") && below[0].contains("below the floor's 70.0 ns"), "{}", below[0]);
    }
}
