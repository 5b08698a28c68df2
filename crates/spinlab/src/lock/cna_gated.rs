//! The CNA-gated word (after the Fissile locks of Dice and Kogan, 2020): a [`Gated`] lock whose
//! gate is a [`CnaQueue`]. The lock is the bounded-bypass word, which running threads take
//! with one CAS whenever it is free, as Fissile's test-and-set fast path; the waiters that
//! find it held queue at the gate, whose head alone waits for the word. Once the head has the
//! word it passes the gate on as [`Cna`](super::Cna) passes headship: to the first waiter of
//! its own group (the NUMA node level of [`topology`](crate::sys::topology), or the groups
//! `SPINLAB_TOPOLOGY` declares), moving the waiters it skips to the secondary queue, which
//! goes back in front when the group has no waiter queued or after [`CNA_BYPASS_BOUND`]
//! passes in a row over the oldest one. So queued waiters take the word in runs of one
//! group, whose caches keep its line, and the word itself is never handed to anybody.
//!
//! - **Fairness**: none among running threads beyond the word's: a thread that comes while
//!   the word is free takes it, whoever is queued. Queued waiters get the gate in CNA's order:
//!   the head's group first, at most `BOUND` passes in a row over the oldest queued waiter, so
//!   a waiter with `k` waiters ahead of it at the gate heads it within `(k + 1)(BOUND + 1)`
//!   passes. The head is passed over by running threads for at most [`STARVATION_NS`] of its
//!   wait before it claims the next release, and, while it cannot run, for at most
//!   [`HEAD_STALL_NS`] of each holder's releases before that holder yields its CPU to it.
//! - **Memory**: 8 bytes per lock, the word and the gate's tail; 16 where the guard is kept
//!   beside it (the registry, the C ABI, the preload library), the guard being the wake-up
//!   the gate's hand-over owes, a pointer to a queue node. One queue node per waiter at the
//!   gate, from `Mcs`'s per-thread pool; the node carries its group and, at the head, the
//!   secondary queue's ends and the count of passes over the oldest waiter.
//! - **Uncontended cost**: `Gated`'s: a CAS on the word to lock and one to unlock. The gate,
//!   the group (one `sched_getcpu`) and the choice are on the queued path only.
//! - **More threads than CPUs**: a release frees the word for whichever running thread takes
//!   it; the gate passed to a waiter that is not running delays only the waiters behind it,
//!   not the lock, and its futex wake-up is made after the word's release. The head sleeps on
//!   the word as its policy says. Over pure spin policies too, unlike the registry's other
//!   gated locks: as in Fissile, barging is the point, and the convoy of `Cna` is gone.
//!
//! On a machine of one node every waiter is of one group and the gate is MCS's, FIFO. The
//! word's Acquire and Release alone order critical sections; the gate only chooses which
//! waiter contends for the word ([`Gated`]'s docs give the word's side, [`Cna`](super::Cna)'s
//! the choice and its invariants).
//!
//! [`STARVATION_NS`]: super::STARVATION_NS
//! [`HEAD_STALL_NS`]: super::HEAD_STALL_NS

#[cfg(doc)]
use super::CNA_BYPASS_BOUND;
use super::{CnaQueue, Gate, Gated, McsGuard};
use crate::sync::AtomicU32;
use crate::wait::Wait;

/// The CNA-gated word waiting with policy `W`, its gate passing over the oldest queued waiter
/// at most `BOUND` times in a row (the module docs give the design): 8 bytes, the
/// [`Bounded`](super::Bounded) word and a [`CnaQueue`]'s tail; its guard is 8 more.
///
/// ```
/// use spinlab::{lock::CnaGated, wait::SpinPark};
/// let m = lock_api::Mutex::<CnaGated<SpinPark>, _>::new(0u32);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// assert_eq!(size_of::<CnaGated<SpinPark>>(), 8);
/// ```
pub type CnaGated<W, const BOUND: u32 = { super::CNA_BYPASS_BOUND }> = Gated<CnaQueue<W, BOUND>, W>;

