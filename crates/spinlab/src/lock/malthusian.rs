//! A concurrency-restricting wrapper over an in-order lock `L`, after Dice's Malthusian locks
//! (EuroSys'17, MCSCR). About one thread per CPU circulates through `L`, the *active set*; the
//! surplus threads wait *passive*, each on its own queue node, and are let back in one at a
//! time. `L` hands over to its next waiter whether or not it runs; with no more active threads
//! than CPUs that waiter almost always runs, so `L`'s hand-overs do not convoy.
//!
//! - **Lock**: with nobody waiting or passive (the word below), try `L` at once. Otherwise
//!   count yourself an active waiter if fewer than `max(CPUS - 1, 1)` wait (`CPUS`: the
//!   parameter, or if 0 the CPUs the process may run on, [`process_cpus`]), and lock `L`;
//!   else push a node on the passive stack and wait on it with `W` until admitted, then count
//!   yourself and lock `L`. Taking `L` leaves the count and counts the acquisition, one atomic.
//! - **Unlock**: with nobody passive, release `L`. Otherwise, if the acquisitions counted are
//!   at a multiple of [`MALTHUSIAN_ROTATION`] or no active thread waits (the lock must not go
//!   idle while threads are parked), admit the oldest passive thread first; release `L`; then
//!   wake it, outside the critical section.
//! - **Admission** takes the bottom node of the stack (a walk over the passive nodes) while
//!   holding the word's `ADMITTING` bit, the stack's one consumer; arrivals push with a CAS.
//!   A passive waiter that times out marks its node `ABANDONED`; the admitter skips it and
//!   gives the node back.
//!
//! No passive thread stays parked while the lock is free: a thread goes passive only if it
//! sees an active waiter, and each active waiter leaves the count by an atomic on the word,
//! which sees every push before it: leaving by taking `L`, it admits at its release if nobody
//! else waits; leaving by timing out as the last waiter, it admits at once.
//!
//! - **Fairness**: none among the active set beyond `L`'s own (FIFO for `Mcs`), and arrivals
//!   that find fewer than the limit waiting pass passive threads. Each multiple of the
//!   rotation admits the oldest live passive thread, so one with `k` live passive threads
//!   ahead of it is admitted within `(k + 1) * MALTHUSIAN_ROTATION` counted acquisitions
//!   after it pushed, then gets `L`'s order. Not counted: `try_lock`s, and acquisitions by
//!   threads that found the word empty, which a push ends (but for a racing one per thread).
//! - **Memory**: `L`'s bytes and the 8-byte word (16 with `Mcs`); one queue node from the
//!   pool (`queue_node`) per passive thread; what `L` needs per active waiter.
//! - **Uncontended cost**: `L`'s, plus one plain load of the word to lock and one to unlock:
//!   no atomic of its own. Contended, two atomics on the word per counted acquisition.
//! - **More threads than CPUs**: with a policy that sleeps, passive threads leave their CPUs
//!   to the active set. With a pure spin policy they spin on their own nodes, off `L`'s line,
//!   but still take CPU time from the active threads, whose hand-overs then convoy as `L`'s.
//!
//! [`process_cpus`]: crate::sys::cpu::process_cpus

use super::queue_node::{self, Node};
use crate::sync::{AtomicU32, AtomicU64, Ordering::*};
use crate::sys::futex::FutexWait;
use crate::wait::{Episode, Spun, Wait};
use core::marker::PhantomData;
use lock_api::{RawMutex, RawMutexTimed};
use std::time::{Duration, Instant};

/// Every how many counted acquisitions the holder admits the oldest passive thread. An
/// admission costs a futex wake-up and a thread that comes back to cold caches, about as much
/// as tens of hand-overs; one per 64 keeps that a small part of the lock's time, while a
/// passive thread waits at most 64 acquisitions for each passive thread ahead of it (the same
/// trade as [`CNA_BYPASS_BOUND`](super::CNA_BYPASS_BOUND)).
///
/// ```
/// assert!(2048u32.is_multiple_of(spinlab::lock::MALTHUSIAN_ROTATION), "the word counts acquisitions mod 2048");
/// ```
pub const MALTHUSIAN_ROTATION: u32 = 64;

