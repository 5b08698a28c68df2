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
//!   as the only waiter at the head, acquire the word ([`Bounded`]'s spin, sleep and claim).
//!   The head keeps the gate through its critical section: it takes the word with a mark
//!   (`GATED`, set by the same compare-and-swap), and the gate's guard, where it is not
//!   zero-sized, waits in 32 bits beside the word ([`Gate`]).
//! - **Unlock**: release the word, clearing the mark in the same read-modify-write; then, if
//!   it was marked, release the gate, so the next waiter in line becomes the head. Releasing
//!   the gate wakes that waiter when it sleeps, a system call: made after the word is free,
//!   it is not part of anyone's critical section. (Until 2026-11-25 the head released the gate as soon as it
//!   had the word, and so made that call while holding the lock; docs/contention.md has what
//!   moving it changed.)
//!
//! A hand-over of the gate to a waiter that is asleep delays only the waiters behind it: the
//! word stays free for any running thread. Fairness: the waiters that found the lock taken
//! get it in the gate's order (FIFO for ticket, MCS and CLH; round-robin for the fair lock),
//! and the head is passed over by barging threads for at most [`STARVATION_NS`] before it
//! claims the next release.
//!
//! The registry builds `ticket`, `mcs`, `clh` and `fair` this way for the policies that may
//! sleep (`futex`, `spin-park`, `spin-yield-park`, `pause-yield-park`), where the convoy costs a wake-up per
//! hand-over. The gate's own hand-over wakes one sleeping waiter: MCS, CLH and the fair lock
//! wake the next waiter's node, and a ticket gate the next ticket's slot of its waiting array
//! (see [`Ticket`](super::Ticket); without it a ticket gate woke every sleeper per hand-over,
//! and CPython's `test_queue`, 75 threads on the GIL's mutex, did not finish in 60 s under
//! `ticket:futex`). With the pure spin policies the registry keeps the seeds' locks as they are,
//! lock hand-over and all: they are the subjects of seeds 000 and 003.
//!
//! [`STARVATION_NS`]: super::STARVATION_NS

use super::bounded::Outcome;
use super::queue_node;
use super::Bounded;
use crate::wait::Wait;
use core::cell::UnsafeCell;
use core::num::NonZeroU32;
use lock_api::{GuardSend, RawMutex, RawMutexTimed};
use std::time::{Duration, Instant};

/// A lock that [`Gated`] can use as its gate: a timed lock whose guard the gated lock can
/// keep, from the head's acquisition to its release, without growing past 16 bytes.
///
/// # Safety
/// [`Gate::take`] must give back a guard that releases what the guard given to
/// [`Gate::keep`] held.
pub unsafe trait Gate: RawMutex + RawMutexTimed<Instant = Instant, Duration = Duration> {
    /// Where the gated lock keeps the guard: nothing for a zero-sized guard, 32 bits for a
    /// queue node.
    type Slot: Send + Sync;

    /// An empty slot.
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Self::Slot;

    /// Keeps `guard` in `slot`.
    ///
    /// # Safety
    /// Only the gated lock's holder touches `slot`.
    unsafe fn keep(slot: &Self::Slot, guard: Self::Guard);

    /// The guard that [`Gate::keep`] put in `slot`.
    ///
    /// # Safety
    /// Only the gated lock's holder touches `slot`, and takes the guard once per `keep`.
    unsafe fn take(slot: &Self::Slot) -> Self::Guard;
}

/// [`Gate`] for locks whose guard is the zero-sized [`GuardSend`]: there is nothing to keep.
macro_rules! gate_with_guard_send {
    ($($lock:ident),*) => {$(
        // SAFETY: the guard carries nothing; any `GuardSend` releases the lock.
        unsafe impl<W: Wait> Gate for super::$lock<W> {
            type Slot = ();
            const EMPTY: () = ();
            #[inline]
            unsafe fn keep(_: &(), _: GuardSend) {}
            #[inline]
            unsafe fn take(_: &()) -> GuardSend {
                GuardSend::new()
            }
        }
    )*};
}
gate_with_guard_send!(Ticket, Fair);

