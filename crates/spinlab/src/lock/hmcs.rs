//! Hierarchical MCS lock (after Chabbi, Fagan and Mellor-Crummey, PPoPP'15) with the lock
//! in a word of its own, as in [`Mcs`](super::Mcs). Waiters queue first in an MCS queue of
//! their group (the NUMA node level of [`topology`](crate::sys::topology), which
//! `SPINLAB_TOPOLOGY` can declare); the head of a group's queue queues a node for the group
//! in the root queue, an [`McsQueue`] of groups. The head of the root queue's head group
//! waits on the word and, once it has taken it (or timed out), hands headship on before its
//! critical section: to the next waiter of its group while the group's node stays at the
//! root's head, at most [`HMCS_PASS_BOUND`] times in a row; then, if a waiter of its group
//! is behind it, it queues a new node for the group at the root's tail, passes the root to
//! the next group, and makes that waiter its group's head, to wait on the new node. The two
//! levels are [`HmcsQueue`], also the gate of [`HmcsGated`](super::HmcsGated).
//!
//! - **Levels**: two, the root and the node groups. An LLC level between them would carry a
//!   node and a bound per level with every hand-over; where a node is one LLC, as on most
//!   machines, it would be one group with nothing to choose. It is left out.
//! - **Fairness**: FIFO within a group; groups take turns in the root queue's order, a turn
//!   being at most `BOUND + 1` acquisitions while another group's node is queued there, so a
//!   waiter with `k` waiters ahead in its group is served within `k / (BOUND + 1) + 1` turns
//!   of its group after the one in progress, between two of which each other group has at
//!   most one turn. A thread that finds the root queue empty takes the word directly: a
//!   waiter is passed at most once by each such thread, as in `Mcs`, except while its
//!   group's first waiter is preempted between its swaps into the group's queue and into the
//!   root's, when the root queue looks empty to any number of acquisitions.
//! - **Memory**: 16 bytes per lock: the root's tail, the word in the 4 bytes its alignment
//!   leaves, and a pointer to the groups' queues, allocated at the first contended
//!   acquisition (one CAS installs it) and freed with the lock (a pthread mutex never
//!   destroyed keeps them): one tail per node group on a line of its own ([`CachePadded`]:
//!   128 bytes on x86_64 and aarch64) and a 16-byte header. One queue node per waiter from
//!   `Mcs`'s pool, and one more per group queued at the root, taken by whoever queues it.
//! - **Uncontended cost**: `Mcs`'s: a read of the root's tail and one atomic on the word (a
//!   swap; a CAS with a policy that may sleep) to lock, a store to unlock (a swap with a
//!   policy that may sleep). The group and its queue are touched only when contended.
//! - **More threads than CPUs**: as `Cna`, headship goes to a chosen waiter whether or not
//!   it runs, so each hand-over to a descheduled waiter waits for it: a convoy, which is why
//!   the registry builds `HmcsGated` over the policies whose waiters give their CPU away.
//!
//! Headship of a group's queue carries [`Headship`] in the new head's node, written before
//! the AcqRel swap of its state that makes it the head. A waiter that times out in a group's
//! queue abandons its node, as in `Mcs`. A group's head that times out at the root leaves its
//! group's node queued there to the next waiter of the group, or abandons it if there is none.

use super::cna::this_thread_group;
use super::mcs::{head_waits_for_word, McsQueue, ABANDONED, ASLEEP, EMPTY, HEAD};
use super::queue_node::{self, Node};
use super::word::{LockWord, LOCKED};
use crate::padded::CachePadded;
use crate::sync::{AtomicPtr, AtomicU32, Ordering::*};
use crate::wait::Wait;
use core::ptr::null_mut;
use lock_api::{GuardSend, RawMutex};
use std::time::Instant;

/// How many hand-overs in a row may stay within the holder's group while another group waits
/// at the root. Longer runs keep the lock in one node longer; this one bounds another group's
/// extra wait to 65 critical sections of the holding group.
pub const HMCS_PASS_BOUND: u32 = 64;

