//! The status codes every `spinlab_*` function returns, their messages, and the errno value
//! each stands for.

use core::ffi::CStr;
use libc::{c_char, c_int};

/// Success.
pub const SPINLAB_OK: c_int = 0;
/// `trylock`, `tryrdlock`, `trywrlock`: the lock is held (nothing was acquired). `destroy`:
/// the object is still in use, a held mutex or reader-writer lock, or a barrier that a thread
/// still waits on (nothing was destroyed).
pub const SPINLAB_BUSY: c_int = 1;
/// A timed call reached its deadline, by the deadline's own clock and never before: nothing
/// was acquired (a condition wait returns with its mutex held again).
pub const SPINLAB_TIMEDOUT: c_int = 2;
/// `init`, `spinlab_check`: no primitive of that kind has this name (`spinlab_list` names
/// them all). Nothing was initialised.
pub const SPINLAB_UNKNOWN_NAME: c_int = 3;
/// `init`, `spinlab_check`: the name exists but this CPU cannot run its wait policy (for
/// example `umwait` without WAITPKG). Nothing was initialised.
pub const SPINLAB_UNAVAILABLE: c_int = 4;
/// An invalid argument, refused before anything else is done: a NULL object or deadline, a
/// `tv_nsec` outside 0..999999999, a clock other than `CLOCK_REALTIME` and
/// `CLOCK_MONOTONIC`, a barrier count of 0 or above `INT_MAX`, an unknown kind.
pub const SPINLAB_INVALID: c_int = 5;
/// `init`: the primitive needs more room than the fixed-size object has. No primitive of
/// this build does (its tests check every one); a newer spinlab could add one.
pub const SPINLAB_TOO_LARGE: c_int = 6;
/// What `spinlab_barrier_wait` returns to exactly one thread of each phase (the last to
/// arrive), as `PTHREAD_BARRIER_SERIAL_THREAD` does; the others get `SPINLAB_OK`.
pub const SPINLAB_BARRIER_SERIAL_THREAD: c_int = -1;

/// What `spinlab_errno` returns for a code that no function returns.
const UNKNOWN_ERRNO: c_int = libc::EINVAL;

/// glibc's and musl's `PTHREAD_BARRIER_SERIAL_THREAD` (the libc crate does not define it).
const PTHREAD_BARRIER_SERIAL_THREAD: c_int = -1;

/// A status code with its message and what the matching pthread function would return.
struct Status {
    code: c_int,
    message: &'static CStr,
    errno: c_int,
}

/// Every code a `spinlab_*` function returns: the one place that gives each its meaning.
const STATUSES: [Status; 8] = [
    Status { code: SPINLAB_OK, message: c"success", errno: 0 },
    Status { code: SPINLAB_BUSY, message: c"busy: held, or still in use", errno: libc::EBUSY },
    Status { code: SPINLAB_TIMEDOUT, message: c"timed out: the deadline passed", errno: libc::ETIMEDOUT },
    // pthread_*_init answers EINVAL for attributes it does not know; a name is spinlab's
    // attribute.
    Status {
        code: SPINLAB_UNKNOWN_NAME,
        message: c"unknown name: spinlab_list gives the valid names",
        errno: libc::EINVAL,
    },
    Status {
        code: SPINLAB_UNAVAILABLE,
        message: c"unavailable: this CPU lacks what the wait policy needs",
        errno: libc::ENOTSUP,
    },
    Status { code: SPINLAB_INVALID, message: c"invalid argument", errno: libc::EINVAL },
    // pthread_*_init's answer when it lacks the memory to build the primitive.
    Status { code: SPINLAB_TOO_LARGE, message: c"the primitive does not fit in the object", errno: libc::ENOMEM },
    // Not an error: pthread_barrier_wait returns PTHREAD_BARRIER_SERIAL_THREAD in its place.
    Status {
        code: SPINLAB_BARRIER_SERIAL_THREAD,
        message: c"serial thread: this barrier wait was chosen as the one of its phase (success)",
        errno: PTHREAD_BARRIER_SERIAL_THREAD,
    },
];

fn entry(code: c_int) -> Option<&'static Status> {
    STATUSES.iter().find(|status| status.code == code)
}

/// A message for a status code returned by a `spinlab_*` function: a static, NUL-terminated
/// string that the caller must not free. Never NULL: a code that no function returns gets
/// "unknown spinlab status code". Safe to call from any thread, at any time.
#[no_mangle]
pub extern "C" fn spinlab_strerror(status: c_int) -> *const c_char {
    entry(status).map_or(c"unknown spinlab status code", |entry| entry.message).as_ptr()
}

/// What the matching pthread function returns where a `spinlab_*` function returns
/// `status`: 0 for `SPINLAB_OK`; `EBUSY`, `ETIMEDOUT`, `EINVAL` (`SPINLAB_INVALID`,
/// `SPINLAB_UNKNOWN_NAME`), `ENOTSUP` (`SPINLAB_UNAVAILABLE`), `ENOMEM`
/// (`SPINLAB_TOO_LARGE`); `PTHREAD_BARRIER_SERIAL_THREAD` for
/// `SPINLAB_BARRIER_SERIAL_THREAD`, which is not an error. `EINVAL` for a code that no
/// function returns. So a pthread-style wrapper is `return spinlab_errno(spinlab_…(…));`.
/// Safe to call from any thread, at any time.
#[no_mangle]
pub extern "C" fn spinlab_errno(status: c_int) -> c_int {
    entry(status).map_or(UNKNOWN_ERRNO, |entry| entry.errno)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(code: c_int) -> &'static str {
        // SAFETY: spinlab_strerror returns static C strings.
        unsafe { CStr::from_ptr(spinlab_strerror(code)) }.to_str().unwrap()
    }

    #[test]
    fn every_code_has_its_own_message_and_others_get_one_too() {
        let mut messages: Vec<_> = STATUSES.iter().map(|status| message(status.code)).collect();
        messages.sort_unstable();
        messages.dedup();
        assert_eq!(messages.len(), STATUSES.len());
        assert!(!messages.contains(&message(-42)));
        assert_eq!(message(-42), "unknown spinlab status code");
        assert!(message(SPINLAB_BARRIER_SERIAL_THREAD).starts_with("serial thread"));
    }

    #[test]
    fn every_code_is_listed_once_and_maps_to_its_pthread_value() {
        let codes = [
            SPINLAB_OK,
            SPINLAB_BUSY,
            SPINLAB_TIMEDOUT,
            SPINLAB_UNKNOWN_NAME,
            SPINLAB_UNAVAILABLE,
            SPINLAB_INVALID,
            SPINLAB_TOO_LARGE,
            SPINLAB_BARRIER_SERIAL_THREAD,
        ];
        let listed: Vec<c_int> = STATUSES.iter().map(|status| status.code).collect();
        assert_eq!(listed, codes);
        let errnos = codes.map(|code| spinlab_errno(code));
        let expected = [0, libc::EBUSY, libc::ETIMEDOUT, libc::EINVAL, libc::ENOTSUP, libc::EINVAL, libc::ENOMEM, -1];
        assert_eq!(errnos, expected);
        assert_eq!(spinlab_errno(42), libc::EINVAL);
    }
}
