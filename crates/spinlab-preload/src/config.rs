//! The environment, read once before `main`: which lock replaces the program's mutexes
//! (`SPINLAB_LOCK`), how its condition variables wait (`SPINLAB_COND`), which lock replaces
//! its spin locks (`SPINLAB_SPIN`), which barrier its barriers (`SPINLAB_BARRIER`) and which
//! reader-writer lock its rwlocks (`SPINLAB_RWLOCK`), the groups topology-aware locks see
//! (`SPINLAB_TOPOLOGY`), and whether to count (`SPINLAB_STATS`, `SPINLAB_STATS_TOP`,
//! `SPINLAB_STATS_FILE`). A value that cannot be used is an error whose message is one line
//! naming the variable, why, and every value that would work.

use crate::glibc::{BARRIER_ROOM, MUTEX_ROOM, RWLOCK_ROOM, SPIN_ROOM};
use spinlab_c_shared::condvar::{cond_ops, cond_ops_named, CondOps};
use spinlab_registry::{BarrierEntry, LockEntry, RawBarrierOps, RawLockOps, RegistryError, BARRIERS, LOCKS};
use spinlab_registry::{RawRwLockOps, RwFairness, RwLockEntry, RWLOCKS};

/// spinlab's default lock (`spinlab::DefaultRawMutex`), used when `SPINLAB_LOCK` is unset.
pub const DEFAULT_LOCK: &str = "adaptive:pause-yield-park";
/// The reference lock that means "keep glibc's mutexes and condition variables" (and count,
/// with `SPINLAB_STATS`).
pub const GLIBC: &str = "pthread";
/// The lock in each `pthread_spinlock_t` when `SPINLAB_SPIN` is unset: a test-and-test-and-set
/// spinning with the CPU's hint, which is what glibc's spin lock does.
pub const DEFAULT_SPIN: &str = "ttas:pause";
/// The barrier in each `pthread_barrier_t` when `SPINLAB_BARRIER` is unset, as in the C API.
pub const DEFAULT_BARRIER: &str = "barrier:spin-park";
/// The lock in each default-kind `pthread_rwlock_t` when `SPINLAB_RWLOCK` is unset: reader
/// preference, which glibc's default kind promises (read locks nest), sleeping at once as
/// glibc's does: every waiter of a rwlock waits on its own (there is no queue in front, as the
/// default mutex has), and with many threads their spinning costs the holders (docs/preload.md,
/// "Reader-writer locks", has the figures).
pub const DEFAULT_RWLOCK: &str = "rw-reader:futex";
/// The algorithm of a `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP` rwlock, over the policy
/// of the `SPINLAB_RWLOCK` lock: writer preference, what that kind asks for.
const WRITER_RWLOCK: &str = "rw-writer";
/// The condition variables' policy when the lock has none (the `parking_lot` reference).
const DEFAULT_COND: &str = "spin-park";
/// Rows of the statistics table unless `SPINLAB_STATS_TOP` says otherwise.
const DEFAULT_TOP: usize = 20;

/// What replaces the program's normal mutexes.
#[derive(Clone, Copy)]
pub enum Mutexes {
    /// A spinlab lock in each mutex's first bytes.
    Replaced {
        /// Its registry name.
        name: &'static str,
        /// Its verbs.
        ops: &'static RawLockOps,
    },
    /// glibc's own (`SPINLAB_LOCK=pthread`).
    Glibc,
}

/// What replaces the program's spin locks.
#[derive(Clone, Copy)]
pub enum Spins {
    /// A spinlab lock in each `pthread_spinlock_t`.
    Replaced {
        /// Its registry name.
        name: &'static str,
        /// Its verbs.
        ops: &'static RawLockOps,
    },
    /// glibc's own (`SPINLAB_SPIN=pthread`).
    Glibc,
}

impl Spins {
    /// The lock's name as the user would write it.
    pub fn name(&self) -> &'static str {
        match *self {
            Spins::Replaced { name, .. } => name,
            Spins::Glibc => GLIBC,
        }
    }
}

