//! Ratios of each row's figure to the reference locks measured in the same run.

use crate::measure::stats::paired_ratio_ci95;
use crate::results::keys::{LOCK, ORIGIN};
use crate::results::Row;

/// Divides `measure` of every row by each reference lock's (rows whose origin is
/// `reference`), as `{prefix}_vs_{reference}`, with `{prefix}_vs_{reference}_ci95` from the
/// rounds both ran (`rounds`: one slice per row, as `paired_ratio_ci95` pairs them).
///
/// Beside the ratio to the best reference, which each experiment writes too: the best one is
/// picked by this run's means, and where two references are level that picks whichever the
/// noise favoured, so a ratio to "the best" reads low (high, for a time) on average, below the
/// ratio to either reference alone (docs/design.md, "Measurement", has the pooled figures).
/// Only a ratio to one named reference pools across runs.
pub fn add_ratios_to_each_reference(rows: &mut [Row], rounds: &[&[f64]], measure: &str, prefix: &str) {
    let references: Vec<(String, f64, &[f64])> = rows
        .iter()
        .zip(rounds)
        .filter(|(row, _)| row.text(ORIGIN) == Some("reference"))
        .filter_map(|(row, rounds)| Some((row.text(LOCK)?.to_string(), row.number(measure)?, *rounds)))
        .filter(|(_, value, _)| *value > 0.0)
        .collect();
    for (row, own) in rows.iter_mut().zip(rounds) {
        let Some(value) = row.number(measure) else { continue };
        for (name, reference, reference_rounds) in &references {
            row.set(&format!("{prefix}_vs_{name}"), value / reference);
            row.set(&format!("{prefix}_vs_{name}_ci95"), paired_ratio_ci95(own, reference_rounds));
        }
    }
}
