//! The only module that names atomics, spin hints, `yield_now` and thread-locals.
//!
//! Everything else in the crate imports them from here, so that `RUSTFLAGS="--cfg loom"`
//! swaps the whole crate onto loom's model-checked versions in one place (crossbeam-utils'
//! `primitive` module does the same). Under loom, every spin iteration yields to the model
//! scheduler: a spin loop that never yields would make loom explore it forever.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

#[cfg(loom)]
pub(crate) use loom::thread_local;
#[cfg(not(loom))]
pub(crate) use std::thread_local;

/// Atomics that are private to one thread's scratch work (the `cas` policy's padded line):
/// they are never shared, so loom has nothing to model and they stay real even under loom.
pub(crate) use core::sync::atomic::AtomicU64 as PrivateAtomicU64;

/// Marks the end of one iteration of a spin loop.
///
/// Normally free. Under loom it yields to the model scheduler, which is how loom learns that
/// this thread cannot make progress until another one runs.
#[inline(always)]
pub(crate) fn spin_iteration_done() {
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// The CPU's spin-wait hint (`pause` on x86, `isb`/`yield` on aarch64).
#[inline(always)]
pub(crate) fn cpu_relax() {
    core::hint::spin_loop();
}

/// Gives up the CPU to another runnable thread (`sched_yield`).
#[inline]
pub(crate) fn yield_now() {
    #[cfg(not(loom))]
    crate::sys::phases::yielding(std::thread::yield_now);
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Sleeps for about `ns` (plus the kernel's timer slack). Under loom, which has no clock, a
/// yield to the model scheduler.
#[inline]
pub(crate) fn nap(ns: u64) {
    #[cfg(not(loom))]
    crate::sys::phases::asleep(|| std::thread::sleep(std::time::Duration::from_nanos(ns)));
    #[cfg(loom)]
    {
        let _ = ns;
        loom::thread::yield_now();
    }
}

/// `sched_yield`, and whether it came back within `quick_ns`: then no other thread wanted this
/// CPU, the user-space sign the Linux mutex reads from `need_resched()`. Under loom, which has
/// no clock, a yield never counts as quick.
#[inline]
pub(crate) fn yield_was_quick(quick_ns: u64) -> bool {
    #[cfg(not(loom))]
    {
        let start = std::time::Instant::now();
        std::thread::yield_now();
        let ns = start.elapsed().as_nanos() as u64;
        crate::sys::phases::yielded_ns(ns);
        ns < quick_ns
    }
    #[cfg(loom)]
    {
        let _ = quick_ns;
        loom::thread::yield_now();
        false
    }
}

/// Declares a constructor that is `const` normally and a plain `fn` under loom, whose atomics
/// cannot be built in a constant.
macro_rules! loom_const_fn {
    ($(#[$attr:meta])* $vis:vis fn $name:ident() -> $ret:ty $body:block) => {
        #[cfg(not(loom))]
        $(#[$attr])*
        $vis const fn $name() -> $ret $body
        #[cfg(loom)]
        $(#[$attr])*
        $vis fn $name() -> $ret $body
    };
}
pub(crate) use loom_const_fn;

/// The `INIT` constant of `lock_api`'s raw traits. Loom's atomics cannot be built in a
/// constant, so under loom the constant exists but must not be used: loom tests construct
/// locks with `new()`.
macro_rules! raw_init {
    () => {
        #[cfg(not(loom))]
        #[allow(clippy::declare_interior_mutable_const)]
        const INIT: Self = Self::new();
        #[cfg(loom)]
        const INIT: Self = panic!("under loom, construct locks with new()");
    };
}
pub(crate) use raw_init;
