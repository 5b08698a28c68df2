//! The results document (`spinlab.results/1`, see docs/results.md), and its writers: JSON,
//! CSV, and tables for the terminal.
//!
//! A document holds the machine (what `spinlab info --json` prints) and one or more runs; a
//! run is one experiment's parameters and rows; a row is a flat map naming its configuration
//! (`lock`, `threads`, `placement`, …) and its figures, each key carrying its unit
//! (`throughput_ops_s`, `max_wait_ns`). A configuration that could not be measured is still a
//! row, with a `skipped` key giving the reason.

pub mod csv;
pub mod format;
pub mod keys;
mod load;
pub mod output;
pub mod read;
pub mod recommendation;
pub mod rows;
pub mod table;

pub use load::{load, load_together, FROM_COMMAND};
pub use recommendation::RecommendationLine;

use crate::measure::load::Load;
use crate::measure::stats::Summary;
use crate::measure::StoppingRule;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The run parameter that says, in words, that other work took a share of the CPUs while the
/// run measured.
pub const UNDER_LOAD: &str = "under_load";
/// The one-way cache-line transfer between two CPUs just before a run, in nanoseconds: a run
/// parameter under `spinlab report`, and a contention row key (just before that row's
/// configuration).
pub const TRANSFER_BEFORE_NS: &str = "line_transfer_before_ns";
/// The same, just after.
pub const TRANSFER_AFTER_NS: &str = "line_transfer_after_ns";
/// How far apart two line transfers may lie before the machine is said to have changed: the
/// floor's ping-pong repeats to within a few percent while the machine holds still.
pub const MOVED_FACTOR: f64 = 1.5;

/// How many times a contention configuration was measured: more than once when the machine
/// moved a line at a different cost before and after an attempt ([`MOVED_UNDER_NS`]).
pub const ATTEMPTS: &str = "attempts";
/// The line transfers (before, after, in nanoseconds) around each discarded attempt.
pub const MOVED_UNDER_NS: &str = "moved_under_ns";

/// Whether two line transfers lie more than [`MOVED_FACTOR`] apart: the machine changed
/// between them.
pub fn transfers_moved(a: f64, b: f64) -> bool {
    a.max(b) > MOVED_FACTOR * a.min(b)
}

/// When the line transfers just before and just after `what` lie more than [`MOVED_FACTOR`]
/// apart: the machine changed under it, in words.
pub(crate) fn moved_words(before: f64, after: f64, what: &str) -> Option<String> {
    transfers_moved(before, after).then(|| {
        format!("a cache line took {before:.0} ns to move between two CPUs just before {what} and {after:.0} ns just after it")
    })
}

/// The key of every row that was not measured: why.
const SKIPPED: &str = "skipped";

/// The schema name every document carries.
pub const SCHEMA: &str = "spinlab.results/1";

/// One results document.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Results {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The command line that produced it.
    pub command: Vec<String>,
    /// Seconds since the Unix epoch when the document was written.
    pub created_unix_s: u64,
    /// The machine, as `spinlab info --json` reports it.
    pub machine: Value,
    /// The runs, in the order they were made.
    pub runs: Vec<Run>,
    /// `spinlab report` only: the seeds' claims against these runs (empty elsewhere, and
    /// recomputed from the runs whenever a report is drawn).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scorecard: Vec<ScorecardLine>,
    /// `spinlab report` only: the recommendation from these runs (empty elsewhere, and
    /// recomputed from the runs whenever a report is drawn).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recommendation: Vec<RecommendationLine>,
    /// `spinlab report` only: the re-measurements of claims its runs left unsettled, each
    /// read by its claim alone in place of its experiment's runs (docs/scorecard.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remeasured: Vec<Remeasured>,
}

/// A claim's re-measurement (`remeasured[]`, docs/results.md).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Remeasured {
    /// The claim's key.
    pub claim: String,
    /// The repetitions each configuration was given (`--min-reps` and `--max-reps` both).
    pub repetitions: usize,
    /// The runs, which this claim reads instead of its experiment's.
    pub runs: Vec<Run>,
}

