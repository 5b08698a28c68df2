//! Reading the machine's shape from sysfs (`devices/system/cpu`, `devices/system/node`, the
//! hybrid PMUs): [`Topology::read`]. The sysfs root is a parameter so tests can read canned
//! trees.

use super::topology::{parse_cpu_list, CacheGroup, CoreClass, Cpu, Node, Topology};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

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

/// A sysfs tree rooted at `root` (normally `/sys`); a file that is absent reads as `None`.
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

/// Groups of CPUs (SMT siblings, caches), and the index of each CPU's group.
type Grouped<T> = (Vec<T>, BTreeMap<usize, usize>);

const CPU_DIR: &str = "devices/system/cpu";
const NODE_DIR: &str = "devices/system/node";

impl Topology {
    /// Reads the topology under `sys_root` (normally `/sys`).
    pub fn read(sys_root: &Path) -> Result<Topology, String> {
        let sys = Sysfs { root: sys_root.to_path_buf() };
        let ids = sys.online_cpus()?;
        let (cores, core_of) = sys.smt_groups(&ids)?;
        let (llcs, llc_of) = sys.last_level_caches(&ids)?;
        let (nodes, nodes_from_os) = sys.nodes(&ids)?;
        let capacities: BTreeMap<usize, u32> = ids
            .iter()
            .filter_map(|&id| {
                sys.read(&format!("{CPU_DIR}/cpu{id}/cpu_capacity")).and_then(|c| c.parse().ok()).map(|c| (id, c))
            })
            .collect();
        let CoreClasses { classes: core_classes, source: core_type_source } = core_classes(&sys, &ids, &capacities)?;

        let cpus = ids
            .iter()
            .map(|&id| Cpu {
                id,
                package: sys
                    .read(&format!("{CPU_DIR}/cpu{id}/topology/physical_package_id"))
                    .and_then(|p| p.parse().ok()),
                core_id: sys.read(&format!("{CPU_DIR}/cpu{id}/topology/core_id")).and_then(|p| p.parse().ok()),
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
            smt_control: sys.read(&format!("{CPU_DIR}/smt/control")),
        })
    }
}

impl Sysfs {
    /// The online CPUs, or every `cpuN` directory where `online` is absent.
    fn online_cpus(&self) -> Result<Vec<usize>, String> {
        let ids = match self.list(&format!("{CPU_DIR}/online"))? {
            Some(ids) => ids,
            None => {
                let mut ids: Vec<usize> = self.entries(CPU_DIR).iter().filter_map(|n| numbered(n, "cpu")).collect();
                ids.sort_unstable();
                ids
            }
        };
        if ids.is_empty() {
            return Err(format!("no CPUs listed under {}", self.path(CPU_DIR).display()));
        }
        Ok(ids)
    }

