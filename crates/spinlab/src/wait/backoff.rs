//! Exponential backoff between re-reads, as in the ia64 spin-lock contention path of seed 004.
//!
//! That code seeds the first delay from the low bits of the cycle counter, waits that many
//! cycles before re-reading the lock, doubles the delay, clips it by masking to the low bits
//! (8192 cycles), and ORs in `0xf` so it never reaches zero. Seeding from the counter spreads
//! waiters that started together; masking rather than saturating is kept from the original.

use super::{Episode, Wait};
use crate::sync::AtomicU32;

/// Exponential backoff with a cap of `CAP` cycles (a power of two; seed 004 used 8192).
///
/// ```
/// use spinlab::wait::Backoff;
/// assert_eq!(Backoff::<8192>::next_delay(0x2f), 0x5f);
/// assert_eq!(Backoff::<8192>::next_delay(0x1fff), 0x1fff);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Backoff<const CAP: u64 = 8192>;

impl<const CAP: u64> Backoff<CAP> {
    const CAP_IS_A_POWER_OF_TWO: () = assert!(CAP.is_power_of_two() && CAP >= 32);

    /// The first delay, from the cycle counter's low bits (seed 004: `now & 0x3f`).
    #[inline]
    pub fn first_delay(now: u64) -> u64 {
        (now & 0x3f) | 0xf
    }

    /// The delay after `delay`: doubled, clipped to the low bits below `CAP`, never below 15.
    #[inline]
    pub fn next_delay(delay: u64) -> u64 {
        #[allow(clippy::let_unit_value)]
        let () = Self::CAP_IS_A_POWER_OF_TWO;
        ((delay << 1) & (CAP - 1)) | 0xf
    }
}

impl<const CAP: u64> Wait for Backoff<CAP> {
    const NAME: &'static str = "backoff";
    #[inline]
    fn relax(_: &AtomicU32, _: u32, episode: &mut Episode) -> bool {
        #[cfg(not(loom))]
        {
            use crate::sys::tsc;
            let start = tsc::now();
            let delay = match episode.backoff_ticks {
                0 => Self::first_delay(start),
                previous => Self::next_delay(previous),
            };
            episode.backoff_ticks = delay;
            while tsc::now().wrapping_sub(start) < delay {
                crate::sync::cpu_relax();
            }
        }
        #[cfg(loom)]
        let _ = episode;
        true
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn delays_start_small_double_and_stay_clipped() {
        for now in 0..256u64 {
            let mut delay = Backoff::<8192>::first_delay(now);
            assert!((15..64).contains(&delay));
            let mut steps = 0;
            while delay != 8191 {
                let next = Backoff::<8192>::next_delay(delay);
                assert!((15..8192).contains(&next));
                delay = next;
                steps += 1;
                assert!(steps < 16, "backoff from {now} never reached the cap");
            }
        }
        assert_eq!(Backoff::<1024>::next_delay(1023), 1023);
    }
}
