//! What the preload library knows of glibc: where `pthread_mutex_t` keeps its type, where a
//! glibc-initialised `pthread_cond_t` says it is process-shared, the room each replaced object
//! has for its spinlab primitive, the attribute getters, and the real functions (found with
//! `dlsym(RTLD_NEXT, …)`).
//!
//! glibc's `pthread_mutex_t` on 64-bit targets (sysdeps/nptl/bits/struct_mutex.h):
//!
//! | bytes | field      | here                                                        |
//! |-------|------------|-------------------------------------------------------------|
//! | 0..16 | `__lock`, `__count`, `__owner`, `__nusers` | the spinlab lock, for a replaced mutex |
//! | 16..20| `__kind`   | the type and flags; 0 (normal) or 3 (adaptive) for a replaced mutex, which is also what `PTHREAD_MUTEX_INITIALIZER` and `PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP` write; -1 once destroyed, as glibc writes |
//! | 20..24| `__spins`, `__elision` | a replaced mutex's fork generation (see `fork`)  |
//! | 24..32| `__list.__prev` | a replaced mutex's holder, by thread pointer (see `fork`)  |
//! | 32..40| `__list.__next` | a replaced mutex's memo for the statistics (see `stats::memo`) |
//!
//! glibc's `pthread_rwlock_t` on 64-bit targets (sysdeps/x86/nptl/bits/struct_rwlock.h and the
//! generic sysdeps/nptl/bits/struct_rwlock.h, which aarch64 uses, agree on these offsets):
//!
//! | bytes  | field        | here                                                        |
//! |--------|--------------|-------------------------------------------------------------|
//! | 0..24  | `__readers` … `__pad4` | the spinlab rwlock, for a replaced one             |
//! | 24..28 | `__cur_writer` | the writer's id, for `EDEADLK`, as glibc keeps its tid    |
//! | 28..32 | `__shared`   | non-zero for a process-shared rwlock: glibc's               |
//! | 32..40 | `__rwelision` and `__pad1` (x86_64), `__pad1` (generic) | untouched      |
//! | 40..44 | `__pad2`     | a replaced rwlock's fork generation (see `fork`)            |
//! | 44..48 | `__pad2`     | untouched                                                   |
//! | 48..52 | `__flags`    | the kind: 0 (`PREFER_READER`) or 1 (`PREFER_WRITER`, which glibc treats as 0), or 2 (`PREFER_WRITER_NONRECURSIVE`); `PTHREAD_RWLOCK_INITIALIZER` is all zero |
//!
//! glibc's `pthread_cond_t` keeps its process-shared bit in bit 0 of the word at bytes 36..40
//! (`__wrefs`); the replacement condition variable never sets that bit, so a condition
//! variable with it set is glibc's own. [`Real::check_layout`] verifies these facts on the
//! running glibc before anything relies on them.

use crate::stats::Memo;
use core::alloc::Layout;
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicUsize, Ordering::Relaxed};
use libc::{c_char, c_int, c_void, clockid_t, pthread_cond_t, pthread_condattr_t, pthread_mutex_t};
use libc::{pthread_barrier_t, pthread_barrierattr_t, pthread_mutexattr_t, pthread_spinlock_t, timespec};
use libc::{pthread_rwlock_t, pthread_rwlockattr_t};

#[cfg(not(all(target_os = "linux", target_env = "gnu", any(target_arch = "x86_64", target_arch = "aarch64"))))]
compile_error!("spinlab-preload knows the pthread layouts of glibc on x86_64 and aarch64 only");

/// Where `__kind` is.
pub const MUTEX_KIND_OFFSET: usize = 16;
/// The room a replaced mutex has for its spinlab lock: the bytes before `__kind`, 8-aligned
/// as a `pthread_mutex_t` is.
pub const MUTEX_ROOM: Layout = room(MUTEX_KIND_OFFSET, 8);
/// Where a replaced mutex keeps the fork generation it was last made sound in.
pub const MUTEX_FORK_OFFSET: usize = 20;
/// Where a replaced mutex keeps its holder's thread pointer (0: none).
pub const MUTEX_HOLDER_OFFSET: usize = 24;
/// Where a replaced mutex keeps its memo for the statistics (`__list.__next`, which glibc
/// uses only for robust mutexes).
pub const MUTEX_MEMO_OFFSET: usize = 32;
/// Where a glibc condition variable keeps its process-shared bit.
pub const COND_FLAGS_OFFSET: usize = 36;
/// Our condition variable's flags word: glibc's process-shared bit (never set by us).
pub const COND_GLIBC_SHARED: u32 = 1;
/// Our condition variable's flags word: timed waits use `CLOCK_MONOTONIC`.
pub const COND_MONOTONIC: u32 = 2;

