//! The interference charts: one heat map of slowdowns per placement.

use crate::reading::plot;
use crate::reading::{distinct_by, Panel};
use crate::results::rows::InterferenceRow;

pub(super) fn heatmaps(rows: &[InterferenceRow]) -> Vec<Result<Panel, String>> {
    let rows: Vec<&InterferenceRow> = rows.iter().filter(|r| r.slowdown_pct.is_some()).collect();
    // With several waiter counts, the heat maps show the largest.
    let waiters = rows.iter().filter_map(|r| r.waiters).max();
    let rows: Vec<&InterferenceRow> = rows.into_iter().filter(|r| waiters.is_none() || r.waiters == waiters).collect();
    let actives = distinct_by(&rows, |r| r.active.clone());
    let waits = distinct_by(&rows, |r| r.wait.clone());
    let placements = distinct_by(&rows, |r| r.placement.clone());
    if actives.is_empty() || waits.is_empty() || placements.is_empty() {
        return Vec::new();
    }
    let max = rows.iter().filter_map(|r| r.slowdown_pct).fold(5.0f64, |a, b| a.max(b.abs()));
    let waiter_words = waiters.map_or(String::new(), |n| format!(" with {n} waiter(s)"));
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
                                    r.active.as_ref() == Some(active)
                                        && r.wait.as_ref() == Some(w)
                                        && r.placement.as_ref() == Some(p)
                                })
                                .and_then(|r| r.slowdown_pct)
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
