//! The machine's shape as the topology-aware locks see it: at each level (core: SMT siblings;
//! `llc`: CPUs sharing a last-level cache; node: a NUMA node) the CPUs fall into groups, and a
//! thread asks which group it runs in ([`current_group`]).
//!
//! The model is read once per process ([`machine`]) from sysfs: `cpu/online`,
//! `cpuN/topology/thread_siblings_list`, the highest data or unified
//! `cpuN/cache/indexM/shared_cpu_list`, and `node/nodeN/cpulist`. A level the OS does not
//! describe is one group of every CPU. [`Topology::read`] takes the sysfs root, so tests read
//! trees of their own.
//!
//! `SPINLAB_TOPOLOGY` declares groups instead, so that the paths that tell groups apart run
//! on a machine that has one node. Grammar (docs/topology.md):
//!
//! ```text
//! SPINLAB_TOPOLOGY = LEVEL:CPUS|CPUS|...[;LEVEL:CPUS|...]    LEVEL: core, llc or node
//! CPUS             = a CPU list as sysfs writes them: 0-3,8
//! ```
//!
//! `node:0|1` puts CPU 0 in node group 0 and CPU 1 in node group 1. Each declared level
//! replaces what sysfs said for that level alone; CPUs that none of its groups names form one
//! more group after them. [`parse_declared`] rejects a malformed value with one line naming
//! what was wrong and what is accepted; [`machine`] (a library must not exit) then keeps what
//! sysfs said, and the preload library and the lab refuse to start.
//!
//! Cost of [`current_group`]: `sched_getcpu()`, which glibc answers without a system call
//! (from the thread's rseq area where the kernel offers it, otherwise the vDSO's `getcpu`),
//! then one load from a table indexed by CPU. The answer is a hint: the thread may migrate at
//! once, and the locks use it only to choose whom to hand over to.

use crate::sys::measured::Measured;
use std::fmt;
use std::path::Path;

/// The variable that declares groups.
pub const ENV: &str = "SPINLAB_TOPOLOGY";

/// The largest CPU number a declaration may name; tables are indexed by CPU.
pub const MAX_DECLARED_CPU: usize = 4095;

/// A level at which CPUs form groups. (Below them all is the CPU itself.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// The SMT siblings of one core.
    Core,
    /// The CPUs under one last-level cache.
    Llc,
    /// The CPUs of one NUMA node.
    Node,
}

impl Level {
    /// Every level, innermost first.
    pub const ALL: [Level; 3] = [Level::Core, Level::Llc, Level::Node];

    /// The level's name in `SPINLAB_TOPOLOGY` and in `spinlab info`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Core => "core",
            Level::Llc => "llc",
            Level::Node => "node",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The groups of one level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Groups {
    /// Each group's CPUs, ascending; groups are numbered by their place here.
    pub groups: Vec<Vec<usize>>,
    /// Whether `SPINLAB_TOPOLOGY` declared them (rather than sysfs).
    pub declared: bool,
}

/// Groups declared by a `SPINLAB_TOPOLOGY` value: [`parse_declared`]'s answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared {
    /// Each declared level with its groups, in the order written.
    pub levels: Vec<(Level, Vec<Vec<usize>>)>,
}

/// The machine's groups at every level, and each CPU's group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// The online CPUs, ascending.
    pub cpus: Vec<usize>,
    levels: [Groups; 3],
    /// Per level, the group of each CPU number (`u32::MAX`: not a known CPU).
    group_of: [Vec<u32>; 3],
}

impl Topology {
    /// One group of `cpus` at every level: a machine the OS describes no further.
    pub fn flat(cpus: Vec<usize>) -> Topology {
        let one = || Groups { groups: vec![cpus.clone()], declared: false };
        Topology::from_levels(cpus.clone(), [one(), one(), one()])
    }

    fn from_levels(cpus: Vec<usize>, levels: [Groups; 3]) -> Topology {
        let table = |groups: &Groups| {
            let len = groups.groups.iter().flatten().chain(&cpus).max().map_or(0, |&max| max + 1);
            let mut table = vec![u32::MAX; len];
            for (number, group) in groups.groups.iter().enumerate() {
                for &cpu in group {
                    table[cpu] = number as u32;
                }
            }
            table
        };
        let group_of = [table(&levels[0]), table(&levels[1]), table(&levels[2])];
        Topology { cpus, levels, group_of }
    }

