//! The parts of a document beside the rows that the report, the scorecard and `compare` read:
//! a run's parameters and the machine card, each read through a type as the rows are
//! ([`rows`](super::rows)), so that a renamed key is a load error and never a figure read as
//! absent. Each type holds only what some reader reads; every field is optional, since a run
//! writes only the parameters that apply to it and an older document may lack a field.

use super::{Results, Run};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The run parameters that readers use (docs/results.md, "A run", and each experiment's).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Params {
    /// The critical section, in nanoseconds (contention, herd).
    pub cs_ns: Option<f64>,
    /// What the contention experiment's per-group counts group by (`node`, `llc`, …).
    pub groups_by: Option<String>,
    /// Whether those groups were declared by `SPINLAB_TOPOLOGY` rather than read from sysfs.
    pub groups_declared: Option<bool>,
    /// The stopping rule's repetitions, least and most.
    pub min_reps: Option<u64>,
    /// See `min_reps`.
    pub max_reps: Option<u64>,
    /// Why the run's figures may not hold, in words (other load on its CPUs).
    pub under_load: Option<String>,
    /// The line transfer measured just before the run (`spinlab report`), in nanoseconds.
    pub line_transfer_before_ns: Option<f64>,
    /// The same just after the run.
    pub line_transfer_after_ns: Option<f64>,
    /// The interference experiment's pointer chase: its size in bytes.
    pub miss_chase_bytes: Option<f64>,
    /// The chase's size as a multiple of seed 000's.
    pub miss_chase_times_seed_size: Option<f64>,
    /// One step of the chase alone, in nanoseconds.
    pub miss_chase_step_ns: Option<f64>,
}

/// The machine card's fields that readers use (the card is `spinlab info --json`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct MachineCard {
    /// The card's `cpu_model`.
    pub cpu_model: Option<String>,
    /// The card's `logical_cpus`.
    pub logical_cpus: Option<u64>,
    /// The card's `allowed_cpus`.
    pub allowed_cpus: Option<String>,
    /// The card's `hypervisor`.
    pub hypervisor: Option<bool>,
    /// The card's `topology`.
    pub topology: Option<TopologyCard>,
    /// The card's `wait_features`.
    pub wait_features: Option<WaitFeaturesCard>,
    /// The card's `tsc`.
    pub tsc: Option<TscCard>,
    /// The card's `perf_counters`.
    pub perf_counters: Option<PerfCard>,
    /// The card's `kernel`.
    pub kernel: Option<String>,
    /// The card's `cpufreq_governor`.
    pub cpufreq_governor: Option<String>,
    /// The card's `cpuidle`.
    pub cpuidle: Option<String>,
    /// The card's `clocksource`.
    pub clocksource: Option<String>,
    /// The card's `spinlab_version`.
    pub spinlab_version: Option<String>,
    /// The card's `absent`.
    #[serde(default)]
    pub absent: Vec<String>,
}

/// The card's topology summary.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct TopologyCard {
    /// The card's `packages`.
    pub packages: Option<u64>,
    /// The card's `cores`.
    pub cores: Option<u64>,
    /// The card's `threads_per_core`.
    pub threads_per_core: Option<u64>,
    /// The card's `numa_nodes`.
    pub numa_nodes: Option<u64>,
    /// The card's `llc_groups`.
    pub llc_groups: Option<u64>,
    /// The card's `smt`.
    pub smt: Option<bool>,
    /// The card's `placements`.
    pub placements: Option<Vec<PlacementCard>>,
}

/// One placement, and why it is unavailable where it is.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct PlacementCard {
    /// The card's `placement`.
    pub placement: Option<String>,
    /// The card's `skipped`.
    pub skipped: Option<String>,
}

/// The wait instructions, in the order the card lists them.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize)]
pub struct WaitFeaturesCard {
    /// The card's `pause`.
    pub pause: Option<bool>,
    /// The card's `waitpkg`.
    pub waitpkg: Option<bool>,
    /// The card's `monitorx`.
    pub monitorx: Option<bool>,
    /// The card's `wfe`.
    pub wfe: Option<bool>,
}

