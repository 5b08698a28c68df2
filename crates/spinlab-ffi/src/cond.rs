//! `spinlab_cond_t`: a condition variable over any wait policy, chosen by name, used with a
//! `spinlab_mutex_t` of any lock.
//!
//! Layout (C sees `SPINLAB_COND_SIZE` opaque bytes aligned to 8):
//!
//! | bytes  | field                                                                  |
//! |--------|------------------------------------------------------------------------|
//! | 0..8   | `ops`: the static table row of the policy; NULL: the default policy     |
//! | 8..24  | a `CondCore`: `spinlab::Condvar` and the count of threads in a wait     |
//! | 24..32 | unused                                                                 |
//!
//! All-zero bytes are a new condition variable of the default policy, with no `init` call:
//! `ops` NULL stands for the default's row, and an all-zero `CondCore` is a new one of any
//! policy. That is what `SPINLAB_COND_INITIALIZER` writes, as `PTHREAD_COND_INITIALIZER`
//! does for glibc, and what `destroy` leaves behind.

use crate::mutex::{parts as mutex_parts, spinlab_mutex_t};
use crate::names::{lookup, DEFAULT_COND};
use crate::status::{SPINLAB_INVALID, SPINLAB_OK, SPINLAB_TIMEDOUT};
use core::mem::MaybeUninit;
use core::ptr::{addr_of, addr_of_mut};
use libc::{c_char, c_int, clockid_t, timespec};
use spinlab_c_shared::clock::Abstime;
use spinlab_c_shared::condvar::{cond_ops, CondCore, CondOps};
use std::sync::OnceLock;

/// Bytes of a `spinlab_cond_t`.
pub const SPINLAB_COND_SIZE: usize = 32;
/// Alignment of a `spinlab_cond_t`.
pub const SPINLAB_COND_ALIGN: usize = 8;

/// A condition variable whose waiters wait with a spinlab wait policy (`"futex"`,
/// `"spin-park"`, `"pause"`, …), chosen by name when it is initialised. Works with a
/// `spinlab_mutex_t` of any lock; waiters of one condition variable may use different
/// mutexes. Opaque, in memory the caller owns; do not copy it. Initialise it with
/// `spinlab_cond_init`, or with `SPINLAB_COND_INITIALIZER` (or all-zero bytes) for a new one
/// of the default policy, `"spin-park"`.
///
/// A waiter counts itself in before its wait releases the mutex, so a signal or broadcast
/// made after a change to the condition under that mutex reaches every thread that waited
/// on the old condition. Waits may return spuriously (a signal returns every waiter still in
/// its spin phase): wait in a loop that checks the condition. Whether a waiter sleeps in the
/// kernel is its policy's: `futex` at once, `spin-park`, `spin-yield-park` and
/// `pause-yield-park` after a spin; the others never.
#[repr(C)]
pub struct spinlab_cond_t {
    opaque: [u64; 4],
}

#[repr(C)]
struct Repr {
    ops: *const CondOps,
    core: MaybeUninit<CondCore>,
}

const _: () = assert!(size_of::<spinlab_cond_t>() == SPINLAB_COND_SIZE);
const _: () = assert!(align_of::<spinlab_cond_t>() == SPINLAB_COND_ALIGN);
const _: () = assert!(size_of::<Repr>() <= SPINLAB_COND_SIZE && align_of::<Repr>() <= SPINLAB_COND_ALIGN);

/// The row of the default policy, which a condition variable whose `ops` is NULL uses.
fn default_ops() -> &'static CondOps {
    static DEFAULT: OnceLock<&'static CondOps> = OnceLock::new();
    DEFAULT.get_or_init(|| {
        // The tests check that the default is in the table and runs on every CPU.
        cond_ops().iter().find(|ops| ops.name.as_c_str() == DEFAULT_COND).expect("the default policy is registered")
    })
}

/// The policy of `cond`.
///
/// # Safety
/// `cond` points to an initialised condition variable (by `spinlab_cond_init`, by
/// `SPINLAB_COND_INITIALIZER`, or all-zero bytes).
#[inline(always)]
unsafe fn ops(cond: *const spinlab_cond_t) -> &'static CondOps {
    // SAFETY: the caller's contract: the memory holds a condition variable.
    let ops = unsafe { (*cond.cast::<Repr>()).ops };
    if ops.is_null() {
        default_ops()
    } else {
        // SAFETY: an `ops` that is not NULL was set by init to a row of a static table.
        unsafe { &*ops }
    }
}

