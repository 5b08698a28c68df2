//! `spinlab_mutex_t`: any lock of the registry, chosen by name, in memory the caller owns.
//!
//! Layout (C sees `SPINLAB_MUTEX_SIZE` opaque bytes aligned to 8):
//!
//! | bytes | field                                                                      |
//! |-------|----------------------------------------------------------------------------|
//! | 0..8  | `kind`: the static table row of the lock built here; NULL: the default lock |
//! | 8..64 | the lock itself, written in place by its `RawLockOps::init`                |
//!
//! All-zero bytes are an unlocked mutex of the default lock, with no `init` call: `kind` NULL
//! stands for the default's row, and every spinlab lock, the default included, is unlocked
//! when all zero (`RawLockOps::zero_is_unlocked`; a test checks the default's). That is what
//! `SPINLAB_MUTEX_INITIALIZER` writes, as `PTHREAD_MUTEX_INITIALIZER` does for glibc, and what
//! `destroy` leaves behind. Nothing ever writes the row into such a mutex, so threads that
//! use a static one race on nothing but the lock itself.
//!
//! Every operation reads `kind` (a NULL costs one well-predicted branch) and calls the lock's
//! function through it: one indirect call, and no allocation. (The queue locks, MCS and CLH,
//! take a node per acquisition from a per-thread cache, which allocates only while more nodes
//! are in use at once than ever before.) A test checks that every lock of the registry fits
//! in the 56 bytes after `kind`.

use crate::names::{lookup, mutex_kinds, MutexKind, DEFAULT_MUTEX};
use crate::status::{SPINLAB_BUSY, SPINLAB_INVALID, SPINLAB_OK, SPINLAB_TIMEDOUT, SPINLAB_TOO_LARGE};
use core::alloc::Layout;
use core::mem::MaybeUninit;
use core::ptr::addr_of_mut;
use libc::{c_char, c_int, clockid_t, timespec};
use spinlab_c_shared::clock::Abstime;
use spinlab_c_shared::timed::lock_by;
use spinlab_registry::RawLockOps;
use std::sync::OnceLock;

/// Bytes of a `spinlab_mutex_t`.
pub const SPINLAB_MUTEX_SIZE: usize = 64;
/// Alignment of a `spinlab_mutex_t`.
pub const SPINLAB_MUTEX_ALIGN: usize = 8;

/// A mutual-exclusion lock: any spinlab lock (`"ttas:pause"`, `"mcs:spin-park"`,
/// `"fair:futex"`, …) or reference lock (`"pthread"`, `"std"`, `"parking_lot"`), chosen by
/// name when it is initialised. Opaque, in memory the caller owns; do not copy it. Initialise
/// it with `spinlab_mutex_init`, or with `SPINLAB_MUTEX_INITIALIZER` (or all-zero bytes) for
/// an unlocked mutex of the default lock, `"adaptive:pause-yield-park"`.
///
/// Every lock excludes: between a thread's lock and its unlock no other thread holds the
/// mutex, and what a holder wrote before its unlock is visible to the next holder. Its other
/// guarantees are those of the lock its name chooses (docs/c.md lists them):
///
/// - order: `ticket`, `clh` and `hapax` FIFO; `mcs` FIFO in its queue; `reciprocating` each
///   waiter overtaken at most once by each thread that arrived after it; `fair` round-robin
///   over its waiters' slots; `cna` and `hmcs` the holder's NUMA node first, within a bound
///   (`cna`: at most 64 hand-overs in a row past the oldest waiter). Over a policy that sleeps
///   or yields, their waiters (and those of `cna` and `hmcs`) keep that order, but a running thread may take the lock before
///   the head of the queue, for at most 0.5 ms of the head's wait; `cna-gated` is `cna`'s order
///   kept so over every policy. `bounded`: a running waiter passed over for at most 0.5 ms.
///   `malthusian`: MCS order among about one thread per CPU, the others passive, the oldest
///   let in every 64 acquisitions. `tas`, `ttas`,
///   `std`, `pthread`: none. `parking_lot`: a fair hand-off about every 0.5 ms. The default is
///   `bounded` where the process may run on at most 4 CPUs, and `mcs` over a sleeping policy
///   on more.
/// - sleep: a waiter may sleep in the kernel under `futex`, `spin-park`, `spin-yield-park`
///   and `pause-yield-park` (the default's policy) and under the references; under every
///   other policy it spins (`yield` gives its CPU away between looks).
///
/// When threads outnumber CPUs: `ticket`, `mcs`, `clh`, `fair`, `reciprocating` and `hapax`
/// over a policy whose waiters keep their CPU (`spin`, `pause`, `idiv`, `fdiv`, `cas`, `miss`,
/// `backoff`, `umwait`, `tpause`, `mwaitx`, `wfe`) hand the lock over in order to a thread
/// that may not be running, and their throughput collapses: use them only where threads
/// never outnumber the CPUs they may run on. Over a policy that sleeps or yields, those six,
/// `cna` and `hmcs` queue in front of a bounded-bypass word and hold up, as `cna-gated` does
/// over every policy (gated, `hmcs` takes 40 bytes with its guard). `cna` and `hmcs` over the
/// other policies hand the lock to a chosen waiter that may not be running: a convoy. `malthusian` restricts instead: about one thread
/// per CPU waits in its MCS queue and the others wait passive, asleep over a sleeping policy;
/// over a policy that never sleeps they spin, and its hand-overs convoy. Every other lock
/// holds up (docs/c.md, "When threads outnumber CPUs"; measurements in docs/contention.md).
#[repr(C)]
pub struct spinlab_mutex_t {
    opaque: [u64; 8],
}

