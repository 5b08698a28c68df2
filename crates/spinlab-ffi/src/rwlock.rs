//! `spinlab_rwlock_t`: any reader-writer lock of the registry, chosen by name.
//!
//! The registry builds reader-writer locks only on the heap, so `init` allocates one and
//! `destroy` frees it; lock and unlock allocate nothing (except the `std` reference, which
//! keeps its read guards in a per-thread list). The registry's reader-writer locks have no
//! timed acquisition, so the timed calls here poll `try` with naps that double from 1 µs to
//! 1 ms: a timed writer does not queue, so under a steady stream of readers it may time out
//! where a writer waiting in `wrlock` would have been let in.
//!
//! `spinlab_rwlock_unlock` releases either side, as `pthread_rwlock_unlock` does: the lock
//! records which thread holds it exclusively (`writer`, written only by that thread while it
//! holds the lock), and a caller that is not that thread holds it shared.
//!
//! Layout (C sees `SPINLAB_RWLOCK_SIZE` opaque bytes aligned to 8):
//!
//! | bytes | field                                                                   |
//! |-------|-------------------------------------------------------------------------|
//! | 0..8  | `kind`: the static table row of the lock (NULL once destroyed)           |
//! | 8..24 | the lock, a `Box<dyn DynRwLock>` as a raw pointer                        |
//! | 24..32| `writer`: `pthread_self()` of the exclusive holder, 0 when none          |

use crate::names::{lookup, rwlock_kinds, RwLockKind, DEFAULT_RWLOCK};
use crate::status::{SPINLAB_BUSY, SPINLAB_INVALID, SPINLAB_OK, SPINLAB_TIMEDOUT};
use core::ptr::{addr_of, addr_of_mut, null};
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use libc::{c_char, c_int, clockid_t, timespec};
use spinlab_c_shared::clock::Abstime;
use spinlab_registry::DynRwLock;
use std::time::Duration;

/// Bytes of a `spinlab_rwlock_t`.
pub const SPINLAB_RWLOCK_SIZE: usize = 32;
/// Alignment of a `spinlab_rwlock_t`.
pub const SPINLAB_RWLOCK_ALIGN: usize = 8;

/// A reader-writer lock: writer-preferring (`"rw-writer:futex"`, …), phase-fair
/// (`"rw-phase:spin-park"`, …) or reader-preferring (`"rw-reader:pause"`, …) over any wait
/// policy, or a reference (`"pthread"`, `"std"`, `"parking_lot"`), chosen by name when it is
/// initialised. Opaque, in memory the caller owns; do not copy it. It has no static
/// initialiser: `spinlab_rwlock_init` allocates the lock, and `spinlab_rwlock_destroy` frees
/// it. A lock is released by the thread that took it.
///
/// A writer excludes every other holder; readers share. Who waits for whom:
///
/// - `rw-reader`: a reader waits only while a writer holds the lock, so a thread may take a
///   second read lock while a writer waits; a stream of readers can starve a writer.
/// - `rw-writer`: a reader waits while a writer holds the lock or waits for it; a stream of
///   writers can starve readers, and a second read lock while a writer waits deadlocks.
/// - `rw-phase` (the default): reader and writer phases alternate, and each waiter waits at
///   most one phase of the other kind per competitor, so nobody starves; a second read lock
///   while a writer waits deadlocks.
///
/// Whether a waiter sleeps in the kernel is its policy's (as for `spinlab_cond_t`); the
/// references wait, and order their waiters, their own way.
#[repr(C)]
pub struct spinlab_rwlock_t {
    opaque: [u64; 4],
}

#[repr(C)]
struct Repr {
    kind: *const RwLockKind,
    lock: *mut dyn DynRwLock,
    writer: AtomicU64,
}

const _: () = assert!(size_of::<spinlab_rwlock_t>() == SPINLAB_RWLOCK_SIZE);
const _: () = assert!(align_of::<spinlab_rwlock_t>() == SPINLAB_RWLOCK_ALIGN);
const _: () = assert!(size_of::<Repr>() <= SPINLAB_RWLOCK_SIZE && align_of::<Repr>() <= SPINLAB_RWLOCK_ALIGN);

/// The calling thread, as `writer` records it (never 0: `pthread_self` is an address).
fn me() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

/// The lock and its `writer` word.
///
/// # Safety
/// `rwlock` is initialised and not destroyed.
#[inline(always)]
unsafe fn parts<'a>(rwlock: *mut spinlab_rwlock_t) -> (&'a dyn DynRwLock, &'a AtomicU64) {
    let repr = rwlock.cast::<Repr>();
    // SAFETY: the caller's contract: init stored a live box, and `writer` is an atomic.
    unsafe { (&*(*repr).lock, &*addr_of!((*repr).writer)) }
}

