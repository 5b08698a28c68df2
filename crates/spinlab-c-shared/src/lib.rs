//! What the C library (`spinlab-ffi`) and the preload library (`spinlab-preload`) share: C's
//! absolute deadlines ([`clock`]), a condition variable living in memory C owns
//! ([`condvar`]), waits that `pthread_cancel` can end ([`cancel`]), and the loop that acquires
//! a registry lock by such a deadline ([`timed`]), and the count of threads inside a
//! barrier's wait that lets `destroy` free it safely ([`inside`]).
//!
//! A crate of its own, not a module of spinlab-ffi: the preload library cannot depend on
//! spinlab-ffi, whose `#[no_mangle]` functions would then be exported from
//! `libspinlab_preload.so` too. This crate exports nothing to C.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod cancel;
pub mod clock;
pub mod condvar;
pub mod inside;
pub mod timed;
