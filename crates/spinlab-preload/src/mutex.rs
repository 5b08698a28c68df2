//! The `pthread_mutex_*` replacements.
//!
//! Each call reads the mutex's `__kind`. A normal or adaptive mutex (`__kind` 0 or 3, which is
//! also every statically initialised `PTHREAD_MUTEX_INITIALIZER`) holds a spinlab lock in its
//! first 16 bytes, which all-zero bytes already make an unlocked one; any other kind
//! (recursive, error-checking, robust, priority-protocol, process-shared, or destroyed) goes
//! to glibc's own function untouched. With `SPINLAB_LOCK=pthread` every mutex goes to glibc.
//!
//! With `SPINLAB_STATS=1` an acquisition first tries the lock: if that fails, the wait is
//! timed (see `stats`), and an init call records where the mutex was made. A replaced
//! mutex's free acquisition is counted inline through its memo (`stats::memo`), and its
//! release goes out of line only when the memo says that it counts something; a glibc mutex
//! is counted out of line both ways. A lock taken by the unwinder while it captures a stack
//! for the statistics is not counted.

use crate::config::Mutexes;
use crate::fork;
use crate::glibc::{mutex_holder, mutex_kind, mutex_memo, replaced_kind, replaced_kind_for};
use crate::stats::{self, Waiting};
use crate::{state, State};
use core::sync::atomic::Ordering::Relaxed;
use libc::{c_int, clockid_t, pthread_mutex_t, pthread_mutexattr_t, timespec, EBUSY, EINVAL, EOWNERDEAD, ETIMEDOUT};
use spinlab_c_shared::clock::Abstime;
use spinlab_c_shared::timed::lock_by;
use spinlab_registry::RawLockOps;

/// The spinlab lock in `mutex`, if the mutex is one the library replaced.
///
/// # Safety
/// `mutex` points to a `pthread_mutex_t`.
#[inline(always)]
unsafe fn replaced(state: &State, mutex: *mut pthread_mutex_t) -> Option<&'static RawLockOps> {
    match state.config.mutexes {
        // SAFETY: the caller's contract.
        Mutexes::Replaced { ops, .. } if replaced_kind(unsafe { mutex_kind(mutex) }.load(Relaxed)) => {
            // SAFETY: a replaced mutex, whose lock is `ops`.
            unsafe { fork::make_current(ops, mutex) };
            Some(ops)
        }
        _ => None,
    }
}

/// Records that the calling thread now holds replaced `mutex` (see `fork`); returns the
/// thread (`fork::me`).
///
/// # Safety
/// `mutex` points to a replaced `pthread_mutex_t` the calling thread has just acquired.
#[inline(always)]
unsafe fn now_held(mutex: *mut pthread_mutex_t) -> usize {
    let me = fork::me();
    // SAFETY: the caller's contract.
    unsafe { mutex_holder(mutex) }.store(me, Relaxed);
    me
}

/// Whether a glibc call's result means the caller now holds the mutex (`EOWNERDEAD`: a robust
/// mutex whose last owner died, acquired all the same).
fn holds(status: c_int) -> bool {
    status == 0 || status == EOWNERDEAD
}

/// Acquires `mutex`, counting it with `SPINLAB_STATS`; also the relock of a condition wait.
///
/// Inlined into each caller, with a replaced mutex's free acquisition counted here and the
/// rest out of line: an uncontended pair then makes one call into the lock each way.
///
/// # Safety
/// `mutex` points to a `pthread_mutex_t` the program may lock.
#[inline(always)]
pub(crate) unsafe fn lock(state: &State, mutex: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's contract; a replaced mutex holds its lock at its start,
    // initialised (or all zero, which the lock accepts).
    unsafe {
        match replaced(state, mutex) {
            Some(ops) if state.config.stats_top.is_some() => {
                if !stats::capturing_here() && (ops.try_lock)(mutex.cast()) {
                    let me = now_held(mutex);
                    stats::acquired_free(mutex as usize, mutex_memo(mutex), me);
                    return 0;
                }
                lock_counted(ops, mutex)
            }
            Some(ops) => {
                (ops.lock)(mutex.cast());
                now_held(mutex);
                0
            }
            None if state.config.stats_top.is_some() => lock_glibc_counted(state, mutex),
            None => (state.real.mutex_lock)(mutex),
        }
    }
}

