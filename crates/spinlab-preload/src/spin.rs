//! The `pthread_spin_*` replacements. A `pthread_spinlock_t` is an `int`; with `SPINLAB_SPIN`
//! set to a lock that fits in it (`ttas:pause` by default) it holds that lock in place, and
//! with `SPINLAB_SPIN=pthread` every call goes to glibc. The replacement's waiters never
//! sleep (`config::spins` accepts no lock that may), so a spin lock shared between processes
//! (`PTHREAD_PROCESS_SHARED`) works too: the lock is a plain atomic word in the shared memory.
//!
//! With `SPINLAB_STATS=1` each spin lock is counted like a mutex, with the kind `spin`.

use crate::config::Spins;
use crate::stats::{self, Waiting, SPIN};
use crate::{state, State};
use libc::{c_int, pthread_spinlock_t, EBUSY};

/// Acquires `lock` (waiting for it when `wait`, else `EBUSY` if it is held), counting the
/// acquisition with `SPINLAB_STATS`: a first attempt, then a timed wait if that failed.
///
/// Inlined into each caller: a replaced lock found free, uncounted, costs one call into the
/// lock; the rest goes to [`acquire_any`], which tries again.
///
/// # Safety
/// `lock` points to an initialised `pthread_spinlock_t`.
#[inline(always)]
unsafe fn acquire(state: &State, lock: *mut pthread_spinlock_t, wait: bool) -> c_int {
    if let (Spins::Replaced { ops, .. }, None) = (state.config.spins, state.config.stats_top) {
        // SAFETY: the caller's contract; a replaced spin lock holds its lock in place.
        if unsafe { (ops.try_lock)(lock.cast()) } {
            return 0;
        }
    }
    // SAFETY: the caller's contract.
    unsafe { acquire_any(state, lock, wait) }
}

/// [`acquire`] for every case.
///
/// # Safety
/// As [`acquire`].
#[inline(never)]
unsafe fn acquire_any(state: &State, lock: *mut pthread_spinlock_t, wait: bool) -> c_int {
    let counting = state.config.stats_top.is_some();
    let count = |waiting: Option<Waiting>| {
        if counting {
            stats::acquired(lock as usize, SPIN, waiting);
        }
    };
    // SAFETY: the caller's contract; a replaced spin lock holds its lock in place, initialised
    // by `pthread_spin_init`.
    unsafe {
        match state.config.spins {
            Spins::Replaced { ops, .. } => {
                let at = lock.cast::<u8>();
                if (ops.try_lock)(at) {
                    count(None);
                    return 0;
                }
                if !wait {
                    return EBUSY;
                }
                let waiting = counting.then(|| Waiting::start(lock as usize));
                (ops.lock)(at);
                count(waiting);
                0
            }
            Spins::Glibc if !counting => {
                if wait {
                    (state.real.spin_lock)(lock)
                } else {
                    (state.real.spin_trylock)(lock)
                }
            }
            Spins::Glibc => match (state.real.spin_trylock)(lock) {
                0 => {
                    count(None);
                    0
                }
                busy if !wait => busy,
                _ => {
                    let waiting = Waiting::start(lock as usize);
                    let status = (state.real.spin_lock)(lock);
                    if status == 0 {
                        count(Some(waiting));
                    }
                    status
                }
            },
        }
    }
}

/// Replaces glibc's: the configured lock, initialised in place, whatever `pshared` says
/// (its waiters spin on the shared word either way).
///
/// # Safety
/// As `pthread_spin_init`.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_init(lock: *mut pthread_spinlock_t, pshared: c_int) -> c_int {
    let state = state();
    let status = match state.config.spins {
        Spins::Replaced { ops, .. } => {
            // SAFETY: `lock` is a writable `pthread_spinlock_t`, which the configuration checked
            // the lock fits in.
            unsafe { (ops.init)(lock.cast()) };
            0
        }
        // SAFETY: the caller's contract.
        Spins::Glibc => unsafe { (state.real.spin_init)(lock, pshared) },
    };
    if status == 0 && state.config.stats_top.is_some() {
        stats::initialised(lock as usize);
    }
    status
}

/// Replaces glibc's.
///
/// # Safety
/// As `pthread_spin_destroy`.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_destroy(lock: *mut pthread_spinlock_t) -> c_int {
    let state = state();
    match state.config.spins {
        Spins::Replaced { ops, .. } => {
            // SAFETY: an initialised, unlocked lock (the caller's contract), dropped in place.
            unsafe { (ops.drop)(lock.cast()) };
            0
        }
        // SAFETY: the caller's contract.
        Spins::Glibc => unsafe { (state.real.spin_destroy)(lock) },
    }
}

/// Replaces glibc's.
///
/// # Safety
/// As `pthread_spin_lock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_lock(lock: *mut pthread_spinlock_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { acquire(state(), lock, true) }
}

/// Replaces glibc's: `EBUSY` when the lock is held.
///
/// # Safety
/// As `pthread_spin_trylock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_trylock(lock: *mut pthread_spinlock_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { acquire(state(), lock, false) }
}

/// Replaces glibc's.
///
/// # Safety
/// As `pthread_spin_unlock`: the calling thread holds the lock.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_unlock(lock: *mut pthread_spinlock_t) -> c_int {
    let state = state();
    let releasing = state.config.stats_top.and_then(|_| stats::releasing(lock as usize));
    let status = match state.config.spins {
        Spins::Replaced { ops, .. } => {
            // SAFETY: the caller holds the lock.
            unsafe { (ops.unlock)(lock.cast()) };
            0
        }
        // SAFETY: the caller's contract.
        Spins::Glibc => unsafe { (state.real.spin_unlock)(lock) },
    };
    stats::released(releasing);
    status
}