impl Results {
    /// A document for `machine` with no runs yet.
    pub fn new(machine: &impl Serialize) -> Results {
        Results {
            schema: SCHEMA.to_string(),
            command: std::env::args().collect(),
            created_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            machine: serde_json::to_value(machine).unwrap_or(Value::Null),
            runs: Vec::new(),
            scorecard: Vec::new(),
            recommendation: Vec::new(),
            remeasured: Vec::new(),
        }
    }
}

/// One scorecard line in results.json (`scorecard[]`, docs/results.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScorecardLine {
    /// The claim's key ([`Claim::id`](crate::reading::scorecard::Claim::id)).
    pub id: String,
    /// The seed.
    pub seed: String,
    /// Where in the seed.
    pub source: String,
    /// The claim in words.
    pub claim: String,
    /// The seed's figure.
    pub paper: String,
    /// The figure compared with the claim, when there is one.
    pub value: Option<f64>,
    /// Its 95% half-width (the longer side, where the interval is not symmetric).
    pub ci95: Option<f64>,
    /// The 95% interval's ends, where it has bounded ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    /// See `low`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
    /// Its unit in words.
    pub unit: String,
    /// The figure in words, with what it was computed from.
    pub here: String,
    /// `reproduced`, `differs`, `unsettled`, `cannot test here` or `not measured`.
    pub verdict: String,
    /// Why (empty for `reproduced`).
    pub why: String,
    /// The rows the figure came from.
    pub rows: String,
    /// The words of `under_load` of a run behind the figure, when one ran under load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under_load: Option<String>,
    /// When the machine moved a cache line at a different cost before and after a run behind
    /// the figure: the two costs, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_moved: Option<String>,
    /// What a machine must have to test the claim, in words, where a machine can lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
    /// The repetitions behind the figure, where the document says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<usize>,
    /// For an `unsettled` claim: about how many more repetitions would settle it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_repetitions: Option<usize>,
    /// For a claim this document cannot test: the other documents the report read (`--beside`,
    /// or the committed machines) that tested it, each with its verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tested_in: Vec<TestedIn>,
}

/// Another document that tested a claim this one cannot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestedIn {
    /// Its path (`docs/machines/NAME/results.json`).
    pub document: String,
    /// Its verdict: `reproduced`, `differs` or `unsettled`.
    pub verdict: String,
}

/// One experiment's results.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Run {
    /// The experiment's name (`floor`, `contention`, …).
    pub experiment: String,
    /// Its parameters, after defaults were applied.
    pub params: Map<String, Value>,
    /// Wall-clock seconds the run took.
    pub elapsed_s: f64,
    /// One row per configuration measured (or skipped).
    pub rows: Vec<Row>,
}

impl Run {
    /// An empty run of `experiment`.
    pub fn new(experiment: &str) -> Run {
        Run { experiment: experiment.to_string(), params: Map::new(), elapsed_s: 0.0, rows: Vec::new() }
    }

    /// Records what else ran on the CPUs while this run measured: `load_average_start`,
    /// `load_average_end`, `other_load_pct`, `steal_pct`, and `under_load` (in words) when
    /// either share reached [`UNDER_LOAD_PCT`](crate::measure::load::UNDER_LOAD_PCT).
    pub fn stamp_load(&mut self, load: &Load) -> &mut Self {
        self.param("load_average_start", load.load_average_start)
            .param("load_average_end", load.load_average_end)
            .param("other_load_pct", load.other_pct)
            .param("steal_pct", load.steal_pct);
        if let Some(words) = load.under_load() {
            self.param(UNDER_LOAD, words);
        }
        self
    }

    /// Why this run's figures may not hold (`under_load`), if they may not.
    pub fn under_load(&self) -> Option<String> {
        self.known_params().under_load
    }

    /// The line transfers measured just before and just after the run (`spinlab report`).
    pub fn transfers(&self) -> [Option<f64>; 2] {
        let params = self.known_params();
        [params.line_transfer_before_ns, params.line_transfer_after_ns]
    }