    /// Reads the model from the sysfs tree at `sys_root` (normally `/sys`).
    pub fn read(sys_root: &Path) -> Result<Topology, String> {
        let read = |rel: String| std::fs::read_to_string(sys_root.join(&rel)).ok().map(|t| (rel, t));
        let list = |rel: String| -> Result<Option<Vec<usize>>, String> {
            read(rel)
                .map(|(rel, text)| parse_cpu_list(&text).map_err(|e| format!("{}: {e}", sys_root.join(rel).display())))
                .transpose()
        };
        let cpu_dir = sys_root.join("devices/system/cpu");
        let cpus = match list("devices/system/cpu/online".into())? {
            Some(cpus) => cpus,
            None => numbered_entries(&cpu_dir, "cpu"),
        };
        if cpus.is_empty() {
            return Err(format!("no CPUs listed under {}", cpu_dir.display()));
        }
        let mut cores = Vec::new();
        let mut llcs = Vec::new();
        for &cpu in &cpus {
            let siblings = list(format!("devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"))?;
            cores.push(siblings.unwrap_or_else(|| vec![cpu]));
            llcs.push(last_level_cache(sys_root, cpu, &list)?.unwrap_or_else(|| cpus.clone()));
        }
        let mut nodes = Vec::new();
        for node in numbered_entries(&sys_root.join("devices/system/node"), "node") {
            if let Some(node_cpus) = list(format!("devices/system/node/node{node}/cpulist"))? {
                nodes.push(node_cpus);
            }
        }
        let groups = |sets: Vec<Vec<usize>>| Groups { groups: distinct_groups(sets, &cpus), declared: false };
        let nodes =
            if nodes.iter().flatten().any(|c| cpus.contains(c)) { groups(nodes) } else { groups(vec![cpus.clone()]) };
        Ok(Topology::from_levels(cpus.clone(), [groups(cores), groups(llcs), nodes]))
    }

    /// This model with the levels of `declared` replaced by its groups (marked declared); CPUs
    /// that a declared level does not name form one more group at that level.
    pub fn with_declared(self, declared: &Declared) -> Topology {
        let mut levels = self.levels;
        for (level, groups) in &declared.levels {
            let mut groups = groups.clone();
            let rest: Vec<usize> =
                self.cpus.iter().copied().filter(|c| !groups.iter().flatten().any(|g| g == c)).collect();
            if !rest.is_empty() {
                groups.push(rest);
            }
            levels[level.index()] = Groups { groups, declared: true };
        }
        Topology::from_levels(self.cpus, levels)
    }

    /// The groups at `level`.
    pub fn groups(&self, level: Level) -> &Groups {
        &self.levels[level.index()]
    }

    /// The group of `cpu` at `level`; 0 for a CPU the model does not know (one brought
    /// online after it was read).
    #[inline]
    pub fn group_of(&self, level: Level, cpu: usize) -> usize {
        match self.group_of[level.index()].get(cpu) {
            Some(&group) if group != u32::MAX => group as usize,
            _ => 0,
        }
    }
}

/// The numbers `N` of the entries `PREFIXN` in `dir`, ascending.
fn numbered_entries(dir: &Path, prefix: &str) -> Vec<usize> {
    let mut numbers: Vec<usize> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_prefix(prefix)?.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    numbers.sort_unstable();
    numbers
}

/// The CPUs sharing `cpu`'s highest-level data or unified cache, if sysfs lists its caches.
fn last_level_cache(
    sys_root: &Path,
    cpu: usize,
    list: &dyn Fn(String) -> Result<Option<Vec<usize>>, String>,
) -> Result<Option<Vec<usize>>, String> {
    let dir = format!("devices/system/cpu/cpu{cpu}/cache");
    let mut best: Option<(u32, Vec<usize>)> = None;
    for index in numbered_entries(&sys_root.join(&dir), "index") {
        let field = |name: &str| std::fs::read_to_string(sys_root.join(format!("{dir}/index{index}/{name}"))).ok();
        if field("type").is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        let Some(level) = field("level").and_then(|l| l.trim().parse::<u32>().ok()) else { continue };
        if best.as_ref().is_none_or(|(best, _)| level > *best) {
            if let Some(shared) = list(format!("{dir}/index{index}/shared_cpu_list"))? {
                best = Some((level, shared));
            }
        }
    }
    Ok(best.map(|(_, cpus)| cpus))
}

