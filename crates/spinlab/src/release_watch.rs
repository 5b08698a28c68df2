//! Test support: frees a lock (takes its page away) at the very instruction with which an
//! unlock releases it, so that any later read or write by that unlock kills the test binary
//! with SIGSEGV. POSIX lets a mutex or a rwlock be destroyed and freed as soon as it is
//! unlocked and unused, while the releasing thread is still inside its unlock; only a futex
//! wake-up, which uses the address as a key, may name it after that.
//!
//! How the instant is found: during the unlock the page is read-only, so each write to it
//! faults; the fault handler makes the page writable and sets the trap flag, so the CPU runs
//! that one instruction and traps; the trap handler asks the test whether the lock now reads
//! as released. If it does, the page loses all access; if not, it is read-only again. Linux on
//! x86_64 only (the trap flag lives in the saved `EFLAGS`).
//!
//! The waiters of these tests wait with [`Parked`], which never touches the lock while it
//! sleeps, so during the unlock only the releasing thread uses the page.

use crate::sys::futex::FutexWait;
use crate::wait::{Episode, Wait};
use core::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// A wait policy whose sleep touches nothing of the lock: it blocks until [`let_go`], then
/// reports a changed word. Its wake-ups do nothing (its sleepers are let go by the test).
pub(crate) struct Parked;

static ASLEEP: AtomicUsize = AtomicUsize::new(0);
static LET_GO: AtomicBool = AtomicBool::new(false);

impl Wait for Parked {
    const NAME: &'static str = "parked";
    const MAY_SLEEP: bool = true;

    fn relax(_: &AtomicU32, _: u32, _: &mut Episode) -> bool {
        false
    }

    fn sleep(_: &AtomicU32, _: u32, _: Option<Instant>) -> FutexWait {
        ASLEEP.fetch_add(1, SeqCst);
        while !LET_GO.load(SeqCst) {
            std::thread::yield_now();
        }
        ASLEEP.fetch_sub(1, SeqCst);
        FutexWait::ValueChanged
    }

    fn wake_one(_: &AtomicU32) -> usize {
        0
    }

    fn wake_all(_: &AtomicU32) {}
}

/// One test at a time: the signal handlers and [`Parked`]'s sleepers are process-wide.
pub(crate) fn one_at_a_time() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    let serial = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    LET_GO.store(false, SeqCst);
    serial
}

/// Waits until `sleepers` threads sleep in [`Parked::sleep`].
pub(crate) fn wait_until_asleep(sleepers: usize) {
    while ASLEEP.load(SeqCst) < sleepers {
        std::thread::yield_now();
    }
}

/// Ends every [`Parked`] sleep, now and later.
pub(crate) fn let_go() {
    LET_GO.store(true, SeqCst);
}

/// The page size, read once outside the signal handlers.
fn page_size() -> usize {
    static PAGE_SIZE: AtomicUsize = AtomicUsize::new(0);
    if PAGE_SIZE.load(SeqCst) == 0 {
        // SAFETY: sysconf has no preconditions.
        PAGE_SIZE.store(unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize, SeqCst);
    }
    PAGE_SIZE.load(SeqCst)
}

/// Moves `lock` to the start of a page of its own, which is never unmapped.
pub(crate) fn on_its_own_page<L>(lock: L) -> &'static L {
    assert!(size_of::<L>() <= page_size());
    // SAFETY: a fresh private anonymous mapping; no other memory is involved.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            page_size(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED, "mmap failed");
    let lock_at = page.cast::<L>();
    // SAFETY: the page is writable, page-aligned and large enough, and is never unmapped.
    unsafe {
        lock_at.write(lock);
        &*lock_at
    }
}

static PAGE: AtomicUsize = AtomicUsize::new(0);
static LOCK: AtomicUsize = AtomicUsize::new(0);
/// The test's `released`, as a `fn(&L) -> bool`, and the function that calls it.
static RELEASED: AtomicUsize = AtomicUsize::new(0);
static ASK: AtomicUsize = AtomicUsize::new(0);
static FREED: AtomicBool = AtomicBool::new(false);

const TRAP_FLAG: i64 = 0x100;

fn ask<L>(lock: usize, released: usize) -> bool {
    // SAFETY: `released` was stored from a `fn(&L) -> bool` and `lock` from an `&L` that is
    // alive for the whole watch.
    unsafe {
        let released: fn(&L) -> bool = core::mem::transmute(released);
        released(&*(lock as *const L))
    }
}

fn protect(access: c_int) {
    // SAFETY: the page was mapped by `on_its_own_page` and is never unmapped.
    let done = unsafe { libc::mprotect(PAGE.load(SeqCst) as *mut c_void, page_size(), access) };
    assert_eq!(done, 0, "mprotect failed");
}

