//! The bounded-bypass lock, the word of spinlab's default: barging, with the bypass bounded in
//! time, after parking_lot's eventual fairness, the Linux mutex's hand-off bit and Go's mutex.
//!
//! | bits   | name       | meaning                                                               |
//! |--------|------------|-----------------------------------------------------------------------|
//! | 0      | `LOCKED`   | held                                                                  |
//! | 1      | `HANDOFF`  | a starving waiter has claimed the next release: only it sets `LOCKED` |
//! | 2      | `WAKING`   | a release woke a sleeper that has not counted itself out yet          |
//! | 3      | `SPINNING` | one waiter spins; the others sleep at once (policies that may sleep)  |
//! | 4..8   | absences   | [`Gated`](super::Gated) only: releases in a row that found no head waiting, mod 16 |
//! | 8      | `LAPPED`   | gated locks only: the absences have wrapped since a head last waited  |
//! | 9..12  | spell      | gated locks only: which run of absences this is, mod 8                |
//! | 12     | `QUEUED`   | gated locks only: a waiter took the gate, and no release has found it free since |
//! | 13..32 | sleepers   | waiters counted in before they sleep, counted out after they wake     |
//!
//! **Fast path**: lock is one CAS from 0; unlock is one CAS from `LOCKED` to 0. Only the
//! CAS that sets `LOCKED` (Acquire) and the atomic that clears it (Release) order critical
//! sections; every other transition publishes nothing and is Relaxed, since a futex wait
//! compares the word in the kernel and every waiter re-reads it after a change.
//!
//! **Waiting.** Running threads barge. A waiter that has waited [`STARVATION_NS`] and finds the
//! lock taken sets `HANDOFF`, and then waits running (pause, then yield), so a release never
//! waits for a wake-up. Over a policy that may sleep one waiter spins (`SPINNING`), and none
//! behind a counted sleeper (parking_lot's rule), unless the policy gives its CPU away after a
//! few looks ([`Wait::CROWD_SPINS`]): then every waiter spins. The rest count themselves in by
//! a CAS that also checks the lock is held or claimed, sleep, and count out when woken.
//!
//! **Wake-ups.** A release that finds sleepers and neither `HANDOFF` nor `WAKING` sets `WAKING`
//! in its CAS and wakes one: one sleeper at a time is on its way back. After that CAS another
//! thread may take, release and free the lock (POSIX allows it; glibc's bug 13690), so only the
//! futex wake-up names the word, and the releaser never learns whether it woke anybody. Hence
//! two rules: every sleeper clears `WAKING` as it counts out, whatever ended its wait, and takes
//! over the wake-ups skipped meanwhile; no waiter counts in while `WAKING` is set (`count_out`
//! shows the wake-up that would be lost). No wake-up is lost: a sleeper sleeps only on a held or
//! claimed word, whose release is still to come and finds it counted.
//!
//! **Fairness**: a bypass bound in time. A running waiter that has waited [`STARVATION_NS`]
//! gets the lock after at most the holder and one other claimant; sleepers are woken one per
//! release in the kernel's FIFO order and claim once starving. Time spent preempted adds to it.

use crate::sync::{AtomicU32, Ordering::*};
use crate::sys::futex::FutexWait;
use crate::wait::{Episode, Spun, Step, Wait};
use core::marker::PhantomData;
use lock_api::{GuardSend, RawMutex};
use std::time::Instant;

const LOCKED: u32 = 1;
const HANDOFF: u32 = 2;
const WAKING: u32 = 4;
const SPINNING: u32 = 8;
// Absences, `LAPPED` and the spell are written only by a gated lock's release, in its own CAS
// (`unlock_counting_absences`); every other transition carries them along unread.
const ONE_ABSENCE: u32 = 16;
#[cfg(not(loom))]
const ABSENCES: u32 = 15 * ONE_ABSENCE;
// Under loom a lap is 2 absences, so that the models, which release a few times each, reach
// laps and new spells too.
#[cfg(loom)]
const ABSENCES: u32 = ONE_ABSENCE;
const LAPPED: u32 = 256;
const ONE_SPELL: u32 = 512;
const SPELLS: u32 = 7 * ONE_SPELL;
// Set by a gated lock's waiter as it takes the gate; kept or cleared by the releases.
const QUEUED: u32 = 4096;
const ONE_SLEEPER: u32 = 8192;

/// How long a waiter waits before it claims the next release, in nanoseconds: parking_lot's
/// fair hand-over comes about every 0.5 ms. A claim here costs no wake-up (the claimant is
/// running), only the releaser's lost chance to barge.
pub const STARVATION_NS: u64 = 500_000;

/// How long a thread that finds a gated lock held, with waiters queued at its gate, looks at
/// the word before it queues ([`Bounded::look_before_queueing`]), in nanoseconds: a short
/// critical section and a few line transfers, far less than the sleep and wake-up that
/// queueing costs (docs/design.md, "The gate").
pub(crate) const LOOK_NS: u32 = 1000;

/// Spin iterations of a claimant before it yields the CPU between re-reads.
const CLAIMANT_SPINS: u32 = 64;
/// How long a waiter that finds a wake-up in flight (`WAKING`) sleeps before it looks again:
/// about a futex wake-up's latency, so the woken sleeper is usually back by then
/// (docs/design.md, "The bounded-bypass word").
const WAKING_NAP_NS: u64 = 50_000;
/// Steps of the spin budget between two looks of a waiter that found a wake-up in flight
/// (`WAKING`), before the budget is spent and it naps instead.
const WAKING_PAUSES: u32 = 64;

/// Bounded-bypass lock waiting with policy `W` (the module docs give the design). One 32-bit
/// word; no system call when uncontended.
///
/// ```
/// use spinlab::{lock::Bounded, wait::SpinYieldPark};
/// let m = lock_api::Mutex::<Bounded<SpinYieldPark>, _>::new(1);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 2);
/// ```
pub struct Bounded<W: Wait> {
    state: AtomicU32,
    policy: PhantomData<fn() -> W>,
}

