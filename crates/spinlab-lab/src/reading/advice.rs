//! The recommendation's vocabulary: a line of [`Advice`], the [`Topic`] it belongs to, and
//! what one experiment contributes ([`Contribution`]).

use super::Context;
use crate::results::{Row, Run};

/// One line of the recommendation.
#[derive(Clone, Debug, PartialEq)]
pub struct Advice {
    /// The situation: `short critical section, threads <= CPUs`.
    pub situation: String,
    /// What to use, or `no recommendation`.
    pub choice: String,
    /// Why, with the measured figure (or why there is none).
    pub why: String,
    /// Why the figures behind the line may not hold, in words: a run they came from measured
    /// under load, or saw the machine change under it ([`caveats_of`]). A line chosen from one
    /// run gets that run's; the recommendation adds those of every run its contribution read
    /// ([`Contribution::reads`]).
    pub caveats: Vec<String>,
    /// The line transfers (before, after, in ns) around the rows the line was chosen from,
    /// where those rows carry their own (contention's): `spinlab compare` says so when two
    /// documents' lines were chosen on a machine that differed.
    pub transfers: Option<(f64, f64)>,
}

impl Advice {
    /// A line that recommends `choice` in `situation`, because of `why`.
    pub fn new(situation: &str, choice: String, why: String) -> Advice {
        Advice { situation: situation.to_string(), choice, why, caveats: Vec::new(), transfers: None }
    }

    /// A line that recommends nothing, saying why.
    pub fn missing(situation: &str, why: String) -> Advice {
        Advice::new(situation, NO_RECOMMENDATION.to_string(), why)
    }
}

/// The choice of a line that recommends nothing.
pub const NO_RECOMMENDATION: &str = "no recommendation";

/// Which of several measured candidates a line names, so that reruns that differ only by noise
/// name the same one.
pub struct Tie<'a, T> {
    /// The first of a fixed preference order among `tied`, else the one with the best figure.
    pub chosen: &'a T,
    /// The candidates whose 95% interval reaches the best figure's (the best among them).
    pub tied: Vec<&'a T>,
}

/// The [`Tie`] among `candidates`, each named and measured by `figure` (value, 95%
/// half-interval), where lower is better; `None` when there is no candidate.
pub fn lowest_tie<'a, T>(
    candidates: &'a [T],
    figure: impl Fn(&T) -> (&str, f64, f64),
    order: &[&str],
) -> Option<Tie<'a, T>> {
    let best = candidates.iter().min_by(|a, b| figure(a).1.total_cmp(&figure(b).1))?;
    let (_, best_value, best_ci) = figure(best);
    let tied: Vec<&T> = candidates
        .iter()
        .filter(|c| {
            let (_, value, ci) = figure(c);
            value - ci <= best_value + best_ci
        })
        .collect();
    let chosen = order.iter().find_map(|&name| tied.iter().copied().find(|c| figure(c).0 == name)).unwrap_or(best);
    Some(Tie { chosen, tied })
}

impl<T> Tie<'_, T> {
    /// `; a, b within the 95% intervals too: a tie on this run, named in the order …`, or
    /// nothing when the chosen candidate stood alone.
    pub fn words(&self, name: impl Fn(&T) -> &str, order: &[&str]) -> String {
        let others: Vec<&str> = self.tied.iter().filter(|c| !std::ptr::eq(**c, self.chosen)).map(|c| name(c)).collect();
        tie_words(&others, order)
    }
}

/// `preferred`, then the names of `measured` not among them, in the order first seen: the
/// order a tie is resolved in, made total so that no tie falls back to the best figure (which,
/// within a tie, is noise). `measured` is the candidates in the order the run measured them.
pub fn total_order<'a>(preferred: &[&'a str], measured: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut order = preferred.to_vec();
    for name in measured {
        if !order.contains(&name) {
            order.push(name);
        }
    }
    order
}

/// `; a, b within the 95% intervals too: a tie on this run, named in the order …` for the
/// candidates that tied with the one a line names (`others`), or nothing when there are none.
pub fn tie_words(others: &[&str], order: &[&str]) -> String {
    if others.is_empty() {
        return String::new();
    }
    format!(
        "; {} within the 95% intervals too: a tie on this run, named in the order {}",
        others.join(", "),
        order.join(", ")
    )
}

/// What a recommendation line is about. The recommendation lists topics in this order,
/// whichever experiment contributes them: locks first, then wait policies, herds, barriers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Topic {
    /// Which lock, per critical-section length and oversubscription.
    Locks,
    /// Which wait policy, by what co-runners and wake-ups cost.
    WaitPolicies,
    /// Which lock when many threads are released at once.
    Herds,
    /// Which barrier between threads with unequal work.
    Barriers,
}

