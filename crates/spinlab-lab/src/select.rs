//! Parsing what the user selects on the command line: lock and wait-policy lists, thread
//! counts, placements, durations. Each parser returns one line naming the bad input and what
//! is accepted.

use crate::machine::Placement;
use spinlab::registry::{self, LockEntry, Origin};
use std::time::Duration;

/// The alias `--locks` accepts for the library's recommended lock.
pub const DEFAULT_ALIAS: &str = "default";

/// The registry name of `spinlab::DefaultRawMutex` (`Gated<Mcs<SpinYieldPark>,
/// SpinYieldPark>`, which the registry builds for `mcs` over a sleeping policy). The
/// registry has no alias for it; a test checks this name against the type.
pub const DEFAULT_LOCK: &str = "mcs:spin-yield-park";

/// A lock chosen by name.
#[derive(Clone, Debug)]
pub struct LockChoice {
    /// The registry entry.
    pub entry: &'static LockEntry,
    /// Whether it was asked for as `default`.
    pub via_alias: bool,
}

impl LockChoice {
    /// The registry name.
    pub fn name(&self) -> &'static str {
        &self.entry.name
    }

    /// Whether it is one of the reference locks (std, parking_lot, pthread).
    pub fn is_reference(&self) -> bool {
        self.entry.origin == Origin::Reference
    }

    /// Whether it is the library's default lock.
    pub fn is_default(&self) -> bool {
        self.entry.name == DEFAULT_LOCK
    }

    /// `spinlab` or `reference`.
    pub fn origin(&self) -> &'static str {
        if self.is_reference() {
            "reference"
        } else {
            "spinlab"
        }
    }

    /// Why this CPU cannot run it, if it cannot.
    pub fn unavailable(&self) -> Option<String> {
        self.entry.availability.err().map(|e| e.to_string())
    }
}

/// One lock by name (`default` is the library's default lock).
pub fn lock(name: &str) -> Result<LockChoice, String> {
    let (real, via_alias) = if name == DEFAULT_ALIAS { (DEFAULT_LOCK, true) } else { (name, false) };
    registry::lock_info(real).map(|entry| LockChoice { entry, via_alias }).map_err(|e| {
        format!("{e}; `{DEFAULT_ALIAS}` names spinlab's default lock ({DEFAULT_LOCK}); `spinlab list` shows every name")
    })
}

/// Splits a comma-separated list, refusing empty items.
pub fn split_list(text: &str) -> Result<Vec<&str>, String> {
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    if items.iter().any(|i| i.is_empty()) {
        return Err(format!("malformed list `{text}`: items are separated by single commas, none empty"));
    }
    Ok(items)
}

/// A comma-separated lock list, duplicates dropped.
pub fn lock_list(text: &str) -> Result<Vec<LockChoice>, String> {
    let mut out: Vec<LockChoice> = Vec::new();
    for item in split_list(text)? {
        let choice = lock(item)?;
        if !out.iter().any(|c| c.name() == choice.name()) {
            out.push(choice);
        }
    }
    Ok(out)
}

/// Locks by name from a built-in default list (names known to exist).
pub fn default_locks(names: &[&str]) -> Vec<LockChoice> {
    names.iter().filter_map(|n| lock(n).ok()).collect()
}

/// A comma-separated wait-policy list.
pub fn wait_list(text: &str) -> Result<Vec<&'static str>, String> {
    let policies = spinlab::wait::policies();
    let mut out: Vec<&'static str> = Vec::new();
    for item in split_list(text)? {
        let Some(p) = policies.iter().find(|p| p.name == item) else {
            return Err(format!(
                "unknown wait policy `{item}`; accepted: {}",
                policies.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
            ));
        };
        if !out.contains(&p.name) {
            out.push(p.name);
        }
    }
    Ok(out)
}

/// A thread count: a number, or a multiple of the CPUs this process may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadCount {
    /// Exactly this many.
    Exact(usize),
    /// This many per allowed CPU (`cpus` is 1x, `4x` four per CPU).
    PerCpu(usize),
}

impl ThreadCount {
    /// The count on a machine with `cpus` usable CPUs.
    pub fn resolve(self, cpus: usize) -> usize {
        match self {
            ThreadCount::Exact(n) => n,
            ThreadCount::PerCpu(k) => k * cpus.max(1),
        }
    }
}

/// A thread list: `1,2,4`, with `cpus` for the number of usable CPUs and `Nx` for N times it.
pub fn thread_list(text: &str) -> Result<Vec<ThreadCount>, String> {
    let accepted = "give whole numbers >= 1, `cpus`, or multiples like `2x` (twice the CPUs), e.g. 1,2,cpus,4x";
    split_list(text)?
        .into_iter()
        .map(|item| {
            let parsed = if item == "cpus" {
                Some(ThreadCount::PerCpu(1))
            } else if let Some(k) = item.strip_suffix('x') {
                k.parse::<usize>().ok().map(ThreadCount::PerCpu)
            } else {
                item.parse::<usize>().ok().map(ThreadCount::Exact)
            };
            match parsed {
                Some(ThreadCount::Exact(0)) | Some(ThreadCount::PerCpu(0)) => {
                    Err(format!("`{item}` is not a thread count: at least one thread is needed; {accepted}"))
                }
                Some(c) => Ok(c),
                None => Err(format!("`{item}` is not a thread count; {accepted}")),
            }
        })
        .collect()
}

