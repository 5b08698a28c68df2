//! Ticket lock: take a number, wait until it is served. FIFO, one shared line.
//!
//! Over the spin-only policies (the seeds' ticket lock) every waiter watches the same
//! `serving` word, so every hand-over invalidates every waiter's copy of it. That cost grows
//! with the number of waiters and is what MCS and CLH remove. Over the policies that may sleep
//! waiters spin and sleep elsewhere (below).
//!
//! A waiter that sleeps does not sleep on `serving`: the kernel cannot wake "the one holding
//! ticket n", so a release would have to wake every sleeper, a herd per hand-over. It sleeps
//! on a slot of a waiting array shared by all ticket locks, chosen by hashing the lock's address
//! with its ticket, and a release bumps and wakes only the slot of the next ticket, as in
//! Dice and Kogan's TWA ("TWA – Ticket Locks Augmented with a Waiting Array", Euro-Par 2019).
//! Waiters whose tickets share a slot wake too, see that it is not their turn, and sleep
//! again.
//!
//! With a policy that may sleep, a waiter spins on that slot too, not on `serving`, and every
//! release bumps the slot of the ticket it serves. `serving` shares its line with `next` and,
//! in a [`Gated`](super::Gated) lock's gate, with the word that every acquisition and release
//! writes, so waiters spinning there would take that line from the holder at every write
//! (docs/design.md, "The gate"). Timed waiters, which hold no ticket, still spin and sleep on
//! `serving`.

use crate::sync::{AtomicU32, Ordering::*};
use crate::wait::{Episode, Spun, Wait};
use core::marker::PhantomData;
use lock_api::{GuardSend, RawMutex, RawMutexFair};
use std::time::Instant;

/// Ticket lock waiting with policy `W`.
///
/// Words: `next` (the next ticket to hand out), `serving` (the ticket that holds the lock;
/// waiters of a spin-only policy and timed waiters watch it, the others their waiting-array
/// slot), `sleepers` (used only by policies that may sleep: waiters with
/// a ticket that may be asleep on a waiting-array slot, counted in units of
/// `TICKETED_SLEEPER`, timed waiters that may be asleep on `serving`, in units of
/// `TIMED_SLEEPER`, and, in a gated lock's gate, the bit `OWED`: the next ticket's slot is
/// owed a wake-up that the word's release makes, see [`Gated`](super::Gated)). Held iff
/// `next != serving`.
///
/// A timed acquisition cannot take a ticket (a ticket cannot be given back without blocking
/// every later one), so it waits for `serving` to move and tries to take the lock only when
/// it is free: timed waiters are not served in FIFO order.
///
/// ```
/// use spinlab::{lock::Ticket, wait::Pause};
/// let m = lock_api::Mutex::<Ticket<Pause>, _>::new(vec![1]);
/// m.lock().push(2);
/// assert_eq!(*m.lock(), [1, 2]);
/// ```
pub struct Ticket<W: Wait> {
    next: AtomicU32,
    serving: AtomicU32,
    sleepers: AtomicU32,
    policy: PhantomData<fn() -> W>,
}