/// Initialises `rwlock`, unlocked, as the reader-writer lock called `name` (NULL:
/// `"rw-phase:spin-park"`), allocating it; lock and unlock then allocate nothing (except the
/// `std` reference, which keeps its read guards in a per-thread list).
///
/// Returns `SPINLAB_OK`; `SPINLAB_UNKNOWN_NAME` if no reader-writer lock has that name;
/// `SPINLAB_UNAVAILABLE` if this CPU cannot run its policy; `SPINLAB_INVALID` for a NULL
/// `rwlock`. On an error `rwlock` is left as it was and nothing is allocated.
///
/// # Safety
/// `rwlock` is NULL or points to writable memory for a `spinlab_rwlock_t` that no thread
/// uses; `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn spinlab_rwlock_init(rwlock: *mut spinlab_rwlock_t, name: *const c_char) -> c_int {
    if rwlock.is_null() {
        return SPINLAB_INVALID;
    }
    // SAFETY: the caller's contract on `name`.
    let kind = match unsafe { lookup(rwlock_kinds(), name, DEFAULT_RWLOCK) } {
        Ok(kind) => kind,
        Err(status) => return status,
    };
    let built = match kind.entry.build(()) {
        Ok(built) => built,
        Err(_) => unreachable!("lookup checked that this CPU can run {}", kind.entry.name),
    };
    let repr = rwlock.cast::<Repr>();
    // SAFETY: `rwlock` is writable and aligned (the caller's contract).
    unsafe {
        addr_of_mut!((*repr).lock).write(Box::into_raw(built));
        addr_of_mut!((*repr).writer).write(AtomicU64::new(0));
        addr_of_mut!((*repr).kind).write(kind);
    }
    SPINLAB_OK
}

/// Acquires `rwlock` shared (for reading), waiting as long as it takes. Returns `SPINLAB_OK`.
/// Once it returns, no writer holds the lock until this thread unlocks, and the thread sees
/// what the last writer wrote. Which waiters go first is the lock's (see
/// `spinlab_rwlock_t`).
///
/// # Safety
/// `rwlock` is initialised; the calling thread does not hold it exclusively.
#[no_mangle]
pub unsafe extern "C" fn spinlab_rwlock_rdlock(rwlock: *mut spinlab_rwlock_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { parts(rwlock) }.0.lock_shared();
    SPINLAB_OK
}

/// Acquires `rwlock` shared if that is possible at once: `SPINLAB_OK` (held shared), or
/// `SPINLAB_BUSY` (a writer holds it, or waits for it under a lock that keeps new readers
/// behind a waiting writer; nothing is held). Never waits.
///
/// # Safety
/// As `spinlab_rwlock_rdlock`.
#[no_mangle]
pub unsafe extern "C" fn spinlab_rwlock_tryrdlock(rwlock: *mut spinlab_rwlock_t) -> c_int {
    // SAFETY: the caller's contract.
    status(unsafe { parts(rwlock) }.0.try_lock_shared())
}

/// Acquires `rwlock` exclusively (for writing), waiting as long as it takes. Returns
/// `SPINLAB_OK`. Once it returns the calling thread holds the lock alone, and sees what
/// previous holders wrote. Not recursive.
///
/// # Safety
/// `rwlock` is initialised; the calling thread does not hold it.
#[no_mangle]
pub unsafe extern "C" fn spinlab_rwlock_wrlock(rwlock: *mut spinlab_rwlock_t) -> c_int {
    // SAFETY: the caller's contract.
    let (lock, writer) = unsafe { parts(rwlock) };
    lock.lock_exclusive();
    writer.store(me(), Relaxed);
    SPINLAB_OK
}

/// Acquires `rwlock` exclusively if that is possible at once: `SPINLAB_OK` (held), or
/// `SPINLAB_BUSY` (another thread holds it, shared or exclusively; nothing is held). Never
/// waits.
///
/// # Safety
/// As `spinlab_rwlock_wrlock`.
#[no_mangle]
pub unsafe extern "C" fn spinlab_rwlock_trywrlock(rwlock: *mut spinlab_rwlock_t) -> c_int {
    // SAFETY: the caller's contract.
    let (lock, writer) = unsafe { parts(rwlock) };
    let acquired = lock.try_lock_exclusive();
    if acquired {
        writer.store(me(), Relaxed);
    }
    status(acquired)
}