#[repr(C)]
struct Repr {
    kind: *const MutexKind,
    lock: [MaybeUninit<u64>; LOCK_WORDS],
}

const LOCK_WORDS: usize = SPINLAB_MUTEX_SIZE / 8 - 1;
/// The room a lock has in a `spinlab_mutex_t`: the words after `kind`.
const LOCK_ROOM: Layout = Layout::new::<[MaybeUninit<u64>; LOCK_WORDS]>();

const _: () = assert!(size_of::<spinlab_mutex_t>() == SPINLAB_MUTEX_SIZE);
const _: () = assert!(align_of::<spinlab_mutex_t>() == SPINLAB_MUTEX_ALIGN);
const _: () = assert!(size_of::<Repr>() == SPINLAB_MUTEX_SIZE && align_of::<Repr>() <= SPINLAB_MUTEX_ALIGN);

/// The row of the default lock, which a mutex whose `kind` is NULL holds.
fn default_kind() -> &'static MutexKind {
    static DEFAULT: OnceLock<&'static MutexKind> = OnceLock::new();
    DEFAULT.get_or_init(|| {
        // The tests check that the default is in the table, runs on every CPU, and is
        // unlocked when all zero.
        mutex_kinds().iter().find(|kind| kind.name.as_c_str() == DEFAULT_MUTEX).expect("the default lock is registered")
    })
}

/// The table row of the lock in `mutex`.
///
/// # Safety
/// `mutex` points to an initialised mutex (by `spinlab_mutex_init`, by
/// `SPINLAB_MUTEX_INITIALIZER`, or all-zero bytes).
#[inline(always)]
unsafe fn kind(mutex: *const spinlab_mutex_t) -> &'static MutexKind {
    // SAFETY: the caller's contract: the memory holds a mutex.
    let kind = unsafe { (*mutex.cast::<Repr>()).kind };
    if kind.is_null() {
        default_kind()
    } else {
        // SAFETY: a `kind` that is not NULL was set by init to a row of a static table.
        unsafe { &*kind }
    }
}

/// The verbs of the lock in `mutex`, and where the lock is.
///
/// # Safety
/// `mutex` points to an initialised mutex (by `spinlab_mutex_init`, by
/// `SPINLAB_MUTEX_INITIALIZER`, or all-zero bytes).
#[inline(always)]
pub(crate) unsafe fn parts(mutex: *mut spinlab_mutex_t) -> (&'static RawLockOps, *mut u8) {
    // SAFETY: the caller's contract.
    let kind = unsafe { kind(mutex) };
    // SAFETY: `mutex` points to a mutex, so to its `lock` field.
    (&kind.entry.facts.ops, unsafe { addr_of_mut!((*mutex.cast::<Repr>()).lock).cast() })
}