/// Where `__cur_writer` is.
pub const RWLOCK_WRITER_OFFSET: usize = 24;
/// The room a replaced rwlock has for its spinlab lock: the bytes before `__cur_writer`,
/// 8-aligned as a `pthread_rwlock_t` is.
pub const RWLOCK_ROOM: Layout = room(RWLOCK_WRITER_OFFSET, 8);
/// Where `__shared` is.
pub const RWLOCK_SHARED_OFFSET: usize = 28;
/// Where a replaced rwlock keeps the fork generation it was last made sound in: 4 bytes of
/// `__pad2` (on x86_64 and in the generic layout aarch64 uses), which glibc does not use.
pub const RWLOCK_FORK_OFFSET: usize = 40;
/// Where `__flags`, the kind, is.
pub const RWLOCK_FLAGS_OFFSET: usize = 48;
/// glibc's rwlock kinds (<pthread.h>). glibc gives writers preference only for the third.
pub const PTHREAD_RWLOCK_PREFER_READER_NP: c_int = 0;
pub const PTHREAD_RWLOCK_PREFER_WRITER_NP: c_int = 1;
pub const PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP: c_int = 2;

/// The room a replaced barrier has for its spinlab barrier: the first 16 bytes of a
/// `pthread_barrier_t`, 8-aligned; the preload library keeps its own words after them.
pub const BARRIER_ROOM: Layout = room(16, 8);
/// The room a replaced spin lock has: the whole `pthread_spinlock_t`, an `int`.
pub const SPIN_ROOM: Layout = Layout::new::<pthread_spinlock_t>();

/// The layout of `size` bytes aligned to `align`, checked when the constants are compiled.
const fn room(size: usize, align: usize) -> Layout {
    match Layout::from_size_align(size, align) {
        Ok(room) => room,
        Err(_) => panic!("a room's alignment is a power of two"),
    }
}

const _: () = assert!(align_of::<pthread_mutex_t>() >= MUTEX_ROOM.align());
const _: () = assert!(align_of::<pthread_rwlock_t>() >= RWLOCK_ROOM.align());
const _: () = assert!(align_of::<pthread_barrier_t>() >= BARRIER_ROOM.align());
const _: () = assert!(size_of::<pthread_barrier_t>() >= BARRIER_ROOM.size());
const _: () = assert!(size_of::<pthread_rwlock_t>() >= RWLOCK_FLAGS_OFFSET + 4);
const _: () = assert!(size_of::<pthread_mutex_t>() >= MUTEX_KIND_OFFSET + 4);
const _: () = assert!(size_of::<pthread_mutex_t>() >= MUTEX_HOLDER_OFFSET + 8);
const _: () = assert!(size_of::<pthread_mutex_t>() >= MUTEX_MEMO_OFFSET + size_of::<Memo>());
const _: () = assert!(MUTEX_MEMO_OFFSET % align_of::<Memo>() == 0);
const _: () = assert!(size_of::<pthread_cond_t>() >= COND_FLAGS_OFFSET + 4);
const _: () = assert!(align_of::<pthread_cond_t>() >= 4);

// glibc's <pthread.h> values.
pub const PTHREAD_MUTEX_NORMAL: c_int = 0;
pub const PTHREAD_MUTEX_RECURSIVE: c_int = 1;
pub const PTHREAD_MUTEX_ADAPTIVE_NP: c_int = 3;
const PTHREAD_MUTEX_STALLED: c_int = 0;
const PTHREAD_PRIO_NONE: c_int = 0;
const PTHREAD_PROCESS_PRIVATE: c_int = 0;
const PTHREAD_PROCESS_SHARED: c_int = 1;
// The type bits of `__kind` (glibc's pthreadP.h).
const KIND_TYPE_MASK: c_int = 3;

