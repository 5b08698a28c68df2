//! Time: the CPU's cycle counter (via `spinlab::sys::tsc`) for short intervals, and the cost
//! of reading it, which every interval measured with two reads includes once and which is
//! subtracted from it ("timer-overhead correction").

use spinlab::sys::tsc;
use std::hint::black_box;

/// The counter's rate and the cost of one timed interval's two reads.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    /// Counter ticks per second (calibrated against the OS clock by the library).
    pub ticks_per_second: u64,
    /// Ticks between two back-to-back reads: the smallest interval two reads can show, which
    /// every measured interval contains once. The median of many pairs, since the minimum is
    /// reached only when both reads retire back to back.
    pub overhead_ticks: u64,
}

impl Clock {
    /// Calibrates the rate and measures the read cost (a few tens of milliseconds, once).
    pub fn calibrate() -> Clock {
        let ticks_per_second = tsc::ticks_per_second();
        Clock { ticks_per_second, overhead_ticks: read_pair_ticks(10_001) }
    }

    /// Nanoseconds in `ticks`.
    #[inline]
    pub fn ns(&self, ticks: f64) -> f64 {
        ticks * 1e9 / self.ticks_per_second as f64
    }

    /// Ticks in `ns` nanoseconds.
    #[inline]
    pub fn ticks(&self, ns: f64) -> u64 {
        (ns * self.ticks_per_second as f64 / 1e9).round().max(0.0) as u64
    }

    /// An interval between two reads, less the cost of the reads (never below zero).
    #[inline]
    pub fn corrected(&self, start: u64, end: u64) -> u64 {
        end.wrapping_sub(start).saturating_sub(self.overhead_ticks)
    }

    /// The timer overhead in nanoseconds.
    pub fn overhead_ns(&self) -> f64 {
        self.ns(self.overhead_ticks as f64)
    }
}

/// The median of `pairs` back-to-back counter-read intervals, in ticks.
pub fn read_pair_ticks(pairs: usize) -> u64 {
    let mut gaps: Vec<u64> = (0..pairs)
        .map(|_| {
            let a = tsc::now();
            let b = black_box(tsc::now());
            b.wrapping_sub(a)
        })
        .collect();
    gaps.sort_unstable();
    gaps[gaps.len() / 2]
}

/// Reads the counter (re-exported so experiments name one clock).
#[inline(always)]
pub fn now() -> u64 {
    tsc::now()
}