impl<W: Wait> Ticket<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Ticket { next: AtomicU32::new(0), serving: AtomicU32::new(0), sleepers: AtomicU32::new(0), policy: PhantomData }
        }
    }

    /// How many threads hold a ticket and wait behind the holder (a snapshot; 0 when the lock
    /// is free). Timed waiters hold no ticket and are not counted. Tickets are served in the
    /// order they were taken, so a thread that sees this count grow past `n` knows that the
    /// thread it saw take ticket `n` will be served before any later one.
    ///
    /// ```
    /// use lock_api::RawMutex;
    /// use spinlab::{lock::Ticket, wait::Spin};
    /// let lock = Ticket::<Spin>::new();
    /// assert_eq!(lock.waiters(), 0);
    /// lock.lock();
    /// assert_eq!(lock.waiters(), 0, "the holder's own ticket is not a waiter's");
    /// ```
    pub fn waiters(&self) -> u32 {
        // Relaxed: a snapshot for observers; nothing is read through it. `serving` first: it
        // never passes the `next` of the same moment, so it cannot pass a later `next` either.
        let serving = self.serving.load(Relaxed);
        self.next.load(Relaxed).wrapping_sub(serving).saturating_sub(1)
    }

    /// A timed waiter's wait (it holds no ticket) for `serving` to move away from `seen`:
    /// the policy's spin phase, then sleep on `serving`. Returns `false` if the deadline
    /// passed.
    #[inline]
    fn wait_serving_change(&self, seen: u32, episode: &mut Episode) -> bool {
        match W::spin(&self.serving, seen, episode) {
            Spun::Changed => true,
            Spun::TimedOut => false,
            Spun::Exhausted => {
                // Pairs with unlock's read-modify-write of `sleepers`. Both are RMWs on one
                // word, so one comes first: if ours, the releaser counts us and wakes; if its,
                // our Acquire reads from its Release, so its store to `serving` happens-before
                // the load below (or the kernel's re-check). A Dekker pattern (SeqCst store and
                // load on two words) would be correct in C11 but is beyond what loom models:
                // loom treats SeqCst accesses as AcqRel, and would report a lost wake-up.
                if !self.count_in_timed() {
                    // As many timed waiters as `sleepers` counts are asleep: look again after
                    // a yield instead.
                    crate::sync::yield_now();
                    episode.restart_spinning();
                    return true;
                }
                let mut in_time = true;
                if self.serving.load(Relaxed) == seen {
                    in_time =
                        W::sleep(&self.serving, seen, episode.deadline()) != crate::sys::futex::FutexWait::TimedOut;
                }
                self.sleepers.fetch_sub(TIMED_SLEEPER, Relaxed);
                episode.restart_spinning();
                in_time
            }
        }
    }

    /// Counts a timed waiter in before it sleeps (Acquire, as the module's protocol needs),
    /// unless [`MAX_TIMED_SLEEPERS`] are counted already: then `false`, and it must not sleep.
    fn count_in_timed(&self) -> bool {
        let mut seen = self.sleepers.load(Relaxed);
        loop {
            if seen & TIMED_SLEEPERS >= max_timed_sleepers() * TIMED_SLEEPER {
                return false;
            }
            match self.sleepers.compare_exchange_weak(seen, seen + TIMED_SLEEPER, Acquire, Relaxed) {
                Ok(_) => return true,
                Err(now) => seen = now,
            }
        }
    }

    #[cold]
    fn wait_for_turn(&self, ticket: u32) {
        let mut episode = Episode::new(None);
        if !W::MAY_SLEEP {
            // The seeds' ticket lock: every waiter spins on `serving`.
            loop {
                let serving = self.serving.load(Acquire);
                if serving == ticket {
                    return;
                }
                W::spin(&self.serving, serving, &mut episode);
            }
        }
        // A waiter that may sleep spins on its waiting-array slot, not on `serving`, which
        // shares a line with the words every acquisition and release write (in a gated lock
        // the word itself): a release bumps the slot of the ticket it serves. Acquire, and the
        // slot read before `serving`: if this reads that bump, the release's store to
        // `serving` is visible below; if not, the bump is still to come and ends the spin.
        let slot = waiting_slot(self, ticket);
        loop {
            let seen = slot.load(Acquire);
            if self.serving.load(Acquire) == ticket {
                return;
            }
            if W::spin(slot, seen, &mut episode) == Spun::Exhausted {
                self.sleep_for_turn(ticket);
                episode.restart_spinning();
            }
        }
    }

    /// Sleeps on the waiting-array slot of `ticket` until a release bumps it (or a waiter of
    /// another ticket sharing the slot makes the futex wait return early).
    fn sleep_for_turn(&self, ticket: u32) {
        let slot = waiting_slot(self, ticket);
        // Pairs with unlock's read-modify-write of `sleepers`, as in `wait_serving_change`:
        // if ours comes first, the release that serves `ticket` sees us counted and wakes our
        // slot, which it bumped before (a gate's release wakes it after the word's release,
        // `take_owed`); if its comes first, our Acquire makes its store to `serving` visible
        // below.
        self.sleepers.fetch_add(TICKETED_SLEEPER, Acquire);
        // Acquire: if this reads the bump of the release that serves us, that release's store
        // to `serving` is visible below. If it reads an older value, the bump is still to
        // come or comes while we sleep, and the futex wait returns or is woken.
        let seen = slot.load(Acquire);
        if self.serving.load(Relaxed) != ticket {
            W::sleep(slot, seen, None);
        }
        self.sleepers.fetch_sub(TICKETED_SLEEPER, Relaxed);
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never, and in FIFO order).
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<GuardSend> {
        if deadline.is_none() {
            return Some(self.lock());
        }
        let mut episode = Episode::new(deadline);
        loop {
            // Wait for `serving` to move from the value the failed attempt saw. Re-reading it
            // after the attempt could read the value of a release in between, with the lock
            // free: the wait would then last until the deadline (unless others used the lock).
            let serving = match self.try_take() {
                Ok(guard) => return Some(guard),
                Err(serving) => serving,
            };
            if !self.wait_serving_change(serving, &mut episode) {
                return None;
            }
        }
    }

    /// Releases the lock as a [`Gated`](super::Gated) lock's gate, whose holder also holds the
    /// gated lock's word: as `unlock`, except that the wake-up of the next ticket's slot is
    /// left owed (`OWED` in `sleepers`) for the word's release to collect
    /// ([`Ticket::take_owed`]). Timed waiters asleep on `serving` are woken at once.
    ///
    /// # Safety
    ///
    /// As `unlock`; and the caller holds the word, whose release calls `take_owed`. Until then
    /// only a word holder may pass this gate on; a timed-out gate holder, which never got the
    /// word, may still release it with `unlock`.
    pub(super) unsafe fn pass_on(&self) {
        if let Some((_, sleepers)) = self.serve_next() {
            // Any count, as in `unlock`: ticketed sleepers can carry into the timed count. With
            // only timed sleepers the release's wake-up finds nobody, a spare system call.
            if sleepers != 0 {
                // Relaxed: only the word's holder sets or clears the bit, and the word orders
                // its holders.
                self.sleepers.fetch_or(OWED, Relaxed);
            }
            if sleepers >= TIMED_SLEEPER {
                W::wake_all(&self.serving);
            }
        }
    }

    /// A release's part that `unlock` and `pass_on` share: serves the next ticket and, with a
    /// policy that may sleep, bumps that ticket's waiting-array slot, which ends the spin of
    /// its holder (see `wait_for_turn`). Returns the slot and the sleeper count, the owed bit
    /// masked off, for the caller's wake-ups; `None` with a spin-only policy.
    #[inline]
    fn serve_next(&self) -> Option<(&'static AtomicU32, u32)> {
        // Only the holder writes `serving`, so a load and a store suffice.
        let next = self.serving.load(Relaxed).wrapping_add(1);
        self.serving.store(next, Release);
        if !W::MAY_SLEEP {
            return None;
        }
        // Release: a waiter whose Acquire load reads this bump sees `serving` above. Every
        // time, not only with sleepers counted: the waiter holding `next` may be spinning on it.
        let slot = waiting_slot(self, next);
        slot.fetch_add(1, Release);
        // An RMW, not a load: it reads the latest count, and Release publishes the store above
        // to a waiter whose increment comes after it (see `sleep_for_turn`). The owed bit is a
        // gate's (`pass_on`): its holder's release collects it.
        let sleepers = self.sleepers.fetch_add(0, Release) & !OWED;
        Some((slot, sleepers))
    }

    /// The waiting-array slot whose wake-up a gate's release left owed ([`Ticket::pass_on`],
    /// which bumped it), with the owed bit cleared; `None` if none is owed. Called by the
    /// holder of the gated lock's word before it releases it; the caller wakes every waiter on
    /// the slot.
    pub(super) fn take_owed(&self) -> Option<&'static AtomicU32> {
        if self.sleepers.load(Relaxed) & OWED == 0 {
            return None;
        }
        self.sleepers.fetch_and(!OWED, Relaxed);
        // If the ticket `pass_on` served is held, its holder waits for the word without a
        // deadline (only `lock` takes a ticket), so it cannot have passed the gate on: this is
        // the ticket owed the wake-up. If nobody held it, a timed waiter may have taken the
        // gate since (`try_take`) and, timing out, released it with `unlock`, which woke the
        // next ticket's slot itself: the wake-up below is then a spare one.
        Some(waiting_slot(self, self.serving.load(Relaxed)))
    }

    /// One attempt to take the lock if it is free; on failure returns the `serving` seen.
    #[inline]
    fn try_take(&self) -> Result<GuardSend, u32> {
        let serving = self.serving.load(Acquire);
        match self.next.compare_exchange(serving, serving.wrapping_add(1), Acquire, Relaxed) {
            Ok(_) => Ok(GuardSend::new()),
            Err(_) => Err(serving),
        }
    }
}

