//! Each experiment's row as one type: the keys it writes, in the order it writes them, read
//! back by field rather than by key (docs/results.md has one table per type).
//!
//! The document keeps a row as the map it was written as ([`Row`]), so that CSV, the terminal
//! tables and a document rewritten by `spinlab report --from` keep every key of an older build
//! in its place. A reader asks a run for its rows as their type ([`Run::rows_as`]); a document
//! whose row does not fit its type is refused when loaded ([`check`]), so a renamed key is a
//! load error, never a figure read as zero.
//!
//! Every field is optional: a skipped row carries its configuration and `skipped` only, and
//! what a reader needs it handles as absent. A field the writer sets to `null` when it has no
//! value (an interval from one repetition, a ratio to a figure that is zero) is a
//! [`Nullable`], which writes `null` back where it read one.

mod apps;
mod barrier;
mod contention;
mod floor;
mod handoff;
mod herd;
mod interference;
mod nullable;
mod spr;
mod wakeup;

pub use apps::AppsRow;
pub use barrier::BarrierRow;
pub use contention::{ContentionRow, GroupCount, LevelShare};
pub use floor::FloorRow;
pub use handoff::HandoffRow;
pub use herd::HerdRow;
pub use interference::InterferenceRow;
pub use nullable::{Absent, Nullable};
pub use spr::SprRow;
pub use wakeup::WakeupRow;

use super::{Row, Run};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// A row type: one experiment's row, and the keys it may write.
pub trait RowType: Serialize + DeserializeOwned {
    /// The experiment whose rows these are.
    const EXPERIMENT: &'static str;
    /// Every key the type writes, in the order it writes them.
    const KEYS: &'static [&'static str];

    /// `row` read as this type, or why it does not fit.
    fn from_row(row: &Row) -> Result<Self, String> {
        serde_json::from_value(Value::Object(row.0.clone())).map_err(|e| e.to_string())
    }

    /// Why the row was not measured, when it was not (every row type has `skipped`).
    fn skipped(&self) -> Option<&str>;

    /// This row as the document holds it.
    fn to_row(&self) -> Row {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => Row(map),
            _ => unreachable!("a row type serializes as a map of JSON values"),
        }
    }
}

/// Declares a row type: every field an `Option` or a [`Nullable`], left out when absent, and
/// documented by its key in docs/results.md.
macro_rules! row_type {
    ($(#[doc = $doc:literal])* $name:ident for $experiment:literal { $($field:ident: $ty:ty,)* }) => {
        $(#[doc = $doc])*
        #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        pub struct $name {
            $(
                #[doc = concat!("`", stringify!($field), "` (docs/results.md, `", $experiment, "`).")]
                #[serde(default, skip_serializing_if = "crate::results::rows::Absent::is_absent")]
                pub $field: $ty,
            )*
        }

        impl crate::results::rows::RowType for $name {
            const EXPERIMENT: &'static str = $experiment;
            const KEYS: &'static [&'static str] = &[$(stringify!($field)),*];

            fn skipped(&self) -> Option<&str> {
                self.skipped.as_deref()
            }
        }
    };
}
pub(crate) use row_type;

/// Every row type's experiment and keys, for the checks that hold docs/results.md to them.
pub const ALL: &[(&str, &[&str])] = &[
    (FloorRow::EXPERIMENT, FloorRow::KEYS),
    (ContentionRow::EXPERIMENT, ContentionRow::KEYS),
    (HerdRow::EXPERIMENT, HerdRow::KEYS),
    (InterferenceRow::EXPERIMENT, InterferenceRow::KEYS),
    (HandoffRow::EXPERIMENT, HandoffRow::KEYS),
    (WakeupRow::EXPERIMENT, WakeupRow::KEYS),
    (BarrierRow::EXPERIMENT, BarrierRow::KEYS),
    (SprRow::EXPERIMENT, SprRow::KEYS),
    (AppsRow::EXPERIMENT, AppsRow::KEYS),
];

