//! The settings that tests and loom models make for the word's waits: each is a thread-local
//! of the test's own thread, and the waits read it through one function here, so that the
//! production files hold no test-only state.

#[cfg(all(test, not(loom)))]
std::thread_local! {
    /// Keeps this thread's waits from ever claiming the lock, whatever their length (a
    /// scripted test pauses threads for far longer than the bypass bound).
    pub(super) static NEVER_STARVES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread's waits are kept from starving (`NEVER_STARVES`); never outside the
/// unit tests.
#[cfg(not(loom))]
#[inline(always)]
pub(super) fn never_starves() -> bool {
    #[cfg(test)]
    {
        NEVER_STARVES.with(|never| never.get())
    }
    #[cfg(not(test))]
    {
        false
    }
}

// At which look at a held lock a waiter starves under loom (see `loom_starve_at_look`). A
// thread-local of the test's own thread: loom runs a model's threads as coroutines on it, and
// tests running beside it keep their own setting.
#[cfg(loom)]
std::thread_local! {
    static STARVE_AT_LOOK: core::cell::Cell<u32> = const { core::cell::Cell::new(2) };
}

/// Under loom, makes every bounded-bypass waiter starve (and claim) at its `look`-th look at
/// a held lock (`u32::MAX`: never) until the returned guard is dropped. The default, 2, makes
/// claims race everything else; since a real waiter starves only after 0.5 ms, the waits
/// without a claim need models of their own. Not a model's state: set it on the test's thread
/// before the model runs; the guard puts the previous setting back, so a test harness that
/// runs tests one after another on one thread does not carry it into the next test.
#[cfg(loom)]
#[doc(hidden)]
pub fn loom_starve_at_look(look: u32) -> crate::sys::futex::LoomSetting<u32> {
    crate::sys::futex::LoomSetting::new(STARVE_AT_LOOK.with(|at| at.replace(look)), |previous| {
        STARVE_AT_LOOK.with(|at| at.replace(previous))
    })
}

/// At which look at a held lock a waiter starves under loom (`loom_starve_at_look`).
#[cfg(loom)]
pub(super) fn starve_at_look() -> u32 {
    STARVE_AT_LOOK.with(|look| look.get())
}
