//! How a thread waits: the [`Wait`] trait and one file per policy.
//!
//! A policy decides what a thread does while a 32-bit word still holds the value it is waiting
//! to see change, and what the thread that changes the word must do to wake it. Locks, events
//! and barriers are written once against this trait and never know which policy they run
//! with; a policy never knows which primitive calls it.
//!
//! A wait has two phases. The *spin phase* repeats the policy's loop body ([`Wait::relax`])
//! between re-reads of the word: that body is what seed 000 varies (nothing, `pause`, a divide,
//! a CAS on a private line, a cache miss) and what seed 004 turns into exponential backoff. A
//! policy that may sleep ([`Wait::MAY_SLEEP`]) ends its spin phase at some point (at once for
//! [`Futex`], after a calibrated time for [`SpinPark`]); the primitive then records that a
//! sleeper may exist and calls [`Wait::sleep`]. Splitting the two lets a lock mark "waiters may
//! be asleep" only when one really is about to sleep, so a releaser pays for a wake-up system
//! call only then.

mod backoff;
mod cas;
mod divide;
mod futex;
mod hardware;
mod miss;
mod plain;
mod spin_park;

pub use backoff::Backoff;
pub use cas::Cas;
pub use divide::{FpDiv, IntDiv};
pub use futex::Futex;
pub use hardware::{Mwaitx, Tpause, Umwait, Wfe};
pub use miss::{chase_size, ChaseSize, Miss};
pub use plain::{Pause, Spin, Yield};
pub use spin_park::{PauseYieldPark, SpinPark, SpinYieldPark};

use crate::sync::{self, AtomicU32, Ordering};
use crate::sys::futex::{self as sys_futex, FutexWait};
use std::fmt;
use std::time::Instant;

