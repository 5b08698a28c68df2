//! A queue lock that survives more threads than CPUs: a queue lock `L`, the gate, orders the
//! waiters, and a bounded-bypass word ([`Bounded`]) is the lock, as in ShflLock and the Linux
//! qspinlock. A FIFO lock that hands the lock to a sleeping or preempted waiter leaves it held
//! by nobody running, a convoy at every hand-over when threads outnumber CPUs; here a gate
//! passed to a sleeper delays only the waiters behind it, and the word stays free to barge.
//!
//! - **Lock**: take the word if it is free (running threads barge). If nobody is queued, spin
//!   on the word for the policy's budget as the one spinner (qspinlock's pending waiter), so a
//!   lone waiter never touches the queue; over a policy whose spin phase never ends (`yield`),
//!   queue at once. If waiters are queued and the policy may sleep, on at most
//!   [`DEFAULT_CROWD_CPUS`](super::DEFAULT_CROWD_CPUS) CPUs, look at the word for about 1 µs
//!   first and stop at the first release another thread wins: a thread that queued at once
//!   would sleep at the gate while the lock came free, and a CPU whose pinned threads all sleep
//!   halts. Then take the gate, wait as its head for the word ([`Bounded`]'s spin, sleep and
//!   claim), and pass the gate on.
//! - **Unlock**: release the word; the holder never holds the gate. A waiter marks the word
//!   (`QUEUED`) as it takes the gate and once it holds the word, so only a marked word's release
//!   asks whether the gate is held. Passing the gate on leaves the new head's wake-up owed
//!   ([`Gate`]), made after the word's release, as the Linux kernel's `wake_q` does.
//! - **A head that cannot run gets the holder's CPU.** While the gate is held, a release that
//!   finds no head waiting for the word counts an *absence* in the word. Once the head has
//!   missed [`HEAD_STALL_NS`] of one thread's releases, that thread yields after its release:
//!   a woken head queued on the holder's CPU would otherwise wait for the scheduler's tick.
//!
//! Uncontended, lock is a load and a CAS on the word, unlock the word's CAS. The word alone orders critical sections (its Acquire and Release); the gate
//! only chooses which waiter contends for it, and the room beside the word is touched only by
//! the word's holder, so its accesses are Relaxed.
//!
//! Fairness: queued waiters get the lock in the gate's order (FIFO for ticket, MCS and CLH;
//! round-robin for the fair lock, whose threads move slots every 8th wait). Barging threads
//! pass the head for at most [`STARVATION_NS`] of its waiting before it claims the next
//! release, and, while it is not running, for at most [`HEAD_STALL_NS`] of each holder's
//! releases before that holder yields to it (a request to the scheduler, not a hand-over).
//!
//! The registry gates the in-order locks, `cna` and `hmcs` over the policies whose waiters give
//! their CPU away ([`Wait::LEAVES_CPU`](crate::wait::Wait::LEAVES_CPU)), `cna-gated` over all.
//! The measured reasons for the look, the owed wake-up and the yield: docs/design.md, "The gate".
//!
//! [`STARVATION_NS`]: super::STARVATION_NS

use super::bounded::{Lap, Outcome};
use super::{Bounded, Clh, Fair, McsQueue, Ticket};
use crate::sync::{AtomicU32, Ordering::Relaxed};
use crate::wait::Wait;
use core::num::NonZeroU32;
use lock_api::{RawMutex, RawMutexTimed};
use std::time::{Duration, Instant};