impl<W: Wait> Bounded<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Bounded { state: AtomicU32::new(0), policy: PhantomData }
        }
    }

    /// Whether a starving waiter has claimed the next release (a snapshot). While it has, no
    /// other thread can take the lock, even the releaser.
    ///
    /// ```
    /// use spinlab::{lock::Bounded, wait::Futex};
    /// assert!(!Bounded::<Futex>::new().is_claimed());
    /// ```
    #[inline]
    pub fn is_claimed(&self) -> bool {
        self.state.load(Relaxed) & HANDOFF != 0
    }

    /// Whether a gated release has counted 16 absences in a row or more since a head last
    /// waited (a snapshot, for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn has_lapped(&self) -> bool {
        self.state.load(Relaxed) & LAPPED != 0
    }

    /// Whether the word is free with nothing else in it: no mark, sleeper, spinner or count
    /// (a snapshot, for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_free_and_alone(&self) -> bool {
        self.state.load(Relaxed) & !(SPELLS) == 0
    }

    /// Whether a waiter spins on the word, and how many are counted to sleep on it (a
    /// snapshot, for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn waiting(&self) -> (bool, u32) {
        let state = self.state.load(Relaxed);
        (state & SPINNING != 0, sleepers(state))
    }

    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<GuardSend> {
        let acquired = self.fast_lock() || self.lock_contended(deadline);
        acquired.then(GuardSend::new)
    }

    /// Takes the lock if the word is 0: one CAS. A free word with more in it (sleepers
    /// counted, a mark) is taken by the contended path's first look.
    #[inline(always)]
    pub(super) fn fast_lock(&self) -> bool {
        // Acquire: the previous holder's critical section happens-before ours.
        self.state.compare_exchange(0, LOCKED, Acquire, Relaxed).is_ok()
    }

    #[cold]
    pub(super) fn lock_contended(&self, deadline: Option<Instant>) -> bool {
        self.wait_for(deadline, Mode::Sleep) == Outcome::Acquired
    }

    /// The queue's first step ([`Gated`](super::Gated)): becomes the one spinner and spins
    /// for the policy's budget, as qspinlock's pending waiter does, so that a lone waiter
    /// takes a contended lock without touching the queue. Gives up at once, with
    /// [`Outcome::Queue`], if another waiter is spinning or (unless the policy keeps a crowd
    /// running) a sleeper is counted, and when the budget is spent. Over a policy that never
    /// sleeps it queues at once: such a policy's spin phase never ends (`yield`'s), so its
    /// waiter would stay on the word to the end, beside every other newcomer that found nobody
    /// queued, and the queue would never order anybody. The caller has just found the lock
    /// taken, so this looks before it tries again: a second compare-and-swap at once would
    /// only take the line from the holder.
    #[inline]
    pub(crate) fn spin_then_queue(&self, deadline: Option<Instant>) -> Outcome {
        if !W::MAY_SLEEP {
            return Outcome::Queue;
        }
        self.wait_for(deadline, Mode::SpinThenQueue)
    }

    #[cold]
    fn wait_for(&self, deadline: Option<Instant>, mode: Mode) -> Outcome {
        let mut episode = Episode::new(deadline);
        let mut starvation = Starvation::new();
        // SPINNING if this thread is the one waiter allowed to spin (policies that may sleep).
        let mut spinner = 0;
        let mut lost_race = false;
        // A crowd may spin only where a waiter sleeps (Mode::Sleep); a queue's gate keeps one
        // spinner, since its queue already holds the others.
        let crowd = mode == Mode::Sleep && W::CROWD_SPINS;
        loop {
            let seen = self.state.load(Relaxed);
            if seen & (LOCKED | HANDOFF) == 0 {
                if self.state.compare_exchange(seen, (seen | LOCKED) & !spinner, Acquire, Relaxed).is_ok() {
                    return Outcome::Acquired;
                }
                continue;
            }
            if seen & HANDOFF == 0 && starvation.starving() {
                // Relaxed: the claim orders nothing; taking the lock later is an Acquire.
                if self.state.compare_exchange(seen, (seen | HANDOFF) & !spinner, Relaxed, Relaxed).is_ok() {
                    return if self.claim(&mut episode) { Outcome::Acquired } else { Outcome::TimedOut };
                }
                continue;
            }
            // A waiter may become the one spinner only while nobody spins and, unless its
            // policy keeps waiters running (`CROWD_SPINS`, the default's), nobody sleeps
            // (parking_lot's rule): behind a sleeper the lock is taken and released faster
            // than a wake-up, and a spinner would only pull the line from its holder.
            let may_spin = seen & SPINNING == 0 && (W::CROWD_SPINS || sleepers(seen) == 0);
            if mode == Mode::SpinThenQueue && spinner == 0 && !may_spin {
                // Another waiter is spinning or asleep: wait in the queue.
                return Outcome::Queue;
            }
            if W::MAY_SLEEP && !crowd && spinner == 0 && may_spin {
                // Become the spinner; if the word moved meanwhile, look at it again.
                if self.state.compare_exchange(seen, seen | SPINNING, Relaxed, Relaxed).is_ok() {
                    spinner = SPINNING;
                }
                continue;
            }
            if !W::MAY_SLEEP || spinner != 0 || crowd {
                // A lost race (the word changed, and the lock is held again) costs one step of
                // the spin budget: a holder that re-takes the lock at once changes the word
                // every few nanoseconds, and would otherwise keep its waiters spinning for ever.
                let spun = match lost_race.then(|| W::step(&self.state, seen, &mut episode)) {
                    Some(Step::Exhausted) => Spun::Exhausted,
                    Some(Step::TimedOut) => Spun::TimedOut,
                    Some(Step::Continue) | None => W::spin(&self.state, seen, &mut episode),
                };
                lost_race = spun == Spun::Changed;
                match spun {
                    Spun::Changed => continue,
                    Spun::TimedOut => {
                        self.state.fetch_and(!spinner, Relaxed);
                        return Outcome::TimedOut;
                    }
                    // Only policies that may sleep end their spin phase.
                    Spun::Exhausted if mode == Mode::SpinThenQueue => {
                        self.state.fetch_and(!spinner, Relaxed);
                        return Outcome::Queue;
                    }
                    Spun::Exhausted => {}
                }
            }
            if seen & WAKING != 0 {
                // A wake-up is on its way and no sleeper has come back to end it. Counting in
                // now could lose a wake-up (`count_out` shows how), so wait until one does.
                // A crowd's waiter stays running, as its policy does (it yields); any other
                // spends its policy's spin budget looking seldom, then naps (`await_waker`).
                if crowd {
                    crate::sync::yield_now();
                } else if self.await_waker(seen, &mut episode) == Step::TimedOut {
                    self.state.fetch_and(!spinner, Relaxed);
                    return Outcome::TimedOut;
                }
                continue;
            }
            // Count ourselves in (and stop being the spinner), but only while the lock is
            // still held: a sleeper must never sleep on a free lock, since only a release
            // wakes it.
            let marked = (seen + ONE_SLEEPER) & !spinner;
            if self.state.compare_exchange(seen, marked, Relaxed, Relaxed).is_err() {
                continue;
            }
            spinner = 0;
            starvation.start_clock();
            let slept = W::sleep(&self.state, marked, deadline);
            self.count_out();
            if slept == FutexWait::TimedOut {
                return Outcome::TimedOut;
            }
            episode.restart_spinning();
        }
    }

    /// Lets time pass before a waiter that found a wake-up in flight (`WAKING`) looks at the
    /// word again: [`WAKING_PAUSES`] steps of its policy's spin budget without a look between
    /// them, or, once the budget is spent, a nap of about a wake-up's time. Returns
    /// [`Step::TimedOut`] if the deadline has passed. The pauses spare the holder, which
    /// takes the lock again every few nanoseconds: each look pulls the line from it. The
    /// steps keep the CPU ([`Wait::step_running`]): with more threads than CPUs the woken
    /// sleeper waits for a CPU behind every waiter that yields, and the wake-up stays in
    /// flight.
    fn await_waker(&self, seen: u32, episode: &mut Episode) -> Step {
        for _ in 0..WAKING_PAUSES {
            match W::step_running(&self.state, seen, episode) {
                Step::Continue => {}
                Step::Exhausted => {
                    crate::sync::nap(WAKING_NAP_NS);
                    return Step::Exhausted;
                }
                Step::TimedOut => return Step::TimedOut,
            }
        }
        Step::Continue
    }

    /// Waits, running, for the release that `HANDOFF` reserved for us. Returns `false` if the
    /// deadline passed first and the claim was withdrawn.
    #[cold]
    fn claim(&self, episode: &mut Episode) -> bool {
        let mut spins = 0u32;
        loop {
            let seen = self.state.load(Relaxed);
            if seen & LOCKED == 0 {
                // Only the claimant sets LOCKED while HANDOFF is set, so this fails only when
                // the sleeper count changes under us.
                if self.state.compare_exchange(seen, (seen & !HANDOFF) | LOCKED, Acquire, Relaxed).is_ok() {
                    return true;
                }
                continue;
            }
            if episode.deadline().is_some_and(|d| deadline_passed(d, spins)) {
                // Give the claim back while the lock is still held, so its release wakes a
                // sleeper as usual; if the holder released meanwhile, the lock is ours.
                if self.state.compare_exchange(seen, seen & !HANDOFF, Relaxed, Relaxed).is_ok() {
                    return false;
                }
                continue;
            }
            spins = spins.saturating_add(1);
            if spins < CLAIMANT_SPINS {
                crate::sync::cpu_relax();
            } else {
                crate::sync::yield_now();
            }
            crate::sync::spin_iteration_done();
        }
    }

    /// Counts a sleeper out after its futex wait returned, and ends the wake-up in flight
    /// (`WAKING`), whether or not it was aimed at this thread: a releaser may not touch the
    /// word again, so it never learns whether its wake-up found anybody. A sleeper that goes
    /// on waiting takes over the wake-ups skipped meanwhile: it finds the lock free (and takes
    /// it: its release wakes the next sleeper), held (its holder's release wakes one) or
    /// claimed (the claimant's does). One that leaves, timed out, owes nothing: the kernel
    /// reports a wake-up that raced the time-out as a wake-up, and the futex wrapper does not
    /// enter the kernel once the deadline has passed, so it took no wake-up. The price: a
    /// sleeper back on a changed word ends a wake-up aimed at another, so a release may wake a
    /// second sleeper while the first is on its way, a small herd.
    ///
    /// Why no waiter counts in while `WAKING` is set: the word could return to a sleeper's
    /// value. A waiter counts in on a held word with `WAKING` set and is preempted; the woken
    /// sleeper comes back and clears `WAKING`; a release sets it again and its wake-up finds
    /// nobody in the kernel; the lock is taken and another waiter counts in. The first then
    /// sleeps on a word equal to the one it counted in on, and nobody is left to end `WAKING`,
    /// so no release wakes anyone again (`no_waiter_sleeps_through_a_wake_up_that_found_nobody`
    /// plays this out). With the rule, each counted sleeper not yet asleep counted in on a word
    /// without `WAKING`, and the word keeps `WAKING` until one of them counts out, so a
    /// wake-up that found nobody leaves their futex waits to return at once.
    #[inline]
    fn count_out(&self) {
        let mut seen = self.state.load(Relaxed);
        loop {
            match self.state.compare_exchange_weak(seen, (seen - ONE_SLEEPER) & !WAKING, Relaxed, Relaxed) {
                Ok(_) => return,
                Err(now) => seen = now,
            }
        }
    }

    /// A thread that found the word held while waiters are queued at a gated lock's gate
    /// looks at the word for about [`LOOK_NS`] before it queues behind them, and takes the
    /// lock if it comes free (`Gated`'s docs say why). It stops at the first release it sees
    /// another thread win, the word changed but held again: the lock is then being taken back
    /// as soon as it is released, and each further look would only pull the line from its
    /// holder. Returns whether the lock is ours. Takes no bit of the word, so a release still
    /// counts the queue's head absent while such a thread looks.
    #[inline]
    pub(crate) fn look_before_queueing(&self) -> bool {
        let first = self.state.load(Relaxed);
        self.look_from(first, crate::wait::SpinPark::<LOOK_NS>::budget_iterations())
    }

    /// [`Bounded::look_before_queueing`] from the word as first seen, `first`, for at most
    /// `looks` looks.
    fn look_from(&self, first: u32, looks: u32) -> bool {
        for _ in 0..looks {
            match self.take_if_free(self.state.load(Relaxed)) {
                Ok(()) => return true,
                Err(held) if held != first => return false,
                Err(_) => crate::sync::cpu_relax(),
            }
        }
        false
    }

    /// Takes the word if it is free, starting from `seen`, the word as last read; returns the
    /// word as seen held (or claimed) otherwise. Loops only while the lock is free and the
    /// sleeper count changes under us: a free lock is never refused.
    #[inline]
    fn take_if_free(&self, mut seen: u32) -> Result<(), u32> {
        while seen & (LOCKED | HANDOFF) == 0 {
            // Acquire: the lock is ours if this succeeds.
            match self.state.compare_exchange_weak(seen, seen | LOCKED, Acquire, Relaxed) {
                Ok(_) => return Ok(()),
                Err(now) => seen = now,
            }
        }
        Err(seen)
    }

    /// Marks the word as having a gate with waiters (`QUEUED`), so that releases take the
    /// path that asks whether the gate is still held ([`Bounded::release_gated`]). Publishes
    /// nothing (Relaxed).
    #[inline]
    pub(crate) fn mark_queued(&self) {
        self.state.fetch_or(QUEUED, Relaxed);
    }

    /// Frees the word by its own compare-and-swap if it holds `LOCKED` alone; returns whether
    /// it did. A gated lock's release tries this first: a word with nothing else in it has no
    /// gate marked, no sleeper to wake, and no head to count absent.
    #[inline(always)]
    pub(crate) fn release_if_alone(&self) -> bool {
        self.release_alone().is_ok()
    }

    /// Releases the word of a gated lock ([`Gated`](super::Gated)) that holds more than
    /// `LOCKED`. Where the word is marked `QUEUED`, `queued` says whether the gate is still
    /// held (read before each compare-and-swap, while the lock is still ours): if it is, the
    /// mark stays, and the release counts as an absence of the queue's head unless the head
    /// waits here (spinning, claiming, or asleep for this release to wake); if not, the mark
    /// goes. Returns the lap this release completed, if any: each 16th absence in a row.
    ///
    /// A head that takes the gate while a release finds it free may see its mark cleared by
    /// that release: its absences are then not counted until a release sees it waiting on the
    /// word. The mark a head makes once it holds the word stays until its own release.
    ///
    /// # Safety
    ///
    /// The caller holds the lock.
    #[cold]
    pub(crate) unsafe fn release_gated(&self, queued: impl Fn() -> bool) -> Lap {
        self.release(self.state.load(Relaxed), queued)
    }

    /// Frees a word that holds `LOCKED` and nothing else, by one compare-and-swap from
    /// `LOCKED` to 0; returns the word as seen, untouched, when it holds more.
    #[inline(always)]
    fn release_alone(&self) -> Result<(), u32> {
        // Release: our critical section happens-before the next holder's Acquire.
        self.state.compare_exchange(LOCKED, 0, Release, Relaxed).map(drop)
    }

    /// Clears `LOCKED`, and sets `WAKING` if we are to wake a sleeper: with a claim pending
    /// the claimant is running and takes the lock itself (its own release wakes a sleeper),
    /// and while a sleeper is on its way back, it takes over (see `count_out`). Where the word
    /// is marked `QUEUED` and `queued()` says the gate is still held, keeps the mark and counts
    /// the release as an absence if no head waits; otherwise clears the mark and the count.
    /// `seen` is the word as the caller last saw it, the CAS's first guess.
    #[cold]
    fn release(&self, mut seen: u32, queued: impl Fn() -> bool) -> Lap {
        let (wake, lap) = loop {
            let queued = seen & QUEUED != 0 && queued();
            let wake = owes_wake_up(seen);
            let head_waits = seen & (SPINNING | HANDOFF) != 0 || wake;
            let spell = seen & SPELLS;
            let (absences, lap) = match seen & ABSENCES {
                _ if !queued || head_waits => (spell, Lap::None),
                ABSENCES if seen & LAPPED == 0 => {
                    let spell = (spell + ONE_SPELL) & SPELLS;
                    (LAPPED | spell, Lap::First(spell / ONE_SPELL))
                }
                ABSENCES => (LAPPED | spell, Lap::Again(spell / ONE_SPELL)),
                counted => ((seen & (LAPPED | SPELLS)) | (counted + ONE_ABSENCE), Lap::None),
            };
            let kept = seen & !(LOCKED | ABSENCES | LAPPED | SPELLS | QUEUED);
            let next = kept | absences | if queued { QUEUED } else { 0 } | if wake { WAKING } else { 0 };
            // Release: our critical section happens-before the next holder's Acquire.
            match self.state.compare_exchange_weak(seen, next, Release, Relaxed) {
                Ok(_) => break (wake, lap),
                Err(now) => seen = now,
            }
        };
        // The lock may be gone by now (taken, released and destroyed by another thread):
        // only the futex wake-up may name its address.
        if wake {
            W::wake_one(&self.state);
        }
        lap
    }
}

