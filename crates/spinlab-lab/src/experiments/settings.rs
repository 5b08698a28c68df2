//! How long an experiment runs in `spinlab report`: the [`Length`] asked for, and the
//! [`Step`]s each experiment declares for it in [`Experiment::report_steps`].
//!
//! `Short` (the default) is sized so the whole report takes about three minutes on a 2-CPU
//! machine: fewer repetitions and shorter repetitions, the same configurations. `Full` is
//! every experiment's own defaults (the papers' lengths). `Smoke` measures as little as will
//! still produce every kind of row, for tests.

use super::options::{Common, Locks};
use super::Experiment;
use std::time::Duration;

/// How long a report measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    /// For tests: one or two repetitions, tiny durations.
    Smoke,
    /// The default: about three minutes on 2 CPUs.
    Short,
    /// The experiments' own defaults.
    Full,
}

impl Length {
    /// Its name in a run's `report_length` parameter.
    pub fn name(self) -> &'static str {
        match self {
            Length::Smoke => "smoke",
            Length::Short => "short",
            Length::Full => "full",
        }
    }

    /// The common options of `experiment` at this length: its own repetition counts when
    /// `Full`; `min`..`max` repetitions of `duration_ms` (where it takes `--duration`) when
    /// `Short`; one or two of 5 ms when `Smoke`.
    pub fn common(self, experiment: &dyn Experiment, min: usize, max: usize, duration_ms: u64) -> Common {
        let mut c = Common::default();
        match self {
            Length::Full => {}
            Length::Short => {
                c.repetition.min_reps = Some(min);
                c.repetition.max_reps = Some(max);
                if experiment.uses().contains(&"duration") {
                    c.duration = Some(Duration::from_millis(duration_ms));
                }
            }
            Length::Smoke => {
                c.repetition.min_reps = Some(1);
                c.repetition.max_reps = Some(2);
                if experiment.uses().contains(&"duration") {
                    c.duration = Some(Duration::from_millis(5));
                }
            }
        }
        c
    }
}

/// One experiment run of a report.
pub struct Step {
    /// The experiment, with its own options.
    pub experiment: Box<dyn Experiment>,
    /// The common options (only those it [uses](Experiment::uses), besides repetitions).
    pub common: Common,
    /// What the progress line calls it.
    pub label: String,
}

impl Step {
    /// `experiment` with `common`, shown as `label`.
    pub fn new(experiment: impl Experiment + 'static, common: Common, label: &str) -> Step {
        Step { experiment: Box::new(experiment), common, label: label.to_string() }
    }
}

/// The locks of a smoke report: one spinlab lock and one reference.
pub fn smoke_locks() -> Option<Locks> {
    crate::select::lock_list("ttas:spin,std").ok().map(Locks)
}
