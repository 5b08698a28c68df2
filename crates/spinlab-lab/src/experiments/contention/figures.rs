//! The contention charts: throughput against threads, and the fairness panel beside it.

use super::COLLAPSE_DRAIN;
use crate::reading::plot::{self, Axis, Band, Scale, Series};
use crate::reading::{distinct_by, Context, Panel};
use crate::results::format::{number, section_words};
use crate::results::rows::ContentionRow;
use crate::results::Run;

/// A contention run's critical section (`--cs-ns`), in nanoseconds, where its parameters say.
pub(super) fn cs_ns(run: &Run) -> Option<f64> {
    run.known_params().cs_ns
}

/// The contention runs the recommendation and the scorecard read, by critical section.
pub(super) struct Sections<'a> {
    /// The first run with nothing in the critical section but its shared lines.
    pub(super) empty: Option<&'a Run>,
    /// The run with the shortest critical section that has work in it.
    pub(super) shortest: Option<&'a Run>,
    /// The run with the longest critical section of [`LONG_SECTION_NS`] or more, unless it
    /// is `shortest` itself.
    pub(super) longest: Option<&'a Run>,
}

/// Where a critical section counts as long for the recommendation.
pub(super) const LONG_SECTION_NS: f64 = 1000.0;

pub(super) fn sections<'a>(runs: &[&'a Run]) -> Sections<'a> {
    // A run whose parameters do not say its section is in none of the three.
    let with_cs: Vec<(&Run, f64)> = runs.iter().filter_map(|r| Some((*r, cs_ns(r)?))).collect();
    let by_cs = |a: &&(&Run, f64), b: &&(&Run, f64)| a.1.total_cmp(&b.1);
    let empty = with_cs.iter().find(|r| r.1 == 0.0).map(|r| r.0);
    let shortest = with_cs.iter().filter(|r| r.1 > 0.0).min_by(by_cs).map(|r| r.0);
    let longest = with_cs
        .iter()
        .filter(|r| r.1 >= LONG_SECTION_NS)
        .max_by(by_cs)
        .map(|r| r.0)
        .filter(|l| shortest.is_none_or(|s| !std::ptr::eq(s, *l)));
    Sections { empty, shortest, longest }
}