/// Initialises `mutex`, unlocked, as the lock called `name` (NULL: spinlab's default,
/// `"adaptive:pause-yield-park"`), in place: nothing is allocated.
///
/// Returns `SPINLAB_OK`; `SPINLAB_UNKNOWN_NAME` if no lock has that name;
/// `SPINLAB_UNAVAILABLE` if this CPU cannot run the lock's wait policy; `SPINLAB_TOO_LARGE`
/// if the lock does not fit in a `spinlab_mutex_t` (none of this build); `SPINLAB_INVALID`
/// for a NULL `mutex`. On an error `mutex` is left as it was.
///
/// # Safety
/// `mutex` is NULL or points to writable memory for a `spinlab_mutex_t` that no thread
/// uses; `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn spinlab_mutex_init(mutex: *mut spinlab_mutex_t, name: *const c_char) -> c_int {
    if mutex.is_null() {
        return SPINLAB_INVALID;
    }
    // SAFETY: the caller's contract on `name`.
    let kind = match unsafe { lookup(mutex_kinds(), name, DEFAULT_MUTEX) } {
        Ok(kind) => kind,
        Err(status) => return status,
    };
    let Ok(ops) = kind.entry.fits(LOCK_ROOM) else {
        return SPINLAB_TOO_LARGE;
    };
    let repr = mutex.cast::<Repr>();
    // SAFETY: `mutex` is writable and 8-aligned (the caller's contract), so `lock` is the
    // room of LOCK_ROOM, which `fits` checked is enough for this lock.
    unsafe {
        (ops.init)(addr_of_mut!((*repr).lock).cast());
        addr_of_mut!((*repr).kind).write(kind);
    }
    SPINLAB_OK
}

/// Acquires `mutex`, waiting as long as it takes. Returns `SPINLAB_OK`.
///
/// Once it returns the calling thread holds `mutex` alone, and sees what previous holders
/// wrote before their unlocks. Which waiter gets the lock next, and whether a waiter may
/// sleep in the kernel, are the lock's (see `spinlab_mutex_t`). Not recursive: a thread that already
/// holds `mutex` must not call it. The queue locks (`mcs`, `clh`) take a node from a
/// per-thread cache, and allocate one only while more are in use at once than ever before.
///
/// # Safety
/// `mutex` is initialised; the calling thread does not hold it.
#[no_mangle]
pub unsafe extern "C" fn spinlab_mutex_lock(mutex: *mut spinlab_mutex_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        let (ops, at) = parts(mutex);
        (ops.lock)(at);
    }
    SPINLAB_OK
}

/// Acquires `mutex` if that is possible at once: `SPINLAB_OK` (held, as after
/// `spinlab_mutex_lock`), or `SPINLAB_BUSY` (another thread holds it, or the lock's order
/// keeps this thread behind its waiters; nothing is held). Never waits and never sleeps.
///
/// # Safety
/// As `spinlab_mutex_lock`.
#[no_mangle]
pub unsafe extern "C" fn spinlab_mutex_trylock(mutex: *mut spinlab_mutex_t) -> c_int {
    // SAFETY: the caller's contract.
    let acquired = unsafe {
        let (ops, at) = parts(mutex);
        (ops.try_lock)(at)
    };
    if acquired {
        SPINLAB_OK
    } else {
        SPINLAB_BUSY
    }
}

/// Acquires `mutex` as `spinlab_mutex_lock` does, giving up when `clock` (`CLOCK_REALTIME`
/// or `CLOCK_MONOTONIC`) reaches the absolute time `abstime`.
///
/// Returns `SPINLAB_OK` (held); `SPINLAB_TIMEDOUT` (not held) once `clock` has reached
/// `abstime`, never before, also when that clock is stepped back during the wait;
/// `SPINLAB_INVALID` (not held) for another clock, a NULL `abstime` or a `tv_nsec` outside
/// 0..999999999, checked before the lock is tried. A free mutex is taken whatever the
/// deadline, one in the past included. A waiter that gives up leaves the lock's order. The
/// wait is the lock's own, except for the `std` reference, which has none: it tries again
/// after naps that double from 1 µs to 1 ms.
///
/// # Safety
/// As `spinlab_mutex_lock`; `abstime` is NULL or points to a `struct timespec`.
#[no_mangle]
pub unsafe extern "C" fn spinlab_mutex_clocklock(
    mutex: *mut spinlab_mutex_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract on `abstime`.
    let Some(abstime) = (unsafe { abstime.as_ref() }).and_then(|at| Abstime::new(clock, at)) else {
        return SPINLAB_INVALID;
    };
    // SAFETY: the caller's contract on `mutex`.
    let (ops, at) = unsafe { parts(mutex) };
    // SAFETY: `at` is the initialised lock of `mutex`.
    if unsafe { (ops.try_lock)(at) } {
        return SPINLAB_OK; // a free lock costs no clock reads
    }
    // SAFETY: as above; this thread does not hold the lock (it would be a deadlock).
    if unsafe { lock_by(ops, at, &abstime) } {
        SPINLAB_OK
    } else {
        SPINLAB_TIMEDOUT
    }
}

/// `spinlab_mutex_clocklock` on `CLOCK_REALTIME`, as `pthread_mutex_timedlock`: the same
/// results and guarantees.
///
/// # Safety
/// As `spinlab_mutex_clocklock`.
#[no_mangle]
pub unsafe extern "C" fn spinlab_mutex_timedlock(mutex: *mut spinlab_mutex_t, abstime: *const timespec) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { spinlab_mutex_clocklock(mutex, libc::CLOCK_REALTIME, abstime) }
}