    /// SMT sibling groups, numbered in order of first appearance, and each CPU's group.
    fn smt_groups(&self, ids: &[usize]) -> Result<Grouped<Vec<usize>>, String> {
        let mut cores: Vec<Vec<usize>> = Vec::new();
        let mut core_of = BTreeMap::new();
        for &id in ids {
            let siblings = self.list(&format!("{CPU_DIR}/cpu{id}/topology/thread_siblings_list"))?.unwrap_or(vec![id]);
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
        Ok((cores, core_of))
    }

    /// The highest-level data or unified cache `id` lists, if any.
    fn highest_cache(&self, id: usize) -> Result<Option<CacheGroup>, String> {
        let cache_dir = format!("{CPU_DIR}/cpu{id}/cache");
        let mut best: Option<CacheGroup> = None;
        for index in self.entries(&cache_dir).iter().filter(|n| numbered(n, "index").is_some()) {
            let base = format!("{cache_dir}/{index}");
            let kind = self.read(&format!("{base}/type")).unwrap_or_default();
            if kind == "Instruction" {
                continue;
            }
            let Some(level) = self.read(&format!("{base}/level")).and_then(|l| l.parse::<u32>().ok()) else {
                continue;
            };
            let cpus = self.list(&format!("{base}/shared_cpu_list"))?.unwrap_or(vec![id]);
            let size_bytes = self.read(&format!("{base}/size")).and_then(|s| parse_size(&s));
            if best.as_ref().is_none_or(|b| level > b.level) {
                best = Some(CacheGroup { level, kind, size_bytes, cpus });
            }
        }
        Ok(best)
    }

    /// The last-level cache groups (the highest level any CPU lists, data or unified) and
    /// each CPU's group.
    fn last_level_caches(&self, ids: &[usize]) -> Result<Grouped<CacheGroup>, String> {
        let mut llcs: Vec<CacheGroup> = Vec::new();
        let mut llc_of = BTreeMap::new();
        let mut per_cpu_llc = BTreeMap::new();
        for &id in ids {
            if let Some(group) = self.highest_cache(id)? {
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
        Ok((llcs, llc_of))
    }

    /// The NUMA nodes, and whether the OS listed them; without them, one node holds
    /// everything.
    fn nodes(&self, ids: &[usize]) -> Result<(Vec<Node>, bool), String> {
        let mut nodes = Vec::new();
        for name in self.entries(NODE_DIR) {
            let Some(node_id) = numbered(&name, "node") else { continue };
            let cpus: Vec<usize> = self
                .list(&format!("{NODE_DIR}/{name}/cpulist"))?
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
            nodes.push(Node { id: 0, cpus: ids.to_vec() });
        }
        Ok((nodes, nodes_from_os))
    }
}

/// The core classes of a hybrid part, and where they were read from.
struct CoreClasses {
    /// Empty when the CPUs are all of one kind.
    classes: Vec<CoreClass>,
    /// Where they were read from, or why there are none.
    source: String,
}

/// Hybrid core classes, from the first source the OS offers: the `cpu_core`/`cpu_atom` PMUs
/// (Intel hybrid), a `devices/system/cpu/types` folder, or differing `cpu_capacity` values
/// (Arm big.LITTLE and others).
fn core_classes(sys: &Sysfs, ids: &[usize], capacities: &BTreeMap<usize, u32>) -> Result<CoreClasses, String> {
    let found = |classes, source: &str| Ok(CoreClasses { classes, source: source.to_string() });
    let keep = |cpus: Vec<usize>| -> Vec<usize> { cpus.into_iter().filter(|c| ids.contains(c)).collect() };
    let mut classes = Vec::new();
    for (pmu, name) in [("cpu_core", "performance"), ("cpu_atom", "efficiency")] {
        if let Some(cpus) = sys.list(&format!("devices/{pmu}/cpus"))? {
            classes.push(CoreClass { name: name.to_string(), cpus: keep(cpus) });
        }
    }
    if !classes.is_empty() {
        return found(classes, "the cpu_core/cpu_atom PMUs (devices/cpu_core/cpus, devices/cpu_atom/cpus)");
    }
    for ty in sys.entries("devices/system/cpu/types") {
        let Some(cpus) = sys.list(&format!("devices/system/cpu/types/{ty}/cpulist"))? else { continue };
        let name = if ty.contains("atom") { "efficiency" } else { "performance" };
        classes.push(CoreClass { name: name.to_string(), cpus: keep(cpus) });
    }
    if !classes.is_empty() {
        return found(classes, "devices/system/cpu/types");
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
        return found(classes, "cpu_capacity");
    }
    let why = match distinct.first() {
        Some(cap) => format!("not hybrid: every CPU has cpu_capacity {cap}, and there are no cpu_core/cpu_atom PMUs"),
        None => "not hybrid as far as the OS says: no cpu_core/cpu_atom PMUs, no cpu_capacity".to_string(),
    };
    found(Vec::new(), &why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("32K"), Some(32 * 1024));
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("x"), None);
    }
}