/// As `spinlab_rwlock_rdlock`, giving up when `clock` (`CLOCK_REALTIME` or
/// `CLOCK_MONOTONIC`) reaches the absolute time `abstime`.
///
/// Returns `SPINLAB_OK` (held shared); `SPINLAB_TIMEDOUT` (not held) once `clock` has
/// reached `abstime`, never before; `SPINLAB_INVALID` (not held) for another clock, a NULL
/// `abstime` or a `tv_nsec` outside 0..999999999, checked before the lock is tried. A lock
/// that can be taken at once is taken whatever the deadline. The registry's reader-writer
/// locks have no timed wait: this tries again after naps that double from 1 µs to 1 ms, so it
/// may return up to about 1 ms after the lock became free or the deadline passed, and a
/// timed waiter does not queue (a timed writer may time out under a steady stream of readers
/// where `spinlab_rwlock_wrlock` would get in).
///
/// # Safety
/// As `spinlab_rwlock_rdlock`; `abstime` is NULL or points to a `struct timespec`.
#[no_mangle]
pub unsafe extern "C" fn spinlab_rwlock_clockrdlock(
    rwlock: *mut spinlab_rwlock_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    let (lock, _) = unsafe { parts(rwlock) };
    // SAFETY: the caller's contract on `abstime`.
    unsafe { poll_until(clock, abstime, || lock.try_lock_shared()) }
}

/// As `spinlab_rwlock_wrlock`, giving up when `clock` reaches `abstime`: the results and
/// guarantees of `spinlab_rwlock_clockrdlock`, for the exclusive side.
///
/// # Safety
/// As `spinlab_rwlock_wrlock`; `abstime` is NULL or points to a `struct timespec`.
#[no_mangle]
pub unsafe extern "C" fn spinlab_rwlock_clockwrlock(
    rwlock: *mut spinlab_rwlock_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    let (lock, writer) = unsafe { parts(rwlock) };
    // SAFETY: the caller's contract on `abstime`.
    let status = unsafe { poll_until(clock, abstime, || lock.try_lock_exclusive()) };
    if status == SPINLAB_OK {
        writer.store(me(), Relaxed);
    }
    status
}

/// `spinlab_rwlock_clockrdlock` on `CLOCK_REALTIME`, as `pthread_rwlock_timedrdlock`: the
/// same results and guarantees.
///
/// # Safety
/// As `spinlab_rwlock_clockrdlock`.
#[no_mangle]
pub unsafe extern "C" fn spinlab_rwlock_timedrdlock(rwlock: *mut spinlab_rwlock_t, abstime: *const timespec) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { spinlab_rwlock_clockrdlock(rwlock, libc::CLOCK_REALTIME, abstime) }
}

/// `spinlab_rwlock_clockwrlock` on `CLOCK_REALTIME`, as `pthread_rwlock_timedwrlock`: the
/// same results and guarantees.
///
/// # Safety
/// As `spinlab_rwlock_clockwrlock`.
#[no_mangle]
pub unsafe extern "C" fn spinlab_rwlock_timedwrlock(rwlock: *mut spinlab_rwlock_t, abstime: *const timespec) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { spinlab_rwlock_clockwrlock(rwlock, libc::CLOCK_REALTIME, abstime) }
}

/// Whether the calling thread holds `rwlock` exclusively: 1 or 0 (not a status code). Never
/// waits. Another thread's exclusive hold reads as 0.
///
/// # Safety
/// `rwlock` is initialised.
#[no_mangle]
pub unsafe extern "C" fn spinlab_rwlock_wrheld(rwlock: *mut spinlab_rwlock_t) -> c_int {
    // SAFETY: the caller's contract.
    let (_, writer) = unsafe { parts(rwlock) };
    // Only the holder writes its own id here, so only it can read it back.
    c_int::from(writer.load(Relaxed) == me())
}

/// Releases `rwlock`, held shared or exclusively by the calling thread: the exclusive hold if
/// the calling thread has it, else one of its shared holds, as `pthread_rwlock_unlock` does.
/// Returns `SPINLAB_OK`. Never waits. After the atomic that releases it, an unlock names the
/// lock only as the address of a futex wake-up, so the lock may be destroyed as soon as it
/// is unlocked and unused, as POSIX allows.
///
/// # Safety
/// `rwlock` is initialised and held by the calling thread.
#[no_mangle]
pub unsafe extern "C" fn spinlab_rwlock_unlock(rwlock: *mut spinlab_rwlock_t) -> c_int {
    // SAFETY: the caller's contract.
    let (lock, writer) = unsafe { parts(rwlock) };
    if writer.load(Relaxed) == me() {
        writer.store(0, Relaxed);
        // SAFETY: this thread holds the lock exclusively (it recorded itself as the writer).
        unsafe { lock.unlock_exclusive() };
    } else {
        // SAFETY: this thread holds the lock (the caller's contract), not exclusively.
        unsafe { lock.unlock_shared() };
    }
    SPINLAB_OK
}

