//! The HMCS-gated word: a [`Gated`] lock whose gate is an [`HmcsQueue`], HMCS's two levels of
//! queues without their word. Running threads take the bounded-bypass word with one CAS
//! whenever it is free; the waiters that find it held queue at the gate in their group (the
//! NUMA node level of [`topology`](crate::sys::topology), or the groups `SPINLAB_TOPOLOGY`
//! declares), and the head of the root's head group alone waits for the word. Once it has
//! the word it passes the gate on as [`Hmcs`](super::Hmcs) passes headship: within its group
//! while the group's node stays at the root's head, at most [`HMCS_PASS_BOUND`] times in a row
//! while another group waits, then to the next group. Queued waiters take the word in runs of
//! one group, and the word itself is never handed to anybody.
//!
//! - **Fairness**: none among running threads beyond the word's: a thread that comes while
//!   the word is free takes it, whoever is queued. Queued waiters get the gate in `Hmcs`'s
//!   order: FIFO within a group, groups taking turns in the root's order, a turn being at most
//!   `BOUND + 1` passes while another group's node is queued. The head is passed over by
//!   running threads for at most [`STARVATION_NS`] of its wait before it claims the next
//!   release, and, while it cannot run, for at most [`HEAD_STALL_NS`] of each holder's
//!   releases before that holder yields its CPU to it.
//! - **Memory**: 24 bytes per lock: the word (4 bytes, and 4 of padding), the root's tail and
//!   the groups' queues' pointer; 40 where the guard is kept beside it (the registry, the C
//!   ABI), the guard being the two wake-ups a pass of the gate may owe, one at the root and
//!   one in a group's queue. That is more than a `pthread_mutex_t`'s 16 bytes, so the preload
//!   library refuses it. The groups' queues and the queue nodes are `Hmcs`'s.
//! - **Uncontended cost**: `Gated`'s: a CAS on the word to lock and one to unlock. The gate,
//!   the group (one `sched_getcpu`) and the groups' queues are on the queued path only.
//! - **More threads than CPUs**: a release frees the word for whichever running thread takes
//!   it; the gate passed to a waiter that is not running delays only the waiters behind it,
//!   not the lock, and its futex wake-ups are made after the word's release. The head sleeps
//!   on the word as its policy says. The registry builds `hmcs` so over the policies whose
//!   waiters give their CPU away, where `Hmcs`'s hand-overs convoy.
//!
//! The word's Acquire and Release alone order critical sections; the gate only chooses which
//! waiter contends for the word ([`Gated`]'s docs give the word's side, [`Hmcs`](super::Hmcs)'s
//! the levels and their invariants).
//!
//! [`STARVATION_NS`]: super::STARVATION_NS
//! [`HEAD_STALL_NS`]: super::HEAD_STALL_NS

#[cfg(doc)]
use super::HMCS_PASS_BOUND;
use super::{Gate, Gated, HmcsGuard, HmcsQueue};
use crate::sync::AtomicU32;
use crate::wait::Wait;

/// The HMCS-gated word waiting with policy `W`, its gate keeping a group's turn to at most
/// `BOUND` passes in a row while another group waits (the module docs give the design): 24
/// bytes, the [`Bounded`](super::Bounded) word and an [`HmcsQueue`]; its guard is 16 more.
///
/// ```
/// use spinlab::{lock::HmcsGated, wait::SpinPark};
/// let m = lock_api::Mutex::<HmcsGated<SpinPark>, _>::new(0u32);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// assert_eq!(size_of::<HmcsGated<SpinPark>>(), 24);
/// ```
pub type HmcsGated<W, const BOUND: u32 = { super::HMCS_PASS_BOUND }> = Gated<HmcsQueue<W, BOUND>, W>;