/// Each CPU's set restricted to `cpus`, duplicates merged, in order of first appearance; a
/// CPU in none of them gets a group of its own.
fn distinct_groups(sets: Vec<Vec<usize>>, cpus: &[usize]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for set in sets {
        let set: Vec<usize> = set.into_iter().filter(|c| cpus.contains(c)).collect();
        if !set.is_empty() && !groups.contains(&set) && !set.iter().any(|c| groups.iter().flatten().any(|g| g == c)) {
            groups.push(set);
        }
    }
    for &cpu in cpus {
        if !groups.iter().flatten().any(|&g| g == cpu) {
            groups.push(vec![cpu]);
        }
    }
    groups
}

/// Parses a CPU list as sysfs writes them (`0-3,8,10-11`), ascending and without duplicates.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let text = text.trim();
    let mut cpus = Vec::new();
    if text.is_empty() {
        return Ok(cpus);
    }
    let bad = || format!("`{text}` is not a CPU list such as 0-3,8");
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Writes a CPU list as sysfs does (`0-3,8`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        while i + 1 < sorted.len() && sorted[i + 1] == sorted[i] + 1 {
            i += 1;
        }
        parts.push(if sorted[i] == start { start.to_string() } else { format!("{start}-{}", sorted[i]) });
        i += 1;
    }
    parts.join(",")
}

/// What [`parse_declared`]'s errors say is accepted.
const ACCEPTED: &str =
    "valid values: LEVEL:CPUS|CPUS|...[;LEVEL:...] with LEVEL one of core, llc, node and CPUS a CPU list such as 0-3,8";

/// Parses a `SPINLAB_TOPOLOGY` value. The error is one line: the value, what is wrong with
/// it, and what is accepted.
///
/// ```
/// use spinlab::sys::topology::{parse_declared, Level};
/// let declared = parse_declared("node:0|1").unwrap();
/// assert_eq!(declared.levels, vec![(Level::Node, vec![vec![0], vec![1]])]);
/// let err = parse_declared("socket:0|1").unwrap_err();
/// assert!(err.starts_with("SPINLAB_TOPOLOGY=socket:0|1 is malformed: unknown level `socket`; valid values: LEVEL:"));
/// ```
pub fn parse_declared(text: &str) -> Result<Declared, String> {
    let refuse = |why: String| format!("{ENV}={text} is malformed: {why}; {ACCEPTED}");
    if text.trim().is_empty() {
        return Err(refuse("the value is empty".into()));
    }
    let mut levels: Vec<(Level, Vec<Vec<usize>>)> = Vec::new();
    for part in text.split(';') {
        let Some((name, groups)) = part.split_once(':') else {
            return Err(refuse(format!("`{part}` does not start with LEVEL:")));
        };
        let level = Level::ALL
            .into_iter()
            .find(|l| l.name() == name.trim())
            .ok_or_else(|| refuse(format!("unknown level `{}`", name.trim())))?;
        if levels.iter().any(|(seen, _)| *seen == level) {
            return Err(refuse(format!("level `{level}` is declared twice")));
        }
        let mut parsed: Vec<Vec<usize>> = Vec::new();
        for group in groups.split('|') {
            let cpus = parse_cpu_list(group).map_err(refuse)?;
            if cpus.is_empty() {
                return Err(refuse(format!("level `{level}` has an empty group")));
            }
            if let Some(&cpu) = cpus.iter().find(|&&c| c > MAX_DECLARED_CPU) {
                return Err(refuse(format!("CPU {cpu} is past {MAX_DECLARED_CPU}")));
            }
            if let Some(&cpu) = cpus.iter().find(|c| parsed.iter().flatten().any(|p| p == *c)) {
                return Err(refuse(format!("CPU {cpu} is in two `{level}` groups")));
            }
            parsed.push(cpus);
        }
        levels.push((level, parsed));
    }
    Ok(Declared { levels })
}