/// A queue lock that can be a [`Gated`] lock's gate. Its release may owe a futex wake-up of
/// the waiter it passes the gate to. The head passes the gate on as soon as it has the word,
/// so a wake-up made there is a system call inside that head's critical section, where every
/// other thread waits for it. A gate instead leaves the wake-up owed, in the gated lock's
/// guard ([`Gate::Owed`]) or in room the gated lock keeps beside its word ([`Gate::Room`]);
/// the word's holder collects it just before its release ([`Gate::due`]) and makes it just
/// after ([`Gate::settle`]), outside the critical section.
pub trait Gate: RawMutex + RawMutexTimed<Instant = Instant, Duration = Duration> {
    /// What passing the gate on leaves owed in the gated lock's guard. In the registry, the C
    /// ABI and the preload library the guard is kept in the lock's own memory, where a
    /// `pthread_mutex_t` has 16 bytes for lock and guard together.
    type Owed: Default;
    /// What the gated lock keeps beside its word for a wake-up owed in the lock itself: four
    /// bytes, which fit in the padding an 8-aligned gate leaves after the 4-byte word (a
    /// 4-aligned gate, `Reciprocating`, grows by them), or nothing. Written and read only by the word's holder, so the word orders its accesses.
    type Room: Room;
    /// Releases the gate as `unlock` does, except any wake-up of the new head, which it
    /// leaves owed in the guard it returns or in `room`.
    ///
    /// # Safety
    ///
    /// As `unlock`: `guard` is this gate's, from the acquisition being released. The caller
    /// also holds the gated lock's word, whose release collects the wake-up ([`Gate::due`]).
    unsafe fn pass_on(&self, guard: Self::Guard, room: &Self::Room) -> Self::Owed;
    /// The futex words a wake-up owed names: one that is never freed (`Option<&'static
    /// AtomicU32>`), or two for a gate of two levels (`HmcsQueue`).
    type Due;
    /// The wake-up now owed, from the guard or from `room` (which this empties). Called by the
    /// word's holder just before it releases the word, while the lock is still its to read.
    fn due(&self, owed: Self::Owed, room: &Self::Room) -> Self::Due;
    /// Makes a wake-up [`Gate::due`] returned. Called after the word's release, when the lock
    /// may be gone: it touches no memory of the lock, only futex words that are never freed.
    fn settle(due: Self::Due);
    /// Called just before a waiter takes the gate, while it holds nothing of it. The fair gate
    /// moves the thread to a new slot every 8th wait (`fair_slots::move_now_and_then`, whose
    /// docs say why); the other gates do nothing.
    #[inline]
    fn before_waiting(&self) {}
}

/// The room a [`Gated`] lock keeps beside its word for its gate ([`Gate::Room`]): nothing,
/// or one word, initially zero (nothing owed).
pub trait Room: Send + Sync {
    /// Room with nothing owed in it.
    #[cfg(not(loom))]
    const EMPTY: Self;
    /// Room with nothing owed in it (loom's atomics cannot be built in a constant).
    #[cfg(loom)]
    fn empty() -> Self;
}

impl Room for () {
    #[cfg(not(loom))]
    const EMPTY: Self = ();
    #[cfg(loom)]
    fn empty() -> Self {}
}

impl Room for AtomicU32 {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Self = AtomicU32::new(0);
    #[cfg(loom)]
    fn empty() -> Self {
        AtomicU32::new(0)
    }
}

/// The number a gate left owed in its room ([`put_in`]), taken out: the room then holds `0`,
/// nothing owed. Called by the word's holder.
#[inline]
fn take_from(room: &AtomicU32) -> Option<NonZeroU32> {
    // Relaxed: only the word's holder writes or reads the room, and the word's Acquire and
    // Release order its holders.
    let owed = NonZeroU32::new(room.load(Relaxed))?;
    room.store(0, Relaxed);
    Some(owed)
}

/// Leaves `owed` (a queue node's number, or a fair slot plus one) in `room` for
/// [`take_from`]. Called by the word's holder; the room is empty while the word is free.
#[inline]
fn put_in(room: &AtomicU32, owed: NonZeroU32) {
    // Relaxed: as in `take_from`.
    room.store(owed.get(), Relaxed);
}

/// Wakes the one waiter asleep on the futex word `due`, if there is one.
#[inline]
pub(super) fn wake_one<W: Wait>(due: Option<&'static AtomicU32>) {
    if let Some(asleep) = due {
        W::wake_one(asleep);
    }
}

