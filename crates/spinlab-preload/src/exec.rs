//! `execve` and the `execv*` functions that take an argument vector: with
//! `SPINLAB_STATS_FILE`, the profile of the image about to be replaced is written first (the
//! new image, which inherits `LD_PRELOAD`, writes its own at its exit), and removed again if
//! the exec fails, so that the process's later file does not count the same acquisitions twice.
//! A child of `vfork` (or of `clone` sharing memory) writes nothing: its counts are its
//! parent's.
//! glibc's `execl*` are variadic and call its `execve` internally, out of this library's reach:
//! a program that execs through them loses the counts of the image it replaces.

use crate::{glibc, state, write_profile};
use libc::{c_char, c_int};
use spinlab::sys::measured::MeasuredNumber;
use std::ffi::CString;

type Execve = unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int;
type Execv = unsafe extern "C" fn(*const c_char, *const *const c_char) -> c_int;
type Fexecve = unsafe extern "C" fn(c_int, *const *const c_char, *const *const c_char) -> c_int;

/// glibc's function `name`, found once into `cell` (without a lock: a child forked while
/// another thread looked it up finds it for itself), as `F`.
fn real<F: Copy>(cell: &MeasuredNumber, name: &core::ffi::CStr) -> F {
    let found = cell.get(|| match glibc::next(name, None) {
        Ok(found) => found as u64,
        Err(missing) => crate::exit_with(&format!("glibc has no {missing}, which this library must call")),
    }) as usize;
    const { assert!(size_of::<F>() == size_of::<usize>()) };
    // SAFETY: `F` is the function pointer type of glibc's `name` (each caller below names its
    // own), and `found` its non-null address.
    unsafe { core::mem::transmute_copy::<usize, F>(&found) }
}

/// Runs `exec` after writing the profile; if it returns (the exec failed), removes the file
/// and keeps `errno` as the exec left it.
fn around(exec: impl FnOnce() -> c_int) -> c_int {
    // A `vfork` child borrows its parent's memory and counts: it must not allocate, and the
    // counts are the parent's to write.
    let counting = state().config.stats_file.is_some();
    let written = if counting && crate::fork::own_process() { write_profile(state()) } else { None };
    let status = exec();
    if let Some(path) = written.and_then(|path| CString::new(path).ok()) {
        // SAFETY: `__errno_location` is the calling thread's errno; `unlink` takes a
        // NUL-terminated path.
        unsafe {
            let errno = *libc::__errno_location();
            libc::unlink(path.as_ptr());
            *libc::__errno_location() = errno;
        }
    }
    status
}

/// Replaces glibc's.
///
/// # Safety
/// As `execve`.
#[no_mangle]
pub unsafe extern "C" fn execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
    static REAL: MeasuredNumber = MeasuredNumber::new();
    let real: Execve = real(&REAL, c"execve");
    // SAFETY: the caller's contract.
    around(|| unsafe { real(path, argv, envp) })
}

/// Replaces glibc's.
///
/// # Safety
/// As `execv`.
#[no_mangle]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    static REAL: MeasuredNumber = MeasuredNumber::new();
    let real: Execv = real(&REAL, c"execv");
    // SAFETY: the caller's contract.
    around(|| unsafe { real(path, argv) })
}

/// Replaces glibc's.
///
/// # Safety
/// As `execvp`.
#[no_mangle]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    static REAL: MeasuredNumber = MeasuredNumber::new();
    let real: Execv = real(&REAL, c"execvp");
    // SAFETY: the caller's contract.
    around(|| unsafe { real(file, argv) })
}

/// Replaces glibc's.
///
/// # Safety
/// As `execvpe`.
#[no_mangle]
pub unsafe extern "C" fn execvpe(file: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
    static REAL: MeasuredNumber = MeasuredNumber::new();
    let real: Execve = real(&REAL, c"execvpe");
    // SAFETY: the caller's contract.
    around(|| unsafe { real(file, argv, envp) })
}

/// Replaces glibc's.
///
/// # Safety
/// As `fexecve`.
#[no_mangle]
pub unsafe extern "C" fn fexecve(fd: c_int, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
    static REAL: MeasuredNumber = MeasuredNumber::new();
    let real: Fexecve = real(&REAL, c"fexecve");
    // SAFETY: the caller's contract.
    around(|| unsafe { real(fd, argv, envp) })
}