/// Which lap of 16 absences in a row a gated release completed
/// ([`Bounded::unlock_counting_absences`]). A spell is one run of absences, from the head's
/// last wait to its next; spells are numbered modulo 8, so that a thread can tell a spell it
/// timed from a later one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lap {
    /// No lap completed.
    None,
    /// The spell's first lap: the spell numbered so begins.
    First(u32),
    /// A later lap of the numbered spell.
    Again(u32),
}

/// How a contended acquisition waits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Spin, sleep, claim: until the lock is ours or the deadline passes.
    Sleep,
    /// Spin as the one spinner, then leave for the queue.
    SpinThenQueue,
}

/// How a contended acquisition ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The lock is ours.
    Acquired,
    /// The deadline passed first.
    TimedOut,
    /// Spinning did not get the lock (`Mode::SpinThenQueue` only): wait in the queue.
    Queue,
}

/// Whether a release from `state` wakes a sleeper: one is counted, and neither a claimant
/// (whose own release wakes one) nor a sleeper already woken (which takes the duty over) is
/// on its way.
#[inline]
fn owes_wake_up(state: u32) -> bool {
    state & (HANDOFF | WAKING) == 0 && sleepers(state) != 0
}

/// Sleepers counted in `state`.
#[inline]
fn sleepers(state: u32) -> u32 {
    state / ONE_SLEEPER
}