/// Hierarchical MCS lock waiting with policy `W`, handing over within a group at most `BOUND`
/// times in a row while another group waits (the module docs give the design): 16 bytes, an
/// [`HmcsQueue`] with the word in the 4 bytes its alignment leaves.
///
/// ```
/// use spinlab::{lock::Hmcs, wait::SpinPark};
/// let m = lock_api::Mutex::<Hmcs<SpinPark>, _>::new(0u32);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// assert_eq!(size_of::<Hmcs<SpinPark>>(), 16);
/// ```
pub struct Hmcs<W: Wait, const BOUND: u32 = HMCS_PASS_BOUND> {
    queue: HmcsQueue<W, BOUND, LockWord<W>>,
}

/// HMCS's two levels of queues on their own, whose head (the head of the root's head group)
/// holds the lock; `S` is what a lock keeps in the 4 bytes beside the root's tail (`Hmcs`:
/// its word). [`HmcsGated`](super::HmcsGated) uses it, with nothing there, as the gate in
/// front of a bounded-bypass word. 16 bytes: the root's tail and the groups' queues' pointer.
///
/// ```
/// use spinlab::{lock::HmcsQueue, wait::Futex};
/// let m = lock_api::Mutex::<HmcsQueue<Futex>, _>::new(0u32);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// assert_eq!(size_of::<HmcsQueue<Futex>>(), 16);
/// ```
pub struct HmcsQueue<W: Wait, const BOUND: u32 = HMCS_PASS_BOUND, S = ()> {
    /// The groups' nodes, in the order the groups take the lock.
    root: McsQueue<W>,
    /// What the lock keeps in the 4 bytes after the root's tail: `Hmcs`'s word, or nothing.
    spare: S,
    /// Null until the first contended acquisition.
    groups: AtomicPtr<GroupQueues<W>>,
}

/// What the head of an [`HmcsQueue`] keeps while it holds the lock: its group, its node in
/// the group's queue, the group's node at the root, and the hand-overs within the group so far.
pub struct HmcsGuard {
    group: usize,
    node: &'static Node,
    at_root: &'static Node,
    passes: u32,
}

/// One MCS queue per node group, each tail on its own line.
struct GroupQueues<W: Wait> {
    queues: Box<[CachePadded<McsQueue<W>>]>,
}

/// What the head of a group's queue holds at the root, in its node (`QueueNode::root_node`,
/// `passes`).
#[derive(Clone, Copy)]
enum Headship {
    /// Nothing yet: the new head queues a node for the group at the root.
    Join,
    /// This node, queued at the root: the new head waits until it is the root's head.
    Wait(&'static Node),
    /// This node, the root's head, after this many hand-overs within the group.
    Hold(&'static Node, u32),
}

/// Where [`Hmcs::hand_within`] left a group's headship.
enum Handed {
    /// With the next waiter, whose state word is given if it may be asleep there.
    To(Option<&'static AtomicU32>),
    /// Nobody was left behind: the group's queue is empty.
    Emptied,
}

/// `passes` of a node queued at the root but not yet its head.
const QUEUED: u32 = u32::MAX;

impl Headship {
    /// What `head`'s predecessor left in it (`Join` for a head that found its queue empty).
    fn of(head: &Node) -> Headship {
        match head.root_node.load(Relaxed) {
            EMPTY => Headship::Join,
            // SAFETY: `root_node` holds nodes' own numbers.
            number => match (unsafe { queue_node::index::node(number) }, head.passes.load(Relaxed)) {
                (node, QUEUED) => Headship::Wait(node),
                (node, passes) => Headship::Hold(node, passes),
            },
        }
    }

    /// Leaves it to the next head, before the swap that makes it the head publishes it.
    fn hand_to(self, head: &Node) {
        let (number, passes) = match self {
            Headship::Join => (EMPTY, 0),
            Headship::Wait(node) => (node.index, QUEUED),
            Headship::Hold(node, passes) => (node.index, passes),
        };
        head.root_node.store(number, Relaxed);
        head.passes.store(passes, Relaxed);
    }
}

impl<W: Wait> GroupQueues<W> {
    fn new() -> Self {
        GroupQueues { queues: (0..group_count()).map(|_| CachePadded::new(McsQueue::new())).collect() }
    }

    /// The group this thread runs in now: the index of its queue.
    fn of_this_thread(&self) -> usize {
        this_thread_group() as usize % self.queues.len()
    }
}

impl<W: Wait, const BOUND: u32> Hmcs<W, BOUND> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Hmcs { queue: HmcsQueue { root: McsQueue::new(), spare: LockWord::new(), groups: AtomicPtr::new(null_mut()) } }
        }
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<GuardSend> {
        let acquired = self.try_unqueued() || self.lock_queued(deadline);
        acquired.then(GuardSend::new)
    }

    /// The uncontended path: one attempt at the word, made only while no group is queued.
    #[inline(always)]
    fn try_unqueued(&self) -> bool {
        !self.queue.root.is_locked() && self.queue.spare.try_acquire(LOCKED).is_ok()
    }

    /// Leads the queues, waits for the word, then hands headship on. Returns `false` if
    /// `deadline` passed first.
    #[cold]
    fn lock_queued(&self, deadline: Option<Instant>) -> bool {
        let Some(head) = self.queue.lead(deadline) else { return false };
        let acquired = head_waits_for_word(&self.queue.spare, deadline);
        wake::<W>(self.queue.pass_on(head));
        acquired
    }
}

impl<W: Wait, const BOUND: u32> HmcsQueue<W, BOUND> {
    crate::sync::loom_const_fn! {
        /// New, empty queues (an unlocked lock).
        pub fn new() -> Self {
            HmcsQueue { root: McsQueue::new(), spare: (), groups: AtomicPtr::new(null_mut()) }
        }
    }