extern "C" {
    fn pthread_mutexattr_gettype(attr: *const pthread_mutexattr_t, kind: *mut c_int) -> c_int;
    fn pthread_mutexattr_getpshared(attr: *const pthread_mutexattr_t, pshared: *mut c_int) -> c_int;
    fn pthread_mutexattr_getprotocol(attr: *const pthread_mutexattr_t, protocol: *mut c_int) -> c_int;
    fn pthread_mutexattr_getrobust(attr: *const pthread_mutexattr_t, robust: *mut c_int) -> c_int;
    fn pthread_condattr_getpshared(attr: *const pthread_condattr_t, pshared: *mut c_int) -> c_int;
    fn pthread_condattr_getclock(attr: *const pthread_condattr_t, clock: *mut clockid_t) -> c_int;
    fn pthread_rwlockattr_getkind_np(attr: *const pthread_rwlockattr_t, kind: *mut c_int) -> c_int;
    fn pthread_rwlockattr_setkind_np(attr: *mut pthread_rwlockattr_t, kind: c_int) -> c_int;
    fn pthread_rwlockattr_getpshared(attr: *const pthread_rwlockattr_t, pshared: *mut c_int) -> c_int;
    fn pthread_rwlockattr_setpshared(attr: *mut pthread_rwlockattr_t, pshared: c_int) -> c_int;
}

/// The int at `offset` in `rwlock`.
///
/// # Safety
/// `rwlock` points to a `pthread_rwlock_t` that outlives the returned reference, and `offset`
/// is one of the 4-aligned field offsets above.
#[inline(always)]
pub unsafe fn rwlock_word<'a>(rwlock: *const pthread_rwlock_t, offset: usize) -> &'a AtomicI32 {
    // SAFETY: an aligned int inside the rwlock (the asserts above). An atomic view, because
    // other threads write the neighbouring lock bytes atomically; `__shared` and `__flags`
    // change only at init, `__cur_writer` only under the write lock.
    unsafe { &*(rwlock.cast::<u8>().add(offset) as *const AtomicI32) }
}

/// The kind a replaced rwlock keeps for `attr` (NULL: the default), or `None` when the
/// attribute asks for a process-shared one (glibc's job) or the getters refuse it.
///
/// # Safety
/// `attr` is NULL or points to a `pthread_rwlockattr_t`.
pub unsafe fn rwlock_kind_for(attr: *const pthread_rwlockattr_t) -> Option<c_int> {
    if attr.is_null() {
        return Some(PTHREAD_RWLOCK_PREFER_READER_NP);
    }
    let (mut kind, mut pshared) = (-1, -1);
    // SAFETY: `attr` points to an attribute object; the out-pointers are valid.
    let read = unsafe {
        pthread_rwlockattr_getkind_np(attr, &mut kind) == 0 && pthread_rwlockattr_getpshared(attr, &mut pshared) == 0
    };
    let known = (PTHREAD_RWLOCK_PREFER_READER_NP..=PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP).contains(&kind);
    (read && known && pshared == PTHREAD_PROCESS_PRIVATE).then_some(kind)
}

/// The `__kind` word of `mutex`.
///
/// # Safety
/// `mutex` points to a `pthread_mutex_t` that outlives the returned reference.
#[inline(always)]
pub unsafe fn mutex_kind<'a>(mutex: *const pthread_mutex_t) -> &'a AtomicI32 {
    // SAFETY: `__kind` is an aligned int inside the mutex. An atomic view, because other
    // threads write the neighbouring lock bytes atomically; `__kind` itself changes only at
    // init and destroy.
    unsafe { &*(mutex.cast::<u8>().add(MUTEX_KIND_OFFSET) as *const AtomicI32) }
}

/// The fork generation word of a replaced `mutex` (see `fork`).
///
/// # Safety
/// `mutex` points to a `pthread_mutex_t` that outlives the returned reference.
#[inline(always)]
pub unsafe fn mutex_fork_generation<'a>(mutex: *const pthread_mutex_t) -> &'a AtomicU32 {
    // SAFETY: 4 aligned bytes inside the mutex, which glibc leaves alone for a mutex it never
    // sees (every call on a replaced mutex comes here).
    unsafe { &*(mutex.cast::<u8>().add(MUTEX_FORK_OFFSET) as *const AtomicU32) }
}

/// The holder word of a replaced `mutex` (see `fork`).
///
/// # Safety
/// As [`mutex_fork_generation`].
#[inline(always)]
pub unsafe fn mutex_holder<'a>(mutex: *const pthread_mutex_t) -> &'a AtomicUsize {
    // SAFETY: 8 aligned bytes inside the mutex, as above.
    unsafe { &*(mutex.cast::<u8>().add(MUTEX_HOLDER_OFFSET) as *const AtomicUsize) }
}