/// Whether a waiter has waited past [`STARVATION_NS`]. Reading the clock costs about as much
/// as a hand-over between running threads, so a waiter starts timing its wait only when it
/// is about to sleep, or once it has seen the lock change hands [`LOOKS_BEFORE_CLOCK`] times:
/// a brief wait never reads the clock, and the bound counts from that first reading.
struct Starvation {
    looks: u32,
    #[cfg(not(loom))]
    since: Option<Instant>,
}

/// Looks at a held lock before a waiter that has not slept starts timing its wait.
#[cfg(not(loom))]
const LOOKS_BEFORE_CLOCK: u32 = 8;

impl Starvation {
    fn new() -> Self {
        Starvation {
            looks: 0,
            #[cfg(not(loom))]
            since: None,
        }
    }

    /// Starts timing the wait if it is not timed yet: called before a waiter sleeps, which
    /// costs far more than reading the clock.
    fn start_clock(&mut self) {
        #[cfg(not(loom))]
        self.since.get_or_insert_with(Instant::now);
    }

    /// Called each time the waiter finds the lock held (after a change, or a wake-up).
    fn starving(&mut self) -> bool {
        self.looks = self.looks.saturating_add(1);
        #[cfg(not(loom))]
        {
            #[cfg(test)]
            if tests::NEVER_STARVES.with(|never| never.get()) {
                return false;
            }
            if self.since.is_none() && self.looks < LOOKS_BEFORE_CLOCK {
                return false;
            }
            let now = Instant::now();
            let since = *self.since.get_or_insert(now);
            now.duration_since(since).as_nanos() as u64 >= STARVATION_NS
        }
        // Loom has no clock: a waiter starves at its second look at a held lock, so the
        // models explore claims racing releases, sleepers and time-outs; a model that sets
        // `loom_starve_at_look(u32::MAX)` explores the waits in which nobody claims.
        #[cfg(loom)]
        {
            self.looks >= STARVE_AT_LOOK.with(|look| look.get())
        }
    }
}

// At which look at a held lock a waiter starves under loom (see `loom_starve_at_look`). A
// thread-local of the test's own thread: loom runs a model's threads as coroutines on it, and
// tests running beside it keep their own setting.
#[cfg(loom)]
std::thread_local! {
    static STARVE_AT_LOOK: core::cell::Cell<u32> = const { core::cell::Cell::new(2) };
}

/// Under loom, makes every bounded-bypass waiter starve (and claim) at its `look`-th look at
/// a held lock (`u32::MAX`: never) until the returned guard is dropped. The default, 2, makes
/// claims race everything else; since a real waiter starves only after 0.5 ms, the waits
/// without a claim need models of their own. Not a model's state: set it on the test's thread
/// before the model runs; the guard puts the previous setting back, so a test harness that
/// runs tests one after another on one thread does not carry it into the next test.
#[cfg(loom)]
#[doc(hidden)]
pub fn loom_starve_at_look(look: u32) -> crate::sys::futex::LoomSetting<u32> {
    crate::sys::futex::LoomSetting::new(STARVE_AT_LOOK.with(|at| at.replace(look)), |previous| {
        STARVE_AT_LOOK.with(|at| at.replace(previous))
    })
}

/// Whether a claimant's deadline has passed. Under loom (no clock) it passes after a few
/// spins, as every deadline in the models does.
#[inline]
fn deadline_passed(deadline: Instant, spins: u32) -> bool {
    #[cfg(not(loom))]
    {
        let _ = spins;
        Instant::now() >= deadline
    }
    #[cfg(loom)]
    {
        let _ = deadline;
        spins >= 3
    }
}

impl<W: Wait> Default for Bounded<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: LOCKED is set only by a CAS from a value without it (Acquire), and cleared only by
// the holder's release (Release). While HANDOFF is set only the thread that set it may set
// LOCKED, and HANDOFF is cleared only by that thread.
unsafe impl<W: Wait> RawMutex for Bounded<W> {
    crate::sync::raw_init!();
    type Guard = GuardSend;

