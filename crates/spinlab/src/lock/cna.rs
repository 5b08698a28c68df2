//! Compact NUMA-aware lock (after Dice and Kogan, EuroSys'19): [`Mcs`](super::Mcs)'s word and
//! queue, and a choice at each hand-over. The queue's head, once it has taken the word,
//! passes headship to the first waiter of its own group (the NUMA node level of
//! [`topology`](crate::sys::topology), which `SPINLAB_TOPOLOGY` can declare), moving the
//! waiters of other groups it skips to a secondary queue. That queue goes back in front of the
//! main one (the splice) when no waiter of the group is queued, or when [`CNA_BYPASS_BOUND`]
//! hand-overs in a row have passed over the oldest waiter. The lock stays in one node's
//! caches for a run of critical sections instead of crossing the interconnect at each. The
//! queue and its choice are [`CnaQueue`], which is also the gate of [`CnaGated`](super::CnaGated).
//!
//! - **Fairness**: the secondary queue holds the oldest waiters, in their order, so every
//!   hand-over goes either to the oldest waiter or past it, and at most `BOUND` in a row go
//!   past it. A waiter with `k` waiters ahead of it gets the lock within `(k + 1)(BOUND + 1)`
//!   hand-overs, plus one acquisition by each thread that found the queue empty (as `Mcs`).
//! - **Memory**: 8 bytes per lock, as `Mcs` (the word and the tail); one queue node on lines
//!   of its own per waiter, from `Mcs`'s per-thread pool, which also carries the secondary
//!   queue's ends and the count of hand-overs past the oldest waiter from head to head.
//! - **Uncontended cost**: `Mcs`'s: a read of the tail and one atomic on the word to lock, a
//!   store to unlock (a swap with a policy that may sleep). The group is asked only on the
//!   contended path, one `sched_getcpu` per queued acquisition; the choice reads the queue's
//!   nodes up to the first one of the group, each on its own line.
//! - **More threads than CPUs**: as `Mcs` ungated, headship goes to a chosen waiter whether
//!   or not it runs, so each hand-over to a descheduled waiter waits for it to be scheduled:
//!   a convoy. Waiters sleep as their policy says; the head alone waits on the word.
//!
//! Only the head reads or writes the secondary queue and the count, so they are relaxed
//! fields of its node, copied into the next head's node before the hand-over of headship
//! (an AcqRel swap of its state, read with Acquire) publishes them. A waiter of either queue
//! that times out marks its node `ABANDONED` and leaves, as in `Mcs`: a head that hands over
//! to such a node takes it and chooses again from there. Waiters are never left in the
//! secondary queue with the main one empty: a head that finds nobody behind it makes the
//! secondary queue the queue (one CAS of the tail).

use super::mcs::{McsGuard, McsQueue, QueuedWord, ABANDONED, ASLEEP, EMPTY, HEAD};
use super::queue_node::{self, Node};
use super::word::LockWord;
use crate::sync::{AtomicU32, Ordering::*};
use crate::wait::Wait;
use core::ptr::null_mut;
use lock_api::RawMutex;
use std::time::Instant;

/// How many hand-overs in a row may pass over the oldest waiter before the next goes to it.
/// Longer runs keep the lock in one node longer; this one bounds a skipped waiter's extra
/// wait to 64 critical sections of the holder's group.
pub const CNA_BYPASS_BOUND: u32 = 64;

/// Compact NUMA-aware lock waiting with policy `W`, passing over the oldest waiter at most
/// `BOUND` hand-overs in a row (the module docs give the design): 8 bytes, as [`Mcs`](super::Mcs).
///
/// ```
/// use spinlab::{lock::Cna, wait::SpinPark};
/// let m = lock_api::Mutex::<Cna<SpinPark>, _>::new(0u32);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// assert_eq!(size_of::<Cna<SpinPark>>(), 8);
/// ```
pub type Cna<W, const BOUND: u32 = CNA_BYPASS_BOUND> = QueuedWord<CnaQueue<W, BOUND>, W>;

/// The CNA queue on its own, whose head holds the lock: [`McsQueue`] with CNA's choice of the
/// next head at each hand-over (the module docs give it). One 4-byte word, the queue's tail.
/// [`Cna`] keeps the lock in a word of its own beside it; [`CnaGated`](super::CnaGated) uses it
/// as the gate in front of a bounded-bypass word.
///
/// ```
/// use spinlab::{lock::CnaQueue, wait::Futex};
/// let m = lock_api::Mutex::<CnaQueue<Futex>, _>::new(0u32);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// assert_eq!(size_of::<CnaQueue<Futex>>(), 4);
/// ```
pub struct CnaQueue<W: Wait, const BOUND: u32 = CNA_BYPASS_BOUND> {
    pub(super) mcs: McsQueue<W>,
}

