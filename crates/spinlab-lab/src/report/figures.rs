//! One figure per experiment, driven by the keys of its rows (docs/results.md): which charts
//! to draw and the sentence saying what each shows. An experiment this file does not know, or
//! whose rows lack the expected keys, still gets a chart of its first figure per row.

use super::plot::{self, Axis, Band, Bar, Point, Scale, Series};
use crate::results::format::{duration_words, number};
use crate::results::{Results, Row, Run};
use std::collections::BTreeMap;

/// One chart and the sentence saying what it shows.
pub struct Panel {
    /// Inline SVG.
    pub svg: String,
    /// What the chart shows (plain text).
    pub caption: String,
}

/// Everything the report shows for one experiment.
pub struct Figure {
    /// The experiment's name.
    pub experiment: String,
    /// The charts.
    pub panels: Vec<Panel>,
    /// Plain-text notes: configurations skipped and why, charts that could not be drawn.
    pub notes: Vec<String>,
}

/// What the charts need to know about the whole document.
pub struct Context<'a> {
    /// The document (for charts that combine experiments).
    pub results: &'a Results,
    /// CPUs the runs could use (the oversubscription boundary).
    pub cpus: usize,
}

impl Context<'_> {
    /// The context of `results`, its CPU count read from the machine's allowed CPU list.
    pub fn new(results: &Results) -> Context<'_> {
        let cpus = results
            .machine
            .get("allowed_cpus")
            .and_then(|v| v.as_str())
            .map(count_cpu_list)
            .filter(|n| *n > 0)
            .or_else(|| results.machine.get("logical_cpus").and_then(|v| v.as_u64()).map(|n| n as usize))
            .unwrap_or(1);
        Context { results, cpus }
    }

    fn rows_of(&self, experiment: &str) -> Vec<&Row> {
        self.results.runs.iter().filter(|r| r.experiment == experiment).flat_map(|r| r.rows.iter()).collect()
    }
}

/// CPUs in a kernel CPU list such as `0-3,8`.
pub fn count_cpu_list(list: &str) -> usize {
    list.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|part| match part.trim().split_once('-') {
            Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => usize::from(part.trim().parse::<usize>().is_ok()),
        })
        .sum()
}

/// The string under `key`.
pub fn text<'a>(row: &'a Row, key: &str) -> Option<&'a str> {
    row.get(key).and_then(|v| v.as_str())
}

/// Rows that were measured.
fn measured<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Vec<&'a Row> {
    rows.into_iter().filter(|r| !r.is_skipped()).collect()
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

/// Distinct values of `key` in first-seen order.
fn distinct(rows: &[&Row], key: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for row in rows {
        let value = match row.get(key) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v) if !v.is_null() => v.to_string(),
            _ => continue,
        };
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    seen
}

fn value_string(row: &Row, key: &str) -> Option<String> {
    match row.get(key)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Null => None,
        v => Some(v.to_string()),
    }
}

