//! Where the calling thread's waits went: time asleep in the kernel (futex waits and naps),
//! time given away in `sched_yield`, and the futex wake-ups it issued, with those that found
//! nobody. The preload library's profiler reads a thread's counters before and after a
//! contended acquisition or release and charges the difference to that lock; a wait's spinning
//! is what is left of it.
//!
//! Compiled in only with the `phases` feature (which the preload library's dependency turns
//! on) and never under loom: otherwise [`ENABLED`] is false, every hook is empty and
//! [`current`] reads zeros, so the locks pay nothing. With it, counting starts at [`enable`]
//! (the preload library calls it when its statistics are on), so that another program built
//! in the same workspace, which gets the feature too, pays one load of a flag per system
//! call; once on, a hook costs two clock reads around a system call that takes far longer, and
//! one thread-local update. Nothing is counted on a path that makes no system call.
//!
//! The counters are the thread's own (a thread-local, plain loads and stores), so they need no
//! atomics; they only grow, and a reader takes differences.

/// Whether the counters are compiled into this build (the `phases` feature, outside loom).
pub const ENABLED: bool = cfg!(all(feature = "phases", not(loom)));

/// One thread's counters since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Phases {
    /// Nanoseconds asleep: futex waits and naps.
    pub sleep_ns: u64,
    /// Futex waits and naps made.
    pub sleeps: u64,
    /// Nanoseconds inside `sched_yield`.
    pub yield_ns: u64,
    /// Futex wake calls issued.
    pub wakes: u64,
    /// Of those, the ones that woke no thread.
    pub wakes_empty: u64,
}

#[cfg(all(feature = "phases", not(loom)))]
mod imp {
    use super::Phases;
    use core::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use std::cell::Cell;
    use std::time::Instant;

    static ON: AtomicBool = AtomicBool::new(false);

    pub fn enable() {
        ON.store(true, Relaxed);
    }

    #[inline]
    pub fn on() -> bool {
        ON.load(Relaxed)
    }

    std::thread_local! {
        static PHASES: Cell<Phases> = const { Cell::new(Phases { sleep_ns: 0, sleeps: 0, yield_ns: 0, wakes: 0, wakes_empty: 0 }) };
    }

    #[inline]
    pub fn current() -> Phases {
        PHASES.with(Cell::get)
    }

    #[inline]
    fn update(change: impl FnOnce(&mut Phases)) {
        PHASES.with(|cell| {
            let mut phases = cell.get();
            change(&mut phases);
            cell.set(phases);
        });
    }

    #[inline]
    pub fn asleep<T>(sleep: impl FnOnce() -> T) -> T {
        if !on() {
            return sleep();
        }
        let start = Instant::now();
        let result = sleep();
        let ns = start.elapsed().as_nanos() as u64;
        update(|p| {
            p.sleep_ns += ns;
            p.sleeps += 1;
        });
        result
    }

    #[inline]
    pub fn yielding(give_way: impl FnOnce()) {
        if !on() {
            return give_way();
        }
        let start = Instant::now();
        give_way();
        let ns = start.elapsed().as_nanos() as u64;
        update(|p| p.yield_ns += ns);
    }

    #[inline]
    pub fn yielded_ns(ns: u64) {
        if on() {
            update(|p| p.yield_ns += ns);
        }
    }

    #[inline]
    pub fn woke(woken: usize) {
        if !on() {
            return;
        }
        update(|p| {
            p.wakes += 1;
            p.wakes_empty += u64::from(woken == 0);
        });
    }
}

#[cfg(not(all(feature = "phases", not(loom))))]
mod imp {
    use super::Phases;

    pub fn enable() {}

    #[inline(always)]
    pub fn on() -> bool {
        false
    }

    #[inline(always)]
    pub fn current() -> Phases {
        Phases::default()
    }

    #[inline(always)]
    pub fn asleep<T>(sleep: impl FnOnce() -> T) -> T {
        sleep()
    }

    // Loom's yields are the model's, not timed.
    #[cfg_attr(loom, allow(dead_code))]
    #[inline(always)]
    pub fn yielding(give_way: impl FnOnce()) {
        give_way()
    }

    #[cfg_attr(loom, allow(dead_code))]
    #[inline(always)]
    pub fn yielded_ns(_ns: u64) {}

    #[inline(always)]
    pub fn woke(_woken: usize) {}
}

/// Starts counting, in every thread (nothing without [`ENABLED`]).
pub fn enable() {
    imp::enable()
}

/// Whether counting is on: [`ENABLED`] and [`enable`]d.
#[inline]
pub fn on() -> bool {
    imp::on()
}

/// The calling thread's counters now (zeros when not [`on`]).
#[inline]
pub fn current() -> Phases {
    imp::current()
}

/// Runs `sleep` (a futex wait or a nap) and counts its time as the thread's sleep.
#[inline]
pub(crate) fn asleep<T>(sleep: impl FnOnce() -> T) -> T {
    imp::asleep(sleep)
}

/// Runs `give_way` (a `sched_yield`) and counts its time as the thread's yielding.
#[cfg_attr(loom, allow(dead_code))]
#[inline]
pub(crate) fn yielding(give_way: impl FnOnce()) {
    imp::yielding(give_way)
}

/// Counts `ns` spent in one `sched_yield`, timed by the caller.
#[cfg_attr(loom, allow(dead_code))]
#[inline]
pub(crate) fn yielded_ns(ns: u64) {
    imp::yielded_ns(ns)
}

/// Counts one futex wake call that woke `woken` threads.
#[inline]
pub(crate) fn woke(woken: usize) {
    imp::woke(woken)
}

impl Phases {
    /// The counts between `earlier` and `self`, both of this thread.
    pub fn since(self, earlier: Phases) -> Phases {
        Phases {
            sleep_ns: self.sleep_ns.saturating_sub(earlier.sleep_ns),
            sleeps: self.sleeps.saturating_sub(earlier.sleeps),
            yield_ns: self.yield_ns.saturating_sub(earlier.yield_ns),
            wakes: self.wakes.saturating_sub(earlier.wakes),
            wakes_empty: self.wakes_empty.saturating_sub(earlier.wakes_empty),
        }
    }
}

#[cfg(all(test, feature = "phases", not(loom)))]
mod tests {
    use super::*;
    use crate::sync::AtomicU32;

    #[test]
    fn a_futex_wait_counts_as_sleep_and_a_wake_of_nobody_as_empty() {
        enable();
        let before = current();
        let word = AtomicU32::new(0);
        let soon = std::time::Instant::now() + std::time::Duration::from_millis(2);
        crate::sys::futex::wait(&word, 0, Some(soon));
        crate::sys::futex::wake_one(&word);
        crate::sync::yield_now();
        let spent = current().since(before);
        assert_eq!((spent.sleeps, spent.wakes, spent.wakes_empty), (1, 1, 1), "{spent:?}");
        assert!(spent.sleep_ns >= 1_000_000, "slept about 2 ms: {spent:?}");
    }
}