/// Releases `mutex`, which the calling thread holds. Returns `SPINLAB_OK`. Never waits: an
/// in-order lock hands itself to its next waiter, and a waiter that may be asleep is woken
/// with a futex wake-up.
///
/// After the atomic that releases it, an unlock names the mutex only as the address of a
/// futex wake-up, which the kernel uses as a key: so once a thread has acquired and released
/// the mutex, it may destroy and free it even while the previous holder is still returning
/// from its unlock, as POSIX allows for a pthread mutex. Releasing a mutex the calling thread
/// does not hold is undefined.
///
/// # Safety
/// `mutex` is initialised and held by the calling thread.
#[no_mangle]
pub unsafe extern "C" fn spinlab_mutex_unlock(mutex: *mut spinlab_mutex_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        let (ops, at) = parts(mutex);
        (ops.unlock)(at);
    }
    SPINLAB_OK
}

/// Destroys `mutex`: `SPINLAB_OK`, or `SPINLAB_BUSY` if it is held (nothing changes; the
/// call does not wait). After `SPINLAB_OK` the memory may be freed or reused at once; it
/// holds all-zero bytes, which is what `SPINLAB_MUTEX_INITIALIZER` writes, so a destroyed
/// mutex used again is an unlocked one of the default lock (POSIX leaves that case
/// undefined), and `spinlab_mutex_init` may give it any lock.
///
/// # Safety
/// `mutex` is initialised, and no thread waits for it.
#[no_mangle]
pub unsafe extern "C" fn spinlab_mutex_destroy(mutex: *mut spinlab_mutex_t) -> c_int {
    // SAFETY: the caller's contract.
    let (ops, at) = unsafe { parts(mutex) };
    // SAFETY: `at` is the initialised lock of `mutex`.
    if !unsafe { (ops.try_lock)(at) } {
        return SPINLAB_BUSY;
    }
    // SAFETY: we hold the lock and nobody waits for it (the caller's contract), so it is ours
    // to release and drop; the mutex's bytes are then ours to zero.
    unsafe {
        (ops.unlock)(at);
        (ops.drop)(at);
        mutex.write_bytes(0, 1);
    }
    SPINLAB_OK
}