/// The statistics' memo of a replaced `mutex` (see `stats::memo`).
///
/// # Safety
/// As [`mutex_fork_generation`].
#[inline(always)]
pub unsafe fn mutex_memo<'a>(mutex: *const pthread_mutex_t) -> &'a Memo {
    // SAFETY: 8 aligned bytes inside the mutex (the asserts above), which glibc leaves alone
    // for a mutex it never sees; all bit patterns are a valid `Memo`.
    unsafe { &*(mutex.cast::<u8>().add(MUTEX_MEMO_OFFSET) as *const Memo) }
}

/// The fork generation word of a replaced `rwlock` (see `fork`).
///
/// # Safety
/// `rwlock` points to a `pthread_rwlock_t` that outlives the returned reference.
#[inline(always)]
pub unsafe fn rwlock_fork_generation<'a>(rwlock: *const pthread_rwlock_t) -> &'a AtomicU32 {
    // SAFETY: 4 aligned bytes of padding inside the rwlock, which glibc leaves alone for a
    // rwlock it never sees (every call on a replaced rwlock comes here).
    unsafe { &*(rwlock.cast::<u8>().add(RWLOCK_FORK_OFFSET) as *const AtomicU32) }
}

/// Whether a mutex of this `__kind` is one the preload library replaces: a normal or adaptive
/// one, private, not robust, without a priority protocol.
#[inline(always)]
pub fn replaced_kind(kind: c_int) -> bool {
    kind == PTHREAD_MUTEX_NORMAL || kind == PTHREAD_MUTEX_ADAPTIVE_NP
}

/// The `__kind` a replaced mutex gets for `attr` (NULL: the default), or `None` when the
/// attribute asks for something glibc must keep doing (recursive, error-checking, robust,
/// process-shared, a priority protocol; or an attribute the getters refuse).
///
/// # Safety
/// `attr` is NULL or points to a `pthread_mutexattr_t`.
pub unsafe fn replaced_kind_for(attr: *const pthread_mutexattr_t) -> Option<c_int> {
    if attr.is_null() {
        return Some(PTHREAD_MUTEX_NORMAL);
    }
    let (mut kind, mut pshared, mut protocol, mut robust) = (-1, -1, -1, -1);
    // SAFETY: `attr` points to an attribute object; the out-pointers are valid.
    let read = unsafe {
        pthread_mutexattr_gettype(attr, &mut kind) == 0
            && pthread_mutexattr_getpshared(attr, &mut pshared) == 0
            && pthread_mutexattr_getprotocol(attr, &mut protocol) == 0
            && pthread_mutexattr_getrobust(attr, &mut robust) == 0
    };
    let plain = pshared == PTHREAD_PROCESS_PRIVATE && protocol == PTHREAD_PRIO_NONE && robust == PTHREAD_MUTEX_STALLED;
    (read && plain && replaced_kind(kind)).then_some(kind)
}

/// The flags word of a condition variable.
///
/// # Safety
/// `cond` points to a `pthread_cond_t` that outlives the returned reference.
#[inline(always)]
pub unsafe fn cond_flags<'a>(cond: *const pthread_cond_t) -> &'a AtomicU32 {
    // SAFETY: an aligned u32 inside the condition variable; glibc's own condition variables
    // update it atomically (it is their `__wrefs`), ours write it only at init.
    unsafe { &*(cond.cast::<u8>().add(COND_FLAGS_OFFSET) as *const AtomicU32) }
}

/// What a condition attribute asks for: `Err(())` for process-shared (glibc's job), or the
/// flags of a replaced condition variable.
///
/// # Safety
/// `attr` is NULL or points to a `pthread_condattr_t`.
pub unsafe fn cond_flags_for(attr: *const pthread_condattr_t) -> Result<u32, ()> {
    if attr.is_null() {
        return Ok(0);
    }
    let (mut pshared, mut clock) = (PTHREAD_PROCESS_PRIVATE, libc::CLOCK_REALTIME);
    // SAFETY: `attr` points to an attribute object; the out-pointers are valid.
    unsafe {
        pthread_condattr_getpshared(attr, &mut pshared);
        pthread_condattr_getclock(attr, &mut clock);
    }
    if pshared == PTHREAD_PROCESS_SHARED {
        Err(())
    } else if clock == libc::CLOCK_MONOTONIC {
        Ok(COND_MONOTONIC)
    } else {
        Ok(0)
    }
}