    /// Acquires the lock (leads the queues), giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<HmcsGuard> {
        self.lead(deadline)
    }
}

impl<W: Wait, const BOUND: u32, S> HmcsQueue<W, BOUND, S> {
    /// The groups' queues, allocated by the first thread to need them.
    fn group_queues(&self) -> &GroupQueues<W> {
        // Acquire: the queues' initialised memory, published by the installing CAS.
        let mut queues = self.groups.load(Acquire);
        if queues.is_null() {
            let fresh = Box::into_raw(Box::new(GroupQueues::new()));
            // AcqRel: publishes ours (Release), or makes another thread's visible (Acquire).
            queues = match self.groups.compare_exchange(null_mut(), fresh, AcqRel, Acquire) {
                Ok(_) => fresh,
                Err(installed) => {
                    // SAFETY: ours, never shared.
                    drop(unsafe { Box::from_raw(fresh) });
                    installed
                }
            };
        }
        // SAFETY: installed once, freed only by `drop`, which has the lock to itself.
        unsafe { &*queues }
    }

    /// Queues in this thread's group, waits to be its head, then for the group's node to be
    /// the root's head. Returns `None` if `deadline` passed first.
    #[cold]
    fn lead(&self, deadline: Option<Instant>) -> Option<HmcsGuard> {
        let queues = self.group_queues();
        let group = queues.of_this_thread();
        let local = &*queues.queues[group];
        let node = queue_node::take();
        Headship::Join.hand_to(node);
        let node = local.lead_with(node, deadline)?;
        let (at_root, passes) = match Headship::of(node) {
            Headship::Hold(at_root, passes) => (at_root, passes),
            Headship::Join => {
                let at_root = queue_node::take();
                if !self.root.join(at_root) && !McsQueue::<W>::wait_for_head(at_root, deadline) {
                    return self.give_up_at_root(local, node, at_root);
                }
                (at_root, 0)
            }
            Headship::Wait(at_root) => {
                if !McsQueue::<W>::wait_for_head(at_root, deadline) {
                    return self.give_up_at_root(local, node, at_root);
                }
                (at_root, 0)
            }
        };
        Some(HmcsGuard { group, node, at_root, passes })
    }