/// [`lock`] of a replaced mutex, whose lock is `ops`, with `SPINLAB_STATS`, when its
/// `try_lock` failed (the wait is timed) or the thread is capturing a stack (not counted).
///
/// # Safety
/// As [`lock`], for a replaced mutex.
#[cold]
#[inline(never)]
unsafe fn lock_counted(ops: &RawLockOps, mutex: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's contract, as in `lock`.
    unsafe {
        if stats::capturing_here() {
            (ops.lock)(mutex.cast());
        } else {
            let memo = mutex_memo(mutex);
            let waiting = Waiting::start_remembered(mutex as usize, memo);
            (ops.lock)(mutex.cast());
            stats::acquired_remembering(mutex as usize, memo, Some(waiting));
        }
        now_held(mutex);
    }
    0
}

/// [`lock`] of a mutex glibc keeps, with `SPINLAB_STATS`.
///
/// # Safety
/// As [`lock`].
#[inline(never)]
unsafe fn lock_glibc_counted(state: &State, mutex: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        if stats::capturing_here() {
            return (state.real.mutex_lock)(mutex);
        }
        let kind = mutex_kind(mutex).load(Relaxed);
        match (state.real.mutex_trylock)(mutex) {
            status if holds(status) => {
                stats::acquired(mutex as usize, kind, None);
                status
            }
            _ => {
                let waiting = Waiting::start(mutex as usize);
                let status = (state.real.mutex_lock)(mutex);
                if holds(status) {
                    stats::acquired(mutex as usize, kind, Some(waiting));
                }
                status
            }
        }
    }
}

/// Releases `mutex`; also the release of a condition wait.
///
/// # Safety
/// `mutex` points to a `pthread_mutex_t`.
#[inline(always)]
pub(crate) unsafe fn unlock(state: &State, mutex: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's contract; releasing a replaced mutex the caller does not hold is
    // undefined, as it is for a normal pthread mutex.
    unsafe {
        match replaced(state, mutex) {
            Some(ops) => {
                if state.config.stats_top.is_some() && mutex_memo(mutex).release_counts() {
                    return unlock_counted(ops, mutex);
                }
                mutex_holder(mutex).store(0, Relaxed);
                (ops.unlock)(mutex.cast());
                0
            }
            None if state.config.stats_top.is_some() => unlock_glibc_counted(state, mutex),
            None => (state.real.mutex_unlock)(mutex),
        }
    }
}

/// [`unlock`] of a replaced mutex, whose lock is `ops`, with `SPINLAB_STATS`, whose memo
/// says that the release counts something.
///
/// # Safety
/// As [`unlock`], for a replaced mutex.
#[inline(never)]
unsafe fn unlock_counted(ops: &RawLockOps, mutex: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        let releasing =
            if stats::capturing_here() { None } else { stats::releasing_remembered(mutex as usize, mutex_memo(mutex)) };
        mutex_holder(mutex).store(0, Relaxed);
        (ops.unlock)(mutex.cast());
        stats::released(releasing);
    }
    0
}

/// [`unlock`] of a mutex glibc keeps, with `SPINLAB_STATS`.
///
/// # Safety
/// As [`unlock`].
#[inline(never)]
unsafe fn unlock_glibc_counted(state: &State, mutex: *mut pthread_mutex_t) -> c_int {
    let releasing = if stats::capturing_here() { None } else { stats::releasing(mutex as usize) };
    // SAFETY: the caller's contract.
    let status = unsafe { (state.real.mutex_unlock)(mutex) };
    stats::released(releasing);
    status
}

/// Replaces glibc's: a normal or adaptive, private, non-robust mutex without a priority
/// protocol gets a spinlab lock; any other goes to glibc.
///
/// # Safety
/// As `pthread_mutex_init`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_init(mutex: *mut pthread_mutex_t, attr: *const pthread_mutexattr_t) -> c_int {
    let state = state();
    // SAFETY: the caller's contract: `mutex` is writable, `attr` NULL or an attribute.
    unsafe {
        if let Mutexes::Replaced { ops, .. } = state.config.mutexes {
            if let Some(kind) = replaced_kind_for(attr) {
                mutex.write_bytes(0, 1);
                (ops.init)(mutex.cast());
                fork::stamp(mutex);
                mutex_kind(mutex).store(kind, Relaxed);
                if state.config.stats_top.is_some() {
                    stats::initialised(mutex as usize);
                }
                return 0;
            }
        }
        let status = (state.real.mutex_init)(mutex, attr);
        if status == 0 && state.config.stats_top.is_some() {
            stats::initialised(mutex as usize);
        }
        status
    }
}

