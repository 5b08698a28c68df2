//! The word's contended acquisition: spin, sleep counted, or claim once starving (the
//! module docs of [`Bounded`] give the design).

use super::release::sleepers;
use super::{Bounded, HANDOFF, LOCKED, ONE_SLEEPER, SPINNING, WAKING};
use crate::sync::Ordering::*;
use crate::sys::futex::FutexWait;
use crate::wait::{Episode, Spun, Step, Wait};
use std::time::Instant;

/// How long a waiter waits before it claims the next release, in nanoseconds: parking_lot's
/// fair hand-over comes about every 0.5 ms. A claim here costs no wake-up (the claimant is
/// running), only the releaser's lost chance to barge.
pub const STARVATION_NS: u64 = 500_000;

/// Spin iterations of a claimant before it yields the CPU between re-reads.
const CLAIMANT_SPINS: u32 = 64;
/// How long a waiter that finds a wake-up in flight (`WAKING`) sleeps before it looks again:
/// about a futex wake-up's latency, so the woken sleeper is usually back by then
/// (docs/design.md, "The bounded-bypass word").
const WAKING_NAP_NS: u64 = 50_000;
/// Steps of the spin budget between two looks of a waiter that found a wake-up in flight
/// (`WAKING`), before the budget is spent and it naps instead.
pub(super) const WAKING_PAUSES: u32 = 64;

impl<W: Wait> Bounded<W> {
    #[cold]
    pub(super) fn wait_for(&self, deadline: Option<Instant>, mode: Mode) -> Outcome {
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
                let spun = self.spin_or_step(seen, lost_race, &mut episode);
                lost_race = spun == Spun::Changed;
                match spun {
                    Spun::Changed => continue,
                    Spun::TimedOut => return self.leave(spinner, Outcome::TimedOut),
                    // Only policies that may sleep end their spin phase.
                    Spun::Exhausted if mode == Mode::SpinThenQueue => return self.leave(spinner, Outcome::Queue),
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
                    return self.leave(spinner, Outcome::TimedOut);
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

    /// One spin of a waiter allowed to spin, on the word as last `seen`. A lost race (the word
    /// changed, and the lock is held again) costs one step of the spin budget: a holder that
    /// re-takes the lock at once changes the word every few nanoseconds, and would otherwise
    /// keep its waiters spinning for ever.
    #[inline]
    fn spin_or_step(&self, seen: u32, lost_race: bool, episode: &mut Episode) -> Spun {
        match lost_race.then(|| W::step(&self.state, seen, episode)) {
            Some(Step::Exhausted) => Spun::Exhausted,
            Some(Step::TimedOut) => Spun::TimedOut,
            Some(Step::Continue) | None => W::spin(&self.state, seen, episode),
        }
    }

    /// Leaves a wait that did not get the lock with `outcome`, giving up the one-spinner role
    /// first if this thread holds it (`spinner` is `SPINNING` then, 0 otherwise).
    #[inline]
    fn leave(&self, spinner: u32, outcome: Outcome) -> Outcome {
        self.state.fetch_and(!spinner, Relaxed);
        outcome
    }

    /// Lets time pass before a waiter that found a wake-up in flight (`WAKING`) looks at the
    /// word again: [`WAKING_PAUSES`] steps of its policy's spin budget without a look between
    /// them, or, once the budget is spent, a nap of about a wake-up's time. Returns
    /// [`Step::TimedOut`] if the deadline has passed. The pauses spare the holder, which
    /// takes the lock again every few nanoseconds: each look pulls the line from it. The
    /// steps keep the CPU ([`Wait::step_running`]): with more threads than CPUs the woken
    /// sleeper waits for a CPU behind every waiter that yields, and the wake-up stays in
    /// flight.
    pub(super) fn await_waker(&self, seen: u32, episode: &mut Episode) -> Step {
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
}

/// How a contended acquisition waits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
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
            if crate::testing::never_starves() {
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
        // `testing::starve_at_look(u32::MAX)` explores the waits in which nobody claims.
        #[cfg(loom)]
        {
            self.looks >= crate::testing::starving_look()
        }
    }
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