/// What replaces the program's barriers.
#[derive(Clone, Copy)]
pub enum Barriers {
    /// A registry barrier in place, written by `pthread_barrier_init`: its verbs and entry.
    Replaced(&'static RawBarrierOps, &'static BarrierEntry),
    /// glibc's own (`SPINLAB_BARRIER=pthread`).
    Glibc,
}

impl Barriers {
    /// The barrier's name as the user would write it.
    pub fn name(&self) -> &'static str {
        match *self {
            Barriers::Replaced(_, entry) => entry.name.as_str(),
            Barriers::Glibc => GLIBC,
        }
    }
}

/// What `SPINLAB_BARRIER=name` (`None`: unset) replaces barriers with: `barrier:POLICY`, in
/// place, or `pthread` (glibc's). The `std` reference keeps its own memory and is refused. The registry's own `pthread` reference would call the replaced
/// `pthread_barrier_init` again, so under this library `pthread` means glibc's, untouched.
pub fn barriers(name: Option<&str>) -> Result<Barriers, String> {
    let name = match name {
        None | Some("default") => DEFAULT_BARRIER,
        Some(GLIBC) => return Ok(Barriers::Glibc),
        Some(name) => name,
    };
    let valid = || {
        let names: Vec<&str> = barrier_list()
            .iter()
            .filter(|e| e.availability.is_ok() && e.fits(BARRIER_ROOM).is_ok())
            .map(|e| e.name.as_str())
            .collect();
        format!("{}, {GLIBC} (`default`, or unset: {DEFAULT_BARRIER})", names.join(", "))
    };
    match BARRIERS.info(name) {
        Ok(entry) => match (entry.availability, entry.fits(BARRIER_ROOM)) {
            (Ok(()), Ok(ops)) => Ok(Barriers::Replaced(ops, entry)),
            (Ok(()), Err(why)) => Err(format!(
                "SPINLAB_BARRIER={name} cannot live in a pthread_barrier_t: {why}; valid values: {}",
                valid()
            )),
            (Err(reason), _) => {
                Err(format!("SPINLAB_BARRIER={name} is unavailable here ({reason}); valid values: {}", valid()))
            }
        },
        Err(_) => Err(format!("SPINLAB_BARRIER={name} is not a barrier name; valid values: {}", valid())),
    }
}

/// The registry's barriers this library can build (all but its `pthread` reference).
fn barrier_list() -> Vec<&'static BarrierEntry> {
    BARRIERS.entries().iter().filter(|e| e.name != GLIBC).collect()
}

/// What replaces the program's reader-writer locks.
#[derive(Clone, Copy)]
pub enum Rwlocks {
    /// A spinlab rwlock in each private `pthread_rwlock_t`'s first bytes.
    Replaced {
        /// The `SPINLAB_RWLOCK` lock's registry name.
        name: &'static str,
        /// Its verbs: the lock of the default kinds (reader-preferring).
        reader: &'static RawRwLockOps,
        /// The verbs of `rw-writer` over the same policy: the writer-preferring kind's lock.
        writer: &'static RawRwLockOps,
    },
    /// glibc's own (`SPINLAB_RWLOCK=pthread`).
    Glibc,
}

impl Rwlocks {
    /// The lock's name as the user would write it.
    pub fn name(&self) -> &'static str {
        match *self {
            Rwlocks::Replaced { name, .. } => name,
            Rwlocks::Glibc => GLIBC,
        }
    }
}

