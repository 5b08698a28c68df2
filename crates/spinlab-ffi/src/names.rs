//! Names of primitives, by kind, as C strings: listing them, checking one, looking one up for
//! an `init`. The names are the registry's (`ttas:pause`, `mcs:spin-park`, `barrier:futex`,
//! `rw-phase:spin-park`, …; the wait policies for condition variables), so the C side, the
//! preload library and the lab agree.

use crate::status::{SPINLAB_INVALID, SPINLAB_OK, SPINLAB_UNAVAILABLE, SPINLAB_UNKNOWN_NAME};
use libc::{c_char, c_int, size_t};
use spinlab_c_shared::condvar::{cond_ops, CondOps};
use spinlab_registry::{Barriers, Entry, Kind, Locks, RwLocks, Table, BARRIERS, LOCKS, RWLOCKS};
use std::ffi::{CStr, CString};
use std::sync::OnceLock;

/// `spinlab_list`, `spinlab_check`: mutexes, named `algorithm:policy` or after a reference
/// lock (`std`, `parking_lot`, `pthread`).
pub const SPINLAB_KIND_MUTEX: c_int = 0;
/// `spinlab_list`, `spinlab_check`: condition variables, named after their wait policy
/// (`futex`, `spin-park`, `pause`, …).
pub const SPINLAB_KIND_COND: c_int = 1;
/// `spinlab_list`, `spinlab_check`: barriers, named `barrier:policy` or after a reference
/// barrier (`std`, `pthread`).
pub const SPINLAB_KIND_BARRIER: c_int = 2;
/// `spinlab_list`, `spinlab_check`: reader-writer locks, named `rw-writer:policy`
/// (writer-preferring), `rw-phase:policy` (phase-fair), `rw-reader:policy` (reader-preferring)
/// or after a reference lock (`std`, `parking_lot`, `pthread`).
pub const SPINLAB_KIND_RWLOCK: c_int = 3;

/// The mutex `spinlab_mutex_init` builds for a NULL name: spinlab's recommended default,
/// `spinlab::DefaultRawMutex` (a bounded-bypass word over pause-yield-park, gated by an MCS
/// queue on more than 4 CPUs).
pub(crate) const DEFAULT_MUTEX: &CStr = c"adaptive:pause-yield-park";
/// The condition variable `spinlab_cond_init` builds for a NULL name: the policy of
/// `spinlab::Condvar`'s default.
pub(crate) const DEFAULT_COND: &CStr = c"spin-park";
/// The barrier `spinlab_barrier_init` builds for a NULL name: spinlab's sense-reversing
/// barrier over its default policy.
pub(crate) const DEFAULT_BARRIER: &CStr = c"barrier:spin-park";
/// The reader-writer lock `spinlab_rwlock_init` builds for a NULL name: phase-fair (neither
/// readers nor writers starve) over spinlab's default policy.
pub(crate) const DEFAULT_RWLOCK: &CStr = c"rw-phase:spin-park";

/// A registry entry with its name as a C string.
pub(crate) struct Named<K: Kind> {
    pub name: CString,
    pub entry: &'static Entry<K>,
}

pub(crate) type MutexKind = Named<Locks>;
pub(crate) type BarrierKind = Named<Barriers>;
pub(crate) type RwLockKind = Named<RwLocks>;

/// Every entry of `table`, in the registry's order, each with its C name.
fn named<K: Kind>(table: &'static Table<K>) -> Vec<Named<K>> {
    table
        .entries()
        .iter()
        .map(|entry| Named { name: CString::new(entry.name.as_str()).expect("registry names contain no NUL"), entry })
        .collect()
}

/// Every registry lock, in the registry's order.
pub(crate) fn mutex_kinds() -> &'static [MutexKind] {
    static TABLE: OnceLock<Vec<MutexKind>> = OnceLock::new();
    TABLE.get_or_init(|| named(&LOCKS))
}

/// Every registry barrier, in the registry's order.
pub(crate) fn barrier_kinds() -> &'static [BarrierKind] {
    static TABLE: OnceLock<Vec<BarrierKind>> = OnceLock::new();
    TABLE.get_or_init(|| named(&BARRIERS))
}

/// Every registry reader-writer lock, in the registry's order.
pub(crate) fn rwlock_kinds() -> &'static [RwLockKind] {
    static TABLE: OnceLock<Vec<RwLockKind>> = OnceLock::new();
    TABLE.get_or_init(|| named(&RWLOCKS))
}

/// What a name lookup needs of a table row.
pub(crate) trait Row {
    fn c_name(&self) -> &CStr;
    fn available(&self) -> bool;
}

