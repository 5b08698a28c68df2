//! The reader-writer lock table: `rw-writer:POLICY` ([`WriterPref`]), `rw-phase:POLICY`
//! ([`PhaseFair`]) and `rw-reader:POLICY` ([`ReaderPref`]) over every policy, and the
//! references `std` (`std::sync::RwLock`), `parking_lot` (`parking_lot::RawRwLock`) and
//! `pthread` (a default `pthread_rwlock_t`).
//!
//! Each lock is built boxed ([`Entry::build`]); those whose state is plain memory (all but
//! `std` and `pthread`) can also live in memory the caller owns ([`RawRwLockOps`]), which is
//! how the preload library keeps one inside a program's `pthread_rwlock_t`.

use crate::in_place::poll_until;
use crate::table::{add_algorithm, policy_list, Algorithm, Entry, Kind, Table};
use core::cell::{RefCell, UnsafeCell};
use lock_api::{GuardNoSend, GuardSend, RawRwLock};
use spinlab::rwlock::{PhaseFair, ReaderPref, WriterPref};
use spinlab::wait::Wait;
use std::time::Instant;

/// The reader-writer lock algorithms, in registry order.
pub const RW_ALGORITHMS: [&str; 3] = ["rw-writer", "rw-phase", "rw-reader"];

/// The reference reader-writer locks, measured beside spinlab's.
pub const REFERENCE_RWLOCKS: [&str; 3] = ["std", "parking_lot", "pthread"];

/// A reader-writer lock reached by name, without guard types. Like a `pthread_rwlock_t`, a
/// lock must be released by the thread that took it, and not be dropped while held.
pub trait DynRwLock: Send + Sync {
    /// Acquires a shared (read) lock, waiting as long as it takes.
    fn lock_shared(&self);
    /// Acquires a shared lock if that is possible now.
    fn try_lock_shared(&self) -> bool;
    /// Releases a shared lock.
    ///
    /// # Safety
    /// The calling thread must hold a shared lock taken through this object.
    unsafe fn unlock_shared(&self);
    /// Acquires the exclusive (write) lock, waiting as long as it takes.
    fn lock_exclusive(&self);
    /// Acquires the exclusive lock if that is possible now.
    fn try_lock_exclusive(&self) -> bool;
    /// Releases the exclusive lock.
    ///
    /// # Safety
    /// The calling thread must hold the exclusive lock taken through this object.
    unsafe fn unlock_exclusive(&self);
}

/// Which side, if any, the lock promises not to starve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwFairness {
    /// Writers never starve; a stream of writers can starve readers.
    WriterPreferring,
    /// Reader and writer phases alternate: neither starves.
    PhaseFair,
    /// Readers get in whenever no writer holds the lock, so a reader may take it again while
    /// a writer waits (read locks nest); a stream of readers can starve writers.
    ReaderPreferring,
    /// The implementation promises nothing (the references: std leaves it to the platform,
    /// glibc's default `pthread_rwlock_t` prefers readers).
    Unspecified,
}

/// Reader-writer locks: `ALGORITHM:POLICY` and the references, each a [`DynRwLock`] when
/// built.
#[derive(Clone, Copy, Debug)]
pub struct RwLocks;

/// One reader-writer lock the registry can build.
pub type RwLockEntry = Entry<RwLocks>;

/// What a reader-writer lock entry says beyond the facts every entry carries.
#[derive(Clone, Debug)]
pub struct RwLockFacts {
    /// The algorithm (`rw-writer`, `rw-phase`, `rw-reader`) or the reference lock's name.
    pub algorithm: &'static str,
    /// Whom the lock protects from starvation.
    pub fairness: RwFairness,
    /// Its verbs in memory the caller owns; `None` for `std` and `pthread`, which must not
    /// move or need more than their own bytes.
    pub ops: Option<RawRwLockOps>,
}

