//! `spinlab info`: what the machine offers for waiting, and what it does not.

use super::cpuid;
use super::perf::{self, PerfCounters};
use super::topology::{format_cpu_list, Placement, Topology};
use crate::measure::pin::allowed_cpus;
use serde::Serialize;
use spinlab::sys::{cpu, tsc};
use std::fs;
use std::path::Path;

/// Everything `spinlab info` reports; also the `machine` object of every results document.
#[derive(Clone, Debug, Serialize)]
pub struct MachineInfo {
    /// The CPU's name (cpuid brand string, or /proc/cpuinfo's `model name`).
    pub cpu_model: String,
    /// Online logical CPUs.
    pub logical_cpus: usize,
    /// The CPUs this process may run on, as a kernel CPU list.
    pub allowed_cpus: String,
    /// Running under a hypervisor (the `hypervisor` CPU flag).
    pub hypervisor: bool,
    /// The shape of the machine.
    pub topology: TopologyInfo,
    /// The groups the topology-aware locks choose by (`spinlab::sys::topology`), per level,
    /// as read from sysfs or declared by `SPINLAB_TOPOLOGY`.
    pub lock_groups: Vec<LockGroups>,
    /// Wait instructions.
    pub wait_features: WaitFeatures,
    /// `/sys/devices/system/cpu/umwait_control`, where present.
    pub umwait_control: Option<UmwaitControl>,
    /// The cycle counter.
    pub tsc: TscInfo,
    /// Hardware performance counters.
    pub perf_counters: PerfCounters,
    /// Kernel release and version.
    pub kernel: String,
    /// The cpufreq scaling governor(s), `None` without a cpufreq driver.
    pub cpufreq_governor: Option<String>,
    /// The cpuidle driver and governor, where present.
    pub cpuidle: Option<String>,
    /// The system clock source.
    pub clocksource: Option<String>,
    /// Plain statements of what this machine lacks.
    pub absent: Vec<String>,
    /// The spinlab version that wrote this.
    pub spinlab_version: String,
}

/// The topology, summarised and in full.
#[derive(Clone, Debug, Serialize)]
pub struct TopologyInfo {
    /// Sockets.
    pub packages: usize,
    /// Physical cores.
    pub cores: usize,
    /// Most hardware threads on one core.
    pub threads_per_core: usize,
    /// Whether any core has SMT siblings.
    pub smt: bool,
    /// NUMA nodes.
    pub numa_nodes: usize,
    /// Last-level cache groups.
    pub llc_groups: usize,
    /// Whether the CPUs are of more than one kind.
    pub hybrid: bool,
    /// Placements this machine can offer, and the reason for those it cannot.
    pub placements: Vec<PlacementInfo>,
    /// The full description.
    pub detail: Topology,
}

/// The groups of one level of the locks' topology model.
#[derive(Clone, Debug, Serialize)]
pub struct LockGroups {
    /// `core`, `llc` or `node`.
    pub level: &'static str,
    /// Each group's CPUs, as a kernel CPU list.
    pub groups: Vec<String>,
    /// Whether `SPINLAB_TOPOLOGY` declared them.
    pub declared: bool,
}

impl LockGroups {
    /// The locks' model under `sys_root`, with the groups `SPINLAB_TOPOLOGY` declares (the
    /// command line has refused a malformed value before this runs); empty if it cannot be read.
    fn of(sys_root: &Path) -> Vec<LockGroups> {
        use spinlab::sys::topology::{self as model, Level};
        let Ok(read) = model::Topology::read(sys_root) else { return Vec::new() };
        let topology = match model::declared_from_env() {
            Ok(Some(declared)) => read.with_declared(&declared),
            _ => read,
        };
        Level::ALL
            .into_iter()
            .map(|level| {
                let groups = topology.groups(level);
                LockGroups {
                    level: level.name(),
                    groups: groups.groups.iter().map(|cpus| format_cpu_list(cpus)).collect(),
                    declared: groups.declared,
                }
            })
            .collect()
    }
}

