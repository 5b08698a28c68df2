//! What the C library and the preload library share. The preload library includes this folder
//! with `#[path]` instead of depending on this crate: a dependency would also export the whole
//! `spinlab_*` C API from `libspinlab_preload.so`.
// Each of the two libraries uses its own part of what is here.
#![allow(dead_code)]

pub mod clock;
pub mod condvar;
