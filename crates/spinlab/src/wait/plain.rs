//! The loop bodies that need no state: nothing, the CPU's spin hint, and `sched_yield`.

use super::{Episode, Wait};
use crate::sync::{self, AtomicU32};

/// Re-reads the word and does nothing else: the inner loop of the Linux test-and-test-and-set
/// spin lock (seed 000, Fig. 1, lines 12-15). The most responsive policy, and the one that
/// takes the most issue slots from a co-running thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spin;

impl Wait for Spin {
    const NAME: &'static str = "spin";
    #[inline(always)]
    fn relax(_: &AtomicU32, _: u32, _: &mut Episode) -> bool {
        true
    }
}

/// Re-read plus the CPU's spin-wait hint (`pause` on x86, `isb` on aarch64), which tells the
/// core to give the co-running hyper-thread priority and avoids the memory-order machine clear
/// when the word finally changes (seed 001 §3).
#[derive(Debug, Clone, Copy, Default)]
pub struct Pause;

impl Wait for Pause {
    const NAME: &'static str = "pause";
    #[inline(always)]
    fn relax(_: &AtomicU32, _: u32, _: &mut Episode) -> bool {
        sync::cpu_relax();
        true
    }
}

/// Re-read plus `sched_yield`: the waiter offers its CPU to any runnable thread, which helps
/// when threads outnumber CPUs and costs a system call per iteration when they do not.
#[derive(Debug, Clone, Copy, Default)]
pub struct Yield;

impl Wait for Yield {
    const NAME: &'static str = "yield";
    const LEAVES_CPU: bool = true;
    #[inline]
    fn relax(_: &AtomicU32, _: u32, _: &mut Episode) -> bool {
        sync::yield_now();
        true
    }

    /// A pause where the policy would yield.
    #[inline]
    fn relax_running(_: &AtomicU32, _: u32, _: &mut Episode) -> bool {
        sync::cpu_relax();
        true
    }
}
