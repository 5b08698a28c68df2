//! The machine's shape as the OS describes it in sysfs: which logical CPUs are SMT siblings,
//! which share a last-level cache, which belong to which NUMA node, and which are performance
//! or efficiency cores. The sysfs root is a parameter so tests can read canned trees.
//!
//! Placements are named by what two threads share: `same-cpu` (one logical CPU),
//! `smt` (sibling hardware threads of one core), `core` (different cores, one last-level
//! cache), `llc` (different last-level caches, one NUMA node), `node` (different nodes).

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

/// What two threads share, from closest to farthest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Time-sharing one logical CPU.
    SameCpu,
    /// Sibling hardware threads of one core.
    Smt,
    /// Different cores under one last-level cache.
    Core,
    /// Different last-level caches on one NUMA node.
    Llc,
    /// Different NUMA nodes.
    Node,
}

impl Placement {
    /// Every placement, closest first.
    pub const ALL: [Placement; 5] =
        [Placement::SameCpu, Placement::Smt, Placement::Core, Placement::Llc, Placement::Node];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Placement::SameCpu => "same-cpu",
            Placement::Smt => "smt",
            Placement::Core => "core",
            Placement::Llc => "llc",
            Placement::Node => "node",
        }
    }

    /// Parses a name; the error lists the accepted ones.
    pub fn parse(name: &str) -> Result<Placement, String> {
        Placement::ALL.into_iter().find(|p| p.name() == name).ok_or_else(|| {
            format!("unknown placement `{name}`; accepted: {}", Placement::ALL.map(Placement::name).join(", "))
        })
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One logical CPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cpu {
    /// The kernel's CPU number.
    pub id: usize,
    /// `physical_package_id` (socket), if the OS gives it.
    pub package: Option<u32>,
    /// `core_id` (unique only within a package), if the OS gives it.
    pub core_id: Option<u32>,
    /// Index into [`Topology::cores`]: CPUs with the same index are SMT siblings.
    pub core: usize,
    /// Index into [`Topology::llcs`], if the OS lists caches.
    pub llc: Option<usize>,
    /// Index into [`Topology::nodes`].
    pub node: usize,
    /// `performance` or `efficiency` on a hybrid part, where the OS says.
    pub core_type: Option<String>,
    /// `cpu_capacity` (1024 = the fastest CPU), where the OS gives it.
    pub capacity: Option<u32>,
}

/// CPUs sharing one cache.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CacheGroup {
    /// Cache level (3 for an L3).
    pub level: u32,
    /// `Unified`, `Data`, …
    pub kind: String,
    /// Size in bytes, if given.
    pub size_bytes: Option<u64>,
    /// The CPUs sharing it.
    pub cpus: Vec<usize>,
}

/// One NUMA node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Node {
    /// The kernel's node number.
    pub id: usize,
    /// Its CPUs.
    pub cpus: Vec<usize>,
}

/// A set of CPUs of one kind on a hybrid part.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoreClass {
    /// `performance` or `efficiency`.
    pub name: String,
    /// Its CPUs.
    pub cpus: Vec<usize>,
}

/// The machine's shape.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Topology {
    /// Online CPUs (restricted to the allowed ones by [`Topology::restrict`]), by id.
    pub cpus: Vec<Cpu>,
    /// SMT sibling groups: the logical CPUs of each physical core.
    pub cores: Vec<Vec<usize>>,
    /// The last-level cache groups.
    pub llcs: Vec<CacheGroup>,
    /// NUMA nodes.
    pub nodes: Vec<Node>,
    /// Whether the OS gave node information (without it, all CPUs are taken as one node).
    pub nodes_from_os: bool,
    /// Core classes of a hybrid part; empty when the CPUs are all of one kind.
    pub core_classes: Vec<CoreClass>,
    /// Where the core classes were read from, or why there are none.
    pub core_type_source: String,
    /// `devices/system/cpu/smt/control` (`on`, `off`, `notsupported`, …), if present.
    pub smt_control: Option<String>,
}