impl WaitFeaturesCard {
    /// Each instruction the card names, with whether the CPU has it.
    pub fn listed(&self) -> Vec<(&'static str, bool)> {
        [("pause", self.pause), ("waitpkg", self.waitpkg), ("monitorx", self.monitorx), ("wfe", self.wfe)]
            .into_iter()
            .filter_map(|(name, has)| has.map(|has| (name, has)))
            .collect()
    }
}

/// The cycle counter.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize)]
pub struct TscCard {
    /// The card's `frequency_hz`.
    pub frequency_hz: Option<u64>,
    /// The card's `invariant`.
    pub invariant: Option<bool>,
}

/// The performance counters.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize)]
pub struct PerfCard {
    /// The card's `readable`.
    pub readable: Option<bool>,
}

/// `value` (a JSON object) read as `T`, or why it does not fit.
fn read<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_json::from_value(value).map_err(|e| e.to_string())
}

impl Run {
    /// The parameters readers use. A loaded document was checked against [`Params`], and a
    /// measured run writes them, so one that does not fit is a bug, not input.
    pub fn known_params(&self) -> Params {
        read(Value::Object(self.params.clone())).expect("a run's parameters fit Params when loaded or written")
    }
}

impl Results {
    /// The machine card's fields that readers use (checked when loaded, as [`Run::known_params`]).
    pub fn machine_card(&self) -> MachineCard {
        read(self.machine.clone()).expect("the machine card fits MachineCard when loaded or written")
    }

    /// The CPU's name, or `unknown CPU`.
    pub fn cpu_model(&self) -> String {
        self.machine_card().cpu_model.unwrap_or_else(|| "unknown CPU".to_string())
    }
}

/// Whether a loaded document's machine card and every run's parameters fit their types.
pub fn check(results: &Results) -> Result<(), String> {
    read::<MachineCard>(results.machine.clone()).map_err(|e| format!("the machine card: {e}"))?;
    for run in &results.runs {
        read::<Params>(Value::Object(run.params.clone()))
            .map_err(|e| format!("{}'s parameters: {e}", run.experiment))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys a type reads, as its default writes them.
    fn keys<T: Default + Serialize>() -> Vec<String> {
        match serde_json::to_value(T::default()) {
            Ok(Value::Object(map)) => map.keys().cloned().collect(),
            _ => unreachable!("a struct serializes as a map"),
        }
    }

    #[test]
    fn every_key_read_is_one_docs_results_md_documents() {
        let docs = include_str!("../../../../docs/results.md");
        for key in keys::<Params>().into_iter().chain(keys::<MachineCard>()) {
            // A key is documented whole (`cpu_model`) or by its parts (`tsc.invariant`, `absent[]`).
            let documented = ["`", ".", "[]`"].iter().any(|after| docs.contains(&format!("`{key}{after}")));
            assert!(documented, "docs/results.md does not document `{key}`");
        }
    }

    #[test]
    fn a_parameter_of_the_wrong_kind_is_refused_when_loaded() {
        let mut results = Results::new(&serde_json::json!({"cpu_model": "a CPU", "logical_cpus": 2}));
        let mut run = Run::new("contention");
        run.param("cs_ns", "one hundred");
        results.runs.push(run);
        let err = check(&results).unwrap_err();
        assert!(err.starts_with("contention's parameters: invalid type"), "{err}");
        results.machine = serde_json::json!({"logical_cpus": "two"});
        assert!(check(&results).unwrap_err().starts_with("the machine card: invalid type"));
    }

    #[test]
    fn the_card_and_the_parameters_read_back_what_was_written() {
        let results = Results::new(&serde_json::json!({"cpu_model": "a CPU", "allowed_cpus": "0-3"}));
        assert_eq!(results.cpu_model(), "a CPU");
        assert_eq!(results.machine_card().allowed_cpus.as_deref(), Some("0-3"));
        assert_eq!(Results::new(&serde_json::json!({})).cpu_model(), "unknown CPU");
        let mut run = Run::new("contention");
        run.param("cs_ns", 100).param("min_reps", 3).param("groups_by", "node");
        let params = run.known_params();
        assert_eq!((params.cs_ns, params.min_reps, params.groups_by.as_deref()), (Some(100.0), Some(3), Some("node")));
    }
}