/// One placement and whether it is available.
#[derive(Clone, Debug, Serialize)]
pub struct PlacementInfo {
    /// Placement name.
    pub placement: Placement,
    /// A pair of CPUs at this placement.
    pub example_cpus: Option<(usize, usize)>,
    /// Why not, when unavailable.
    pub skipped: Option<String>,
}

/// The CPU's wait instructions.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct WaitFeatures {
    /// A spin-wait hint (`pause`).
    pub pause: bool,
    /// Intel WAITPKG: `umonitor`/`umwait`/`tpause`.
    pub waitpkg: bool,
    /// AMD MONITORX/MWAITX.
    pub monitorx: bool,
    /// aarch64 `wfe`.
    pub wfe: bool,
}

/// The kernel's limits on `umwait`.
#[derive(Clone, Debug, Serialize)]
pub struct UmwaitControl {
    /// Whether the deeper C0.2 state is allowed.
    pub enable_c02: Option<String>,
    /// The longest wait the kernel allows, in TSC cycles.
    pub max_time: Option<String>,
}

/// The cycle counter.
#[derive(Clone, Debug, Serialize)]
pub struct TscInfo {
    /// Counts at a constant rate through frequency changes and idle states (cpuid).
    pub invariant: bool,
    /// The kernel's `constant_tsc` flag.
    pub constant_tsc: bool,
    /// The kernel's `nonstop_tsc` flag.
    pub nonstop_tsc: bool,
    /// Ticks per second, calibrated against the OS clock.
    pub frequency_hz: u64,
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.split(':').next().map(str::trim) == Some(key))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn uname() -> String {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".to_string();
    }
    let field = |f: &[libc::c_char]| -> String {
        let bytes: Vec<u8> = f.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!("{} {} {}", field(&u.sysname), field(&u.release), field(&u.version))
}

impl TopologyInfo {
    /// The summary of `topology`, with an example pair or the reason for each placement.
    fn of(topology: &Topology) -> TopologyInfo {
        let placements: Vec<PlacementInfo> = Placement::ALL
            .into_iter()
            .map(|placement| match topology.pair(placement) {
                Ok(pair) => PlacementInfo { placement, example_cpus: Some(pair), skipped: None },
                Err(why) => PlacementInfo { placement, example_cpus: None, skipped: Some(why) },
            })
            .collect();
        TopologyInfo {
            packages: topology.packages(),
            cores: topology.cores.len(),
            threads_per_core: topology.threads_per_core(),
            smt: topology.threads_per_core() > 1,
            numa_nodes: topology.nodes.len(),
            llc_groups: topology.llcs.len(),
            hybrid: !topology.core_classes.is_empty(),
            placements,
            detail: topology.clone(),
        }
    }
}

/// The CPU frequency governors in use, if a cpufreq driver lists any.
fn cpufreq_governor(cpu_dir: &Path) -> Option<String> {
    let mut governors: Vec<String> = fs::read_dir(cpu_dir.join("cpufreq"))
        .map(|d| d.filter_map(|e| e.ok()).filter_map(|e| read(e.path().join("scaling_governor"))).collect())
        .unwrap_or_default();
    governors.sort();
    governors.dedup();
    (!governors.is_empty()).then(|| governors.join(", "))
}

/// The cpuidle driver and governor, if there is a driver.
fn cpuidle(cpu_dir: &Path) -> Option<String> {
    read(cpu_dir.join("cpuidle/current_driver")).map(|driver| {
        let governor = read(cpu_dir.join("cpuidle/current_governor"))
            .or_else(|| read(cpu_dir.join("cpuidle/current_governor_ro")))
            .unwrap_or_else(|| "unknown".into());
        format!("driver {driver}, governor {governor}")
    })
}

