//! How a results document is read for people: the [`Context`] of a document, the
//! [`Panel`]s an experiment draws from its rows (with [`plot`]), the [`advice`] it adds to
//! the recommendation, the [`scorecard`] lines it checks against the seeds, and the
//! [`caveat`]s that say why a figure may not hold.
//!
//! This sits below the experiments, which declare their figures and advice with it, and below
//! the report, which lays them out; it knows no experiment.

pub mod advice;
pub mod caveat;
pub mod plot;
pub mod scorecard;

use crate::results::rows::RowType;
use crate::results::{Results, Row, Run};

/// One chart and the sentence saying what it shows.
pub struct Panel {
    /// Inline SVG.
    pub svg: String,
    /// What the chart shows (plain text).
    pub caption: String,
}

/// What the charts need to know about the whole document.
pub struct Context<'a> {
    /// The document (for charts that combine experiments).
    pub results: &'a Results,
    /// CPUs the runs could use (the oversubscription boundary).
    pub cpus: usize,
}

impl<'a> Context<'a> {
    /// The context of `results`, its CPU count read from the machine's allowed CPU list.
    pub fn new(results: &'a Results) -> Context<'a> {
        let card = results.machine_card();
        let cpus = card
            .allowed_cpus
            .as_deref()
            .map(count_cpu_list)
            .filter(|n| *n > 0)
            .or_else(|| card.logical_cpus.map(|n| n as usize))
            .unwrap_or(1);
        Context { results, cpus }
    }

    /// The runs of `experiment`, in document order.
    pub fn runs_of(&self, experiment: &str) -> Vec<&'a Run> {
        self.results.runs.iter().filter(|r| r.experiment == experiment).collect()
    }

    /// Where `run` stands among the document's runs, if it is one of them.
    pub fn index_of(&self, run: &Run) -> Option<usize> {
        self.results.runs.iter().position(|r| std::ptr::eq(r, run))
    }

    /// Every row of every run of `experiment`.
    pub fn rows_of(&self, experiment: &str) -> Vec<&'a Row> {
        self.results.runs.iter().filter(|r| r.experiment == experiment).flat_map(|r| r.rows.iter()).collect()
    }

    /// Every row of every run of `R`'s experiment, as `R`.
    pub fn rows_as<R: RowType>(&self) -> Vec<R> {
        self.runs_of(R::EXPERIMENT).iter().flat_map(|r| r.rows_as::<R>()).collect()
    }

    /// The measured rows (not skipped) of every run of `R`'s experiment, as `R`.
    pub fn measured_as<R: RowType>(&self) -> Vec<R> {
        measured_as(&self.runs_of(R::EXPERIMENT))
    }

    /// Why `experiment` has no usable rows: not run, or every configuration skipped.
    pub fn missing_reason(&self, experiment: &str) -> String {
        let rows: Vec<&Row> = self.rows_of(experiment);
        if rows.is_empty() {
            return format!("not measured: the {experiment} experiment was not run");
        }
        match rows.iter().find_map(|r| r.skipped_reason()) {
            Some(why) if rows.iter().all(|r| r.is_skipped()) => {
                format!("not measured: {experiment} was skipped ({why})")
            }
            _ => format!("not measured: {experiment} has no rows with the figures this needs"),
        }
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

/// The measured rows (not skipped) of `runs`, as `R`.
pub fn measured_as<R: RowType>(runs: &[&Run]) -> Vec<R> {
    runs.iter().flat_map(|r| r.measured_as::<R>()).collect()
}

/// The distinct values `value` gives `rows`, in first-seen order.
pub fn distinct_by<R, T: PartialEq>(rows: &[R], value: impl Fn(&R) -> Option<T>) -> Vec<T> {
    let mut seen: Vec<T> = Vec::new();
    for v in rows.iter().filter_map(value) {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen
}

/// One line per distinct name `group` gives (first-seen order, coloured by that order), its
/// points from the rows `point` gives one; lines without a point are left out.
pub fn series_by<R>(
    rows: &[R],
    group: impl Fn(&R) -> Option<&str>,
    point: impl Fn(&R) -> Option<(f64, f64)>,
) -> Vec<plot::Series> {
    distinct_by(rows, |r| group(r).map(str::to_string))
        .into_iter()
        .enumerate()
        .map(|(color, name)| plot::Series {
            points: rows.iter().filter(|r| group(r) == Some(name.as_str())).filter_map(&point).collect(),
            name,
            color,
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

/// Rows that were measured.
pub fn measured<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Vec<&'a Row> {
    rows.into_iter().filter(|r| !r.is_skipped()).collect()
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
}
