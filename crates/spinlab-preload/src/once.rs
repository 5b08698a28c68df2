//! The C11 `call_once` replacement: the program's `once_flag` (glibc's is one `int`,
//! `ONCE_FLAG_INIT` zero) is the state word, and a thread that finds another running the
//! initialiser sleeps on it until that one has finished.
//!
//! | word                          | meaning                                                  |
//! |-------------------------------|----------------------------------------------------------|
//! | 0                             | new: the caller that swaps in `RUNNING` runs the initialiser |
//! | `RUNNING \| generation`       | a thread of the process of that fork generation runs it   |
//! | `RUNNING \| generation \| SLEEPERS` | and a waiter may be asleep on the word            |
//! | `DONE`                        | finished: every call returns at once                     |
//!
//! The waiters sleep at once (spinlab's futex policy): an initialiser is start-up code that
//! may take any time, and runs once, so spinning for it buys nothing. The thread that ran
//! it swaps in `DONE` and wakes the sleepers only if one said it may be asleep.
//!
//! A child forked while another thread runs an initialiser has no such thread: the
//! generation in the word tells the child that the runner belongs to the parent, and its
//! next caller runs the initialiser itself (glibc's `pthread_once`, which its `call_once`
//! is, does the same).
//!
//! An initialiser that does not return (its thread exits or is cancelled in it, or it jumps
//! out with `longjmp`) leaves the word `RUNNING`: every later caller waits for ever. glibc's
//! cleanup handler resets the flag when the thread exits or is cancelled (a forced unwind),
//! so that the next caller runs the initialiser. Here that unwinding passes through
//! `call_once` ("C-unwind"), which may hold nothing with a destructor while it does (a
//! forced unwind through a Rust frame with one is undefined, RFC 2945), so it cannot reset
//! the word on the way out. C11 itself has no cancellation.
//!
//! `pthread_once` stays glibc's: POSIX requires a cancelled initialiser to reset its
//! `pthread_once_t`, which needs cleanup handlers this function does not have, and glibc
//! and other libraries (libstdc++'s `std::call_once`) reach it through the PLT, so replacing
//! it would change more than C11 programs. With `SPINLAB_LOCK=pthread`, `call_once` is
//! glibc's too.

use crate::config::Mutexes;
use crate::fork;
use crate::state;
use core::sync::atomic::{AtomicU32, Ordering::*};
use spinlab::wait::{Futex, Wait};

/// Bit 0: an initialiser runs.
const RUNNING: u32 = 1;
/// Bit 1: a waiter may be asleep on the word.
const SLEEPERS: u32 = 2;
/// Finished. Not glibc's `DONE` (2), so that a test can tell whose `call_once` ran.
const DONE: u32 = 4;
/// Bits 3..32: the fork generation (`fork::generation`) of the process whose thread runs the
/// initialiser, so that a child sees words its parent's threads left `RUNNING` as abandoned.
const GENERATION_SHIFT: u32 = 3;
const GENERATION: u32 = !((1 << GENERATION_SHIFT) - 1);

/// An initialiser, as `<threads.h>` declares it. "C-unwind": a thread that exits or is
/// cancelled inside it unwinds through `call_once` (see the module's documentation).
type Initialiser = unsafe extern "C-unwind" fn();

/// Replaces glibc's: runs `initialiser` exactly once per flag; every caller returns after
/// it has finished.
///
/// # Safety
/// As `call_once`: `flag` points to a `once_flag` used only with `call_once`.
#[no_mangle]
pub unsafe extern "C-unwind" fn call_once(flag: *mut u32, initialiser: Initialiser) {
    // SAFETY: a `once_flag` is an aligned `int` that lives as long as its calls.
    let word = unsafe { AtomicU32::from_ptr(flag) };
    // Acquire: pairs with the Release that wrote DONE, so what the initialiser wrote is
    // visible to the caller, which may read it at once.
    if word.load(Acquire) == DONE {
        return;
    }
    let state = state();
    match state.config.mutexes {
        // SAFETY: the caller's contract.
        Mutexes::Glibc => unsafe { (state.real.call_once)(flag, initialiser) },
        // SAFETY: the caller's contract.
        Mutexes::Replaced { .. } => unsafe { run_or_wait(word, initialiser) },
    }
}

/// The slow path: run the initialiser, or wait for the thread that runs it.
///
/// # Safety
/// `initialiser` may be called.
#[cold]
unsafe fn run_or_wait(word: &AtomicU32, initialiser: Initialiser) {
    loop {
        let seen = word.load(Acquire);
        if seen == DONE {
            return;
        }
        let generation = fork::generation().wrapping_shl(GENERATION_SHIFT);
        let runner_here = seen & RUNNING != 0 && seen & GENERATION == generation;
        if !runner_here {
            // New, or abandoned by a thread of the parent process: this thread runs it.
            // Relaxed: nothing was published before RUNNING; DONE's Release publishes after.
            if word.compare_exchange(seen, RUNNING | generation, Relaxed, Relaxed).is_err() {
                continue;
            }
            // SAFETY: the caller's contract.
            unsafe { initialiser() };
            // Release: the initialiser's writes happen before any caller sees DONE.
            if word.swap(DONE, Release) & SLEEPERS != 0 {
                Futex::wake_all(word);
            }
            return;
        }
        // Say a waiter may be asleep before sleeping, so the runner's swap sees it; the
        // futex sleeps only while the word still says so, so a DONE swapped in between is
        // never missed.
        let sleeping = seen | SLEEPERS;
        if seen != sleeping && word.compare_exchange(seen, sleeping, Relaxed, Relaxed).is_err() {
            continue;
        }
        Futex::sleep(word, sleeping, None);
    }
}