// The word (`Malthusian::crowd`), written by arrivals, acquirers and admitters:
//
// | bits   | name        | meaning                                                          |
// |--------|-------------|------------------------------------------------------------------|
// | 0..32  | `TOP`       | the newest passive node's number (`queue_node::index`); 0: none  |
// | 32..52 | `WAITING`   | active waiters: counted, and not yet holding `L` nor gone        |
// | 52     | `ADMITTING` | a thread is taking a node off the passive stack                  |
// | 53..64 | `ACQUIRED`  | counted acquisitions, mod 2048; the carry falls off the top      |
const TOP: u64 = 0xffff_ffff;
const WAITING_ONE: u64 = 1 << 32;
const WAITING: u64 = ((1 << 20) - 1) * WAITING_ONE;
const ADMITTING: u64 = 1 << 52;
const ACQUIRED_SHIFT: u32 = 53;
const ACQUIRED_ONE: u64 = 1 << ACQUIRED_SHIFT;
const _: () = assert!((1u32 << (64 - ACQUIRED_SHIFT)).is_multiple_of(MALTHUSIAN_ROTATION));

/// The limit on active waiters never comes near `WAITING`'s 20 bits: the count exceeds it
/// only by threads admitted at once, one per admission.
const MOST_WAITING: usize = 1 << 16;

// A passive node's state (`QueueNode::state`); its link to the next older passive node is
// `QueueNode::below` (0: the oldest).
const ADMITTED: u32 = 0;
const PASSIVE: u32 = 1;
/// Passive, and may be asleep on `state`: the admitter must wake it.
const ASLEEP: u32 = 2;
/// The waiter timed out and left; the node now belongs to the stack.
const ABANDONED: u32 = 3;

/// Why a thread admits a passive one.
#[derive(Clone, Copy)]
enum Why {
    /// A holder: the rotation is due.
    Rotation,
    /// A holder: nobody waits in `L`.
    Idle,
    /// The last active waiter, giving up: it leaves the count as it releases the bit.
    Quitter,
}

/// The number of no node.
const NONE: u32 = 0;

/// `L` with at most about `CPUS` threads inside it, the others passive, waiting with policy `W`
/// (the module docs give the design); `CPUS` 0 means the CPUs the process may run on. `L`'s
/// bytes and 8; `Malthusian<Mcs<W>, W>` is the registry's `malthusian`, 16 bytes.
///
/// ```
/// use spinlab::{lock::{Malthusian, Mcs}, wait::SpinPark};
/// let m = lock_api::Mutex::<Malthusian<Mcs<SpinPark>, SpinPark>, _>::new(0u32);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// assert_eq!(size_of::<Malthusian<Mcs<SpinPark>, SpinPark>>(), 16);
/// ```
pub struct Malthusian<L, W: Wait, const CPUS: usize = 0> {
    inner: L,
    /// The word of the table above: on `L`'s line, which every thread here touches anyway.
    crowd: AtomicU64,
    policy: PhantomData<fn() -> W>,
}

/// Who an admission hands the lock's duty to.
enum Admitted {
    /// Nobody: the stack held only abandoned nodes.
    Nobody,
    /// A passive thread that was spinning.
    Running,
    /// One that may be asleep on this word: wake it (`W::wake_one`).
    Asleep(&'static AtomicU32),
}

/// The node numbered `index`.
#[inline]
fn node(index: u32) -> &'static Node {
    // SAFETY: the word and the `below` links hold only nodes' own numbers.
    unsafe { queue_node::index::node(index) }
}

/// Spins, then yields, for a short wait on another thread's few steps.
struct Pause(u32);

impl Pause {
    fn once(&mut self) {
        self.0 += 1;
        if self.0 < 100 {
            crate::sync::cpu_relax();
        } else {
            crate::sync::yield_now();
        }
        crate::sync::spin_iteration_done();
    }
}