/// What `SPINLAB_RWLOCK=name` (`None`: unset) replaces rwlocks with: a reader-preferring
/// registry rwlock that fits before `__cur_writer` and is unlocked when all-zero, so that
/// `PTHREAD_RWLOCK_INITIALIZER` works and a thread may read-lock twice while a writer waits,
/// as glibc's default kind allows; `pthread` keeps glibc's. A writer-preferring or phase-fair
/// lock would deadlock that second read lock, so it is refused with that reason.
pub fn rwlocks(name: Option<&str>) -> Result<Rwlocks, String> {
    let name = match name {
        None | Some("default") => DEFAULT_RWLOCK,
        Some(GLIBC) => return Ok(Rwlocks::Glibc),
        Some(name) => name,
    };
    let valid = || {
        let names: Vec<&str> =
            RWLOCKS.entries().iter().filter(|e| rwlock_unusable(e).is_none()).map(|e| e.name.as_str()).collect();
        format!("{}, {GLIBC} (`default`, or unset: {DEFAULT_RWLOCK})", names.join(", "))
    };
    let refuse = |why: String| Err(format!("SPINLAB_RWLOCK={name} {why}; valid values: {}", valid()));
    let entry = match RWLOCKS.info(name) {
        Ok(entry) => entry,
        Err(_) => return refuse("is not a reader-writer lock name".to_string()),
    };
    if let Some(why) = rwlock_unusable(entry) {
        return refuse(why);
    }
    let writer_name = format!("{WRITER_RWLOCK}:{}", entry.policy.unwrap_or_default());
    let writer = RWLOCKS
        .info(&writer_name)
        .ok()
        .filter(|e| rwlock_unusable_bytes(e).is_none() && rwlock_not_fork_safe(e).is_none());
    match (entry.fits(RWLOCK_ROOM), writer.and_then(|e| e.fits(RWLOCK_ROOM).ok())) {
        (Ok(reader), Some(writer)) => Ok(Rwlocks::Replaced { name: entry.name.as_str(), reader, writer }),
        _ => refuse(format!("has no {writer_name} to put in writer-preferring rwlocks")),
    }
}

/// Why a registry rwlock cannot replace a default `pthread_rwlock_t` here, if it cannot.
fn rwlock_unusable(entry: &RwLockEntry) -> Option<String> {
    if let Err(reason) = entry.availability {
        return Some(format!("is unavailable here ({reason})"));
    }
    if let Some(why) = rwlock_unusable_bytes(entry) {
        return Some(why);
    }
    if entry.facts.fairness != RwFairness::ReaderPreferring {
        return Some("cannot replace glibc's default rwlocks: it keeps a reader out while a writer waits, so a thread that read-locks twice (which glibc's default kind allows) would deadlock".to_string());
    }
    rwlock_not_fork_safe(entry)
}

/// Why a registry rwlock cannot be made sound in a forked child, if it cannot: it must forget
/// the waiters the parent's threads left in it (see `fork`).
fn rwlock_not_fork_safe(entry: &RwLockEntry) -> Option<String> {
    entry.facts.ops.as_ref().is_some_and(|ops| ops.forget_waiters.is_none()).then(|| {
        "cannot tell its waiters from its holders, so a child forked while threads wait for it would count them for ever".to_string()
    })
}

/// Why a registry rwlock does not fit in a `pthread_rwlock_t`, if it does not.
fn rwlock_unusable_bytes(entry: &RwLockEntry) -> Option<String> {
    match entry.fits(RWLOCK_ROOM) {
        Err(why) => Some(format!("does not fit in a pthread_rwlock_t: {why}")),
        Ok(ops) if !ops.zero_is_unlocked => {
            Some("all-zero bytes are not an unlocked one, so PTHREAD_RWLOCK_INITIALIZER would not work".to_string())
        }
        Ok(_) => None,
    }
}

/// Everything the environment decides.
pub struct Config {
    /// What replaces the barriers.
    pub barriers: Barriers,
    pub mutexes: Mutexes,
    /// What replaces the spin locks.
    pub spins: Spins,
    /// What replaces the reader-writer locks.
    pub rwlocks: Rwlocks,
    /// The policy of the replacement condition variables (unused with [`Mutexes::Glibc`]).
    pub cond: &'static CondOps,
    /// Rows of the statistics table; `None` when not counting.
    pub stats_top: Option<usize>,
    /// Whether the table is printed at exit (`SPINLAB_STATS=1`; counting may be on for the
    /// file alone).
    pub print_table: bool,
    /// `SPINLAB_STATS_FILE`'s prefix: the profile goes to `PREFIX.<pid>.json`.
    pub stats_file: Option<String>,
}

impl Config {
    /// The lock's name as the user would write it.
    pub fn lock_name(&self) -> &'static str {
        match self.mutexes {
            Mutexes::Replaced { name, .. } => name,
            Mutexes::Glibc => GLIBC,
        }
    }
}