    #[inline]
    fn lock(&self) -> GuardSend {
        if !self.fast_lock() {
            self.lock_contended(None);
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock(&self) -> Option<GuardSend> {
        self.take_if_free(self.state.load(Relaxed)).ok().map(|()| GuardSend::new())
    }

    #[inline]
    unsafe fn unlock(&self, _: GuardSend) {
        if let Err(seen) = self.release_alone() {
            // No gate: nothing marks the word `QUEUED`.
            self.release(seen, || false);
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        // A lock reserved for a claimant is not free for anyone else.
        self.state.load(Relaxed) & (LOCKED | HANDOFF) != 0
    }
}

super::timed_via_lock_until!(Bounded);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::wait::{Futex, PauseYieldPark, SpinYieldPark};
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
    use std::time::Duration;

    /// Returns once a waiter has counted itself in to sleep on `lock`.
    fn wait_for_a_sleeper<W: Wait>(lock: &Bounded<W>) {
        while sleepers(lock.state.load(SeqCst)) == 0 {
            std::thread::yield_now();
        }
    }

    /// The bypass bound: once a waiter that has waited past the bound claims, the releaser
    /// cannot take the lock back, however fast it tries, and the claimant gets it next.
    fn starving_waiter_gets_the_next_release<W: Wait>() {
        let lock = Bounded::<W>::new();
        let waiter_done = AtomicBool::new(false);
        lock.lock();
        std::thread::scope(|s| {
            s.spawn(|| {
                lock.lock();
                waiter_done.store(true, SeqCst);
                // SAFETY: locked just above.
                unsafe { lock.unlock(GuardSend::new()) };
            });
            // Hold until the waiter sleeps, then well past the bound, so it starves.
            wait_for_a_sleeper(&lock);
            std::thread::sleep(Duration::from_nanos(4 * STARVATION_NS));
            // Wake it while we still hold the lock (a spurious wake-up, which waiters must
            // accept): it finds the lock held after waiting past the bound, and claims.
            let give_up = Instant::now() + Duration::from_secs(10);
            while !lock.is_claimed() {
                assert!(Instant::now() < give_up, "{}: a woken, starving waiter never claimed", W::NAME);
                crate::sys::futex::wake_one(&lock.state);
                std::thread::yield_now();
            }
            assert!(!waiter_done.load(SeqCst), "the waiter cannot take a held lock");
            // SAFETY: this thread holds the lock.
            unsafe { lock.unlock(GuardSend::new()) };
            // Either the claimant has the lock, or it has had it: a releaser preempted here can
            // find it free again once the claimant is done, and only then.
            if lock.try_lock().is_some() {
                assert!(waiter_done.load(SeqCst), "{}: a claimed release was taken back by the releaser", W::NAME);
                // SAFETY: taken just above.
                unsafe { lock.unlock(GuardSend::new()) };
            }
        });
        assert!(waiter_done.load(SeqCst));
        assert!(!lock.is_locked() && !lock.is_claimed());
        assert!(lock.try_lock().is_some(), "the lock works after the hand-off");
    }

    /// With more threads than CPUs the running holder takes the lock again and again while
    /// the others sleep counted: its CAS from 0 fails, and the contended path's first look
    /// takes the free word, keeping the count. The inline CAS leaves any other word alone.
    #[test]
    fn a_free_lock_with_sleepers_counted_is_taken_at_the_first_look() {
        let lock = Bounded::<Futex>::new();
        lock.state.store(2 * ONE_SLEEPER, SeqCst);
        assert!(!lock.fast_lock(), "the inline CAS takes only a word of 0");
        lock.lock();
        assert_eq!(lock.state.load(SeqCst), (2 * ONE_SLEEPER) | LOCKED);
        assert!(!lock.fast_lock(), "a held lock is not taken");
        assert_eq!(lock.state.load(SeqCst), (2 * ONE_SLEEPER) | LOCKED);
        lock.state.store(ONE_SLEEPER | HANDOFF, SeqCst);
        assert!(!lock.fast_lock(), "a claimed lock is the claimant's");
        assert_eq!(lock.state.load(SeqCst), ONE_SLEEPER | HANDOFF);
    }

    /// A waiter that finds a wake-up in flight looks at the word once per [`WAKING_PAUSES`]
    /// steps of its spin budget, naps once the budget is spent, and gives up at its deadline.
    /// `spin-yield-park`, whose spin phase yields, spends the same budget as `spin-park`
    /// (pausing where it would yield), and `futex`, which has none, naps at once.
    #[test]
    fn a_waiter_behind_a_wake_up_in_flight_pauses_between_looks_then_naps() {
        use crate::wait::SpinPark;
        fn pauses_then_naps<W: Wait>() {
            let seen = LOCKED | WAKING | ONE_SLEEPER;
            let lock = Bounded::<W>::new();
            let mut episode = Episode::new(None);
            let mut looks = 0;
            while lock.await_waker(seen, &mut episode) == Step::Continue {
                looks += 1;
                assert_eq!(episode.iterations(), looks * WAKING_PAUSES, "{}", W::NAME);
            }
            let budget = SpinPark::<4000>::budget_iterations();
            assert_eq!(looks, budget / WAKING_PAUSES, "{}: the looks that found budget left", W::NAME);
            assert_eq!(episode.iterations(), budget + 1, "{}: the budget, and the step that found it spent", W::NAME);
            assert_eq!(
                lock.await_waker(seen, &mut episode),
                Step::Exhausted,
                "{}: spent, it naps at each look",
                W::NAME
            );
            assert_eq!(episode.iterations(), budget + 2, "{}", W::NAME);

            let mut episode = Episode::new(Some(Instant::now()));
            assert_eq!(lock.await_waker(seen, &mut episode), Step::TimedOut, "{}", W::NAME);
            assert_eq!(episode.iterations(), 0, "{}", W::NAME);
        }
        pauses_then_naps::<SpinPark>();
        pauses_then_naps::<SpinYieldPark>();

        let seen = LOCKED | WAKING | ONE_SLEEPER;
        let mut episode = Episode::new(None);
        assert_eq!(Bounded::<Futex>::new().await_waker(seen, &mut episode), Step::Exhausted);
        assert_eq!(episode.iterations(), 1, "futex has no budget: it naps at once");
    }

    /// A timed waiter that finds a wake-up in flight, and no sleeper ever coming back to end
    /// it, gives up at its deadline and leaves the word as it found it; without a deadline
    /// check there it would wait for ever. It is not let starve and claim, which would end its
    /// wait another way.
    #[test]
    fn a_timed_waiter_behind_a_wake_up_in_flight_gives_up_at_its_deadline() {
        fn gives_up<W: Wait>() {
            let lock: &'static Bounded<W> = Box::leak(Box::new(Bounded::new()));
            let word = LOCKED | WAKING | ONE_SLEEPER;
            lock.state.store(word, SeqCst);
            let (done, outcome) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                NEVER_STARVES.with(|never| never.set(true));
                let deadline = Instant::now() + Duration::from_millis(20);
                done.send(lock.lock_until(Some(deadline)).is_some()).unwrap();
            });
            // A waiter that never gives up is reported, not waited for.
            let acquired = outcome.recv_timeout(Duration::from_secs(30));
            assert_eq!(acquired, Ok(false), "{}: the timed waiter did not give up", W::NAME);
            assert_eq!(lock.state.load(SeqCst), word, "{}", W::NAME);
        }
        gives_up::<crate::wait::SpinPark>();
        gives_up::<SpinYieldPark>();
        gives_up::<Futex>();
        // A crowd's waiter yields there, and checks its deadline as its spin phase goes on.
        gives_up::<PauseYieldPark>();
    }

