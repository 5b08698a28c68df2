//! The [`Lab`]: what every experiment of one invocation shares, so `spinlab report`
//! reads the machine and calibrates once.

use crate::error::LabError;
use crate::machine::{MachineInfo, Topology};
use crate::measure::{pin, Clock, Progress, Work};
use std::path::Path;

/// What every experiment of one invocation shares: the machine and its calibrations.
pub struct Lab {
    /// The topology, restricted to the CPUs this process may use.
    pub topology: Topology,
    /// `spinlab info`'s facts, for the results' `machine`.
    pub machine: MachineInfo,
    /// The cycle counter's rate and read cost.
    pub clock: Clock,
    /// Calibrated busy work.
    pub work: Work,
    /// Whether to show progress bars.
    pub show_progress: bool,
}

impl Lab {
    /// Reads the machine under `sys_root` and calibrates (about 0.1 s).
    pub fn new(sys_root: &Path, show_progress: bool) -> Result<Lab, LabError> {
        let full = Topology::read(sys_root).map_err(|e| LabError::failed(format!("reading the topology: {e}")))?;
        let allowed = pin::allowed_cpus();
        let topology = full.restrict(&allowed);
        if topology.cpus.is_empty() {
            return Err(LabError::failed(format!(
                "none of the CPUs this process may use ({allowed:?}) is listed as online under {}",
                sys_root.display()
            )));
        }
        let machine = MachineInfo::gather(sys_root, &full);
        // Calibrate pinned, so a migration does not land in the middle of a timing.
        let first = topology.cpus[0].id;
        let (clock, work) = pin::with_pinned(first, || (Clock::calibrate(), Work::calibrate()));
        Ok(Lab { topology, machine, clock, work, show_progress })
    }

    /// The first usable CPU: where one-thread measurements and calibrations run.
    pub fn home_cpu(&self) -> usize {
        self.topology.cpus[0].id
    }

    /// Usable CPUs.
    pub fn cpus(&self) -> usize {
        self.topology.cpus.len()
    }

    /// A progress bar over `total` steps.
    pub fn progress(&self, what: &str, total: u64) -> Progress {
        Progress::new(what, total, self.show_progress)
    }
}