type MutexInitFn = unsafe extern "C" fn(*mut pthread_mutex_t, *const pthread_mutexattr_t) -> c_int;
type MutexFn = unsafe extern "C" fn(*mut pthread_mutex_t) -> c_int;
type MutexTimedFn = unsafe extern "C" fn(*mut pthread_mutex_t, *const timespec) -> c_int;
type MutexClockFn = unsafe extern "C" fn(*mut pthread_mutex_t, clockid_t, *const timespec) -> c_int;
type CondInitFn = unsafe extern "C" fn(*mut pthread_cond_t, *const pthread_condattr_t) -> c_int;
type CondFn = unsafe extern "C" fn(*mut pthread_cond_t) -> c_int;
type CondWaitFn = unsafe extern "C" fn(*mut pthread_cond_t, *mut pthread_mutex_t) -> c_int;
type CondTimedFn = unsafe extern "C" fn(*mut pthread_cond_t, *mut pthread_mutex_t, *const timespec) -> c_int;
type CondClockFn = unsafe extern "C" fn(*mut pthread_cond_t, *mut pthread_mutex_t, clockid_t, *const timespec) -> c_int;
/// `call_once(once_flag *, void (*)(void))`; "C-unwind" as in `once`.
type CallOnceFn = unsafe extern "C-unwind" fn(*mut u32, unsafe extern "C-unwind" fn());
type BarrierInitFn = unsafe extern "C" fn(*mut pthread_barrier_t, *const pthread_barrierattr_t, libc::c_uint) -> c_int;
type BarrierFn = unsafe extern "C" fn(*mut pthread_barrier_t) -> c_int;
type SpinInitFn = unsafe extern "C" fn(*mut pthread_spinlock_t, c_int) -> c_int;
type SpinFn = unsafe extern "C" fn(*mut pthread_spinlock_t) -> c_int;
type RwlockInitFn = unsafe extern "C" fn(*mut pthread_rwlock_t, *const pthread_rwlockattr_t) -> c_int;
type RwlockFn = unsafe extern "C" fn(*mut pthread_rwlock_t) -> c_int;
type RwlockTimedFn = unsafe extern "C" fn(*mut pthread_rwlock_t, *const timespec) -> c_int;
type RwlockClockFn = unsafe extern "C" fn(*mut pthread_rwlock_t, clockid_t, *const timespec) -> c_int;

/// glibc's own functions, which the replacements call for what they do not replace.
pub struct Real {
    pub mutex_init: MutexInitFn,
    pub mutex_destroy: MutexFn,
    pub mutex_lock: MutexFn,
    pub mutex_trylock: MutexFn,
    pub mutex_unlock: MutexFn,
    pub mutex_timedlock: MutexTimedFn,
    pub mutex_clocklock: MutexClockFn,
    pub cond_init: CondInitFn,
    pub cond_destroy: CondFn,
    pub cond_signal: CondFn,
    pub cond_broadcast: CondFn,
    pub cond_wait: CondWaitFn,
    pub cond_timedwait: CondTimedFn,
    pub cond_clockwait: CondClockFn,
    pub call_once: CallOnceFn,
    pub spin_init: SpinInitFn,
    pub spin_destroy: SpinFn,
    pub spin_lock: SpinFn,
    pub spin_trylock: SpinFn,
    pub spin_unlock: SpinFn,
    pub barrier_init: BarrierInitFn,
    pub barrier_destroy: BarrierFn,
    pub barrier_wait: BarrierFn,
    pub rwlock_init: RwlockInitFn,
    pub rwlock_destroy: RwlockFn,
    pub rwlock_rdlock: RwlockFn,
    pub rwlock_tryrdlock: RwlockFn,
    pub rwlock_timedrdlock: RwlockTimedFn,
    pub rwlock_clockrdlock: RwlockClockFn,
    pub rwlock_wrlock: RwlockFn,
    pub rwlock_trywrlock: RwlockFn,
    pub rwlock_timedwrlock: RwlockTimedFn,
    pub rwlock_clockwrlock: RwlockClockFn,
    pub rwlock_unlock: RwlockFn,
}