/// A wait policy. See the [module documentation](self) for the two phases.
///
/// Implementations are zero-sized marker types; per-wait state lives in the [`Episode`] the
/// caller passes in, so a lock carries no policy state of its own.
pub trait Wait: Send + Sync + 'static {
    /// The policy's registry name (`"pause"`, `"spin-park"`, …).
    const NAME: &'static str;

    /// Whether waiting may block in the kernel. When `false`, primitives skip all sleeper
    /// bookkeeping and [`Wait::wake_one`]/[`Wait::wake_all`] are never needed.
    const MAY_SLEEP: bool = false;

    /// Whether every waiter of a lock may run the spin phase at once. A lock that lets only
    /// one waiter spin at a time ([`Bounded`](crate::lock::Bounded)) does so because a crowd
    /// of spinners takes the CPU from the holder when threads outnumber CPUs; a policy that
    /// offers its CPU within a fraction of a microsecond ([`PauseYieldPark`]) does not, and
    /// sends no waiter to sleep while the others could still hand the lock over quickly.
    const CROWD_SPINS: bool = false;

    /// Whether a waiter gives its CPU away while it waits: it may sleep ([`Wait::MAY_SLEEP`]),
    /// or it offers the CPU at every look ([`Yield`]). With more threads than CPUs such a
    /// waiter is often not running when its turn comes, so a lock that hands itself over in
    /// order waits a wake-up or a round of the CPU's other threads at every hand-over. The
    /// registry builds its in-order locks over these policies as [`Gated`](crate::lock::Gated)
    /// locks, whose queue orders the waiters while any running thread takes the lock.
    const LEAVES_CPU: bool = Self::MAY_SLEEP;

    /// Whether this CPU can run the policy; the error names the missing feature.
    fn availability() -> Result<(), Unavailable> {
        Ok(())
    }

    /// One pass of the policy's loop body, run after the caller read `word == current`.
    ///
    /// Returns `false` when the spin phase is over and the caller should sleep (only policies
    /// with `MAY_SLEEP` ever return `false`). Callers use [`Wait::step`], which also counts
    /// the iteration and checks the deadline.
    fn relax(word: &AtomicU32, current: u32, episode: &mut Episode) -> bool;

    /// [`Wait::relax`] keeping the CPU: a policy whose spin phase offers the CPU
    /// (`sched_yield`) as it goes pauses instead, within the same budget. For a wait in which
    /// a yield would put the waiter ahead of the thread it waits for: a lock's waiter
    /// ([`Bounded`](crate::lock::Bounded)) waiting for a woken sleeper to come back, which
    /// needs a CPU. Callers use [`Wait::step_running`].
    #[inline]
    fn relax_running(word: &AtomicU32, current: u32, episode: &mut Episode) -> bool {
        Self::relax(word, current, episode)
    }

    /// Sleeps in the kernel while `word == current`, until woken or the deadline passes.
    /// Only called for policies with `MAY_SLEEP`.
    #[inline]
    fn sleep(word: &AtomicU32, current: u32, deadline: Option<Instant>) -> FutexWait {
        sys_futex::wait(word, current, deadline)
    }

    /// Wakes one thread sleeping on `word` and returns how many were woken (0 or 1). Callers
    /// invoke it only when their own state says a sleeper may exist.
    #[inline]
    fn wake_one(word: &AtomicU32) -> usize {
        if Self::MAY_SLEEP {
            sys_futex::wake_one(word)
        } else {
            0
        }
    }

    /// Wakes every thread sleeping on `word`.
    #[inline]
    fn wake_all(word: &AtomicU32) {
        if Self::MAY_SLEEP {
            sys_futex::wake_all(word);
        }
    }

    /// One iteration of a waiting loop: the policy's body, the iteration count, the deadline
    /// check, and (under loom, when the loop goes on) a yield to the model scheduler.
    #[inline]
    fn step(word: &AtomicU32, current: u32, episode: &mut Episode) -> Step {
        step_with(episode, |episode| Self::relax(word, current, episode))
    }

    /// [`Wait::step`] with [`Wait::relax_running`] as the loop body: the same budget, and no
    /// yield.
    #[inline]
    fn step_running(word: &AtomicU32, current: u32, episode: &mut Episode) -> Step {
        step_with(episode, |episode| Self::relax_running(word, current, episode))
    }

    /// The spin phase: re-reads `word` and runs the loop body until the word stops holding
    /// `current`, the spin phase ends, or the deadline passes.
    ///
    /// The re-read is `Relaxed`: the caller re-checks with the ordering its algorithm needs.
    #[inline]
    fn spin(word: &AtomicU32, current: u32, episode: &mut Episode) -> Spun {
        loop {
            if word.load(Ordering::Relaxed) != current {
                return Spun::Changed;
            }
            match Self::step(word, current, episode) {
                Step::Continue => {}
                Step::Exhausted => return Spun::Exhausted,
                Step::TimedOut => return Spun::TimedOut,
            }
        }
    }

    /// Waits until `word != current` may hold: the spin phase, then (for sleeping policies)
    /// the kernel. Returns `false` if the deadline passed first. Spurious returns are allowed;
    /// callers re-check. A sleeping waiter is only woken by a [`Wait::wake_one`] or
    /// [`Wait::wake_all`] on `word`, so callers of this convenience must arrange for the
    /// waker to call one whenever a sleeper may exist.
    fn wait(word: &AtomicU32, current: u32, deadline: Option<Instant>) -> bool {
        let mut episode = Episode::new(deadline);
        match Self::spin(word, current, &mut episode) {
            Spun::Changed => true,
            Spun::TimedOut => false,
            Spun::Exhausted => Self::sleep(word, current, deadline) != FutexWait::TimedOut,
        }
    }
}

/// One iteration of a waiting loop with `relax` as its body ([`Wait::step`] gives the parts).
#[inline]
fn step_with(episode: &mut Episode, relax: impl FnOnce(&mut Episode) -> bool) -> Step {
    if episode.expired() {
        return Step::TimedOut;
    }
    let go_on = relax(episode);
    episode.iterations = episode.iterations.saturating_add(1);
    #[cfg(loom)]
    {
        episode.steps = episode.steps.saturating_add(1);
    }
    if go_on {
        sync::spin_iteration_done();
        Step::Continue
    } else {
        // No yield: the caller stops spinning and goes to sleep. Under loom a yield makes the
        // scheduler run the other threads until they block or yield, and it cannot undo that,
        // so a yield here hid every schedule in which a waiter goes to sleep while the holder
        // is still in its critical section: the lost wake-up window.
        Step::Exhausted
    }
}