/// An MCS gate owes the wake-up of its new head, asleep on its queue node: a node is never
/// freed, so the wake-up may come after the lock is gone. It travels in the guard (8 bytes):
/// `Gated<McsQueue>` is 8 bytes, 16 with the guard where it is kept, and the default lock
/// ([`Adaptive`](super::Adaptive)), which is 8 bytes, carries the same guard.
impl<W: Wait> Gate for McsQueue<W> {
    type Owed = Option<&'static AtomicU32>;
    type Room = ();
    type Due = Option<&'static AtomicU32>;
    #[inline]
    unsafe fn pass_on(&self, guard: Self::Guard, _: &()) -> Self::Owed {
        // SAFETY: forwarded from the caller.
        unsafe { McsQueue::pass_on(self, guard) }
    }
    #[inline]
    fn due(&self, owed: Self::Owed, _: &()) -> Option<&'static AtomicU32> {
        owed
    }
    #[inline]
    fn settle(due: Option<&'static AtomicU32>) {
        wake_one::<W>(due);
    }
}

/// A ticket gate owes a wake-up of the next ticket's waiting-array slot, and says so in a bit
/// of its own `sleepers` word: `Gated<Ticket>` is 16 bytes with no room to spare. The slot is
/// static. With a policy that may sleep it is bumped as the gate is passed on, so a waiter
/// spinning on it stops at once; only the futex wake-up waits for the release.
impl<W: Wait> Gate for Ticket<W> {
    type Owed = ();
    type Room = ();
    type Due = Option<&'static AtomicU32>;
    #[inline]
    unsafe fn pass_on(&self, _: Self::Guard, _: &()) {
        // SAFETY: forwarded from the caller.
        unsafe { Ticket::pass_on(self) }
    }
    #[inline]
    fn due(&self, _: (), _: &()) -> Option<&'static AtomicU32> {
        self.take_owed()
    }
    #[inline]
    fn settle(due: Option<&'static AtomicU32>) {
        if let Some(slot) = due {
            // Every waiter on the slot: the one holding the ticket cannot be told apart from
            // those whose tickets share it.
            W::wake_all(slot);
        }
    }
}

/// A CLH gate owes the wake-up of its new head, asleep on the old head's queue node, and keeps
/// the node's number in the room: `Gated<Clh>` is 16 bytes with the room in its padding.
impl<W: Wait> Gate for Clh<W> {
    type Owed = ();
    type Room = AtomicU32;
    type Due = Option<&'static AtomicU32>;
    #[inline]
    unsafe fn pass_on(&self, guard: Self::Guard, room: &AtomicU32) {
        // SAFETY: forwarded from the caller.
        if let Some(node) = unsafe { Clh::pass_on(self, guard) } {
            // A node's number is never 0 (`queue_node::index`).
            put_in(room, NonZeroU32::new(node.index).expect("queue node numbers start at 1"));
        }
    }
    #[inline]
    fn due(&self, _: (), room: &AtomicU32) -> Option<&'static AtomicU32> {
        // SAFETY: the room holds only numbers read from nodes' `index` fields (`pass_on`).
        take_from(room).map(|node| unsafe { Clh::<W>::node_state(node.get()) })
    }
    #[inline]
    fn settle(due: Option<&'static AtomicU32>) {
        wake_one::<W>(due);
    }
}

/// A fair gate owes the wake-up of its new head, asleep on its slot's signal, and keeps the
/// slot in the room: `Gated<Fair>` is 16 bytes with the room in its padding.
impl<W: Wait> Gate for Fair<W> {
    type Owed = ();
    type Room = AtomicU32;
    type Due = Option<&'static AtomicU32>;
    #[inline]
    unsafe fn pass_on(&self, _: Self::Guard, room: &AtomicU32) {
        // SAFETY: forwarded from the caller.
        if let Some(slot) = unsafe { Fair::pass_on(self) } {
            // Slots number fewer than 63: one more fits, and is not 0.
            put_in(room, NonZeroU32::MIN.saturating_add(slot as u32));
        }
    }
    #[inline]
    fn due(&self, _: (), room: &AtomicU32) -> Option<&'static AtomicU32> {
        take_from(room).map(|slot| super::fair_slots::signal(slot.get() as usize - 1))
    }
    #[inline]
    fn settle(due: Option<&'static AtomicU32>) {
        wake_one::<W>(due);
    }
    #[inline]
    fn before_waiting(&self) {
        super::fair_slots::move_now_and_then();
    }
}

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
pub struct Gated<L: Gate, W: Wait> {
    word: Bounded<W>,
    /// A wake-up the gate left owed here ([`Gate::Room`]).
    room: L::Room,
    gate: L,
}