/// The version of the condition-variable functions programs link against. x86_64 also keeps
/// the pre-2.3.2 ones, and a plain `dlsym` may return those: ask for this one by version.
#[cfg(target_arch = "x86_64")]
const COND_VERSION: Option<&core::ffi::CStr> = Some(c"GLIBC_2.3.2");
#[cfg(not(target_arch = "x86_64"))]
const COND_VERSION: Option<&core::ffi::CStr> = None;

/// The next definition of `name` after this library's, or the name that is missing.
pub(crate) fn next(name: &core::ffi::CStr, version: Option<&core::ffi::CStr>) -> Result<*mut c_void, String> {
    // SAFETY: NUL-terminated names; RTLD_NEXT is valid from a shared object's code.
    let found = unsafe {
        match version {
            Some(version) => libc::dlvsym(libc::RTLD_NEXT, name.as_ptr(), version.as_ptr() as *const c_char),
            None => core::ptr::null_mut(),
        }
    };
    // SAFETY: as above.
    let found = if found.is_null() { unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } } else { found };
    if found.is_null() {
        Err(name.to_string_lossy().into_owned())
    } else {
        Ok(found)
    }
}

macro_rules! real {
    ($name:literal, $version:expr, $signature:ty) => {{
        let found = next($name, $version)?;
        // SAFETY: glibc's function of that name has this signature (<pthread.h>); a pointer
        // to a function and to data have the same size here.
        unsafe { core::mem::transmute::<*mut c_void, $signature>(found) }
    }};
}

impl Real {
    /// Finds every real function, or names the one that is missing.
    pub fn find() -> Result<Real, String> {
        Ok(Real {
            mutex_init: real!(c"pthread_mutex_init", None, MutexInitFn),
            mutex_destroy: real!(c"pthread_mutex_destroy", None, MutexFn),
            mutex_lock: real!(c"pthread_mutex_lock", None, MutexFn),
            mutex_trylock: real!(c"pthread_mutex_trylock", None, MutexFn),
            mutex_unlock: real!(c"pthread_mutex_unlock", None, MutexFn),
            mutex_timedlock: real!(c"pthread_mutex_timedlock", None, MutexTimedFn),
            mutex_clocklock: real!(c"pthread_mutex_clocklock", None, MutexClockFn),
            cond_init: real!(c"pthread_cond_init", COND_VERSION, CondInitFn),
            cond_destroy: real!(c"pthread_cond_destroy", COND_VERSION, CondFn),
            cond_signal: real!(c"pthread_cond_signal", COND_VERSION, CondFn),
            cond_broadcast: real!(c"pthread_cond_broadcast", COND_VERSION, CondFn),
            cond_wait: real!(c"pthread_cond_wait", COND_VERSION, CondWaitFn),
            cond_timedwait: real!(c"pthread_cond_timedwait", COND_VERSION, CondTimedFn),
            cond_clockwait: real!(c"pthread_cond_clockwait", None, CondClockFn),
            call_once: real!(c"call_once", None, CallOnceFn),
            spin_init: real!(c"pthread_spin_init", None, SpinInitFn),
            spin_destroy: real!(c"pthread_spin_destroy", None, SpinFn),
            spin_lock: real!(c"pthread_spin_lock", None, SpinFn),
            spin_trylock: real!(c"pthread_spin_trylock", None, SpinFn),
            spin_unlock: real!(c"pthread_spin_unlock", None, SpinFn),
            barrier_init: real!(c"pthread_barrier_init", None, BarrierInitFn),
            barrier_destroy: real!(c"pthread_barrier_destroy", None, BarrierFn),
            barrier_wait: real!(c"pthread_barrier_wait", None, BarrierFn),
            rwlock_init: real!(c"pthread_rwlock_init", None, RwlockInitFn),
            rwlock_destroy: real!(c"pthread_rwlock_destroy", None, RwlockFn),
            rwlock_rdlock: real!(c"pthread_rwlock_rdlock", None, RwlockFn),
            rwlock_tryrdlock: real!(c"pthread_rwlock_tryrdlock", None, RwlockFn),
            rwlock_timedrdlock: real!(c"pthread_rwlock_timedrdlock", None, RwlockTimedFn),
            rwlock_clockrdlock: real!(c"pthread_rwlock_clockrdlock", None, RwlockClockFn),
            rwlock_wrlock: real!(c"pthread_rwlock_wrlock", None, RwlockFn),
            rwlock_trywrlock: real!(c"pthread_rwlock_trywrlock", None, RwlockFn),
            rwlock_timedwrlock: real!(c"pthread_rwlock_timedwrlock", None, RwlockTimedFn),
            rwlock_clockwrlock: real!(c"pthread_rwlock_clockwrlock", None, RwlockClockFn),
            rwlock_unlock: real!(c"pthread_rwlock_unlock", None, RwlockFn),
        })
    }

