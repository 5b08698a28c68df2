//! Sleep in the kernel at once: what a pthread mutex or condvar waiter does after its first
//! failed attempt (seed 001's pthreads baseline).

use super::{Episode, Wait};
use crate::sync::AtomicU32;

/// Goes straight to `FUTEX_WAIT`; the releaser pays a `FUTEX_WAKE` only when the primitive's
/// state says someone is asleep. Costs nothing to a co-running thread, but a wake-up takes the
/// kernel's wake-to-run latency.
#[derive(Debug, Clone, Copy, Default)]
pub struct Futex;

impl Wait for Futex {
    const NAME: &'static str = "futex";
    const MAY_SLEEP: bool = true;
    #[inline]
    fn relax(_: &AtomicU32, _: u32, _: &mut Episode) -> bool {
        false
    }
}
