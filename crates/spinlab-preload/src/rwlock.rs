//! The `pthread_rwlock_*` replacements.
//!
//! Each call reads the rwlock's `__shared` and `__flags` (see `glibc`). A private rwlock of
//! glibc's default kinds (`__flags` 0 or 1, which glibc treats alike: readers first, read
//! locks nest) holds the `SPINLAB_RWLOCK` lock (reader-preferring, `rw-reader:…`) in its first
//! 24 bytes, and one of the writer-preferring kind (`__flags` 2, from
//! `pthread_rwlockattr_setkind_np` or `PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP`)
//! holds `rw-writer` over the same policy: each kind keeps the preference glibc gives it. All
//! zero bytes are an unlocked one of either, so the static initialisers need no init call. A
//! process-shared rwlock (`__shared` non-zero; spinlab's futexes are private) and every rwlock
//! with `SPINLAB_RWLOCK=pthread` go to glibc's functions untouched.
//!
//! A writer of a replaced rwlock writes its thread's id into `__cur_writer`, as glibc writes
//! its tid there, so that a thread that asks again for a lock it holds for writing gets
//! `EDEADLK`, as from glibc; that is looked at only when the lock is not free, and by
//! `pthread_rwlock_unlock`, to which it says the side held (it is cleared before a writer's
//! release, and no writer holds while a reader does). Timed
//! acquisitions check their clock and `tv_nsec` first (`EINVAL`), as glibc does, then wait
//! through `spinlab_c_shared::timed::acquire_by`, the loop that timed mutexes use.
//!
//! With `SPINLAB_STATS=1` each rwlock gets a row of kind `rwlock` (replaced) or `glibc-rwlock`,
//! counting read and write acquisitions apart: a first try, then a timed wait if that failed;
//! a writer's hold is sampled and its release's wake-ups counted as a mutex's (both kinds
//! keep the writer in `__cur_writer`, which tells a write release from a read release).

use crate::config::Rwlocks;
use crate::glibc::PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
use crate::glibc::{rwlock_kind_for, rwlock_word, PTHREAD_RWLOCK_PREFER_READER_NP, PTHREAD_RWLOCK_PREFER_WRITER_NP};
use crate::glibc::{RWLOCK_FLAGS_OFFSET, RWLOCK_SHARED_OFFSET, RWLOCK_WRITER_OFFSET};
use crate::stats::{self, Waiting, GLIBC_RWLOCK, RWLOCK};
use crate::{fork, state, State};
use core::cell::Cell;
use core::sync::atomic::{AtomicI32, Ordering::Relaxed};
use libc::{c_int, clockid_t, pthread_rwlock_t, pthread_rwlockattr_t, timespec, EBUSY, EDEADLK, EINVAL, ETIMEDOUT};
use spinlab_c_shared::clock::Abstime;
use spinlab_c_shared::timed::acquire_by;
use spinlab_registry::RawRwLockOps;

/// Which side of the lock an acquisition asks for.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Read,
    Write,
}

/// How long an acquisition may wait.
#[derive(Clone, Copy)]
enum Patience {
    /// `rdlock`, `wrlock`.
    Forever,
    /// `tryrdlock`, `trywrlock`: `EBUSY` at once.
    None,
    /// `timed…` (`clock` `None`: `CLOCK_REALTIME`) and `clock…`.
    Until { clock: Option<clockid_t>, abstime: *const timespec },
}

/// The spinlab rwlock in `rwlock`, if it is one the library replaced, made sound for this
/// process first: in a forked child, its first use forgets the waiters it had in the parent
/// (see `fork`).
///
/// # Safety
/// `rwlock` points to a `pthread_rwlock_t`.
#[inline(always)]
unsafe fn replaced(state: &State, rwlock: *mut pthread_rwlock_t) -> Option<&'static RawRwLockOps> {
    let Rwlocks::Replaced { reader, writer, .. } = state.config.rwlocks else { return None };
    // SAFETY: the caller's contract.
    let (shared, kind) = unsafe {
        (
            rwlock_word(rwlock, RWLOCK_SHARED_OFFSET).load(Relaxed),
            rwlock_word(rwlock, RWLOCK_FLAGS_OFFSET).load(Relaxed),
        )
    };
    let ops = match (shared, kind) {
        (0, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP) => writer,
        (0, PTHREAD_RWLOCK_PREFER_READER_NP | PTHREAD_RWLOCK_PREFER_WRITER_NP) => reader,
        _ => return None,
    };
    // SAFETY: the caller's contract; a replaced rwlock holds `ops`' lock.
    unsafe { fork::make_rwlock_current(ops, rwlock) };
    Some(ops)
}

