//! spinlab for C: `libspinlab.so` and `libspinlab.a`, declared by `include/spinlab.h`
//! (generated from this crate by cbindgen; `tests/header.rs` fails when the committed copy is
//! stale) and described to build systems by `spinlab.pc`. docs/c.md is its reference.
//!
//! Every object is opaque, of a fixed size and alignment the header asserts, and lives in
//! memory the caller owns. Its first word points to a static table row naming what was built
//! there (a lock of the registry, a condvar policy, a barrier, a reader-writer lock); the rest
//! holds the primitive itself: mutexes and condition variables in place, through the
//! registry's `RawLockOps` and [`spinlab::Condvar`]; barriers and reader-writer locks, which
//! the registry builds only on the heap, as a pointer to the one `init` allocates. Names are
//! the registry's (`"mcs:spin-park"`; NULL for the default), so C programs, the preload
//! library and the lab name the same things. After `init`, nothing allocates but the queue
//! locks' node pool, which grows only while more nodes are in use at once than ever before.
//!
//! Every function that can fail returns a status code (`SPINLAB_OK`, …; `spinlab_strerror`
//! words them) and none unwinds into C: nothing here panics once the tables are built, and a
//! panic in an `extern "C"` function would abort the process rather than unwind.
#![deny(unsafe_op_in_unsafe_fn)]
// The C names of the opaque types are the header's.
#![allow(non_camel_case_types)]

#[cfg(not(target_os = "linux"))]
compile_error!("spinlab's C library wraps spinlab, which runs on Linux only");

mod barrier;
mod cond;
mod mutex;
mod names;
mod rwlock;
mod status;

pub use barrier::*;
pub use cond::*;
pub use mutex::*;
pub use names::{
    spinlab_check, spinlab_list, SPINLAB_KIND_BARRIER, SPINLAB_KIND_COND, SPINLAB_KIND_MUTEX, SPINLAB_KIND_RWLOCK,
};
pub use rwlock::*;
pub use status::*;
