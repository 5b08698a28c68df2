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

/// The cycle counter, read only once every earlier instruction has completed and before any
/// later one starts (`lfence` on both sides, as AMD and Intel document for `rdtsc`). A plain
/// read may be taken before an atomic write or read-modify-write before it has finished (a
/// notify's write, a lock's acquiring CAS), which makes an interval ending there too short.
/// Intervals between two CPUs' reads also carry any offset between their counters: measure
/// both directions and average them, which cancels it.
#[inline(always)]
pub fn fenced_now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::_mm_lfence;
        // SAFETY: LFENCE is part of SSE2, which every x86_64 CPU has; it only orders.
        unsafe { _mm_lfence() };
        let ticks = tsc::now();
        // SAFETY: as above.
        unsafe { _mm_lfence() };
        ticks
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let ticks = tsc::now();
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        ticks
    }
}

/// The smallest interval two [`fenced_now`] reads can show: the median of many back-to-back
/// pairs, measured once, subtracted from every fenced interval.
pub fn fenced_overhead() -> u64 {
    static OVERHEAD: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *OVERHEAD.get_or_init(|| {
        let mut gaps: Vec<u64> = (0..10_001)
            .map(|_| {
                let a = fenced_now();
                fenced_now().wrapping_sub(a)
            })
            .collect();
        gaps.sort_unstable();
        gaps[gaps.len() / 2]
    })
}

/// A fenced interval less the fenced reads' own cost; a negative gap (two CPUs' counters a
/// little apart) counts as zero rather than wrapping.
pub fn fenced_interval(start: u64, end: u64) -> u64 {
    let gap = end.wrapping_sub(start);
    if gap > u64::MAX / 2 {
        0
    } else {
        gap.saturating_sub(fenced_overhead())
    }
}

/// CPU time the calling thread has used, in seconds (`CLOCK_THREAD_CPUTIME_ID`): time it ran,
/// not time it was runnable or asleep.
pub fn thread_cpu_s() -> f64 {
    cpu_clock_s(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The CPU-time clock of the calling thread, which another thread of the process can read
/// with [`cpu_clock_s`] while this one runs.
pub fn this_thread_cpu_clock() -> libc::clockid_t {
    let mut id: libc::clockid_t = 0;
    // SAFETY: the calling thread's own handle, and a valid pointer.
    let failed = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
    assert_eq!(failed, 0, "pthread_getcpuclockid failed on the calling thread");
    id
}

/// Seconds so far on CPU-time `clock`: the calling thread's, or (from
/// [`this_thread_cpu_clock`]) another thread's of this process that is still running.
pub fn cpu_clock_s(clock: libc::clockid_t) -> f64 {
    // SAFETY: timespec is plain data; clock_gettime fills it.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer, and a CPU-time clock of a live thread of this process.
    unsafe { libc::clock_gettime(clock, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}
