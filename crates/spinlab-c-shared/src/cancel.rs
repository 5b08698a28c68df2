//! Waits that `pthread_cancel` can end, as glibc's condition-variable waits are.
//!
//! glibc makes a blocking system call a cancellation point by switching the thread to
//! asynchronous cancellation around it: a cancellation request that arrives while the thread
//! sleeps then acts at once, from the signal glibc sends, instead of at the next
//! cancellation point the thread happens to reach. [`Cancellable`] does the same around a
//! policy's sleep, and checks for a pending request every [`CHECK_EVERY`] iterations of its
//! spin phase (a pure spin policy never sleeps, and its waits would otherwise never end).
//!
//! Acting on a request unwinds the thread (glibc's forced unwinding) through the frames of the
//! wait, so nothing in them may need dropping (Rust only allows a forced unwind through frames
//! without pending destructors), and whatever the wait must undo is undone by a handler the
//! caller registers with glibc's [`Cleanup`] buffer, which glibc runs as the unwinding passes
//! the frame that holds it: the preload library re-acquires the mutex there, as glibc's own
//! wait does before the program's cleanup handlers run.

use core::marker::PhantomData;
use core::sync::atomic::AtomicU32;
use libc::{c_int, c_void};
use spinlab::sys::futex::FutexWait;
use spinlab::wait::{Episode, Unavailable, Wait};
use std::time::Instant;

/// glibc's `PTHREAD_CANCEL_ASYNCHRONOUS` (<pthread.h>; the libc crate does not have it).
const PTHREAD_CANCEL_ASYNCHRONOUS: c_int = 1;

/// Spin iterations between two checks for a pending cancellation request.
pub const CHECK_EVERY: u32 = 64;

extern "C-unwind" {
    fn pthread_testcancel();
}

extern "C" {
    fn pthread_setcanceltype(kind: c_int, old: *mut c_int) -> c_int;
    fn _pthread_cleanup_push(buffer: *mut Cleanup, routine: extern "C" fn(*mut c_void), arg: *mut c_void);
    fn _pthread_cleanup_pop(buffer: *mut Cleanup, execute: c_int);
}

/// Wait policy `W` with its waits made cancellation points (see the module documentation).
/// Same name, phases and wake-ups as `W`: a notifier using `W` wakes its waiters.
pub struct Cancellable<W>(PhantomData<W>);

impl<W: Wait> Wait for Cancellable<W> {
    const NAME: &'static str = W::NAME;
    const MAY_SLEEP: bool = W::MAY_SLEEP;

    fn availability() -> Result<(), Unavailable> {
        W::availability()
    }

    #[inline]
    fn relax(word: &AtomicU32, current: u32, episode: &mut Episode) -> bool {
        if episode.iterations() % CHECK_EVERY == CHECK_EVERY - 1 {
            // SAFETY: always callable; acting on a request unwinds through frames that hold
            // nothing to drop (the module documentation).
            unsafe { pthread_testcancel() };
        }
        W::relax(word, current, episode)
    }

    #[inline]
    fn sleep(word: &AtomicU32, current: u32, deadline: Option<Instant>) -> FutexWait {
        let mut deferred = 0;
        // SAFETY: switching the calling thread's cancellation type; a request already pending
        // acts here, at the start of the sleep.
        unsafe { pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &mut deferred) };
        let slept = W::sleep(word, current, deadline);
        // SAFETY: as above, restoring the type the thread had.
        unsafe { pthread_setcanceltype(deferred, &mut deferred) };
        slept
    }

    #[inline]
    fn wake_one(word: &AtomicU32) -> usize {
        W::wake_one(word)
    }

    #[inline]
    fn wake_all(word: &AtomicU32) {
        W::wake_all(word)
    }
}

/// glibc's `struct _pthread_cleanup_buffer`: a cleanup handler registered for the frame that
/// holds the buffer, which glibc runs if the thread is cancelled (or exits) while the buffer
/// is registered.
#[repr(C)]
pub struct Cleanup {
    routine: Option<extern "C" fn(*mut c_void)>,
    arg: *mut c_void,
    cancel_type: c_int,
    previous: *mut Cleanup,
}

impl Cleanup {
    /// Runs `body` with `routine(arg)` registered as the calling thread's innermost cleanup
    /// handler; it runs if the thread is cancelled (or calls `pthread_exit`) inside `body`,
    /// and not otherwise.
    ///
    /// # Safety
    /// `routine(arg)` may run while `body` is unwound, before this frame is: `arg` must stay
    /// valid that long. `body` holds nothing that needs dropping while a cancellation point
    /// inside it may act.
    #[inline]
    pub unsafe fn around<T>(routine: extern "C" fn(*mut c_void), arg: *mut c_void, body: impl FnOnce() -> T) -> T {
        let mut buffer =
            Cleanup { routine: None, arg: core::ptr::null_mut(), cancel_type: 0, previous: core::ptr::null_mut() };
        // SAFETY: the buffer lives in this frame until the pop below, which glibc requires.
        unsafe { _pthread_cleanup_push(&mut buffer, routine, arg) };
        let value = body();
        // SAFETY: the buffer pushed above, innermost; 0: do not run the routine.
        unsafe { _pthread_cleanup_pop(&mut buffer, 0) };
        value
    }
}
