//! `spinlab_barrier_t`: any barrier of the registry, chosen by name.
//!
//! The registry builds barriers only on the heap (spinlab's keeps its arrival counter and its
//! release word on lines of their own, 256 bytes aligned to 128, more than a C object should
//! impose on the structs that embed it), so `init` allocates it and `destroy` frees it; a
//! wait allocates nothing.
//!
//! POSIX lets any thread whose wait has returned destroy the barrier, typically the serial
//! thread, and free its memory, while the other threads of that phase may still be inside
//! `wait` (a waiter of spinlab's barrier reads its release word again after the leader has
//! returned). So each wait counts itself in `inside` for as long as it touches the barrier,
//! and `destroy` frees nothing until the count is zero, as glibc's `pthread_barrier_destroy`
//! and the preload library's do. The count lives in the C object, next to the pointer every
//! wait reads anyway: the cost is two more atomic read-modify-writes per wait on that line.
//!
//! Layout (C sees `SPINLAB_BARRIER_SIZE` opaque bytes aligned to 8):
//!
//! | bytes  | field                                                              |
//! |--------|--------------------------------------------------------------------|
//! | 0..8   | `kind`: the static table row of the barrier (NULL once destroyed)  |
//! | 8..24  | the barrier, a `Box<dyn DynBarrier>` as a raw pointer              |
//! | 24..28 | `inside`: threads inside `spinlab_barrier_wait`, for `destroy`     |
//! | 28..32 | unused                                                             |

use crate::names::{barrier_kinds, lookup, BarrierKind, DEFAULT_BARRIER};
use crate::status::{SPINLAB_BARRIER_SERIAL_THREAD, SPINLAB_BUSY, SPINLAB_INVALID, SPINLAB_OK};
use core::mem::offset_of;
use core::ptr::{addr_of_mut, null};
use core::sync::atomic::AtomicU32;
use libc::{c_char, c_int, c_uint};
use spinlab_c_shared::inside;
use spinlab_registry::DynBarrier;
use std::num::NonZeroU32;

/// Bytes of a `spinlab_barrier_t`.
pub const SPINLAB_BARRIER_SIZE: usize = 32;
/// Alignment of a `spinlab_barrier_t`.
pub const SPINLAB_BARRIER_ALIGN: usize = 8;

/// A barrier for a fixed number of threads: spinlab's sense-reversing barrier over any wait
/// policy (`"barrier:futex"`, `"barrier:pause"`, …) or a reference (`"pthread"`, `"std"`),
/// chosen by name when it is initialised. Opaque, in memory the caller owns; do not copy
/// it. It has no static initialiser: `spinlab_barrier_init` allocates the barrier, and
/// `spinlab_barrier_destroy` frees it. Whether a waiter sleeps in the kernel is its policy's
/// (as for `spinlab_cond_t`); the references sleep.
#[repr(C)]
pub struct spinlab_barrier_t {
    opaque: [u64; 4],
}

#[repr(C)]
struct Repr {
    kind: *const BarrierKind,
    barrier: *mut dyn DynBarrier,
    inside: AtomicU32,
}

const _: () = assert!(size_of::<spinlab_barrier_t>() == SPINLAB_BARRIER_SIZE);
const _: () = assert!(align_of::<spinlab_barrier_t>() == SPINLAB_BARRIER_ALIGN);
const _: () = assert!(size_of::<Repr>() <= SPINLAB_BARRIER_SIZE && align_of::<Repr>() <= SPINLAB_BARRIER_ALIGN);
const _: () = assert!(offset_of!(Repr, inside) == 24, "the layout table above");

/// Initialises `barrier` as the barrier called `name` (NULL: `"barrier:spin-park"`) for
/// `count` threads per phase, allocating it; the waits allocate nothing.
///
/// Returns `SPINLAB_OK`; `SPINLAB_UNKNOWN_NAME` if no barrier has that name;
/// `SPINLAB_UNAVAILABLE` if this CPU cannot run its policy; `SPINLAB_INVALID` for a NULL
/// `barrier` or a `count` of 0 or above `INT_MAX`. On an error `barrier` is left as it was
/// and nothing is allocated.
///
/// # Safety
/// `barrier` is NULL or points to writable memory for a `spinlab_barrier_t` that no thread
/// uses; `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn spinlab_barrier_init(
    barrier: *mut spinlab_barrier_t,
    name: *const c_char,
    count: c_uint,
) -> c_int {
    // glibc's pthread_barrier_init (the `pthread` reference) takes at most INT_MAX.
    let Some(parties) = NonZeroU32::new(count).filter(|n| n.get() <= i32::MAX as u32) else {
        return SPINLAB_INVALID;
    };
    if barrier.is_null() {
        return SPINLAB_INVALID;
    }
    // SAFETY: the caller's contract on `name`.
    let kind = match unsafe { lookup(barrier_kinds(), name, DEFAULT_BARRIER) } {
        Ok(kind) => kind,
        Err(status) => return status,
    };
    let built = match kind.entry.build(parties) {
        Ok(built) => built,
        Err(_) => unreachable!("lookup checked that this CPU can run {}", kind.entry.name),
    };
    let repr = barrier.cast::<Repr>();
    // SAFETY: `barrier` is writable and aligned (the caller's contract).
    unsafe {
        addr_of_mut!((*repr).barrier).write(Box::into_raw(built));
        addr_of_mut!((*repr).inside).write(AtomicU32::new(0));
        addr_of_mut!((*repr).kind).write(kind);
    }
    SPINLAB_OK
}

