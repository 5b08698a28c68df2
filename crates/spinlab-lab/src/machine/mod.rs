//! What the machine is: topology, wait features, clocks, counters.

mod cpuid;
pub mod info;
pub mod perf;
mod sysfs;
pub mod topology;

pub use info::MachineInfo;
pub use topology::{GroupBy, Placement, Topology};