/// What one [`Wait::step`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Re-read the word and go on.
    Continue,
    /// The spin phase is over: sleep.
    Exhausted,
    /// The deadline passed.
    TimedOut,
}

/// How a spin phase ([`Wait::spin`]) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spun {
    /// The word may have stopped holding the value: look again.
    Changed,
    /// The policy's spin phase is over: sleep.
    Exhausted,
    /// The deadline passed.
    TimedOut,
}

/// The state of one waiting episode: from the moment a thread finds it must wait until it
/// stops waiting. Backoff keeps its growing delay here, spin-then-park its spent budget.
#[derive(Debug, Clone)]
pub struct Episode {
    deadline: Option<Instant>,
    iterations: u32,
    backoff_ticks: u64,
    /// `pause-yield-park`: yields counted against its budget so far, and `pause` looks left
    /// in the spell that follows a yield that came back at once to a line nobody wrote.
    yields: u32,
    spell: u32,
    /// The previous iteration's result, for loop bodies that chain one iteration's work on
    /// the last one's (the divides).
    chain: u64,
    /// Iterations of the whole wait, across its sleeps (`testing::deadlines_span_sleeps`).
    #[cfg(loom)]
    steps: u32,
}

impl Episode {
    /// A new episode that gives up at `deadline` (`None`: never).
    #[inline]
    pub fn new(deadline: Option<Instant>) -> Self {
        Episode {
            deadline,
            iterations: 0,
            backoff_ticks: 0,
            yields: 0,
            spell: 0,
            chain: 0,
            #[cfg(loom)]
            steps: 0,
        }
    }

    /// The deadline this episode gives up at.
    #[inline]
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Loop-body iterations run so far in the current spin phase.
    #[inline]
    pub fn iterations(&self) -> u32 {
        self.iterations
    }

    /// Starts a new spin phase (after a sleep) without forgetting the deadline.
    #[inline]
    pub fn restart_spinning(&mut self) {
        self.iterations = 0;
        self.backoff_ticks = 0;
        self.yields = 0;
        self.spell = 0;
    }

    #[inline]
    fn expired(&self) -> bool {
        match self.deadline {
            None => false,
            #[cfg(not(loom))]
            Some(deadline) => Instant::now() >= deadline,
            // Loom has no clock, and its executions must be deterministic: a deadline is
            // modelled as expiring after a few iterations, which exercises every time-out path.
            #[cfg(loom)]
            Some(_) if crate::testing::deadline_spans_sleeps() => self.steps >= 3,
            #[cfg(loom)]
            Some(_) => self.iterations >= 3,
        }
    }
}

/// A policy this CPU cannot run, and the feature it lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unavailable {
    /// The policy's registry name.
    pub policy: &'static str,
    /// The missing CPU feature, as a person would look it up.
    pub needs: &'static str,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "wait policy `{}` needs {}, which this CPU does not have", self.policy, self.needs)
    }
}

impl std::error::Error for Unavailable {}

/// Something that wants to be called once per policy type (the registry builds its
/// `algorithm:policy` table this way).
pub trait PolicyVisitor {
    /// Called once for each policy.
    fn visit<W: Wait>(&mut self);
}

/// Calls `visitor` once for every policy, in the order of the README's table. Adding a policy
/// is one file in this folder and one line here.
pub fn visit_policies<V: PolicyVisitor>(visitor: &mut V) {
    visitor.visit::<Spin>();
    visitor.visit::<Pause>();
    visitor.visit::<IntDiv>();
    visitor.visit::<FpDiv>();
    visitor.visit::<Cas>();
    visitor.visit::<Miss>();
    visitor.visit::<Backoff>();
    visitor.visit::<Yield>();
    visitor.visit::<Futex>();
    visitor.visit::<SpinPark>();
    visitor.visit::<SpinYieldPark>();
    visitor.visit::<PauseYieldPark>();
    visitor.visit::<Umwait>();
    visitor.visit::<Tpause>();
    visitor.visit::<Mwaitx>();
    visitor.visit::<Wfe>();
}

