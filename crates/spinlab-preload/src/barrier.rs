//! The `pthread_barrier_*` replacements. `pthread_barrier_init` writes the `SPINLAB_BARRIER`
//! barrier (`barrier:spin-park` by default) into the program's own `pthread_barrier_t`, as
//! mutexes are kept: spinlab's sense-reversing barrier in its compact form
//! (`spinlab::barrier::Compact`, its two words side by side instead of on lines of their own),
//! beside a count of the threads inside `wait`:
//!
//! | bytes  | here                                                          |
//! |--------|---------------------------------------------------------------|
//! | 0..16  | the barrier: arrivals (8), release word (4), parties (4)      |
//! | 16..20 | threads inside `pthread_barrier_wait`, for `destroy`          |
//! | 20..24 | unused                                                        |
//! | 24..32 | [`MAGIC`]: this object is ours (glibc's barrier uses 0..20)    |
//!
//! A process-shared barrier (`PTHREAD_PROCESS_SHARED`), which spinlab's private futexes
//! cannot serve, and every barrier with `SPINLAB_BARRIER=pthread`, stay glibc's: calls on an
//! object without the mark go to glibc. `pthread_barrier_destroy` waits until every thread
//! has left its `wait`, as glibc's does, so the common "the serial thread destroys it" pattern
//! is safe.

use crate::config::Barriers;
use crate::glibc::BARRIER_ROOM;
use crate::state;
use crate::stats::{self, Waiting};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};
use libc::{c_int, c_uint, pthread_barrier_t, pthread_barrierattr_t, EBUSY, EINVAL, PTHREAD_PROCESS_SHARED};
use spinlab_c_shared::inside;
use spinlab_registry::RawBarrierOps;
use std::num::NonZeroU32;

/// Marks a `pthread_barrier_t` that holds one of ours.
const MAGIC: u64 = 0x7370_6e6c_6162_6272; // "spnlabbr"
const MAGIC_OFFSET: usize = 24;
/// Where the count of threads inside `wait` is: just after the barrier's room.
const INSIDE_OFFSET: usize = BARRIER_ROOM.size();

const _: () = assert!(size_of::<pthread_barrier_t>() >= MAGIC_OFFSET + 8);
const _: () = assert!(align_of::<pthread_barrier_t>() >= 8);

extern "C" {
    fn pthread_barrierattr_getpshared(attr: *const pthread_barrierattr_t, pshared: *mut c_int) -> c_int;
}

/// The word at `offset` of `barrier`.
///
/// # Safety
/// `barrier` points to a `pthread_barrier_t` that outlives the reference; `offset` is inside
/// it and aligned for `T`.
unsafe fn word<'a, T>(barrier: *mut pthread_barrier_t, offset: usize) -> &'a T {
    // SAFETY: the caller's contract.
    unsafe { &*(barrier.cast::<u8>().add(offset) as *const T) }
}

/// The mark word of `barrier`.
///
/// # Safety
/// `barrier` points to a `pthread_barrier_t` that outlives the reference.
unsafe fn mark<'a>(barrier: *mut pthread_barrier_t) -> &'a AtomicU64 {
    // SAFETY: 8 aligned bytes inside the object (checked above).
    unsafe { word(barrier, MAGIC_OFFSET) }
}

/// The count of threads inside `wait` of `barrier`.
///
/// # Safety
/// As [`mark`].
unsafe fn inside<'a>(barrier: *mut pthread_barrier_t) -> &'a AtomicU32 {
    // SAFETY: 4 aligned bytes inside the object.
    unsafe { word(barrier, INSIDE_OFFSET) }
}

/// The barrier's verbs if `barrier` holds one of ours.
///
/// # Safety
/// `barrier` points to a `pthread_barrier_t`.
unsafe fn ours(barrier: *mut pthread_barrier_t) -> Option<&'static RawBarrierOps> {
    match state().config.barriers {
        // SAFETY: the caller's contract.
        Barriers::Replaced(ops, _) if unsafe { mark(barrier) }.load(Acquire) == MAGIC => Some(ops),
        _ => None,
    }
}

