//! Busy work of a given length: the critical sections and the work between them.
//!
//! Work is a count of iterations of a dependent multiply-add chain, calibrated once to
//! nanoseconds on this machine. A count, not a deadline: a holder that is preempted in the
//! middle of its critical section still has all of it to do afterwards, as a real one would,
//! which is what makes oversubscription expensive for some locks.

use spinlab::CachePadded;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// Calibrated busy work.
#[derive(Clone, Copy, Debug)]
pub struct Work {
    /// Nanoseconds per iteration of [`spin`], the fastest of several timed runs (preemption
    /// only ever makes a run slower).
    pub ns_per_iteration: f64,
}

/// Runs `iterations` of the dependent chain; returns its result so it cannot be elided.
#[inline]
pub fn spin(iterations: u64, seed: u64) -> u64 {
    let mut x = seed;
    for _ in 0..iterations {
        x = black_box(x.wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(1));
    }
    x
}

impl Work {
    /// Times the chain (about 10 ms).
    pub fn calibrate() -> Work {
        const N: u64 = 200_000;
        let mut best = f64::MAX;
        for _ in 0..7 {
            let start = Instant::now();
            black_box(spin(N, 1));
            best = best.min(start.elapsed().as_nanos() as f64 / N as f64);
        }
        Work { ns_per_iteration: best.max(0.01) }
    }

    /// Iterations that take `ns` nanoseconds (0 for 0).
    pub fn iterations(&self, ns: f64) -> u64 {
        (ns / self.ns_per_iteration).round().max(0.0) as u64
    }
}

/// Bits of the first shared line's word that count its touches ([`SharedLines::touch_as`]
/// keeps its last writer, plus one, in the 17 above them): 2^47 touches is some 46 days of
/// acquisitions at 35 million a second.
const COUNT_BITS: u32 = 47;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// Cache lines written inside a critical section, each on its own padded line so the number
/// of lines that move between CPUs per acquisition is exactly the number asked for.
pub struct SharedLines {
    lines: Vec<CachePadded<AtomicU64>>,
}

impl SharedLines {
    /// `count` lines, all zero.
    pub fn new(count: usize) -> Self {
        SharedLines { lines: (0..count).map(|_| CachePadded::new(AtomicU64::new(0))).collect() }
    }

    /// Increments every line. Called only under the lock under test: the load and store are
    /// separate (not an atomic add), so a lock that lets two holders in loses increments, and
    /// [`SharedLines::total`] falls short of the acquisitions counted.
    #[inline]
    pub fn touch(&self) {
        self.lines.iter().for_each(|line| bump(line));
    }

    /// Increments every line, as [`SharedLines::touch`], and records `holder` as the first
    /// line's last writer, in the same store; returns the thread that wrote it last if that
    /// was another: the lock changed threads (a hand-over) since that thread's acquisition.
    /// The first line's word keeps the count in its low `COUNT_BITS` (47) bits and the last
    /// writer, plus one, in the bits above, so a hand-over costs the loop no more loads or
    /// stores than a touch. `None` without lines, and for the first writer after a reset.
    #[inline]
    pub fn touch_as(&self, holder: u16) -> Option<u16> {
        let (first, rest) = self.lines.split_first()?;
        let seen = first.load(Relaxed);
        let mark = u64::from(holder) + 1;
        first.store((seen.wrapping_add(1) & COUNT_MASK) | (mark << COUNT_BITS), Relaxed);
        rest.iter().for_each(|line| bump(line));
        let last = seen >> COUNT_BITS;
        // `last` came from a mark: at most u16::MAX + 1.
        (last != 0 && last != mark).then(|| (last - 1) as u16)
    }

    /// Increments line `i` only: one thread's own line, written without a lock as a floor's
    /// stand-in for [`SharedLines::touch`] (the same store to a line, but never moved).
    #[inline]
    pub fn touch_one(&self, i: usize) {
        bump(&self.lines[i]);
    }

    /// The first line's count: acquisitions made under the lock, if mutual exclusion held.
    pub fn total(&self) -> Option<u64> {
        self.lines.first().map(|line| line.load(Relaxed) & COUNT_MASK)
    }

    /// Sets every line back to zero.
    pub fn reset(&self) {
        for line in &self.lines {
            line.store(0, Relaxed);
        }
    }
}

/// Adds one to `line` with a separate load and store (see [`SharedLines::touch`]).
#[inline]
fn bump(line: &AtomicU64) {
    line.store(line.load(Relaxed).wrapping_add(1), Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterations_scale_with_the_calibrated_cost() {
        let w = Work { ns_per_iteration: 2.0 };
        assert_eq!(w.iterations(100.0), 50);
        assert_eq!(w.iterations(0.0), 0);
        let real = Work::calibrate();
        assert!(real.ns_per_iteration > 0.0 && real.ns_per_iteration < 1000.0);
    }

    #[test]
    fn lines_count_touches() {
        let lines = SharedLines::new(3);
        lines.touch();
        lines.touch();
        assert_eq!(lines.total(), Some(2));
        lines.reset();
        assert_eq!(lines.total(), Some(0));
        assert_eq!(SharedLines::new(0).total(), None);
    }

    #[test]
    fn a_touch_by_another_holder_is_a_hand_over_and_keeps_the_count() {
        let lines = SharedLines::new(2);
        assert_eq!(lines.touch_as(3), None, "the first writer takes the line from nobody");
        assert_eq!(lines.touch_as(3), None, "the same holder again");
        assert_eq!(lines.touch_as(0), Some(3), "thread 0 after thread 3");
        lines.touch();
        assert_eq!(lines.touch_as(0), None, "a plain touch keeps the last writer");
        assert_eq!(lines.touch_as(u16::MAX), Some(0));
        assert_eq!(lines.touch_as(3), Some(u16::MAX));
        assert_eq!(lines.total(), Some(7), "the writer's mark is not counted");
        lines.reset();
        assert_eq!(lines.touch_as(0), None, "a reset forgets the last writer");
        assert_eq!(lines.total(), Some(1));
        assert_eq!(SharedLines::new(0).touch_as(1), None, "no line, no hand-over seen");
    }
}