impl<L: RawMutex, W: Wait, const CPUS: usize> Malthusian<L, W, CPUS> {
    /// A new, unlocked lock around `inner` (unlocked).
    pub fn with_inner(inner: L) -> Self {
        #[cfg(loom)]
        let crowd = crate::testing::malthusian_start() << ACQUIRED_SHIFT;
        #[cfg(not(loom))]
        let crowd = 0;
        Malthusian { inner, crowd: AtomicU64::new(crowd), policy: PhantomData }
    }

    /// A new, unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Malthusian { inner: L::INIT, crowd: AtomicU64::new(0), policy: PhantomData }
    }

    /// How many active waiters a thread may join: one fewer than the CPUs, with the holder.
    #[inline]
    fn most_waiting() -> u64 {
        let cpus = if CPUS == 0 { crate::sys::cpu::process_cpus() } else { CPUS };
        cpus.saturating_sub(1).clamp(1, MOST_WAITING) as u64
    }

    /// Whether nobody waits, passive or active (a snapshot).
    #[inline(always)]
    fn uncrowded(&self) -> bool {
        self.crowd.load(Relaxed) & (TOP | WAITING) == 0
    }

    /// Joins the active set, at once or once admitted. Returns `false` if `deadline` passed
    /// while passive, the node abandoned.
    #[cold]
    fn join(&self, deadline: Option<Instant>) -> bool {
        let most = Self::most_waiting();
        let mut passive: Option<&'static Node> = None;
        let mut seen = self.crowd.load(Relaxed);
        loop {
            if (seen & WAITING) / WAITING_ONE < most {
                // Relaxed: the count orders nothing but itself; each thread that leaves it
                // does so with an atomic, which reads the latest pushes.
                match self.crowd.compare_exchange_weak(seen, seen + WAITING_ONE, Relaxed, Relaxed) {
                    Ok(_) => {
                        if let Some(node) = passive {
                            queue_node::give(node);
                        }
                        return true;
                    }
                    Err(now) => seen = now,
                }
                continue;
            }
            let node = *passive.get_or_insert_with(queue_node::take);
            node.below.store((seen & TOP) as u32, Relaxed);
            node.state.store(PASSIVE, Relaxed);
            // Release: the node's fields are visible to the admitter, which reads the top
            // with Acquire.
            match self.crowd.compare_exchange_weak(seen, (seen & !TOP) | u64::from(node.index), Release, Relaxed) {
                Ok(_) => return self.wait_passive(node, deadline),
                Err(now) => seen = now,
            }
        }
    }

    /// Waits on `node` until admitted, then counts this thread an active waiter. On time-out,
    /// abandons the node and returns `false`; a waiter admitted in that race stays.
    fn wait_passive(&self, node: &'static Node, deadline: Option<Instant>) -> bool {
        let mut episode = Episode::new(deadline);
        let admitted = loop {
            // Acquire: the admitter's reads of our node's link happen-before we reuse it.
            let seen = node.state.load(Acquire);
            if seen == ADMITTED {
                break true;
            }
            match W::spin(&node.state, seen, &mut episode) {
                Spun::Changed => {}
                Spun::TimedOut => break !abandon(node),
                Spun::Exhausted => {
                    if node.state.compare_exchange(PASSIVE, ASLEEP, Acquire, Acquire) == Err(ADMITTED) {
                        break true;
                    }
                    if W::sleep(&node.state, ASLEEP, deadline) == FutexWait::TimedOut {
                        break !abandon(node);
                    }
                    episode.restart_spinning();
                }
            }
        };
        if admitted {
            // Off the stack, so ours again.
            queue_node::give(node);
            // Unconditionally: an admitted thread may take the count past the limit.
            self.crowd.fetch_add(WAITING_ONE, Relaxed);
        }
        admitted
    }

    /// Called by a counted thread that has taken `L`: it leaves the count and counts the
    /// acquisition.
    #[inline]
    fn acquired(&self) {
        // Relaxed: as in `join`. The count is at least 1 (ours), so nothing borrows from the
        // bits above it.
        self.crowd.fetch_add(ACQUIRED_ONE - WAITING_ONE, Relaxed);
    }

    /// Called by a counted thread that gave up on `L`: it leaves the count, and if it was
    /// the last active waiter while threads are passive, admits one in its place.
    #[cold]
    fn gave_up(&self) {
        let mut seen = self.crowd.load(Relaxed);
        loop {
            let last = seen & WAITING == WAITING_ONE;
            if last && seen & TOP != 0 && seen & ADMITTING == 0 {
                // Acquire: the pushed nodes' fields and the last admitter's links.
                match self.crowd.compare_exchange_weak(seen, seen | ADMITTING, Acquire, Relaxed) {
                    Ok(_) => {
                        wake::<W>(self.admit(Why::Quitter));
                        return;
                    }
                    Err(now) => seen = now,
                }
                continue;
            }
            // Relaxed: as in `join`. With `ADMITTING` set, the admitter looks again at its
            // release (`admit`).
            match self.crowd.compare_exchange_weak(seen, seen - WAITING_ONE, Relaxed, Relaxed) {
                Ok(_) => return,
                Err(now) => seen = now,
            }
        }
    }

    /// The holder's release while threads are passive (`seen`, read just before): admits
    /// the oldest if the rotation is due or no active thread waits, then releases `L`.
    ///
    /// # Safety
    ///
    /// As `unlock`.
    #[cold]
    unsafe fn unlock_crowded(&self, seen: u64, guard: L::Guard) {
        let rotation_due = (seen >> ACQUIRED_SHIFT).is_multiple_of(u64::from(MALTHUSIAN_ROTATION));
        let due = match (rotation_due, seen & WAITING == 0) {
            (true, _) => self.admit_as_holder(Why::Rotation),
            (false, true) => self.admit_as_holder(Why::Idle),
            (false, false) => None,
        };
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.unlock(guard) };
        wake::<W>(due);
    }

    /// Takes the `ADMITTING` bit, waiting for another admitter to finish, and admits.
    /// Returns the word to wake the admitted thread on, if it may be asleep.
    fn admit_as_holder(&self, why: Why) -> Option<&'static AtomicU32> {
        let mut seen = self.crowd.load(Relaxed);
        let mut pause = Pause(0);
        loop {
            if seen & TOP == 0 {
                return None;
            }
            if seen & ADMITTING != 0 {
                // Only an active waiter that gave up holds it here, for a walk of the stack.
                pause.once();
                seen = self.crowd.load(Relaxed);
                continue;
            }
            // Acquire: as in `gave_up`.
            match self.crowd.compare_exchange_weak(seen, seen | ADMITTING, Acquire, Relaxed) {
                Ok(_) => break,
                Err(now) => seen = now,
            }
        }
        self.admit(why)
    }

    /// With the `ADMITTING` bit held: admits the oldest live passive thread and releases the
    /// bit, leaving the count too for a quitter. While nobody was admitted, nobody is counted and
    /// threads have pushed since, it looks again: they count on this admitter.
    fn admit(&self, why: Why) -> Option<&'static AtomicU32> {
        loop {
            let admitted = self.take_oldest();
            #[cfg(loom)]
            if !matches!(admitted, Admitted::Nobody) {
                crate::testing::count_malthusian_path(match why {
                    Why::Rotation => crate::testing::MalthusianPath::Rotation,
                    Why::Idle => crate::testing::MalthusianPath::Idle,
                    Why::Quitter => crate::testing::MalthusianPath::Quitter,
                });
            }
            let mut seen = self.crowd.load(Relaxed);
            loop {
                let mut released = seen & !ADMITTING;
                if matches!(why, Why::Quitter) {
                    released -= WAITING_ONE;
                }
                if matches!(admitted, Admitted::Nobody) && released & WAITING == 0 && released & TOP != 0 {
                    break;
                }
                // Release: our link writes are visible to the next admitter.
                match self.crowd.compare_exchange_weak(seen, released, Release, Relaxed) {
                    Ok(_) => {
                        return match admitted {
                            Admitted::Asleep(word) => Some(word),
                            _ => None,
                        }
                    }
                    Err(now) => seen = now,
                }
            }
        }
    }

    /// With the `ADMITTING` bit held: takes the oldest node off the stack, skipping abandoned
    /// ones (given back to the pool), and admits its thread.
    fn take_oldest(&self) -> Admitted {
        loop {
            // Acquire: the pushed nodes' fields.
            let top = (self.crowd.load(Acquire) & TOP) as u32;
            if top == NONE {
                return Admitted::Nobody;
            }
            let (mut newer, mut oldest) = (None, node(top));
            loop {
                // Relaxed: links are written by their pusher before its Release push, or by
                // an admitter before its Release of the bit.
                let below = oldest.below.load(Relaxed);
                if below == NONE {
                    break;
                }
                (newer, oldest) = (Some(oldest), node(below));
            }
            match newer {
                Some(newer) => newer.below.store(NONE, Relaxed),
                None => self.unlink_top(oldest),
            }
            // Off the stack before its thread can see ADMITTED and reuse it. AcqRel: Release
            // orders our reads of the node before that reuse; Acquire orders an abandoning
            // waiter's last use before ours.
            match oldest.state.swap(ADMITTED, AcqRel) {
                ABANDONED => {
                    #[cfg(loom)]
                    crate::testing::count_malthusian_path(crate::testing::MalthusianPath::AbandonedSkipped);
                    queue_node::give(oldest);
                }
                ASLEEP => return Admitted::Asleep(&oldest.state),
                _ => return Admitted::Running,
            }
        }
    }

    /// Unlinks `oldest`, which was the top when the walk began: empties the stack if it
    /// still is, or cuts the link to it from the node pushed just above it.
    fn unlink_top(&self, oldest: &'static Node) {
        // Acquire: the fields of nodes pushed since the walk began.
        let mut seen = self.crowd.load(Acquire);
        loop {
            let top = (seen & TOP) as u32;
            if top != oldest.index {
                let mut above = node(top);
                loop {
                    let below = above.below.load(Relaxed);
                    if below == oldest.index {
                        above.below.store(NONE, Relaxed);
                        return;
                    }
                    above = node(below);
                }
            }
            match self.crowd.compare_exchange_weak(seen, seen & !TOP, Relaxed, Acquire) {
                Ok(_) => return,
                Err(now) => seen = now,
            }
        }
    }

    /// Joins the active set, then takes `L` untimed.
    #[cold]
    fn lock_crowded(&self) -> L::Guard {
        let joined = self.join(None);
        debug_assert!(joined, "joining without a deadline cannot time out");
        let guard = self.inner.lock();
        self.acquired();
        guard
    }
}