/// Replaces glibc's: the configured barrier for `count` threads, unless `attr` asks for a
/// process-shared one or `SPINLAB_BARRIER=pthread`.
///
/// # Safety
/// As `pthread_barrier_init`.
#[no_mangle]
pub unsafe extern "C" fn pthread_barrier_init(
    barrier: *mut pthread_barrier_t,
    attr: *const pthread_barrierattr_t,
    count: c_uint,
) -> c_int {
    let state = state();
    if state.config.stats_top.is_some() {
        stats::initialised(barrier as usize);
    }
    let mut pshared = 0;
    // SAFETY: `attr` is NULL or an attribute object (the caller's contract).
    let shared = !attr.is_null()
        && unsafe { pthread_barrierattr_getpshared(attr, &mut pshared) } == 0
        && pshared == PTHREAD_PROCESS_SHARED;
    let ops = match state.config.barriers {
        Barriers::Replaced(ops, _) if !shared => ops,
        // SAFETY: the caller's contract; the object is left to glibc, and unmarked.
        _ => unsafe {
            mark(barrier).store(0, Relaxed);
            return (state.real.barrier_init)(barrier, attr, count);
        },
    };
    let Some(parties) = NonZeroU32::new(count).filter(|n| i32::try_from(n.get()).is_ok()) else {
        return EINVAL;
    };
    // SAFETY: `barrier` is writable (the caller's contract), and `config` checked that the
    // barrier fits in `BARRIER_ROOM`, its first bytes.
    unsafe {
        (ops.init)(barrier.cast(), parties);
        inside(barrier).store(0, Relaxed);
        mark(barrier).store(MAGIC, Release);
    }
    0
}

/// Replaces glibc's: `PTHREAD_BARRIER_SERIAL_THREAD` for one thread of each phase, 0 for the
/// others.
///
/// # Safety
/// As `pthread_barrier_wait`.
#[no_mangle]
pub unsafe extern "C" fn pthread_barrier_wait(barrier: *mut pthread_barrier_t) -> c_int {
    let since = state().config.stats_top.is_some().then(|| Waiting::start(barrier as usize));
    // SAFETY: the caller's contract.
    let status = unsafe { wait(barrier) };
    if let Some(since) = since {
        // The address only names the row: the barrier may be destroyed already.
        stats::barrier_waited(barrier as usize, since, status != libc::PTHREAD_BARRIER_SERIAL_THREAD);
    }
    status
}

/// `pthread_barrier_wait`, uncounted.
///
/// # Safety
/// As `pthread_barrier_wait`.
unsafe fn wait(barrier: *mut pthread_barrier_t) -> c_int {
    // SAFETY: the caller's contract.
    let Some(ops) = (unsafe { ours(barrier) }) else {
        // SAFETY: glibc's own barrier.
        return unsafe { (state().real.barrier_wait)(barrier) };
    };
    // SAFETY: a marked object holds a barrier written by `init` until `destroy`, which waits
    // for this thread to leave.
    let leader = unsafe { inside::counted(inside(barrier), || (ops.wait)(barrier.cast())) };
    if leader {
        libc::PTHREAD_BARRIER_SERIAL_THREAD
    } else {
        0
    }
}

/// Replaces glibc's: waits until every thread has left the barrier's `wait`, then frees it.
///
/// # Safety
/// As `pthread_barrier_destroy`: no thread waits on the barrier for a phase still to come.
#[no_mangle]
pub unsafe extern "C" fn pthread_barrier_destroy(barrier: *mut pthread_barrier_t) -> c_int {
    // SAFETY: the caller's contract.
    if unsafe { ours(barrier) }.is_none() {
        // SAFETY: glibc's own barrier.
        return unsafe { (state().real.barrier_destroy)(barrier) };
    }
    // Threads of the last phase may still be returning from `wait`; a thread waiting for a
    // phase that cannot complete is the caller's error, which POSIX lets us report.
    // SAFETY: a marked object (the caller's contract).
    let inside = unsafe { inside(barrier) };
    if !inside::all_left(inside) {
        return EBUSY;
    }
    // SAFETY: the object is ours and nobody is inside: unmark it, so that later calls reach
    // glibc (which refuses a destroyed barrier) and a new init may reuse it.
    unsafe { mark(barrier).store(0, Relaxed) };
    0
}
