//! Reuses the coroutine stacks that loom maps for its threads, instead of mapping fresh ones.
//!
//! Loom runs each modelled thread on a stack from the `generator` crate, which maps it with
//! `mmap(MAP_STACK)`, guards its lowest page with `mprotect`, and unmaps it when the thread
//! ends: once per thread per execution, and a model runs up to hundreds of thousands of
//! executions. Every page the thread then touches is a fresh page fault, so a heavy model
//! (`never_starving_bounded_futex::release_whose_wake_finds_nobody`, say) spends more time in
//! the kernel, faulting, than in loom; with the stacks reused it faults a few hundred times.
//!
//! This module defines `mmap` and `munmap` in the test binary, where the linker prefers them
//! to the C library's for calls made from Rust code (the C library's own calls, from `malloc`
//! or `pthread_create`, use its internal names and never come here). An anonymous read-write
//! `MAP_STACK` mapping that the binary unmaps is kept in a pool instead, with its guard page
//! still in place, and handed out again to the next request of the same length. Every other
//! call goes straight to the system call. What the models check does not change: a stack's
//! contents are never read before they are written, and a reused stack is as private to its
//! coroutine as a fresh one.
//!
//! `generator` then guards the stack's lowest page with `mprotect(PROT_NONE)`, each time it is
//! handed one; a pooled stack keeps that guard while it waits, so the pool answers a repeat of
//! that call itself, which would otherwise be a system call per thread per execution. Any
//! other protection change goes to the kernel, and a stack whose guard was changed is guarded
//! again by the kernel the next time.
//!
//! The pool holds at most [`SLOTS`] stacks, as many as loom's threads in the models running at
//! once could need; beyond that, calls go to the kernel as they would without it.

use libc::{c_int, c_void, off_t, size_t};
use std::sync::Mutex;

/// How many stacks the pool tracks: a model has at most a handful of threads, and the test
/// harness runs a few models at once.
const SLOTS: usize = 256;

/// The flags `generator` maps its stacks with.
const STACK_FLAGS: c_int = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK;

#[derive(Clone, Copy)]
struct Slot {
    addr: usize,
    len: usize,
    in_use: bool,
    /// The lowest page is `PROT_NONE`, as `generator` leaves it, and nothing changed it since.
    guarded: bool,
}

const EMPTY: Slot = Slot { addr: 0, len: 0, in_use: false, guarded: false };

/// Every stack mapping the pool knows, in use or free; `len == 0` marks an empty slot.
static POOL: Mutex<[Slot; SLOTS]> = Mutex::new([EMPTY; SLOTS]);

fn pool() -> std::sync::MutexGuard<'static, [Slot; SLOTS]> {
    POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// # Safety
///
/// As for the C library's `mmap`.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    let stack = addr.is_null() && fd == -1 && flags == STACK_FLAGS && prot == libc::PROT_READ | libc::PROT_WRITE;
    if stack {
        let mut slots = pool();
        if let Some(slot) = slots.iter_mut().find(|slot| !slot.in_use && slot.len == len) {
            slot.in_use = true;
            return slot.addr as *mut c_void;
        }
    }
    // SAFETY: the caller's arguments, passed on unchanged to the system call it asked for.
    let mapped = unsafe { libc::syscall(libc::SYS_mmap, addr, len, prot, flags, fd, offset) };
    if stack && mapped != -1 {
        if let Some(slot) = pool().iter_mut().find(|slot| slot.len == 0) {
            *slot = Slot { addr: mapped as usize, len, in_use: true, guarded: false };
        }
    }
    mapped as *mut c_void
}

/// # Safety
///
/// As for the C library's `munmap`.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    let mut slots = pool();
    if let Some(slot) = slots.iter_mut().find(|slot| slot.in_use && slot.addr == addr as usize && slot.len == len) {
        slot.in_use = false;
        return 0;
    }
    drop(slots);
    // SAFETY: as above; the mapping is not one the pool handed out.
    unsafe { libc::syscall(libc::SYS_munmap, addr, len) as c_int }
}

