//! The `pthread_cond_*` replacements.
//!
//! A replaced condition variable is a `CondCore` (spinlab's `Condvar` plus a count of the
//! threads inside a wait) in the first 16 bytes of the `pthread_cond_t`, and a flags word at
//! bytes 36..40 whose `COND_MONOTONIC` bit records the attribute's clock. All-zero bytes are
//! a new one on `CLOCK_REALTIME`, which is what `PTHREAD_COND_INITIALIZER` writes. A
//! process-shared condition variable is glibc's (its futexes must be shared; spinlab's are
//! private): glibc marks it in bit 0 of that same word, and those go to glibc throughout.
//!
//! A wait releases and retakes the mutex through the mutex replacement, so it works with any
//! mutex: a replaced one, or one glibc keeps (recursive, error-checking, robust …), whose
//! errors (`EPERM` from an unlock, `EOWNERDEAD` from the relock) it returns as glibc would.
//!
//! The waits are cancellation points, as glibc's are: a request pending at the start or the
//! end is acted on with the mutex held, and one that arrives while the thread waits ends the
//! wait at once (`spinlab_c_shared::cancel`: asynchronous cancellation around the sleep, and a
//! check every few spin iterations). The thread then takes the mutex again, in a cleanup
//! handler registered around the wait, before the program's own cleanup handlers run; a
//! notification it may have taken is passed on to another waiter.

use crate::config::Mutexes;
use crate::glibc::{cond_flags, cond_flags_for, COND_GLIBC_SHARED, COND_MONOTONIC};
use crate::mutex::{lock, unlock};
use crate::stats::{self, CondWait, Waiting, COND, GLIBC_COND};
use crate::{state, State};
use core::mem::ManuallyDrop;
use core::sync::atomic::Ordering::Relaxed;
use libc::{
    c_int, c_void, clockid_t, pthread_cond_t, pthread_condattr_t, pthread_mutex_t, timespec, EINVAL, ETIMEDOUT,
};
use spinlab_c_shared::cancel::Cleanup;
use spinlab_c_shared::clock::Abstime;
use spinlab_c_shared::condvar::CondCore;

extern "C-unwind" {
    /// Acts on a pending cancellation request: unwinds the thread, running its cleanup
    /// handlers. "C-unwind", because that unwinding passes through the Rust frame that
    /// calls it (which has nothing to drop at that point).
    fn pthread_testcancel();
}

const _: () = assert!(size_of::<CondCore>() <= crate::glibc::COND_FLAGS_OFFSET);

/// Whether `cond` is a replaced condition variable (and not glibc's).
///
/// # Safety
/// `cond` points to a `pthread_cond_t`.
#[inline(always)]
unsafe fn replaced(state: &State, cond: *mut pthread_cond_t) -> bool {
    // SAFETY: the caller's contract.
    matches!(state.config.mutexes, Mutexes::Replaced { .. })
        && unsafe { cond_flags(cond) }.load(Relaxed) & COND_GLIBC_SHARED == 0
}

/// Replaces glibc's: a process-shared condition variable is glibc's, any other is replaced.
///
/// # Safety
/// As `pthread_cond_init`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_init(cond: *mut pthread_cond_t, attr: *const pthread_condattr_t) -> c_int {
    let state = state();
    // SAFETY: the caller's contract: `cond` is writable, `attr` NULL or an attribute.
    let status = unsafe {
        match state.config.mutexes {
            Mutexes::Replaced { .. } if cond_flags_for(attr).is_ok() => {
                cond.write_bytes(0, 1);
                cond_flags(cond).store(cond_flags_for(attr).unwrap_or(0), Relaxed);
                0
            }
            _ => (state.real.cond_init)(cond, attr),
        }
    };
    if status == 0 && state.config.stats_top.is_some() {
        stats::initialised(cond as usize);
    }
    status
}

