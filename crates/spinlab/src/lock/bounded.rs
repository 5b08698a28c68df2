//! The bounded-bypass lock: barging for throughput, a hand-off bit for fairness. The word of
//! spinlab's default lock (behind an MCS queue: [`Gated`](super::Gated)).
//!
//! A test-and-test-and-set lock lets whichever running thread sees the lock free take it: the
//! releaser itself, often, because the lock's line is still in its cache. That is what makes
//! barging locks fast, and what starves a waiter that was asleep when the lock came free.
//! A FIFO lock avoids the starvation and pays with a convoy: when the next owner is asleep or
//! preempted, the lock stays idle until it runs. This lock keeps barging and bounds the bypass
//! instead, after parking_lot's eventual fairness, the Linux mutex's hand-off bit and Go's
//! `sync.Mutex`:
//!
//! - **A starving waiter claims the next release.** A waiter that has waited longer than
//!   [`STARVATION_NS`] and still finds the lock taken sets `HANDOFF`. From then on nobody else
//!   may take the lock: a release clears `LOCKED` and leaves the lock to the claimant.
//! - **The claimant never sleeps.** It waits with `pause`, then `sched_yield`, so a release
//!   never waits for a sleeping thread to be woken and scheduled. Only one waiter claims at a
//!   time; the others wait as usual.
//! - **One spinner.** With a policy that may sleep, one waiter at a time runs the policy's
//!   spin phase (`SPINNING`); the others sleep at once, as the Linux mutex queues its
//!   optimistic spinners so that only one spins. With more threads than CPUs, a crowd of
//!   spinners takes the CPU from the holder (on a 2-CPU guest, 16 threads of a real program
//!   ran 1.6-1.9 times slower than under glibc's mutex with every waiter spinning 4 µs).
//!   A policy that offers its CPU after a few looks ([`Wait::CROWD_SPINS`], as
//!   `pause-yield-park`, spinlab's default) lets every waiter spin instead: none of them keeps
//!   the holder off a CPU, and sending waiters to sleep at once left CPUs idle whenever every
//!   thread pinned to one was asleep.
//! - **Sleepers are counted, and one is woken at a time.** A release wakes one sleeper while
//!   any are counted and no wake-up is already on its way, so sleepers keep turning over
//!   without a herd.
//!
//! State word:
//!
//! | bits  | name       | meaning                                                           |
//! |-------|------------|-------------------------------------------------------------------|
//! | 0     | `LOCKED`   | held                                                              |
//! | 1     | `HANDOFF`  | a starving waiter claims the lock: only it may set `LOCKED` next  |
//! | 2     | `WAKING`   | a release woke a sleeper that has not come back yet               |
//! | 3     | `SPINNING` | a waiter is spinning: others sleep at once (sleeping policies)    |
//! | 4     | `MISSED`   | a release found `WAKING` set and woke nobody                      |
//! | 5..32 | sleepers   | waiters counted in before they sleep, counted out after they wake |
//!
//! A waiter counts itself in with a CAS that also checks the lock is still held (or claimed),
//! sleeps on the word with that count, and counts itself out when it wakes, whatever woke it.
//! A release clears `LOCKED` and, when sleepers are counted and neither `HANDOFF` nor
//! `WAKING` is set, sets `WAKING` and wakes one. The woken thread clears `WAKING` as it counts
//! itself out; a release whose wake-up found nobody in the kernel clears it itself. Unlike a
//! single "sleepers may exist" bit (Rust std's futex mutex), the count does not forget the
//! other sleepers while a woken one is on its way back.
//!
//! A wake-up that finds nobody in the kernel (the counted sleeper had not gone to sleep yet)
//! leaves nobody on the way back to take over from the releases it made skip. A release
//! that skips its wake-up because of `WAKING` therefore sets `MISSED`; the releaser whose
//! wake-up found nobody gives `WAKING` back and, if `MISSED` was set, the lock is free and
//! sleepers are counted, wakes again: a sleeper may have gone to sleep on the lock that the
//! skipped release freed. (Found when a build whose waiters starved at once hung in the
//! contention experiment: a sleeper slept on a free lock until a debugger's attach woke it.
//! The loom models `never_starving_*` reproduce it.)
//!
//! Why no wake-up is lost: a sleeper only sleeps on a word that is held or claimed, so whoever
//! holds it has a release still to come, and that release finds the sleeper counted. If its
//! wake-up reaches the kernel before the sleeper does, the sleeper's futex wait sees a changed
//! word and returns, or (if the word was taken again since) sleeps on a word whose new holder
//! has a release, and a wake-up, still to come. A release with `HANDOFF` wakes nobody: the
//! claimant is running, and its own release wakes the next sleeper.
//!
//! Fairness guarantee: a bypass bound in time. A waiter that is running (spinning, or woken)
//! and has waited [`STARVATION_NS`] gets the lock after at most the current holder and one
//! earlier claimant. Sleepers come back one per release in the kernel's FIFO order and claim
//! once starving, so a sleeper waits for the sleepers ahead of it, not for every thread that
//! barges past it. Time a thread spends preempted is not the lock's to bound: with more
//! threads than CPUs the scheduler's time slices add to every wait.

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
const MISSED: u32 = 16;
const ONE_SLEEPER: u32 = 32;