/// Notes for the skipped rows of `rows`: one line per reason, with the configurations.
fn skipped_notes(rows: &[&Row]) -> Vec<String> {
    let mut by_reason: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in rows.iter().filter(|r| r.is_skipped()) {
        by_reason.entry(text(row, "skipped").unwrap_or("no reason given").to_string()).or_default().push(label(row));
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

/// The figure for every experiment in the document, in run order (one per experiment name).
pub fn all(ctx: &Context<'_>) -> Vec<Figure> {
    let mut names: Vec<&str> = Vec::new();
    for run in &ctx.results.runs {
        if !names.contains(&run.experiment.as_str()) {
            names.push(&run.experiment);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let runs: Vec<&Run> = ctx.results.runs.iter().filter(|r| r.experiment == name).collect();
            figure(ctx, name, &runs)
        })
        .collect()
}

fn figure(ctx: &Context<'_>, name: &str, runs: &[&Run]) -> Figure {
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
    let drawn: Vec<Result<Panel, String>> = match name {
        "floor" => floor(&rows),
        "contention" => runs.iter().enumerate().flat_map(|(i, run)| contention(ctx, run, i == 0)).collect(),
        "herd" => herd(ctx, &rows),
        "interference" => interference(&rows),
        "handoff" => handoff(&rows),
        "wakeup" => wakeup(ctx, &rows),
        "barrier" => barrier(&rows),
        "spr" => spr(&rows),
        _ => Vec::new(),
    };
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
    fig.notes.extend(skipped_notes(&rows));
    fig
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

fn floor(rows: &[&Row]) -> Vec<Result<Panel, String>> {
    let rows = measured(rows.iter().copied());
    // Ping-pong has a row per CPU pair: one bar per placement (the median pair).
    let mut bars: Vec<Bar> = Vec::new();
    let mut pairs: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for row in &rows {
        let Some(ns) = row.number("ns") else { continue };
        let measure = text(row, "measure").unwrap_or("?");
        let (label, color) = match measure {
            "wait-period" => (format!("wait period: {}", text(row, "wait").unwrap_or("?")), 1),
            "ping-pong" => {
                pairs.entry(text(row, "placement").unwrap_or("?").to_string()).or_default().push(ns);
                continue;
            }
            "futex-wake-to-run" => (format!("futex wake-to-run: {}", text(row, "placement").unwrap_or("?")), 2),
            other => (other.to_string(), 0),
        };
        bars.push(Bar { label, value: ns, color });
    }
    for (placement, mut values) in pairs {
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let label = if n > 1 {
            format!("ping-pong: {placement} (median of {n} pairs)")
        } else {
            format!("ping-pong: {placement}")
        };
        bars.push(Bar { label, value: values[n / 2], color: 2 });
    }
    bars.sort_by_key(|b| b.color);
    let axis = Axis::numeric("nanoseconds per operation (log scale)", Scale::Log, bars.iter().map(|b| b.value), false);
    let legend = [
        ("one thread alone".to_string(), 0),
        ("one wait-loop iteration".to_string(), 1),
        ("between two CPUs".to_string(), 2),
    ];
    vec![plot::hbars("Physical floors", &axis, &bars, &legend).map(|svg| Panel {
        svg,
        caption: "What the machine costs before any lock is involved: a timer read, an uncontended CAS pair, one \
                  iteration of each wait policy's loop, and the one-way hand-over of a cache line or a futex wake-up \
                  between two CPUs; every lock figure below is bounded by these."
            .to_string(),
    })]
}

/// Throughput vs threads per lock, and (for the first run) per-thread fairness bars.
fn contention(ctx: &Context<'_>, run: &Run, fairness: bool) -> Vec<Result<Panel, String>> {
    let rows = measured(run.rows.iter());
    let cs_ns = run.params.get("cs_ns").and_then(|v| v.as_f64());
    let cs = cs_ns.map_or(String::new(), |ns| format!(", critical section {}", duration_words(ns)));
    let placements = distinct(&rows, "placement");
    let mut series = Vec::new();
    let mut threads: Vec<f64> = Vec::new();
    for (i, lock) in distinct(&rows, "lock").iter().enumerate() {
        for placement in &placements {
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| {
                    text(r, "lock") == Some(lock.as_str())
                        && value_string(r, "placement").as_deref() == Some(placement.as_str())
                })
                .filter_map(|r| Some((r.number("threads")?, r.number("throughput_ops_s")?)))
                .collect();
            if points.is_empty() {
                continue;
            }
            threads.extend(points.iter().map(|p| p.0));
            let name = if placements.len() > 1 { format!("{lock} ({placement})") } else { lock.clone() };
            series.push(Series { name, points, color: i });
        }
    }
    let mut out = Vec::new();
    if series.is_empty() {
        return out;
    }
    let x = Axis::log_at("threads (log scale)", &threads);
    let y = Axis::numeric(
        "throughput (acquisitions/s, all threads, log scale)",
        Scale::Log,
        series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
        false,
    );
    let band = Band { from: ctx.cpus as f64, label: format!("oversubscribed: threads > {} CPUs", ctx.cpus) };
    out.push(plot::lines(&format!("Throughput vs threads{cs}"), &x, &y, &series, Some(&band)).map(|svg| Panel {
        svg,
        caption: format!(
            "Lock acquisitions per second of all threads together, per lock and thread count{cs}; the shaded region \
             has more threads than the {} usable CPUs, where a spinning waiter burns the time slice its lock holder \
             needs.",
            ctx.cpus
        ),
    }));
    if fairness {
        out.extend(fairness_panel(ctx, &rows));
    }
    out
}

fn fairness_panel(ctx: &Context<'_>, rows: &[&Row]) -> Option<Result<Panel, String>> {
    let counts: Vec<usize> = {
        let mut c: Vec<usize> = rows.iter().filter_map(|r| r.number("threads")).map(|t| t as usize).collect();
        c.sort_unstable();
        c.dedup();
        c
    };
    // Enough threads to show an imbalance, few enough bars to read.
    let wanted = [2 * ctx.cpus, ctx.cpus];
    let n = wanted
        .iter()
        .copied()
        .find(|w| (2..=8).contains(w) && counts.contains(w))
        .or_else(|| counts.iter().rev().copied().find(|c| (2..=8).contains(c)))?;
    let at: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| r.number("threads") == Some(n as f64) && r.get("per_thread").is_some())
        .collect();
    if at.is_empty() {
        return None;
    }
    let mut categories = Vec::new();
    let mut groups: Vec<(String, Vec<Option<f64>>)> =
        (0..n).map(|t| (format!("thread {}", t + 1), Vec::new())).collect();
    let mut values = Vec::new();
    for row in &at {
        let per: Vec<f64> = row
            .get("per_thread")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
            .unwrap_or_default();
        let mean = per.iter().sum::<f64>() / per.len().max(1) as f64;
        let jain = row.number("jain").map_or(String::new(), |j| format!(" J={j:.2}"));
        categories.push(format!("{}{jain}", text(row, "lock").unwrap_or("?")));
        for (t, group) in groups.iter_mut().enumerate() {
            let share = per.get(t).filter(|_| mean > 0.0).map(|c| c / mean);
            values.extend(share);
            group.1.push(share);
        }
    }
    let y = Axis::numeric("acquisitions / fair share", Scale::Linear, values.into_iter().chain([1.0]), true);
    Some(
        plot::grouped_bars(
            &format!("Per-thread fairness at {n} threads"),
            &categories,
            "lock (J = Jain's index: 1 is even)",
            &y,
            &groups,
            Some((1.0, "fair share")),
        )
        .map(|svg| Panel {
            svg,
            caption: format!(
                "Each thread's acquisitions at {n} threads as a multiple of the even share (1.0): a bar far above \
                 or below the line is a thread the lock favoured or starved; J is Jain's index."
            ),
        }),
    )
}

fn herd(ctx: &Context<'_>, rows: &[&Row]) -> Vec<Result<Panel, String>> {
    let rows = measured(rows.iter().copied());
    let locks = distinct(&rows, "lock");
    let by_lock = |key: &str| -> Vec<Series> {
        locks
            .iter()
            .enumerate()
            .map(|(i, lock)| Series {
                name: lock.clone(),
                points: rows
                    .iter()
                    .filter(|r| text(r, "lock") == Some(lock.as_str()))
                    .filter_map(|r| Some((r.number("threads")?, r.number(key)?)))
                    .collect(),
                color: i,
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let threads: Vec<f64> = rows.iter().filter_map(|r| r.number("threads")).collect();
    let x = Axis::log_at("threads (log scale)", &threads);
    let band = Band { from: ctx.cpus as f64, label: format!("oversubscribed: threads > {} CPUs", ctx.cpus) };
    let mut out = Vec::new();
    for (key, what, caption) in [
        (
            "wall_s",
            "wall time per repetition (s, log scale)",
            "Wall time for the herd (all threads released by a barrier, each taking one lock in turn) per lock and \
             thread count: lower is better; seed 004 found sleeping waiters win once threads outnumber CPUs.",
        ),
        (
            "sys_s",
            "system CPU time per repetition (s, log scale)",
            "System CPU time the herd's threads spent in the kernel (futex calls, sched_yield, preemption): the \
             cost of sleeping and of being descheduled, per lock and thread count.",
        ),
    ] {
        let series = by_lock(key);
        if series.is_empty() {
            continue;
        }
        let y = Axis::numeric(what, Scale::Log, series.iter().flat_map(|s| s.points.iter().map(|p| p.1)), false);
        let title = if key == "wall_s" { "Herd: wall time" } else { "Herd: system time" };
        out.push(
            plot::lines(title, &x, &y, &series, Some(&band)).map(|svg| Panel { svg, caption: caption.to_string() }),
        );
    }
    out
}

/// The placements in closeness order, for charts that pick the most telling one.
pub const PLACEMENT_ORDER: [&str; 5] = ["smt", "same-cpu", "core", "llc", "node"];

fn interference(rows: &[&Row]) -> Vec<Result<Panel, String>> {
    let rows: Vec<&Row> =
        measured(rows.iter().copied()).into_iter().filter(|r| r.number("slowdown_pct").is_some()).collect();
    // With several waiter counts, the heat maps show the largest.
    let waiters = rows.iter().filter_map(|r| r.number("waiters")).fold(f64::NAN, f64::max);
    let rows: Vec<&Row> =
        rows.into_iter().filter(|r| waiters.is_nan() || r.number("waiters") == Some(waiters)).collect();
    let actives = distinct(&rows, "active");
    let waits = distinct(&rows, "wait");
    let placements = distinct(&rows, "placement");
    if actives.is_empty() || waits.is_empty() || placements.is_empty() {
        return Vec::new();
    }
    let max = rows.iter().filter_map(|r| r.number("slowdown_pct")).fold(5.0f64, |a, b| a.max(b.abs()));
    let waiter_words = if waiters.is_nan() { String::new() } else { format!(" with {waiters} waiter(s)") };
    actives
        .iter()
        .map(|active| {
            let values: Vec<Vec<Option<f64>>> = waits
                .iter()
                .map(|w| {
                    placements
                        .iter()
                        .map(|p| {
                            rows.iter()
                                .find(|r| {
                                    text(r, "active") == Some(active.as_str())
                                        && text(r, "wait") == Some(w.as_str())
                                        && text(r, "placement") == Some(p.as_str())
                                })
                                .and_then(|r| r.number("slowdown_pct"))
                        })
                        .collect()
                })
                .collect();
            let height = 110 + 24 * waits.len() as u32;
            let width = 150 + 95 * placements.len() as u32;
            plot::heatmap(&format!("{active}: slowdown %"), &placements, &waits, &values, max, (width, height)).map(|svg| Panel {
                svg,
                caption: format!(
                    "Slowdown (%) of the {active} workload vs running alone{waiter_words}, per wait policy (rows) and \
                     where the waiters run (columns); white is none, deep red {max:.0}%, blue a speed-up, grey not measured."
                ),
            })
        })
        .collect()
}

fn handoff(rows: &[&Row]) -> Vec<Result<Panel, String>> {
    let rows = measured(rows.iter().copied());
    let placements = distinct(&rows, "placement");
    let holds = distinct(&rows, "hold_ns");
    let bars: Vec<Bar> = rows
        .iter()
        .filter_map(|r| {
            let name = text(r, "lock").or_else(|| text(r, "wait"))?;
            let placement = text(r, "placement");
            let ratio = r.number("ratio_to_floor").map_or(String::new(), |x| format!(" (x{} floor)", number(x)));
            let hold = r
                .number("hold_ns")
                .filter(|_| holds.len() > 1)
                .map_or(String::new(), |h| format!(", hold {}", duration_words(h)));
            Some(Bar {
                label: format!("{name}{}{hold}{ratio}", placement.map_or(String::new(), |p| format!(", {p}"))),
                value: r.number("handoff_ns")?,
                color: placement.and_then(|p| placements.iter().position(|q| q == p)).unwrap_or(0),
            })
        })
        .collect();
    if bars.is_empty() {
        return Vec::new();
    }
    let legend: Vec<(String, usize)> = placements.iter().enumerate().map(|(i, p)| (p.clone(), i)).collect();
    let x = Axis::numeric("hand-off latency (ns, log scale)", Scale::Log, bars.iter().map(|b| b.value), false);
    vec![plot::hbars("Lock hand-off latency", &x, &bars, &legend).map(|svg| Panel {
        svg,
        caption: "Time from one thread releasing the lock to the waiting thread holding it, per wait policy (and \
                  placement), with its ratio to the cache-line ping-pong floor: the responsiveness a policy pays for \
                  what it saves its neighbours."
            .to_string(),
    })]
}

/// The wake-up rows of the long computation (the one whose Twork shows interference).
fn wakeup_rows<'a>(rows: &[&'a Row]) -> Vec<&'a Row> {
    let rows = measured(rows.iter().copied());
    let largest = rows.iter().filter_map(|r| r.number("matrix_n")).fold(f64::NAN, f64::max);
    rows.into_iter().filter(|r| largest.is_nan() || r.number("matrix_n") == Some(largest)).collect()
}

/// A wait policy's (name, interference %, wake-up ns).
pub type PolicyPoint = (String, f64, f64);

/// Per wait policy at one placement: (interference %, wake-up ns, what the interference is).
pub fn tradeoff(ctx: &Context<'_>) -> Option<(String, Vec<PolicyPoint>, &'static str)> {
    let wake = ctx.rows_of("wakeup");
    let wake = wakeup_rows(&wake);
    let inter = measured(ctx.rows_of("interference"));
    for placement in PLACEMENT_ORDER {
        // Interference's own slowdowns where it measured these policies here; else the
        // worker's slowdown in the wake-up experiment. Never a mix of the two.
        let mut from_interference = Vec::new();
        let mut from_wakeup = Vec::new();
        for row in wake.iter().filter(|r| text(r, "placement") == Some(placement)) {
            let Some(wait) = text(row, "wait") else { continue };
            let Some(latency) = row.number("twakeup_ns") else { continue };
            let slowdowns: Vec<f64> = inter
                .iter()
                .filter(|r| text(r, "wait") == Some(wait) && text(r, "placement") == Some(placement))
                .filter_map(|r| r.number("slowdown_pct"))
                .collect();
            if !slowdowns.is_empty() {
                from_interference.push((
                    wait.to_string(),
                    slowdowns.iter().sum::<f64>() / slowdowns.len() as f64,
                    latency,
                ));
            }
            if let Some(pct) = row.number("twork_vs_alone_pct") {
                from_wakeup.push((wait.to_string(), pct, latency));
            }
        }
        if from_interference.len() >= 2 {
            return Some((placement.to_string(), from_interference, "mean slowdown of the interference workloads"));
        }
        if from_wakeup.len() >= 2 {
            return Some((
                placement.to_string(),
                from_wakeup,
                "slowdown of the worker's computation while the waiter waits (Twork vs alone)",
            ));
        }
    }
    None
}

fn wakeup(ctx: &Context<'_>, rows: &[&Row]) -> Vec<Result<Panel, String>> {
    let rows = wakeup_rows(rows);
    let mut out = Vec::new();
    for placement in distinct(&rows, "placement") {
        let at: Vec<&Row> = rows.iter().copied().filter(|r| text(r, "placement") == Some(placement.as_str())).collect();
        let at: Vec<&Row> =
            at.into_iter().filter(|r| r.number("twakeup_ns").is_some() || r.number("tcall_ns").is_some()).collect();
        if at.is_empty() {
            continue;
        }
        let categories: Vec<String> = at.iter().map(|r| text(r, "wait").unwrap_or("?").to_string()).collect();
        let groups = vec![
            ("Twakeup: notify to waiter running".to_string(), at.iter().map(|r| r.number("twakeup_ns")).collect()),
            ("Tcall: the notify call itself".to_string(), at.iter().map(|r| r.number("tcall_ns")).collect::<Vec<_>>()),
        ];
        let values = groups.iter().flat_map(|g: &(String, Vec<Option<f64>>)| g.1.iter().flatten().copied());
        let y = Axis::numeric("nanoseconds (log scale)", Scale::Log, values, false);
        out.push(
            plot::grouped_bars(
                &format!("Wake-up and notify cost, waiter at {placement}"),
                &categories,
                "notify primitive",
                &y,
                &groups,
                None,
            )
            .map(|svg| Panel {
                svg,
                caption: format!(
                    "Seed 001's Twakeup (from the notify call to the waiter running again) and Tcall (what the \
                         notify costs the notifier) per primitive, the waiter at {placement} from the worker."
                ),
            }),
        );
    }
    if let Some((placement, points, what)) = tradeoff(ctx) {
        let pts: Vec<Point> = points.iter().map(|(w, x, y)| Point { label: w.clone(), x: *x, y: *y }).collect();
        let x = Axis::numeric(&format!("{what} (%)"), Scale::Linear, pts.iter().map(|p| p.x), true);
        let y = Axis::numeric("wake-up latency Twakeup (ns, log scale)", Scale::Log, pts.iter().map(|p| p.y), false);
        out.push(
            plot::scatter(&format!("The trade-off at {placement}: wake-up latency vs interference"), &x, &y, &pts).map(
                |svg| Panel {
                    svg,
                    caption: format!(
                    "Each wait policy as one point, waiter and worker at {placement}: left is kinder to the thread \
                     doing work (seeds 000/002), low is quicker to respond (seed 001); the best policies sit near the \
                     bottom-left corner."
                ),
                },
            ),
        );
    }
    out
}

fn barrier(rows: &[&Row]) -> Vec<Result<Panel, String>> {
    let rows: Vec<&Row> =
        measured(rows.iter().copied()).into_iter().filter(|r| r.number("completion_s").is_some()).collect();
    let barriers = distinct(&rows, "barrier");
    let series: Vec<Series> = barriers
        .iter()
        .enumerate()
        .map(|(i, b)| Series {
            name: b.clone(),
            points: rows
                .iter()
                .filter(|r| text(r, "barrier") == Some(b.as_str()))
                .filter_map(|r| Some((r.number("light_units")?, r.number("completion_s")?)))
                .collect(),
            color: i,
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if series.is_empty() {
        return Vec::new();
    }
    let x = Axis::numeric(
        "light thread's work (units of 10x10 multiplies; the heavy thread does 10)",
        Scale::Linear,
        series.iter().flat_map(|s| s.points.iter().map(|p| p.0)),
        true,
    );
    let y = Axis::numeric(
        "completion time (s)",
        Scale::Linear,
        series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
        true,
    );
    vec![plot::lines("Barrier: completion time vs light-thread load", &x, &y, &series, None).map(|svg| Panel {
        svg,
        caption: "Seed 001's asymmetric pseudo-benchmark: how long the heavy and light threads take to finish as the \
                  light thread's work grows towards the heavy thread's, per barrier; a barrier whose waiter steals \
                  from its sibling stretches the heavy thread's time."
            .to_string(),
    })]
}

fn spr(rows: &[&Row]) -> Vec<Result<Panel, String>> {
    let rows: Vec<&Row> =
        measured(rows.iter().copied()).into_iter().filter(|r| r.number("speedup").is_some()).collect();
    let apps = distinct(&rows, "app");
    let barriers = distinct(&rows, "barrier");
    if apps.is_empty() || barriers.is_empty() {
        return Vec::new();
    }
    let groups: Vec<(String, Vec<Option<f64>>)> = barriers
        .iter()
        .map(|b| {
            (
                b.clone(),
                apps.iter()
                    .map(|a| {
                        rows.iter()
                            .find(|r| text(r, "app") == Some(a.as_str()) && text(r, "barrier") == Some(b.as_str()))
                            .and_then(|r| r.number("speedup"))
                    })
                    .collect(),
            )
        })
        .collect();
    let y = Axis::numeric(
        "speedup over the worker alone (x)",
        Scale::Linear,
        groups.iter().flat_map(|g| g.1.iter().flatten().copied()).chain([1.0]),
        true,
    );
    vec![plot::grouped_bars(
        "Speculative precomputation: speedup per barrier",
        &apps,
        "application",
        &y,
        &groups,
        Some((1.0, "no gain")),
    )
    .map(|svg| Panel {
        svg,
        caption: "Seed 001 §4.4: a helper thread prefetches ahead of the worker and is throttled by a barrier; \
                      above 1.0 the helper pays for itself, and the barrier's wait policy decides how much of the \
                      worker's core it takes."
            .to_string(),
    })]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_count_ranges_and_singles() {
        assert_eq!(count_cpu_list("0-3,8"), 5);
        assert_eq!(count_cpu_list("0"), 1);
        assert_eq!(count_cpu_list(""), 0);
    }

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
}