/// Calls `$then::<RowType>` for `$experiment`'s row type; an experiment without one (a test's
/// own) gives `Ok(())`.
macro_rules! by_type {
    ($experiment:expr, $then:ident, $run:expr) => {
        match $experiment {
            FloorRow::EXPERIMENT => $then::<FloorRow>($run),
            ContentionRow::EXPERIMENT => $then::<ContentionRow>($run),
            HerdRow::EXPERIMENT => $then::<HerdRow>($run),
            InterferenceRow::EXPERIMENT => $then::<InterferenceRow>($run),
            HandoffRow::EXPERIMENT => $then::<HandoffRow>($run),
            WakeupRow::EXPERIMENT => $then::<WakeupRow>($run),
            BarrierRow::EXPERIMENT => $then::<BarrierRow>($run),
            SprRow::EXPERIMENT => $then::<SprRow>($run),
            AppsRow::EXPERIMENT => $then::<AppsRow>($run),
            _ => Ok(()),
        }
    };
}

/// Whether every row of `run` fits its experiment's type: why the first one does not.
pub fn check(run: &Run) -> Result<(), String> {
    by_type!(run.experiment.as_str(), check_as, run)
}

fn check_as<R: RowType>(run: &Run) -> Result<(), String> {
    for (i, row) in run.rows.iter().enumerate() {
        R::from_row(row).map_err(|e| format!("{} row {}: {e}", run.experiment, i + 1))?;
    }
    Ok(())
}

/// Puts every row of a measured `run` through its experiment's type, so that the document
/// holds what the type writes, in the type's key order, whatever order the experiment set its
/// keys in. A key the type lacks, or a value of the wrong kind, is a bug in the experiment:
/// refused here, where it would otherwise be dropped and read back as absent.
pub fn write_through(run: &mut Run) -> Result<(), String> {
    let experiment = run.experiment.clone();
    by_type!(experiment.as_str(), write_as, run)
}

fn write_as<R: RowType>(run: &mut Run) -> Result<(), String> {
    for (i, row) in run.rows.iter_mut().enumerate() {
        let at = || format!("{} row {}", run.experiment, i + 1);
        if let Some(key) = row.0.keys().find(|key| !R::KEYS.contains(&key.as_str())) {
            return Err(format!("{}: `{key}` is not a key of its row type (docs/results.md)", at()));
        }
        *row = R::from_row(row).map_err(|e| format!("{}: {e}", at()))?.to_row();
    }
    Ok(())
}

impl Run {
    /// The rows as their type `R`. A loaded document was checked against it ([`check`]) and a
    /// measured run writes through it, so a row that does not fit is a bug, not input.
    pub fn rows_as<R: RowType>(&self) -> Vec<R> {
        debug_assert_eq!(self.experiment, R::EXPERIMENT, "rows read as another experiment's");
        self.rows.iter().map(|row| R::from_row(row).expect("rows fit their type when loaded or written")).collect()
    }
}

/// A row type whose rows carry the line transfers measured just before and just after their
/// own configuration (contention, interference and wake-up measure each configuration again
/// while the machine moves under it).
pub trait Transfers {
    /// The line transfers (before, after, in ns) the row carries, if it carries its own.
    fn transfers(&self) -> Option<(f64, f64)>;

    /// When the row's transfers lie more than [`MOVED_FACTOR`](super::MOVED_FACTOR) apart, in
    /// words; `None` when they held still or the row has none.
    fn machine_moved(&self) -> Option<String> {
        let (before, after) = self.transfers()?;
        super::moved_words(before, after, "this row was measured")
    }

    /// How many times the row's configuration was measured, where it says.
    fn attempts(&self) -> Option<u64>;

    /// The line transfers (before, after) around each attempt discarded before this one.
    fn moved_under_ns(&self) -> &[[f64; 2]];
}

macro_rules! transfers {
    ($($name:ident),*) => {$(
        impl Transfers for $name {
            fn transfers(&self) -> Option<(f64, f64)> {
                Some((self.line_transfer_before_ns?, self.line_transfer_after_ns?))
            }

            fn attempts(&self) -> Option<u64> {
                self.attempts
            }

            fn moved_under_ns(&self) -> &[[f64; 2]] {
                self.moved_under_ns.as_deref().unwrap_or_default()
            }
        }
    )*};
}
transfers!(ContentionRow, InterferenceRow, WakeupRow);