/// A policy's name, whether it may sleep or otherwise give its CPU away, and whether this CPU
/// can run it.
#[derive(Clone, Copy, Debug)]
pub struct PolicyInfo {
    /// Registry name.
    pub name: &'static str,
    /// Whether the policy may block in the kernel.
    pub may_sleep: bool,
    /// Whether its waiters give their CPU away ([`Wait::LEAVES_CPU`]).
    pub leaves_cpu: bool,
    /// `Ok` or the missing feature.
    pub availability: Result<(), Unavailable>,
}

/// Every policy with its availability on this machine.
pub fn policies() -> Vec<PolicyInfo> {
    struct Collect(Vec<PolicyInfo>);
    impl PolicyVisitor for Collect {
        fn visit<W: Wait>(&mut self) {
            let (name, may_sleep, leaves_cpu) = (W::NAME, W::MAY_SLEEP, W::LEAVES_CPU);
            self.0.push(PolicyInfo { name, may_sleep, leaves_cpu, availability: W::availability() });
        }
    }
    let mut collect = Collect(Vec::new());
    visit_policies(&mut collect);
    collect.0
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    struct EveryAvailable(Vec<&'static str>);
    impl PolicyVisitor for EveryAvailable {
        fn visit<W: Wait>(&mut self) {
            if W::availability().is_err() {
                return;
            }
            // The word already differs: a wait must return at once, whatever the policy.
            let word = AtomicU32::new(1);
            assert!(W::wait(&word, 0, None), "{}", W::NAME);
            // The word never changes: a timed wait must give up, and not before its deadline.
            let deadline = Instant::now() + Duration::from_millis(3);
            assert!(!W::wait(&word, 1, Some(deadline)), "{}", W::NAME);
            assert!(Instant::now() >= deadline, "{} returned before its deadline", W::NAME);
            self.0.push(W::NAME);
        }
    }

    #[test]
    fn every_available_policy_waits_and_times_out() {
        let mut v = EveryAvailable(Vec::new());
        visit_policies(&mut v);
        for always in [
            "spin",
            "pause",
            "idiv",
            "fdiv",
            "cas",
            "miss",
            "backoff",
            "yield",
            "futex",
            "spin-park",
            "spin-yield-park",
        ] {
            assert!(v.0.contains(&always), "{always} must run everywhere");
        }
    }

    struct WokenByAnotherThread;
    impl PolicyVisitor for WokenByAnotherThread {
        fn visit<W: Wait>(&mut self) {
            if W::availability().is_err() {
                return;
            }
            let word = Arc::new(AtomicU32::new(0));
            let waiter = {
                let word = word.clone();
                std::thread::spawn(move || {
                    while word.load(Ordering::Acquire) == 0 {
                        W::wait(&word, 0, None);
                    }
                })
            };
            std::thread::sleep(Duration::from_millis(2));
            word.store(1, Ordering::Release);
            W::wake_all(&word);
            waiter.join().unwrap();
        }
    }

    #[test]
    fn every_available_policy_sees_a_change_made_by_another_thread() {
        visit_policies(&mut WokenByAnotherThread);
    }

    #[test]
    fn names_are_unique_and_only_sleepers_sleep() {
        let all = policies();
        let mut names: Vec<_> = all.iter().map(|p| p.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len());
        let sleepers: Vec<_> = all.iter().filter(|p| p.may_sleep).map(|p| p.name).collect();
        assert_eq!(sleepers, ["futex", "spin-park", "spin-yield-park", "pause-yield-park"]);
    }

    #[test]
    fn unavailable_policies_name_the_missing_feature() {
        for p in policies() {
            if let Err(e) = p.availability {
                assert_eq!(e.policy, p.name);
                assert!(e.to_string().contains(e.needs));
            }
        }
    }
}