/// This process's model: sysfs at `/sys`, with the groups `SPINLAB_TOPOLOGY` declares (a
/// malformed value is ignored here; [`declared_from_env`] reports it). Read at the first call.
pub fn machine() -> &'static Topology {
    static MACHINE: Measured<Topology> = Measured::new();
    MACHINE.get(|| {
        let read = Topology::read(Path::new("/sys"))
            .unwrap_or_else(|_| Topology::flat((0..crate::sys::cpu::process_cpus().max(1)).collect()));
        match declared_from_env() {
            Ok(Some(declared)) => read.with_declared(&declared),
            _ => read,
        }
    })
}

/// The groups `SPINLAB_TOPOLOGY` declares: `None` when it is unset or empty, the error of
/// [`parse_declared`] when it is malformed (or not UTF-8).
pub fn declared_from_env() -> Result<Option<Declared>, String> {
    match std::env::var(ENV) {
        Ok(text) if text.is_empty() => Ok(None),
        Ok(text) => parse_declared(&text).map(Some),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{ENV}=… is malformed: not UTF-8; {ACCEPTED}")),
    }
}

/// The CPU this thread runs on now (`sched_getcpu`), or `None` if the kernel cannot say.
#[inline]
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    (cpu >= 0).then_some(cpu as usize)
}