/// The verbs of a reader-writer lock stored in caller-provided memory of `size` bytes aligned
/// to `align`. Every function's `at` must hold a lock written by `init` (or zeroed bytes, where
/// `zero_is_unlocked`); an unlock must come from the thread that holds what it releases.
#[derive(Clone, Copy, Debug)]
pub struct RawRwLockOps {
    /// Bytes of storage the lock needs.
    pub size: usize,
    /// Alignment the storage needs.
    pub align: usize,
    /// Whether all-zero bytes are already a valid unlocked lock (so a zero-initialised
    /// `pthread_rwlock_t` needs no `init` call).
    pub zero_is_unlocked: bool,
    /// Writes a new unlocked lock. # Safety: `at` is valid for `size` bytes and aligned.
    pub init: unsafe fn(at: *mut u8),
    /// Acquires a shared lock. # Safety: `at` holds a lock (see the type's docs).
    pub lock_shared: unsafe fn(at: *const u8),
    /// Acquires a shared lock if possible now. # Safety: as `lock_shared`.
    pub try_lock_shared: unsafe fn(at: *const u8) -> bool,
    /// Acquires a shared lock or gives up at the deadline. # Safety: as `lock_shared`.
    pub try_lock_shared_until: unsafe fn(at: *const u8, deadline: Instant) -> bool,
    /// Releases a shared lock. # Safety: as `lock_shared`, and the caller holds one.
    pub unlock_shared: unsafe fn(at: *const u8),
    /// Acquires the exclusive lock. # Safety: as `lock_shared`.
    pub lock_exclusive: unsafe fn(at: *const u8),
    /// Acquires the exclusive lock if it is free now. # Safety: as `lock_shared`.
    pub try_lock_exclusive: unsafe fn(at: *const u8) -> bool,
    /// Acquires the exclusive lock or gives up at the deadline. # Safety: as `lock_shared`.
    pub try_lock_exclusive_until: unsafe fn(at: *const u8, deadline: Instant) -> bool,
    /// Releases the exclusive lock. # Safety: as `lock_shared`, and the caller holds it.
    pub unlock_exclusive: unsafe fn(at: *const u8),
    /// Whether a writer holds the lock now (a snapshot; exact for the thread that does).
    /// # Safety: as `lock_shared`.
    pub is_locked_exclusive: unsafe fn(at: *const u8) -> bool,
    /// Destroys an unlocked lock. # Safety: as `lock_shared`, nobody holds or waits for it,
    /// and `at` is not used again before another `init`.
    pub drop: unsafe fn(at: *mut u8),
    /// Forgets the lock's waiters and keeps its holds, in a child process after `fork()`
    /// (see [`ReaderPref::forget_waiters`]); `None` where the lock cannot tell the two apart
    /// (a phase-fair lock's writers hold tickets, parking_lot's waiters are in its global
    /// table). # Safety: as `lock_shared`, and no other thread uses the lock meanwhile.
    pub forget_waiters: Option<unsafe fn(at: *mut u8)>,
}

/// A guard type that carries no state, so a holder can make the one its unlock needs again:
/// `lock_api`'s two marker guards, which spinlab's reader-writer locks and parking_lot's use.
trait Stateless {
    fn recreate() -> Self;
}

impl Stateless for GuardSend {
    fn recreate() -> Self {
        GuardSend::new()
    }
}

impl Stateless for GuardNoSend {
    fn recreate() -> Self {
        GuardNoSend::new()
    }
}

/// A `lock_api` reader-writer lock whose guards carry no state, used without guards: an
/// acquisition's guard is dropped (it is a marker) and made again for the unlock.
struct Guardless<R>(R);

impl<R> DynRwLock for Guardless<R>
where
    R: RawRwLock + Send + Sync,
    R::SharedGuard: Stateless,
    R::ExclusiveGuard: Stateless,
{
    #[inline]
    fn lock_shared(&self) {
        let _marker = self.0.lock_shared();
    }
    #[inline]
    fn try_lock_shared(&self) -> bool {
        self.0.try_lock_shared().is_some()
    }
    #[inline]
    unsafe fn unlock_shared(&self) {
        // SAFETY: the caller holds a shared lock, and its guard state is a marker, which we
        // make again.
        unsafe { self.0.unlock_shared(R::SharedGuard::recreate()) }
    }
    #[inline]
    fn lock_exclusive(&self) {
        let _marker = self.0.lock_exclusive();
    }
    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        self.0.try_lock_exclusive().is_some()
    }
    #[inline]
    unsafe fn unlock_exclusive(&self) {
        // SAFETY: as in `unlock_shared`, for the exclusive lock.
        unsafe { self.0.unlock_exclusive(R::ExclusiveGuard::recreate()) }
    }
}

