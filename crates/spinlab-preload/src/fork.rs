//! `fork()` in a multithreaded program. The child has one thread, the one that forked, but
//! every replaced mutex is copied in the state the parent's threads left it in: a queue lock
//! may have waiters queued that exist only in the parent, a gated lock may have a sleeper
//! count, a waking flag or a hand-off claim of such a thread. An unlock in the child would then
//! hand the lock to a thread that will never run, and the child would hang at its next lock
//! (glibc's own mutex is one word whose waiters only ever add a "contended" mark, so its child
//! goes on; `pthread_atfork` handlers rely on that).
//!
//! So each replaced mutex carries the fork generation it was last made sound in, and who
//! holds it:
//!
//! - [`FORKS`] counts the forks this process descends from: a child handler, registered
//!   before any other (see [`__register_atfork`]), adds one in every child.
//! - A mutex whose generation is older than [`FORKS`] is rebuilt by its first user in the
//!   child ([`make_current`]), under one process-wide flag: the lock's bytes are reset to a new
//!   lock, and it is taken again at once if a thread held it at the fork. The forking
//!   thread's holds stay its own (it may release them, as its atfork child handlers do); a
//!   hold of a thread the child does not have stays held for ever, as with glibc; waiters and
//!   claims of such threads are dropped.
//! - The holder is known by its thread pointer ([`me`]), which the forking thread keeps in
//!   the child (its thread id changes), written after each acquisition and cleared before each
//!   release. A thread that has acquired the lock but not yet written its pointer when the
//!   parent forks counts as no holder: in glibc's terms, the release before its acquisition
//!   had not reached it.
//!
//! Bytes 20..32 of a replaced `pthread_mutex_t`, unused by the lock, hold the generation and
//! the holder (see `glibc`). The cost on every operation is one load and compare, and one
//! store per acquisition and per release, on the lock's own cache line.
//!
//! A replaced rwlock has the same trouble: a writer that waited in the parent stays counted in
//! the child, and a writer-preferring lock then keeps every reader out for ever
//! (`p_fork_threads.c` queues such writers across each fork). Its holds need no names: a rwlock's state counts its readers inside and marks its writer, and
//! only its waiters are the parent's alone. So a rwlock carries a generation too (bytes
//! 40..44), and its first user in a child makes it forget its waiters
//! ([`make_rwlock_current`], [`RawRwLockOps::forget_waiters`]): what was held stays held, by
//! whichever thread held it, and the forking thread may release its own holds. The cost is
//! one load and compare per operation.

use crate::glibc::{self, mutex_fork_generation, mutex_holder, rwlock_fork_generation, MUTEX_ROOM};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering::*};
use libc::{c_int, c_void, pthread_mutex_t, pthread_rwlock_t};
use spinlab_registry::{RawLockOps, RawRwLockOps};
use std::sync::Once;

/// Forks this process descends from; a replaced mutex made sound in an older generation is
/// rebuilt on first use.
static FORKS: AtomicU32 = AtomicU32::new(0);

/// Held while a thread rebuilds a mutex of an older generation (rare: once per mutex per
/// fork), so that two threads of a child never rebuild the same one at once.
static REBUILDING: AtomicBool = AtomicBool::new(false);

/// The calling thread's identity, which survives `fork()` for the forking thread: its thread
/// pointer (the TCB address, which the child's only thread keeps; its thread id changes).
#[inline(always)]
pub(crate) fn me() -> usize {
    let pointer: usize;
    // SAFETY: reads the thread pointer; no memory is written, no flags change.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        // The x86_64 TLS ABI keeps the TCB's own address in its first word, at %fs:0.
        core::arch::asm!("mov {}, fs:0", out(reg) pointer, options(nostack, readonly, preserves_flags));
    }
    // SAFETY: as above.
    #[cfg(target_arch = "aarch64")]
    unsafe {
        core::arch::asm!("mrs {}, tpidr_el0", out(reg) pointer, options(nostack, nomem, preserves_flags));
    }
    pointer
}

/// The forks this process descends from: a word stamped with an older count was left by a
/// process this one was forked from (a `call_once` flag's running mark, say).
#[inline]
pub(crate) fn generation() -> u32 {
    FORKS.load(Relaxed)
}

/// Makes `mutex`, a replaced mutex, sound for this process: rebuilt if a fork has happened
/// since it was last made so (see the module documentation).
///
/// # Safety
/// `mutex` points to a replaced `pthread_mutex_t` whose lock is `ops`.
#[inline(always)]
pub(crate) unsafe fn make_current(ops: &RawLockOps, mutex: *mut pthread_mutex_t) {
    // SAFETY: the caller's contract.
    let generation = unsafe { mutex_fork_generation(mutex) };
    // SAFETY: the caller's contract; `once_per_fork` runs this alone (see there).
    when_forked(generation, || unsafe {
        let at = mutex.cast::<u8>();
        let held = mutex_holder(mutex).load(Relaxed) != 0;
        // The old lock is not dropped: what it points to (queue nodes) may belong to
        // threads the child does not have, and is leaked instead.
        at.write_bytes(0, MUTEX_ROOM.size());
        (ops.init)(at);
        if held {
            let taken = (ops.try_lock)(at);
            debug_assert!(taken, "a new lock is free");
        }
    });
}