/// The line transfers a row of `experiment` carries around its own configuration (see
/// [`Transfers`]); `None` for the experiments that measure none.
pub fn transfers_of(experiment: &str, row: &Row) -> Option<(f64, f64)> {
    match experiment {
        ContentionRow::EXPERIMENT => ContentionRow::from_row(row).ok()?.transfers(),
        InterferenceRow::EXPERIMENT => InterferenceRow::from_row(row).ok()?.transfers(),
        WakeupRow::EXPERIMENT => WakeupRow::from_row(row).ok()?.transfers(),
        _ => None,
    }
}

/// One entry per configuration of `run` that says how often it was measured: the
/// configuration, its attempts, and whether the machine moved under the one kept. A
/// contention configuration is its threads and placement (every lock ran in each attempt); an
/// interference one also its workload, wait and waiters; a wake-up one its placement and
/// computation (every primitive ran in each attempt).
pub(super) fn configurations(run: &Run) -> Vec<(String, u64, bool)> {
    fn each<R: RowType + Transfers>(run: &Run, config: impl Fn(&R) -> String) -> Vec<(String, u64, bool)> {
        let mut configs: Vec<(String, u64, bool)> = Vec::new();
        for row in run.measured_as::<R>() {
            let Some(attempts) = row.attempts() else { continue };
            let name = config(&row);
            if !configs.iter().any(|(c, ..)| *c == name) {
                configs.push((name, attempts, row.machine_moved().is_some()));
            }
        }
        configs
    }
    match run.experiment.as_str() {
        ContentionRow::EXPERIMENT => each(run, |r: &ContentionRow| format!("{:?}", (r.threads, &r.placement))),
        InterferenceRow::EXPERIMENT => {
            each(run, |r: &InterferenceRow| format!("{:?}", (&r.placement, &r.active, &r.wait, r.waiters)))
        }
        WakeupRow::EXPERIMENT => each(run, |r: &WakeupRow| format!("{:?}", (&r.placement, &r.computation))),
        _ => Vec::new(),
    }
}

impl Run {
    /// The measured rows (not skipped) as their type `R` (see [`Run::rows_as`]).
    pub fn measured_as<R: RowType>(&self) -> Vec<R> {
        self.rows_as::<R>().into_iter().filter(|r| r.skipped().is_none()).collect()
    }
}

/// The rows of `rows` as their type (see [`Run::rows_as`]).
pub fn typed<'a, R: RowType>(rows: impl IntoIterator<Item = &'a Row>) -> Vec<R> {
    rows.into_iter().map(|row| R::from_row(row).expect("rows fit their type when loaded or written")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn herd_run(row: Row) -> Run {
        let mut run = Run::new(HerdRow::EXPERIMENT);
        run.rows.push(row);
        run
    }

    #[test]
    fn a_measured_row_is_written_in_its_types_key_order() {
        let mut run = herd_run(Row::new().with("wall_s", 1.5).with("threads", 4).with("lock", "std"));
        write_through(&mut run).unwrap();
        let keys: Vec<&str> = run.rows[0].0.keys().map(String::as_str).collect();
        assert_eq!(keys, ["lock", "threads", "wall_s"]);
        assert_eq!(run.rows_as::<HerdRow>()[0].wall_s, Some(1.5));
    }

    #[test]
    fn a_key_the_type_lacks_or_a_value_of_the_wrong_kind_is_refused() {
        let mut run = herd_run(Row::new().with("lock", "std").with("wall_secs", 1.5));
        let err = write_through(&mut run).unwrap_err();
        assert_eq!(err, "herd row 1: `wall_secs` is not a key of its row type (docs/results.md)");
        let mut run = herd_run(Row::new().with("lock", "std").with("threads", "four"));
        let err = write_through(&mut run).unwrap_err();
        assert!(err.starts_with("herd row 1: invalid type"), "{err}");
    }

    #[test]
    fn a_run_of_no_known_experiment_is_left_as_it_is() {
        let mut run = Run::new("not-an-experiment");
        run.rows.push(Row::new().with("b", 1).with("a", 2));
        write_through(&mut run).unwrap();
        assert_eq!(run.rows[0].0.keys().map(String::as_str).collect::<Vec<_>>(), ["b", "a"]);
    }
}