/// One waiter with a ticket, asleep (or about to sleep) on its waiting-array slot.
const TICKETED_SLEEPER: u32 = 1;
/// One timed waiter, asleep (or about to sleep) on `serving`.
const TIMED_SLEEPER: u32 = 1 << 16;
/// The bits that count timed waiters (and any carry from the ticketed count).
const TIMED_SLEEPERS: u32 = OWED - TIMED_SLEEPER;
/// At most this many timed waiters are counted asleep at once; more look again after a yield.
/// Ticketed sleepers are one per thread, so at most 2^22 (Linux's `PID_MAX_LIMIT`), and their
/// carry adds at most 64 to this count: the count never reaches `OWED`.
const MAX_TIMED_SLEEPERS: u32 = 1 << 14;
/// A gate's release ([`Ticket::pass_on`]) left the wake-up of the next ticket's slot owed.
const OWED: u32 = 1 << 31;

/// The cap on timed sleepers in force: [`MAX_TIMED_SLEEPERS`], or under loom what
/// `testing::ticket_timed_sleepers_at_most` set.
#[inline]
fn max_timed_sleepers() -> u32 {
    #[cfg(not(loom))]
    return MAX_TIMED_SLEEPERS;
    #[cfg(loom)]
    return crate::testing::ticket_timed_sleepers_cap().unwrap_or(MAX_TIMED_SLEEPERS);
}

