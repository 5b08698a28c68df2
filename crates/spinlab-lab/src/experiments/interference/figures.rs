//! The interference charts: one heat map of slowdowns per placement.

use super::{ACTIVE, SLOWDOWN_PCT};
use crate::reading::plot;
use crate::reading::{distinct, measured, Panel};
use crate::results::keys::{PLACEMENT, WAIT};
use crate::results::Row;

pub(super) fn heatmaps(rows: &[&Row]) -> Vec<Result<Panel, String>> {
    let rows: Vec<&Row> =
        measured(rows.iter().copied()).into_iter().filter(|r| r.number(SLOWDOWN_PCT).is_some()).collect();
    // With several waiter counts, the heat maps show the largest.
    let waiters = rows.iter().filter_map(|r| r.number("waiters")).fold(f64::NAN, f64::max);
    let rows: Vec<&Row> =
        rows.into_iter().filter(|r| waiters.is_nan() || r.number("waiters") == Some(waiters)).collect();
    let actives = distinct(&rows, ACTIVE);
    let waits = distinct(&rows, WAIT);
    let placements = distinct(&rows, PLACEMENT);
    if actives.is_empty() || waits.is_empty() || placements.is_empty() {
        return Vec::new();
    }
    let max = rows.iter().filter_map(|r| r.number(SLOWDOWN_PCT)).fold(5.0f64, |a, b| a.max(b.abs()));
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
                                    r.text(ACTIVE) == Some(active.as_str())
                                        && r.text(WAIT) == Some(w.as_str())
                                        && r.text(PLACEMENT) == Some(p.as_str())
                                })
                                .and_then(|r| r.number(SLOWDOWN_PCT))
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