/// The registry name of the lock in `mutex` (`"adaptive:pause-yield-park"` after a NULL name
/// or `SPINLAB_MUTEX_INITIALIZER`): a static string, never NULL; do not free it.
///
/// # Safety
/// `mutex` is initialised.
#[no_mangle]
pub unsafe extern "C" fn spinlab_mutex_name(mutex: *const spinlab_mutex_t) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { kind(mutex) }.name.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{SPINLAB_UNAVAILABLE, SPINLAB_UNKNOWN_NAME};
    use core::ptr::null;
    use std::ffi::{CStr, CString};

    fn uninit() -> Box<MaybeUninit<spinlab_mutex_t>> {
        Box::new(MaybeUninit::uninit())
    }

    #[test]
    fn every_lock_of_the_registry_fits() {
        for kind in mutex_kinds() {
            if let Err(why) = kind.entry.fits(LOCK_ROOM) {
                panic!("{why}");
            }
        }
    }

    #[test]
    fn every_available_lock_excludes_and_reports_busy() {
        for kind in mutex_kinds().iter().filter(|k| k.entry.availability.is_ok()) {
            let mut m = uninit();
            let m = m.as_mut_ptr();
            // SAFETY: fresh memory; static names; the mutex is used as the calls require.
            unsafe {
                assert_eq!(spinlab_mutex_init(m, kind.name.as_ptr()), SPINLAB_OK);
                assert_eq!(CStr::from_ptr(spinlab_mutex_name(m)), kind.name.as_c_str());
                assert_eq!(spinlab_mutex_lock(m), SPINLAB_OK);
                assert_eq!(spinlab_mutex_trylock(m), SPINLAB_BUSY, "{}", kind.entry.name);
                assert_eq!(spinlab_mutex_destroy(m), SPINLAB_BUSY, "{}", kind.entry.name);
                assert_eq!(spinlab_mutex_unlock(m), SPINLAB_OK);
                assert_eq!(spinlab_mutex_trylock(m), SPINLAB_OK, "{}", kind.entry.name);
                assert_eq!(spinlab_mutex_unlock(m), SPINLAB_OK);
                assert_eq!(spinlab_mutex_destroy(m), SPINLAB_OK);
            }
        }
    }

    #[test]
    fn the_default_lock_is_available_and_unlocked_when_all_zero() {
        let default = default_kind();
        assert_eq!(default.name.as_c_str(), DEFAULT_MUTEX);
        assert!(default.entry.availability.is_ok());
        assert!(default.entry.facts.ops.zero_is_unlocked && default.entry.fits(LOCK_ROOM).is_ok());
    }

    #[test]
    fn an_all_zero_mutex_is_an_unlocked_default_one_and_destroy_leaves_one() {
        // SAFETY: an opaque array of integers, for which all-zero bytes are valid.
        let mut m: Box<spinlab_mutex_t> = Box::new(unsafe { core::mem::zeroed() });
        let m: *mut spinlab_mutex_t = &mut *m;
        // SAFETY: an all-zero mutex is an initialised one; used as the calls require.
        unsafe {
            assert_eq!(CStr::from_ptr(spinlab_mutex_name(m)), DEFAULT_MUTEX);
            for _ in 0..2 {
                assert_eq!(spinlab_mutex_lock(m), SPINLAB_OK);
                assert_eq!(spinlab_mutex_trylock(m), SPINLAB_BUSY);
                assert_eq!(spinlab_mutex_destroy(m), SPINLAB_BUSY);
                assert_eq!(spinlab_mutex_unlock(m), SPINLAB_OK);
                assert_eq!(spinlab_mutex_destroy(m), SPINLAB_OK);
                assert_eq!((*m).opaque, [0; 8], "destroy leaves the static initialiser's bytes");
            }
            // A mutex of another lock, destroyed, is the default one again.
            assert_eq!(spinlab_mutex_init(m, c"ticket:pause".as_ptr()), SPINLAB_OK);
            assert_eq!(spinlab_mutex_lock(m), SPINLAB_OK);
            assert_eq!(spinlab_mutex_unlock(m), SPINLAB_OK);
            assert_eq!(spinlab_mutex_destroy(m), SPINLAB_OK);
            assert_eq!(CStr::from_ptr(spinlab_mutex_name(m)), DEFAULT_MUTEX);
        }
    }

    #[test]
    fn init_refuses_unknown_and_unavailable_names_and_null() {
        let mut m = uninit();
        let m = m.as_mut_ptr();
        // SAFETY: fresh memory and static names.
        unsafe {
            assert_eq!(spinlab_mutex_init(m, c"ttas:nope".as_ptr()), SPINLAB_UNKNOWN_NAME);
            assert_eq!(spinlab_mutex_init(core::ptr::null_mut(), null()), SPINLAB_INVALID);
            for entry in spinlab_registry::LOCKS.entries().iter().filter(|e| e.availability.is_err()) {
                let name = CString::new(entry.name.as_str()).unwrap();
                assert_eq!(spinlab_mutex_init(m, name.as_ptr()), SPINLAB_UNAVAILABLE);
            }
            assert_eq!(spinlab_mutex_init(m, null()), SPINLAB_OK);
            assert_eq!(CStr::from_ptr(spinlab_mutex_name(m)), DEFAULT_MUTEX);
            assert_eq!(spinlab_mutex_destroy(m), SPINLAB_OK);
        }
    }

    #[test]
    fn a_timed_lock_checks_its_arguments_then_times_out_on_either_clock() {
        let mut m = uninit();
        let m = m.as_mut_ptr();
        let past = timespec { tv_sec: 0, tv_nsec: 0 };
        let bad = timespec { tv_sec: 0, tv_nsec: 1_000_000_000 };
        // SAFETY: an initialised mutex, valid timespecs.
        unsafe {
            assert_eq!(spinlab_mutex_init(m, c"mcs:futex".as_ptr()), SPINLAB_OK);
            assert_eq!(spinlab_mutex_timedlock(m, &past), SPINLAB_OK, "a free lock is taken");
            assert_eq!(spinlab_mutex_timedlock(m, &past), SPINLAB_TIMEDOUT);
            assert_eq!(spinlab_mutex_clocklock(m, libc::CLOCK_MONOTONIC, &past), SPINLAB_TIMEDOUT);
            assert_eq!(spinlab_mutex_timedlock(m, &bad), SPINLAB_INVALID);
            assert_eq!(spinlab_mutex_timedlock(m, null()), SPINLAB_INVALID);
            assert_eq!(spinlab_mutex_clocklock(m, libc::CLOCK_THREAD_CPUTIME_ID, &past), SPINLAB_INVALID);
            assert_eq!(spinlab_mutex_unlock(m), SPINLAB_OK);
            assert_eq!(spinlab_mutex_destroy(m), SPINLAB_OK);
        }
    }
}