/// A CNA gate owes the wake-up of its new head, asleep on its queue node, as an MCS gate
/// does: a node is never freed, so the wake-up may come after the lock is gone. It travels in
/// the guard.
impl<W: Wait, const BOUND: u32> Gate for CnaQueue<W, BOUND> {
    type Owed = Option<&'static AtomicU32>;
    type Room = ();
    type Due = Option<&'static AtomicU32>;
    #[inline]
    unsafe fn pass_on(&self, guard: McsGuard, _: &()) -> Self::Owed {
        // SAFETY: forwarded from the caller.
        unsafe { CnaQueue::pass_on(self, guard) }
    }
    #[inline]
    fn due(&self, owed: Self::Owed, _: &()) -> Option<&'static AtomicU32> {
        owed
    }
    #[inline]
    fn settle(due: Option<&'static AtomicU32>) {
        super::gated::wake_one::<W>(due);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::cna::tests::{alternating, longest_bypass_and_in_group};
    use super::*;
    use crate::lock::CNA_BYPASS_BOUND;
    use crate::sync::Ordering::Relaxed;
    use crate::wait::{Futex, SpinPark};
    use lock_api::RawMutex;
    use std::sync::Mutex;

    /// The order in which `groups.len()` waiters, each with its group, acquire a lock this
    /// thread holds, once each. They come one by one: the first finds nobody queued and takes
    /// the gate, and each other queues behind the last, so the gate's queue is the spawn order
    /// and, with nobody else to barge, the order of the gate's passes is that of the word.
    fn acquisition_order<W: Wait, const BOUND: u32>(groups: &[u32]) -> Vec<usize> {
        let lock = CnaGated::<W, BOUND>::default();
        let order = Mutex::new(Vec::new());
        let barged = lock.lock();
        std::thread::scope(|s| {
            for (waiter, &group) in groups.iter().enumerate() {
                let before = lock.gate().mcs.tail.load(Relaxed);
                let (lock, order) = (&lock, &order);
                s.spawn(move || {
                    let _group = crate::testing::declare_cna_group(group);
                    let owed = lock.lock();
                    order.lock().unwrap().push(waiter);
                    // SAFETY: this thread holds the lock.
                    unsafe { lock.unlock(owed) };
                });
                // At the gate once its node is the tail.
                while lock.gate().mcs.tail.load(Relaxed) == before {
                    std::thread::yield_now();
                }
            }
            // SAFETY: this thread holds the lock.
            unsafe { lock.unlock(barged) };
        });
        assert!(!lock.is_locked() && !lock.gate_is_locked(), "the word is free and the gate empty");
        order.into_inner().unwrap()
    }

    /// Alternating groups: each head finds a waiter of its own group behind one of the other,
    /// so every pass of the gate would go over the oldest waiter but for the bound.
    #[test]
    fn the_gate_passes_in_cnas_order_and_the_bypass_bound_holds() {
        let groups = alternating(24);
        let order = acquisition_order::<Futex, 4>(&groups);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..groups.len()).collect::<Vec<_>>(), "each waiter acquires exactly once");
        let (longest, in_group) = longest_bypass_and_in_group(&order, &groups);
        assert_eq!(longest, 4, "runs past the oldest waiter reach the bound and stop there: {order:?}");
        assert!(in_group >= groups.len() * 3 / 4, "{in_group} in-group hand-overs: {order:?}");
    }

    #[test]
    fn the_default_bound_holds_at_the_gate_over_a_spinning_then_sleeping_policy() {
        let groups = alternating(2 * CNA_BYPASS_BOUND as usize + 8);
        let order = acquisition_order::<SpinPark, CNA_BYPASS_BOUND>(&groups);
        assert_eq!(order.len(), groups.len());
        let (longest, _) = longest_bypass_and_in_group(&order, &groups);
        assert_eq!(longest, CNA_BYPASS_BOUND as usize, "{order:?}");
    }

    /// One group: the gate never skips anyone, and queued waiters are served in order.
    #[test]
    fn one_group_passes_the_gate_in_queue_order() {
        let order = acquisition_order::<Futex, 4>(&[0; 10]);
        assert_eq!(order, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn the_cna_gated_word_is_the_word_and_the_tail_with_a_pointer_for_guard() {
        assert_eq!(size_of::<CnaGated<Futex>>(), 8);
        assert_eq!(size_of::<<CnaGated<Futex> as RawMutex>::Guard>(), 8, "the owed wake-up");
    }
}