fn guardless<R>(_: ()) -> Box<dyn DynRwLock>
where
    R: RawRwLock + Send + Sync + 'static,
    R::SharedGuard: Stateless,
    R::ExclusiveGuard: Stateless,
{
    Box::new(Guardless(R::INIT))
}

/// The verbs of `Guardless<R>` in place. Timed acquisitions poll (these locks have no timed
/// waits of their own); every `R` used here is all zero bits when unlocked (a test checks).
fn in_place<R>() -> RawRwLockOps
where
    R: RawRwLock + Send + Sync + 'static,
    R::SharedGuard: Stateless,
    R::ExclusiveGuard: Stateless,
{
    RawRwLockOps {
        size: core::mem::size_of::<Guardless<R>>(),
        align: core::mem::align_of::<Guardless<R>>(),
        zero_is_unlocked: true,
        init: |at| {
            // SAFETY: the `RawRwLockOps` contract: room for the lock at `at`.
            unsafe { (at as *mut Guardless<R>).write(Guardless(R::INIT)) }
        },
        lock_shared: |at| {
            // SAFETY: the `RawRwLockOps` contract: a live lock at `at`.
            unsafe { shared::<R>(at) }.lock_shared()
        },
        try_lock_shared: |at| {
            // SAFETY: the `RawRwLockOps` contract: a live lock at `at`.
            unsafe { shared::<R>(at) }.try_lock_shared()
        },
        try_lock_shared_until: |at, deadline| {
            // SAFETY: the `RawRwLockOps` contract: a live lock at `at`.
            let lock = unsafe { shared::<R>(at) };
            poll_until(|| lock.try_lock_shared(), deadline)
        },
        unlock_shared: |at| {
            // SAFETY: the `RawRwLockOps` contract: the caller holds a shared lock.
            unsafe { shared::<R>(at).unlock_shared() }
        },
        lock_exclusive: |at| {
            // SAFETY: the `RawRwLockOps` contract: a live lock at `at`.
            unsafe { shared::<R>(at) }.lock_exclusive()
        },
        try_lock_exclusive: |at| {
            // SAFETY: the `RawRwLockOps` contract: a live lock at `at`.
            unsafe { shared::<R>(at) }.try_lock_exclusive()
        },
        try_lock_exclusive_until: |at, deadline| {
            // SAFETY: the `RawRwLockOps` contract: a live lock at `at`.
            let lock = unsafe { shared::<R>(at) };
            poll_until(|| lock.try_lock_exclusive(), deadline)
        },
        unlock_exclusive: |at| {
            // SAFETY: the `RawRwLockOps` contract: the caller holds the exclusive lock.
            unsafe { shared::<R>(at).unlock_exclusive() }
        },
        is_locked_exclusive: |at| {
            // SAFETY: the `RawRwLockOps` contract: a live lock at `at`.
            unsafe { shared::<R>(at) }.0.is_locked_exclusive()
        },
        drop: |at| {
            // SAFETY: the `RawRwLockOps` contract: an unlocked lock nothing else uses.
            unsafe { core::ptr::drop_in_place(at as *mut Guardless<R>) }
        },
        forget_waiters: None,
    }
}

/// The lock at `at`, for a caller that alone uses it.
///
/// # Safety
/// `at` holds a live `Guardless<R>` that no other thread uses for `'a` (the
/// [`RawRwLockOps::forget_waiters`] contract).
unsafe fn exclusive<'a, R>(at: *mut u8) -> &'a mut R {
    // SAFETY: the caller's contract.
    unsafe { &mut (*(at as *mut Guardless<R>)).0 }
}

