//! The cost of moving a cache line between two CPUs, as every experiment of a document that
//! measures it saw it: whether the machine held still under the run.
//!
//! On a virtual machine the host may move the virtual CPUs to nearer or further cores while a
//! run goes on, and a line's one-way transfer then costs several times more or less, sometimes
//! within one report (docs/report.md gives the figures measured). Hand-off times, spin
//! wake-ups and contention throughput follow that cost, so figures taken on either side of such
//! a move disagree with one another, and neither is wrong.

use crate::experiments::handoff;
use crate::results::rows::{self, ContentionRow, FloorRow, HandoffRow, InterferenceRow, RowType, WakeupRow};
use crate::results::{transfers_moved, Results, Run};

/// A document's one-way line-transfer figures, in nanoseconds.
pub struct Transfers {
    /// The smallest.
    pub lo: f64,
    /// The largest.
    pub hi: f64,
}

impl Transfers {
    /// The report's checks before and after each run, the floor experiment's ping-pong rows,
    /// the hand-off experiment's bare-line floor, and the contention experiment's checks before
    /// and after each configuration; `None` when the document has none of them.
    pub fn of(results: &Results) -> Option<Transfers> {
        let around_runs = results.runs.iter().flat_map(|run| run.transfers()).flatten();
        let ns: Vec<f64> =
            results.runs.iter().flat_map(in_rows).chain(around_runs).filter(|ns| ns.is_finite() && *ns > 0.0).collect();
        let lo = ns.iter().copied().reduce(f64::min)?;
        let hi = ns.iter().copied().reduce(f64::max)?;
        Some(Transfers { lo, hi })
    }

    /// `"30 ns"` or `"30-60 ns"`.
    pub fn range(&self) -> String {
        if self.hi - self.lo < 0.5 {
            format!("{:.0} ns", self.lo)
        } else {
            format!("{:.0}-{:.0} ns", self.lo, self.hi)
        }
    }

    /// When the largest transfer is more than [`MOVED_FACTOR`](crate::results::MOVED_FACTOR) times the smallest, what that
    /// means for the document's figures, in words.
    pub fn moved(&self) -> Option<String> {
        transfers_moved(self.lo, self.hi).then(|| {
            format!(
                "a line moved in {:.0} ns at one time and {:.0} ns at another: the machine changed under the run (a \
                 virtual machine whose host moved its CPUs?), and figures that follow the transfer (hand-off, spin \
                 wake-ups, contention throughput) disagree with one another for that reason",
                self.lo, self.hi
            )
        })
    }
}

/// The one-way transfers the measured rows of `run` carry: the floor's ping-pong, the
/// hand-off's bare line, and the checks around each configuration of the experiments that
/// measure them ([`rows::Transfers`]).
fn in_rows(run: &Run) -> Vec<f64> {
    fn around<R: RowType + rows::Transfers>(run: &Run) -> Vec<f64> {
        run.measured_as::<R>()
            .iter()
            .filter_map(|r| r.transfers())
            .flat_map(|(before, after)| [before, after])
            .collect()
    }
    match run.experiment.as_str() {
        FloorRow::EXPERIMENT => run
            .measured_as::<FloorRow>()
            .into_iter()
            .filter(|r| r.measure.as_deref() == Some("ping-pong"))
            .filter_map(|r| r.ns)
            .collect(),
        HandoffRow::EXPERIMENT => run
            .measured_as::<HandoffRow>()
            .into_iter()
            .filter(|r| r.lock.as_deref() == Some(handoff::FLOOR_LOCK))
            .filter_map(|r| r.handoff_ns)
            .collect(),
        ContentionRow::EXPERIMENT => around::<ContentionRow>(run),
        InterferenceRow::EXPERIMENT => around::<InterferenceRow>(run),
        WakeupRow::EXPERIMENT => around::<WakeupRow>(run),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Row;
    use serde_json::json;

    fn document(rows: Vec<(&str, Row)>) -> Results {
        let mut results = Results::new(&json!({"allowed_cpus": "0-1"}));
        for (experiment, row) in rows {
            let mut run = Run::new(experiment);
            run.rows.push(row);
            results.runs.push(run);
        }
        results
    }

    fn ping_pong(ns: f64) -> (&'static str, Row) {
        ("floor", Row::new().with("measure", "ping-pong").with("placement", "core").with("ns", ns))
    }

    #[test]
    fn every_experiment_that_moves_a_bare_line_counts_and_nothing_else_does() {
        let doc = document(vec![
            ping_pong(30.0),
            ("handoff", Row::new().with("lock", handoff::FLOOR_LOCK).with("handoff_ns", 245.0)),
            // A lock's hand-off is not a bare line, nor is a skipped ping-pong row.
            ("handoff", Row::new().with("lock", "ttas:spin").with("handoff_ns", 900.0)),
            ("floor", Row::new().with("measure", "ping-pong").with("placement", "smt").skipped("no SMT")),
            (
                "contention",
                Row::new()
                    .with("lock", "std")
                    .with("line_transfer_before_ns", 55.0)
                    .with("line_transfer_after_ns", 28.0),
            ),
        ]);
        let t = Transfers::of(&doc).unwrap();
        assert_eq!((t.lo, t.hi), (28.0, 245.0));
        assert_eq!(t.range(), "28-245 ns");
        let note = t.moved().unwrap();
        assert!(note.contains("28 ns at one time and 245 ns at another"), "{note}");
    }

    #[test]
    fn a_machine_that_held_still_gets_its_range_and_no_note() {
        let t = Transfers::of(&document(vec![ping_pong(30.0), ping_pong(44.0)])).unwrap();
        assert_eq!(t.range(), "30-44 ns");
        assert!(t.moved().is_none(), "44 is within 1.5 times 30");
        assert_eq!(Transfers::of(&document(vec![ping_pong(30.2)])).unwrap().range(), "30 ns");
        assert!(Transfers::of(&document(vec![])).is_none());
    }
}
