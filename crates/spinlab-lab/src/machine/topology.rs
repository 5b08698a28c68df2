//! The machine's shape: which logical CPUs are SMT siblings, which share a last-level cache,
//! which belong to which NUMA node, and which are performance or efficiency cores; and the
//! queries the experiments ask of it (what two CPUs share, CPUs for a placement, groups).
//! `sysfs.rs` reads it from the OS.
//!
//! Placements are named by what two threads share: `same-cpu` (one logical CPU),
//! `smt` (sibling hardware threads of one core), `core` (different cores, one last-level
//! cache), `llc` (different last-level caches, one NUMA node), `node` (different nodes).

use serde::Serialize;
use std::fmt;

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

// CPU lists are read and written as the core's topology model does (`0-3,8,10-11`).
pub use spinlab::sys::topology::{format_cpu_list, parse_cpu_list};

impl Topology {
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