/// # Safety
/// As [`ops`].
#[inline(always)]
unsafe fn parts(cond: *mut spinlab_cond_t) -> (&'static CondOps, *const CondCore) {
    // SAFETY: the caller's contract; `cond` points to a condition variable, so to its core.
    unsafe { (ops(cond), addr_of!((*cond.cast::<Repr>()).core).cast()) }
}

/// Initialises `cond`, with no waiter, over the wait policy called `policy` (NULL:
/// `"spin-park"`, the default of `spinlab::Condvar`), in place: nothing is allocated.
///
/// Returns `SPINLAB_OK`; `SPINLAB_UNKNOWN_NAME` if no policy has that name;
/// `SPINLAB_UNAVAILABLE` if this CPU cannot run it; `SPINLAB_INVALID` for a NULL `cond`. On
/// an error `cond` is left as it was.
///
/// # Safety
/// `cond` is NULL or points to writable memory for a `spinlab_cond_t` that no thread uses;
/// `policy` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn spinlab_cond_init(cond: *mut spinlab_cond_t, policy: *const c_char) -> c_int {
    if cond.is_null() {
        return SPINLAB_INVALID;
    }
    // SAFETY: the caller's contract on `policy`.
    let ops = match unsafe { lookup(cond_ops(), policy, DEFAULT_COND) } {
        Ok(ops) => ops,
        Err(status) => return status,
    };
    let repr = cond.cast::<Repr>();
    // SAFETY: `cond` is writable and aligned; all-zero bytes are a new `CondCore`.
    unsafe {
        addr_of_mut!((*repr).core).write(MaybeUninit::zeroed());
        addr_of_mut!((*repr).ops).write(ops);
    }
    SPINLAB_OK
}

/// Waits on `cond` with `mutex` released, until `clock` reaches `deadline` if given.
///
/// # Safety
/// `cond` and `mutex` are initialised; the calling thread holds `mutex`.
unsafe fn wait(cond: *mut spinlab_cond_t, mutex: *mut spinlab_mutex_t, deadline: Option<Abstime>) -> c_int {
    // SAFETY: the caller's contract.
    let ((ops, core), (lock, at)) = unsafe { (parts(cond), mutex_parts(mutex)) };
    let unlock = || {
        // SAFETY: the calling thread holds `mutex`.
        unsafe { (lock.unlock)(at) };
        Ok(())
    };
    let relock = || {
        // SAFETY: `unlock` released it; this thread takes it again.
        unsafe { (lock.lock)(at) };
        SPINLAB_OK
    };
    // SAFETY: `core` is initialised and used only with `ops`; this thread holds `mutex`.
    let waited = unsafe { CondCore::wait(core, ops, deadline.and_then(|d| d.deadline()), unlock, relock) };
    match (waited, deadline) {
        // The wait timed out on the monotonic clock; report it only if `clock` agrees (it
        // may have been stepped back), else return as from a spurious wake-up.
        (Ok(waited), Some(deadline)) if waited.timed_out && deadline.reached() => SPINLAB_TIMEDOUT,
        _ => SPINLAB_OK,
    }
}

/// Releases `mutex`, waits for a signal or broadcast on `cond` (or a spurious wake-up), and
/// takes `mutex` again as `spinlab_mutex_lock` does. Returns `SPINLAB_OK`, always with
/// `mutex` held.
///
/// The thread is counted as a waiter before `mutex` is released, so a signal made once the
/// wait has released `mutex` reaches it (see `spinlab_cond_t`). Not a pthread cancellation
/// point.
///
/// # Safety
/// `cond` and `mutex` are initialised; the calling thread holds `mutex`.
#[no_mangle]
pub unsafe extern "C" fn spinlab_cond_wait(cond: *mut spinlab_cond_t, mutex: *mut spinlab_mutex_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { wait(cond, mutex, None) }
}

