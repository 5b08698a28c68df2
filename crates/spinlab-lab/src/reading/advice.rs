//! The recommendation's vocabulary: a line of [`Advice`], with the [`Figure`] it was chosen
//! by and its [`RunnerUp`]; the [`Topic`] it belongs to, and what one experiment contributes
//! ([`Contribution`]); and the [`Tie`] rule that makes reruns which differ only by noise name
//! the same candidate.
//!
//! The figure, the runner-up and the margin between them are set by the code that chooses, from
//! the estimates it chose by; the report lays them out as the verdict and folds `why`, the
//! reasoning in words, beneath.

use super::caveat::Caveat;
use super::scorecard::Estimate;
use crate::results::format::{duration_words, number};
use crate::results::recommendation::{FigureEntry, MarginEntry, RecommendationLine, RunnerUpEntry};

/// One line of the recommendation.
#[derive(Clone, Debug, PartialEq)]
pub struct Advice {
    /// The situation: `short critical section, threads <= CPUs`.
    pub situation: String,
    /// The situation in a few words, for the terminal's verdict: `short cs, <= CPUs`.
    pub brief: String,
    /// What to use, or `no recommendation`.
    pub choice: String,
    /// The choice's figure, where it was measured.
    pub figure: Option<Figure>,
    /// The best of the other candidates, and how close it came.
    pub runner_up: Option<RunnerUp>,
    /// Why, with the measured figures, the ties and their order (or why there is no figure).
    pub why: String,
    /// Why the figures behind the line may not hold ([`Caveat`]). A line chosen from one run
    /// gets that run's; the recommendation adds those of every run its contribution read
    /// ([`Contribution::reads`]).
    pub caveats: Vec<Caveat>,
    /// The line transfers (before, after, in ns) around the rows the line was chosen from,
    /// where those rows carry their own (contention's): `spinlab compare` says so when two
    /// documents' lines were chosen on a machine that differed.
    pub transfers: Option<(f64, f64)>,
}

impl Advice {
    /// A line that recommends `choice` in `situation` (`brief`: in a few words), because of
    /// `why`.
    pub fn new(situation: &str, brief: &str, choice: String, why: String) -> Advice {
        Advice {
            situation: situation.to_string(),
            brief: brief.to_string(),
            choice,
            figure: None,
            runner_up: None,
            why,
            caveats: Vec::new(),
            transfers: None,
        }
    }

    /// A line that recommends nothing, saying why.
    pub fn missing(situation: &str, brief: &str, why: String) -> Advice {
        Advice::new(situation, brief, NO_RECOMMENDATION.to_string(), why)
    }

    /// The line with the figure it was chosen by, and the candidate that came next.
    pub fn chosen_by(mut self, figure: Figure, runner_up: Option<RunnerUp>) -> Advice {
        self.figure = Some(figure);
        self.runner_up = runner_up;
        self
    }

    /// The line as a results.json entry.
    pub fn entry(&self) -> RecommendationLine {
        RecommendationLine {
            situation: self.situation.clone(),
            choice: self.choice.clone(),
            figure: self.figure.as_ref().map(Figure::entry),
            runner_up: self.runner_up.as_ref().map(|r| RunnerUpEntry {
                name: r.name.clone(),
                figure: r.figure.entry(),
                margin: r.margin.entry(),
            }),
            why: self.why.clone(),
            caveats: self.caveats.iter().map(Caveat::text).collect(),
        }
    }
}

/// What a [`Figure`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Lock acquisitions per second, all threads together.
    Acquisitions,
    /// Seconds.
    Seconds,
    /// Nanoseconds.
    Nanoseconds,
    /// A percentage.
    Percent,
}

impl Unit {
    /// Its name in results.json.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Acquisitions => "acquisitions/s",
            Unit::Seconds => "s",
            Unit::Nanoseconds => "ns",
            Unit::Percent => "%",
        }
    }
}

/// A figure a line was chosen by: the estimate, its unit, and where it was measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// The value and its 95% interval.
    pub value: Estimate,
    /// What it counts.
    pub unit: Unit,
    /// Where it was measured, in words: `at 2 threads`, `wall at 4 threads`.
    pub at: String,
}

impl Figure {
    /// A figure of `value` ± `ci95` in `unit`, measured `at`.
    pub fn new(value: Estimate, unit: Unit, at: impl Into<String>) -> Figure {
        Figure { value, unit, at: at.into() }
    }