/// Resolves thread counts for `cpus` CPUs, ascending, duplicates dropped.
pub fn resolve_threads(counts: &[ThreadCount], cpus: usize) -> Vec<usize> {
    let mut out: Vec<usize> = counts.iter().map(|c| c.resolve(cpus)).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// A comma-separated placement list.
pub fn placement_list(text: &str) -> Result<Vec<Placement>, String> {
    let mut out = Vec::new();
    for item in split_list(text)? {
        let p = Placement::parse(item)?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// A duration: `2s`, `200ms`, `500us`, `1.5` (seconds). Must be positive.
pub fn duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let accepted = "give a positive time such as 2s, 200ms, 500us or 1.5 (seconds)";
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix("ns") {
        (n, 1e-9)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else {
        (t, 1.0)
    };
    let value: f64 = number.trim().parse().map_err(|_| format!("`{text}` is not a duration; {accepted}"))?;
    if value.is_nan() || value < 0.0 {
        return Err(format!("`{text}` is negative; {accepted}"));
    }
    if value == 0.0 || !value.is_finite() {
        return Err(format!("`{text}` is not a usable duration; {accepted}"));
    }
    Ok(Duration::from_secs_f64(value * scale))
}

/// A whole number of nanoseconds (0 allowed), for work lengths.
pub fn nanoseconds(text: &str) -> Result<u64, String> {
    text.trim().parse::<u64>().map_err(|_| format!("`{text}` is not a whole number of nanoseconds (0 or more)"))
}

/// A positive whole number.
pub fn positive(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("`{text}` is not a whole number of at least 1")),
    }
}

/// A positive percentage.
pub fn percent(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p.is_finite() => Ok(p),
        _ => Err(format!("`{text}` is not a percentage above 0 (e.g. 1 or 0.5)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_alias_names_the_library_default_type() {
        let name = std::any::type_name::<spinlab::DefaultRawMutex>();
        assert!(
            name.contains("Gated<") && name.contains("Mcs<") && name.contains("SpinYieldPark"),
            "{name}: update DEFAULT_LOCK"
        );
        let choice = lock("default").unwrap();
        assert_eq!(choice.name(), DEFAULT_LOCK);
        assert!(choice.via_alias && choice.is_default());
    }

    #[test]
    fn unknown_locks_list_what_is_accepted() {
        let err = lock_list("ttas:spin,nope").unwrap_err();
        assert!(
            err.contains("`nope`") && err.contains("ticket") && err.contains("parking_lot") && err.contains("default")
        );
        assert!(lock_list("std,,pthread").unwrap_err().contains("malformed"));
        let locks = lock_list("std,default,mcs:spin-yield-park").unwrap();
        assert_eq!(locks.iter().map(|l| l.name()).collect::<Vec<_>>(), ["std", "mcs:spin-yield-park"]);
    }

    #[test]
    fn thread_lists() {
        use ThreadCount::*;
        assert_eq!(thread_list("1,2,cpus,4x").unwrap(), [Exact(1), Exact(2), PerCpu(1), PerCpu(4)]);
        assert!(thread_list("0").unwrap_err().contains("at least one thread"));
        assert!(thread_list("0x").is_err());
        assert!(thread_list("1,,2").unwrap_err().contains("malformed"));
        assert!(thread_list("two").unwrap_err().contains("`two`"));
        assert!(thread_list("-1").is_err());
        assert_eq!(resolve_threads(&[Exact(2), PerCpu(1), PerCpu(8), Exact(1)], 2), [1, 2, 16]);
    }

    #[test]
    fn durations() {
        assert_eq!(duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(duration("200ms"), Ok(Duration::from_millis(200)));
        assert_eq!(duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("500us"), Ok(Duration::from_micros(500)));
        assert!(duration("-1").unwrap_err().contains("negative"));
        assert!(duration("-2s").unwrap_err().contains("negative"));
        assert!(duration("0").is_err());
        assert!(duration("soon").is_err());
    }

    #[test]
    fn wait_and_placement_lists() {
        assert_eq!(wait_list("spin,futex,spin").unwrap(), ["spin", "futex"]);
        assert!(wait_list("nap").unwrap_err().contains("spin-park"));
        assert_eq!(placement_list("core,smt").unwrap(), [Placement::Core, Placement::Smt]);
        assert!(placement_list("socket").is_err());
    }
}