/// The lock at `at`.
///
/// # Safety
/// `at` holds a live `Guardless<R>` for `'a` (the [`RawRwLockOps`] contract).
unsafe fn shared<'a, R>(at: *const u8) -> &'a Guardless<R> {
    // SAFETY: the caller's contract; the lock is only ever shared.
    unsafe { &*(at as *const Guardless<R>) }
}

/// A reader-writer algorithm, as the registry sees it: a name, a promise, a type per policy.
trait RwAlgorithm {
    const NAME: &'static str;
    const FAIRNESS: RwFairness;
    fn make<W: Wait>() -> fn(()) -> Box<dyn DynRwLock>;
    fn ops<W: Wait>() -> RawRwLockOps;
}

impl<A: RwAlgorithm> Algorithm<RwLocks> for A {
    const NAME: &'static str = <A as RwAlgorithm>::NAME;

    fn over<W: Wait>() -> (RwLockFacts, fn(()) -> Box<dyn DynRwLock>) {
        let facts =
            RwLockFacts { algorithm: <A as RwAlgorithm>::NAME, fairness: A::FAIRNESS, ops: Some(A::ops::<W>()) };
        (facts, A::make::<W>())
    }
}

struct WriterPrefAlgorithm;
impl RwAlgorithm for WriterPrefAlgorithm {
    const NAME: &'static str = "rw-writer";
    const FAIRNESS: RwFairness = RwFairness::WriterPreferring;
    fn make<W: Wait>() -> fn(()) -> Box<dyn DynRwLock> {
        guardless::<WriterPref<W>>
    }
    fn ops<W: Wait>() -> RawRwLockOps {
        RawRwLockOps {
            // SAFETY: the `RawRwLockOps` contract: a live lock at `at`, used by nobody else.
            forget_waiters: Some(|at| unsafe { exclusive::<WriterPref<W>>(at) }.forget_waiters()),
            ..in_place::<WriterPref<W>>()
        }
    }
}

struct PhaseFairAlgorithm;
impl RwAlgorithm for PhaseFairAlgorithm {
    const NAME: &'static str = "rw-phase";
    const FAIRNESS: RwFairness = RwFairness::PhaseFair;
    fn make<W: Wait>() -> fn(()) -> Box<dyn DynRwLock> {
        guardless::<PhaseFair<W>>
    }
    fn ops<W: Wait>() -> RawRwLockOps {
        in_place::<PhaseFair<W>>()
    }
}

struct ReaderPrefAlgorithm;
impl RwAlgorithm for ReaderPrefAlgorithm {
    const NAME: &'static str = "rw-reader";
    const FAIRNESS: RwFairness = RwFairness::ReaderPreferring;
    fn make<W: Wait>() -> fn(()) -> Box<dyn DynRwLock> {
        guardless::<ReaderPref<W>>
    }
    fn ops<W: Wait>() -> RawRwLockOps {
        RawRwLockOps {
            // SAFETY: the `RawRwLockOps` contract: a live lock at `at`, used by nobody else.
            forget_waiters: Some(|at| unsafe { exclusive::<ReaderPref<W>>(at) }.forget_waiters()),
            ..in_place::<ReaderPref<W>>()
        }
    }
}

/// Every reader-writer lock: each algorithm over every policy, then the references.
///
/// ```
/// use spinlab_registry::RWLOCKS;
/// for name in ["rw-phase:futex", "rw-writer:spin-park", "rw-reader:pause", "std", "parking_lot", "pthread"] {
///     let lock = RWLOCKS.build(name, ()).unwrap();
///     lock.lock_shared();
///     assert!(lock.try_lock_shared(), "{name}: readers share");
///     assert!(!lock.try_lock_exclusive(), "{name}");
///     // SAFETY: this thread holds both shared locks.
///     unsafe { lock.unlock_shared(); lock.unlock_shared() };
///     assert!(lock.try_lock_exclusive(), "{name}");
///     assert!(!lock.try_lock_shared(), "{name}");
///     // SAFETY: this thread holds the exclusive lock.
///     unsafe { lock.unlock_exclusive() };
/// }
/// assert!(RWLOCKS.build("rw-phase:nap", ()).is_err());
/// ```
pub static RWLOCKS: Table<RwLocks> = Table::new();