/// What headship carries from head to head, in the head's node (`QueueNode::secondary_first`,
/// `secondary_last`, `bypasses`): the secondary queue's first and last nodes' numbers
/// ([`EMPTY`]: none), linked through `next`, and the hand-overs in a row that passed over the
/// oldest waiter.
struct Secondary {
    first: u32,
    last: u32,
    bypasses: u32,
}

impl Secondary {
    /// What `head`'s predecessor left in it (empty for a head that found the queue empty).
    fn of(head: &Node) -> Secondary {
        Secondary {
            first: head.secondary_first.load(Relaxed),
            last: head.secondary_last.load(Relaxed),
            bypasses: head.bypasses.load(Relaxed),
        }
    }

    /// Leaves it to the next head, before the swap that makes it the head publishes it.
    fn hand_to(&self, head: &Node) {
        head.secondary_first.store(self.first, Relaxed);
        head.secondary_last.store(self.last, Relaxed);
        head.bypasses.store(self.bypasses, Relaxed);
    }

    /// Moves the linked nodes `first..=last` to the end of the queue.
    fn append(&mut self, first: &'static Node, last: &'static Node) {
        #[cfg(loom)]
        crate::testing::count_cna_secondary_move();
        last.next.store(null_mut(), Relaxed);
        match self.last {
            EMPTY => self.first = first.index,
            // SAFETY: the secondary queue holds nodes' own numbers.
            last => unsafe { queue_node::index::node(last) }.next.store(queue_node::as_ptr(first), Relaxed),
        }
        self.last = last.index;
    }

    /// Empties the queue (already linked in front of the rest) and returns its first node.
    fn take(&mut self) -> &'static Node {
        let first = core::mem::replace(&mut self.first, EMPTY);
        self.last = EMPTY;
        // SAFETY: the secondary queue holds nodes' own numbers; it was not empty.
        unsafe { queue_node::index::node(first) }
    }
}

impl<W: Wait, const BOUND: u32> Cna<W, BOUND> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            QueuedWord { word: LockWord::new(), queue: CnaQueue::new() }
        }
    }
}

impl<W: Wait, const BOUND: u32> CnaQueue<W, BOUND> {
    crate::sync::loom_const_fn! {
        /// A new, empty queue (an unlocked lock).
        pub fn new() -> Self {
            CnaQueue { mcs: McsQueue::new() }
        }
    }