impl<K: Kind> Row for Named<K> {
    fn c_name(&self) -> &CStr {
        &self.name
    }
    fn available(&self) -> bool {
        self.entry.availability.is_ok()
    }
}

impl Row for CondOps {
    fn c_name(&self) -> &CStr {
        &self.name
    }
    fn available(&self) -> bool {
        self.availability.is_ok()
    }
}

/// The row called `name` (`NULL`: `default`) if this CPU can run it, else
/// `SPINLAB_UNKNOWN_NAME` or `SPINLAB_UNAVAILABLE`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
pub(crate) unsafe fn lookup<'t, T: Row>(table: &'t [T], name: *const c_char, default: &CStr) -> Result<&'t T, c_int> {
    let name = if name.is_null() {
        default
    } else {
        // SAFETY: the caller's contract.
        unsafe { CStr::from_ptr(name) }
    };
    let row = table.iter().find(|row| row.c_name() == name).ok_or(SPINLAB_UNKNOWN_NAME)?;
    if row.available() {
        Ok(row)
    } else {
        Err(SPINLAB_UNAVAILABLE)
    }
}

/// Writes into `names[0..capacity]` the names of every primitive of `kind`
/// (`SPINLAB_KIND_MUTEX`, `_COND`, `_BARRIER` or `_RWLOCK`), available on this CPU or not,
/// in the registry's order, and returns how many there are: a count, not a status code. The
/// count may exceed `capacity`, and then only the first `capacity` names are written; call
/// with `capacity` 0 and `names` NULL to count. The strings are static; do not free them.
/// `spinlab_check` says which ones this CPU can run. An unknown kind has no names (0).
/// Allocates nothing after its first call; safe from any thread.
///
/// # Safety
/// `names` is NULL (with `capacity` 0) or points to `capacity` writable pointers.
#[no_mangle]
pub unsafe extern "C" fn spinlab_list(kind: c_int, names: *mut *const c_char, capacity: size_t) -> size_t {
    /// # Safety
    /// As `spinlab_list`.
    unsafe fn fill<T: Row>(table: &[T], names: *mut *const c_char, capacity: size_t) -> size_t {
        for (i, row) in table.iter().take(if names.is_null() { 0 } else { capacity }).enumerate() {
            // SAFETY: `i < capacity`, and the caller gave `capacity` writable slots.
            unsafe { names.add(i).write(row.c_name().as_ptr()) };
        }
        table.len()
    }
    // SAFETY: forwarded from the caller.
    unsafe {
        match kind {
            SPINLAB_KIND_MUTEX => fill(mutex_kinds(), names, capacity),
            SPINLAB_KIND_COND => fill(cond_ops(), names, capacity),
            SPINLAB_KIND_BARRIER => fill(barrier_kinds(), names, capacity),
            SPINLAB_KIND_RWLOCK => fill(rwlock_kinds(), names, capacity),
            _ => 0,
        }
    }
}