/// A number for the calling thread, never 0, unique among the process's threads: what a
/// writer leaves in `__cur_writer`. Not the tid (a system call) and not cached across a fork
/// as one would be: a count, so a forked child's thread keeps its number and new threads get
/// new ones.
fn thread_number() -> i32 {
    static NEXT: AtomicI32 = AtomicI32::new(1);
    std::thread_local! {
        static NUMBER: Cell<i32> = const { Cell::new(0) };
    }
    NUMBER.with(|number| {
        if number.get() == 0 {
            // Wraps after 2^32 threads have asked; 0 ("no writer") is skipped.
            let mut next = NEXT.fetch_add(1, Relaxed);
            while next == 0 {
                next = NEXT.fetch_add(1, Relaxed);
            }
            number.set(next);
        }
        number.get()
    })
}

/// A timed acquisition's deadline, checked as glibc checks it, before it looks at the lock:
/// `Err(EINVAL)` for a NULL `abstime`, a clock other than `CLOCK_REALTIME` and
/// `CLOCK_MONOTONIC`, or a `tv_nsec` outside `0..1_000_000_000`; `Ok(None)` when untimed.
///
/// # Safety
/// The `abstime` of `patience`, if any, is NULL or points to a `timespec`.
unsafe fn deadline(patience: Patience) -> Result<Option<Abstime>, c_int> {
    let Patience::Until { clock, abstime } = patience else { return Ok(None) };
    // SAFETY: the caller's contract.
    let at = unsafe { abstime.as_ref() }.ok_or(EINVAL)?;
    Abstime::new(clock.unwrap_or(libc::CLOCK_REALTIME), at).map(Some).ok_or(EINVAL)
}

/// Acquires `rwlock` for `side`, as `patience` allows, counting it with `SPINLAB_STATS`.
///
/// Inlined into each caller: an untimed acquisition of a replaced rwlock that finds it free,
/// uncounted, makes one call into the lock; every other case goes to [`acquire_any`], which
/// tries again (a failed try costs only the contended and the timed).
///
/// # Safety
/// `rwlock` points to a `pthread_rwlock_t` the program may lock; `abstime`, if any, to a
/// `timespec` or NULL.
#[inline(always)]
unsafe fn acquire(state: &State, rwlock: *mut pthread_rwlock_t, side: Side, patience: Patience) -> c_int {
    if state.config.stats_top.is_none() && !matches!(patience, Patience::Until { .. }) {
        // SAFETY: the caller's contract.
        if let Some(ops) = unsafe { replaced(state, rwlock) } {
            let try_now = match side {
                Side::Read => ops.try_lock_shared,
                Side::Write => ops.try_lock_exclusive,
            };
            // SAFETY: a replaced rwlock holds its lock at its start, initialised or all zero,
            // which the configuration checked the lock accepts.
            if unsafe { try_now(rwlock.cast()) } {
                // SAFETY: the caller's contract; this thread has just acquired it.
                unsafe { acquired(rwlock, side) };
                return 0;
            }
        }
    }
    // SAFETY: the caller's contract.
    unsafe { acquire_any(state, rwlock, side, patience) }
}

/// Records an acquisition of replaced `rwlock` for `side`: a writer leaves its thread's
/// number in `__cur_writer` (see the module docs).
///
/// # Safety
/// `rwlock` points to a replaced `pthread_rwlock_t` the calling thread has just acquired.
#[inline(always)]
unsafe fn acquired(rwlock: *mut pthread_rwlock_t, side: Side) {
    if side == Side::Write {
        // SAFETY: `__cur_writer` is an int inside the rwlock, written only by its writer.
        unsafe { rwlock_word(rwlock, RWLOCK_WRITER_OFFSET) }.store(thread_number(), Relaxed);
    }
}