impl<L, W: Wait, const CPUS: usize> Malthusian<L, W, CPUS>
where
    L: RawMutex + RawMutexTimed<Instant = Instant, Duration = Duration>,
{
    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<L::Guard> {
        if self.uncrowded() {
            if let Some(guard) = self.inner.try_lock() {
                return Some(guard);
            }
        }
        self.lock_crowded_until(deadline)
    }

    /// Joins the active set, then takes `L` with its timed lock. On time-out, leaves the
    /// passive stack or the count consistent.
    #[cold]
    fn lock_crowded_until(&self, deadline: Option<Instant>) -> Option<L::Guard> {
        if !self.join(deadline) {
            return None;
        }
        let guard = match deadline {
            None => Some(self.inner.lock()),
            Some(deadline) => self.inner.try_lock_until(deadline),
        };
        match guard {
            Some(_) => self.acquired(),
            None => self.gave_up(),
        }
        guard
    }
}

/// Abandons `node` to the stack. Returns `false` if it was admitted first.
fn abandon(node: &'static Node) -> bool {
    // Acquire: as in `wait_passive`.
    let mut seen = node.state.load(Acquire);
    loop {
        if seen == ADMITTED {
            return false;
        }
        // Release: our last use of the node happens-before the admitter gives it back.
        match node.state.compare_exchange(seen, ABANDONED, AcqRel, Acquire) {
            Ok(_) => return true,
            Err(now) => seen = now,
        }
    }
}