/// How contention groups threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroupBy {
    /// NUMA nodes when there are several, otherwise halves of the CPU list.
    Auto,
    /// NUMA nodes.
    Node,
    /// Last-level cache groups.
    Llc,
    /// First and second half of the CPU list.
    Halves,
}

impl GroupBy {
    /// Parses `auto`, `node`, `llc`, `halves`.
    pub fn parse(s: &str) -> Result<GroupBy, String> {
        match s {
            "auto" => Ok(GroupBy::Auto),
            "node" => Ok(GroupBy::Node),
            "llc" => Ok(GroupBy::Llc),
            "halves" => Ok(GroupBy::Halves),
            _ => Err(format!("unknown grouping `{s}`; accepted: auto, node, llc, halves")),
        }
    }
}

/// A group of CPUs whose threads' acquisitions are added up.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// How the group is named in results (`node 0`, `first half (CPUs 0-3)`, …).
    pub label: String,
    /// Its CPUs.
    pub cpus: Vec<usize>,
}

/// Parses a kernel CPU list (`0-3,8,10-11`).
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let text = text.trim();
    let mut cpus = Vec::new();
    if text.is_empty() {
        return Ok(cpus);
    }
    for part in text.split(',') {
        let bad = || format!("malformed CPU list `{text}`");
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

/// Writes a CPU list the way the kernel does (`0-3,8`).
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

/// Parses a cache size (`32K`, `1M`, `512`).
fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, mult) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 1024),
        'M' | 'm' => (&t[..t.len() - 1], 1024 * 1024),
        'G' | 'g' => (&t[..t.len() - 1], 1024 * 1024 * 1024),
        _ => (t, 1),
    };
    digits.parse::<u64>().ok().map(|n| n * mult)
}

struct Sysfs {
    root: PathBuf,
}

impl Sysfs {
    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
    fn read(&self, rel: &str) -> Option<String> {
        fs::read_to_string(self.path(rel)).ok().map(|s| s.trim().to_string())
    }
    fn list(&self, rel: &str) -> Result<Option<Vec<usize>>, String> {
        self.read(rel).map(|t| parse_cpu_list(&t).map_err(|e| format!("{}: {e}", self.path(rel).display()))).transpose()
    }
    fn entries(&self, rel: &str) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.path(rel))
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        names.sort();
        names
    }
}

/// The number after `prefix` in `name` (`cpu12` → 12), if `name` is exactly that.
fn numbered(name: &str, prefix: &str) -> Option<usize> {
    name.strip_prefix(prefix).and_then(|n| n.parse().ok())
}

