//! The CPU's cycle counter: `rdtsc` on x86_64, `cntvct_el0` on aarch64, and its rate,
//! calibrated once against the OS's monotonic clock.
//!
//! Spin loops read it instead of `Instant::now()` because it is a few cycles, not a vDSO call.

use crate::sys::measured::MeasuredNumber;
use std::time::{Duration, Instant};

/// Reads the cycle counter. Monotonic per CPU; comparable across CPUs where the counter is
/// invariant (see [`crate::sys::cpu::CpuFeatures::invariant_tsc`]).
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` exists on every x86_64 CPU and has no memory effects.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let ticks: u64;
        // SAFETY: the virtual counter is readable from EL0 on Linux; reading it has no
        // memory effects.
        unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) ticks, options(nomem, nostack)) };
        ticks
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        static EPOCH: crate::sys::measured::Measured<Instant> = crate::sys::measured::Measured::new();
        EPOCH.get(Instant::now).elapsed().as_nanos() as u64
    }
}

/// How many counter ticks a load of `word` took, from a `rdtsc` before it to a `rdtscp` after
/// it, which waits until the load has completed; `None` where there is no such pair (the CPU
/// lacks `rdtscp`, or is not x86-64). A load whose line another CPU wrote since this one last
/// read it waits for the line to move, and takes one cache-line transfer longer than one that
/// hits.
// Unused under loom, whose models replace the hardware waits and the timed look.
#[cfg_attr(loom, allow(dead_code))]
#[inline]
pub(crate) fn timed_load(word: &core::sync::atomic::AtomicU32) -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{__rdtscp, _mm_lfence, _rdtsc};
        use core::sync::atomic::Ordering::Relaxed;
        if !crate::sys::cpu::has_rdtscp() {
            return None;
        }
        let mut aux = 0;
        // SAFETY: `lfence` and `rdtsc` exist on every x86-64 CPU, `rdtscp` was checked above;
        // none has memory effects. The `lfence`s keep the first reading after what came before
        // it and the load after the first reading; `rdtscp` waits for the load to complete.
        let (start, end) = unsafe {
            _mm_lfence();
            let start = _rdtsc();
            _mm_lfence();
            core::hint::black_box(word.load(Relaxed));
            (start, __rdtscp(&mut aux))
        };
        Some(end.wrapping_sub(start))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = word;
        None
    }
}

/// Counter ticks per second, measured on first call (about 20 ms) against `Instant`.
pub fn ticks_per_second() -> u64 {
    static RATE: MeasuredNumber = MeasuredNumber::new();
    RATE.get(|| calibrate(Duration::from_millis(20)))
}

/// Counter ticks in `ns` nanoseconds at the calibrated rate.
#[cfg_attr(loom, allow(dead_code))]
#[inline]
pub(crate) fn ticks_for_ns(ns: u64) -> u64 {
    ticks_from_ns(ns, ticks_per_second())
}

#[cfg_attr(loom, allow(dead_code))]
pub(crate) fn ticks_from_ns(ns: u64, rate: u64) -> u64 {
    ((ns as u128 * rate as u128) / 1_000_000_000).min(u64::MAX as u128) as u64
}

/// Measures the counter's rate over `window`: the best of three windows, since a window in
/// which this thread was descheduled between its two clock reads overstates nothing but
/// adds noise to both ends.
fn calibrate(window: Duration) -> u64 {
    let mut rates = [0u64; 3];
    for rate in rates.iter_mut() {
        let (t0, c0) = (Instant::now(), now());
        while t0.elapsed() < window / 3 {
            core::hint::spin_loop();
        }
        let (c1, t1) = (now(), Instant::now());
        let ns = (t1 - t0).as_nanos().max(1);
        *rate = ((c1.wrapping_sub(c0) as u128 * 1_000_000_000) / ns) as u64;
    }
    rates.sort_unstable();
    rates[1]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nanoseconds in `ticks` counter ticks at the calibrated rate.
    fn ns_for_ticks(ticks: u64) -> u64 {
        ((ticks as u128 * 1_000_000_000) / ticks_per_second().max(1) as u128) as u64
    }

    #[test]
    fn conversion_round_trips() {
        assert_eq!(ticks_from_ns(1_000, 2_000_000_000), 2_000);
        assert_eq!(ticks_from_ns(0, 3_000_000_000), 0);
        assert_eq!(ticks_from_ns(u64::MAX, 4_000_000_000), u64::MAX, "saturates");
    }

    #[test]
    fn a_load_is_timed_where_the_cpu_has_rdtscp() {
        let word = core::sync::atomic::AtomicU32::new(0);
        let expected = cfg!(target_arch = "x86_64") && crate::sys::cpu::has_rdtscp();
        assert_eq!(timed_load(&word).is_some(), expected);
        // The kernel's reading of the same cpuid bit.
        if cfg!(target_arch = "x86_64") {
            if let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") {
                let flag = info
                    .lines()
                    .filter(|l| l.starts_with("flags"))
                    .any(|l| l.split_whitespace().any(|w| w == "rdtscp"));
                assert_eq!(crate::sys::cpu::has_rdtscp(), flag);
            }
        }
    }

    #[test]
    fn counter_advances_and_rate_is_plausible() {
        let a = now();
        std::thread::sleep(Duration::from_millis(1));
        assert!(now() > a);
        // Between 1 MHz (slow generic timers) and 10 GHz: anything else is a broken reading.
        let rate = ticks_per_second();
        assert!((1_000_000..10_000_000_000).contains(&rate), "rate {rate}");
        assert!(ns_for_ticks(ticks_for_ns(1_000_000)) <= 1_000_000);
    }
}
