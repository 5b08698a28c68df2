//! The C11 `<threads.h>` mutexes and condition variables: `mtx_*` and `cnd_*`.
//!
//! glibc (2.34 and later) exports them from libc.so, and each is a thin wrapper that calls
//! glibc's internal pthread function directly, not through the PLT, so replacing
//! `pthread_mutex_lock` alone never sees a program's `mtx_lock`. So each is replaced here, and
//! each is the `pthread_*` replacement it wraps, with glibc's mapping of the result:
//!
//! - An `mtx_t` is laid out as a `pthread_mutex_t` (glibc's `<threads.h>` gives it the same
//!   size and alignment, and `mtx_init` initialises it as one). `mtx_plain` and `mtx_timed`
//!   make a normal mutex, which holds a spinlab lock in place (see `mutex`); with
//!   `mtx_recursive` it is a recursive pthread mutex, which glibc keeps, as it keeps every
//!   recursive `pthread_mutex_t`. Any other type makes a normal mutex too, as in glibc.
//! - A `cnd_t` is laid out as a `pthread_cond_t`, initialised as one without attributes (so
//!   its timed waits are on `CLOCK_REALTIME`, C11's `TIME_UTC`).
//! - Results: `0` is `thrd_success`, `EBUSY` `thrd_busy`, `ETIMEDOUT` `thrd_timedout`,
//!   `ENOMEM` `thrd_nomem`, any other error `thrd_error` (glibc's `thrd_err_map`).
//!
//! Statistics (`SPINLAB_STATS=1`) count an `mtx_t` in the same table as a pthread mutex, as
//! the mutex it is (`spinlab`, or `recursive`), since every acquisition goes through the same
//! function.

use crate::cond::{
    pthread_cond_broadcast, pthread_cond_destroy, pthread_cond_init, pthread_cond_signal, pthread_cond_timedwait,
    pthread_cond_wait,
};
use crate::glibc::PTHREAD_MUTEX_RECURSIVE;
use crate::mutex::{
    pthread_mutex_destroy, pthread_mutex_init, pthread_mutex_lock, pthread_mutex_timedlock, pthread_mutex_trylock,
    pthread_mutex_unlock,
};
use libc::{c_int, pthread_cond_t, pthread_mutex_t, pthread_mutexattr_t, timespec, EBUSY, ENOMEM, ETIMEDOUT};

/// glibc's `mtx_t`: a `pthread_mutex_t` by another name (same size, same alignment).
type Mtx = pthread_mutex_t;
/// glibc's `cnd_t`: a `pthread_cond_t` by another name.
type Cnd = pthread_cond_t;

// <threads.h>'s values.
const THRD_SUCCESS: c_int = 0;
const THRD_BUSY: c_int = 1;
const THRD_ERROR: c_int = 2;
const THRD_NOMEM: c_int = 3;
const THRD_TIMEDOUT: c_int = 4;
const MTX_PLAIN: c_int = 0;
const MTX_RECURSIVE: c_int = 1;
const MTX_TIMED: c_int = 2;

/// A pthread function's result as a C11 one.
fn thrd(status: c_int) -> c_int {
    match status {
        0 => THRD_SUCCESS,
        EBUSY => THRD_BUSY,
        ETIMEDOUT => THRD_TIMEDOUT,
        ENOMEM => THRD_NOMEM,
        _ => THRD_ERROR,
    }
}

/// Replaces glibc's: a recursive type (`mtx_plain | mtx_recursive`, `mtx_timed |
/// mtx_recursive`) makes glibc's recursive pthread mutex, and any other type a normal one (a
/// spinlab lock in place): glibc reads no other bit of the type, and refuses none.
///
/// # Safety
/// As `mtx_init`.
#[no_mangle]
pub unsafe extern "C" fn mtx_init(mutex: *mut Mtx, kind: c_int) -> c_int {
    if kind != MTX_PLAIN | MTX_RECURSIVE && kind != MTX_TIMED | MTX_RECURSIVE {
        // SAFETY: the caller's contract: `mutex` is writable.
        let status = unsafe { pthread_mutex_init(mutex, core::ptr::null()) };
        if status == 0 && crate::state().config.stats_top.is_some() {
            crate::stats::mark_c11(mutex as usize);
        }
        return thrd(status);
    }
    // SAFETY: the attribute lives on this stack, initialised by glibc before use and
    // destroyed after; `mutex` is writable (the caller's contract).
    unsafe {
        let mut attr: pthread_mutexattr_t = core::mem::zeroed();
        libc::pthread_mutexattr_init(&mut attr);
        libc::pthread_mutexattr_settype(&mut attr, PTHREAD_MUTEX_RECURSIVE);
        let status = pthread_mutex_init(mutex, &attr);
        libc::pthread_mutexattr_destroy(&mut attr);
        thrd(status)
    }
}