/// Replaces glibc's: `EBUSY` for a held replaced mutex, which otherwise is marked destroyed
/// (`__kind` -1, as glibc marks it, so that later use reaches glibc's `EINVAL`).
///
/// # Safety
/// As `pthread_mutex_destroy`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_destroy(mutex: *mut pthread_mutex_t) -> c_int {
    let state = state();
    // SAFETY: the caller's contract; once we hold the lock it is ours to release and drop.
    unsafe {
        let Some(ops) = replaced(state, mutex) else {
            return (state.real.mutex_destroy)(mutex);
        };
        if !(ops.try_lock)(mutex.cast()) {
            return EBUSY;
        }
        (ops.unlock)(mutex.cast());
        (ops.drop)(mutex.cast());
        mutex_kind(mutex).store(-1, Relaxed);
    }
    0
}

/// Replaces glibc's.
///
/// # Safety
/// As `pthread_mutex_lock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_lock(mutex: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { lock(state(), mutex) }
}

/// Replaces glibc's.
///
/// # Safety
/// As `pthread_mutex_trylock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_trylock(mutex: *mut pthread_mutex_t) -> c_int {
    let state = state();
    let counting = state.config.stats_top.is_some();
    // SAFETY: the caller's contract.
    unsafe {
        match replaced(state, mutex) {
            Some(ops) => {
                if !(ops.try_lock)(mutex.cast()) {
                    return EBUSY;
                }
                let me = now_held(mutex);
                if counting {
                    stats::acquired_free(mutex as usize, mutex_memo(mutex), me);
                }
                0
            }
            None => {
                let status = (state.real.mutex_trylock)(mutex);
                if counting && holds(status) {
                    stats::acquired(mutex as usize, mutex_kind(mutex).load(Relaxed), None);
                }
                status
            }
        }
    }
}

/// Replaces glibc's.
///
/// # Safety
/// As `pthread_mutex_unlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_unlock(mutex: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { unlock(state(), mutex) }
}

/// Replaces glibc's (`CLOCK_REALTIME`).
///
/// # Safety
/// As `pthread_mutex_timedlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_timedlock(mutex: *mut pthread_mutex_t, abstime: *const timespec) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { timed(state(), mutex, None, abstime) }
}

/// Replaces glibc's: `EINVAL` for a clock other than `CLOCK_REALTIME` and `CLOCK_MONOTONIC`,
/// checked first, as glibc does.
///
/// # Safety
/// As `pthread_mutex_clocklock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_clocklock(
    mutex: *mut pthread_mutex_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { timed(state(), mutex, Some(clock), abstime) }
}

/// A timed acquisition on `clock` (`None`: `pthread_mutex_timedlock`, `CLOCK_REALTIME`).
///
/// # Safety
/// As `pthread_mutex_clocklock`.
unsafe fn timed(
    state: &State,
    mutex: *mut pthread_mutex_t,
    clock: Option<clockid_t>,
    abstime: *const timespec,
) -> c_int {
    let counting = state.config.stats_top.is_some();
    let known_clock = clock.map_or(true, |clock| clock == libc::CLOCK_REALTIME || clock == libc::CLOCK_MONOTONIC);
    // SAFETY: the caller's contract.
    unsafe {
        let Some(ops) = replaced(state, mutex) else {
            let real = || match clock {
                None => (state.real.mutex_timedlock)(mutex, abstime),
                Some(clock) => (state.real.mutex_clocklock)(mutex, clock, abstime),
            };
            if !counting || !known_clock {
                return real();
            }
            let kind = mutex_kind(mutex).load(Relaxed);
            let status = (state.real.mutex_trylock)(mutex);
            if holds(status) {
                stats::acquired(mutex as usize, kind, None);
                return status;
            }
            let waiting = Waiting::start(mutex as usize);
            let status = real();
            if holds(status) {
                stats::acquired(mutex as usize, kind, Some(waiting));
            }
            return status;
        };
        if !known_clock {
            return EINVAL;
        }
        let at = mutex.cast::<u8>();
        // As glibc: a free mutex is taken whatever the deadline says.
        if (ops.try_lock)(at) {
            let me = now_held(mutex);
            if counting {
                stats::acquired_free(mutex as usize, mutex_memo(mutex), me);
            }
            return 0;
        }
        let clock = clock.unwrap_or(libc::CLOCK_REALTIME);
        let Some(deadline) = abstime.as_ref().and_then(|at| Abstime::new(clock, at)) else {
            return EINVAL;
        };
        let memo = mutex_memo(mutex);
        let waiting = counting.then(|| Waiting::start_remembered(mutex as usize, memo));
        if !lock_by(ops, at, &deadline) {
            // `waiting` leaves the waiters as it is dropped.
            return ETIMEDOUT;
        }
        now_held(mutex);
        if let Some(waiting) = waiting {
            stats::acquired_remembering(mutex as usize, memo, Some(waiting));
        }
        0
    }
}
