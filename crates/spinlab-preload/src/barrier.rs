//! The `pthread_barrier_*` replacements. `pthread_barrier_init` builds the `SPINLAB_BARRIER`
//! barrier (`barrier:spin-park` by default) on the heap, as the C API does (spinlab's barrier
//! keeps its counter and release word on cache lines of their own, more than the 32 bytes of a
//! `pthread_barrier_t`), and keeps a pointer to it in the program's object:
//!
//! | bytes  | here                                                         |
//! |--------|--------------------------------------------------------------|
//! | 0..8   | the [`Held`] barrier, a raw `Box`                             |
//! | 8..24  | unused                                                       |
//! | 24..32 | [`MAGIC`]: this object is ours (glibc's barrier uses 0..20)   |
//!
//! A process-shared barrier (`PTHREAD_PROCESS_SHARED`), which a heap pointer cannot serve,
//! and every barrier with `SPINLAB_BARRIER=pthread`, stay glibc's: calls on an object without
//! the mark go to glibc. `pthread_barrier_destroy` waits until every thread has left its
//! `wait`, as glibc's does, so the common "the serial thread destroys it" pattern is safe.

use crate::config::Barriers;
use crate::state;
use crate::stats::{self, Waiting, BARRIER};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};
use libc::{c_int, c_uint, pthread_barrier_t, pthread_barrierattr_t, EBUSY, EINVAL, PTHREAD_PROCESS_SHARED};
use spinlab::registry::DynBarrier;
use std::num::NonZeroU32;

/// Marks a `pthread_barrier_t` that holds one of ours.
const MAGIC: u64 = 0x7370_6e6c_6162_6272; // "spnlabbr"
const MAGIC_OFFSET: usize = 24;

const _: () = assert!(size_of::<pthread_barrier_t>() >= MAGIC_OFFSET + 8);
const _: () = assert!(align_of::<pthread_barrier_t>() >= 8);

/// A barrier and the threads inside its `wait`.
struct Held {
    barrier: Box<dyn DynBarrier>,
    inside: AtomicU32,
}

extern "C" {
    fn pthread_barrierattr_getpshared(attr: *const pthread_barrierattr_t, pshared: *mut c_int) -> c_int;
}

/// The mark word of `barrier`.
///
/// # Safety
/// `barrier` points to a `pthread_barrier_t` that outlives the reference.
unsafe fn mark<'a>(barrier: *mut pthread_barrier_t) -> &'a AtomicU64 {
    // SAFETY: 8 aligned bytes inside the object (checked above).
    unsafe { &*(barrier.cast::<u8>().add(MAGIC_OFFSET) as *const AtomicU64) }
}

/// The pointer word of `barrier`.
///
/// # Safety
/// As [`mark`].
unsafe fn slot<'a>(barrier: *mut pthread_barrier_t) -> &'a AtomicU64 {
    // SAFETY: the first 8 bytes, aligned.
    unsafe { &*(barrier as *const AtomicU64) }
}

/// Our barrier in `barrier`, if it holds one.
///
/// # Safety
/// `barrier` points to a `pthread_barrier_t`.
unsafe fn ours<'a>(barrier: *mut pthread_barrier_t) -> Option<&'a Held> {
    // SAFETY: the caller's contract; a marked object holds a live `Held` until destroy.
    unsafe { (mark(barrier).load(Acquire) == MAGIC).then(|| &*(slot(barrier).load(Relaxed) as *const Held)) }
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
    let mut pshared = 0;
    // SAFETY: `attr` is NULL or an attribute object (the caller's contract).
    let shared = !attr.is_null()
        && unsafe { pthread_barrierattr_getpshared(attr, &mut pshared) } == 0
        && pshared == PTHREAD_PROCESS_SHARED;
    let entry = match state.config.barriers {
        Barriers::Replaced(entry) if !shared => entry,
        // SAFETY: the caller's contract; the object is left to glibc, and unmarked.
        _ => unsafe {
            mark(barrier).store(0, Relaxed);
            return (state.real.barrier_init)(barrier, attr, count);
        },
    };
    let Some(parties) = NonZeroU32::new(count).filter(|n| i32::try_from(n.get()).is_ok()) else {
        return EINVAL;
    };
    let Ok(built) = entry.build(parties) else { return EINVAL };
    let held = Box::into_raw(Box::new(Held { barrier: built, inside: AtomicU32::new(0) }));
    // SAFETY: `barrier` is writable (the caller's contract).
    unsafe {
        slot(barrier).store(held as u64, Relaxed);
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
    let since = state().config.stats_top.is_some().then(Waiting::start);
    // SAFETY: the caller's contract.
    let status = unsafe { wait(barrier) };
    if let Some(since) = since {
        // The address only names the row: the barrier may be destroyed already.
        stats::waited(barrier as usize, BARRIER, since, status != libc::PTHREAD_BARRIER_SERIAL_THREAD);
    }
    status
}

/// `pthread_barrier_wait`, uncounted.
///
/// # Safety
/// As `pthread_barrier_wait`.
unsafe fn wait(barrier: *mut pthread_barrier_t) -> c_int {
    // SAFETY: the caller's contract.
    let Some(held) = (unsafe { ours(barrier) }) else {
        // SAFETY: glibc's own barrier.
        return unsafe { (state().real.barrier_wait)(barrier) };
    };
    held.inside.fetch_add(1, Relaxed);
    let leader = held.barrier.wait();
    // Release: this thread's last touch of the barrier happens-before destroy frees it.
    held.inside.fetch_sub(1, Release);
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
    let Some(held) = (unsafe { ours(barrier) }) else {
        // SAFETY: glibc's own barrier.
        return unsafe { (state().real.barrier_destroy)(barrier) };
    };
    // Threads of the last phase may still be returning from `wait`; a thread waiting for a
    // phase that cannot complete is the caller's error, which POSIX lets us report.
    let mut spins = 0u32;
    while held.inside.load(Acquire) != 0 {
        spins += 1;
        if spins > 1_000_000 {
            return EBUSY;
        }
        std::thread::yield_now();
    }
    // SAFETY: the object is ours and nobody is inside; unmark it, then free what init built.
    unsafe {
        mark(barrier).store(0, Relaxed);
        slot(barrier).store(0, Relaxed);
        drop(Box::from_raw(held as *const Held as *mut Held));
    }
    0
}