/// Makes `rwlock`, a replaced rwlock, sound for this process: if a fork has happened since it
/// was last made so, its waiters, threads of the parent, are forgotten, and what was held
/// stays held (see the module documentation).
///
/// # Safety
/// `rwlock` points to a replaced `pthread_rwlock_t` whose lock is `ops`.
#[inline(always)]
pub(crate) unsafe fn make_rwlock_current(ops: &RawRwLockOps, rwlock: *mut pthread_rwlock_t) {
    // SAFETY: the caller's contract.
    let generation = unsafe { rwlock_fork_generation(rwlock) };
    when_forked(generation, || {
        // The configuration accepts only rwlocks that can forget their waiters.
        if let Some(forget_waiters) = ops.forget_waiters {
            // SAFETY: the caller's contract; `once_per_fork` runs this alone (see there).
            unsafe { forget_waiters(rwlock.cast()) };
        }
    });
}

/// Runs `rewrite` if `generation`, an object's fork generation word, is older than [`FORKS`],
/// and then brings the word up to date.
#[inline(always)]
fn when_forked(generation: &AtomicU32, rewrite: impl FnOnce()) {
    // Acquire: a rebuild's writes to the object happen before any use that sees its generation.
    if generation.load(Acquire) != FORKS.load(Relaxed) {
        once_per_fork(generation, rewrite);
    }
}

/// [`when_forked`]'s rare path, under one process-wide flag: every other user of the object
/// in the child waits for its generation, which is stored last, so the object's bytes are
/// `rewrite`'s alone, and only the first user of the object rewrites it.
#[cold]
#[inline(never)]
fn once_per_fork(generation: &AtomicU32, rewrite: impl FnOnce()) {
    while REBUILDING.compare_exchange_weak(false, true, Acquire, Relaxed).is_err() {
        std::thread::yield_now();
    }
    let forks = FORKS.load(Relaxed);
    if generation.load(Relaxed) != forks {
        rewrite();
        generation.store(forks, Release);
    }
    REBUILDING.store(false, Release);
}

/// Stamps a mutex just initialised with the current generation.
///
/// # Safety
/// `mutex` points to a replaced `pthread_mutex_t` just initialised by this thread.
pub(crate) unsafe fn stamp(mutex: *mut pthread_mutex_t) {
    // SAFETY: the caller's contract.
    unsafe {
        mutex_fork_generation(mutex).store(FORKS.load(Relaxed), Relaxed);
        mutex_holder(mutex).store(0, Relaxed);
    }
}

/// Stamps a rwlock just initialised with the current generation.
///
/// # Safety
/// `rwlock` points to a replaced `pthread_rwlock_t` just initialised by this thread.
pub(crate) unsafe fn stamp_rwlock(rwlock: *mut pthread_rwlock_t) {
    // SAFETY: the caller's contract.
    unsafe { rwlock_fork_generation(rwlock) }.store(FORKS.load(Relaxed), Relaxed);
}

/// The pid of the process this library's state belongs to: set at start-up and in each
/// forked child. A child made by `vfork` or `clone` shares the parent's memory without
/// running fork handlers, and sees another pid here.
static OWN_PID: AtomicI32 = AtomicI32::new(0);

/// Whether the calling process owns this library's memory (not a `vfork` child borrowing its
/// parent's): only such a process may allocate or write its profile.
pub(crate) fn own_process() -> bool {
    // SAFETY: getpid has no preconditions.
    OWN_PID.load(Relaxed) == unsafe { libc::getpid() }
}

/// Runs first among the child's fork handlers.
extern "C" fn in_child() {
    // SAFETY: getpid has no preconditions.
    OWN_PID.store(unsafe { libc::getpid() }, Relaxed);
    FORKS.fetch_add(1, Relaxed);
    // A thread of the parent may have been rebuilding a mutex; it does not exist here.
    REBUILDING.store(false, Relaxed);
    crate::stats::forget_all();
}

type RegisterAtfork = unsafe extern "C" fn(
    Option<extern "C" fn()>,
    Option<extern "C" fn()>,
    Option<extern "C" fn()>,
    *mut c_void,
) -> c_int;

/// glibc's `__register_atfork`, found once.
fn real_register() -> RegisterAtfork {
    static REAL: std::sync::OnceLock<RegisterAtfork> = std::sync::OnceLock::new();
    *REAL.get_or_init(|| match glibc::next(c"__register_atfork", None) {
        // SAFETY: glibc's function of that name has this signature (it is what
        // `pthread_atfork` calls, with the caller's DSO handle).
        Ok(found) => unsafe { core::mem::transmute::<*mut c_void, RegisterAtfork>(found) },
        Err(missing) => crate::exit_with(&format!("glibc has no {missing}, which this library must call")),
    })
}

/// Registers [`in_child`] once, before any handler of the program or its libraries: glibc
/// runs child handlers in the order they were registered, and a handler that unlocks a mutex
/// held across the fork (the common `pthread_atfork` pattern) must find [`FORKS`] already
/// advanced.
pub(crate) fn register_first() {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        // SAFETY: getpid has no preconditions.
        OWN_PID.store(unsafe { libc::getpid() }, Relaxed);
        // SAFETY: plain `extern "C"` handlers without arguments; a null DSO handle means the
        // handler is never unregistered, and this library is never unloaded.
        unsafe { real_register()(None, None, Some(in_child), core::ptr::null_mut()) };
    });
}

/// Replaces glibc's (what `pthread_atfork` calls): registers this library's own child
/// handler first. Libraries loaded before this one run their constructors, which may call
/// `pthread_atfork`, before this library's constructor does.
///
/// # Safety
/// As glibc's `__register_atfork`.
#[no_mangle]
pub unsafe extern "C" fn __register_atfork(
    prepare: Option<extern "C" fn()>,
    parent: Option<extern "C" fn()>,
    child: Option<extern "C" fn()>,
    dso_handle: *mut c_void,
) -> c_int {
    register_first();
    // SAFETY: the caller's contract.
    unsafe { real_register()(prepare, parent, child, dso_handle) }
}
