//! The report's runs: every experiment's own [`report_steps`](experiments::Experiment::report_steps), in the order of
//! [`experiments::all`] (the floors first). Each experiment declares its short, full and smoke
//! settings in its own file ([`crate::experiments::settings`]).

use crate::experiments;
use crate::experiments::settings::{Length, Step};

/// The report's runs, in order: the floors first.
pub fn plan(length: Length, cpus: usize) -> Vec<Step> {
    experiments::all().iter().flat_map(|e| e.report_steps(length, cpus)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::{cli_defaults, spr::Spr};

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