impl Topology {
    /// Reads the topology under `sys_root` (normally `/sys`).
    pub fn read(sys_root: &Path) -> Result<Topology, String> {
        let sys = Sysfs { root: sys_root.to_path_buf() };
        let cpu_dir = "devices/system/cpu";
        let ids = match sys.list(&format!("{cpu_dir}/online"))? {
            Some(ids) => ids,
            None => {
                let mut ids: Vec<usize> = sys.entries(cpu_dir).iter().filter_map(|n| numbered(n, "cpu")).collect();
                ids.sort_unstable();
                ids
            }
        };
        if ids.is_empty() {
            return Err(format!("no CPUs listed under {}", sys.path(cpu_dir).display()));
        }

        // SMT sibling groups, numbered in order of first appearance.
        let mut cores: Vec<Vec<usize>> = Vec::new();
        let mut core_of = BTreeMap::new();
        for &id in &ids {
            let siblings = sys.list(&format!("{cpu_dir}/cpu{id}/topology/thread_siblings_list"))?.unwrap_or(vec![id]);
            let siblings: Vec<usize> = siblings.into_iter().filter(|s| ids.contains(s)).collect();
            let index = match cores.iter().position(|c| *c == siblings) {
                Some(i) => i,
                None => {
                    cores.push(siblings);
                    cores.len() - 1
                }
            };
            core_of.insert(id, index);
        }

        // The last-level cache: the highest level any CPU lists, data or unified.
        let mut llcs: Vec<CacheGroup> = Vec::new();
        let mut llc_of = BTreeMap::new();
        let mut per_cpu_llc = BTreeMap::new();
        for &id in &ids {
            let cache_dir = format!("{cpu_dir}/cpu{id}/cache");
            let mut best: Option<CacheGroup> = None;
            for index in sys.entries(&cache_dir).iter().filter(|n| numbered(n, "index").is_some()) {
                let base = format!("{cache_dir}/{index}");
                let kind = sys.read(&format!("{base}/type")).unwrap_or_default();
                if kind == "Instruction" {
                    continue;
                }
                let Some(level) = sys.read(&format!("{base}/level")).and_then(|l| l.parse::<u32>().ok()) else {
                    continue;
                };
                let cpus = sys.list(&format!("{base}/shared_cpu_list"))?.unwrap_or(vec![id]);
                let size_bytes = sys.read(&format!("{base}/size")).and_then(|s| parse_size(&s));
                if best.as_ref().is_none_or(|b| level > b.level) {
                    best = Some(CacheGroup { level, kind, size_bytes, cpus });
                }
            }
            if let Some(group) = best {
                per_cpu_llc.insert(id, group);
            }
        }
        let top_level = per_cpu_llc.values().map(|g| g.level).max();
        for (&id, group) in &per_cpu_llc {
            if Some(group.level) != top_level {
                continue; // a CPU that lists no cache at the top level shares none there
            }
            let cpus: Vec<usize> = group.cpus.iter().copied().filter(|c| ids.contains(c)).collect();
            let index = match llcs.iter().position(|g| g.cpus == cpus) {
                Some(i) => i,
                None => {
                    llcs.push(CacheGroup { cpus, ..group.clone() });
                    llcs.len() - 1
                }
            };
            llc_of.insert(id, index);
        }

        // NUMA nodes; without them, one node holds everything.
        let node_dir = "devices/system/node";
        let mut nodes = Vec::new();
        for name in sys.entries(node_dir) {
            let Some(node_id) = numbered(&name, "node") else { continue };
            let cpus: Vec<usize> = sys
                .list(&format!("{node_dir}/{name}/cpulist"))?
                .unwrap_or_default()
                .into_iter()
                .filter(|c| ids.contains(c))
                .collect();
            if !cpus.is_empty() {
                nodes.push(Node { id: node_id, cpus });
            }
        }
        nodes.sort_by_key(|n| n.id);
        let nodes_from_os = !nodes.is_empty();
        if !nodes_from_os {
            nodes.push(Node { id: 0, cpus: ids.clone() });
        }

        let capacities: BTreeMap<usize, u32> = ids
            .iter()
            .filter_map(|&id| {
                sys.read(&format!("{cpu_dir}/cpu{id}/cpu_capacity")).and_then(|c| c.parse().ok()).map(|c| (id, c))
            })
            .collect();
        let (core_classes, core_type_source) = core_classes(&sys, &ids, &capacities)?;

        let cpus = ids
            .iter()
            .map(|&id| Cpu {
                id,
                package: sys
                    .read(&format!("{cpu_dir}/cpu{id}/topology/physical_package_id"))
                    .and_then(|p| p.parse().ok()),
                core_id: sys.read(&format!("{cpu_dir}/cpu{id}/topology/core_id")).and_then(|p| p.parse().ok()),
                core: core_of[&id],
                llc: llc_of.get(&id).copied(),
                node: nodes.iter().position(|n| n.cpus.contains(&id)).unwrap_or(0),
                core_type: core_classes.iter().find(|c| c.cpus.contains(&id)).map(|c| c.name.clone()),
                capacity: capacities.get(&id).copied(),
            })
            .collect();

        Ok(Topology {
            cpus,
            cores,
            llcs,
            nodes,
            nodes_from_os,
            core_classes,
            core_type_source,
            smt_control: sys.read(&format!("{cpu_dir}/smt/control")),
        })
    }

