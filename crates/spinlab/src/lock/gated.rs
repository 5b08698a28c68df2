//! A queue lock that survives more threads than CPUs: the queue orders the waiters, and a
//! bounded-bypass word ([`Bounded`]) is the lock.
//!
//! A FIFO queue lock (ticket, MCS, CLH) or seed 003's fair lock hands the lock itself to the
//! next waiter in line. When that waiter is asleep or preempted, the lock stays held, by
//! nobody running, for a whole wake-up or time slice while runnable threads wait behind it:
//! with more threads than CPUs that convoy is every hand-over, and throughput falls to a few
//! percent of a barging lock's. `Gated` keeps the queue's order for the *waiters* and takes
//! the lock away from it, as ShflLock and the Linux qspinlock do:
//!
//! - **Lock**: one CAS on the word; if the lock is free it is ours (running threads barge).
//!   Otherwise, if nobody is queued and no other waiter is spinning, spin on the word for
//!   the policy's budget as the one spinner (qspinlock's pending waiter): a lone waiter, the
//!   common case with few threads, takes the lock without touching the queue. Only while the
//!   queue is empty: letting every newcomer spin first slowed a 16-thread program under the
//!   preload library 1.7 times (`docs/examples/hammer.c`, 0.53 s to 0.90 s on the 2-CPU
//!   guest; our reading: the queue's head then slept behind newcomers, but letting the head spin
//!   beside a newcomer did not bring the time back).
//!   Failing that, take the gate (the queue lock `L`, waiting in its order with policy `W`), then,
//!   as the only waiter at the head, acquire the word ([`Bounded`]'s spin, sleep and claim),
//!   and release the gate, so the next waiter in line becomes the head.
//! - **Unlock**: release the word. The gate is never held by the lock's holder.
//!
//! A hand-over of the gate to a waiter that is asleep delays only the waiters behind it: the
//! word stays free for any running thread. Fairness: the waiters that found the lock taken
//! get it in the gate's order (FIFO for ticket, MCS and CLH; round-robin for the fair lock),
//! and the head is passed over by barging threads for at most [`STARVATION_NS`] before it
//! claims the next release.
//!
//! The registry builds `ticket`, `mcs`, `clh` and `fair` this way for the policies that may
//! sleep (`futex`, `spin-park`, `spin-yield-park`, `pause-yield-park`), where the convoy costs a wake-up per
//! hand-over. The gate's own hand-over wakes one sleeping waiter: MCS (the classic lock,
//! [`McsQueue`](super::McsQueue)), CLH and the fair lock wake the next waiter's node, and a
//! ticket gate the next ticket's slot of its waiting array
//! (see [`Ticket`](super::Ticket); without it a ticket gate woke every sleeper per hand-over,
//! and CPython's `test_queue`, 75 threads on the GIL's mutex, did not finish in 60 s under
//! `ticket:futex`). With the pure spin policies the registry keeps the seeds' locks as they are,
//! lock hand-over and all: they are the subjects of seeds 000 and 003.
//!
//! [`STARVATION_NS`]: super::STARVATION_NS

use super::bounded::Outcome;
use super::Bounded;
use crate::wait::Wait;
use lock_api::{GuardSend, RawMutex, RawMutexTimed};
use std::time::{Duration, Instant};

/// The queue lock `L` as a gate in front of a bounded-bypass word waiting with policy `W`
/// (the module docs give the design). The word is 4 bytes; the gate is `L`.
///
/// ```
/// use spinlab::lock::{Gated, McsQueue};
/// use spinlab::wait::SpinPark;
/// let m = lock_api::Mutex::<Gated<McsQueue<SpinPark>, SpinPark>, _>::new(0);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// ```
pub struct Gated<L, W: Wait> {
    word: Bounded<W>,
    gate: L,
}

impl<L, W: Wait> Gated<L, W> {
    /// A new, unlocked lock with `gate` (unlocked) as its queue.
    #[cfg(loom)]
    pub fn with_gate(gate: L) -> Self {
        Gated { word: Bounded::new(), gate }
    }
}

impl<L: RawMutex + RawMutexTimed<Instant = Instant, Duration = Duration>, W: Wait> Gated<L, W> {
    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<GuardSend> {
        let acquired = self.word.try_lock().is_some() || self.lock_queued(deadline);
        acquired.then(GuardSend::new)
    }

    /// Waits at the gate in the queue's order, then for the word as its only queued
    /// contender.
    #[cold]
    fn lock_queued(&self, deadline: Option<Instant>) -> bool {
        if !self.gate.is_locked() {
            match self.word.spin_then_queue(deadline) {
                Outcome::Acquired => return true,
                Outcome::TimedOut => return false,
                Outcome::Queue => {}
            }
        }
        let head = match deadline {
            None => self.gate.lock(),
            Some(deadline) => match self.gate.try_lock_until(deadline) {
                Some(head) => head,
                None => return false,
            },
        };
        let acquired = self.word.lock_until(deadline).is_some();
        // SAFETY: we took the gate above and release it once, whether or not we got the word.
        unsafe { self.gate.unlock(head) };
        acquired
    }
}

#[cfg(not(loom))]
impl<L: RawMutex, W: Wait> Default for Gated<L, W> {
    fn default() -> Self {
        Gated { word: Bounded::new(), gate: L::INIT }
    }
}

// SAFETY: mutual exclusion is the word's (`Bounded`): every acquisition, barging or queued,
// ends in one of its acquisitions, and every release is one of its releases. The gate only
// decides which waiter contends for the word.
unsafe impl<L: RawMutex + RawMutexTimed<Instant = Instant, Duration = Duration>, W: Wait> RawMutex for Gated<L, W> {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Gated { word: Bounded::new(), gate: L::INIT };
    #[cfg(loom)]
    const INIT: Self = panic!("under loom, construct locks with with_gate()");
    type Guard = GuardSend;

    #[inline]
    fn lock(&self) -> GuardSend {
        if self.word.try_lock().is_none() {
            self.lock_queued(None);
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<GuardSend> {
        self.word.try_lock()
    }

    #[inline]
    unsafe fn unlock(&self, guard: GuardSend) {
        // SAFETY: forwarded from the caller, who holds the word.
        unsafe { self.word.unlock(guard) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.word.is_locked()
    }
}

// SAFETY: `lock_until` acquires exactly as `lock` does, or returns `None` having released the
// gate and left the word as `Bounded`'s timed acquisition leaves it.
unsafe impl<L: RawMutex + RawMutexTimed<Instant = Instant, Duration = Duration>, W: Wait> RawMutexTimed
    for Gated<L, W>
{
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> Option<GuardSend> {
        self.lock_until(super::deadline_after(timeout))
    }

    #[inline]
    fn try_lock_until(&self, deadline: Instant) -> Option<GuardSend> {
        self.lock_until(Some(deadline))
    }
}