/// An HMCS gate owes the wake-ups of its new heads, asleep on their queue nodes: the next
/// group's at the root and the next waiter's in the holder's group. Nodes are never freed, so
/// the wake-ups may come after the lock is gone. They travel in the guard.
impl<W: Wait, const BOUND: u32> Gate for HmcsQueue<W, BOUND> {
    type Owed = [Option<&'static AtomicU32>; 2];
    type Room = ();
    type Due = [Option<&'static AtomicU32>; 2];
    #[inline]
    unsafe fn pass_on(&self, guard: HmcsGuard, _: &()) -> Self::Owed {
        HmcsQueue::pass_on(self, guard)
    }
    #[inline]
    fn due(&self, owed: Self::Owed, _: &()) -> Self::Due {
        owed
    }
    #[inline]
    fn settle(due: Self::Due) {
        for asleep in due {
            super::gated::wake_one::<W>(asleep);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::hmcs::tests::in_turns;
    use super::*;
    use crate::lock::HMCS_PASS_BOUND;
    use crate::wait::{Futex, SpinPark};
    use lock_api::RawMutex;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// The order in which `groups.len()` waiters, each in its group, acquire a lock this
    /// thread holds, once each. They come one by one: the first finds nobody queued and takes
    /// the gate, and each other queues behind the last of its group (its group's node queued
    /// at the root if it is the first of its group), so with nobody else to barge the order of
    /// the gate's passes is that of the word.
    fn acquisition_order<W: Wait, const BOUND: u32>(groups: &[u32]) -> Vec<usize> {
        let lock = HmcsGated::<W, BOUND>::default();
        let order = Mutex::new(Vec::new());
        let barged = lock.lock();
        std::thread::scope(|s| {
            for (waiter, &group) in groups.iter().enumerate() {
                let (local_before, root_before) = lock.gate().tails(group);
                let (lock, order) = (&lock, &order);
                s.spawn(move || {
                    let _group = crate::testing::declare_cna_group(group);
                    let owed = lock.lock();
                    order.lock().unwrap().push(waiter);
                    // SAFETY: this thread holds the lock.
                    unsafe { lock.unlock(owed) };
                });
                loop {
                    let (local, root) = lock.gate().tails(group);
                    if local != local_before && (local_before != 0 || root != root_before) {
                        break;
                    }
                    std::thread::yield_now();
                }
            }
            // SAFETY: this thread holds the lock.
            unsafe { lock.unlock(barged) };
        });
        assert!(!lock.is_locked() && !lock.gate_is_locked(), "the word is free and the gate empty");
        order.into_inner().unwrap()
    }

    /// Alternating groups, all queued before the first release: each group's turn at the gate
    /// is its first waiter and `BOUND` passes within the group, in the group's queue order,
    /// then the other group's turn, as `Hmcs` hands the lock over.
    #[test]
    fn the_gate_passes_in_hmcss_order_a_group_for_the_bound_then_the_other() {
        let groups: Vec<u32> = (0..24).map(|i| i % 2).collect();
        let order = acquisition_order::<Futex, 4>(&groups);
        assert_eq!(order, in_turns(&groups, 5));
    }

    #[test]
    fn the_default_bound_holds_at_the_gate_over_a_spinning_then_sleeping_policy() {
        let turn = HMCS_PASS_BOUND as usize + 1;
        let groups: Vec<u32> = (0..2 * turn + 8).map(|i| (i % 2) as u32).collect();
        let order = acquisition_order::<SpinPark, { HMCS_PASS_BOUND }>(&groups);
        assert_eq!(order, in_turns(&groups, turn));
    }

    /// One group: the gate is FIFO.
    #[test]
    fn one_group_passes_the_gate_in_queue_order() {
        let order = acquisition_order::<Futex, 4>(&[1; 10]);
        assert_eq!(order, (0..10).collect::<Vec<_>>());
    }

    /// Threads of two groups, some with deadlines short enough to give up at the gate or at
    /// the word now and then: with `BOUND` 2 the passes within a group, the root's release at
    /// the bound and the time-outs interleave with barging. A read-modify-write split across a
    /// yield loses updates unless the lock excludes.
    #[test]
    fn two_groups_exclude_through_the_gate_with_time_outs() {
        const THREADS: u32 = 4;
        const ROUNDS: usize = 2_000;
        let lock = HmcsGated::<Futex, 2>::default();
        let (count, acquired) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for thread in 0..THREADS {
                let (lock, count, acquired) = (&lock, &count, &acquired);
                s.spawn(move || {
                    let _group = crate::testing::declare_cna_group(thread % 2);
                    for round in 0..ROUNDS {
                        let timed = thread >= 2 && round % 3 == 0;
                        let deadline = timed.then(|| Instant::now() + Duration::from_micros(20));
                        let Some(owed) = lock.lock_until(deadline) else { continue };
                        let seen = count.load(Relaxed);
                        if round % 16 == 0 {
                            std::thread::yield_now();
                        }
                        count.store(seen + 1, Relaxed);
                        acquired.fetch_add(1, Relaxed);
                        // SAFETY: this thread holds the lock.
                        unsafe { lock.unlock(owed) };
                    }
                });
            }
        });
        assert_eq!(count.into_inner(), acquired.into_inner(), "an update was lost: two holders at once");
        assert!(!lock.is_locked() && !lock.gate_is_locked(), "the word is free and the gate empty");
    }

    #[test]
    fn the_hmcs_gated_word_is_the_word_and_the_queues_with_two_pointers_for_guard() {
        assert_eq!((size_of::<HmcsGated<Futex>>(), align_of::<HmcsGated<Futex>>()), (24, 8));
        assert_eq!(size_of::<<HmcsGated<Futex> as RawMutex>::Guard>(), 16, "the owed wake-ups");
    }
}