#[inline]
fn wake<W: Wait>(due: Option<&'static AtomicU32>) {
    if let Some(asleep) = due {
        // The word is a queue node's, never freed: the lock may be gone by now.
        W::wake_one(asleep);
    }
}

#[cfg(not(loom))]
impl<L: RawMutex, W: Wait, const CPUS: usize> Default for Malthusian<L, W, CPUS> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: mutual exclusion is `L`'s: every acquisition is one of `L`'s, and only the holder
// releases `L`. The word only decides which threads may try.
unsafe impl<L: RawMutex, W: Wait, const CPUS: usize> RawMutex for Malthusian<L, W, CPUS> {
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    #[cfg(loom)]
    const INIT: Self = panic!("under loom, construct locks with with_inner()");
    type Guard = L::Guard;

    #[inline]
    fn lock(&self) -> L::Guard {
        if self.uncrowded() {
            if let Some(guard) = self.inner.try_lock() {
                return guard;
            }
        }
        self.lock_crowded()
    }

    /// Takes `L` if it is free, passive threads or not: a try never waits, so it is never
    /// restricted.
    #[inline]
    fn try_lock(&self) -> Option<L::Guard> {
        self.inner.try_lock()
    }

    #[inline]
    unsafe fn unlock(&self, guard: L::Guard) {
        // Relaxed: a holder with a duty to admit learnt of the passive threads from its own
        // atomic on the word, which this load cannot read past.
        let seen = self.crowd.load(Relaxed);
        if seen & TOP == 0 {
            // SAFETY: forwarded from the caller.
            unsafe { self.inner.unlock(guard) };
        } else {
            // SAFETY: forwarded from the caller.
            unsafe { self.unlock_crowded(seen, guard) };
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.inner.is_locked() || !self.uncrowded()
    }
}

// SAFETY: `lock_until` acquires as `lock` does, or returns `None` having left the stack and
// the count consistent.
unsafe impl<L, W: Wait, const CPUS: usize> RawMutexTimed for Malthusian<L, W, CPUS>
where
    L: RawMutex + RawMutexTimed<Instant = Instant, Duration = Duration>,
{
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> Option<L::Guard> {
        self.lock_until(super::deadline_after(timeout))
    }

    #[inline]
    fn try_lock_until(&self, deadline: Instant) -> Option<L::Guard> {
        self.lock_until(Some(deadline))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::lock::Mcs;
    use crate::wait::Futex;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::sync::Mutex;
    use std::thread::JoinHandle;

    /// Waits until `done`, failing after 10 s. Threads are spawned detached (not scoped), so
    /// that a failure here reports instead of joining a thread left parked.
    fn wait_until(what: &str, done: impl Fn() -> bool) {
        let give_up = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < give_up, "still waiting: {what}");
            std::thread::yield_now();
        }
    }