impl<L: Gate, W: Wait> Gated<L, W> {
    /// The bounded-bypass word, which is the lock.
    #[inline]
    pub(super) fn word(&self) -> &Bounded<W> {
        &self.word
    }

    /// A new, unlocked lock with `gate` (unlocked) as its queue.
    #[cfg(loom)]
    pub fn with_gate(gate: L) -> Self {
        Gated { word: Bounded::new(), room: L::Room::empty(), gate }
    }

    /// The gate, for tests.
    #[cfg(all(test, not(loom)))]
    pub(super) fn gate(&self) -> &L {
        &self.gate
    }

    /// Whether a waiter holds the gate (a snapshot, for tests).
    #[cfg(all(test, not(loom)))]
    pub(super) fn gate_is_locked(&self) -> bool {
        self.gate.is_locked()
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<L::Owed> {
        match self.word.try_lock() {
            Some(_) => Some(L::Owed::default()),
            None => self.lock_queued(deadline),
        }
    }

    /// Waits at the gate in the queue's order, then for the word as its only queued
    /// contender. Returns the guard: what passing the gate on left owed ([`Gate`]).
    #[cold]
    pub(super) fn lock_queued(&self, deadline: Option<Instant>) -> Option<L::Owed> {
        if !self.gate.is_locked() {
            match self.word.spin_then_queue(deadline) {
                Outcome::Acquired => return Some(L::Owed::default()),
                Outcome::TimedOut => return None,
                Outcome::Queue => {}
            }
        } else if looks_before_queueing::<W>()
            && deadline.is_none_or(|deadline| Instant::now() < deadline)
            && self.word.look_before_queueing()
        {
            // A timed waiter whose deadline has passed does not look; one that looks may
            // overrun it by the look, about 1 µs.
            return Some(L::Owed::default());
        }
        self.gate.before_waiting();
        let head = match deadline {
            None => self.gate.lock(),
            Some(deadline) => self.gate.try_lock_until(deadline)?,
        };
        self.word.mark_queued();
        if self.word.lock_until(deadline).is_none() {
            // SAFETY: we took the gate above and release it once. Without the word, the
            // release wakes the new head at once: no release of ours is to come.
            unsafe { self.gate.unlock(head) };
            return None;
        }
        // Marked again now that the word is ours: a release that found the gate free before
        // this thread took it may have cleared the first mark, and this one stays until our
        // own release, which must take the path that collects what passing the gate owes.
        self.word.mark_queued();
        // SAFETY: as above, and we hold the word, whose release (`unlock`) collects what this
        // leaves owed.
        Some(unsafe { self.gate.pass_on(head, &self.room) })
    }
}

#[cfg(not(loom))]
impl<L: Gate, W: Wait> Default for Gated<L, W> {
    fn default() -> Self {
        Gated { word: Bounded::new(), room: L::Room::EMPTY, gate: L::INIT }
    }
}

// SAFETY: mutual exclusion is the word's (`Bounded`): every acquisition, barging or queued,
// ends in one of its acquisitions, and every release is one of its releases. The gate only
// decides which waiter contends for the word.
unsafe impl<L: Gate, W: Wait> RawMutex for Gated<L, W> {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Gated { word: Bounded::new(), room: L::Room::EMPTY, gate: L::INIT };
    #[cfg(loom)]
    const INIT: Self = panic!("under loom, construct locks with with_gate()");
    type Guard = L::Owed;

    #[inline]
    fn lock(&self) -> L::Owed {
        match self.word.try_lock() {
            Some(_) => L::Owed::default(),
            None => self.lock_queued(None).expect("an acquisition without a deadline cannot time out"),
        }
    }

    #[inline]
    fn try_lock(&self) -> Option<L::Owed> {
        self.word.try_lock().map(|_| L::Owed::default())
    }