    /// Acquires the lock (leads the queue), giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<McsGuard> {
        self.lead_until(deadline).map(McsGuard::of)
    }

    /// A node of this thread's group, with nothing carried in it: a head that found the queue
    /// empty has no secondary queue.
    fn node_of_this_thread() -> &'static Node {
        let node = queue_node::take();
        node.group.store(this_thread_group(), Relaxed);
        Secondary { first: EMPTY, last: EMPTY, bypasses: 0 }.hand_to(node);
        node
    }

    /// Queues with this thread's group and waits to be the head, as [`McsQueue`] does.
    /// Returns the node, or `None` if `deadline` passed first (the node was then abandoned to
    /// the queue).
    #[inline]
    fn lead_until(&self, deadline: Option<Instant>) -> Option<&'static Node> {
        self.mcs.lead_with(Self::node_of_this_thread(), deadline)
    }

    /// Releases the lock as `unlock` does, except the futex wake-up of a new head that may be
    /// asleep: returns the word to wake it on, a queue node, which is never freed.
    ///
    /// # Safety
    ///
    /// As `unlock`: `guard` is this lock's, from the acquisition being released.
    #[inline]
    pub(crate) unsafe fn pass_on(&self, guard: McsGuard) -> Option<&'static AtomicU32> {
        self.pass_headship(guard.node)
    }

    /// Makes the chosen waiter the head, or empties the queue, and gives `node` back. Returns
    /// the new head's state word if it may be asleep there, for the caller to wake.
    fn pass_headship(&self, mut node: &'static Node) -> Option<&'static AtomicU32> {
        let group = node.group.load(Relaxed);
        let mut secondary = Secondary::of(node);
        loop {
            // Acquire: the successor's fields, published by its Release store of `next`.
            let mut next = node.next.load(Acquire);
            if next.is_null() {
                // Nobody behind us in the main queue: the secondary queue becomes the queue.
                // Release: our writes to its links (its last's null `next` above all)
                // happen-before the next arrival links itself behind it.
                if self.mcs.tail.compare_exchange(node.index, secondary.last, Release, Relaxed).is_ok() {
                    queue_node::give(node);
                    if secondary.last == EMPTY {
                        return None;
                    }
                    secondary.bypasses = 0;
                    let oldest = secondary.take();
                    match Self::make_head(oldest, &secondary) {
                        Ok(asleep) => return asleep,
                        Err(abandoned) => node = abandoned,
                    }
                    continue;
                }
                next = McsQueue::<W>::wait_for_successor_link(node);
            }
            // Nobody can reach our node once its successor is known.
            queue_node::give(node);
            // SAFETY: queue pointers always come from `queue_node::as_ptr`.
            let chosen = Self::choose(&mut secondary, unsafe { queue_node::from_ptr(next) }, group);
            match Self::make_head(chosen, &secondary) {
                Ok(asleep) => return asleep,
                Err(abandoned) => node = abandoned,
            }
        }
    }

    /// Hands headship, with `secondary`, to `chosen`: `Ok` with its state word if it may be
    /// asleep there, or `Err` with its node if its waiter left (the node is ours then).
    fn make_head(chosen: &'static Node, secondary: &Secondary) -> Result<Option<&'static AtomicU32>, &'static Node> {
        secondary.hand_to(chosen);
        // AcqRel: Release publishes `secondary` to the new head's Acquire load of HEAD;
        // Acquire, on an abandoned node, orders its waiter's last use of it before ours.
        match chosen.state.swap(HEAD, AcqRel) {
            ASLEEP => Ok(Some(&chosen.state)),
            ABANDONED => Err(chosen),
            _ => Ok(None),
        }
    }

    /// The next head, given the main queue's next node `first`: the first waiter of `group`
    /// (the waiters before it moved to the secondary queue), or, after `BOUND` hand-overs past
    /// the oldest waiter or when the group has none linked, the oldest waiter.
    fn choose(secondary: &mut Secondary, first: &'static Node, group: u32) -> &'static Node {
        if secondary.bypasses < BOUND {
            let (mut skipped_last, mut candidate) = (None::<&'static Node>, first);
            loop {
                if candidate.group.load(Relaxed) == group {
                    if let Some(skipped_last) = skipped_last {
                        secondary.append(first, skipped_last);
                    }
                    secondary.bypasses = if secondary.first == EMPTY { 0 } else { secondary.bypasses + 1 };
                    return candidate;
                }
                // Acquire: as in `pass_headship`. A null `next` is the tail: never moved.
                let next = candidate.next.load(Acquire);
                if next.is_null() {
                    break;
                }
                skipped_last = Some(candidate);
                // SAFETY: as in `pass_headship`.
                candidate = unsafe { queue_node::from_ptr(next) };
            }
        }
        secondary.bypasses = 0;
        if secondary.first == EMPTY {
            return first;
        }
        // The splice: the secondary queue goes back in front of `first`.
        // SAFETY: the secondary queue holds nodes' own numbers.
        unsafe { queue_node::index::node(secondary.last) }.next.store(queue_node::as_ptr(first), Relaxed);
        secondary.take()
    }
}

/// The group this thread queues in: its NUMA node group now, or a model's or test's choice
/// (`Cna`'s and `Hmcs`'s).
#[inline]
pub(super) fn this_thread_group() -> u32 {
    #[cfg(loom)]
    return crate::testing::cna_group_of_this_thread();
    #[cfg(not(loom))]
    match crate::testing::declared_cna_group() {
        Some(group) => group,
        None => crate::sys::topology::current_group(crate::sys::topology::Level::Node) as u32,
    }
}

impl<W: Wait, const BOUND: u32> Default for Cna<W, BOUND> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: Wait, const BOUND: u32> Default for CnaQueue<W, BOUND> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the lock is held by the queue's head, as for `McsQueue`: the first node swapped
// into an empty tail, then each node made head by its predecessor's holder (`make_head`'s
// AcqRel swap, which the waiter observes with an Acquire load). A head that finds nobody
// behind it hands the tail to the secondary queue with a Release CAS.
unsafe impl<W: Wait, const BOUND: u32> RawMutex for CnaQueue<W, BOUND> {
    crate::sync::raw_init!();
    type Guard = McsGuard;

    #[inline]
    fn lock(&self) -> McsGuard {
        McsGuard::of(self.lead_until(None).expect("an acquisition without a deadline cannot time out"))
    }

    #[inline]
    fn try_lock(&self) -> Option<McsGuard> {
        if self.is_locked() {
            return None;
        }
        self.mcs.try_lead_with(Self::node_of_this_thread()).map(McsGuard::of)
    }

    #[inline]
    unsafe fn unlock(&self, guard: McsGuard) {
        // SAFETY: forwarded from the caller.
        if let Some(asleep) = unsafe { self.pass_on(guard) } {
            W::wake_one(asleep);
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.mcs.is_locked()
    }
}

super::timed_via_lock_until!(CnaQueue, const BOUND: u32);

#[cfg(all(test, not(loom)))]
pub(super) mod tests {
    use super::*;
    use crate::wait::{Futex, SpinPark};
    use lock_api::GuardSend;
    use std::sync::Mutex;

    /// The order in which `groups.len()` waiters, queued one by one in that order behind a
    /// held lock (the holder in group 0), each with its group, acquire it once each.
    fn acquisition_order<W: Wait, const BOUND: u32>(groups: &[u32]) -> Vec<usize> {
        let lock = Cna::<W, BOUND>::new();
        let order = Mutex::new(Vec::new());
        lock.lock();
        std::thread::scope(|s| {
            for (waiter, &group) in groups.iter().enumerate() {
                let before = lock.queue.mcs.tail.load(Relaxed);
                let (lock, order) = (&lock, &order);
                s.spawn(move || {
                    let _group = crate::testing::declare_cna_group(group);
                    lock.lock();
                    order.lock().unwrap().push(waiter);
                    // SAFETY: this thread holds the lock.
                    unsafe { lock.unlock(GuardSend::new()) };
                });
                // Queued once its node is the tail: the order of the queue is the spawn order.
                while lock.queue.mcs.tail.load(Relaxed) == before {
                    std::thread::yield_now();
                }
            }
            // SAFETY: this thread holds the lock.
            unsafe { lock.unlock(GuardSend::new()) };
        });
        order.into_inner().unwrap()
    }

    /// The longest run of acquisitions that passed over the oldest waiter still queued, and
    /// the number of hand-overs that stayed in their group.
    pub(in crate::lock) fn longest_bypass_and_in_group(order: &[usize], groups: &[u32]) -> (usize, usize) {
        let (mut served, mut run, mut longest) = (vec![false; order.len()], 0, 0);
        for &waiter in order {
            let oldest = served.iter().position(|s| !s).unwrap();
            run = if waiter == oldest { 0 } else { run + 1 };
            longest = longest.max(run);
            served[waiter] = true;
        }
        let in_group = order.windows(2).filter(|pair| groups[pair[0]] == groups[pair[1]]).count();
        (longest, in_group)
    }

    pub(in crate::lock) fn alternating(n: usize) -> Vec<u32> {
        (0..n).map(|i| (i % 2) as u32).collect()
    }

    /// Alternating groups: each head finds a waiter of its own group behind one of the other,
    /// so every hand-over would pass over the oldest waiter but for the bound.
    #[test]
    fn the_bypass_bound_holds_and_every_waiter_is_served() {
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
    fn the_default_bound_holds_over_a_spinning_then_sleeping_policy() {
        let groups = alternating(2 * CNA_BYPASS_BOUND as usize + 8);
        let order = acquisition_order::<SpinPark, CNA_BYPASS_BOUND>(&groups);
        assert_eq!(order.len(), groups.len());
        let (longest, _) = longest_bypass_and_in_group(&order, &groups);
        assert_eq!(longest, CNA_BYPASS_BOUND as usize, "{order:?}");
    }

    /// One group: the choice never skips anyone, and the lock is FIFO.
    #[test]
    fn one_group_is_served_in_queue_order() {
        let order = acquisition_order::<Futex, 4>(&[0; 10]);
        assert_eq!(order, (0..10).collect::<Vec<_>>());
    }

    /// A waiter moved to the secondary queue times out there while a waiter of the
    /// holder's group holds the lock; the splice must skip its abandoned node and still
    /// serve the others. (Should the machine be too slow for the sleeps' margins, waiter 1
    /// times out in the main queue instead, which the same assertions cover.)
    #[test]
    fn a_waiter_that_times_out_in_the_secondary_queue_is_skipped() {
        use std::time::Duration;
        let lock = Cna::<Futex, 4>::new();
        let served = Mutex::new(Vec::new());
        lock.lock();
        std::thread::scope(|s| {
            for (waiter, group) in [(0usize, 0u32), (1, 1), (2, 0), (3, 0)] {
                let before = lock.queue.mcs.tail.load(Relaxed);
                let (lock, served) = (&lock, &served);
                s.spawn(move || {
                    let _group = crate::testing::declare_cna_group(group);
                    let deadline = (waiter == 1).then(|| Instant::now() + Duration::from_millis(200));
                    if lock.lock_until(deadline).is_some() {
                        served.lock().unwrap().push(waiter);
                        if waiter == 2 {
                            std::thread::sleep(Duration::from_millis(400));
                        }
                        // SAFETY: this thread holds the lock.
                        unsafe { lock.unlock(GuardSend::new()) };
                    }
                });
                while lock.queue.mcs.tail.load(Relaxed) == before {
                    std::thread::yield_now();
                }
            }
            std::thread::sleep(Duration::from_millis(100));
            // SAFETY: this thread holds the lock.
            unsafe { lock.unlock(GuardSend::new()) };
        });
        assert_eq!(served.into_inner().unwrap(), vec![0, 2, 3]);
        assert!(!lock.is_locked(), "the queue emptied");
    }
}
