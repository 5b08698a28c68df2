//! What the machine is: topology, wait features, clocks, counters.

pub mod info;
pub mod perf;
mod sysfs;
pub mod topology;

pub use info::MachineInfo;
pub use topology::{GroupBy, Placement, Topology};

/// The 1-, 5- and 15-minute load averages from /proc/loadavg: how busy the machine was
/// around a run (other work competes for the CPUs an experiment pins to).
pub fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}