    /// Keeps only `allowed` CPUs (the process's affinity mask); groups are cut to match and
    /// emptied ones dropped, indices renumbered.
    pub fn restrict(&self, allowed: &[usize]) -> Topology {
        let keep = |cpus: &[usize]| -> Vec<usize> { cpus.iter().copied().filter(|c| allowed.contains(c)).collect() };
        let cores: Vec<Vec<usize>> = self.cores.iter().map(|c| keep(c)).filter(|c| !c.is_empty()).collect();
        let llcs: Vec<CacheGroup> = self
            .llcs
            .iter()
            .map(|g| CacheGroup { cpus: keep(&g.cpus), ..g.clone() })
            .filter(|g| !g.cpus.is_empty())
            .collect();
        let nodes: Vec<Node> =
            self.nodes.iter().map(|n| Node { id: n.id, cpus: keep(&n.cpus) }).filter(|n| !n.cpus.is_empty()).collect();
        let core_classes = self
            .core_classes
            .iter()
            .map(|c| CoreClass { name: c.name.clone(), cpus: keep(&c.cpus) })
            .filter(|c| !c.cpus.is_empty())
            .collect();
        let cpus = self
            .cpus
            .iter()
            .filter(|c| allowed.contains(&c.id))
            .map(|c| Cpu {
                core: cores.iter().position(|g| g.contains(&c.id)).unwrap_or(0),
                llc: llcs.iter().position(|g| g.cpus.contains(&c.id)),
                node: nodes.iter().position(|n| n.cpus.contains(&c.id)).unwrap_or(0),
                ..c.clone()
            })
            .collect();
        Topology { cpus, cores, llcs, nodes, core_classes, ..self.clone() }
    }

    /// The CPU ids, ascending.
    pub fn cpu_ids(&self) -> Vec<usize> {
        self.cpus.iter().map(|c| c.id).collect()
    }

    fn cpu(&self, id: usize) -> Option<&Cpu> {
        self.cpus.iter().find(|c| c.id == id)
    }

    /// Most hardware threads on one core (1: no SMT).
    pub fn threads_per_core(&self) -> usize {
        self.cores.iter().map(Vec::len).max().unwrap_or(1)
    }

    /// Distinct physical packages (sockets).
    pub fn packages(&self) -> usize {
        let mut p: Vec<Option<u32>> = self.cpus.iter().map(|c| c.package).collect();
        p.sort_unstable();
        p.dedup();
        p.len()
    }

    /// What CPUs `a` and `b` share.
    pub fn relation(&self, a: usize, b: usize) -> Option<Placement> {
        let (ca, cb) = (self.cpu(a)?, self.cpu(b)?);
        Some(if a == b {
            Placement::SameCpu
        } else if ca.core == cb.core {
            Placement::Smt
        } else if ca.node != cb.node {
            Placement::Node
        } else if ca.llc.is_some() && cb.llc.is_some() && ca.llc != cb.llc {
            Placement::Llc
        } else {
            // One LLC, or no cache information (then taken as one per node).
            Placement::Core
        })
    }

    /// One CPU per unit at `placement`: the CPUs threads are spread over, round-robin, when
    /// every two of them must share exactly what the placement names. Errors say why the
    /// machine cannot offer it.
    pub fn placement_cpus(&self, placement: Placement) -> Result<Vec<usize>, String> {
        let first_of = |cpus: &[usize]| cpus.iter().copied().min();
        match placement {
            Placement::SameCpu => self.cpus.first().map(|c| vec![c.id]).ok_or_else(|| "no CPU".to_string()),
            Placement::Smt => self.cores.iter().find(|c| c.len() >= 2).cloned().ok_or_else(|| self.no_smt_reason()),
            Placement::Core => {
                // The first cache group (or node, without cache information) with two cores.
                let groups: Vec<Vec<usize>> = if self.llcs.is_empty() {
                    self.nodes.iter().map(|n| n.cpus.clone()).collect()
                } else {
                    self.llcs.iter().map(|g| g.cpus.clone()).collect()
                };
                for group in groups {
                    let mut picked: Vec<usize> = self
                        .cores
                        .iter()
                        .filter(|core| core.iter().any(|c| group.contains(c)))
                        .filter_map(|core| {
                            first_of(&core.iter().copied().filter(|c| group.contains(c)).collect::<Vec<_>>())
                        })
                        .collect();
                    picked.sort_unstable();
                    if picked.len() >= 2 {
                        return Ok(picked);
                    }
                }
                Err(if self.cores.len() < 2 {
                    "only one core".to_string()
                } else {
                    "no two cores share a last-level cache".to_string()
                })
            }
            Placement::Llc => {
                if self.llcs.is_empty() {
                    return Err("the OS lists no cache sharing".to_string());
                }
                for node in &self.nodes {
                    let mut picked: Vec<usize> = self
                        .llcs
                        .iter()
                        .filter_map(|g| {
                            first_of(&g.cpus.iter().copied().filter(|c| node.cpus.contains(c)).collect::<Vec<_>>())
                        })
                        .collect();
                    picked.sort_unstable();
                    if picked.len() >= 2 {
                        return Ok(picked);
                    }
                }
                Err(if self.llcs.len() < 2 {
                    format!(
                        "one last-level cache (L{} shared by CPUs {})",
                        self.llcs[0].level,
                        format_cpu_list(&self.llcs[0].cpus)
                    )
                } else {
                    "each NUMA node has one last-level cache (different caches means different nodes: see `node`)"
                        .to_string()
                })
            }
            Placement::Node => {
                if self.nodes.len() < 2 {
                    return Err(if self.nodes_from_os {
                        "one NUMA node".to_string()
                    } else {
                        "the OS lists no NUMA nodes (taken as one)".to_string()
                    });
                }
                Ok(self.nodes.iter().filter_map(|n| first_of(&n.cpus)).collect())
            }
        }
    }

