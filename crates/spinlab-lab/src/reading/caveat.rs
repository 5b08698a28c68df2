//! Why a figure may not hold: a [`Caveat`], and which of them apply to a whole pass.
//!
//! A run measured under load, or one the machine changed under (its line transfer before and
//! after it lie apart), casts doubt on every figure read from it. Such a caveat belongs to the
//! pass, the run, and the report says it once, there ([`pass_caveats`]); a recommendation
//! line or a scorecard claim read from that run only points to it. A caveat of the rows a
//! figure was read from (contention measures each configuration again while the machine moves
//! under it, and its rows carry their own transfers) belongs to that figure alone and is said
//! beside it in full.

use super::Context;
use crate::results::format::section_words;
use crate::results::rows::Transfers;
use crate::results::{Results, Run};

/// What a caveat doubts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Concern {
    /// Other work took a share of the CPUs while the run measured (`under_load`).
    Load,
    /// The machine moved a cache line at another cost before and after the run or rows.
    Moved,
}

/// One reason figures may not hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Caveat {
    /// The run it applies to in whole, by its place in the document's runs; `None` when it is
    /// of the rows a figure was read from alone.
    pub pass: Option<usize>,
    /// What it doubts.
    pub concern: Concern,
    /// The experiment of the run.
    pub experiment: String,
    /// The measured words: the load, or the two transfers.
    pub words: String,
}

impl Caveat {
    /// The caveat in one sentence: `contention ran under load: …`.
    pub fn text(&self) -> String {
        match self.concern {
            Concern::Load => format!("{} ran under load: {}", self.experiment, self.words),
            Concern::Moved => format!("the machine changed under {}: {}", self.experiment, self.words),
        }
    }

    /// What it doubts, in two or three words: `under load`, `machine moved`.
    pub fn brief(&self) -> &'static str {
        match self.concern {
            Concern::Load => "under load",
            Concern::Moved => "machine moved",
        }
    }
}

/// The caveats of the whole of `run`, the `pass`-th of its document: its load, then the
/// machine's move under it.
pub fn of_run(pass: usize, run: &Run) -> Vec<Caveat> {
    let load = run.under_load().map(|w| (Concern::Load, w.to_string()));
    let moved = run.machine_moved().map(|w| (Concern::Moved, w));
    [load, moved]
        .into_iter()
        .flatten()
        .map(|(concern, words)| Caveat { pass: Some(pass), concern, experiment: run.experiment.clone(), words })
        .collect()
}

/// Every caveat of a whole pass in `results`, in run order: the list the report says once,
/// numbered from 1 ([`number`]).
pub fn pass_caveats(results: &Results) -> Vec<Caveat> {
    results.runs.iter().enumerate().flat_map(|(i, run)| of_run(i, run)).collect()
}

/// The number of `caveat` in `all` (from [`pass_caveats`]), counting from 1; `None` for a
/// caveat of rows alone.
pub fn number(all: &[Caveat], caveat: &Caveat) -> Option<usize> {
    caveat.pass?;
    all.iter().position(|c| c == caveat).map(|i| i + 1)
}

/// A pass by name: its experiment, and its critical section where it has one
/// (`contention (critical section 100 ns)`).
pub fn pass_name(run: &Run) -> String {
    match run.known_params().cs_ns {
        Some(ns) => format!("{} ({})", run.experiment, section_words(ns)),
        None => run.experiment.clone(),
    }
}

/// The caveats of every one of `runs`, each said once.
pub fn of_runs<'a>(ctx: &Context<'_>, runs: impl IntoIterator<Item = &'a Run>) -> Vec<Caveat> {
    let mut caveats: Vec<Caveat> = Vec::new();
    for run in runs {
        for caveat in ctx.index_of(run).map_or_else(Vec::new, |i| of_run(i, run)) {
            if !caveats.contains(&caveat) {
                caveats.push(caveat);
            }
        }
    }
    caveats
}

/// The caveats of a figure read from `row` of `run`: the run's load, and the machine's moves
/// under that row where it carries line transfers of its own ([`Transfers::machine_moved`]),
/// else under the run.
pub fn of_row(ctx: &Context<'_>, run: &Run, row: &impl Transfers) -> Vec<Caveat> {
    let mut caveats = of_runs(ctx, [run]);
    if row.transfers().is_some() {
        caveats.retain(|c| c.concern != Concern::Moved);
        caveats.extend(row.machine_moved().map(|words| Caveat {
            pass: None,
            concern: Concern::Moved,
            experiment: run.experiment.clone(),
            words,
        }));
    }
    caveats
}

/// `run`'s load alone: the caveat of a figure quoted from a run whose line transfer does not
/// bear on it (floor's `yield-forfeit`, two threads on one CPU).
pub fn load_of(ctx: &Context<'_>, run: &Run) -> Option<Caveat> {
    of_runs(ctx, [run]).into_iter().find(|c| c.concern == Concern::Load)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::rows::ContentionRow;
    use crate::results::{Row, TRANSFER_AFTER_NS, TRANSFER_BEFORE_NS, UNDER_LOAD};

    #[test]
    fn a_pass_caveat_is_numbered_once_and_a_rows_own_is_not_numbered() {
        let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        let mut quiet = Run::new("floor");
        quiet.param(TRANSFER_BEFORE_NS, 50.0).param(TRANSFER_AFTER_NS, 55.0);
        let mut busy = Run::new("contention");
        busy.param("cs_ns", 100).param(UNDER_LOAD, "other processes used 35% of the CPUs");
        busy.param(TRANSFER_BEFORE_NS, 40.0).param(TRANSFER_AFTER_NS, 200.0);
        busy.rows.push(Row::new().with(TRANSFER_BEFORE_NS, 45.0).with(TRANSFER_AFTER_NS, 230.0));
        results.runs.extend([quiet, busy]);
        let all = pass_caveats(&results);
        assert_eq!(
            all.iter().map(|c| (c.pass, c.concern)).collect::<Vec<_>>(),
            [(Some(1), Concern::Load), (Some(1), Concern::Moved)]
        );
        assert_eq!(all[0].text(), "contention ran under load: other processes used 35% of the CPUs");
        assert_eq!(pass_name(&results.runs[1]), "contention (critical section 100 ns)");
        let ctx = Context::new(&results);
        let run = &results.runs[1];
        // Twice the same run: each caveat once.
        assert_eq!(of_runs(&ctx, [run, run]), all);
        // The row carries its own transfers: its own move replaces the run's, unnumbered.
        let row = of_row(&ctx, run, &run.rows_as::<ContentionRow>()[0]);
        assert_eq!(row.len(), 2, "{row:?}");
        assert_eq!(number(&all, &row[0]), Some(1));
        assert!(row[1].pass.is_none() && row[1].words.contains("230 ns"), "{row:?}");
        assert_eq!(number(&all, &row[1]), None);
        assert_eq!(load_of(&ctx, run).as_ref(), Some(&all[0]));
    }
}