/// Reads the configuration from the environment.
pub fn from_env() -> Result<Config, String> {
    let var = |name| std::env::var(name).ok().filter(|value| !value.is_empty());
    let mut config = parse(
        var("SPINLAB_LOCK").as_deref(),
        var("SPINLAB_COND").as_deref(),
        var("SPINLAB_STATS").as_deref(),
        var("SPINLAB_STATS_TOP").as_deref(),
    )?;
    config.spins = spins(var("SPINLAB_SPIN").as_deref())?;
    config.barriers = barriers(var("SPINLAB_BARRIER").as_deref())?;
    config.rwlocks = rwlocks(var("SPINLAB_RWLOCK").as_deref())?;
    topology(var(spinlab::sys::topology::ENV).as_deref())?;
    config.stats_file = stats_file(var("SPINLAB_STATS_FILE").as_deref())?;
    if config.stats_file.is_some() {
        config.stats_top.get_or_insert(DEFAULT_TOP);
    }
    Ok(config)
}

/// `SPINLAB_STATS_FILE=PREFIX` (`None`: unset): the prefix, once a file named from it could be
/// created (see `stats::check_writable`).
pub fn stats_file(value: Option<&str>) -> Result<Option<String>, String> {
    let Some(prefix) = value else { return Ok(None) };
    crate::stats::check_writable(prefix).map(|()| Some(prefix.to_string())).map_err(|why| {
        format!(
            "SPINLAB_STATS_FILE={prefix} cannot be written ({why}); valid values: a path prefix in a writable directory (PREFIX.<pid>.json is written)"
        )
    })
}

/// Checks `SPINLAB_TOPOLOGY` (`None`: unset). The locks read it themselves
/// (`spinlab::sys::topology::machine`), which keeps what sysfs says when it is malformed: here
/// a malformed value stops the program instead.
pub fn topology(value: Option<&str>) -> Result<(), String> {
    value.map_or(Ok(()), |text| spinlab::sys::topology::parse_declared(text).map(drop))
}

/// What `SPINLAB_SPIN=name` (`None`: unset) replaces spin locks with: a lock that fits in a
/// `pthread_spinlock_t` and whose waiters never sleep. A spin lock's users expect spinning,
/// and may share one between processes (`PTHREAD_PROCESS_SHARED`), which only a lock without
/// a process-private futex serves; `pthread` keeps glibc's.
pub fn spins(name: Option<&str>) -> Result<Spins, String> {
    let name = match name {
        None | Some("default") => DEFAULT_SPIN,
        Some(GLIBC) => return Ok(Spins::Glibc),
        Some(name) => name,
    };
    let valid = || {
        let names: Vec<&str> =
            LOCKS.entries().iter().filter(|e| spin_unusable(e).is_none()).map(|e| e.name.as_str()).collect();
        format!("{}, {GLIBC} (`default`, or unset: {DEFAULT_SPIN})", names.join(", "))
    };
    let entry = match LOCKS.info(name) {
        Ok(entry) => entry,
        Err(_) => return Err(format!("SPINLAB_SPIN={name} is not a lock name; valid values: {}", valid())),
    };
    match spin_unusable(entry) {
        None => Ok(Spins::Replaced { name: entry.name.as_str(), ops: &entry.facts.ops }),
        Some(why) => Err(format!("SPINLAB_SPIN={name} {why}; valid values: {}", valid())),
    }
}

/// Why a lock cannot replace a `pthread_spinlock_t` here, if it cannot.
fn spin_unusable(entry: &LockEntry) -> Option<String> {
    if let Err(reason) = entry.availability {
        return Some(format!("is unavailable here ({reason})"));
    }
    let why = if entry.policy.is_none() {
        "it is a reference lock, which does not live in memory the program owns".to_string()
    } else if entry.may_sleep {
        "its waiters may sleep, where a spin lock's waiters spin (and the lock may be shared between processes)"
            .to_string()
    } else {
        entry.fits(SPIN_ROOM).err()?.to_string()
    };
    Some(format!("cannot replace pthread spin locks: {why}"))
}