/// Whether a primitive of `kind` called `name` (NULL: the kind's default) can be initialised
/// on this CPU: `SPINLAB_OK`; `SPINLAB_UNKNOWN_NAME` if no primitive of that kind has the
/// name; `SPINLAB_UNAVAILABLE` if this CPU cannot run its wait policy (`umwait` and `tpause`
/// need WAITPKG, `mwaitx` an AMD CPU, `wfe` an Arm one); `SPINLAB_INVALID` for an unknown
/// kind. `init` with that name and otherwise valid arguments gives the same answer. Safe
/// from any thread.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn spinlab_check(kind: c_int, name: *const c_char) -> c_int {
    // SAFETY: the caller's contract.
    let found = unsafe {
        match kind {
            SPINLAB_KIND_MUTEX => lookup(mutex_kinds(), name, DEFAULT_MUTEX).map(drop),
            SPINLAB_KIND_COND => lookup(cond_ops(), name, DEFAULT_COND).map(drop),
            SPINLAB_KIND_BARRIER => lookup(barrier_kinds(), name, DEFAULT_BARRIER).map(drop),
            SPINLAB_KIND_RWLOCK => lookup(rwlock_kinds(), name, DEFAULT_RWLOCK).map(drop),
            _ => Err(SPINLAB_INVALID),
        }
    };
    found.err().unwrap_or(SPINLAB_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(kind: c_int) -> Vec<String> {
        // SAFETY: counting call: NULL with capacity 0.
        let count = unsafe { spinlab_list(kind, core::ptr::null_mut(), 0) };
        let mut names = vec![core::ptr::null(); count + 2];
        // SAFETY: `names` has room for `count + 2` pointers, more than needed.
        assert_eq!(unsafe { spinlab_list(kind, names.as_mut_ptr(), names.len()) }, count);
        assert!(names[count].is_null(), "wrote past the names");
        // SAFETY: the first `count` slots hold static C strings.
        names[..count].iter().map(|&p| unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string()).collect()
    }

    #[test]
    fn the_lists_are_the_registry_names() {
        assert_eq!(listed(SPINLAB_KIND_MUTEX), spinlab_registry::LOCKS.names());
        let policies: Vec<_> = spinlab::wait::policies().iter().map(|p| p.name.to_string()).collect();
        assert_eq!(listed(SPINLAB_KIND_COND), policies);
        assert_eq!(listed(SPINLAB_KIND_BARRIER), spinlab_registry::BARRIERS.names());
        assert_eq!(listed(SPINLAB_KIND_RWLOCK), spinlab_registry::RWLOCKS.names());
        // SAFETY: an unknown kind writes nothing.
        assert_eq!(unsafe { spinlab_list(99, core::ptr::null_mut(), 0) }, 0);
    }

    #[test]
    fn a_short_buffer_gets_the_first_names_and_the_full_count() {
        let mut two = [core::ptr::null(); 2];
        // SAFETY: room for two.
        let count = unsafe { spinlab_list(SPINLAB_KIND_MUTEX, two.as_mut_ptr(), 2) };
        assert_eq!(count, spinlab_registry::LOCKS.names().len());
        // SAFETY: both slots were written with static C strings.
        let first = unsafe { CStr::from_ptr(two[0]) };
        assert_eq!(first.to_str().unwrap(), spinlab_registry::LOCKS.names()[0]);
    }

    #[test]
    fn check_tells_unknown_from_unavailable() {
        // SAFETY: a NUL-terminated name that outlives the call.
        let check = |kind, name: &CStr| unsafe { spinlab_check(kind, name.as_ptr()) };
        assert_eq!(check(SPINLAB_KIND_MUTEX, c"mcs:pause"), SPINLAB_OK);
        assert_eq!(check(SPINLAB_KIND_MUTEX, c"mcs:sleepy"), SPINLAB_UNKNOWN_NAME);
        assert_eq!(check(SPINLAB_KIND_COND, c"futex"), SPINLAB_OK);
        assert_eq!(check(SPINLAB_KIND_COND, c"ttas:futex"), SPINLAB_UNKNOWN_NAME);
        assert_eq!(check(SPINLAB_KIND_BARRIER, c"barrier:futex"), SPINLAB_OK);
        assert_eq!(check(SPINLAB_KIND_BARRIER, c"mcs:futex"), SPINLAB_UNKNOWN_NAME);
        assert_eq!(check(SPINLAB_KIND_RWLOCK, c"rw-writer:pause"), SPINLAB_OK);
        assert_eq!(check(SPINLAB_KIND_RWLOCK, c"barrier:futex"), SPINLAB_UNKNOWN_NAME);
        assert_eq!(check(7, c"futex"), SPINLAB_INVALID);
        for entry in spinlab_registry::LOCKS.entries().iter().filter(|e| e.availability.is_err()) {
            let name = CString::new(entry.name.as_str()).unwrap();
            assert_eq!(check(SPINLAB_KIND_MUTEX, &name), SPINLAB_UNAVAILABLE, "{}", entry.name);
        }
        for kind in [SPINLAB_KIND_MUTEX, SPINLAB_KIND_COND, SPINLAB_KIND_BARRIER, SPINLAB_KIND_RWLOCK] {
            // SAFETY: NULL asks about the default.
            assert_eq!(unsafe { spinlab_check(kind, core::ptr::null()) }, SPINLAB_OK, "kind {kind}");
        }
    }

    #[test]
    fn the_default_mutex_is_the_library_default() {
        let default = mutex_kinds().iter().find(|k| k.name.as_c_str() == DEFAULT_MUTEX).unwrap();
        // The registry hides the lock types it builds; the name says the adaptive lock over
        // pause-yield-park, and the entry is the registry's own (which lock that is on this
        // machine, the registry's tests check: `the_default_mutex_is_documented_adaptive_pause_yield_park`).
        let registry = spinlab_registry::LOCKS.info("adaptive:pause-yield-park").unwrap();
        assert!(std::ptr::eq(default.entry, registry));
        assert_eq!(default.entry.facts.algorithm, "adaptive");
        assert_eq!(default.entry.policy, Some(<spinlab::wait::PauseYieldPark as spinlab::wait::Wait>::NAME));
        assert_eq!(DEFAULT_COND.to_str().unwrap(), <spinlab::wait::SpinPark as spinlab::wait::Wait>::NAME);
    }
}