    /// The group's head `node` timed out while `at_root` waited at the root: the group's next
    /// waiter, if any, waits on `at_root` in its place; otherwise `at_root` leaves the root.
    /// The lock is nobody's here, so a sleeper is woken at once.
    #[cold]
    fn give_up_at_root(&self, local: &McsQueue<W>, node: &'static Node, at_root: &'static Node) -> Option<HmcsGuard> {
        let asleep = match Self::hand_within(local, node, Headship::Wait(at_root)) {
            Handed::To(asleep) => {
                #[cfg(loom)]
                crate::testing::count_hmcs_place_left();
                asleep
            }
            Handed::Emptied => self.leave_root(at_root),
        };
        wake::<W>([asleep, None]);
        None
    }

    /// Hands headship on from the head `guard` describes. Returns the state words of the new
    /// heads that may be asleep there, for the caller to wake.
    pub(super) fn pass_on(&self, guard: HmcsGuard) -> Wakes {
        let HmcsGuard { group, node, at_root, passes } = guard;
        let local = &*self.group_queues().queues[group];
        // Acquire: the successor's fields, published by its Release store of `next`.
        // Release on the CAS: our node goes back to the pool only after nobody can reach it.
        if node.next.load(Acquire).is_null() && local.tail.compare_exchange(node.index, EMPTY, Release, Relaxed).is_ok()
        {
            queue_node::give(node);
            return [self.root.pass_headship(at_root), None];
        }
        let mut next_group = None;
        let headship = if passes < BOUND {
            Headship::Hold(at_root, passes + 1)
        } else if self.root.tail.load(Relaxed) == at_root.index {
            // No other group waits: the group's turn starts again without leaving the root.
            Headship::Hold(at_root, 0)
        } else {
            #[cfg(loom)]
            crate::testing::count_hmcs_root_release();
            let again = queue_node::take();
            self.root.join(again);
            next_group = self.root.pass_headship(at_root);
            Headship::Wait(again)
        };
        match (Self::hand_within(local, node, headship), headship) {
            (Handed::To(asleep), _) => [next_group, asleep],
            // Every waiter behind us left: the group leaves the root.
            (Handed::Emptied, Headship::Wait(again)) => [next_group, self.leave_root(again)],
            (Handed::Emptied, _) => [next_group, self.root.pass_headship(at_root)],
        }
    }

    /// Makes the next waiter of the group queue `local` its head, with `headship`, skipping
    /// waiters that left, and gives `node` back.
    fn hand_within(local: &McsQueue<W>, mut node: &'static Node, headship: Headship) -> Handed {
        loop {
            // Acquire: as in `pass_on`.
            let mut next = node.next.load(Acquire);
            if next.is_null() {
                if local.tail.compare_exchange(node.index, EMPTY, Release, Relaxed).is_ok() {
                    queue_node::give(node);
                    return Handed::Emptied;
                }
                next = McsQueue::<W>::wait_for_successor_link(node);
            }
            // Nobody can reach our node once its successor is known.
            queue_node::give(node);
            // SAFETY: queue pointers always come from `queue_node::as_ptr`.
            let successor = unsafe { queue_node::from_ptr(next) };
            headship.hand_to(successor);
            // AcqRel: Release publishes `headship` to the new head's Acquire load of HEAD;
            // Acquire, on an abandoned node, orders its waiter's last use of it before ours.
            match successor.state.swap(HEAD, AcqRel) {
                ABANDONED => node = successor,
                state => {
                    #[cfg(loom)]
                    if let Headship::Hold(..) = headship {
                        crate::testing::count_hmcs_local_pass();
                    }
                    return Handed::To((state == ASLEEP).then_some(&successor.state));
                }
            }
        }
    }

