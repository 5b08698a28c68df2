//! The status codes every `spinlab_*` function returns, and their messages.

use libc::{c_char, c_int};

/// Success.
pub const SPINLAB_OK: c_int = 0;
/// `trylock`: the lock is held. `destroy`: the object is still in use (a held mutex).
pub const SPINLAB_BUSY: c_int = 1;
/// A timed operation reached its deadline.
pub const SPINLAB_TIMEDOUT: c_int = 2;
/// `init`, `spinlab_check`: no primitive of that kind has this name (`spinlab_list` names
/// them all).
pub const SPINLAB_UNKNOWN_NAME: c_int = 3;
/// `init`, `spinlab_check`: the name exists but this CPU cannot run its wait policy (for
/// example `umwait` without WAITPKG).
pub const SPINLAB_UNAVAILABLE: c_int = 4;
/// An invalid argument: a null pointer where an object is needed, a `tv_nsec` outside
/// 0..999999999, a clock other than `CLOCK_REALTIME` and `CLOCK_MONOTONIC`, a barrier for
/// no thread, an unknown kind.
pub const SPINLAB_INVALID: c_int = 5;
/// `init`: the primitive needs more room than the fixed-size object has. No primitive of
/// this build does (its tests check every one); a newer spinlab could add one.
pub const SPINLAB_TOO_LARGE: c_int = 6;

/// A message for a status code returned by a `spinlab_*` function: a static, NUL-terminated
/// string that the caller must not free. Never NULL, also for codes that do not exist.
#[no_mangle]
pub extern "C" fn spinlab_strerror(status: c_int) -> *const c_char {
    let message = match status {
        SPINLAB_OK => c"success",
        SPINLAB_BUSY => c"busy: the lock is held",
        SPINLAB_TIMEDOUT => c"timed out: the deadline passed",
        SPINLAB_UNKNOWN_NAME => c"unknown name: spinlab_list gives the valid names",
        SPINLAB_UNAVAILABLE => c"unavailable: this CPU lacks what the wait policy needs",
        SPINLAB_INVALID => c"invalid argument",
        SPINLAB_TOO_LARGE => c"the primitive does not fit in the object",
        _ => c"unknown spinlab status code",
    };
    message.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn every_code_has_its_own_message_and_others_get_one_too() {
        let codes = [
            SPINLAB_OK,
            SPINLAB_BUSY,
            SPINLAB_TIMEDOUT,
            SPINLAB_UNKNOWN_NAME,
            SPINLAB_UNAVAILABLE,
            SPINLAB_INVALID,
            SPINLAB_TOO_LARGE,
        ];
        // SAFETY: spinlab_strerror returns static C strings.
        let message = |code| unsafe { CStr::from_ptr(spinlab_strerror(code)) }.to_str().unwrap();
        let mut messages: Vec<_> = codes.iter().map(|&code| message(code)).collect();
        messages.sort_unstable();
        messages.dedup();
        assert_eq!(messages.len(), codes.len());
        assert_eq!(message(-42), "unknown spinlab status code");
    }
}