    /// Releases the word, then makes the wake-up that passing the gate on left owed, in `owed`
    /// or in the lock's room.
    #[inline]
    unsafe fn unlock(&self, owed: L::Owed) {
        // A word that holds `LOCKED` alone is the word's own release: nothing is owed, since
        // a holder that passed the gate on marked the word `QUEUED`, and only its own release
        // clears that mark.
        if !self.word.release_if_alone() {
            // SAFETY: forwarded from the caller, who holds the word.
            unsafe { self.unlock_slow(owed) }
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.word.is_locked()
    }
}

impl<L: Gate, W: Wait> Gated<L, W> {
    /// The release of a word that holds more than `LOCKED`: a mark, sleepers, a spinner, a
    /// claim or absences. Collects what passing the gate owes, releases, then makes it.
    ///
    /// # Safety
    ///
    /// As `unlock`: the caller holds the word.
    #[cold]
    unsafe fn unlock_slow(&self, owed: L::Owed) {
        // Read before the release: afterwards the lock may be gone (`Bounded`'s docs say why).
        let due = self.gate.due(owed, &self.room);
        // SAFETY: forwarded from the caller. The word asks whether the gate is held only where
        // a waiter marked it, and before its release.
        let lap = unsafe { self.word.release_gated(|| self.gate.is_locked()) };
        L::settle(due);
        if lap != Lap::None && stalled::long_enough(self as *const Self as usize, lap) {
            // The head has missed HEAD_STALL_NS of our releases: let it have our CPU.
            crate::sync::yield_now();
        }
    }
}

// SAFETY: `lock_until` acquires exactly as `lock` does, or returns `None` having released the
// gate and left the word as `Bounded`'s timed acquisition leaves it.
unsafe impl<L: Gate, W: Wait> RawMutexTimed for Gated<L, W> {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> Option<L::Owed> {
        self.lock_until(super::deadline_after(timeout))
    }

    #[inline]
    fn try_lock_until(&self, deadline: Instant) -> Option<L::Owed> {
        self.lock_until(Some(deadline))
    }
}

/// Whether a thread that finds the word held and waiters queued looks at the word before it
/// queues ([`Bounded::look_before_queueing`](super::Bounded)): over a policy whose waiters may
/// sleep, on a machine where the process may run on at most
/// [`DEFAULT_CROWD_CPUS`](super::DEFAULT_CROWD_CPUS) CPUs, where a crowd of waiters on the
/// word wins (`Adaptive`'s docs). The look keeps a CPU from halting while its threads sleep
/// at the gate. `yield`'s queued waiters never sleep, so over it the look would only let the
/// threads of the CPU that holds the lock's line keep the lock from the other CPUs'
/// (docs/design.md, "The gate"). Loom's models leave it out: the look is the barging
/// `try_lock` again, which every model makes.
#[inline]
fn looks_before_queueing<W: Wait>() -> bool {
    W::MAY_SLEEP && !cfg!(loom) && crate::sys::cpu::process_cpus() <= super::DEFAULT_CROWD_CPUS
}

/// How long a gated lock's head may miss one thread's releases before that thread yields its
/// CPU, in nanoseconds: longer than a wake-up across CPUs, far shorter than the scheduler's
/// tick (4 ms at 250 Hz) that a thread woken on a busy CPU can wait for. Shorter bounds cost
/// throughput for no fairness, longer ones cost fairness (docs/design.md, "The gate").
///
/// ```
/// assert!(spinlab::lock::HEAD_STALL_NS < 4_000_000, "shorter than a 250 Hz tick");
/// ```
pub const HEAD_STALL_NS: u64 = 200_000;

/// Times the absences of a gated lock's head, per thread: the release counts them (in the
/// word, [`Bounded`]), and only every 16th reads the clock.
mod stalled {
    use super::Lap;
    #[cfg(not(loom))]
    use std::{cell::Cell, time::Instant};

    #[cfg(not(loom))]
    std::thread_local! {
        /// The lock (its address, never followed), the spell of its head's absence, and
        /// when this thread first saw that spell (at 16 absences).
        static SINCE: Cell<(usize, u32, Option<Instant>)> = const { Cell::new((0, 0, None)) };
    }