/// Waits until `count` threads (the number given to init) have arrived in this phase, then
/// returns in all of them: `SPINLAB_BARRIER_SERIAL_THREAD` in exactly one and `SPINLAB_OK`
/// in the others. No thread leaves a phase before every thread of it has arrived, and what
/// each wrote before its wait is visible to all of them after it.
/// A thread that returns may wait again at once, for the next phase. Once a thread's wait
/// has returned, that thread may destroy the barrier and free its memory, even while the
/// others of its phase are still returning (see `spinlab_barrier_destroy`).
///
/// # Safety
/// `barrier` is initialised.
#[no_mangle]
pub unsafe extern "C" fn spinlab_barrier_wait(barrier: *mut spinlab_barrier_t) -> c_int {
    let repr = barrier.cast::<Repr>();
    // SAFETY: the caller's contract: an initialised object, which `destroy` keeps alive while
    // `inside` counts this thread.
    let inside = unsafe { &(*repr).inside };
    // SAFETY: init stored a live box here, and `destroy` frees it only once `inside` is zero.
    // Nothing after this may touch `barrier`: it may be freed at once.
    let leader = inside::counted(inside, || unsafe { (*(*repr).barrier).wait() });
    if leader {
        SPINLAB_BARRIER_SERIAL_THREAD
    } else {
        SPINLAB_OK
    }
}

/// Destroys `barrier` and frees what init allocated, once the threads of the last phase have
/// left `spinlab_barrier_wait`: as with `pthread_barrier_destroy`, the thread that got
/// `SPINLAB_BARRIER_SERIAL_THREAD` (or any other whose wait returned) may destroy the barrier
/// and free its memory while the others are still returning; destroy yields its CPU until
/// they have left.
///
/// Returns `SPINLAB_OK`, or `SPINLAB_BUSY` if a thread is still inside after a million
/// yields (it waits for a phase that cannot complete); the barrier is then left as it was,
/// still initialised. After `SPINLAB_OK`, only `spinlab_barrier_init` may use the memory;
/// any other call on it crashes.
///
/// # Safety
/// `barrier` is initialised, and no thread waits on it for a phase still to come.
#[no_mangle]
pub unsafe extern "C" fn spinlab_barrier_destroy(barrier: *mut spinlab_barrier_t) -> c_int {
    let repr = barrier.cast::<Repr>();
    // SAFETY: the caller's contract: an initialised object.
    let inside = unsafe { &(*repr).inside };
    if !inside::all_left(inside) {
        return SPINLAB_BUSY;
    }
    // SAFETY: the caller's contract: init stored a box from `Box::into_raw`, not freed since,
    // and no thread is inside a wait on it.
    unsafe {
        drop(Box::from_raw((*repr).barrier));
        addr_of_mut!((*repr).kind).write(null());
    }
    SPINLAB_OK
}