/// What this machine lacks, each with the reason, for `spinlab info`'s last lines.
fn absent(info: &MachineInfo) -> Vec<String> {
    let topo = &info.topology;
    let mut absent = Vec::new();
    for p in &topo.placements {
        if let Some(why) = &p.skipped {
            if p.placement != Placement::Llc || topo.numa_nodes == 1 {
                absent.push(format!("placement `{}`: {why}", p.placement));
            }
        }
    }
    if !topo.hybrid {
        absent.push(format!("hybrid cores: {}", topo.detail.core_type_source));
    }
    if !info.perf_counters.readable {
        absent.push(format!("hardware performance counters: {}", info.perf_counters.detail));
    }
    if !info.wait_features.waitpkg {
        absent.push("WAITPKG (umonitor/umwait/tpause): not offered by this CPU".into());
    }
    if !info.wait_features.monitorx {
        absent.push("MONITORX/MWAITX: not offered by this CPU".into());
    }
    if !info.wait_features.wfe && cfg!(target_arch = "aarch64") {
        absent.push("WFE: not offered".into());
    }
    if info.umwait_control.is_none() {
        absent.push("umwait_control: the kernel has no /sys/devices/system/cpu/umwait_control".into());
    }
    if !info.tsc.invariant {
        absent.push(
            "invariant TSC: cpuid does not report it (the counter may change rate or stop in idle states)".into(),
        );
    }
    if info.cpufreq_governor.is_none() {
        absent.push("CPU frequency governor: no cpufreq driver (frequency is not under OS control here)".into());
    }
    absent
}

/// `yes` or `no`.
fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

impl MachineInfo {
    /// Reads the machine (`sys_root` is normally `/sys`). Takes about 50 ms (TSC calibration).
    pub fn gather(sys_root: &Path, topology: &Topology) -> MachineInfo {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let flags: Vec<String> = cpuinfo_field(&cpuinfo, "flags")
            .or_else(|| cpuinfo_field(&cpuinfo, "Features"))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let has_flag = |f: &str| flags.iter().any(|x| x == f);
        let features = cpu::features();
        let cpu_dir = sys_root.join("devices/system/cpu");

        let topo = TopologyInfo::of(topology);

        let umwait_dir = cpu_dir.join("umwait_control");
        let umwait_control = umwait_dir.is_dir().then(|| UmwaitControl {
            enable_c02: read(umwait_dir.join("enable_c02")),
            max_time: read(umwait_dir.join("max_time")),
        });

        let cpufreq_governor = cpufreq_governor(&cpu_dir);
        let cpuidle = cpuidle(&cpu_dir);

        let tsc = TscInfo {
            invariant: features.invariant_tsc,
            constant_tsc: has_flag("constant_tsc"),
            nonstop_tsc: has_flag("nonstop_tsc"),
            frequency_hz: tsc::ticks_per_second(),
        };
        let perf_counters = perf::probe();
        let wait_features = WaitFeatures {
            pause: features.spin_hint,
            waitpkg: features.waitpkg,
            monitorx: features.monitorx,
            wfe: features.wfe,
        };

        let info = MachineInfo {
            cpu_model: cpuid::brand()
                .or_else(|| cpuinfo_field(&cpuinfo, "model name"))
                .unwrap_or_else(|| "unknown".to_string()),
            logical_cpus: topology.cpus.len(),
            allowed_cpus: format_cpu_list(&allowed_cpus()),
            hypervisor: has_flag("hypervisor"),
            topology: topo,
            lock_groups: LockGroups::of(sys_root),
            wait_features,
            umwait_control,
            tsc,
            perf_counters,
            kernel: uname(),
            cpufreq_governor,
            cpuidle,
            clocksource: read(sys_root.join("devices/system/clocksource/clocksource0/current_clocksource")),
            absent: Vec::new(),
            spinlab_version: env!("CARGO_PKG_VERSION").to_string(),
        };
        MachineInfo { absent: absent(&info), ..info }
    }

