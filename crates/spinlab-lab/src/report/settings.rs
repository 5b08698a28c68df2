//! How long each experiment of a report runs.
//!
//! `Short` (the default) is sized so the whole report takes about three minutes on a 2-CPU
//! machine: fewer repetitions and shorter repetitions, the same configurations. `Full` is
//! every experiment's own defaults (the papers' lengths). `Smoke` measures as little as will
//! still produce every kind of row, for tests.
//!
//! Besides `experiments::all()` in order, the report runs contention a second time with a
//! long (10 µs) critical section, at and above the CPU count, so the recommendation has a
//! measured answer for long critical sections too.

use crate::experiments::barrier::{BarrierExperiment, Barriers};
use crate::experiments::handoff::{Handoff, Holds};
use crate::experiments::interference::{Counts, Interference};
use crate::experiments::spr::Spr;
use crate::experiments::wakeup::Wakeup;
use crate::experiments::{self, cli_defaults, contention::Contention, herd::Herd, Common, Experiment, Threads};
use crate::select::ThreadCount;
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

/// The critical section of the report's second contention run, in nanoseconds.
pub const LONG_CS_NS: u64 = 10_000;

/// Repetition bounds and a repetition length per `length`.
fn common(length: Length, experiment: &dyn Experiment, min: usize, max: usize, duration_ms: u64) -> Common {
    let mut c = Common { quiet: false, ..Common::default() };
    match length {
        Length::Full => {}
        Length::Short => {
            c.min_reps = Some(min);
            c.max_reps = Some(max);
            if experiment.uses().contains(&"duration") {
                c.duration = Some(Duration::from_millis(duration_ms));
            }
        }
        Length::Smoke => {
            c.min_reps = Some(1);
            c.max_reps = Some(2);
            if experiment.uses().contains(&"duration") {
                c.duration = Some(Duration::from_millis(5));
            }
        }
    }
    c
}