/// Throughput vs threads per lock, and (for the first run) per-thread fairness bars.
pub(super) fn throughput_chart(ctx: &Context<'_>, run: &Run, fairness: bool) -> Vec<Result<Panel, String>> {
    let rows = run.measured_as::<ContentionRow>();
    let cs = cs_ns(run).map_or(String::new(), |ns| format!(", {}", section_words(ns)));
    let placements = distinct_by(&rows, |r| r.placement.clone());
    let mut series = Vec::new();
    let mut threads: Vec<f64> = Vec::new();
    for (i, lock) in distinct_by(&rows, |r| r.lock.clone()).iter().enumerate() {
        for placement in &placements {
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.lock.as_ref() == Some(lock) && r.placement.as_ref() == Some(placement))
                .filter_map(|r| Some((r.threads? as f64, r.throughput_ops_s?)))
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
    let collapses = collapse_words(&rows);
    out.push(plot::lines(&format!("Throughput vs threads{cs}"), &x, &y, &series, Some(&band)).map(|svg| Panel {
        svg,
        caption: format!(
            "Lock acquisitions per second of all threads together, per lock and thread count{cs}; the shaded region \
             has more threads than the {} usable CPUs, where a spinning waiter burns the time slice its lock holder \
             needs.{collapses}",
            ctx.cpus
        ),
    }));
    if fairness {
        out.extend(fairness_panel(ctx, &rows));
    }
    out
}

/// The caption's sentence on the rows marked `collapsed`, or nothing where none was.
pub(super) fn collapse_words(rows: &[ContentionRow]) -> String {
    let mut collapsed: Vec<(String, Vec<String>)> = Vec::new();
    for row in rows.iter().filter(|r| r.collapsed == Some(true)) {
        let (Some(lock), Some(threads)) = (&row.lock, row.threads.map(|t| t.to_string())) else { continue };
        let threads = match row.drain_max_ms {
            Some(ms) => format!("{threads} ({} ms)", number(ms)),
            None => threads,
        };
        match collapsed.iter_mut().find(|(l, _)| l == lock) {
            Some((_, counts)) => counts.push(threads),
            None => collapsed.push((lock.to_string(), vec![threads])),
        }
    }
    if collapsed.is_empty() {
        return String::new();
    }
    let each: Vec<String> =
        collapsed.iter().map(|(lock, counts)| format!("{lock} at {} threads", counts.join(", "))).collect();
    format!(
        " Collapsed, and so not repeated further: {}. A lock that hands over in order, to a waiter that may \
         not be running, serves its threads one time slice at a time once they outnumber the CPUs: after a \
         window closed, its threads took longer than {} ms (or the window, where that is longer) to finish one \
         more acquisition each (the longest such drain in brackets).",
        each.join("; "),
        COLLAPSE_DRAIN.as_millis()
    )
}

pub(super) fn fairness_panel(ctx: &Context<'_>, rows: &[ContentionRow]) -> Option<Result<Panel, String>> {
    let counts: Vec<usize> = {
        let mut c: Vec<usize> = rows.iter().filter_map(|r| r.threads).map(|t| t as usize).collect();
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
    let at: Vec<(&ContentionRow, &[u64])> = rows
        .iter()
        .filter(|r| r.threads == Some(n as u64))
        .filter_map(|r| Some((r, r.per_thread.as_deref()?)))
        .collect();
    if at.is_empty() {
        return None;
    }
    let mut categories = Vec::new();
    let mut groups: Vec<(String, Vec<Option<f64>>)> =
        (0..n).map(|t| (format!("thread {}", t + 1), Vec::new())).collect();
    let mut values = Vec::new();
    for (row, per) in &at {
        let per: Vec<f64> = per.iter().map(|&c| c as f64).collect();
        let mean = per.iter().sum::<f64>() / per.len().max(1) as f64;
        let jain = row.jain.get().map_or(String::new(), |j| format!(" J={j:.2}"));
        categories.push(format!("{}{jain}", row.lock.as_deref().unwrap_or("?")));
        for (t, group) in groups.iter_mut().enumerate() {
            let share = per.get(t).filter(|_| mean > 0.0).map(|c| c / mean);
            values.extend(share);
            group.1.push(share);
        }
    }
    let y = Axis::numeric("acquisitions / fair share", Scale::Linear, values.into_iter().chain([1.0]), true);
    let no_lock = at.iter().find_map(|(r, _)| r.jain_no_lock).map_or(String::new(), |j| {
        format!(" The same threads running the same work with no lock (the scheduler alone) had J={j:.2}.")
    });
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
                 or below the line is a thread the lock favoured or starved; J is Jain's index.{no_lock}"
            ),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_names_each_collapsed_lock_with_its_thread_counts_and_drains() {
        let row = |lock: &str, threads: u64, drain_ms: Option<f64>| ContentionRow {
            lock: Some(lock.to_string()),
            threads: Some(threads),
            drain_max_ms: drain_ms,
            collapsed: drain_ms.map(|_| true),
            ..ContentionRow::default()
        };
        let rows = [
            row("ticket:spin", 4, Some(130.0)),
            row("default", 4, None),
            row("ticket:spin", 8, Some(420.0)),
            row("fair:spin", 16, Some(2500.0)),
            ContentionRow { collapsed: Some(false), ..row("default", 16, None) },
        ];
        let words = collapse_words(&rows);
        assert!(
            words.contains("ticket:spin at 4 (130 ms), 8 (420 ms) threads; fair:spin at 16 (2500 ms) threads."),
            "{words}"
        );
        assert!(!words.contains("default"), "{words}");
        assert!(words.contains("longer than 100 ms"), "{words}");
        let calm = [row("default", 4, None), row("ticket:spin", 2, None)];
        assert_eq!(collapse_words(&calm), "");
    }
}