    /// The human-readable report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut line = |k: &str, v: String| out.push_str(&format!("{k:<22} {v}\n"));
        line("CPU", self.cpu_model.clone());
        line("logical CPUs", format!("{} (this process may use {})", self.logical_cpus, self.allowed_cpus));
        line("virtual machine", yes_no(self.hypervisor).into());
        self.topology_lines(&mut line);
        self.clock_and_wait_lines(&mut line);
        line("kernel", self.kernel.clone());
        line("frequency governor", self.cpufreq_governor.clone().unwrap_or_else(|| "none (no cpufreq driver)".into()));
        line("cpuidle", self.cpuidle.clone().unwrap_or_else(|| "none".into()));
        line("clock source", self.clocksource.clone().unwrap_or_else(|| "unknown".into()));
        if !self.absent.is_empty() {
            out.push_str("\nabsent on this machine:\n");
            for a in &self.absent {
                out.push_str(&format!("  - {a}\n"));
            }
        }
        out
    }

    /// The report's lines on the topology: packages, cores, caches, nodes, core types and
    /// placements.
    fn topology_lines(&self, line: &mut impl FnMut(&str, String)) {
        let t = &self.topology;
        line("packages", t.packages.to_string());
        line(
            "cores",
            format!(
                "{} ({} hardware thread{} per core{})",
                t.cores,
                t.threads_per_core,
                if t.threads_per_core == 1 { "" } else { "s" },
                if t.smt { "" } else { ": no SMT" }
            ),
        );
        for core in t.detail.cores.iter().filter(|c| c.len() > 1).take(8) {
            line("  SMT siblings", format_cpu_list(core));
        }
        for g in &t.detail.llcs {
            let size = g.size_bytes.map(|b| format!("{} KiB ", b / 1024)).unwrap_or_default();
            line("last-level cache", format!("L{} {size}shared by CPUs {}", g.level, format_cpu_list(&g.cpus)));
        }
        if t.detail.llcs.is_empty() {
            line("last-level cache", "not listed by the OS".into());
        }
        for n in &t.detail.nodes {
            line("NUMA node", format!("{}: CPUs {}", n.id, format_cpu_list(&n.cpus)));
        }
        if t.hybrid {
            for c in &t.detail.core_classes {
                line("core type", format!("{}: CPUs {}", c.name, format_cpu_list(&c.cpus)));
            }
            line("  from", t.detail.core_type_source.clone());
        } else {
            line("core types", t.detail.core_type_source.clone());
        }
        for groups in &self.lock_groups {
            let from = if groups.declared { "declared by SPINLAB_TOPOLOGY" } else { "from sysfs" };
            line(&format!("lock groups {}", groups.level), format!("{} ({from})", groups.groups.join(" | ")));
        }
        for p in &t.placements {
            let v = match (&p.example_cpus, &p.skipped) {
                (Some((a, b)), _) => format!("available (e.g. CPUs {a} and {b})"),
                (None, Some(why)) => format!("unavailable: {why}"),
                _ => "unavailable".into(),
            };
            line(&format!("placement {}", p.placement), v);
        }
    }

    /// The report's lines on the wait instructions, the TSC and the performance counters.
    fn clock_and_wait_lines(&self, line: &mut impl FnMut(&str, String)) {
        let w = &self.wait_features;
        line("pause", yes_no(w.pause).into());
        line("WAITPKG", yes_no(w.waitpkg).into());
        line("MONITORX/MWAITX", yes_no(w.monitorx).into());
        line("WFE", yes_no(w.wfe).into());
        match &self.umwait_control {
            Some(u) => line(
                "umwait_control",
                format!(
                    "enable_c02 {}, max_time {}",
                    u.enable_c02.as_deref().unwrap_or("?"),
                    u.max_time.as_deref().unwrap_or("?")
                ),
            ),
            None => line("umwait_control", "absent".into()),
        }
        line(
            "TSC",
            format!(
                "{:.3} GHz, invariant {} (constant_tsc {}, nonstop_tsc {})",
                self.tsc.frequency_hz as f64 / 1e9,
                yes_no(self.tsc.invariant),
                yes_no(self.tsc.constant_tsc),
                yes_no(self.tsc.nonstop_tsc)
            ),
        );
        line(
            "perf counters",
            format!(
                "{}: {}",
                if self.perf_counters.readable { "readable" } else { "not readable" },
                self.perf_counters.detail
            ),
        );
    }
}
