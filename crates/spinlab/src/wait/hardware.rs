#![cfg_attr(loom, allow(dead_code, unused_imports))]
//! User-mode monitor/wait instructions: seed 001's MONITOR/MWAIT, as today's CPUs let an
//! ordinary thread use them.
//!
//! - Intel WAITPKG: `umonitor` arms a monitor on the word's line, `umwait` sleeps in C0.1
//!   until the line is written or a TSC deadline passes; `tpause` sleeps to a deadline with
//!   no monitor.
//! - AMD MONITORX/MWAITX: the same pair, with a timer in TSC-rate ticks.
//! - aarch64 `wfe`: an exclusive load arms the exclusive monitor; a write to the line by
//!   another core generates the event that ends the `wfe` (so does Linux's 100 µs event
//!   stream, which bounds every wait).
//!
//! Every instruction here is executed only after [`crate::sys::cpu::features`] said the CPU
//! has it. Code that names one of these policies on a CPU without the feature gets the
//! documented fallback: the loop body becomes [`super::Pause`]'s. The registry refuses to build
//! such a lock and reports the missing feature instead, so measurements never silently run
//! the fallback. The instruction encodings are emitted as bytes, because the assembler
//! otherwise insists on a target feature the build cannot assume.

use super::{Episode, Wait};
#[cfg(not(loom))]
use crate::sync::Ordering;
use crate::sync::{self, AtomicU32};
use crate::sys::cpu;
#[cfg(not(loom))]
use crate::sys::tsc;
use std::time::Instant;

/// Longest single `umwait`/`mwaitx`, in TSC ticks. Linux caps `umwait` at
/// `/sys/devices/system/cpu/umwait_control/max_time` (100 000 by default) anyway; the lock
/// re-checks after each one.
pub(crate) const MONITOR_SLICE_TICKS: u64 = 100_000;
/// One `tpause`, in TSC ticks: short, because nothing ends it early when the word changes.
pub(crate) const TPAUSE_TICKS: u64 = 1_000;

/// The TSC value a hardware wait starting at `now` should end at: one slice, or sooner if the
/// episode's deadline is `until_deadline` ticks away.
pub(crate) fn hardware_deadline(now: u64, slice: u64, until_deadline: Option<u64>) -> u64 {
    now.saturating_add(until_deadline.map_or(slice, |t| t.min(slice)))
}

/// Ticks from now until `deadline` (zero if it passed).
#[cfg(not(loom))]
fn ticks_until(deadline: Option<Instant>) -> Option<u64> {
    deadline.map(|d| tsc::ticks_for_ns(d.saturating_duration_since(Instant::now()).as_nanos() as u64))
}

/// `umonitor` the word, then `umwait` until it is written or a deadline passes (WAITPKG).
#[derive(Debug, Clone, Copy, Default)]
pub struct Umwait;

impl Wait for Umwait {
    const NAME: &'static str = "umwait";
    fn availability() -> Result<(), super::Unavailable> {
        require(cpu::features().waitpkg, Self::NAME, "WAITPKG (umonitor/umwait, CPUID.7.0:ECX[5])")
    }
    #[inline]
    fn relax(word: &AtomicU32, current: u32, episode: &mut Episode) -> bool {
        #[cfg(all(target_arch = "x86_64", not(loom)))]
        if cpu::features().waitpkg {
            let end = hardware_deadline(tsc::now(), MONITOR_SLICE_TICKS, ticks_until(episode.deadline()));
            // SAFETY: WAITPKG is present (checked above); `word` is a live address.
            unsafe { x86::umonitor(word.as_ptr() as *const u8) };
            // Re-check after arming: a write between the caller's read and `umonitor` would
            // otherwise be missed until the deadline.
            if word.load(Ordering::Relaxed) == current {
                // SAFETY: as above.
                unsafe { x86::umwait(end) };
            }
            return true;
        }
        let _ = (word, current, &episode);
        sync::cpu_relax();
        true
    }
}

/// `tpause` for a short deadline between re-reads (WAITPKG).
#[derive(Debug, Clone, Copy, Default)]
pub struct Tpause;

