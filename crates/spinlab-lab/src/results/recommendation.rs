//! The recommendation as a results document keeps it (`recommendation[]`, docs/report.md):
//! one entry per line, with the figures the line was chosen by. `spinlab report` writes it and
//! draws every report from the runs again, so a document without it (written before it
//! existed, or by `spinlab run`) loads and renders all the same.

use serde::{Deserialize, Serialize};

/// One line of the recommendation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecommendationLine {
    /// The situation: `short critical section, threads <= CPUs`.
    pub situation: String,
    /// What to use, or `no recommendation`.
    pub choice: String,
    /// The choice's figure, where it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figure: Option<FigureEntry>,
    /// The best of the other candidates, and how close it came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_up: Option<RunnerUpEntry>,
    /// The reasoning in full: the figures, the ties, the order a tie was resolved in.
    pub why: String,
    /// Why the figures behind the line may not hold, each in one sentence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
}

/// A measured figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FigureEntry {
    /// The value, in `unit`.
    pub value: f64,
    /// Half-width of its 95% interval (0 where it has none).
    pub ci95: f64,
    /// `acquisitions/s`, `s`, `ns` or `%`.
    pub unit: String,
    /// The figure in words, with where it was measured: `2.32M acquisitions/s at 2 threads`.
    pub text: String,
}

/// The candidate that came next.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunnerUpEntry {
    /// Its name.
    pub name: String,
    /// Its figure.
    pub figure: FigureEntry,
    /// How much better the choice measured than it.
    pub margin: MarginEntry,
}

/// How much better a choice measured than its runner-up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MarginEntry {
    /// `x`: the runner-up's figure over the choice's, or the choice's over the runner-up's
    /// where higher is better, so that above 1 the choice measured better; `points`: the
    /// difference of two percentages, above 0 where the choice measured better.
    pub unit: String,
    /// The margin.
    pub value: f64,
    /// Half-width of its 95% interval; absent where the interval is unbounded.
    #[serde(default)]
    pub ci95: Option<f64>,
    /// Whether the two tie: their 95% intervals reach each other's, and a fixed order chose.
    pub tied: bool,
    /// The margin in words: `0.97x, within the interval`, `1.4x [1.3, 1.5]`.
    pub text: String,
}