    /// When the line transfer before and after the run lie more than [`MOVED_FACTOR`] apart:
    /// the machine changed under the run, in words.
    pub fn machine_moved(&self) -> Option<String> {
        let [Some(before), Some(after)] = self.transfers() else { return None };
        moved_words(before, after, "this run")
    }

    /// When configurations were measured again because the machine moved under them (rows
    /// with [`ATTEMPTS`] above one), how many, in words: `2 of 4 configurations measured
    /// again while the machine moved under them; it moved under all 3 attempts at 1 (its
    /// figures mix two machines)`.
    pub fn remeasured(&self) -> Option<String> {
        let configs = rows::configurations(self);
        let again = configs.iter().filter(|(_, n, _)| *n > 1).count();
        if again == 0 {
            return None;
        }
        let mut words =
            format!("{again} of {} configurations measured again while the machine moved under them", configs.len());
        let moved_every_time: Vec<u64> = configs.iter().filter(|(_, n, moved)| *n > 1 && *moved).map(|c| c.1).collect();
        if let Some(n) = moved_every_time.iter().max() {
            words.push_str(&format!(
                "; it moved under all {n} attempts at {} (those figures mix two machines)",
                moved_every_time.len()
            ));
        }
        Some(words)
    }

    /// Adds a parameter.
    pub fn param(&mut self, key: &str, value: impl Serialize) -> &mut Self {
        self.params.insert(key.to_string(), to_value(value));
        self
    }

    /// Adds the stopping rule's parameters: `maiv_pct`, `min_reps`, `max_reps`.
    pub fn stopping_rule(&mut self, rule: &StoppingRule) -> &mut Self {
        self.param("maiv_pct", rule.maiv_pct).param("min_reps", rule.min_reps).param("max_reps", rule.max_reps)
    }
}