impl Wait for Tpause {
    const NAME: &'static str = "tpause";
    fn availability() -> Result<(), super::Unavailable> {
        require(cpu::features().waitpkg, Self::NAME, "WAITPKG (tpause, CPUID.7.0:ECX[5])")
    }
    #[inline]
    fn relax(_: &AtomicU32, _: u32, episode: &mut Episode) -> bool {
        #[cfg(all(target_arch = "x86_64", not(loom)))]
        if cpu::features().waitpkg {
            let end = hardware_deadline(tsc::now(), TPAUSE_TICKS, ticks_until(episode.deadline()));
            // SAFETY: WAITPKG is present (checked above).
            unsafe { x86::tpause(end) };
            return true;
        }
        let _ = &episode;
        sync::cpu_relax();
        true
    }
}

/// `monitorx` the word, then `mwaitx` with a timer (AMD MONITORX).
#[derive(Debug, Clone, Copy, Default)]
pub struct Mwaitx;

impl Wait for Mwaitx {
    const NAME: &'static str = "mwaitx";
    fn availability() -> Result<(), super::Unavailable> {
        require(cpu::features().monitorx, Self::NAME, "MONITORX/MWAITX (CPUID.80000001h:ECX[29])")
    }
    #[inline]
    fn relax(word: &AtomicU32, current: u32, episode: &mut Episode) -> bool {
        #[cfg(all(target_arch = "x86_64", not(loom)))]
        if cpu::features().monitorx {
            let ticks = hardware_deadline(0, MONITOR_SLICE_TICKS, ticks_until(episode.deadline()));
            // SAFETY: MONITORX is present (checked above); `word` is a live address.
            unsafe { x86::monitorx(word.as_ptr() as *const u8) };
            if word.load(Ordering::Relaxed) == current {
                // SAFETY: as above.
                unsafe { x86::mwaitx(ticks.clamp(1, u32::MAX as u64) as u32) };
            }
            return true;
        }
        let _ = (word, current, &episode);
        sync::cpu_relax();
        true
    }
}

/// Exclusive load of the word, then `wfe` (aarch64).
#[derive(Debug, Clone, Copy, Default)]
pub struct Wfe;

impl Wait for Wfe {
    const NAME: &'static str = "wfe";
    fn availability() -> Result<(), super::Unavailable> {
        require(cpu::features().wfe, Self::NAME, "aarch64 WFE (an Arm CPU)")
    }
    #[inline]
    fn relax(word: &AtomicU32, current: u32, _: &mut Episode) -> bool {
        #[cfg(all(target_arch = "aarch64", not(loom)))]
        {
            let seen: u32;
            // SAFETY: `word` is a live, aligned 32-bit location. `ldxr` arms the exclusive
            // monitor on its line; a store to the line by another core clears the monitor and
            // sends the event that ends `wfe`. Linux's timer event stream bounds the wait.
            unsafe {
                core::arch::asm!("ldxr {seen:w}, [{addr}]", addr = in(reg) word.as_ptr(), seen = out(reg) seen, options(nostack, readonly));
                if seen == current {
                    core::arch::asm!("wfe", options(nomem, nostack));
                }
            }
            return true;
        }
        #[allow(unreachable_code)]
        {
            let _ = (word, current);
            sync::cpu_relax();
            true
        }
    }
}

fn require(present: bool, policy: &'static str, needs: &'static str) -> Result<(), super::Unavailable> {
    if present {
        Ok(())
    } else {
        Err(super::Unavailable { policy, needs })
    }
}

#[cfg(all(target_arch = "x86_64", not(loom)))]
mod x86 {
    //! Raw encodings: `umonitor rax` = F3 0F AE F0, `umwait ecx` = F2 0F AE F1,
    //! `tpause ecx` = 66 0F AE F1, `monitorx` = 0F 01 FA, `mwaitx` = 0F 01 FB.

    /// Hint for `umwait`/`tpause`: 1 selects C0.1, the lighter state with the faster wake-up.
    const C0_1: u32 = 1;