/// The group at `level` of the CPU this thread runs on now, in [`machine`]'s model (the module
/// docs give the cost). A hint: the thread may be elsewhere by the time it is read.
#[inline]
pub fn current_group(level: Level) -> usize {
    machine().group_of(level, current_cpu().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn refused(text: &str) -> String {
        parse_declared(text).unwrap_err()
    }

    #[test]
    fn declarations_parse_into_levels_and_groups() {
        let declared = parse_declared("node:0-1,4|2-3;core:0|1|2|3").unwrap();
        assert_eq!(
            declared.levels,
            vec![
                (Level::Node, vec![vec![0, 1, 4], vec![2, 3]]),
                (Level::Core, vec![vec![0], vec![1], vec![2], vec![3]]),
            ]
        );
        assert_eq!(parse_declared("llc:0").unwrap().levels, vec![(Level::Llc, vec![vec![0]])]);
    }

    #[test]
    fn malformed_declarations_are_refused_in_one_line() {
        let cases = [
            ("", "the value is empty"),
            ("0|1", "`0|1` does not start with LEVEL:"),
            ("socket:0|1", "unknown level `socket`"),
            ("node:0|1;node:2", "level `node` is declared twice"),
            ("node:0||1", "level `node` has an empty group"),
            ("node:0|x", "`x` is not a CPU list such as 0-3,8"),
            ("node:3-1", "`3-1` is not a CPU list such as 0-3,8"),
            ("node:0-2|2", "CPU 2 is in two `node` groups"),
            ("node:5000", "CPU 5000 is past 4095"),
        ];
        for (text, why) in cases {
            assert_eq!(refused(text), format!("SPINLAB_TOPOLOGY={text} is malformed: {why}; {ACCEPTED}"));
            assert!(!refused(text).contains('\n'));
        }
    }

    #[test]
    fn cpu_lists_round_trip() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(format_cpu_list(&[11, 0, 1, 2, 3, 8, 10]), "0-3,8,10-11");
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<usize>::new());
    }

    /// A sysfs tree under a fresh temporary directory, removed on drop.
    struct FakeSys(PathBuf);

    impl FakeSys {
        /// A fresh tree of its own: tests run in parallel, and several build the same one.
        fn new(name: &str) -> FakeSys {
            static TREES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let tree = TREES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let root = std::env::temp_dir().join(format!("spinlab-topology-{name}-{}-{tree}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            FakeSys(root)
        }
        fn write(&self, rel: &str, text: &str) -> &Self {
            let path = self.0.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
            self
        }
    }

    impl Drop for FakeSys {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Two nodes of two cores of two SMT siblings; one L3 per node, an L1i to be skipped.
    fn two_nodes() -> FakeSys {
        let sys = FakeSys::new("two-nodes");
        sys.write("devices/system/cpu/online", "0-7\n");
        for cpu in 0..8 {
            let base = format!("devices/system/cpu/cpu{cpu}");
            let sibling = cpu ^ 1;
            let (lo, hi) = (cpu.min(sibling), cpu.max(sibling));
            sys.write(&format!("{base}/topology/thread_siblings_list"), &format!("{lo}-{hi}\n"));
            sys.write(&format!("{base}/cache/index0/type"), "Instruction\n");
            sys.write(&format!("{base}/cache/index0/level"), "4\n");
            sys.write(&format!("{base}/cache/index0/shared_cpu_list"), &format!("{cpu}\n"));
            sys.write(&format!("{base}/cache/index1/type"), "Data\n");
            sys.write(&format!("{base}/cache/index1/level"), "1\n");
            sys.write(&format!("{base}/cache/index1/shared_cpu_list"), &format!("{lo}-{hi}\n"));
            sys.write(&format!("{base}/cache/index3/type"), "Unified\n");
            sys.write(&format!("{base}/cache/index3/level"), "3\n");
            sys.write(&format!("{base}/cache/index3/shared_cpu_list"), if cpu < 4 { "0-3\n" } else { "4-7\n" });
        }
        sys.write("devices/system/node/node0/cpulist", "0-3\n");
        sys.write("devices/system/node/node1/cpulist", "4-7\n");
        sys
    }

    #[test]
    fn sysfs_levels_are_read_from_a_tree() {
        let sys = two_nodes();
        let topology = Topology::read(&sys.0).unwrap();
        assert_eq!(topology.cpus, (0..8).collect::<Vec<_>>());
        assert_eq!(topology.groups(Level::Core).groups, vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]);
        assert_eq!(topology.groups(Level::Llc).groups, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert_eq!(topology.groups(Level::Node).groups, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert!(!topology.groups(Level::Node).declared);
        assert_eq!(topology.group_of(Level::Core, 5), 2);
        assert_eq!(topology.group_of(Level::Node, 5), 1);
        assert_eq!(topology.group_of(Level::Node, 99), 0, "an unknown CPU falls in group 0");
    }

    #[test]
    fn a_tree_without_caches_or_nodes_is_one_group_per_level() {
        let sys = FakeSys::new("bare");
        sys.write("devices/system/cpu/cpu0/topology/core_id", "0\n")
            .write("devices/system/cpu/cpu1/topology/core_id", "1\n");
        let topology = Topology::read(&sys.0).unwrap();
        assert_eq!(topology.cpus, vec![0, 1]);
        assert_eq!(topology.groups(Level::Core).groups, vec![vec![0], vec![1]], "no siblings listed: a core each");
        assert_eq!(topology.groups(Level::Llc).groups, vec![vec![0, 1]]);
        assert_eq!(topology.groups(Level::Node).groups, vec![vec![0, 1]]);
    }

    #[test]
    fn a_malformed_sysfs_list_names_its_file() {
        let sys = FakeSys::new("malformed");
        sys.write("devices/system/cpu/online", "0-x\n");
        let err = Topology::read(&sys.0).unwrap_err();
        assert!(err.contains("devices/system/cpu/online: `0-x` is not a CPU list"), "{err}");
    }

    #[test]
    fn declared_groups_replace_one_level_and_gather_the_rest() {
        let sys = two_nodes();
        let topology = Topology::read(&sys.0).unwrap().with_declared(&parse_declared("node:0|1").unwrap());
        let nodes = topology.groups(Level::Node);
        assert!(nodes.declared);
        assert_eq!(nodes.groups, vec![vec![0], vec![1], vec![2, 3, 4, 5, 6, 7]]);
        assert_eq!((topology.group_of(Level::Node, 0), topology.group_of(Level::Node, 1)), (0, 1));
        assert_eq!(topology.group_of(Level::Node, 7), 2);
        assert!(!topology.groups(Level::Llc).declared, "other levels stay as sysfs said");
    }

    #[test]
    fn this_thread_has_a_group_at_every_level() {
        for level in Level::ALL {
            assert!(current_group(level) < machine().groups(level).groups.len());
        }
    }
}