/// [`acquire`] for every case: a try, then a wait as `patience` allows, counted with
/// `SPINLAB_STATS`.
///
/// # Safety
/// As [`acquire`].
#[inline(never)]
unsafe fn acquire_any(state: &State, rwlock: *mut pthread_rwlock_t, side: Side, patience: Patience) -> c_int {
    let counting = state.config.stats_top.is_some();
    // SAFETY: the caller's contract.
    let Some(ops) = (unsafe { replaced(state, rwlock) }) else {
        // SAFETY: the caller's contract.
        return unsafe { glibc(state, rwlock, side, patience) };
    };
    // SAFETY: the caller's contract.
    let deadline = match unsafe { deadline(patience) } {
        Ok(deadline) => deadline,
        Err(invalid) => return invalid,
    };
    let at = rwlock.cast::<u8>();
    let (try_now, wait, try_until) = match side {
        Side::Read => (ops.try_lock_shared, ops.lock_shared, ops.try_lock_shared_until),
        Side::Write => (ops.try_lock_exclusive, ops.lock_exclusive, ops.try_lock_exclusive_until),
    };
    // A replaced rwlock holds its lock at its start, initialised or all zero, which the
    // configuration checked the lock accepts: what each call of `ops` below needs.
    // SAFETY: as just said.
    let waited = if unsafe { try_now(at) } {
        None
    } else {
        // SAFETY: `__cur_writer` is an int inside the rwlock.
        let writer = unsafe { rwlock_word(rwlock, RWLOCK_WRITER_OFFSET) }.load(Relaxed);
        match (patience, &deadline) {
            (Patience::None, _) => return EBUSY,
            _ if writer == thread_number() => return EDEADLK,
            (_, None) => {
                let waiting = counting.then(|| Waiting::start(rwlock as usize));
                // SAFETY: as above.
                unsafe { wait(at) };
                waiting
            }
            (_, Some(deadline)) => {
                let waiting = counting.then(|| Waiting::start(rwlock as usize));
                // SAFETY: as above.
                let acquired = acquire_by(deadline, |by| unsafe { try_until(at, by) }, || unsafe { wait(at) });
                if !acquired {
                    return ETIMEDOUT;
                }
                waiting
            }
        }
    };
    // SAFETY: the caller's contract; this thread has just acquired it.
    unsafe { acquired(rwlock, side) };
    if counting {
        stats::rw_acquired(rwlock as usize, RWLOCK, side == Side::Write, waited);
    }
    0
}

/// [`acquire`] for a rwlock glibc keeps: glibc's function, and with `SPINLAB_STATS` a try
/// first, so that only waits are timed.
///
/// # Safety
/// As [`acquire`].
unsafe fn glibc(state: &State, rwlock: *mut pthread_rwlock_t, side: Side, patience: Patience) -> c_int {
    let real = &state.real;
    let (try_now, wait) = match side {
        Side::Read => (real.rwlock_tryrdlock, real.rwlock_rdlock),
        Side::Write => (real.rwlock_trywrlock, real.rwlock_wrlock),
    };
    // SAFETY: the caller's contract, passed on to glibc.
    let call = || unsafe {
        match (side, patience) {
            (_, Patience::Forever) => wait(rwlock),
            (_, Patience::None) => try_now(rwlock),
            (Side::Read, Patience::Until { clock: None, abstime }) => (real.rwlock_timedrdlock)(rwlock, abstime),
            (Side::Read, Patience::Until { clock: Some(clock), abstime }) => {
                (real.rwlock_clockrdlock)(rwlock, clock, abstime)
            }
            (Side::Write, Patience::Until { clock: None, abstime }) => (real.rwlock_timedwrlock)(rwlock, abstime),
            (Side::Write, Patience::Until { clock: Some(clock), abstime }) => {
                (real.rwlock_clockwrlock)(rwlock, clock, abstime)
            }
        }
    };
    // glibc checks a timed call's clock and deadline before the lock: so must the counting
    // try, or it would take a free lock where glibc returns EINVAL.
    // SAFETY: the caller's contract.
    let valid = unsafe { deadline(patience) }.is_ok();
    if state.config.stats_top.is_none() || !valid {
        return call();
    }
    // SAFETY: as above.
    if unsafe { try_now(rwlock) } == 0 {
        stats::rw_acquired(rwlock as usize, GLIBC_RWLOCK, side == Side::Write, None);
        return 0;
    }
    if let Patience::None = patience {
        return EBUSY;
    }
    let waiting = Waiting::start(rwlock as usize);
    let status = call();
    if status == 0 {
        stats::rw_acquired(rwlock as usize, GLIBC_RWLOCK, side == Side::Write, Some(waiting));
    }
    status
}

/// Replaces glibc's: a private rwlock of any kind gets a spinlab lock (reader- or
/// writer-preferring as the kind says); a process-shared one goes to glibc.
///
/// # Safety
/// As `pthread_rwlock_init`.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_init(
    rwlock: *mut pthread_rwlock_t,
    attr: *const pthread_rwlockattr_t,
) -> c_int {
    let state = state();
    if state.config.stats_top.is_some() {
        stats::initialised(rwlock as usize);
    }
    // SAFETY: the caller's contract: `rwlock` is writable, `attr` NULL or an attribute.
    unsafe {
        if let Rwlocks::Replaced { reader, writer, .. } = state.config.rwlocks {
            if let Some(kind) = rwlock_kind_for(attr) {
                rwlock.write_bytes(0, 1);
                let ops = if kind == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP { writer } else { reader };
                (ops.init)(rwlock.cast());
                rwlock_word(rwlock, RWLOCK_FLAGS_OFFSET).store(kind, Relaxed);
                fork::stamp_rwlock(rwlock);
                return 0;
            }
        }
        (state.real.rwlock_init)(rwlock, attr)
    }
}