/// The configuration for these values of the variables (`None`: unset or empty).
pub fn parse(lock: Option<&str>, cond: Option<&str>, stats: Option<&str>, top: Option<&str>) -> Result<Config, String> {
    // `default` names the default lock, as it does in the lab (`spinlab list`).
    let mutexes = mutexes(match lock {
        None | Some("default") => DEFAULT_LOCK,
        Some(name) => name,
    })?;
    let policy = match (cond, mutexes) {
        (Some(_), Mutexes::Glibc) => {
            return Err(format!(
                "SPINLAB_COND has no effect with SPINLAB_LOCK={GLIBC}, which keeps glibc's condition variables; unset one of them"
            ))
        }
        (Some(policy), _) => policy,
        (None, Mutexes::Replaced { name, .. }) => LOCKS.info(name).ok().and_then(|e| e.policy).unwrap_or(DEFAULT_COND),
        (None, Mutexes::Glibc) => DEFAULT_COND,
    };
    let cond = cond_ops_named(policy).filter(|ops| ops.availability.is_ok()).ok_or_else(|| {
        let valid: Vec<_> = cond_ops().iter().filter(|ops| ops.availability.is_ok()).map(CondOps::policy).collect();
        format!("SPINLAB_COND={policy} is not a wait policy this CPU can run; valid values: {}", valid.join(", "))
    })?;
    let stats_top =
        match stats {
            None | Some("0") => None,
            Some("1") => Some(match top {
                None => DEFAULT_TOP,
                Some(rows) => rows.parse().ok().filter(|&rows| rows > 0).ok_or_else(|| {
                    format!("SPINLAB_STATS_TOP={rows} is not a number of rows; valid values: 1, 2, 3, …")
                })?,
            }),
            Some(other) => {
                return Err(format!(
                    "SPINLAB_STATS={other} is not 0 or 1; valid values: 1 (print lock statistics at exit), 0"
                ))
            }
        };
    Ok(Config {
        mutexes,
        spins: spins(None)?,
        barriers: barriers(None)?,
        rwlocks: rwlocks(None)?,
        cond,
        stats_top,
        print_table: stats_top.is_some(),
        stats_file: None,
    })
}

/// What `SPINLAB_LOCK=name` replaces mutexes with.
fn mutexes(name: &str) -> Result<Mutexes, String> {
    if name == GLIBC {
        return Ok(Mutexes::Glibc);
    }
    let entry = LOCKS.info(name).map_err(|error| match error {
        RegistryError::Unknown { .. } => {
            format!("SPINLAB_LOCK={name} is not a lock name; valid values: {}", accepted())
        }
        RegistryError::Unavailable { reason, .. } => {
            format!("SPINLAB_LOCK={name} is unavailable here ({reason}); valid values: {}", accepted())
        }
    })?;
    if let Err(reason) = entry.availability {
        return Err(format!("SPINLAB_LOCK={name} is unavailable here ({reason}); valid values: {}", accepted()));
    }
    if let Some(why) = unusable(entry) {
        return Err(format!("SPINLAB_LOCK={name} cannot replace pthread mutexes: {why}; valid values: {}", accepted()));
    }
    Ok(Mutexes::Replaced { name: entry.name.as_str(), ops: &entry.facts.ops })
}

/// Why a lock cannot live in a `pthread_mutex_t`, if it cannot.
fn unusable(entry: &LockEntry) -> Option<String> {
    match entry.fits(MUTEX_ROOM) {
        Err(why) => Some(why.to_string()),
        Ok(ops) if !ops.zero_is_unlocked => {
            Some("all-zero bytes are not an unlocked one, so PTHREAD_MUTEX_INITIALIZER would not work".to_string())
        }
        Ok(_) => None,
    }
}

/// The locks `SPINLAB_LOCK` accepts on this machine, besides `pthread`.
pub fn usable_locks() -> impl Iterator<Item = &'static LockEntry> {
    LOCKS.entries().iter().filter(|e| e.availability.is_ok() && unusable(e).is_none() && e.name != GLIBC)
}