/// As `spinlab_cond_wait`, giving up when `clock` (`CLOCK_REALTIME` or `CLOCK_MONOTONIC`)
/// reaches the absolute time `abstime`.
///
/// Returns `SPINLAB_OK` (woken, or spuriously); `SPINLAB_TIMEDOUT` once `clock` has reached
/// `abstime`, never before, also when that clock is stepped back during the wait (`mutex`
/// is held again either way); `SPINLAB_INVALID` for another clock, a NULL `abstime` or a
/// `tv_nsec` outside 0..999999999, checked before `mutex` is released (it stays held, and
/// nothing waits).
///
/// # Safety
/// As `spinlab_cond_wait`; `abstime` is NULL or points to a `struct timespec`.
#[no_mangle]
pub unsafe extern "C" fn spinlab_cond_clockwait(
    cond: *mut spinlab_cond_t,
    mutex: *mut spinlab_mutex_t,
    clock: clockid_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract on `abstime`.
    match (unsafe { abstime.as_ref() }).and_then(|at| Abstime::new(clock, at)) {
        // SAFETY: the caller's contract.
        Some(deadline) => unsafe { wait(cond, mutex, Some(deadline)) },
        None => SPINLAB_INVALID,
    }
}

/// `spinlab_cond_clockwait` on `CLOCK_REALTIME`, as `pthread_cond_timedwait` with a default
/// condition attribute: the same results and guarantees.
///
/// # Safety
/// As `spinlab_cond_clockwait`.
#[no_mangle]
pub unsafe extern "C" fn spinlab_cond_timedwait(
    cond: *mut spinlab_cond_t,
    mutex: *mut spinlab_mutex_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { spinlab_cond_clockwait(cond, mutex, libc::CLOCK_REALTIME, abstime) }
}

/// Wakes at least one thread waiting on `cond`, if any is (threads still in their spin phase
/// may all return). Returns `SPINLAB_OK`. Never waits; the calling thread need not hold the
/// mutex. With no thread inside a wait it reads one word and returns, so a change to the
/// condition must be made holding the mutex (see `spinlab_cond_t`).
///
/// # Safety
/// `cond` is initialised.
#[no_mangle]
pub unsafe extern "C" fn spinlab_cond_signal(cond: *mut spinlab_cond_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        let (ops, core) = parts(cond);
        CondCore::notify_one(core, ops);
    }
    SPINLAB_OK
}

/// Wakes every thread waiting on `cond`. Returns `SPINLAB_OK`. Never waits; as
/// `spinlab_cond_signal` otherwise.
///
/// # Safety
/// `cond` is initialised.
#[no_mangle]
pub unsafe extern "C" fn spinlab_cond_broadcast(cond: *mut spinlab_cond_t) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        let (ops, core) = parts(cond);
        CondCore::notify_all(core, ops);
    }
    SPINLAB_OK
}

/// Destroys `cond`, first waiting (asleep if need be) until the threads that were woken
/// have left their wait, so that the memory may be freed as soon as this returns, as POSIX
/// allows right after a broadcast. Returns `SPINLAB_OK`. A waiter that nobody woke keeps it
/// waiting, as with glibc's `pthread_cond_destroy`. Afterwards the memory holds all-zero
/// bytes, which is what `SPINLAB_COND_INITIALIZER` writes, so a destroyed condition variable
/// used again is a new one of the default policy (POSIX leaves that case undefined).
///
/// # Safety
/// `cond` is initialised, and no thread starts a wait on it any more.
#[no_mangle]
pub unsafe extern "C" fn spinlab_cond_destroy(cond: *mut spinlab_cond_t) -> c_int {
    // SAFETY: the caller's contract; once `destroy` returns no thread is inside a wait, so
    // the memory is this thread's to overwrite.
    unsafe {
        let (_, core) = parts(cond);
        CondCore::destroy(core);
        cond.write_bytes(0, 1);
    }
    SPINLAB_OK
}

