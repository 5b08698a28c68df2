//! Seed 000's `casx` loop body: an atomic compare-and-swap on a line that only this thread
//! touches, so it costs the waiter a locked instruction's latency without adding coherence
//! traffic on the lock's line.

use super::{Episode, Wait};
use crate::padded::CachePadded;
use crate::sync::{AtomicU32, Ordering, PrivateAtomicU64};

std::thread_local! {
    /// Each thread's private, padded line for the CAS.
    static PRIVATE_LINE: CachePadded<PrivateAtomicU64> = const { CachePadded::new(PrivateAtomicU64::new(0)) };
}

/// Re-read plus one `lock cmpxchg` on a private, padded cache line per iteration.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cas;

impl Wait for Cas {
    const NAME: &'static str = "cas";
    #[inline]
    fn relax(_: &AtomicU32, _: u32, _: &mut Episode) -> bool {
        PRIVATE_LINE.with(|line| {
            let seen = line.load(Ordering::Relaxed);
            // Always succeeds (nobody else writes the line); the point is the locked RMW.
            let _ = line.compare_exchange(seen, seen.wrapping_add(1), Ordering::Relaxed, Ordering::Relaxed);
        });
        true
    }
}