/// The report's runs, in order: the floors first.
pub fn plan(length: Length, cpus: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    for experiment in experiments::all() {
        let name = experiment.name();
        match name {
            "floor" => {
                let common = common(length, experiment.as_ref(), 3, 8, 0);
                steps.push(Step { experiment, common, label: "floor: the machine's physical limits".into() });
            }
            "contention" => {
                let short: Contention = cli_defaults();
                let mut c = common(length, &short, 3, 5, 50);
                if length == Length::Smoke {
                    c.threads = Some(Threads(vec![ThreadCount::Exact(2), ThreadCount::PerCpu(2)]));
                    c.locks = smoke_locks();
                }
                steps.push(Step {
                    experiment: Box::new(short),
                    common: c,
                    label: "contention: throughput and fairness, short critical section".into(),
                });
                let long = Contention { cs_ns: LONG_CS_NS, ..cli_defaults() };
                let mut c = common(length, &long, 3, 5, 50);
                c.threads = Some(Threads(if cpus >= 2 {
                    vec![ThreadCount::PerCpu(1), ThreadCount::PerCpu(2), ThreadCount::PerCpu(4)]
                } else {
                    vec![ThreadCount::Exact(2), ThreadCount::Exact(4)]
                }));
                if length == Length::Smoke {
                    c.threads = Some(Threads(vec![ThreadCount::PerCpu(2)]));
                    c.locks = smoke_locks();
                }
                steps.push(Step {
                    experiment: Box::new(long),
                    common: c,
                    label: "contention: long (10 µs) critical section".into(),
                });
            }
            "herd" => {
                let herd = match length {
                    Length::Full => cli_defaults(),
                    Length::Short => Herd { rounds: 50, ..cli_defaults() },
                    Length::Smoke => Herd { rounds: 2, per_round: 5, ..cli_defaults() },
                };
                let mut c = common(length, &herd, 2, 4, 0);
                if length == Length::Smoke {
                    c.threads = Some(Threads(vec![ThreadCount::PerCpu(2)]));
                    c.locks = smoke_locks();
                }
                steps.push(Step {
                    experiment: Box::new(herd),
                    common: c,
                    label: "herd: threads released at once".into(),
                });
            }
            "interference" => {
                let interference = match length {
                    Length::Full => cli_defaults(),
                    // One waiter count instead of 1 and 3: interference is most of a short report.
                    Length::Short => {
                        Interference { active_ms: Some(3), waiters: Some(Counts(vec![1])), ..cli_defaults() }
                    }
                    Length::Smoke => Interference {
                        active: crate::workloads::Workload::parse_list("add")
                            .ok()
                            .map(experiments::interference::Actives),
                        waiters: Some(Counts(vec![1])),
                        units: Some(1),
                        ..cli_defaults()
                    },
                };
                let mut c = common(length, &interference, 2, 4, 0);
                if length == Length::Smoke {
                    c.waits = crate::select::wait_list("spin,futex").ok().map(experiments::Waits);
                }
                steps.push(Step {
                    experiment: Box::new(interference),
                    common: c,
                    label: "interference: what waiters cost a co-running thread".into(),
                });
            }
            "handoff" => {
                let handoff = match length {
                    Length::Full => cli_defaults(),
                    Length::Short => Handoff { handoffs: Some(60), ..cli_defaults() },
                    Length::Smoke => Handoff { handoffs: Some(10), hold_ns: Some(Holds(vec![1000])) },
                };
                let mut c = common(length, &handoff, 2, 4, 0);
                if length == Length::Smoke {
                    c.locks = smoke_locks();
                }
                steps.push(Step {
                    experiment: Box::new(handoff),
                    common: c,
                    label: "handoff: lock hand-off latency".into(),
                });
            }
            "wakeup" => {
                let wakeup = match length {
                    Length::Full => cli_defaults(),
                    Length::Short => Wakeup { work_ms: 5, ..cli_defaults() },
                    Length::Smoke => Wakeup { size: Some(12), short_size: 4, ..cli_defaults() },
                };
                let c = common(length, &wakeup, 3, 5, 0);
                steps.push(Step {
                    experiment: Box::new(wakeup),
                    common: c,
                    label: "wakeup: notify and wake-up cost".into(),
                });
            }
            "barrier" => {
                let barrier = match length {
                    Length::Full => cli_defaults(),
                    Length::Short => BarrierExperiment { iterations: 300, work_ms: 5, ..cli_defaults() },
                    Length::Smoke => BarrierExperiment {
                        size: Some(12),
                        iterations: 20,
                        barriers: Some(Barriers(vec!["barrier:pause", "pthread"])),
                        ..cli_defaults()
                    },
                };
                let c = common(length, &barrier, 2, 4, 0);
                steps.push(Step {
                    experiment: Box::new(barrier),
                    common: c,
                    label: "barrier: barriers and unequal work".into(),
                });
            }
            "spr" => {
                let spr = match length {
                    Length::Full => cli_defaults(),
                    Length::Short => Spr { tc_vertices: 800, tc_edges: 12_500, ..cli_defaults() },
                    Length::Smoke => Spr {
                        spmv_cols: Some(20_000),
                        spmv_rows: Some(3_000),
                        spmv_block_rows: 64,
                        tc_vertices: 100,
                        tc_edges: 400,
                        barriers: Some(Barriers(vec!["barrier:pause", "pthread"])),
                        ..cli_defaults()
                    },
                };
                let c = common(length, &spr, 3, 5, 0);
                steps.push(Step {
                    experiment: Box::new(spr),
                    common: c,
                    label: "spr: speculative precomputation".into(),
                });
            }
            _ => {
                let common = common(length, experiment.as_ref(), 3, 5, 50);
                steps.push(Step { experiment, common, label: name.to_string() });
            }
        }
    }
    steps
}

fn smoke_locks() -> Option<experiments::Locks> {
    crate::select::lock_list("ttas:spin,std").ok().map(experiments::Locks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiment_has_a_step_and_its_options_parse() {
        for length in [Length::Smoke, Length::Short, Length::Full] {
            let steps = plan(length, 2);
            let names: Vec<&str> = steps.iter().map(|s| s.experiment.name()).collect();
            assert_eq!(names[0], "floor");
            for experiment in experiments::all() {
                assert!(names.contains(&experiment.name()), "{} has no step", experiment.name());
            }
            for step in &steps {
                experiments::check_options(step.experiment.as_ref(), &step.common).unwrap();
            }
        }
        let spr: Spr = cli_defaults();
        assert!(spr.tc_vertices > 0 && spr.spmv_block_rows > 0, "the command line's defaults, not zeros");
    }
}