/// The wait policy of `cond` (`"spin-park"` after a NULL name or `SPINLAB_COND_INITIALIZER`):
/// a static string, never NULL; do not free it.
///
/// # Safety
/// `cond` is initialised.
#[no_mangle]
pub unsafe extern "C" fn spinlab_cond_name(cond: *const spinlab_cond_t) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { ops(cond) }.name.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutex::{spinlab_mutex_destroy, spinlab_mutex_init, spinlab_mutex_lock, spinlab_mutex_unlock};
    use crate::status::SPINLAB_UNKNOWN_NAME;

    use core::cell::UnsafeCell;
    use core::ptr::null;
    use std::ffi::CStr;

    struct Shared {
        cond: UnsafeCell<spinlab_cond_t>,
        mutex: UnsafeCell<spinlab_mutex_t>,
        items: UnsafeCell<Vec<u32>>,
        /// How many times the consumer has gone into `spinlab_cond_wait`, counted under the
        /// mutex just before: a producer that sees it grow, holding the mutex, knows the
        /// consumer is inside the wait (the wait released the mutex), so only a signal can
        /// bring it out.
        waits: UnsafeCell<u32>,
    }

    impl Shared {
        fn new() -> Self {
            Shared {
                // SAFETY: all-zero bytes are a valid opaque array (and, for the C API, a
                // default condition variable and a default mutex).
                cond: UnsafeCell::new(unsafe { core::mem::zeroed() }),
                // SAFETY: as above.
                mutex: UnsafeCell::new(unsafe { core::mem::zeroed() }),
                items: UnsafeCell::new(Vec::new()),
                waits: UnsafeCell::new(0),
            }
        }

        /// Waits on the condition variable, counting the wait. The caller holds the mutex.
        ///
        /// # Safety
        /// Initialised objects; the calling thread holds the mutex.
        unsafe fn wait(&self) -> i32 {
            // SAFETY: `waits` is only touched under the mutex, which the caller holds.
            unsafe { *self.waits.get() += 1 };
            // SAFETY: forwarded from the caller.
            unsafe { spinlab_cond_wait(self.cond.get(), self.mutex.get()) }
        }

        /// Locks the mutex once the consumer has gone into its `waits`-th wait, pushes
        /// `item`, unlocks and signals.
        ///
        /// # Safety
        /// Initialised objects; the calling thread does not hold the mutex.
        unsafe fn push_to_a_waiting_consumer(&self, waits: u32, item: u32) {
            let (cond, mutex) = (self.cond.get(), self.mutex.get());
            // SAFETY: forwarded from the caller; `waits` and `items` only under the mutex.
            unsafe {
                spinlab_mutex_lock(mutex);
                while *self.waits.get() < waits {
                    spinlab_mutex_unlock(mutex);
                    std::thread::yield_now();
                    spinlab_mutex_lock(mutex);
                }
                (*self.items.get()).push(item);
                spinlab_mutex_unlock(mutex);
                spinlab_cond_signal(cond);
            }
        }
    }
    // SAFETY: the C objects synchronise themselves; `items` is touched only under `mutex`.
    unsafe impl Sync for Shared {}

    #[test]
    fn a_consumer_gets_every_item_in_order_with_any_policy() {
        for ops in cond_ops().iter().filter(|ops| ops.availability.is_ok()) {
            let shared = Shared::new();
            let shared = &shared;
            // SAFETY: the objects are zeroed memory of the right size, ours to initialise.
            unsafe {
                assert_eq!(spinlab_cond_init(shared.cond.get(), ops.name.as_ptr()), SPINLAB_OK);
                assert_eq!(spinlab_mutex_init(shared.mutex.get(), c"ticket:spin-park".as_ptr()), SPINLAB_OK);
            }
            let consumed = std::thread::scope(|s| {
                let consumer = s.spawn(|| {
                    let mutex = shared.mutex.get();
                    let mut consumed = Vec::new();
                    // SAFETY: an initialised mutex.
                    unsafe { spinlab_mutex_lock(mutex) };
                    while consumed.last() != Some(&99) {
                        // SAFETY: `items` is only touched under the mutex, which we hold.
                        let items = unsafe { &mut *shared.items.get() };
                        if items.is_empty() {
                            // SAFETY: an initialised condvar, and the mutex we hold.
                            unsafe { shared.wait() };
                        } else {
                            consumed.append(items);
                        }
                    }
                    // SAFETY: the mutex we hold.
                    unsafe { spinlab_mutex_unlock(mutex) };
                    consumed
                });
                // Each item goes to a consumer inside its wait, so all 100 come through
                // signals: a lost one leaves the consumer asleep and the test hangs.
                for item in 0..100 {
                    // SAFETY: initialised objects; we do not hold the mutex.
                    unsafe { shared.push_to_a_waiting_consumer(item + 1, item) };
                }
                consumer.join().unwrap()
            });
            assert_eq!(consumed, (0..100).collect::<Vec<_>>(), "{}", ops.policy());
            // SAFETY: initialised objects that no thread uses any more.
            unsafe {
                assert_eq!(spinlab_cond_destroy(shared.cond.get()), SPINLAB_OK);
                assert_eq!(spinlab_mutex_destroy(shared.mutex.get()), SPINLAB_OK);
            }
        }
    }

    #[test]
    fn timed_waits_check_arguments_before_releasing_and_time_out_holding_the_mutex() {
        let mut cond = MaybeUninit::<spinlab_cond_t>::uninit();
        let mut mutex = MaybeUninit::<spinlab_mutex_t>::uninit();
        let (cond, mutex) = (cond.as_mut_ptr(), mutex.as_mut_ptr());
        let past = timespec { tv_sec: 1, tv_nsec: 0 };
        let bad = timespec { tv_sec: 1, tv_nsec: -1 };
        // SAFETY: initialised objects; the mutex is held around each wait.
        unsafe {
            assert_eq!(spinlab_cond_init(cond, c"no-such-policy".as_ptr()), SPINLAB_UNKNOWN_NAME);
            assert_eq!(spinlab_cond_init(cond, null()), SPINLAB_OK);
            assert_eq!(spinlab_mutex_init(mutex, null()), SPINLAB_OK);
            spinlab_mutex_lock(mutex);
            assert_eq!(spinlab_cond_timedwait(cond, mutex, &bad), SPINLAB_INVALID);
            assert_eq!(spinlab_cond_clockwait(cond, mutex, libc::CLOCK_BOOTTIME, &past), SPINLAB_INVALID);
            assert_eq!(spinlab_cond_timedwait(cond, mutex, &past), SPINLAB_TIMEDOUT);
            assert_eq!(spinlab_cond_clockwait(cond, mutex, libc::CLOCK_MONOTONIC, &past), SPINLAB_TIMEDOUT);
            assert_eq!(crate::mutex::spinlab_mutex_trylock(mutex), crate::status::SPINLAB_BUSY, "held again");
            spinlab_mutex_unlock(mutex);
            assert_eq!(spinlab_cond_destroy(cond), SPINLAB_OK);
            assert_eq!(spinlab_mutex_destroy(mutex), SPINLAB_OK);
        }
    }

    #[test]
    fn every_policy_is_named_back_and_all_zero_bytes_are_the_default() {
        let mut cond = MaybeUninit::<spinlab_cond_t>::uninit();
        let cond = cond.as_mut_ptr();
        // SAFETY: initialised condition variables; static names.
        unsafe {
            for ops in cond_ops().iter().filter(|ops| ops.availability.is_ok()) {
                assert_eq!(spinlab_cond_init(cond, ops.name.as_ptr()), SPINLAB_OK);
                assert_eq!(CStr::from_ptr(spinlab_cond_name(cond)), ops.name.as_c_str());
                assert_eq!(spinlab_cond_destroy(cond), SPINLAB_OK);
                assert_eq!((*cond).opaque, [0; 4], "destroy leaves the static initialiser's bytes");
                assert_eq!(CStr::from_ptr(spinlab_cond_name(cond)), DEFAULT_COND);
            }
        }
        assert!(default_ops().availability.is_ok());
    }

    #[test]
    fn an_all_zero_condition_variable_times_out_and_wakes_a_waiter() {
        let shared = Shared::new();
        let (cond, mutex) = (shared.cond.get(), shared.mutex.get());
        let past = timespec { tv_sec: 1, tv_nsec: 0 };
        // SAFETY: all-zero objects are initialised ones.
        unsafe {
            spinlab_mutex_lock(mutex);
            assert_eq!(spinlab_cond_timedwait(cond, mutex, &past), SPINLAB_TIMEDOUT);
            spinlab_mutex_unlock(mutex);
        }
        let shared = &shared;
        std::thread::scope(|s| {
            // SAFETY: all-zero objects are initialised ones; `items` only under the mutex.
            let waiter = s.spawn(|| unsafe {
                let mutex = shared.mutex.get();
                spinlab_mutex_lock(mutex);
                while (*shared.items.get()).is_empty() {
                    assert_eq!(shared.wait(), SPINLAB_OK);
                }
                spinlab_mutex_unlock(mutex);
            });
            // SAFETY: as above; we do not hold the mutex.
            unsafe { shared.push_to_a_waiting_consumer(1, 1) };
            waiter.join().unwrap();
        });
        // SAFETY: no thread uses them any more.
        unsafe {
            assert_eq!(CStr::from_ptr(spinlab_cond_name(cond)), DEFAULT_COND);
            assert_eq!(spinlab_cond_destroy(cond), SPINLAB_OK);
            assert_eq!(spinlab_mutex_destroy(mutex), SPINLAB_OK);
        }
    }
}