/// Implements [`Gate`] for a queue lock whose guard is its holder's queue node (`node`),
/// kept as the node's number. Invoked in the lock's own module, where the guard's field is.
macro_rules! gate_with_node_guard {
    ($lock:ident, $guard:ident) => {
        // SAFETY: the guard is the holder's node, kept by its number.
        unsafe impl<W: Wait> super::Gate for $lock<W> {
            type Slot = super::gated::NodeSlot;
            #[allow(clippy::declare_interior_mutable_const)]
            const EMPTY: Self::Slot = super::gated::NodeSlot::EMPTY;
            #[inline]
            unsafe fn keep(slot: &Self::Slot, guard: $guard) {
                // SAFETY: forwarded.
                unsafe { slot.keep(guard.node) }
            }
            #[inline]
            unsafe fn take(slot: &Self::Slot) -> $guard {
                // SAFETY: forwarded.
                $guard { node: unsafe { slot.take() } }
            }
        }
    };
}
pub(super) use gate_with_node_guard;

/// A queue node's number ([`queue_node`]), kept for a [`Gate`] whose guard is its node.
pub struct NodeSlot(UnsafeCell<u32>);

// SAFETY: only the gated lock's holder touches the cell (the `Gate` contract), so accesses
// are ordered by the lock's acquisitions and releases.
unsafe impl Sync for NodeSlot {}

impl NodeSlot {
    #[allow(clippy::declare_interior_mutable_const)]
    pub(crate) const EMPTY: NodeSlot = NodeSlot(UnsafeCell::new(0));

    /// # Safety
    /// As [`Gate::keep`].
    #[inline]
    pub(crate) unsafe fn keep(&self, node: &'static queue_node::Node) {
        // SAFETY: forwarded.
        unsafe { *self.0.get() = node.index.get() };
    }

    /// # Safety
    /// As [`Gate::take`].
    #[inline]
    pub(crate) unsafe fn take(&self) -> &'static queue_node::Node {
        // SAFETY: forwarded; `keep` stored a node's number.
        unsafe { queue_node::by_index(NonZeroU32::new_unchecked(*self.0.get())) }
    }
}

/// The queue lock `L` as a gate in front of a bounded-bypass word waiting with policy `W`
/// (the module docs give the design). The word is 4 bytes; the gate is `L`.
///
/// ```
/// use spinlab::lock::{Gated, Mcs};
/// use spinlab::wait::SpinPark;
/// let m = lock_api::Mutex::<Gated<Mcs<SpinPark>, SpinPark>, _>::new(0);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// ```
pub struct Gated<L: Gate, W: Wait> {
    word: Bounded<W>,
    /// The gate's guard while the holder took the lock through the gate (the word says so).
    head: L::Slot,
    gate: L,
}

impl<L: Gate, W: Wait> Gated<L, W> {
    /// A new, unlocked lock with `gate` (unlocked) as its queue.
    #[cfg(loom)]
    pub fn with_gate(gate: L) -> Self {
        Gated { word: Bounded::new(), head: L::EMPTY, gate }
    }
}

impl<L: Gate, W: Wait> Gated<L, W> {
    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<GuardSend> {
        let acquired = self.word.try_lock().is_some() || self.lock_queued(deadline);
        acquired.then(GuardSend::new)
    }

    /// Waits at the gate in the queue's order, then for the word as its only queued
    /// contender. Having come through the gate, keeps it until `unlock`.
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
        if !self.word.lock_gated(deadline) {
            // SAFETY: we took the gate above and release it once.
            unsafe { self.gate.unlock(head) };
            return false;
        }
        // SAFETY: we hold the word.
        unsafe { L::keep(&self.head, head) };
        true
    }
}

#[cfg(not(loom))]
impl<L: Gate, W: Wait> Default for Gated<L, W> {
    fn default() -> Self {
        Gated { word: Bounded::new(), head: L::EMPTY, gate: L::INIT }
    }
}