    /// The value with its unit: `2.32M acquisitions/s`, `130 µs`, `0.4%`.
    pub fn value_words(&self) -> String {
        let v = self.value.value;
        match self.unit {
            Unit::Acquisitions => format!("{} acquisitions/s", number(v)),
            Unit::Seconds => duration_words(v * 1e9),
            Unit::Nanoseconds => duration_words(v),
            Unit::Percent => format!("{v:.1}%"),
        }
    }

    /// The value in as few characters as it reads: `2.32M/s`, `130 µs`, `0.4%`.
    pub fn brief(&self) -> String {
        match self.unit {
            Unit::Acquisitions => format!("{}/s", number(self.value.value)),
            _ => self.value_words(),
        }
    }

    /// The value and where it was measured: `2.32M acquisitions/s at 2 threads`.
    pub fn words(&self) -> String {
        if self.at.is_empty() {
            self.value_words()
        } else {
            format!("{} {}", self.value_words(), self.at)
        }
    }

    fn entry(&self) -> FigureEntry {
        // Seconds and nanoseconds keep their unit in results.json; the words scale them.
        FigureEntry {
            value: self.value.value,
            // No interval, or an unbounded one, is written as 0 (docs/results.md).
            ci95: match self.value.ci95() {
                Some(ci95) if ci95.is_finite() => ci95,
                _ => 0.0,
            },
            unit: self.unit.name().to_string(),
            text: self.words(),
        }
    }
}

/// The candidate that came next to a line's choice.
#[derive(Clone, Debug, PartialEq)]
pub struct RunnerUp {
    /// Its name.
    pub name: String,
    /// Its figure, measured as the choice's was.
    pub figure: Figure,
    /// How much better the choice measured than it.
    pub margin: Margin,
}

/// How a [`Margin`] compares two figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compared {
    /// As a ratio, oriented so that above 1 the choice measured better.
    Times,
    /// As the difference of two percentages, above 0 where the choice measured better.
    Points,
}

/// How much better a line's choice measured than its runner-up.
#[derive(Clone, Debug, PartialEq)]
pub struct Margin {
    /// The ratio or the difference, with its 95% interval.
    pub by: Estimate,
    /// Which of the two.
    pub compared: Compared,
    /// Whether the two tie on this run: within the 95% intervals, so a fixed order chose.
    pub tied: bool,
}

impl Margin {
    /// The choice's figure over the other's, where higher is better (throughput); `None`
    /// when the other's is not positive.
    pub fn higher(choice: &Estimate, other: &Estimate, tied: bool) -> Option<Margin> {
        Some(Margin { by: choice.ratio(other)?, compared: Compared::Times, tied })
    }

    /// The other's figure over the choice's, where lower is better (a time).
    pub fn lower(choice: &Estimate, other: &Estimate, tied: bool) -> Option<Margin> {
        Some(Margin { by: other.ratio(choice)?, compared: Compared::Times, tied })
    }

    /// The other's percentage less the choice's, where lower is better: a ratio of two
    /// slowdowns near zero says nothing, their difference does.
    pub fn points(choice: &Estimate, other: &Estimate, tied: bool) -> Margin {
        let by = Estimate::within(other.value - choice.value, choice.half_width().hypot(other.half_width()));
        Margin { by, compared: Compared::Points, tied }
    }

    fn value_words(&self) -> String {
        match self.compared {
            Compared::Times => format!("{}x", number(self.by.value)),
            Compared::Points => format!("{:+.1} points", self.by.value),
        }
    }

    fn interval_words(&self) -> String {
        if !self.by.bounded() {
            return ", interval unbounded".to_string();
        }
        if self.by.half_width() <= 0.0 {
            return String::new();
        }
        match self.compared {
            Compared::Times => format!(" [{}, {}]", number(self.by.low()), number(self.by.high())),
            Compared::Points => format!(" [{:+.1}, {:+.1}]", self.by.low(), self.by.high()),
        }
    }

    /// `0.97x, within the interval`, `1.4x [1.3, 1.5]`, `+2.1 points [+0.4, +3.8]`.
    pub fn words(&self) -> String {
        if self.tied {
            format!("{}, within the interval", self.value_words())
        } else {
            format!("{}{}", self.value_words(), self.interval_words())
        }
    }

    /// [`Margin::words`] in fewer characters: `0.97x, tied`.
    pub fn brief(&self) -> String {
        if self.tied {
            format!("{}, tied", self.value_words())
        } else {
            self.words()
        }
    }