/// How long a waiter waits before it claims the next release, in nanoseconds: parking_lot's
/// fair hand-over comes about every 0.5 ms. A claim here costs no wake-up (the claimant is
/// running), only the releaser's lost chance to barge.
pub const STARVATION_NS: u64 = 500_000;

/// Spin iterations of a claimant before it yields the CPU between re-reads.
const CLAIMANT_SPINS: u32 = 64;

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

    /// Acquires the lock, giving up at `deadline` (`None`: never).
    #[inline]
    pub fn lock_until(&self, deadline: Option<Instant>) -> Option<GuardSend> {
        let acquired = self.fast_lock() || self.lock_contended(deadline);
        acquired.then(GuardSend::new)
    }

    #[inline(always)]
    fn fast_lock(&self) -> bool {
        // Acquire: the previous holder's critical section happens-before ours.
        self.state.compare_exchange(0, LOCKED, Acquire, Relaxed).is_ok()
    }

    #[cold]
    fn lock_contended(&self, deadline: Option<Instant>) -> bool {
        self.wait_for(deadline, Mode::Sleep) == Outcome::Acquired
    }

    /// The queue's first step ([`Gated`](super::Gated)): becomes the one spinner and spins
    /// for the policy's budget, as qspinlock's pending waiter does, so that a lone waiter
    /// takes a contended lock without touching the queue. Gives up at once, with
    /// [`Outcome::Queue`], if another waiter is spinning, and when the budget is spent
    /// (policies that may sleep only: a pure spin policy spins until it acquires).
    #[inline]
    pub(crate) fn spin_then_queue(&self, deadline: Option<Instant>) -> Outcome {
        if self.fast_lock() {
            return Outcome::Acquired;
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
            if mode == Mode::SpinThenQueue && W::MAY_SLEEP && spinner == 0 && seen & SPINNING != 0 {
                // Another waiter is spinning: wait in the queue.
                return Outcome::Queue;
            }
            if W::MAY_SLEEP && !crowd && spinner == 0 && seen & SPINNING == 0 {
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
            self.count_out(slept == FutexWait::Woken);
            if slept == FutexWait::TimedOut {
                return Outcome::TimedOut;
            }
            episode.restart_spinning();
        }
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

    /// Counts a sleeper out after its futex wait returned; one that a release woke also ends
    /// that release's `WAKING`, so the next release may wake another sleeper, and `MISSED`:
    /// it is running, and finds the lock free (and takes it: its release wakes the next
    /// sleeper), held (its holder's release wakes one) or claimed (the claimant's does).
    #[inline]
    fn count_out(&self, woken: bool) {
        let clear = if woken { WAKING | MISSED } else { 0 };
        let mut seen = self.state.load(Relaxed);
        loop {
            match self.state.compare_exchange_weak(seen, (seen - ONE_SLEEPER) & !clear, Relaxed, Relaxed) {
                Ok(_) => return,
                Err(now) => seen = now,
            }
        }
    }

    #[cold]
    fn unlock_contended(&self) {
        // Clear LOCKED, and set WAKING if we are to wake a sleeper: with a claim pending the
        // claimant is running and takes the lock itself (its own release wakes a sleeper),
        // and while a woken sleeper is on its way back, waking another only adds a herd.
        let mut seen = self.state.load(Relaxed);
        let wake = loop {
            let wake = seen & (HANDOFF | WAKING) == 0 && sleepers(seen) != 0;
            // Skipping the wake-up for a woken thread on its way back: say so, in case the
            // wake-up found nobody and nobody is on the way back.
            let missed = seen & (HANDOFF | WAKING) == WAKING && sleepers(seen) != 0;
            let next = (seen & !LOCKED) | if wake { WAKING } else { 0 } | if missed { MISSED } else { 0 };
            // Release: our critical section happens-before the next holder's Acquire.
            match self.state.compare_exchange_weak(seen, next, Release, Relaxed) {
                Ok(_) => break wake,
                Err(now) => seen = now,
            }
        };
        if wake {
            self.wake_sleeper();
        }
    }

    /// Wakes one sleeper, for a thread that has set `WAKING`. If the wake-up finds nobody in
    /// the kernel (the counted sleeper had not gone to sleep yet; it finds the word changed
    /// and comes back by itself), gives `WAKING` back, since no woken thread will, and wakes
    /// again if a release skipped its wake-up meanwhile (`MISSED`) and the lock is now free
    /// with sleepers counted: one of them may have gone to sleep behind the lock that release
    /// freed, with no release left to come. With the lock held or claimed, its release or the
    /// claimant's wakes them.
    #[cold]
    fn wake_sleeper(&self) {
        while W::wake_one(&self.state) == 0 {
            let mut seen = self.state.load(Relaxed);
            loop {
                let again = seen & MISSED != 0 && seen & (LOCKED | HANDOFF) == 0 && sleepers(seen) != 0;
                let next = if again { seen & !MISSED } else { seen & !(WAKING | MISSED) };
                match self.state.compare_exchange_weak(seen, next, Relaxed, Relaxed) {
                    Ok(_) if again => break,
                    Ok(_) => return,
                    Err(now) => seen = now,
                }
            }
        }
    }
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
pub fn loom_starve_at_look(look: u32) -> LoomStarveAtLook {
    LoomStarveAtLook(STARVE_AT_LOOK.with(|at| at.replace(look)))
}

/// Restores the previous [`loom_starve_at_look`] setting when dropped.
#[cfg(loom)]
#[doc(hidden)]
#[must_use = "the setting lasts only while the guard lives"]
pub struct LoomStarveAtLook(u32);

#[cfg(loom)]
impl Drop for LoomStarveAtLook {
    fn drop(&mut self) {
        STARVE_AT_LOOK.with(|at| at.set(self.0));
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
        let mut seen = self.state.load(Relaxed);
        // Loops only while the lock is free and the sleeper count changes under us: a free lock is
        // never refused.
        while seen & (LOCKED | HANDOFF) == 0 {
            match self.state.compare_exchange_weak(seen, seen | LOCKED, Acquire, Relaxed) {
                Ok(_) => return Some(GuardSend::new()),
                Err(now) => seen = now,
            }
        }
        None
    }

    #[inline]
    unsafe fn unlock(&self, _: GuardSend) {
        // Release: our critical section happens-before the next holder's Acquire.
        if self.state.compare_exchange(LOCKED, 0, Release, Relaxed).is_err() {
            self.unlock_contended();
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
            assert!(lock.try_lock().is_none(), "{}: a claimed release was taken back by the releaser", W::NAME);
        });
        assert!(waiter_done.load(SeqCst));
        assert!(!lock.is_locked() && !lock.is_claimed());
        assert!(lock.try_lock().is_some(), "the lock works after the hand-off");
    }

    #[test]
    fn a_starving_waiter_gets_the_next_release() {
        starving_waiter_gets_the_next_release::<Futex>();
        starving_waiter_gets_the_next_release::<SpinYieldPark>();
        starving_waiter_gets_the_next_release::<PauseYieldPark>();
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
}