// SAFETY: mutual exclusion is the word's (`Bounded`): every acquisition, barging or queued,
// ends in one of its acquisitions, and every release is one of its releases. The gate only
// decides which waiter contends for the word.
unsafe impl<L: Gate, W: Wait> RawMutex for Gated<L, W> {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Gated { word: Bounded::new(), head: L::EMPTY, gate: L::INIT };
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
    unsafe fn unlock(&self, _: GuardSend) {
        // SAFETY: forwarded from the caller, who holds the word. If it came through the gate,
        // it still holds the gate, and `head` is its own until it releases it: only a holder
        // that came through the gate writes `head`.
        unsafe {
            if self.word.unlock_gated() {
                self.gate.unlock(L::take(&self.head));
            }
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.word.is_locked()
    }
}

// SAFETY: `lock_until` acquires exactly as `lock` does, or returns `None` having released the
// gate and left the word as `Bounded`'s timed acquisition leaves it.
unsafe impl<L: Gate, W: Wait> RawMutexTimed for Gated<L, W> {
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::lock::{Clh, Fair, Mcs, Ticket};
    use crate::wait::{Futex, SpinPark};
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::time::Duration;

    /// A holder that came through the gate keeps it until its release; one that barged holds
    /// no gate, and its release leaves the gate alone.
    fn the_gate_is_held_through_the_critical_section<L: Gate + Sync>() {
        let lock = Gated::<L, Futex>::default();
        let first = lock.lock();
        let queued_has_it = AtomicBool::new(false);
        let release = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                // The word is held, so this waiter goes through the gate (Futex never spins).
                let guard = lock.lock();
                queued_has_it.store(true, SeqCst);
                while !release.load(SeqCst) {
                    std::thread::yield_now();
                }
                // SAFETY: we hold the lock through `guard`.
                unsafe { lock.unlock(guard) };
            });
            while !lock.gate.is_locked() {
                std::thread::yield_now();
            }
            // SAFETY: we hold the lock through `first`.
            unsafe { lock.unlock(first) };
            while !queued_has_it.load(SeqCst) {
                std::thread::yield_now();
            }
            assert!(lock.gate.is_locked(), "{}: the gate was released inside the critical section", type_name::<L>());
            release.store(true, SeqCst);
        });
        assert!(!lock.gate.is_locked() && !lock.is_locked(), "{}: left held", type_name::<L>());
        // A barging acquisition holds no gate; a gate another waiter holds stays held.
        let barged = lock.try_lock().expect("the lock is free");
        let gate = lock.gate.lock();
        // SAFETY: we hold the lock through `barged`.
        unsafe { lock.unlock(barged) };
        assert!(lock.gate.is_locked(), "{}: a barging release let go of the gate", type_name::<L>());
        // SAFETY: we took the gate above.
        unsafe { lock.gate.unlock(gate) };
    }

    fn type_name<T>() -> &'static str {
        std::any::type_name::<T>()
    }

    #[test]
    fn every_gate_is_held_through_the_critical_section() {
        the_gate_is_held_through_the_critical_section::<Mcs<Futex>>();
        the_gate_is_held_through_the_critical_section::<Clh<Futex>>();
        the_gate_is_held_through_the_critical_section::<Ticket<Futex>>();
        the_gate_is_held_through_the_critical_section::<Fair<Futex>>();
    }

    /// A timed waiter that gives up at the gate or at the word leaves neither held.
    #[test]
    fn a_timed_out_waiter_leaves_the_gate_free() {
        let lock = Gated::<Mcs<SpinPark>, SpinPark>::default();
        let held = lock.lock();
        std::thread::scope(|s| {
            s.spawn(|| assert!(lock.try_lock_for(Duration::from_millis(20)).is_none()));
        });
        assert!(!lock.gate.is_locked(), "a waiter that timed out kept the gate");
        // SAFETY: we hold the lock through `held`.
        unsafe { lock.unlock(held) };
        assert!(!lock.is_locked());
    }

    #[test]
    fn a_gated_lock_keeps_to_16_bytes() {
        assert!(size_of::<Gated<Mcs<SpinPark>, SpinPark>>() <= 16);
        assert!(size_of::<Gated<Clh<SpinPark>, SpinPark>>() <= 16);
        assert!(size_of::<Gated<Ticket<SpinPark>, SpinPark>>() <= 16);
        assert!(size_of::<Gated<Fair<SpinPark>, SpinPark>>() <= 16);
    }
}