/// Replaces glibc's.
///
/// # Safety
/// As `mtx_destroy`.
#[no_mangle]
pub unsafe extern "C" fn mtx_destroy(mutex: *mut Mtx) {
    // SAFETY: the caller's contract. C11 gives destroy no result: a held mutex is the
    // program's error, which the pthread function reports and glibc's mtx_destroy drops.
    unsafe { pthread_mutex_destroy(mutex) };
}

/// Replaces glibc's.
///
/// # Safety
/// As `mtx_lock`.
#[no_mangle]
pub unsafe extern "C" fn mtx_lock(mutex: *mut Mtx) -> c_int {
    // SAFETY: the caller's contract.
    thrd(unsafe { pthread_mutex_lock(mutex) })
}

/// Replaces glibc's: `thrd_busy` when the mutex is held.
///
/// # Safety
/// As `mtx_trylock`.
#[no_mangle]
pub unsafe extern "C" fn mtx_trylock(mutex: *mut Mtx) -> c_int {
    // SAFETY: the caller's contract.
    thrd(unsafe { pthread_mutex_trylock(mutex) })
}

/// Replaces glibc's: `abstime` is on `TIME_UTC` (`CLOCK_REALTIME`); `thrd_timedout` once it
/// has passed, never before.
///
/// # Safety
/// As `mtx_timedlock`.
#[no_mangle]
pub unsafe extern "C" fn mtx_timedlock(mutex: *mut Mtx, abstime: *const timespec) -> c_int {
    // SAFETY: the caller's contract.
    thrd(unsafe { pthread_mutex_timedlock(mutex, abstime) })
}

/// Replaces glibc's.
///
/// # Safety
/// As `mtx_unlock`.
#[no_mangle]
pub unsafe extern "C" fn mtx_unlock(mutex: *mut Mtx) -> c_int {
    // SAFETY: the caller's contract.
    thrd(unsafe { pthread_mutex_unlock(mutex) })
}

/// Replaces glibc's.
///
/// # Safety
/// As `cnd_init`.
#[no_mangle]
pub unsafe extern "C" fn cnd_init(cond: *mut Cnd) -> c_int {
    // SAFETY: the caller's contract: `cond` is writable.
    thrd(unsafe { pthread_cond_init(cond, core::ptr::null()) })
}

/// Replaces glibc's.
///
/// # Safety
/// As `cnd_destroy`.
#[no_mangle]
pub unsafe extern "C" fn cnd_destroy(cond: *mut Cnd) {
    // SAFETY: the caller's contract.
    unsafe { pthread_cond_destroy(cond) };
}

/// Replaces glibc's.
///
/// # Safety
/// As `cnd_signal`.
#[no_mangle]
pub unsafe extern "C" fn cnd_signal(cond: *mut Cnd) -> c_int {
    // SAFETY: the caller's contract.
    thrd(unsafe { pthread_cond_signal(cond) })
}

/// Replaces glibc's.
///
/// # Safety
/// As `cnd_broadcast`.
#[no_mangle]
pub unsafe extern "C" fn cnd_broadcast(cond: *mut Cnd) -> c_int {
    // SAFETY: the caller's contract.
    thrd(unsafe { pthread_cond_broadcast(cond) })
}

/// Replaces glibc's. A cancellation point, as glibc's is ("C-unwind": see `cond`).
///
/// # Safety
/// As `cnd_wait`.
#[no_mangle]
pub unsafe extern "C-unwind" fn cnd_wait(cond: *mut Cnd, mutex: *mut Mtx) -> c_int {
    // SAFETY: the caller's contract.
    thrd(unsafe { pthread_cond_wait(cond, mutex) })
}

/// Replaces glibc's: `abstime` is on `TIME_UTC` (`CLOCK_REALTIME`, the clock of a condition
/// variable `cnd_init` made); `thrd_timedout` once it has passed.
///
/// # Safety
/// As `cnd_timedwait`.
#[no_mangle]
pub unsafe extern "C-unwind" fn cnd_timedwait(cond: *mut Cnd, mutex: *mut Mtx, abstime: *const timespec) -> c_int {
    // SAFETY: the caller's contract.
    thrd(unsafe { pthread_cond_timedwait(cond, mutex, abstime) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_as_glibc_maps_them() {
        assert_eq!(thrd(0), THRD_SUCCESS);
        assert_eq!(thrd(EBUSY), THRD_BUSY);
        assert_eq!(thrd(ETIMEDOUT), THRD_TIMEDOUT);
        assert_eq!(thrd(ENOMEM), THRD_NOMEM);
        for error in [libc::EINVAL, libc::EPERM, libc::EDEADLK, libc::EAGAIN, libc::EOWNERDEAD] {
            assert_eq!(thrd(error), THRD_ERROR, "{error}");
        }
    }
}