    /// Checks, on the running glibc, the layout facts the replacement relies on: a
    /// recursive mutex has its type in `__kind`, a process-shared condition variable has
    /// bit 0 of the word at byte 36 set (a default one not), and a rwlock keeps its kind in
    /// `__flags` and process-shared in `__shared` (a default one has both zero). Names what
    /// differs.
    pub fn check_layout(&self) -> Result<(), String> {
        // SAFETY: attribute and objects on the stack, initialised by glibc's
        // own functions before they are read, and destroyed after.
        unsafe {
            let mut attr: pthread_mutexattr_t = core::mem::zeroed();
            let mut mutex: pthread_mutex_t = core::mem::zeroed();
            libc::pthread_mutexattr_init(&mut attr);
            libc::pthread_mutexattr_settype(&mut attr, PTHREAD_MUTEX_RECURSIVE);
            (self.mutex_init)(&mut mutex, &attr);
            let kind = mutex_kind(&mutex).load(Relaxed);
            (self.mutex_destroy)(&mut mutex);
            libc::pthread_mutexattr_destroy(&mut attr);
            if kind & KIND_TYPE_MASK != PTHREAD_MUTEX_RECURSIVE {
                return Err(format!(
                    "a recursive pthread_mutex_t has {kind} at byte {MUTEX_KIND_OFFSET}, not its type"
                ));
            }

            let mut attr: pthread_condattr_t = core::mem::zeroed();
            let mut cond: pthread_cond_t = core::mem::zeroed();
            libc::pthread_condattr_init(&mut attr);
            (self.cond_init)(&mut cond, &attr);
            let private = cond_flags(&cond).load(Relaxed);
            (self.cond_destroy)(&mut cond);
            libc::pthread_condattr_setpshared(&mut attr, PTHREAD_PROCESS_SHARED);
            (self.cond_init)(&mut cond, &attr);
            let shared = cond_flags(&cond).load(Relaxed);
            (self.cond_destroy)(&mut cond);
            libc::pthread_condattr_destroy(&mut attr);
            if private & COND_GLIBC_SHARED != 0 || shared & COND_GLIBC_SHARED == 0 {
                return Err(format!(
                    "a process-shared pthread_cond_t is not marked by bit 0 of byte {COND_FLAGS_OFFSET} ({private:#x} private, {shared:#x} shared)"
                ));
            }

            // (flags, shared) of a rwlock glibc initialises with `kind` and `pshared`.
            let made = |kind, pshared| {
                let mut attr: pthread_rwlockattr_t = core::mem::zeroed();
                let mut rwlock: pthread_rwlock_t = core::mem::zeroed();
                libc::pthread_rwlockattr_init(&mut attr);
                pthread_rwlockattr_setkind_np(&mut attr, kind);
                pthread_rwlockattr_setpshared(&mut attr, pshared);
                (self.rwlock_init)(&mut rwlock, &attr);
                let words = (
                    rwlock_word(&rwlock, RWLOCK_FLAGS_OFFSET).load(Relaxed),
                    rwlock_word(&rwlock, RWLOCK_SHARED_OFFSET).load(Relaxed),
                );
                (self.rwlock_destroy)(&mut rwlock);
                libc::pthread_rwlockattr_destroy(&mut attr);
                words
            };
            let default = made(PTHREAD_RWLOCK_PREFER_READER_NP, PTHREAD_PROCESS_PRIVATE);
            let writer = made(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, PTHREAD_PROCESS_PRIVATE);
            let shared = made(PTHREAD_RWLOCK_PREFER_READER_NP, PTHREAD_PROCESS_SHARED);
            if default != (0, 0) || writer != (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, 0) || shared.1 == 0 {
                return Err(format!(
                    "a pthread_rwlock_t does not keep its kind at byte {RWLOCK_FLAGS_OFFSET} and process-shared at byte {RWLOCK_SHARED_OFFSET} (default {default:?}, writer-preferring {writer:?}, shared {shared:?})"
                ));
            }
        }
        Ok(())
    }
}
