//! Seed 000's long-latency loop bodies that occupy a divider: `sdivx` and `fdivd` on SPARC,
//! a 64-bit integer divide and a double-precision divide here.
//!
//! Each iteration's divide takes the previous iteration's quotient as its dividend (kept in
//! the [`Episode`]), so the divides form one dependency chain: an out-of-order core can run
//! ahead on the re-reads only until its window fills with waiting divides, after which the
//! loop advances at the divider's latency, as the in-order T1/T2 cores did.

use super::{Episode, Wait};
use crate::sync::AtomicU32;
use core::hint::black_box;

/// Re-read plus one dependent 64-bit integer divide per iteration (seed 000's `sdivx`).
#[derive(Debug, Clone, Copy, Default)]
pub struct IntDiv;

impl Wait for IntDiv {
    const NAME: &'static str = "idiv";
    #[inline]
    fn relax(_: &AtomicU32, _: u32, episode: &mut Episode) -> bool {
        // Keep the dividend large so the divide never takes an early-out for small operands.
        let dividend = episode.chain | (1 << 62);
        episode.chain = black_box(dividend) / black_box(3u64);
        true
    }
}

/// Re-read plus one dependent double-precision divide per iteration (seed 000's `fdivd`).
#[derive(Debug, Clone, Copy, Default)]
pub struct FpDiv;

impl Wait for FpDiv {
    const NAME: &'static str = "fdiv";
    #[inline]
    fn relax(_: &AtomicU32, _: u32, episode: &mut Episode) -> bool {
        // Stay in normal numbers (no denormal slow path, no infinity): x / 1.0000001 decays
        // slowly, and the chain restarts from 1e300 when it gets small.
        let previous = f64::from_bits(episode.chain);
        let dividend = if previous.is_normal() && previous > 1.0 { previous } else { 1e300 };
        episode.chain = (black_box(dividend) / black_box(1.000_000_1f64)).to_bits();
        true
    }
}