impl Kind for RwLocks {
    type Built = Box<dyn DynRwLock>;
    type Args = ();
    type Facts = RwLockFacts;
    type Ops = RawRwLockOps;

    fn rows() -> Vec<RwLockEntry> {
        let mut rows = Vec::new();
        add_algorithm::<RwLocks, WriterPrefAlgorithm>(&mut rows);
        add_algorithm::<RwLocks, PhaseFairAlgorithm>(&mut rows);
        add_algorithm::<RwLocks, ReaderPrefAlgorithm>(&mut rows);
        rows.push(reference("std", |()| StdRwLock::boxed(), None));
        let parking_lot = in_place::<parking_lot::RawRwLock>();
        rows.push(reference("parking_lot", guardless::<parking_lot::RawRwLock>, Some(parking_lot)));
        rows.push(reference("pthread", |()| PthreadRwLock::boxed(), None));
        rows
    }

    fn expected() -> String {
        format!(
            "a reader-writer lock is ALGORITHM:POLICY with ALGORITHM one of {} and POLICY one of {}, \
             or a reference lock: {}",
            RW_ALGORITHMS.join(", "),
            policy_list(),
            REFERENCE_RWLOCKS.join(", ")
        )
    }

    fn in_place(facts: &RwLockFacts) -> Option<(&RawRwLockOps, usize, usize)> {
        facts.ops.as_ref().map(|ops| (ops, ops.size, ops.align))
    }
}

fn reference(name: &'static str, make: fn(()) -> Box<dyn DynRwLock>, ops: Option<RawRwLockOps>) -> RwLockEntry {
    Entry::reference(name, RwLockFacts { algorithm: name, fairness: RwFairness::Unspecified, ops }, make)
}

/// `std::sync::RwLock`, whose guards borrow the lock and cannot be released without being
/// dropped. The write guard is kept beside the lock; read guards, of which many threads hold
/// one each, are kept in a per-thread stash keyed by the lock's address, which costs every
/// read acquisition a thread-local push and pop (part of what this reference measures).
struct StdRwLock {
    lock: std::sync::RwLock<()>,
    writer: UnsafeCell<Option<std::sync::RwLockWriteGuard<'static, ()>>>,
}

/// A read guard of one `StdRwLock`, with the guard's lifetime erased; it is dropped by the
/// thread that holds it before the lock can be dropped (the [`DynRwLock`] contract).
type ErasedReadGuard = std::sync::RwLockReadGuard<'static, ()>;

std::thread_local! {
    static STD_READ_GUARDS: RefCell<Vec<(usize, ErasedReadGuard)>> = const { RefCell::new(Vec::new()) };
}

// SAFETY: `writer` is touched only by the thread holding the write lock. Read guards are not
// `Send` and stay on the thread that took them.
unsafe impl Sync for StdRwLock {}
// SAFETY: an unlocked std lock may move; a locked one is borrowed and cannot.
unsafe impl Send for StdRwLock {}

impl StdRwLock {
    fn boxed() -> Box<dyn DynRwLock> {
        Box::new(StdRwLock { lock: std::sync::RwLock::new(()), writer: UnsafeCell::new(None) })
    }

    fn key(&self) -> usize {
        self as *const Self as usize
    }