    /// parking_lot's rule: behind a counted sleeper no waiter spins, it sleeps at once. A
    /// first waiter spins out `spin-park`'s 4 µs and sleeps; a second, arriving after it,
    /// must count in without ever taking `SPINNING`.
    #[test]
    fn no_waiter_spins_behind_a_sleeper() {
        use crate::wait::SpinPark;
        let lock = Bounded::<SpinPark>::new();
        lock.lock();
        std::thread::scope(|s| {
            let waiter = || {
                lock.lock();
                // SAFETY: locked just above.
                unsafe { lock.unlock(GuardSend::new()) };
            };
            s.spawn(waiter);
            wait_for_a_sleeper(&lock);
            assert_eq!(lock.state.load(SeqCst) & SPINNING, 0, "a waiter counts in as it stops spinning");
            s.spawn(waiter);
            // Watch the word until the second waiter sleeps too: its 4 µs of spinning, had it
            // spun, spans thousands of these loads. The lock is released before any assertion,
            // so that a failure ends the test instead of leaving the waiters blocked.
            let give_up = Instant::now() + Duration::from_secs(10);
            let mut spun = false;
            let mut slept = false;
            while !slept && Instant::now() < give_up {
                let seen = lock.state.load(SeqCst);
                spun |= seen & SPINNING != 0;
                slept = sleepers(seen) == 2;
            }
            // SAFETY: this thread holds the lock.
            unsafe { lock.unlock(GuardSend::new()) };
            assert!(!spun, "a waiter spun behind a counted sleeper");
            assert!(slept, "the second waiter never slept");
        });
        assert!(!lock.is_locked());
    }

    #[test]
    fn a_starving_waiter_gets_the_next_release() {
        starving_waiter_gets_the_next_release::<Futex>();
        starving_waiter_gets_the_next_release::<SpinYieldPark>();
        starving_waiter_gets_the_next_release::<PauseYieldPark>();
    }