/// log2 of the waiting array's length.
#[cfg(not(loom))]
const SLOT_BITS: u32 = 10;
/// Under loom, two slots: enough for tickets of one lock to share a slot, so the models also
/// check wake-ups meant for another waiter.
#[cfg(loom)]
const SLOT_BITS: u32 = 1;

/// The waiting array: futex words that sleeping ticket waiters of every ticket lock share.
/// Each is a sequence number that a release bumps when it serves a ticket hashed to it.
#[cfg(not(loom))]
static WAITING_ARRAY: [AtomicU32; 1 << SLOT_BITS] = [const { AtomicU32::new(0) }; 1 << SLOT_BITS];

#[cfg(loom)]
loom::lazy_static! {
    static ref WAITING_ARRAY: [AtomicU32; 1 << SLOT_BITS] = [AtomicU32::new(0), AtomicU32::new(0)];
}

/// The slot where the holder of `ticket` for `lock` sleeps: a Fibonacci hash of the lock's
/// address and the ticket, so that consecutive tickets of one lock fall on different slots.
fn waiting_slot<T>(lock: &T, ticket: u32) -> &'static AtomicU32 {
    #[cfg(not(loom))]
    let address = (lock as *const T as usize >> 3) as u32;
    // Loom replays each execution and needs the same slots every time; addresses differ.
    #[cfg(loom)]
    let address = {
        let _ = lock;
        0u32
    };
    let hash = address.wrapping_mul(0x9E37_79B9).wrapping_add(ticket).wrapping_mul(0x9E37_79B9);
    &WAITING_ARRAY[(hash >> (32 - SLOT_BITS)) as usize]
}

impl<W: Wait> Default for Ticket<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: each ticket is handed out once (fetch_add), and only the holder of ticket `n`
// advances `serving` to `n + 1`; the Acquire load that sees its own ticket pairs with the
// previous holder's Release store.
unsafe impl<W: Wait> RawMutex for Ticket<W> {
    crate::sync::raw_init!();
    type Guard = GuardSend;

    #[inline]
    fn lock(&self) -> GuardSend {
        let ticket = self.next.fetch_add(1, Relaxed);
        if self.serving.load(Acquire) != ticket {
            self.wait_for_turn(ticket);
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<GuardSend> {
        self.try_take().ok()
    }

    #[inline]
    unsafe fn unlock(&self, _: GuardSend) {
        if let Some((slot, sleepers)) = self.serve_next() {
            // Any count at all, not only the ticketed bits: 65536 sleepers with a ticket
            // would carry into the timed count and leave the ticketed bits zero, and the
            // wake-up they wait for must not be skipped then.
            if sleepers != 0 {
                // Every waiter on the slot: the one holding the next ticket cannot be told
                // apart from those whose tickets share it.
                W::wake_all(slot);
            }
            if sleepers >= TIMED_SLEEPER {
                W::wake_all(&self.serving);
            }
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.next.load(Relaxed) != self.serving.load(Relaxed)
    }
}

// SAFETY: unlock already hands over in ticket order.
unsafe impl<W: Wait> RawMutexFair for Ticket<W> {
    #[inline]
    unsafe fn unlock_fair(&self, guard: GuardSend) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlock(guard) }
    }
}

super::timed_via_lock_until!(Ticket);