/// Replaces glibc's: returns once every woken waiter has left (the memory may be freed then).
///
/// # Safety
/// As `pthread_cond_destroy`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_destroy(cond: *mut pthread_cond_t) -> c_int {
    let state = state();
    // SAFETY: the caller's contract; no thread starts a wait on a condition variable being
    // destroyed.
    unsafe {
        if !replaced(state, cond) {
            return (state.real.cond_destroy)(cond);
        }
        CondCore::destroy(cond.cast());
    }
    0
}

/// Replaces glibc's.
///
/// # Safety
/// As `pthread_cond_signal`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_signal(cond: *mut pthread_cond_t) -> c_int {
    let state = state();
    let counting = state.config.stats_top.is_some();
    // SAFETY: the caller's contract.
    let notifying = counting.then(|| stats::notifying(cond as usize, unsafe { cond_kind(state, cond) }, false));
    // SAFETY: the caller's contract.
    unsafe {
        if !replaced(state, cond) {
            return (state.real.cond_signal)(cond);
        }
        CondCore::notify_one(cond.cast(), state.config.cond);
    }
    if let Some(notifying) = notifying {
        stats::notified(notifying);
    }
    0
}

/// Replaces glibc's.
///
/// # Safety
/// As `pthread_cond_broadcast`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_broadcast(cond: *mut pthread_cond_t) -> c_int {
    let state = state();
    let counting = state.config.stats_top.is_some();
    // SAFETY: the caller's contract.
    let notifying = counting.then(|| stats::notifying(cond as usize, unsafe { cond_kind(state, cond) }, true));
    // SAFETY: the caller's contract.
    unsafe {
        if !replaced(state, cond) {
            return (state.real.cond_broadcast)(cond);
        }
        CondCore::notify_all(cond.cast(), state.config.cond);
    }
    if let Some(notifying) = notifying {
        stats::notified(notifying);
    }
    0
}

/// Replaces glibc's.
///
/// # Safety
/// As `pthread_cond_wait`.
#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_cond_wait(cond: *mut pthread_cond_t, mutex: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { wait(state(), cond, mutex, Deadline::None) }
}

/// Replaces glibc's: the deadline is on the clock of the condition's attribute.
///
/// # Safety
/// As `pthread_cond_timedwait`.
#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_cond_timedwait(
    cond: *mut pthread_cond_t,
    mutex: *mut pthread_mutex_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { wait(state(), cond, mutex, Deadline::AttributeClock(abstime)) }
}

/// Replaces glibc's: `EINVAL` for a clock other than `CLOCK_REALTIME` and `CLOCK_MONOTONIC`.
///
/// # Safety
/// As `pthread_cond_clockwait`.
#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_cond_clockwait(
    cond: *mut pthread_cond_t,
    mutex: *mut pthread_mutex_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { wait(state(), cond, mutex, Deadline::On(clock, abstime)) }
}

/// Which wait was called.
#[derive(Clone, Copy)]
enum Deadline {
    None,
    AttributeClock(*const timespec),
    On(clockid_t, *const timespec),
}

/// # Safety
/// As `pthread_cond_clockwait`.
unsafe fn wait(state: &State, cond: *mut pthread_cond_t, mutex: *mut pthread_mutex_t, deadline: Deadline) -> c_int {
    // Without drop glue across the wait: a cancellation unwinds this frame by force, which
    // runs no destructor (the wait then stays counted among the waiters).
    let since = state.config.stats_top.is_some().then(|| ManuallyDrop::new(Waiting::start(cond as usize)));
    let notifications = since.as_ref().map_or(0, |since| since.notifications());
    // SAFETY: the caller's contract.
    let status = unsafe { uncounted_wait(state, cond, mutex, deadline) };
    if let Some(since) = since.map(ManuallyDrop::into_inner) {
        let timed = !matches!(deadline, Deadline::None);
        let wait = CondWait { timed, timed_out: status == ETIMEDOUT, notifications };
        // SAFETY: the caller's contract.
        stats::cond_waited(cond as usize, unsafe { cond_kind(state, cond) }, since, wait);
    }
    status
}