/// The accepted values, as short as exactness allows: the algorithms and policies, when every
/// combination of them is usable, else every name.
pub fn accepted() -> String {
    let usable: Vec<_> = usable_locks().collect();
    // Each algorithm with the policies it fits with, in registry order.
    let mut algorithms: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut references: Vec<&str> = Vec::new();
    for entry in &usable {
        match entry.policy {
            Some(policy) => match algorithms.iter_mut().find(|(a, _)| *a == entry.facts.algorithm) {
                Some((_, policies)) => policies.push(policy),
                None => algorithms.push((entry.facts.algorithm, vec![policy])),
            },
            None => references.push(entry.name.as_str()),
        }
    }
    references.push(GLIBC);
    // The algorithms that fit with every policy are named together; any other (one that fit
    // only with some policies) with its own policies.
    let all_policies = algorithms.iter().map(|(_, p)| p.len()).max().unwrap_or(0);
    let (everywhere, partly): (Vec<_>, Vec<_>) = algorithms.iter().partition(|(_, p)| p.len() == all_policies);
    let mut clauses = Vec::new();
    if let Some((_, policies)) = everywhere.first() {
        clauses.push(format!(
            "ALGORITHM:POLICY with ALGORITHM one of {} and POLICY one of {}",
            everywhere.iter().map(|(a, _)| *a).collect::<Vec<_>>().join(", "),
            policies.join(", ")
        ));
    }
    for (algorithm, policies) in partly {
        clauses.push(format!("{algorithm}:POLICY with POLICY one of {}", policies.join(", ")));
    }
    clauses.push(references.join(", "));
    format!("{} (`default`, or unset: {DEFAULT_LOCK})", clauses.join("; or "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(lock: &str) -> String {
        parse(Some(lock), None, None, None).err().unwrap()
    }

    #[test]
    fn a_malformed_topology_is_refused_in_the_preload_librarys_words() {
        assert_eq!(topology(None), Ok(()));
        assert_eq!(topology(Some("node:0|1;llc:0-1")), Ok(()));
        let refused = topology(Some("node:0|0")).unwrap_err();
        assert!(
            refused.starts_with(
                "SPINLAB_TOPOLOGY=node:0|0 is malformed: CPU 0 is in two `node` groups; valid values: LEVEL:"
            ),
            "{refused}"
        );
        assert!(!refused.contains('\n'));
    }

    #[test]
    fn unset_means_the_default_lock_with_its_own_policy_and_no_counting() {
        let config = parse(None, None, None, None).ok().unwrap();
        assert_eq!(config.lock_name(), DEFAULT_LOCK);
        assert_eq!(config.cond.policy(), "pause-yield-park", "the default lock's own policy");
        assert!(config.stats_top.is_none());
        let config = parse(Some("default"), None, None, None).ok().unwrap();
        assert_eq!(config.lock_name(), DEFAULT_LOCK, "`default` is the lab's alias of the default lock");
        let config = parse(Some("mcs:futex"), None, Some("1"), None).ok().unwrap();
        assert_eq!(config.cond.policy(), "futex", "the condition variables wait like the lock");
        assert_eq!(config.stats_top, Some(DEFAULT_TOP));
        let config = parse(Some("mcs:futex"), Some("pause"), Some("1"), Some("3")).ok().unwrap();
        assert_eq!((config.cond.policy(), config.stats_top), ("pause", Some(3)));
    }

    #[test]
    fn the_error_names_the_value_and_lists_exactly_the_usable_names() {
        let text = error("ttas:sleepy");
        assert!(text.starts_with("SPINLAB_LOCK=ttas:sleepy is not a lock name; valid values: "), "{text}");
        assert!(!text.contains('\n'));
        // Every usable name is described (by the grammar or by name), and no refused one.
        let accepted = accepted();
        // Every algorithm but Hapax (24 bytes) and HMCS fits with every policy: CLH over a
        // spinning policy too (its tail and a one-pointer guard), not only as the gate of a
        // bounded word. HMCS fits only ungated, over the policies whose waiters keep their
        // CPU: gated, it takes 40 bytes.
        assert!(
            accepted.starts_with("ALGORITHM:POLICY with ALGORITHM one of tas, ttas, ticket, mcs, clh, cna, cna-gated, reciprocating, fair, bounded, adaptive, malthusian and POLICY one of spin, pause, "),
            "{accepted}"
        );
        let hmcs =
            accepted.split("; or ").find(|clause| clause.starts_with("hmcs:POLICY with POLICY one of spin, pause, "));
        assert!(hmcs.is_some_and(|clause| !clause.contains("futex") && !clause.contains("yield")), "{accepted}");
        assert!(
            accepted.contains("; or parking_lot, pthread (`default`, or unset: adaptive:pause-yield-park)"),
            "{accepted}"
        );
        assert!(!accepted.contains("clh:POLICY") && !accepted.contains("std"), "{accepted}");
        assert!(!accepted.contains("hapax"), "{accepted}");
        for entry in usable_locks() {
            assert!(parse(Some(&entry.name), None, None, None).is_ok(), "{}", entry.name);
        }
    }

    #[test]
    fn locks_that_do_not_fit_or_need_an_init_are_refused_with_the_reason() {
        let std_size = LOCKS.info("std").ok().unwrap().facts.ops.size;
        assert!(std_size > MUTEX_ROOM.size(), "std's mutex and its stored guard take {std_size} bytes");
        let text = error("std");
        let why = format!("cannot replace pthread mutexes: `std` takes {std_size} bytes aligned to 8, and the room is 16 bytes aligned to 8; valid values: ");
        assert!(text.starts_with(&format!("SPINLAB_LOCK=std {why}")), "{text}");
        for clh in ["clh:spin", "clh:pause", "clh:backoff", "clh:futex"] {
            assert!(parse(Some(clh), None, None, None).is_ok(), "{clh} fits in a pthread_mutex_t");
        }
        // HMCS gated, over a policy whose waiters leave the CPU, takes 40 bytes with its guard.
        let why = "cannot replace pthread mutexes: `hmcs:futex` takes 40 bytes aligned to 8, and the room is 16 bytes aligned to 8; valid values: ";
        assert!(error("hmcs:futex").starts_with(&format!("SPINLAB_LOCK=hmcs:futex {why}")), "{}", error("hmcs:futex"));
        assert!(parse(Some("hmcs:pause"), None, None, None).is_ok(), "ungated, HMCS fits in a pthread_mutex_t");
        for entry in LOCKS.entries().iter().filter(|e| e.availability.is_err()) {
            assert!(error(&entry.name).contains("is unavailable here"), "{}", entry.name);
        }
    }

    #[test]
    fn spin_locks_and_barriers_that_do_not_fit_say_what_they_take_and_the_room() {
        let mcs = LOCKS.info("mcs:spin").ok().unwrap();
        assert!(mcs.facts.ops.size > SPIN_ROOM.size(), "an MCS tail is a pointer");
        let text = spins(Some("mcs:spin")).err().unwrap();
        let why = format!(
            "SPINLAB_SPIN=mcs:spin cannot replace pthread spin locks: `mcs:spin` takes {} bytes aligned to {}, and the room is 4 bytes aligned to 4; valid values: ",
            mcs.facts.ops.size, mcs.facts.ops.align
        );
        let valid = text.split("valid values: ").nth(1).unwrap_or_default();
        assert!(valid.contains("ttas:pause") && !valid.contains("mcs:"), "{text}");
        assert!(text.starts_with(&why), "{text}");
        let text = barriers(Some("std")).err().unwrap();
        let why = "SPINLAB_BARRIER=std cannot live in a pthread_barrier_t: `std` keeps its own memory and has no form for a room of 16 bytes aligned to 8; valid values: ";
        assert!(text.starts_with(why) && text.contains("barrier:futex") && !text.contains('\n'), "{text}");
        let text = rwlocks(Some("std")).err().unwrap();
        assert!(text.contains("does not fit in a pthread_rwlock_t: `std` keeps its own memory"), "{text}");
    }

    #[test]
    fn glibc_mode_keeps_everything_and_refuses_a_condvar_policy() {
        assert!(matches!(parse(Some("pthread"), None, None, None).ok().unwrap().mutexes, Mutexes::Glibc));
        assert!(parse(Some("pthread"), Some("futex"), None, None)
            .err()
            .unwrap()
            .contains("SPINLAB_COND has no effect"));
    }

    #[test]
    fn rwlocks_must_prefer_readers_and_fit_and_the_writer_kind_gets_writer_preference() {
        let Rwlocks::Replaced { name, reader, writer } = rwlocks(None).ok().unwrap() else { panic!("the default") };
        assert_eq!(name, DEFAULT_RWLOCK);
        let writer_entry = RWLOCKS.info("rw-writer:futex").ok().unwrap();
        assert!(core::ptr::eq(writer, writer_entry.facts.ops.as_ref().unwrap()), "the writer kind: same policy");
        assert!(core::ptr::eq(reader, RWLOCKS.info(DEFAULT_RWLOCK).ok().unwrap().facts.ops.as_ref().unwrap()));
        assert_eq!(rwlocks(Some("default")).ok().unwrap().name(), DEFAULT_RWLOCK);
        assert_eq!(rwlocks(Some("rw-reader:futex")).ok().unwrap().name(), "rw-reader:futex");
        assert!(matches!(rwlocks(Some("pthread")), Ok(Rwlocks::Glibc)));
        for (name, why) in [
            ("rw-writer:futex", "keeps a reader out while a writer waits"),
            ("rw-phase:pause", "keeps a reader out while a writer waits"),
            ("parking_lot", "keeps a reader out while a writer waits"),
            ("std", "does not fit in a pthread_rwlock_t"),
            ("rw-nope:futex", "is not a reader-writer lock name"),
        ] {
            let text = rwlocks(Some(name)).err().unwrap();
            assert!(text.starts_with(&format!("SPINLAB_RWLOCK={name} ")) && text.contains(why), "{text}");
            let valid = text.split("valid values: ").nth(1).unwrap_or_default();
            assert!(valid.starts_with("rw-reader:spin, rw-reader:pause"), "{text}");
            assert!(!valid.contains("rw-writer") && !valid.contains("parking_lot") && !text.contains('\n'), "{text}");
        }
        // Both kinds' locks forget a forked child's waiters; the phase-fair and parking_lot
        // locks could not, and would be refused for that too.
        for name in ["rw-reader:futex", "rw-writer:futex", "rw-reader:pause", "rw-writer:spin-park"] {
            assert!(rwlock_not_fork_safe(RWLOCKS.info(name).ok().unwrap()).is_none(), "{name}");
        }
        for name in ["rw-phase:futex", "parking_lot"] {
            let why = rwlock_not_fork_safe(RWLOCKS.info(name).ok().unwrap());
            assert!(why.is_some_and(|why| why.contains("cannot tell its waiters from its holders")), "{name}");
        }
    }

    #[test]
    fn a_stats_file_prefix_must_name_a_writable_directory() {
        assert_eq!(stats_file(None), Ok(None));
        let dir = std::env::temp_dir().join(format!("spinlab-stats-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prefix = dir.join("profile").display().to_string();
        assert_eq!(stats_file(Some(&prefix)), Ok(Some(prefix.clone())));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the check's file is removed");
        std::fs::remove_dir(&dir).unwrap();
        let refused = stats_file(Some("/nonexistent-spinlab/p")).unwrap_err();
        assert!(refused.starts_with("SPINLAB_STATS_FILE=/nonexistent-spinlab/p cannot be written ("), "{refused}");
        assert!(refused.contains("; valid values: a path prefix in a writable directory") && !refused.contains('\n'));
    }

    #[test]
    fn bad_stats_and_cond_values_are_errors() {
        assert!(parse(None, Some("ttas:futex"), None, None).err().unwrap().contains("valid values: spin, pause"));
        assert!(parse(None, None, Some("yes"), None).err().unwrap().starts_with("SPINLAB_STATS=yes"));
        assert!(parse(None, None, Some("1"), Some("0")).err().unwrap().starts_with("SPINLAB_STATS_TOP=0"));
        assert!(parse(None, None, Some("0"), None).ok().unwrap().stats_top.is_none());
        assert!(parse(None, None, Some("2"), None).err().unwrap().starts_with("SPINLAB_STATS=2 is not 0 or 1"));
    }
}