fn to_value(value: impl Serialize) -> Value {
    // Non-finite floats have no JSON form; serde_json makes them null.
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// One row: a flat, ordered map from key to value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Row(pub Map<String, Value>);

impl Row {
    /// An empty row.
    pub fn new() -> Row {
        Row(Map::new())
    }

    /// The row with `key` set (builder style).
    pub fn with(mut self, key: &str, value: impl Serialize) -> Row {
        self.set(key, value);
        self
    }

    /// Sets `key`.
    pub fn set(&mut self, key: &str, value: impl Serialize) {
        self.0.insert(key.to_string(), to_value(value));
    }

    /// The row marked as not measured, with the reason.
    pub fn skipped(self, reason: impl Into<String>) -> Row {
        self.with(SKIPPED, reason.into())
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// The string under `key`, if it is one.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    /// The number under `key`, if it is one.
    pub fn number(&self, key: &str) -> Option<f64> {
        self.0.get(key).and_then(Value::as_f64)
    }

    /// Why the row was not measured, when it was not: every experiment's rows say it the same
    /// way (`skipped`), so a reader of rows of any experiment reads it here.
    pub fn skipped_reason(&self) -> Option<&str> {
        self.0.get(SKIPPED).and_then(Value::as_str)
    }

    /// Whether the row was skipped.
    pub fn is_skipped(&self) -> bool {
        self.0.contains_key(SKIPPED)
    }

    /// Adds a summary of repetitions as `NAME_UNIT` (the mean), `NAME_median_UNIT`,
    /// `NAME_sd_UNIT`, `NAME_ci95_UNIT` (half-width of the 95% interval), `NAME_min_UNIT`,
    /// `NAME_max_UNIT` (of the repetitions' values) and `reps`. An empty `name` gives `UNIT`,
    /// `median_UNIT`, ….
    pub fn summary(mut self, name: &str, unit: &str, s: &Summary) -> Row {
        let key = |part: &str| -> String {
            [name, part, unit].iter().filter(|p| !p.is_empty()).copied().collect::<Vec<_>>().join("_")
        };
        self.set(&key(""), s.mean);
        self.set(&key("median"), s.median);
        self.set(&key("sd"), s.sd);
        self.set(&key("ci95"), s.ci95);
        self.set(&key("min"), s.min);
        self.set(&key("max"), s.max);
        self.set("reps", s.reps);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_says_how_many_configurations_it_measured_again_and_under_which_the_machine_kept_moving() {
        let row = |lock: &str, threads: u64, attempts: u64, after: f64| {
            Row::new()
                .with("lock", lock)
                .with(keys::THREADS, threads)
                .with(ATTEMPTS, attempts)
                .with(TRANSFER_BEFORE_NS, 45.0)
                .with(TRANSFER_AFTER_NS, after)
        };
        let mut run = Run::new("contention");
        // Two locks per configuration: each configuration counts once.
        run.rows = vec![row("a", 2, 1, 50.0), row("b", 2, 1, 50.0), row("a", 4, 2, 48.0), row("b", 4, 2, 48.0)];
        assert_eq!(
            run.remeasured().as_deref(),
            Some("1 of 2 configurations measured again while the machine moved under them")
        );
        run.rows.extend([row("a", 8, 3, 230.0), row("b", 8, 3, 230.0)]);
        assert_eq!(
            run.remeasured().as_deref(),
            Some(
                "2 of 3 configurations measured again while the machine moved under them; it moved under all 3 \
                 attempts at 1 (those figures mix two machines)"
            )
        );
        // Every configuration held still at once, or the rows carry no attempts: nothing to say.
        run.rows = vec![row("a", 2, 1, 50.0)];
        assert_eq!(run.remeasured(), None);
        run.rows = vec![Row::new().with("lock", "a")];
        assert_eq!(run.remeasured(), None);
        // Interference: every row is a configuration of its own (workload, wait, waiters), all
        // at one placement and without a thread count.
        let row = |active: &str, wait: &str, attempts: u64| {
            Row::new()
                .with("active", active)
                .with(keys::WAIT, wait)
                .with("waiters", 1)
                .with(keys::PLACEMENT, "core")
                .with(ATTEMPTS, attempts)
                .with(TRANSFER_BEFORE_NS, 45.0)
                .with(TRANSFER_AFTER_NS, 50.0)
        };
        let mut run = Run::new("interference");
        run.rows = vec![row("add", "spin", 1), row("add", "miss", 2), row("hash", "spin", 2)];
        assert_eq!(
            run.remeasured().as_deref(),
            Some("2 of 3 configurations measured again while the machine moved under them")
        );
        // Wake-up: a configuration is a placement and a computation, every primitive in it.
        let row = |wait: &str, placement: &str, computation: &str, attempts: u64| {
            Row::new()
                .with(keys::WAIT, wait)
                .with(keys::PLACEMENT, placement)
                .with("computation", computation)
                .with(ATTEMPTS, attempts)
        };
        let mut run = Run::new("wakeup");
        run.rows = ["pause", "futex", "none"]
            .iter()
            .flat_map(|w| [row(w, "core", "long", 2), row(w, "core", "short", 1), row(w, "same-cpu", "long", 1)])
            .collect();
        assert_eq!(
            run.remeasured().as_deref(),
            Some("1 of 3 configurations measured again while the machine moved under them")
        );
    }

    #[test]
    fn summary_keys_carry_the_unit_last() {
        let s = Summary::of(&[1.0, 3.0]).unwrap();
        let row = Row::new().with("lock", "std").summary("throughput", "ops_s", &s);
        let keys: Vec<&str> = row.0.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "lock",
                "throughput_ops_s",
                "throughput_median_ops_s",
                "throughput_sd_ops_s",
                "throughput_ci95_ops_s",
                "throughput_min_ops_s",
                "throughput_max_ops_s",
                "reps"
            ]
        );
        let bare = Row::new().summary("", "ns", &s);
        assert!(bare.get("ns").is_some() && bare.get("ci95_ns").is_some());
    }

    #[test]
    fn nan_becomes_null_and_skipped_rows_say_why() {
        let row = Row::new().with("x_ns", f64::NAN).skipped("no SMT");
        assert_eq!(row.get("x_ns"), Some(&Value::Null));
        assert!(row.is_skipped());
        assert_eq!(row.get("skipped").and_then(Value::as_str), Some("no SMT"));
    }
}