/// Replaces glibc's: `EBUSY` for a held replaced rwlock (glibc's own does not check).
///
/// # Safety
/// As `pthread_rwlock_destroy`.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_destroy(rwlock: *mut pthread_rwlock_t) -> c_int {
    let state = state();
    // SAFETY: the caller's contract; once we hold the lock it is ours to release and drop.
    unsafe {
        let Some(ops) = replaced(state, rwlock) else {
            return (state.real.rwlock_destroy)(rwlock);
        };
        if !(ops.try_lock_exclusive)(rwlock.cast()) {
            return EBUSY;
        }
        (ops.unlock_exclusive)(rwlock.cast());
        (ops.drop)(rwlock.cast());
    }
    0
}

/// Replaces glibc's: `EDEADLK` if the calling thread holds the write lock.
///
/// # Safety
/// As `pthread_rwlock_rdlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_rdlock(rwlock: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { acquire(state(), rwlock, Side::Read, Patience::Forever) }
}

/// Replaces glibc's: `EBUSY` while a writer holds the lock.
///
/// # Safety
/// As `pthread_rwlock_tryrdlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_tryrdlock(rwlock: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { acquire(state(), rwlock, Side::Read, Patience::None) }
}

/// Replaces glibc's (`CLOCK_REALTIME`).
///
/// # Safety
/// As `pthread_rwlock_timedrdlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_timedrdlock(rwlock: *mut pthread_rwlock_t, abstime: *const timespec) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { acquire(state(), rwlock, Side::Read, Patience::Until { clock: None, abstime }) }
}

/// Replaces glibc's: `EINVAL` for a clock other than `CLOCK_REALTIME` and `CLOCK_MONOTONIC`.
///
/// # Safety
/// As `pthread_rwlock_clockrdlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_clockrdlock(
    rwlock: *mut pthread_rwlock_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { acquire(state(), rwlock, Side::Read, Patience::Until { clock: Some(clock), abstime }) }
}

/// Replaces glibc's: `EDEADLK` if the calling thread holds the write lock.
///
/// # Safety
/// As `pthread_rwlock_wrlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_wrlock(rwlock: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { acquire(state(), rwlock, Side::Write, Patience::Forever) }
}

/// Replaces glibc's: `EBUSY` while anyone holds the lock.
///
/// # Safety
/// As `pthread_rwlock_trywrlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_trywrlock(rwlock: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { acquire(state(), rwlock, Side::Write, Patience::None) }
}

/// Replaces glibc's (`CLOCK_REALTIME`).
///
/// # Safety
/// As `pthread_rwlock_timedwrlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_timedwrlock(rwlock: *mut pthread_rwlock_t, abstime: *const timespec) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { acquire(state(), rwlock, Side::Write, Patience::Until { clock: None, abstime }) }
}

/// Replaces glibc's: `EINVAL` for a clock other than `CLOCK_REALTIME` and `CLOCK_MONOTONIC`.
///
/// # Safety
/// As `pthread_rwlock_clockwrlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_clockwrlock(
    rwlock: *mut pthread_rwlock_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { acquire(state(), rwlock, Side::Write, Patience::Until { clock: Some(clock), abstime }) }
}

/// Replaces glibc's: releases the write lock if a writer holds it (which can only be the
/// caller), else one read lock of the caller's.
///
/// # Safety
/// As `pthread_rwlock_unlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_unlock(rwlock: *mut pthread_rwlock_t) -> c_int {
    let state = state();
    let releasing = match state.config.stats_top {
        Some(_) => {
            // SAFETY: `__cur_writer` is an int inside the rwlock; the caller holds the lock,
            // so it is set only if the caller writes (glibc writes its tid there too).
            let writing = unsafe { rwlock_word(rwlock, RWLOCK_WRITER_OFFSET) }.load(Relaxed) != 0;
            writing.then(|| stats::releasing(rwlock as usize)).flatten()
        }
        None => None,
    };
    // SAFETY: the caller's contract: it holds the lock, for reading or writing.
    let status = unsafe { release(state, rwlock) };
    stats::released(releasing);
    status
}

/// [`pthread_rwlock_unlock`], uncounted.
///
/// # Safety
/// As `pthread_rwlock_unlock`.
unsafe fn release(state: &State, rwlock: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's contract: it holds the lock, for reading or writing.
    unsafe {
        let Some(ops) = replaced(state, rwlock) else {
            return (state.real.rwlock_unlock)(rwlock);
        };
        let at = rwlock.cast::<u8>();
        // Only a writer's acquisition writes `__cur_writer`, and it clears it before it
        // releases: so the caller, who holds the lock, holds it for writing exactly when it
        // is set (a look at the lock itself would cost one more call).
        let writer = rwlock_word(rwlock, RWLOCK_WRITER_OFFSET);
        if writer.load(Relaxed) != 0 {
            writer.store(0, Relaxed);
            (ops.unlock_exclusive)(at);
        } else {
            (ops.unlock_shared)(at);
        }
    }
    0
}