/// One experiment's part of the recommendation.
pub struct Contribution {
    /// Where its lines go.
    pub topic: Topic,
    /// Its lines, in order.
    pub lines: Vec<Advice>,
    /// The experiments whose runs the lines were chosen from, where the lines do not name
    /// their own run (see [`Advice::caveats`]).
    pub reads: &'static [&'static str],
}

/// Why figures from `runs` may not hold: each run's load, and each move of the machine under
/// a run, in words, each said once.
pub fn caveats_of<'a>(runs: impl IntoIterator<Item = &'a Run>) -> Vec<String> {
    let mut caveats = Vec::new();
    for run in runs {
        for caveat in caveats_with(run, run.machine_moved()) {
            if !caveats.contains(&caveat) {
                caveats.push(caveat);
            }
        }
    }
    caveats
}

/// [`caveats_of`] for a line read from one row of `run`: the run's load, and the machine's
/// moves under that row where it carries line transfers of its own ([`Row::machine_moved`]:
/// contention measures a thread count again while the machine moves under it), else under
/// the run.
pub fn caveats_of_row(run: &Run, row: &Row) -> Vec<String> {
    let moved = if row.transfers().is_some() { row.machine_moved() } else { run.machine_moved() };
    caveats_with(run, moved).collect()
}

/// `run`'s load and the machine's move `moved`, in words.
fn caveats_with(run: &Run, moved: Option<String>) -> impl Iterator<Item = String> {
    let said = [load_caveat(run), moved.map(|w| format!("the machine changed under {}: {w}", run.experiment))];
    said.into_iter().flatten()
}

/// `run`'s load alone, in words: the caveat of a figure a line quotes from a run whose line
/// transfer does not bear on it (floor's `yield-forfeit`, two threads on one CPU).
pub fn load_caveat(run: &Run) -> Option<String> {
    run.under_load().map(|w| format!("{} ran under load: {w}", run.experiment))
}

/// Why an experiment has no usable rows: not run, or every configuration skipped.
pub fn missing_reason(ctx: &Context<'_>, experiment: &str) -> String {
    let rows: Vec<&Row> = ctx.rows_of(experiment);
    if rows.is_empty() {
        return format!("not measured: the {experiment} experiment was not run");
    }
    match rows.iter().find_map(|r| r.text("skipped")) {
        Some(why) if rows.iter().all(|r| r.is_skipped()) => format!("not measured: {experiment} was skipped ({why})"),
        _ => format!("not measured: {experiment} has no rows with the figures this needs"),
    }
}

#[cfg(test)]
mod tie_tests {
    use super::*;

    fn figure<'a>(c: &'a (&'static str, f64, f64)) -> (&'a str, f64, f64) {
        (c.0, c.1, c.2)
    }

    #[test]
    fn a_tie_names_the_first_of_the_order_and_a_clear_win_the_best() {
        let order = ["std", "pthread"];
        // 10 ± 1 is best; 10.8 ± 0.5 reaches it; 12 ± 0.5 does not.
        let tied = [("fast", 10.0, 1.0), ("pthread", 10.8, 0.5), ("slow", 12.0, 0.5)];
        let tie = lowest_tie(&tied, figure, &order).unwrap();
        assert_eq!(tie.chosen.0, "pthread");
        assert_eq!(tie.tied.iter().map(|c| c.0).collect::<Vec<_>>(), ["fast", "pthread"]);
        assert_eq!(
            tie.words(|c| c.0, &order),
            "; fast within the 95% intervals too: a tie on this run, named in the order std, pthread"
        );
        let clear = [("fast", 10.0, 0.1), ("std", 11.0, 0.1)];
        let tie = lowest_tie(&clear, figure, &order).unwrap();
        assert_eq!(tie.chosen.0, "fast", "outside the intervals the best is named");
        assert_eq!(tie.words(|c| c.0, &order), "");
        assert!(lowest_tie(&[] as &[(&str, f64, f64)], figure, &order).is_none());
    }

    #[test]
    fn a_total_order_names_the_same_candidate_whichever_was_faster() {
        let order = total_order(&["std"], ["b", "a", "std", "b"]);
        assert_eq!(order, ["std", "b", "a"]);
        // Neither tied candidate is preferred: the one measured first, on both runs.
        for (a, b) in [(10.0, 10.2), (10.2, 10.0)] {
            let tied = [("a", a, 0.5), ("b", b, 0.5)];
            assert_eq!(lowest_tie(&tied, figure, &order).unwrap().chosen.0, "b");
        }
    }
}