    fn no_smt_reason(&self) -> String {
        match self.smt_control.as_deref() {
            Some("off") | Some("forceoff") => "SMT is switched off (smt/control: off)".to_string(),
            Some("notsupported") | Some("notimplemented") => {
                "no SMT: every core has one logical CPU (smt/control: notsupported)".to_string()
            }
            _ => "no SMT: every core has one logical CPU".to_string(),
        }
    }

    /// A pair of CPUs at `placement` (the lowest-numbered such pair).
    pub fn pair(&self, placement: Placement) -> Result<(usize, usize), String> {
        let cpus = self.placement_cpus(placement)?;
        Ok(match placement {
            Placement::SameCpu => (cpus[0], cpus[0]),
            _ => (cpus[0], cpus[1]),
        })
    }

    /// `n` CPUs for `n` threads at `placement`, round-robin over [`Topology::placement_cpus`].
    pub fn cpus_for(&self, placement: Placement, n: usize) -> Result<Vec<usize>, String> {
        let cpus = self.placement_cpus(placement)?;
        Ok((0..n).map(|i| cpus[i % cpus.len()]).collect())
    }

    /// Every unordered pair of distinct CPUs with what they share.
    pub fn all_pairs(&self) -> Vec<(usize, usize, Placement)> {
        let ids = self.cpu_ids();
        let mut pairs = Vec::new();
        for (i, &a) in ids.iter().enumerate() {
            for &b in &ids[i + 1..] {
                if let Some(p) = self.relation(a, b) {
                    pairs.push((a, b, p));
                }
            }
        }
        pairs
    }

    /// The groups contention counts acquisitions by, and how they were chosen.
    pub fn groups(&self, by: GroupBy) -> Vec<Group> {
        let by = match by {
            GroupBy::Auto if self.nodes.len() > 1 => GroupBy::Node,
            GroupBy::Auto => GroupBy::Halves,
            other => other,
        };
        match by {
            GroupBy::Node => self
                .nodes
                .iter()
                .map(|n| Group {
                    label: format!("node {} (CPUs {})", n.id, format_cpu_list(&n.cpus)),
                    cpus: n.cpus.clone(),
                })
                .collect(),
            GroupBy::Llc if !self.llcs.is_empty() => self
                .llcs
                .iter()
                .enumerate()
                .map(|(i, g)| Group {
                    label: format!("llc {i} (L{} of CPUs {})", g.level, format_cpu_list(&g.cpus)),
                    cpus: g.cpus.clone(),
                })
                .collect(),
            _ => {
                let ids = self.cpu_ids();
                let half = ids.len().div_ceil(2);
                let (a, b) = ids.split_at(half);
                let mut groups = vec![Group {
                    label: format!("first half of the CPU list (CPUs {})", format_cpu_list(a)),
                    cpus: a.to_vec(),
                }];
                if !b.is_empty() {
                    groups.push(Group {
                        label: format!("second half of the CPU list (CPUs {})", format_cpu_list(b)),
                        cpus: b.to_vec(),
                    });
                }
                groups
            }
        }
    }