/// The registry name of `barrier`: a static string, never NULL; do not free it.
///
/// # Safety
/// `barrier` is initialised.
#[no_mangle]
pub unsafe extern "C" fn spinlab_barrier_name(barrier: *const spinlab_barrier_t) -> *const c_char {
    // SAFETY: the caller's contract: `kind` points to a row of a static table.
    unsafe { (*(*barrier.cast::<Repr>()).kind).name.as_ptr() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{SPINLAB_UNAVAILABLE, SPINLAB_UNKNOWN_NAME};
    use core::mem::MaybeUninit;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    struct Shared(core::cell::UnsafeCell<spinlab_barrier_t>);
    // SAFETY: a barrier is made to be shared.
    unsafe impl Sync for Shared {}

    #[test]
    fn every_available_barrier_has_one_leader_per_phase() {
        for kind in barrier_kinds().iter().filter(|k| k.entry.availability.is_ok()) {
            // SAFETY: all-zero bytes are a valid opaque array; init writes the barrier.
            let shared = Shared(core::cell::UnsafeCell::new(unsafe { core::mem::zeroed() }));
            let shared = &shared;
            // SAFETY: fresh memory and a static name.
            assert_eq!(unsafe { spinlab_barrier_init(shared.0.get(), kind.name.as_ptr(), 2) }, SPINLAB_OK);
            let leaders = AtomicUsize::new(0);
            std::thread::scope(|s| {
                for _ in 0..2 {
                    s.spawn(|| {
                        for _ in 0..50 {
                            // SAFETY: an initialised barrier for two threads.
                            match unsafe { spinlab_barrier_wait(shared.0.get()) } {
                                SPINLAB_BARRIER_SERIAL_THREAD => drop(leaders.fetch_add(1, Relaxed)),
                                status => assert_eq!(status, SPINLAB_OK),
                            }
                        }
                    });
                }
            });
            assert_eq!(leaders.into_inner(), 50, "{}", kind.entry.name);
            // SAFETY: initialised, nobody waits.
            assert_eq!(unsafe { spinlab_barrier_destroy(shared.0.get()) }, SPINLAB_OK);
        }
    }

    #[test]
    fn destroy_answers_busy_while_a_thread_waits_for_a_phase_that_cannot_complete() {
        // SAFETY: all-zero bytes are a valid opaque array; init writes the barrier.
        let shared = Shared(core::cell::UnsafeCell::new(unsafe { core::mem::zeroed() }));
        let shared = &shared;
        // SAFETY: fresh memory and a static name.
        assert_eq!(unsafe { spinlab_barrier_init(shared.0.get(), c"barrier:futex".as_ptr(), 2) }, SPINLAB_OK);
        std::thread::scope(|s| {
            // SAFETY: an initialised barrier for two threads.
            let waiter = s.spawn(|| unsafe { spinlab_barrier_wait(shared.0.get()) });
            // SAFETY: reads the count the waiter has raised or is about to raise.
            while unsafe { &(*shared.0.get().cast::<Repr>()).inside }.load(core::sync::atomic::Ordering::Acquire) == 0 {
                std::thread::yield_now();
            }
            // SAFETY: initialised; the waiter's phase cannot complete without this thread,
            // which is the error destroy reports instead of freeing the barrier under it.
            assert_eq!(unsafe { spinlab_barrier_destroy(shared.0.get()) }, SPINLAB_BUSY);
            // SAFETY: the barrier is still initialised: this completes the waiter's phase.
            let mine = unsafe { spinlab_barrier_wait(shared.0.get()) };
            let statuses = [mine, waiter.join().unwrap()];
            assert!(statuses.contains(&SPINLAB_BARRIER_SERIAL_THREAD) && statuses.contains(&SPINLAB_OK));
        });
        // SAFETY: initialised, nobody waits.
        assert_eq!(unsafe { spinlab_barrier_destroy(shared.0.get()) }, SPINLAB_OK);
    }

    #[test]
    fn init_refuses_bad_counts_and_names() {
        let mut barrier = MaybeUninit::<spinlab_barrier_t>::uninit();
        let b = barrier.as_mut_ptr();
        // SAFETY: fresh memory and static names.
        unsafe {
            assert_eq!(spinlab_barrier_init(b, null(), 0), SPINLAB_INVALID);
            assert_eq!(spinlab_barrier_init(b, null(), i32::MAX as c_uint + 1), SPINLAB_INVALID);
            assert_eq!(spinlab_barrier_init(core::ptr::null_mut(), null(), 1), SPINLAB_INVALID);
            assert_eq!(spinlab_barrier_init(b, c"barrier:nap".as_ptr(), 1), SPINLAB_UNKNOWN_NAME);
            for kind in barrier_kinds().iter().filter(|k| k.entry.availability.is_err()) {
                assert_eq!(spinlab_barrier_init(b, kind.name.as_ptr(), 1), SPINLAB_UNAVAILABLE);
            }
            assert_eq!(spinlab_barrier_init(b, null(), 1), SPINLAB_OK);
            assert_eq!(std::ffi::CStr::from_ptr(spinlab_barrier_name(b)), DEFAULT_BARRIER);
            assert_eq!(spinlab_barrier_wait(b), SPINLAB_BARRIER_SERIAL_THREAD, "alone, every wait leads");
            assert_eq!(spinlab_barrier_destroy(b), SPINLAB_OK);
        }
    }
}