    /// Whether the head of the lock at `key` has now been absent for [`HEAD_STALL_NS`] of
    /// this thread's releases, within one spell of absence. After a yield the spell is
    /// timed again from the next lap.
    ///
    /// [`HEAD_STALL_NS`]: super::HEAD_STALL_NS
    #[cfg(not(loom))]
    pub(super) fn long_enough(key: usize, lap: Lap) -> bool {
        let now = Instant::now();
        SINCE.with(|since| match (lap, since.get()) {
            (Lap::Again(spell), (lock, timed, Some(start))) if lock == key && timed == spell => {
                let waited = now.duration_since(start).as_nanos() as u64;
                if waited < super::HEAD_STALL_NS {
                    return false;
                }
                since.set((key, spell, None));
                true
            }
            (Lap::First(spell) | Lap::Again(spell), _) => {
                since.set((key, spell, Some(now)));
                false
            }
            (Lap::None, _) => false,
        })
    }

    /// Loom has no clock: the absences are counted in every model, and nobody yields.
    #[cfg(loom)]
    pub(super) fn long_enough(_: usize, _: Lap) -> bool {
        false
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::lock::McsQueue;
    use crate::wait::{Futex, SpinPark, Yield};
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::time::Duration;

    #[test]
    fn a_head_absent_for_the_bound_of_this_threads_releases_is_reported_then_timed_again() {
        let (lock, other) = (1, 2);
        let stall = Duration::from_nanos(HEAD_STALL_NS);
        // Only lower bounds on time are asserted: a preempted test thread must not fail it.
        assert!(!stalled::long_enough(lock, Lap::First(1)), "a spell is timed from its first lap");
        std::thread::sleep(stall);
        assert!(stalled::long_enough(lock, Lap::Again(1)));
        assert!(!stalled::long_enough(lock, Lap::Again(1)), "after a yield the spell is timed again");
        std::thread::sleep(stall);
        assert!(stalled::long_enough(lock, Lap::Again(1)));
        // A lap of a spell this thread did not time, or of another lock, starts timing.
        for lap in [Lap::Again(2), Lap::First(3)] {
            std::thread::sleep(stall);
            assert!(!stalled::long_enough(lock, lap), "{lap:?}");
        }
        std::thread::sleep(stall);
        assert!(!stalled::long_enough(other, Lap::Again(3)));
        assert!(!stalled::long_enough(lock, Lap::Again(3)), "the other lock's timing replaced this one's");
    }

    /// Over `yield`, whose spin phase never ends, a waiter that finds the lock held and nobody
    /// queued queues at once, and waits for the word holding the gate: were it to run the one
    /// spinner's step, it would stay on the word to the end and never reach the gate.
    #[test]
    fn over_yield_a_waiter_that_finds_nobody_queued_queues_at_once() {
        let lock = Gated::<McsQueue<Yield>, Yield>::default();
        let guard = lock.lock();
        let acquired = AtomicBool::new(false);
        let queued = std::thread::scope(|s| {
            s.spawn(|| {
                let owed = lock.lock();
                acquired.store(true, SeqCst);
                // SAFETY: acquired just above.
                unsafe { lock.unlock(owed) };
            });
            let give_up = Instant::now() + Duration::from_secs(5);
            while !lock.gate_is_locked() && Instant::now() < give_up {
                std::thread::yield_now();
            }
            let queued = lock.gate_is_locked();
            assert!(!acquired.load(SeqCst), "the lock was held");
            // SAFETY: acquired above; released before the waiter is joined, queued or not.
            unsafe { lock.unlock(guard) };
            queued
        });
        assert!(queued, "the waiter did not take the gate while the word was held");
        assert!(acquired.load(SeqCst));
        assert!(!lock.is_locked() && !lock.gate_is_locked(), "the waiter passed the gate on");
    }

    /// With waiters queued (the gate held here by this thread), a thread that came to queue
    /// on a machine of a few CPUs takes a word that is free when it looks, and never takes the
    /// gate; one whose deadline has passed does not look, and gives up at the gate.
    #[test]
    fn a_thread_that_finds_waiters_queued_looks_at_the_word_before_the_gate() {
        let lock = Gated::<McsQueue<SpinPark>, SpinPark>::default();
        let head = lock.gate.lock();
        let soon = Instant::now() + Duration::from_millis(20);
        let looked = lock.lock_queued(Some(soon));
        assert_eq!(looked.is_some(), looks_before_queueing::<SpinPark>(), "only a machine of a few CPUs looks");
        if looked.is_some() {
            assert!(lock.is_locked() && lock.gate_is_locked(), "the word is taken; the gate is still ours");
            // SAFETY: acquired just above.
            unsafe { lock.unlock(None) };
        }
        assert!(lock.lock_queued(Some(Instant::now())).is_none(), "a passed deadline: no look, the gate is held");
        assert!(!lock.is_locked());
        // SAFETY: taken above.
        unsafe { lock.gate.unlock(head) };
    }

    /// Over `yield`, whose queued waiters never sleep, a thread that finds waiters queued goes
    /// to the gate without looking at the word, even where a waiter that may sleep would look:
    /// here the word is free and the gate held, so a look would take the word, and the gate
    /// makes the thread wait until its deadline.
    #[test]
    fn over_yield_a_thread_that_finds_waiters_queued_goes_to_the_gate_without_a_look() {
        let lock = Gated::<McsQueue<Yield>, Yield>::default();
        let head = lock.gate.lock();
        let acquired = lock.lock_queued(Some(Instant::now() + Duration::from_millis(20)));
        assert!(acquired.is_none(), "the thread took the free word instead of waiting at the gate");
        assert!(!lock.is_locked() && lock.gate_is_locked(), "the word is free; the gate is still ours");
        // SAFETY: taken above.
        unsafe { lock.gate.unlock(head) };
    }

    #[test]
    fn the_holder_counts_the_absences_of_a_head_that_does_not_come_and_clears_them_when_it_does() {
        let lock = Gated::<McsQueue<SpinPark>, SpinPark>::default();
        // A head that holds the gate but never reaches the word, as when it is not running;
        // it marked the word as it took the gate, as `lock_queued` does.
        let head = lock.gate.lock();
        lock.word.mark_queued();
        for _ in 0..15 {
            let guard = lock.lock();
            // SAFETY: locked just above.
            unsafe { lock.unlock(guard) };
        }
        assert!(!lock.word.has_lapped(), "15 absences are not a lap");
        let guard = lock.lock();
        // SAFETY: locked just above.
        unsafe { lock.unlock(guard) };
        assert!(lock.word.has_lapped(), "16 absences in a row are");
        assert!(!lock.is_locked(), "the count keeps nobody from the lock");
        // SAFETY: taken above.
        unsafe { lock.gate.unlock(head) };
        let guard = lock.lock();
        // SAFETY: locked just above.
        unsafe { lock.unlock(guard) };
        assert!(!lock.word.has_lapped(), "with the gate free, the release clears the count");
        let guard = lock.lock();
        // SAFETY: locked just above.
        unsafe { lock.unlock(guard) };
        assert!(lock.word.is_free_and_alone(), "and the mark: the next release is the word's own");
    }

    /// A waiter that passes the gate on to another leaves the word marked until its own
    /// release, whatever other releases did before it held the word: its release must take
    /// the path that makes the wake-up the passing owed.
    #[test]
    fn a_holder_that_passed_the_gate_on_releases_through_the_gate() {
        let lock = Gated::<McsQueue<Futex>, Futex>::default();
        let threads = 4 * std::thread::available_parallelism().map_or(2, |n| n.get());
        let count = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for _ in 0..2_000 {
                        let guard = lock.lock_queued(None).expect("no deadline");
                        count.store(count.load(SeqCst) + 1, SeqCst);
                        // SAFETY: locked just above.
                        unsafe { lock.unlock(guard) };
                    }
                });
            }
        });
        assert_eq!(count.into_inner(), threads as u64 * 2_000, "no owed wake-up was lost");
        assert!(!lock.gate_is_locked());
    }
}