extern "C" fn on_fault(_: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo for SIGSEGV.
    let address = unsafe { (*info).si_addr() } as usize;
    if FREED.load(SeqCst) || address & !(page_size() - 1) != PAGE.load(SeqCst) {
        let message = b"\nthe unlock touched the lock after releasing it (or another fault)\n";
        // SAFETY: write(2) is async-signal-safe; the buffer is valid. Then the default action:
        // the access faults again on return, and the process dies with SIGSEGV.
        unsafe {
            libc::write(2, message.as_ptr().cast(), message.len());
            libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        }
        return;
    }
    protect(libc::PROT_READ | libc::PROT_WRITE);
    // SAFETY: the kernel passes the interrupted thread's context, which it restores on return.
    unsafe { (*context.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_EFL as usize] |= TRAP_FLAG };
}

extern "C" fn on_step(_: c_int, _: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: as in `on_fault`.
    unsafe { (*context.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_EFL as usize] &= !TRAP_FLAG };
    // SAFETY: `ASK` holds `ask::<L>` for the `L` that `LOCK` and `RELEASED` were stored with.
    let ask: fn(usize, usize) -> bool = unsafe { core::mem::transmute(ASK.load(SeqCst)) };
    if ask(LOCK.load(SeqCst), RELEASED.load(SeqCst)) {
        FREED.store(true, SeqCst);
        protect(libc::PROT_NONE);
    } else {
        protect(libc::PROT_READ);
    }
}

fn handle(signal: c_int, handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void)) -> libc::sigaction {
    // SAFETY: a zeroed sigaction is valid (empty mask); the handler has the SA_SIGINFO shape.
    unsafe {
        let mut action: libc::sigaction = core::mem::zeroed();
        action.sa_sigaction = handler as usize;
        action.sa_flags = libc::SA_SIGINFO;
        let mut old: libc::sigaction = core::mem::zeroed();
        assert_eq!(libc::sigaction(signal, &action, &mut old), 0, "sigaction failed");
        old
    }
}

/// Runs `unlock` on `lock` (placed by [`on_its_own_page`]), taking the page away at the write
/// after which `released(lock)` holds. Panics if that never happens; dies with SIGSEGV if
/// `unlock` reads or writes the page after it.
pub(crate) fn free_at_release<L>(lock: &'static L, released: fn(&L) -> bool, unlock: impl FnOnce()) {
    let page = lock as *const L as usize;
    assert_eq!(page % page_size(), 0, "place the lock with on_its_own_page");
    PAGE.store(page, SeqCst);
    LOCK.store(page, SeqCst);
    RELEASED.store(released as usize, SeqCst);
    ASK.store(ask::<L> as fn(usize, usize) -> bool as usize, SeqCst);
    FREED.store(false, SeqCst);
    let old_fault = handle(libc::SIGSEGV, on_fault);
    let old_step = handle(libc::SIGTRAP, on_step);
    protect(libc::PROT_READ);
    unlock();
    let freed = FREED.load(SeqCst);
    protect(libc::PROT_READ | libc::PROT_WRITE);
    // SAFETY: puts back the actions saved above.
    unsafe {
        libc::sigaction(libc::SIGSEGV, &old_fault, std::ptr::null_mut());
        libc::sigaction(libc::SIGTRAP, &old_step, std::ptr::null_mut());
    }
    assert!(freed, "the unlock never released the lock");
}

/// A side of a reader-writer lock.
#[derive(Clone, Copy)]
pub(crate) enum Side {
    Shared,
    Exclusive,
}

/// The shape of every test of a release that wakes sleepers: places `lock` on its own page,
/// takes `held` of it, starts one thread per entry of `sleepers` that takes that side (and so
/// sleeps in [`Parked`]), calls `before` once all of them sleep, then gives `held` back under
/// [`free_at_release`] with `released`, and lets the sleepers go. Returns the lock, for the
/// caller to check that it ended free.
pub(crate) fn release_to_sleepers<L: lock_api::RawRwLock + Sync + 'static>(
    lock: L,
    held: Side,
    sleepers: &[Side],
    released: fn(&L) -> bool,
    before: impl FnOnce(&L),
) -> &'static L {
    let _serial = one_at_a_time();
    let lock = on_its_own_page(lock);
    std::thread::scope(|s| {
        let park_sleepers = || {
            for &side in sleepers {
                s.spawn(move || match side {
                    Side::Shared => {
                        let guard = lock.lock_shared();
                        // SAFETY: taken just above.
                        unsafe { lock.unlock_shared(guard) };
                    }
                    Side::Exclusive => {
                        let guard = lock.lock_exclusive();
                        // SAFETY: taken just above.
                        unsafe { lock.unlock_exclusive(guard) };
                    }
                });
            }
            wait_until_asleep(sleepers.len());
            before(lock);
        };
        match held {
            Side::Shared => {
                let guard = lock.lock_shared();
                park_sleepers();
                // SAFETY: taken above, on this thread.
                free_at_release(lock, released, || unsafe { lock.unlock_shared(guard) });
            }
            Side::Exclusive => {
                let guard = lock.lock_exclusive();
                park_sleepers();
                // SAFETY: taken above, on this thread.
                free_at_release(lock, released, || unsafe { lock.unlock_exclusive(guard) });
            }
        }
        let_go();
    });
    lock
}