    /// POSIX lets a mutex be destroyed as soon as it is unlocked and unused, so a release must
    /// not look at the word again after the CAS that frees it, even when its wake-up finds
    /// nobody (as [`Parked`](crate::release_watch::Parked)'s always does): the lock's page is
    /// taken away at that CAS, and any later read or write kills the test binary with SIGSEGV.
    /// The sleeper (counted in, let go afterwards with a changed word) must come back, end
    /// the wake-up, and take the lock.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn a_release_touches_nothing_after_it() {
        use crate::release_watch::{self, Parked};
        let _serial = release_watch::one_at_a_time();
        let lock = release_watch::on_its_own_page(Bounded::<Parked>::new());
        lock.lock();
        std::thread::scope(|s| {
            s.spawn(|| {
                lock.lock();
                // SAFETY: locked just above.
                unsafe { lock.unlock(GuardSend::new()) };
            });
            release_watch::wait_until_asleep(1);
            let free = |lock: &Bounded<Parked>| lock.state.load(SeqCst) & LOCKED == 0;
            // SAFETY: this thread holds the lock.
            release_watch::free_at_release(lock, free, || unsafe { lock.unlock(GuardSend::new()) });
            release_watch::let_go();
        });
        assert_eq!(lock.state.load(SeqCst), 0, "the sleeper took and released the lock, and ended the wake-up");
    }

    /// A policy whose threads follow a script (see
    /// [`no_waiter_sleeps_through_a_wake_up_that_found_nobody`]): each thread's [`Role`] says
    /// whether its sleep pauses before the futex wait or after it, and whether it spins.
    struct Scripted;

    #[derive(Clone, Copy, PartialEq)]
    enum Role {
        /// Sleeps in the kernel at once; never spins.
        Plain,
        /// Pauses after its first futex wait returns, then spins until it has the lock.
        WokenThenSpins,
        /// Pauses between counting itself in and its futex wait, as if preempted there.
        PreemptedBeforeSleep,
    }

    std::thread_local! {
        static ROLE: std::cell::Cell<Role> = const { std::cell::Cell::new(Role::Plain) };
        /// Keeps this thread's waits from ever claiming the lock, whatever their length (a
        /// scripted test pauses threads for far longer than the bypass bound).
        pub(super) static NEVER_STARVES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// A thread about to queue behind a gate takes a free word, keeps looking at one held
    /// and unchanged for its looks, and stops at once, leaving the word as it is, when the
    /// word has changed while held (a release another thread won).
    #[test]
    fn a_look_before_queueing_takes_a_free_word_and_stops_at_a_release_won_by_another() {
        let word = Bounded::<crate::wait::SpinPark>::new();
        assert!(word.look_from(0, 1), "a free word is taken");
        assert_eq!(word.state.load(Relaxed), LOCKED);
        assert!(!word.look_from(LOCKED, 1000), "a held word that does not change is not taken");
        // A sleeper counted in and a release taken back: the word is held, but not as first
        // seen. Looks that went on would find it freed below, 500 ms later, and take it.
        word.state.store(LOCKED | ONE_SLEEPER, Relaxed);
        let done = std::sync::atomic::AtomicBool::new(false);
        let took = std::thread::scope(|s| {
            s.spawn(|| {
                let start = Instant::now();
                while !done.load(Relaxed) && start.elapsed() < std::time::Duration::from_millis(500) {
                    std::thread::yield_now();
                }
                let _ = word.state.compare_exchange(LOCKED | ONE_SLEEPER, ONE_SLEEPER, Relaxed, Relaxed);
            });
            let took = word.look_from(LOCKED, u32::MAX);
            done.store(true, Relaxed);
            took
        });
        assert!(!took, "a changed, held word ends the looks at once");
        word.state.store(HANDOFF, Relaxed);
        assert!(!word.look_from(HANDOFF, 1000), "a word claimed by a starving waiter is not free");
        word.state.store(ONE_SLEEPER, Relaxed);
        assert!(word.look_from(LOCKED, 1), "a free word with sleepers counted is taken, and they kept");
        assert_eq!(word.state.load(Relaxed), LOCKED | ONE_SLEEPER);
    }

    /// The release frees a word that holds `LOCKED` alone and leaves every other word
    /// untouched for the full release, which then frees it, keeps the sleepers and sets
    /// `WAKING` (it wakes one; nobody sleeps here, so the wake-up finds nobody).
    #[test]
    fn the_release_frees_a_lone_lock_and_leaves_the_rest_to_the_full_release() {
        let lock = Bounded::<Futex>::new();
        lock.state.store(LOCKED, SeqCst);
        assert_eq!(lock.release_alone(), Ok(()));
        assert_eq!(lock.state.load(SeqCst), 0);
        for more in [ONE_SLEEPER, HANDOFF, SPINNING] {
            lock.state.store(LOCKED | more, SeqCst);
            assert_eq!(lock.release_alone(), Err(LOCKED | more));
            assert_eq!(lock.state.load(SeqCst), LOCKED | more, "untouched");
        }
        lock.state.store(LOCKED | ONE_SLEEPER, SeqCst);
        // SAFETY: the word reads as held, and nothing else uses this lock.
        unsafe { lock.unlock(GuardSend::new()) };
        assert_eq!(lock.state.load(SeqCst), ONE_SLEEPER | WAKING);
    }

    /// Threads at 8 times the CPUs on one lock: the count under the lock is exact, and the
    /// word ends free with nobody counted, over a policy whose waiters spin and sleep and one
    /// whose waiters sleep at once.
    #[test]
    fn eight_threads_a_cpu_on_one_lock_lose_no_update() {
        fn count<W: Wait>() {
            let threads = 8 * std::thread::available_parallelism().map_or(2, |n| n.get());
            let lock = Bounded::<W>::new();
            let count = AtomicU32::new(0);
            std::thread::scope(|s| {
                for _ in 0..threads {
                    let (lock, count) = (&lock, &count);
                    s.spawn(move || {
                        for _ in 0..2_000 {
                            lock.lock();
                            count.store(count.load(Relaxed) + 1, Relaxed);
                            // SAFETY: locked just above.
                            unsafe { lock.unlock(GuardSend::new()) };
                        }
                    });
                }
            });
            assert_eq!(count.into_inner(), threads as u32 * 2_000, "{}", W::NAME);
            assert_eq!(lock.state.load(SeqCst), 0, "{}: free, nobody counted, no wake-up in flight", W::NAME);
        }
        count::<PauseYieldPark>();
        count::<Futex>();
    }

    /// Where the scripted threads are: set by them, read by the test.
    static WOKEN_PAUSED: AtomicBool = AtomicBool::new(false);
    static BEFORE_SLEEP_PAUSED: AtomicBool = AtomicBool::new(false);
    /// What the test lets them do.
    static GO_ON_WOKEN: AtomicBool = AtomicBool::new(false);
    static GO_ON_BEFORE_SLEEP: AtomicBool = AtomicBool::new(false);

    fn pause(at: &AtomicBool, until: &AtomicBool) {
        at.store(true, SeqCst);
        while !until.load(SeqCst) {
            std::thread::yield_now();
        }
    }

    impl Wait for Scripted {
        const NAME: &'static str = "scripted";
        const MAY_SLEEP: bool = true;

        fn relax(_: &AtomicU32, _: u32, _: &mut Episode) -> bool {
            if ROLE.with(|role| role.get()) == Role::WokenThenSpins && WOKEN_PAUSED.load(SeqCst) {
                std::thread::yield_now();
                return true;
            }
            false
        }

        fn sleep(word: &AtomicU32, current: u32, deadline: Option<Instant>) -> FutexWait {
            let role = ROLE.with(|role| role.get());
            if role == Role::PreemptedBeforeSleep && !BEFORE_SLEEP_PAUSED.load(SeqCst) {
                pause(&BEFORE_SLEEP_PAUSED, &GO_ON_BEFORE_SLEEP);
            }
            let slept = crate::sys::futex::wait(word, current, deadline);
            if role == Role::WokenThenSpins && !WOKEN_PAUSED.load(SeqCst) {
                pause(&WOKEN_PAUSED, &GO_ON_WOKEN);
            }
            slept
        }
    }

    /// Waits up to `limit` for `done`; returns whether it came.
    fn within(limit: Duration, done: impl Fn() -> bool) -> bool {
        let give_up = Instant::now() + limit;
        while !done() {
            if Instant::now() >= give_up {
                return false;
            }
            std::thread::yield_now();
        }
        true
    }

    /// The sequence that the rule "no waiter counts itself in while `WAKING` is set" exists
    /// for, played out with real futex waits (`count_out` describes it): a waiter that
    /// counted in while a wake-up was on its way sleeps on a word that has come back to the
    /// value it counted in on, after the wake-up meant to end `WAKING` found nobody, and no
    /// release wakes anyone again. Where a step cannot happen because the rule holds a waiter
    /// back, the script waits a little and moves on; every thread must finish either way.
    #[test]
    fn no_waiter_sleeps_through_a_wake_up_that_found_nobody() {
        let lock = Bounded::<Scripted>::new();
        let (x_holds, x_may_unlock) = (AtomicBool::new(false), AtomicBool::new(false));
        let finished = AtomicU32::new(0);
        let brief = Duration::from_millis(100);
        NEVER_STARVES.with(|never| never.set(true));
        let ok = std::thread::scope(|s| {
            lock.lock();
            s.spawn(|| {
                ROLE.with(|role| role.set(Role::WokenThenSpins));
                NEVER_STARVES.with(|never| never.set(true));
                lock.lock();
                x_holds.store(true, SeqCst);
                while !x_may_unlock.load(SeqCst) {
                    std::thread::yield_now();
                }
                // SAFETY: locked just above.
                unsafe { lock.unlock(GuardSend::new()) };
                finished.fetch_add(1, SeqCst);
            });
            wait_for_a_sleeper(&lock);
            std::thread::sleep(Duration::from_millis(20));
            // Release to the sleeper, which pauses once woken; take the lock again first.
            // SAFETY: this thread holds the lock.
            unsafe { lock.unlock(GuardSend::new()) };
            assert!(within(Duration::from_secs(10), || WOKEN_PAUSED.load(SeqCst)), "the sleeper was not woken");
            lock.lock();
            // A second waiter counts in (if the rule lets it) while `WAKING` is set, and pauses.
            s.spawn(|| {
                ROLE.with(|role| role.set(Role::PreemptedBeforeSleep));
                NEVER_STARVES.with(|never| never.set(true));
                lock.lock();
                // SAFETY: locked just above.
                unsafe { lock.unlock(GuardSend::new()) };
                finished.fetch_add(1, SeqCst);
            });
            within(brief, || BEFORE_SLEEP_PAUSED.load(SeqCst));
            // The woken sleeper counts out (ending `WAKING`) and spins.
            GO_ON_WOKEN.store(true, SeqCst);
            within(brief, || lock.state.load(SeqCst) & WAKING == 0);
            // Release again: its wake-up finds nobody in the kernel, and the spinner takes the
            // lock and keeps it.
            // SAFETY: this thread holds the lock.
            unsafe { lock.unlock(GuardSend::new()) };
            assert!(within(Duration::from_secs(10), || x_holds.load(SeqCst)), "the spinner never took the lock");
            // A third waiter counts in, which would bring the word back to the second's value.
            s.spawn(|| {
                NEVER_STARVES.with(|never| never.set(true));
                lock.lock();
                // SAFETY: locked just above.
                unsafe { lock.unlock(GuardSend::new()) };
                finished.fetch_add(1, SeqCst);
            });
            within(brief, || sleepers(lock.state.load(SeqCst)) >= 2);
            std::thread::sleep(Duration::from_millis(20));
            // The second waiter goes on to its futex wait; then the spinner releases.
            GO_ON_BEFORE_SLEEP.store(true, SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            x_may_unlock.store(true, SeqCst);
            let ok = within(Duration::from_secs(10), || finished.load(SeqCst) == 3);
            // Unstick any sleeper left behind, so that a failure does not hang the test.
            while finished.load(SeqCst) < 3 {
                crate::sys::futex::wake_all(&lock.state);
                std::thread::yield_now();
            }
            ok
        });
        assert!(ok, "a waiter slept through the wake-up meant for it: a lost wake-up");
        assert_eq!(lock.state.load(SeqCst), 0);
    }

    #[test]
    fn with_a_crowd_policy_every_waiter_spins_and_none_sleeps_at_once() {
        // A yield phase far longer than the test: each waiter stays in its spin phase.
        type Crowd = PauseYieldPark<100, { u32::MAX / 2 }>;
        let lock = Bounded::<Crowd>::new();
        let (started, acquired) = (AtomicU32::new(0), AtomicU32::new(0));
        lock.lock();
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    started.fetch_add(1, SeqCst);
                    lock.lock();
                    acquired.fetch_add(1, SeqCst);
                    // SAFETY: locked just above.
                    unsafe { lock.unlock(GuardSend::new()) };
                });
            }
            while started.load(SeqCst) < 2 {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(50));
            let (state, early) = (lock.state.load(SeqCst), acquired.load(SeqCst));
            // Released before the checks, so that a failing check does not leave the waiters
            // blocked for ever.
            // SAFETY: this thread holds the lock.
            unsafe { lock.unlock(GuardSend::new()) };
            assert_eq!(state & SPINNING, 0, "no waiter took the one-spinner role: {state:#x}");
            assert_eq!(sleepers(state), 0, "no waiter went to sleep at once: {state:#x}");
            assert_eq!(early, 0);
        });
        assert_eq!(acquired.load(SeqCst), 2);
        assert_eq!(lock.state.load(SeqCst), 0);
    }

    #[test]
    fn a_timed_out_claimant_gives_the_lock_back() {
        // The holder must barge back in after waking the waiter; when the waiter wins that
        // race instead, try again.
        for _ in 0..100 {
            let lock = Bounded::<Futex>::new();
            let (claimed, waiter_locked) = (AtomicBool::new(false), AtomicBool::new(false));
            lock.lock();
            let waiter_got_it = std::thread::scope(|s| {
                let waiter = s.spawn(|| {
                    let deadline = Instant::now() + Duration::from_nanos(100 * STARVATION_NS);
                    lock.lock_until(Some(deadline)).inspect(|_| {
                        waiter_locked.store(true, SeqCst);
                        // SAFETY: locked just above.
                        unsafe { lock.unlock(GuardSend::new()) };
                    })
                });
                wait_for_a_sleeper(&lock);
                std::thread::sleep(Duration::from_nanos(4 * STARVATION_NS));
                // SAFETY: this thread holds the lock.
                unsafe { lock.unlock(GuardSend::new()) };
                while lock.try_lock().is_none() {
                    if waiter.is_finished() {
                        return true;
                    }
                    std::thread::yield_now();
                }
                if waiter_locked.load(SeqCst) {
                    // It took and released the lock before our try_lock.
                    // SAFETY: this thread holds the lock.
                    unsafe { lock.unlock(GuardSend::new()) };
                    return true;
                }
                // We hold the lock again, and keep it until the waiter gives up. Woken and past
                // the bound, it claims first.
                while !waiter.is_finished() {
                    claimed.fetch_or(lock.is_claimed(), SeqCst);
                    std::thread::yield_now();
                }
                assert!(waiter.join().unwrap().is_none(), "the lock was held all along");
                false
            });
            if waiter_got_it {
                continue;
            }
            assert!(claimed.load(SeqCst), "a starving waiter that was woken must claim");
            assert!(!lock.is_claimed(), "a withdrawn claim must not linger");
            // SAFETY: this thread holds the lock.
            unsafe { lock.unlock(GuardSend::new()) };
            assert!(lock.try_lock().is_some(), "the lock works after the withdrawal");
            return;
        }
        panic!("the holder never barged back in before the waiter in 100 tries");
    }

    /// Releases `lock` (taken here first) `n` times as a gated lock's release does, and
    /// returns the laps they completed.
    /// Each release finds the gate held when `queued`, and the word marked so.
    fn gated_releases(lock: &Bounded<Futex>, queued: bool, n: usize) -> Vec<Lap> {
        let laps = (0..n).map(|_| {
            assert!(
                lock.try_lock().is_some(),
                "absences must never keep the lock from anyone: {:#x}",
                lock.state.load(SeqCst)
            );
            if queued {
                lock.mark_queued();
            }
            // SAFETY: locked just above.
            unsafe { lock.release_gated(|| queued) }
        });
        laps.filter(|lap| *lap != Lap::None).collect()
    }

    #[test]
    fn a_gated_release_counts_the_absences_of_the_head_in_laps_of_16() {
        let lock = Bounded::<Futex>::new();
        // Nobody queued: nothing counted, and the word stays clean.
        assert_eq!(gated_releases(&lock, false, 40), []);
        assert_eq!(lock.state.load(SeqCst), 0);
        // Queued, and no head waiting: a lap every 16 releases, all in one spell.
        assert_eq!(gated_releases(&lock, true, 15), []);
        assert_eq!(gated_releases(&lock, true, 1), [Lap::First(1)]);
        assert_eq!(gated_releases(&lock, true, 32), [Lap::Again(1), Lap::Again(1)]);
        // A head spinning for the word ends the spell; the next is numbered anew.
        lock.state.fetch_or(SPINNING, SeqCst);
        assert_eq!(gated_releases(&lock, true, 20), []);
        assert_eq!(
            lock.state.load(SeqCst),
            SPINNING | ONE_SPELL | QUEUED,
            "the count is cleared, the spell's number and the mark kept"
        );
        lock.state.fetch_and(!SPINNING, SeqCst);
        assert_eq!(gated_releases(&lock, true, 16), [Lap::First(2)]);
        // A free word carrying a count is taken by the slow path as well as by try_lock.
        lock.lock();
        // SAFETY: locked just above.
        unsafe { lock.unlock(GuardSend::new()) };
        assert!(!lock.is_locked());
        // So is a head asleep on the word, whom the release wakes; nobody queued clears it.
        lock.state.fetch_add(ONE_SLEEPER, SeqCst);
        assert_eq!(gated_releases(&lock, true, 1), []);
        assert_eq!(lock.state.load(SeqCst) & (ABSENCES | LAPPED), 0);
        assert_ne!(lock.state.load(SeqCst) & WAKING, 0, "the release woke the sleeper");
        // While that wake-up is on its way, the head is absent again.
        assert_eq!(gated_releases(&lock, true, 16), [Lap::First(3)]);
        lock.state.fetch_and(!(WAKING | ONE_SLEEPER), SeqCst);
        assert_eq!(gated_releases(&lock, false, 1), []);
        assert_eq!(lock.state.load(SeqCst), 3 * ONE_SPELL);
        // The spells wrap at 8.
        for spell in 4..12 {
            lock.state.fetch_or(SPINNING, SeqCst);
            gated_releases(&lock, true, 1);
            lock.state.fetch_and(!SPINNING, SeqCst);
            assert_eq!(gated_releases(&lock, true, 16), [Lap::First(spell % 8)]);
        }
    }
}