/// # Safety
///
/// As for the C library's `mprotect`.
#[no_mangle]
pub unsafe extern "C" fn mprotect(addr: *mut c_void, len: size_t, prot: c_int) -> c_int {
    let (start, end) = (addr as usize, addr as usize + len);
    let is_guard_of = |slot: &Slot| prot == libc::PROT_NONE && len == page_size() && slot.in_use && slot.addr == start;
    let mut slots = pool();
    if slots.iter().any(|slot| slot.guarded && is_guard_of(slot)) {
        return 0;
    }
    // SAFETY: the caller's arguments, passed on unchanged to the system call it asked for.
    let changed = unsafe { libc::syscall(libc::SYS_mprotect, addr, len, prot) as c_int };
    // Every pooled stack the range touched: guarded only if this call set exactly its guard.
    for slot in slots.iter_mut().filter(|slot| slot.len != 0 && start < slot.addr + slot.len && slot.addr < end) {
        slot.guarded = changed == 0 && is_guard_of(slot);
    }
    changed
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// The pool hands an unmapped stack back out, keeps it mapped meanwhile, and passes every
/// other mapping through to the kernel. The length is one no loom stack has (those are nine
/// pages), so the models running beside this test cannot take its stack in between.
#[test]
fn stacks_are_reused_and_other_mappings_unmapped() {
    let len = 11 * page_size();
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    let resident = |addr: *mut c_void| {
        let mut vec = [0u8; 11];
        // SAFETY: `vec` has a byte for each of the range's 11 pages.
        unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) == 0 }
    };
    // SAFETY: every pointer written or read is inside a mapping made here and not yet unmapped.
    unsafe {
        let first = libc::mmap(std::ptr::null_mut(), len, rw, STACK_FLAGS, -1, 0);
        assert_ne!(first, libc::MAP_FAILED);
        first.cast::<u8>().add(len - 1).write(7);
        assert_eq!(libc::munmap(first, len), 0);
        assert!(resident(first), "a pooled stack stays mapped");
        let second = libc::mmap(std::ptr::null_mut(), len, rw, STACK_FLAGS, -1, 0);
        assert_eq!(second, first, "the next stack of the same length is the pooled one");
        assert_eq!(second.cast::<u8>().add(len - 1).read(), 7);
        let other = libc::mmap(std::ptr::null_mut(), len, rw, STACK_FLAGS, -1, 0);
        assert_ne!(other, first, "a stack in use is not handed out twice");
        assert_eq!(libc::munmap(other, len), 0);
        assert_eq!(libc::munmap(second, len), 0);

        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        let plain = libc::mmap(std::ptr::null_mut(), len, rw, flags, -1, 0);
        assert_ne!(plain, libc::MAP_FAILED);
        assert_eq!(libc::munmap(plain, len), 0);
        assert!(!resident(plain), "a mapping that is not a stack is really unmapped");
    }
}

/// A pooled stack handed out again keeps its guard page, and answering `generator`'s repeat
/// of `mprotect(PROT_NONE)` in the pool never leaves a page with a protection other than the
/// one asked for: a call that lifts the guard reaches the kernel, and the guard asked for after
/// it is put back. The protections are read from `/proc/self/maps`, not from the pool; which
/// of the calls reached the kernel is not visible there (only a tracer, `strace` or `perf`,
/// shows that). The length is one no loom stack has and the other
/// test's is not (13 pages), so neither takes the other's stack.
#[test]
fn a_pooled_stack_keeps_its_guard_page() {
    let page = page_size();
    let len = 13 * page;
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    let protection = |addr: *mut c_void| -> String {
        let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
        let at = addr as usize;
        maps.lines()
            .find_map(|line| {
                let (range, rest) = line.split_once(' ')?;
                let (start, end) = range.split_once('-')?;
                let (start, end) = (usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?);
                (start <= at && at < end).then(|| rest[..4].to_string())
            })
            .unwrap_or_else(|| format!("no mapping at {at:#x}"))
    };
    // SAFETY: every range protected or unmapped is the one mapped here, and its memory is
    // never read or written.
    unsafe {
        let stack = libc::mmap(std::ptr::null_mut(), len, rw, STACK_FLAGS, -1, 0);
        assert_ne!(stack, libc::MAP_FAILED);
        assert_eq!(libc::mprotect(stack, page, libc::PROT_NONE), 0);
        assert_eq!(protection(stack), "---p", "the first guard reaches the kernel");
        assert_eq!(libc::munmap(stack, len), 0);

        let again = libc::mmap(std::ptr::null_mut(), len, rw, STACK_FLAGS, -1, 0);
        assert_eq!(again, stack, "the pooled stack is handed out again");
        assert_eq!(protection(again), "---p", "it kept its guard while pooled");
        assert_eq!(libc::mprotect(again, page, libc::PROT_NONE), 0);
        assert_eq!(protection(again), "---p");
        assert_eq!(protection(again.cast::<u8>().add(page).cast()), "rw-p", "the rest of it is the stack");

        assert_eq!(libc::mprotect(again, page, rw), 0);
        assert_eq!(protection(again), "rw-p", "a call that lifts the guard reaches the kernel");
        assert_eq!(libc::mprotect(again, page, libc::PROT_NONE), 0);
        assert_eq!(protection(again), "---p", "and the next guard is the kernel's again");
        assert_eq!(libc::munmap(again, len), 0);
    }
}