    /// The CPUs in the order threads are pinned to them (thread `i` on `order[i % len]`):
    /// alternating between `groups`, so any thread count spreads over the groups evenly.
    pub fn spread_order(groups: &[Group]) -> Vec<usize> {
        let mut order = Vec::new();
        let longest = groups.iter().map(|g| g.cpus.len()).max().unwrap_or(0);
        for i in 0..longest {
            for g in groups {
                if let Some(&c) = g.cpus.get(i) {
                    if !order.contains(&c) {
                        order.push(c);
                    }
                }
            }
        }
        order
    }
}

/// Hybrid core classes, from the first source the OS offers: the `cpu_core`/`cpu_atom` PMUs
/// (Intel hybrid), a `devices/system/cpu/types` folder, or differing `cpu_capacity` values
/// (Arm big.LITTLE and others).
fn core_classes(
    sys: &Sysfs,
    ids: &[usize],
    capacities: &BTreeMap<usize, u32>,
) -> Result<(Vec<CoreClass>, String), String> {
    let keep = |cpus: Vec<usize>| -> Vec<usize> { cpus.into_iter().filter(|c| ids.contains(c)).collect() };
    let mut classes = Vec::new();
    for (pmu, name) in [("cpu_core", "performance"), ("cpu_atom", "efficiency")] {
        if let Some(cpus) = sys.list(&format!("devices/{pmu}/cpus"))? {
            classes.push(CoreClass { name: name.to_string(), cpus: keep(cpus) });
        }
    }
    if !classes.is_empty() {
        return Ok((classes, "the cpu_core/cpu_atom PMUs (devices/cpu_core/cpus, devices/cpu_atom/cpus)".to_string()));
    }
    for ty in sys.entries("devices/system/cpu/types") {
        let Some(cpus) = sys.list(&format!("devices/system/cpu/types/{ty}/cpulist"))? else { continue };
        let name = if ty.contains("atom") { "efficiency" } else { "performance" };
        classes.push(CoreClass { name: name.to_string(), cpus: keep(cpus) });
    }
    if !classes.is_empty() {
        return Ok((classes, "devices/system/cpu/types".to_string()));
    }
    let mut distinct: Vec<u32> = capacities.values().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() > 1 {
        let top = *distinct.last().unwrap_or(&0);
        for cap in distinct.iter().rev() {
            let cpus = capacities.iter().filter(|(_, c)| *c == cap).map(|(id, _)| *id).collect();
            let name = if *cap == top { "performance".to_string() } else { format!("efficiency (capacity {cap})") };
            classes.push(CoreClass { name, cpus });
        }
        return Ok((classes, "cpu_capacity".to_string()));
    }
    let why = match distinct.first() {
        Some(cap) => format!("not hybrid: every CPU has cpu_capacity {cap}, and there are no cpu_core/cpu_atom PMUs"),
        None => "not hybrid as far as the OS says: no cpu_core/cpu_atom PMUs, no cpu_capacity".to_string(),
    };
    Ok((Vec::new(), why))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_and_format() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<usize>::new());
        assert!(parse_cpu_list("0-").is_err());
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[5]), "5");
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("32K"), Some(32 * 1024));
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn placement_names_round_trip() {
        for p in Placement::ALL {
            assert_eq!(Placement::parse(p.name()), Ok(p));
        }
        assert!(Placement::parse("socket").unwrap_err().contains("same-cpu, smt, core, llc, node"));
    }

    #[test]
    fn spread_alternates_between_groups() {
        let groups =
            vec![Group { label: "a".into(), cpus: vec![0, 1, 2] }, Group { label: "b".into(), cpus: vec![4, 5] }];
        assert_eq!(Topology::spread_order(&groups), vec![0, 4, 1, 5, 2]);
    }
}