    fn entry(&self) -> MarginEntry {
        MarginEntry {
            unit: match self.compared {
                Compared::Times => "x",
                Compared::Points => "points",
            }
            .to_string(),
            value: self.by.value,
            ci95: self.by.bounded().then_some(self.by.half_width()),
            tied: self.tied,
            text: self.words(),
        }
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
    /// The best of the candidates other than `chosen`, where there is another.
    pub runner_up: Option<&'a T>,
}

/// The [`Tie`] among `candidates`, each named and measured by `figure` (value, 95%
/// half-interval), where lower is better; `None` when there is no candidate.
pub fn lowest_tie<'a, T>(
    candidates: &'a [T],
    figure: impl Fn(&T) -> (&str, Estimate),
    order: &[&str],
) -> Option<Tie<'a, T>> {
    let lowest = |a: &&T, b: &&T| figure(a).1.value.total_cmp(&figure(b).1.value);
    let best = candidates.iter().min_by(lowest)?;
    let best_high = figure(best).1.high();
    let tied: Vec<&T> = candidates.iter().filter(|c| figure(c).1.low() <= best_high).collect();
    let chosen = order.iter().find_map(|&name| tied.iter().copied().find(|c| figure(c).0 == name)).unwrap_or(best);
    let runner_up = candidates.iter().filter(|c| !std::ptr::eq(*c, chosen)).min_by(lowest);
    Some(Tie { chosen, tied, runner_up })
}

impl<T> Tie<'_, T> {
    /// Whether `candidate` is one of the tied.
    pub fn ties(&self, candidate: &T) -> bool {
        self.tied.iter().any(|t| std::ptr::eq(*t, candidate))
    }

    /// The runner-up as a line shows it, lower being better: its name, its figure (`figure`
    /// gives each candidate's), and how much better the chosen one measured; `None` when
    /// there is no other candidate or the chosen one's figure is not positive.
    pub fn runner_up_by(&self, name: impl Fn(&T) -> &str, figure: impl Fn(&T) -> Figure) -> Option<RunnerUp> {
        let other = self.runner_up?;
        let (chosen, theirs) = (figure(self.chosen), figure(other));
        let margin = Margin::lower(&chosen.value, &theirs.value, self.ties(other))?;
        Some(RunnerUp { name: name(other).to_string(), figure: theirs, margin })
    }

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

#[cfg(test)]
mod tie_tests {
    use super::*;

    fn figure<'a>(c: &'a (&'static str, f64, f64)) -> (&'a str, Estimate) {
        (c.0, Estimate::within(c.1, c.2))
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
    fn the_runner_up_is_the_best_other_and_its_margin_says_whether_it_tied() {
        let order = ["std", "pthread"];
        let ns = |c: &(&str, f64, f64)| Figure::new(Estimate::within(c.1, c.2), Unit::Nanoseconds, "");
        // pthread is chosen by the order; the faster `fast` tied with it and comes next.
        let tied = [("fast", 10.0, 1.0), ("pthread", 10.8, 0.5), ("slow", 12.0, 0.5)];
        let tie = lowest_tie(&tied, figure, &order).unwrap();
        let next = tie.runner_up_by(|c| c.0, ns).unwrap();
        assert_eq!(next.name, "fast");
        assert!(next.margin.tied && next.margin.by.value < 1.0, "{:?}", next.margin);
        assert_eq!(next.margin.words(), "0.926x, within the interval");
        assert_eq!(next.margin.brief(), "0.926x, tied");
        // A clear win: the ratio with its interval, the runner-up's time over the choice's.
        let clear = [("fast", 10.0, 0.1), ("std", 14.0, 0.1)];
        let tie = lowest_tie(&clear, figure, &order).unwrap();
        let next = tie.runner_up_by(|c| c.0, ns).unwrap();
        assert_eq!((next.name.as_str(), next.margin.tied), ("std", false));
        assert_eq!(next.margin.words(), "1.4x [1.38, 1.42]");
        assert_eq!(next.figure.value_words(), "14 ns");
        let alone = [("fast", 10.0, 0.1)];
        assert!(lowest_tie(&alone, figure, &order).unwrap().runner_up_by(|c| c.0, ns).is_none());
        // Percentages near zero compare by their difference.
        let points = Margin::points(&Estimate::within(0.2, 0.3), &Estimate::within(2.5, 0.4), false);
        assert_eq!(points.words(), "+2.3 points [+1.8, +2.8]");
        let unbounded = Margin::higher(&Estimate::within(3.0, 0.1), &Estimate::within(1.0, 2.0), false);
        assert_eq!(unbounded.unwrap().words(), "3x, interval unbounded");
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