    /// Takes the group's node `at_root`, which nobody waits on, out of the root queue: it is
    /// abandoned there, or, if it became the root's head meanwhile, the root passes on.
    fn leave_root(&self, at_root: &'static Node) -> Option<&'static AtomicU32> {
        if McsQueue::<W>::abandon(at_root) {
            None
        } else {
            self.root.pass_headship(at_root)
        }
    }
}

/// The state words of up to two new heads that may be asleep there, one at the root and one
/// in a group's queue: queue nodes, never freed.
type Wakes = [Option<&'static AtomicU32>; 2];

/// Wakes the new heads that may be asleep.
#[inline]
fn wake<W: Wait>(wakes: Wakes) {
    for asleep in wakes.into_iter().flatten() {
        W::wake_one(asleep);
    }
}

/// How many node groups the lock keeps a queue for.
fn group_count() -> usize {
    #[cfg(loom)]
    return 2;
    #[cfg(not(loom))]
    crate::sys::topology::machine()
        .groups(crate::sys::topology::Level::Node)
        .groups
        .len()
        .max(crate::testing::declarable_groups())
}

#[cfg(all(test, not(loom)))]
impl<W: Wait, const BOUND: u32, S> HmcsQueue<W, BOUND, S> {
    /// The tails that change when a waiter of `group` queues: its group's queue's, and the
    /// root's, which changes too when the group's queue was empty (a snapshot, for tests).
    pub(super) fn tails(&self, group: u32) -> (u32, u32) {
        let local = &self.group_queues().queues[group as usize];
        (local.tail.load(Relaxed), self.root.tail.load(Relaxed))
    }
}

impl<W: Wait, const BOUND: u32> Default for Hmcs<W, BOUND> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: Wait, const BOUND: u32> Default for HmcsQueue<W, BOUND> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: Wait, const BOUND: u32, S> Drop for HmcsQueue<W, BOUND, S> {
    fn drop(&mut self) {
        // Relaxed: `&mut self` orders every other use of the lock before this.
        let queues = self.groups.load(Relaxed);
        if !queues.is_null() {
            // SAFETY: installed by `group_queues` from a `Box`, and nobody uses the lock now.
            drop(unsafe { Box::from_raw(queues) });
        }
    }
}

// SAFETY: mutual exclusion is the word's, as for `Mcs`: every acquisition is a successful
// `try_acquire` from UNLOCKED with Acquire ordering, made on the uncontended path or by the
// root's head, and only the holder releases the word, with Release ordering. The queues only
// decide which waiter may try.
unsafe impl<W: Wait, const BOUND: u32> RawMutex for Hmcs<W, BOUND> {
    crate::sync::raw_init!();
    type Guard = GuardSend;

    #[inline]
    fn lock(&self) -> GuardSend {
        if !self.try_unqueued() {
            let acquired = self.lock_queued(None);
            debug_assert!(acquired, "an acquisition without a deadline cannot time out");
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<GuardSend> {
        self.try_unqueued().then(GuardSend::new)
    }

    #[inline]
    unsafe fn unlock(&self, _: GuardSend) {
        self.queue.spare.unlock();
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.queue.spare.is_locked() || self.queue.root.is_locked()
    }
}

super::timed_via_lock_until!(Hmcs, const BOUND: u32);

// SAFETY: the lock is held by the root's head group's head, as for `McsQueue` at each level:
// the group's node is made the root's head by its predecessor's holder (an AcqRel swap of its
// state, which the waiter observes with Acquire), and so is the group's head within its group.
// A hand-over within the group keeps the group's node at the root's head.
unsafe impl<W: Wait, const BOUND: u32> RawMutex for HmcsQueue<W, BOUND> {
    crate::sync::raw_init!();
    type Guard = HmcsGuard;

    #[inline]
    fn lock(&self) -> HmcsGuard {
        self.lead(None).expect("an acquisition without a deadline cannot time out")
    }

    /// Leads the queues if nobody is queued at the root, with a deadline already passed: a
    /// waiter that finds a queue in its way gives up at once, leaving it consistent.
    #[inline]
    fn try_lock(&self) -> Option<HmcsGuard> {
        if self.is_locked() {
            return None;
        }
        self.lead(Some(Instant::now()))
    }

    #[inline]
    unsafe fn unlock(&self, guard: HmcsGuard) {
        wake::<W>(self.pass_on(guard));
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.root.is_locked()
    }
}

super::timed_via_lock_until!(HmcsQueue, const BOUND: u32);

#[cfg(all(test, not(loom)))]
pub(super) mod tests {
    use super::*;
    use crate::wait::{Futex, SpinPark};
    use std::sync::Mutex;
    use std::time::Duration;

    fn tails<W: Wait, const BOUND: u32>(lock: &Hmcs<W, BOUND>, group: u32) -> (u32, u32) {
        lock.queue.tails(group)
    }

    /// Spawns a thread of `group` running `body` on `s`, and returns once it has queued: its
    /// node is its group's tail, and its group's node is queued at the root.
    fn spawn_queued<'scope, W: Wait, const BOUND: u32>(
        s: &'scope std::thread::Scope<'scope, '_>,
        lock: &'scope Hmcs<W, BOUND>,
        group: u32,
        body: impl FnOnce() + Send + 'scope,
    ) {
        let (local_before, root_before) = tails(lock, group);
        s.spawn(move || {
            let _group = crate::testing::declare_cna_group(group);
            body();
        });
        loop {
            let (local, root) = tails(lock, group);
            if local != local_before && (local_before != EMPTY || root != root_before) {
                return;
            }
            std::thread::yield_now();
        }
    }

    /// The order in which `groups.len()` waiters, queued one by one in that order behind a
    /// held lock, each in its group, acquire it once each.
    fn acquisition_order<W: Wait, const BOUND: u32>(groups: &[u32]) -> Vec<usize> {
        let lock = Hmcs::<W, BOUND>::new();
        let order = Mutex::new(Vec::new());
        lock.lock();
        std::thread::scope(|s| {
            for (waiter, &group) in groups.iter().enumerate() {
                let (lock, order) = (&lock, &order);
                spawn_queued(s, lock, group, move || {
                    lock.lock();
                    order.lock().unwrap().push(waiter);
                    // SAFETY: this thread holds the lock.
                    unsafe { lock.unlock(GuardSend::new()) };
                });
            }
            // SAFETY: this thread holds the lock.
            unsafe { lock.unlock(GuardSend::new()) };
        });
        assert!(!lock.is_locked(), "the queues emptied");
        order.into_inner().unwrap()
    }

    /// The order in which the waiters of groups 0 and 1 (`groups[waiter]`, all queued before
    /// the first release) are served when the groups take turns of `turn` acquisitions each,
    /// group 0 first, each in its queue order.
    pub(in crate::lock) fn in_turns(groups: &[u32], turn: usize) -> Vec<usize> {
        let of = |group| -> Vec<usize> { (0..groups.len()).filter(|&w| groups[w] == group).collect() };
        let (zeros, ones) = (of(0), of(1));
        let mut turns = zeros.chunks(turn).zip(ones.chunks(turn)).flat_map(|(z, o)| [z, o]).collect::<Vec<_>>();
        let longer = if zeros.len() > ones.len() { &zeros } else { &ones };
        turns.extend(longer.chunks(turn).skip(zeros.len().min(ones.len()).div_ceil(turn)));
        turns.concat()
    }

    /// Alternating groups, both queued in full before the first release: each group's turn is
    /// its first waiter and `BOUND` hand-overs within the group, in the group's queue order,
    /// then the other group's turn, and so on.
    #[test]
    fn a_group_keeps_the_lock_for_the_pass_bound_then_the_other_group_has_it() {
        let groups: Vec<u32> = (0..24).map(|i| i % 2).collect();
        let order = acquisition_order::<Futex, 4>(&groups);
        assert_eq!(order, in_turns(&groups, 5));
    }

    #[test]
    fn the_default_bound_holds_over_a_spinning_then_sleeping_policy() {
        let turn = HMCS_PASS_BOUND as usize + 1;
        let groups: Vec<u32> = (0..2 * turn + 8).map(|i| (i % 2) as u32).collect();
        let order = acquisition_order::<SpinPark, HMCS_PASS_BOUND>(&groups);
        assert_eq!(order, in_turns(&groups, turn));
    }

    /// One group: nothing to choose, and the lock is FIFO.
    #[test]
    fn one_group_is_served_in_queue_order() {
        let order = acquisition_order::<Futex, 4>(&[1; 10]);
        assert_eq!(order, (0..10).collect::<Vec<_>>());
    }

    /// A group's head times out while its group's node waits at the root behind another
    /// group's: the group's next waiter must take the node over and be served in the group's
    /// place, and a waiter that timed out inside a group's queue must be skipped.
    #[test]
    fn a_head_that_times_out_at_the_root_leaves_its_place_to_its_group() {
        let lock = Hmcs::<Futex, 4>::new();
        let served = Mutex::new(Vec::new());
        lock.lock();
        std::thread::scope(|s| {
            // Waiter 0 (group 0) heads the root; 1 and 3 (group 1) time out, 1 as its group's
            // head at the root, 3 inside the group's queue; 2 and 4 must be served.
            for (waiter, group, timed) in
                [(0usize, 0u32, false), (1, 1, true), (2, 1, false), (3, 1, true), (4, 1, false)]
            {
                let (lock, served) = (&lock, &served);
                spawn_queued(s, lock, group, move || {
                    let deadline = timed.then(|| Instant::now() + Duration::from_millis(200));
                    if lock.lock_until(deadline).is_some() {
                        served.lock().unwrap().push(waiter);
                        // SAFETY: this thread holds the lock.
                        unsafe { lock.unlock(GuardSend::new()) };
                    }
                });
            }
            std::thread::sleep(Duration::from_millis(400));
            // SAFETY: this thread holds the lock.
            unsafe { lock.unlock(GuardSend::new()) };
        });
        assert_eq!(served.into_inner().unwrap(), vec![0, 2, 4]);
        assert!(!lock.is_locked(), "the queues emptied");
        assert!(lock.try_lock().is_some(), "the lock works after the time-outs");
    }

    /// Threads of two groups, some with deadlines short enough to give up now and then, each
    /// take the lock many times: with `BOUND` 2 the hand-overs within a group, the root's
    /// release at the bound and the time-outs at every level interleave. A read-modify-write
    /// split across a yield loses updates unless the lock excludes.
    fn two_groups_exclude<W: Wait>() {
        const THREADS: u32 = 4;
        const ROUNDS: usize = 2_000;
        let lock = Hmcs::<W, 2>::new();
        let count = std::sync::atomic::AtomicUsize::new(0);
        let acquired = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for thread in 0..THREADS {
                let (lock, count, acquired) = (&lock, &count, &acquired);
                s.spawn(move || {
                    let _group = crate::testing::declare_cna_group(thread % 2);
                    for round in 0..ROUNDS {
                        let timed = thread >= 2 && round % 3 == 0;
                        let deadline = timed.then(|| Instant::now() + Duration::from_micros(20));
                        if lock.lock_until(deadline).is_none() {
                            continue;
                        }
                        let seen = count.load(Relaxed);
                        if round % 16 == 0 {
                            std::thread::yield_now();
                        }
                        count.store(seen + 1, Relaxed);
                        acquired.fetch_add(1, Relaxed);
                        // SAFETY: this thread holds the lock.
                        unsafe { lock.unlock(GuardSend::new()) };
                    }
                });
            }
        });
        assert_eq!(count.into_inner(), acquired.into_inner(), "an update was lost: two holders at once");
        assert!(!lock.is_locked(), "the queues emptied");
    }

    #[test]
    fn two_groups_exclude_over_futex() {
        two_groups_exclude::<Futex>();
    }

    #[test]
    fn two_groups_exclude_over_spin_park() {
        two_groups_exclude::<SpinPark>();
    }

    #[test]
    fn the_groups_queues_are_allocated_at_the_first_contention_only() {
        let lock = Hmcs::<SpinPark>::new();
        lock.lock();
        assert!(lock.queue.groups.load(Relaxed).is_null(), "an uncontended acquisition allocates nothing");
        assert!(lock.try_lock().is_none());
        // SAFETY: this thread holds the lock.
        unsafe { lock.unlock(GuardSend::new()) };
        std::thread::scope(|s| {
            lock.lock();
            s.spawn(|| {
                lock.lock();
                // SAFETY: this thread holds the lock.
                unsafe { lock.unlock(GuardSend::new()) };
            });
            while !lock.queue.root.is_locked() {
                std::thread::yield_now();
            }
            // SAFETY: this thread holds the lock.
            unsafe { lock.unlock(GuardSend::new()) };
        });
        assert!(!lock.queue.groups.load(Relaxed).is_null());
    }
}