/// The statistics' kind of `cond`: replaced or glibc's.
///
/// # Safety
/// `cond` points to a `pthread_cond_t`.
unsafe fn cond_kind(state: &State, cond: *mut pthread_cond_t) -> libc::c_int {
    // SAFETY: the caller's contract.
    if unsafe { replaced(state, cond) } {
        COND
    } else {
        GLIBC_COND
    }
}

/// [`wait`], without the statistics.
///
/// # Safety
/// As [`wait`].
unsafe fn uncounted_wait(
    state: &State,
    cond: *mut pthread_cond_t,
    mutex: *mut pthread_mutex_t,
    deadline: Deadline,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        if !replaced(state, cond) {
            // glibc's wait would release and retake a replaced mutex with its own internal
            // functions, which know nothing of the spinlab lock in it.
            if matches!(state.config.mutexes, Mutexes::Replaced { .. }) && replaced_mutex(mutex) {
                return EINVAL;
            }
            return match deadline {
                Deadline::None => (state.real.cond_wait)(cond, mutex),
                Deadline::AttributeClock(abstime) => (state.real.cond_timedwait)(cond, mutex, abstime),
                Deadline::On(clock, abstime) => (state.real.cond_clockwait)(cond, mutex, clock, abstime),
            };
        }
        let deadline = match deadline {
            Deadline::None => None,
            Deadline::AttributeClock(abstime) => {
                let monotonic = cond_flags(cond).load(Relaxed) & COND_MONOTONIC != 0;
                let clock = if monotonic { libc::CLOCK_MONOTONIC } else { libc::CLOCK_REALTIME };
                match abstime.as_ref().and_then(|at| Abstime::new(clock, at)) {
                    Some(deadline) => Some(deadline),
                    None => return EINVAL,
                }
            }
            Deadline::On(clock, abstime) => match abstime.as_ref().and_then(|at| Abstime::new(clock, at)) {
                Some(deadline) => Some(deadline),
                None => return EINVAL,
            },
        };
        pthread_testcancel();
        let mut waiter = Waiter { cond, mutex };
        let waited = Cleanup::around(on_cancel, (&raw mut waiter).cast(), || {
            CondCore::wait_cancellable(
                cond.cast(),
                state.config.cond,
                deadline.and_then(|d| d.deadline()),
                || match unlock(state, mutex) {
                    0 => Ok(()),
                    error => Err(error),
                },
                || lock(state, mutex),
            )
        });
        let status = match waited {
            Err(unlock_error) => unlock_error,
            Ok(waited) if waited.relocked != 0 => waited.relocked,
            // Timed out on the monotonic clock: report it only if the deadline's clock agrees
            // (it may have been stepped back), else return as from a spurious wake-up.
            Ok(waited) if waited.timed_out && deadline.is_some_and(|d| d.reached()) => ETIMEDOUT,
            Ok(_) => 0,
        };
        pthread_testcancel();
        status
    }
}

/// What a waiter cancelled inside a wait must put right, for [`on_cancel`].
struct Waiter {
    cond: *mut pthread_cond_t,
    mutex: *mut pthread_mutex_t,
}

/// The cleanup handler of a wait, run by glibc when the thread is cancelled inside it (after
/// the mutex was released): passes on a notification it may have taken, leaves the condition
/// variable, and takes the mutex again, as glibc's wait does before the program's handlers.
extern "C" fn on_cancel(waiter: *mut c_void) {
    let state = state();
    // SAFETY: `waiter` is the `Waiter` of the wait being unwound, whose frame is still live;
    // the thread was counted in the condition variable's waiters and had released the mutex.
    unsafe {
        let Waiter { cond, mutex } = *waiter.cast::<Waiter>();
        CondCore::cancelled(cond.cast(), state.config.cond);
        lock(state, mutex);
    }
}

/// Whether `mutex` holds a spinlab lock.
///
/// # Safety
/// `mutex` points to a `pthread_mutex_t`.
unsafe fn replaced_mutex(mutex: *mut pthread_mutex_t) -> bool {
    // SAFETY: the caller's contract.
    crate::glibc::replaced_kind(unsafe { crate::glibc::mutex_kind(mutex) }.load(Relaxed))
}