/// Destroys `rwlock` and frees what init allocated: `SPINLAB_OK`, or `SPINLAB_BUSY` if it is
/// held, shared or exclusively (nothing changes; the call does not wait). After `SPINLAB_OK`
/// only `spinlab_rwlock_init` may use the memory; any other call on it crashes.
///
/// # Safety
/// `rwlock` is initialised and no thread waits for it.
#[no_mangle]
pub unsafe extern "C" fn spinlab_rwlock_destroy(rwlock: *mut spinlab_rwlock_t) -> c_int {
    // SAFETY: the caller's contract.
    let (lock, _) = unsafe { parts(rwlock) };
    if !lock.try_lock_exclusive() {
        return SPINLAB_BUSY;
    }
    // SAFETY: taken just now. Then the box from init is freed, and not used again.
    unsafe {
        lock.unlock_exclusive();
        let repr = rwlock.cast::<Repr>();
        drop(Box::from_raw((*repr).lock));
        addr_of_mut!((*repr).kind).write(null());
    }
    SPINLAB_OK
}

/// The registry name of `rwlock`: a static string, never NULL; do not free it.
///
/// # Safety
/// `rwlock` is initialised.
#[no_mangle]
pub unsafe extern "C" fn spinlab_rwlock_name(rwlock: *const spinlab_rwlock_t) -> *const c_char {
    // SAFETY: the caller's contract: `kind` points to a row of a static table.
    unsafe { (*(*rwlock.cast::<Repr>()).kind).name.as_ptr() }
}

fn status(acquired: bool) -> c_int {
    if acquired {
        SPINLAB_OK
    } else {
        SPINLAB_BUSY
    }
}

/// Tries `acquire` until it succeeds or `clock` reaches `abstime`, napping between tries.
///
/// # Safety
/// `abstime` is NULL or points to a `struct timespec`.
unsafe fn poll_until(clock: clockid_t, abstime: *const timespec, mut acquire: impl FnMut() -> bool) -> c_int {
    // SAFETY: the caller's contract.
    let Some(deadline) = (unsafe { abstime.as_ref() }).and_then(|at| Abstime::new(clock, at)) else {
        return SPINLAB_INVALID;
    };
    let mut nap = Duration::from_micros(1);
    loop {
        if acquire() {
            return SPINLAB_OK;
        }
        if deadline.reached() {
            return SPINLAB_TIMEDOUT;
        }
        let left = deadline.deadline().map_or(nap, |at| at.saturating_duration_since(std::time::Instant::now()));
        std::thread::sleep(nap.min(left));
        nap = (nap * 2).min(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::MaybeUninit;

    #[test]
    fn every_available_rwlock_shares_reads_and_excludes_writes() {
        for kind in rwlock_kinds().iter().filter(|k| k.entry.availability.is_ok()) {
            let mut rw = MaybeUninit::<spinlab_rwlock_t>::uninit();
            let rw = rw.as_mut_ptr();
            let past = timespec { tv_sec: 0, tv_nsec: 0 };
            let name = &kind.entry.name;
            // SAFETY: each call as its contract requires, all on this thread.
            unsafe {
                assert_eq!(spinlab_rwlock_init(rw, kind.name.as_ptr()), SPINLAB_OK);
                assert_eq!(spinlab_rwlock_rdlock(rw), SPINLAB_OK);
                assert_eq!(spinlab_rwlock_tryrdlock(rw), SPINLAB_OK, "{name}: readers share");
                assert_eq!(spinlab_rwlock_trywrlock(rw), SPINLAB_BUSY, "{name}");
                assert_eq!(spinlab_rwlock_timedwrlock(rw, &past), SPINLAB_TIMEDOUT, "{name}");
                assert_eq!(spinlab_rwlock_wrheld(rw), 0);
                assert_eq!(spinlab_rwlock_destroy(rw), SPINLAB_BUSY, "{name}");
                assert_eq!(spinlab_rwlock_unlock(rw), SPINLAB_OK);
                assert_eq!(spinlab_rwlock_unlock(rw), SPINLAB_OK);
                assert_eq!(spinlab_rwlock_clockwrlock(rw, libc::CLOCK_MONOTONIC, &past), SPINLAB_OK, "{name}");
                assert_eq!(spinlab_rwlock_wrheld(rw), 1);
                assert_eq!(spinlab_rwlock_tryrdlock(rw), SPINLAB_BUSY, "{name}");
                assert_eq!(spinlab_rwlock_timedrdlock(rw, &past), SPINLAB_TIMEDOUT, "{name}");
                assert_eq!(spinlab_rwlock_unlock(rw), SPINLAB_OK);
                assert_eq!(spinlab_rwlock_wrheld(rw), 0);
                assert_eq!(spinlab_rwlock_clockrdlock(rw, libc::CLOCK_BOOTTIME, &past), SPINLAB_INVALID);
                assert_eq!(spinlab_rwlock_destroy(rw), SPINLAB_OK);
            }
        }
    }
}