    fn leak<T>(value: T) -> &'static T {
        Box::leak(Box::new(value))
    }

    impl<L: RawMutex, W: Wait, const CPUS: usize> Malthusian<L, W, CPUS> {
        fn waiting(&self) -> u64 {
            (self.crowd.load(SeqCst) & WAITING) / WAITING_ONE
        }
        fn top(&self) -> u32 {
            (self.crowd.load(SeqCst) & TOP) as u32
        }
        fn acquisitions(&self) -> u64 {
            self.crowd.load(SeqCst) >> ACQUIRED_SHIFT
        }
    }

    /// Spawns a thread that locks `lock` (until `deadline`), runs `inside` while holding it,
    /// and unlocks; returns whether it got the lock.
    fn spawn_locker<const CPUS: usize>(
        lock: &'static Malthusian<Mcs<Futex>, Futex, CPUS>,
        deadline: Option<Duration>,
        inside: impl FnOnce() + Send + 'static,
    ) -> JoinHandle<bool> {
        std::thread::spawn(move || {
            let Some(guard) = lock.lock_until(deadline.map(|d| Instant::now() + d)) else { return false };
            inside();
            // SAFETY: locked just above.
            unsafe { lock.unlock(guard) };
            true
        })
    }

    /// Spawns a locker that goes passive, and waits until it has pushed its node.
    fn spawn_passive<const CPUS: usize>(
        lock: &'static Malthusian<Mcs<Futex>, Futex, CPUS>,
        deadline: Option<Duration>,
        inside: impl FnOnce() + Send + 'static,
    ) -> JoinHandle<bool> {
        let before = lock.top();
        let locker = spawn_locker(lock, deadline, inside);
        wait_until("a passive push", || lock.top() != before);
        locker
    }

    /// Passive threads queued one by one while a fake active waiter keeps the holder from
    /// ever finding nobody waiting: only the rotation admits them, the oldest first, at every
    /// multiple of the rotation. The one with `k` ahead of it is admitted at counted
    /// acquisition `k * ROTATION`, within the documented `(k + 1) * ROTATION`, and takes the
    /// lock as the next one.
    #[test]
    fn a_passive_thread_with_k_ahead_is_admitted_within_k_plus_one_rotations() {
        const PASSIVE_THREADS: usize = 3;
        let lock = leak(Malthusian::<Mcs<Futex>, Futex, 4>::new());
        let rotation = u64::from(MALTHUSIAN_ROTATION);
        let mut guard = lock.lock();
        // Three fake waiters fill the active set, so that arrivals go passive; one stays.
        lock.crowd.fetch_add(3 * WAITING_ONE, SeqCst);
        let seen_at = leak(Mutex::new(Vec::new()));
        let done = leak(AtomicUsize::new(0));
        let passive: Vec<_> = (0..PASSIVE_THREADS)
            .map(|k| {
                spawn_passive(lock, None, move || {
                    seen_at.lock().unwrap().push((k, lock.acquisitions()));
                    done.fetch_add(1, SeqCst);
                })
            })
            .collect();
        lock.crowd.fetch_sub(2 * WAITING_ONE, SeqCst);
        while done.load(SeqCst) < PASSIVE_THREADS {
            let admits = lock.acquisitions().is_multiple_of(rotation);
            let before = done.load(SeqCst);
            // SAFETY: locked by this thread.
            unsafe { lock.unlock(guard) };
            if admits {
                wait_until("the admitted thread's critical section", || done.load(SeqCst) > before);
            }
            guard = lock.lock();
        }
        // SAFETY: locked by this thread.
        unsafe { lock.unlock(guard) };
        for thread in passive {
            assert!(thread.join().unwrap());
        }
        let seen_at = seen_at.lock().unwrap().clone();
        for (k, &(thread, acquisitions)) in seen_at.iter().enumerate() {
            assert_eq!(thread, k, "admitted oldest first: {seen_at:?}");
            let admitted_at = acquisitions - 1;
            assert!(admitted_at <= (k as u64 + 1) * rotation, "the bound: {seen_at:?}");
            assert_eq!(admitted_at, k as u64 * rotation, "only the rotation admitted: {seen_at:?}");
        }
        lock.crowd.fetch_sub(WAITING_ONE, SeqCst);
        assert!(lock.uncrowded() && !lock.is_locked());
    }

    /// With the limit at one waiter, one active waiter and two passive threads queue behind
    /// the holder, which then leaves for good. A release that finds nobody waiting admits the
    /// oldest passive thread, so none stays parked while the lock is free. Two may be admitted
    /// at once (a rotation falls due at the holder's release, and an admitted thread counts
    /// itself only once it runs), and then they meet in `L` in the order they get there.
    #[test]
    fn no_passive_thread_stays_parked_while_the_lock_is_free() {
        let lock = leak(Malthusian::<Mcs<Futex>, Futex, 1>::new());
        let order = leak(Mutex::new(Vec::new()));
        let guard = lock.lock();
        let active = spawn_locker(lock, None, || order.lock().unwrap().push("active"));
        wait_until("the active waiter", || lock.waiting() == 1);
        let first = spawn_passive(lock, None, || order.lock().unwrap().push("first passive"));
        let second = spawn_passive(lock, None, || order.lock().unwrap().push("second passive"));
        assert_eq!(lock.waiting(), 1, "the passive threads are not counted");
        // SAFETY: locked by this thread.
        unsafe { lock.unlock(guard) };
        wait_until("every thread's critical section", || order.lock().unwrap().len() == 3);
        for thread in [active, first, second] {
            assert!(thread.join().unwrap());
        }
        let order = order.lock().unwrap().clone();
        assert_eq!(order[0], "active", "the active waiter is first in `L`: {order:?}");
        let mut passive = order[1..].to_vec();
        passive.sort_unstable();
        assert_eq!(passive, ["first passive", "second passive"], "both let in: {order:?}");
        assert!(lock.uncrowded() && !lock.is_locked());
    }

    /// A passive waiter that times out leaves its node on the stack, abandoned; the admission
    /// that reaches it skips it and admits the next passive thread.
    #[test]
    fn a_passive_waiter_that_times_out_is_skipped() {
        let lock = leak(Malthusian::<Mcs<Futex>, Futex, 1>::new());
        let guard = lock.lock();
        let active = spawn_locker(lock, None, || {});
        wait_until("the active waiter", || lock.waiting() == 1);
        let timed = spawn_passive(lock, Some(Duration::from_millis(20)), || {});
        let entered = leak(AtomicBool::new(false));
        let plain = spawn_passive(lock, None, || entered.store(true, SeqCst));
        assert!(!timed.join().unwrap(), "the lock was held past the deadline");
        // SAFETY: locked by this thread.
        unsafe { lock.unlock(guard) };
        assert!(active.join().unwrap() && plain.join().unwrap() && entered.load(SeqCst));
        assert!(lock.uncrowded() && !lock.is_locked());
    }

    /// An active waiter that times out as the last one while a thread is passive admits it in
    /// its place: the holder, which may have read the word before the time-out, would release
    /// the lock without doing so.
    #[test]
    fn the_last_active_waiter_to_time_out_admits_a_passive_thread() {
        let lock = leak(Malthusian::<Mcs<Futex>, Futex, 1>::new());
        let guard = lock.lock();
        let timed = spawn_locker(lock, Some(Duration::from_millis(20)), || {});
        wait_until("the active waiter", || lock.waiting() == 1);
        let entered = leak(AtomicBool::new(false));
        let plain = spawn_passive(lock, None, || entered.store(true, SeqCst));
        assert!(!timed.join().unwrap(), "the lock was held past the deadline");
        wait_until("the passive thread admitted, counted", || lock.top() == NONE && lock.waiting() == 1);
        assert!(!entered.load(SeqCst));
        // SAFETY: locked by this thread.
        unsafe { lock.unlock(guard) };
        assert!(plain.join().unwrap() && entered.load(SeqCst));
        assert!(lock.uncrowded() && !lock.is_locked());
    }

    /// Many more threads than the limit, over every path at once: the count comes out exact
    /// and the word empties.
    #[test]
    fn threads_beyond_the_limit_all_get_the_lock_and_the_word_empties() {
        let lock = Malthusian::<Mcs<Futex>, Futex, 2>::new();
        let (count, acquired) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for t in 0..8 {
                let (lock, count, acquired) = (&lock, &count, &acquired);
                s.spawn(move || {
                    for i in 0..500 {
                        let deadline = ((t + i) % 3 == 0).then(|| Instant::now() + Duration::from_micros(50));
                        if let Some(guard) = lock.lock_until(deadline) {
                            // Split read and write: two holders at once would lose updates.
                            count.store(count.load(SeqCst) + 1, SeqCst);
                            acquired.fetch_add(1, SeqCst);
                            // SAFETY: locked just above.
                            unsafe { lock.unlock(guard) };
                        }
                    }
                });
            }
        });
        assert_eq!(count.load(SeqCst), acquired.load(SeqCst));
        assert!(acquired.load(SeqCst) >= 8 * 500 * 2 / 3, "every untimed acquisition succeeds");
        assert!(lock.uncrowded() && !lock.is_locked(), "{:#x}", lock.crowd.load(SeqCst));
    }
}