    fn keep_reader(&self, guard: std::sync::RwLockReadGuard<'_, ()>) {
        // SAFETY: only the lifetime changes; the guard is dropped in `unlock_shared`, before
        // the lock may be dropped (the `DynRwLock` contract).
        let guard = unsafe { core::mem::transmute::<std::sync::RwLockReadGuard<'_, ()>, ErasedReadGuard>(guard) };
        STD_READ_GUARDS.with(|guards| guards.borrow_mut().push((self.key(), guard)));
    }

    fn keep_writer(&self, guard: std::sync::RwLockWriteGuard<'_, ()>) {
        // SAFETY: only the lifetime changes (the guard is dropped in `unlock_exclusive`), and we
        // hold the write lock, so nobody else touches `writer`.
        unsafe {
            let guard = core::mem::transmute::<
                std::sync::RwLockWriteGuard<'_, ()>,
                std::sync::RwLockWriteGuard<'static, ()>,
            >(guard);
            *self.writer.get() = Some(guard);
        }
    }
}

impl DynRwLock for StdRwLock {
    fn lock_shared(&self) {
        self.keep_reader(self.lock.read().unwrap_or_else(|poisoned| poisoned.into_inner()));
    }
    fn try_lock_shared(&self) -> bool {
        match self.lock.try_read() {
            Ok(guard) => self.keep_reader(guard),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => self.keep_reader(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => return false,
        }
        true
    }
    unsafe fn unlock_shared(&self) {
        let key = self.key();
        let guard = STD_READ_GUARDS.with(|guards| {
            let mut guards = guards.borrow_mut();
            let at = guards.iter().rposition(|(of, _)| *of == key);
            at.map(|at| guards.swap_remove(at).1)
        });
        debug_assert!(guard.is_some(), "unlock_shared without a read lock held by this thread");
        drop(guard);
    }
    fn lock_exclusive(&self) {
        self.keep_writer(self.lock.write().unwrap_or_else(|poisoned| poisoned.into_inner()));
    }
    fn try_lock_exclusive(&self) -> bool {
        match self.lock.try_write() {
            Ok(guard) => self.keep_writer(guard),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => self.keep_writer(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => return false,
        }
        true
    }
    unsafe fn unlock_exclusive(&self) {
        // SAFETY: the caller holds the write lock, so `keep_writer` stored its guard and nobody
        // else touches `writer`.
        drop(unsafe { (*self.writer.get()).take() });
    }
}

/// A default `pthread_rwlock_t` (glibc: prefers readers), which must not move once used: it
/// lives in the box the registry hands out.
struct PthreadRwLock(UnsafeCell<libc::pthread_rwlock_t>);

// SAFETY: pthread reader-writer locks are made to be shared between threads; the cell only
// gives libc the mutable pointer it asks for.
unsafe impl Sync for PthreadRwLock {}
// SAFETY: it is only moved as a whole inside its box, which does not move it.
unsafe impl Send for PthreadRwLock {}

impl PthreadRwLock {
    fn boxed() -> Box<dyn DynRwLock> {
        Box::new(PthreadRwLock(UnsafeCell::new(libc::PTHREAD_RWLOCK_INITIALIZER)))
    }
}

impl DynRwLock for PthreadRwLock {
    fn lock_shared(&self) {
        // SAFETY: a live, initialised lock (here and below).
        let r = unsafe { libc::pthread_rwlock_rdlock(self.0.get()) };
        debug_assert_eq!(r, 0);
    }
    fn try_lock_shared(&self) -> bool {
        // SAFETY: as above.
        unsafe { libc::pthread_rwlock_tryrdlock(self.0.get()) == 0 }
    }
    unsafe fn unlock_shared(&self) {
        // SAFETY: as above; the caller holds a read lock.
        unsafe { libc::pthread_rwlock_unlock(self.0.get()) };
    }
    fn lock_exclusive(&self) {
        // SAFETY: as above.
        let r = unsafe { libc::pthread_rwlock_wrlock(self.0.get()) };
        debug_assert_eq!(r, 0);
    }
    fn try_lock_exclusive(&self) -> bool {
        // SAFETY: as above.
        unsafe { libc::pthread_rwlock_trywrlock(self.0.get()) == 0 }
    }
    unsafe fn unlock_exclusive(&self) {
        // SAFETY: as above; the caller holds the write lock.
        unsafe { libc::pthread_rwlock_unlock(self.0.get()) };
    }
}

impl Drop for PthreadRwLock {
    fn drop(&mut self) {
        // SAFETY: an unlocked lock nobody uses any more.
        unsafe { libc::pthread_rwlock_destroy(self.0.get()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Origin;

    #[test]
    fn every_algorithm_has_every_policy_and_the_references_follow() {
        let names = RWLOCKS.names();
        let policies = spinlab::wait::policies();
        assert_eq!(names.len(), RW_ALGORITHMS.len() * policies.len() + REFERENCE_RWLOCKS.len());
        for algorithm in RW_ALGORITHMS {
            for policy in &policies {
                let name = format!("{algorithm}:{}", policy.name);
                assert!(names.contains(&name.as_str()), "{name} missing");
            }
        }
        assert_eq!(&names[names.len() - REFERENCE_RWLOCKS.len()..], REFERENCE_RWLOCKS);
        for entry in RWLOCKS.entries() {
            let promised = entry.facts.fairness != RwFairness::Unspecified;
            assert_eq!(promised, entry.origin == Origin::Spinlab, "{}", entry.name);
        }
    }

    #[test]
    fn unknown_names_list_what_is_accepted() {
        let text = RWLOCKS.build("rw-fair:futex", ()).err().unwrap().to_string();
        for accepted in
            ["`rw-fair:futex`", "rw-writer", "rw-phase", "rw-reader", "spin-park", "mwaitx", "parking_lot", "pthread"]
        {
            assert!(text.contains(accepted), "{text}");
        }
    }

    #[test]
    fn every_in_place_lock_is_zero_bits_when_new_and_works_in_place() {
        let in_place: Vec<_> =
            RWLOCKS.entries().iter().filter(|e| e.availability.is_ok() && e.facts.ops.is_some()).collect();
        assert!(in_place.iter().any(|e| e.name == "parking_lot"));
        assert!(RWLOCKS
            .entries()
            .iter()
            .filter(|e| e.facts.ops.is_none())
            .all(|e| e.name == "std" || e.name == "pthread"));
        for entry in in_place {
            let ops = entry.facts.ops.unwrap();
            let name = &entry.name;
            assert!(ops.align <= 16, "{name}");
            let mut storage = vec![u128::MAX; ops.size.div_ceil(16)];
            let at = storage.as_mut_ptr().cast::<u8>();
            // SAFETY: `storage` is aligned to 16 and holds `size` bytes; the lock is used as
            // its contract says and dropped unlocked, then the bytes are read as bytes.
            unsafe {
                (ops.init)(at);
                let bytes = core::slice::from_raw_parts(at, ops.size);
                assert!(bytes.iter().all(|&b| b == 0), "{name}: a new lock is not all zero: {bytes:?}");
                assert!((ops.try_lock_shared)(at) && (ops.try_lock_shared)(at), "{name}: readers share");
                assert!(!(ops.try_lock_exclusive)(at) && !(ops.is_locked_exclusive)(at), "{name}");
                let soon = Instant::now() + std::time::Duration::from_millis(2);
                assert!(!(ops.try_lock_exclusive_until)(at, soon), "{name}: timed out while read-held");
                (ops.unlock_shared)(at);
                (ops.unlock_shared)(at);
                (ops.lock_exclusive)(at);
                assert!((ops.is_locked_exclusive)(at) && !(ops.try_lock_shared)(at), "{name}");
                assert!(!(ops.try_lock_shared_until)(at, Instant::now()), "{name}");
                (ops.unlock_exclusive)(at);
                assert!((ops.try_lock_exclusive_until)(at, Instant::now()), "{name}: free again");
                (ops.unlock_exclusive)(at);
                (ops.drop)(at);
            }
        }
    }

    #[test]
    fn std_read_guards_are_released_per_lock_and_per_thread() {
        let (a, b) = (StdRwLock::boxed(), StdRwLock::boxed());
        a.lock_shared();
        b.lock_shared();
        a.lock_shared();
        // SAFETY: this thread holds two read locks on `a` and one on `b`.
        unsafe {
            a.unlock_shared();
            b.unlock_shared();
        }
        assert!(b.try_lock_exclusive(), "b's only reader left");
        assert!(!a.try_lock_exclusive(), "a still has a reader");
        // SAFETY: one read lock on `a` and the write lock on `b` are held.
        unsafe {
            a.unlock_shared();
            b.unlock_exclusive();
        }
        assert!(a.try_lock_exclusive());
        // SAFETY: held.
        unsafe { a.unlock_exclusive() };
    }
}