    /// # Safety
    /// The CPU must have WAITPKG.
    #[inline]
    pub unsafe fn umonitor(addr: *const u8) {
        // SAFETY: the caller checked WAITPKG; `umonitor` only arms address monitoring.
        unsafe { core::arch::asm!(".byte 0xf3, 0x0f, 0xae, 0xf0", in("rax") addr, options(nostack, preserves_flags)) };
    }

    /// # Safety
    /// The CPU must have WAITPKG.
    #[inline]
    pub unsafe fn umwait(tsc_deadline: u64) {
        // SAFETY: the caller checked WAITPKG; `umwait` waits, then sets CF.
        unsafe {
            core::arch::asm!(".byte 0xf2, 0x0f, 0xae, 0xf1", in("ecx") C0_1,
                in("eax") tsc_deadline as u32, in("edx") (tsc_deadline >> 32) as u32, options(nostack))
        };
    }

    /// # Safety
    /// The CPU must have WAITPKG.
    #[inline]
    pub unsafe fn tpause(tsc_deadline: u64) {
        // SAFETY: the caller checked WAITPKG; `tpause` waits, then sets CF.
        unsafe {
            core::arch::asm!(".byte 0x66, 0x0f, 0xae, 0xf1", in("ecx") C0_1,
                in("eax") tsc_deadline as u32, in("edx") (tsc_deadline >> 32) as u32, options(nostack))
        };
    }

    /// # Safety
    /// The CPU must have MONITORX.
    #[inline]
    pub unsafe fn monitorx(addr: *const u8) {
        // SAFETY: the caller checked MONITORX; no extensions (ecx = 0), no hints (edx = 0).
        unsafe {
            core::arch::asm!(".byte 0x0f, 0x01, 0xfa", in("rax") addr, in("ecx") 0u32, in("edx") 0u32,
                options(nostack, preserves_flags))
        };
    }

    /// # Safety
    /// The CPU must have MONITORX.
    #[inline]
    pub unsafe fn mwaitx(timer_ticks: u32) {
        // ecx bit 1 enables the timer in ebx; eax 0xf0 asks for C0 (no deeper C-state), as
        // Linux's delay_mwaitx does. LLVM reserves rbx, so it is swapped in by hand.
        // SAFETY: the caller checked MONITORX; rbx is restored before the block ends.
        unsafe {
            core::arch::asm!(
                "xchg {timer:r}, rbx",
                ".byte 0x0f, 0x01, 0xfb",
                "xchg {timer:r}, rbx",
                timer = inout(reg) timer_ticks as u64 => _,
                in("eax") 0xf0u32, in("ecx") 2u32,
                options(nostack, preserves_flags)
            )
        };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn hardware_deadline_is_one_slice_or_the_episode_deadline_whichever_is_sooner() {
        assert_eq!(hardware_deadline(1_000, 100, None), 1_100);
        assert_eq!(hardware_deadline(1_000, 100, Some(30)), 1_030);
        assert_eq!(hardware_deadline(1_000, 100, Some(0)), 1_000, "a passed deadline waits not at all");
        assert_eq!(hardware_deadline(u64::MAX - 5, 100, None), u64::MAX, "no wrap-around into the past");
    }

    /// On a CPU without the feature the policy must still wait correctly, through its
    /// documented fallback, and never execute the instruction (which would be SIGILL).
    #[test]
    fn missing_instructions_fall_back_without_executing_them() {
        let word = AtomicU32::new(0);
        let mut episode = Episode::new(None);
        for _ in 0..1000 {
            assert!(Umwait::relax(&word, 0, &mut episode));
            assert!(Tpause::relax(&word, 0, &mut episode));
            assert!(Mwaitx::relax(&word, 0, &mut episode));
            assert!(Wfe::relax(&word, 0, &mut episode));
        }
        let f = cpu::features();
        assert_eq!(Umwait::availability().is_ok(), f.waitpkg);
        assert_eq!(Tpause::availability().is_ok(), f.waitpkg);
        assert_eq!(Mwaitx::availability().is_ok(), f.monitorx);
        assert_eq!(Wfe::availability().is_ok(), f.wfe);
    }
}
