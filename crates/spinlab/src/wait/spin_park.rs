#![cfg_attr(loom, allow(dead_code, unused_imports))]
//! Spin, then park: spin with the CPU's hint for a time budget, then sleep on the futex.
//!
//! The budget is a time, not an iteration count, because the cost of one `pause` differs by
//! more than ten times between CPUs (about 10 cycles on Zen 2, about 140 on Skylake). The
//! number of iterations that fills the budget comes from timing the loop body once on this
//! machine. The default budget, 4 µs, is a few times a futex wake-to-run latency on current
//! Linux: spinning longer than a sleep would cost buys nothing (the competitive argument),
//! and most short critical sections end well within it.

use super::{Episode, Wait};
use crate::sync::{self, AtomicU32};

/// Spin with `pause` for `BUDGET_NS` nanoseconds, then sleep on the futex.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpinPark<const BUDGET_NS: u32 = 4000>;

impl<const BUDGET_NS: u32> SpinPark<BUDGET_NS> {
    /// Spin iterations that fill the budget on this machine.
    #[inline]
    pub fn budget_iterations() -> u32 {
        #[cfg(not(loom))]
        {
            iterations_for(BUDGET_NS, calibration::ns_per_iteration())
        }
        // Loom has no clock: two iterations exercise both the spin and the sleep paths.
        #[cfg(loom)]
        {
            2
        }
    }
}

/// Iterations of `ns_per_iteration` that fit into `budget_ns` (at least one).
pub(crate) fn iterations_for(budget_ns: u32, ns_per_iteration: f64) -> u32 {
    let n = budget_ns as f64 / ns_per_iteration.max(0.01);
    (n as u32).max(1)
}

impl<const BUDGET_NS: u32> Wait for SpinPark<BUDGET_NS> {
    const NAME: &'static str = "spin-park";
    const MAY_SLEEP: bool = true;
    #[inline]
    fn relax(_: &AtomicU32, _: u32, episode: &mut Episode) -> bool {
        if episode.iterations() >= Self::budget_iterations() {
            return false;
        }
        sync::cpu_relax();
        true
    }
}

/// Spin-park that also offers the CPU: like [`SpinPark`], but every
/// [`YIELD_EVERY_NS`](SpinYieldPark::YIELD_EVERY_NS) of spinning it calls `sched_yield`.
///
/// With no other thread runnable on the waiter's CPU the yield returns at once and the policy
/// behaves as spin-park. When threads outnumber CPUs it lets a thread on the same CPU run,
/// the lock holder perhaps, instead of spinning a whole budget against it; that also turns
/// the scheduler's long time slices into short turns, which is what keeps a barging lock fair
/// when oversubscribed (parking_lot's waiters yield for the same reason).
#[derive(Debug, Clone, Copy, Default)]
pub struct SpinYieldPark<const BUDGET_NS: u32 = 4000>;

impl<const BUDGET_NS: u32> SpinYieldPark<BUDGET_NS> {
    /// Spinning between two yields, in nanoseconds.
    pub const YIELD_EVERY_NS: u32 = 1000;

    #[inline]
    fn yield_every() -> u32 {
        #[cfg(not(loom))]
        {
            iterations_for(Self::YIELD_EVERY_NS, calibration::ns_per_iteration())
        }
        #[cfg(loom)]
        {
            1
        }
    }
}

impl<const BUDGET_NS: u32> Wait for SpinYieldPark<BUDGET_NS> {
    const NAME: &'static str = "spin-yield-park";
    const MAY_SLEEP: bool = true;
    #[inline]
    fn relax(_: &AtomicU32, _: u32, episode: &mut Episode) -> bool {
        let done = episode.iterations();
        if done >= SpinPark::<BUDGET_NS>::budget_iterations() {
            return false;
        }
        if (done + 1).is_multiple_of(Self::yield_every()) {
            sync::yield_now();
        } else {
            sync::cpu_relax();
        }
        true
    }

    /// Spin-park's body: the same budget, every iteration a pause.
    #[inline]
    fn relax_running(word: &AtomicU32, current: u32, episode: &mut Episode) -> bool {
        SpinPark::<BUDGET_NS>::relax(word, current, episode)
    }
}

/// A yield that comes back sooner than this found nothing else to run on its CPU: a yield
/// that runs another thread and comes back takes a context switch each way, several times
/// this.
const QUICK_YIELD_NS: u64 = 1000;
/// The `pause` spell that follows such a yield, and how many yields of the budget it uses up:
/// with every yield quick and the line quiet, the waiter sleeps after 13 yields and spells.
const SPELL_NS: u32 = 2000;
const SPELL_YIELDS: u32 = 4;

/// Pause briefly, offer the CPU, then sleep: the shape of parking_lot's spin-wait, with
/// budgets chosen as below (docs/design.md, "Wait policies").
///
/// - **Pause for `SPIN_NS`** (100 ns). About the time a release takes to reach a waiter that is
///   running on another core (one or two cache-line transfers). A waiter that has not seen the
///   release by then waits for a holder still in its critical section, or not running.
/// - **Then `sched_yield`, `YIELDS` times** (64), with a look after each. With threads waiting
///   on the same CPU, each yield lets one of them run: the holder, perhaps, or a waiter that
///   takes the lock when it comes free. Every thread stays runnable, so a CPU whose threads
///   are pinned to it never idles while they wait.
/// - **A yield that comes back at once, to a line nobody wrote meanwhile, is followed by 2 µs
///   of `pause`**, a look at each, counted as four more yields. Nothing else wanted the CPU
///   (the user-space reading of the Linux mutex's rule, spin while nobody needs the CPU), and
///   the holder is inside a critical section that writes nothing to the lock: a waiter inside
///   `sched_yield` when it ends would answer late, and the releaser take the lock back first.
///   The look after the yield is timed to tell: if it had to fetch the line, the holder has
///   released and retaken the lock meanwhile, running its sections back to back, and each look
///   of a spell would take the line from it; the waiter yields again instead, one look a yield.
/// - **Then sleep on the futex.**
///
/// Every waiter may spin at once ([`Wait::CROWD_SPINS`]): none keeps its CPU from a thread
/// that needs it for more than a few looks.
#[derive(Debug, Clone, Copy, Default)]
pub struct PauseYieldPark<const SPIN_NS: u32 = 100, const YIELDS: u32 = 64>;

impl<const SPIN_NS: u32, const YIELDS: u32> PauseYieldPark<SPIN_NS, YIELDS> {
    /// The policy's loop body, with the yield given: `yield_cpu` offers the CPU and says
    /// whether it came back at once (tests pass a yield that answers as they choose).
    #[inline]
    fn relax_yielding(
        episode: &mut Episode,
        look_fetched: Option<impl FnOnce() -> bool>,
        yield_cpu: impl FnOnce() -> bool,
    ) -> bool {
        if episode.iterations() < SpinPark::<SPIN_NS>::budget_iterations() {
            sync::cpu_relax();
            return true;
        }
        if episode.spell > 0 {
            sync::cpu_relax();
            episode.spell -= 1;
            return true;
        }
        if episode.yields >= Self::yields() {
            return false;
        }
        episode.yields += 1;
        // The first look after a quick yield, timed: a holder that wrote the line while this
        // thread was away takes the lock back as soon as it frees it, and a spell's looks
        // would only take the line from it.
        if yield_cpu() && !look_fetched.is_some_and(|fetched| fetched()) {
            episode.spell = SpinPark::<SPELL_NS>::budget_iterations();
            episode.yields += SPELL_YIELDS;
        }
        true
    }

    /// Yields before the waiter sleeps. Loom explores every interleaving of each yield, so
    /// there one stands for all of them.
    #[inline]
    fn yields() -> u32 {
        if cfg!(loom) {
            1
        } else {
            YIELDS
        }
    }
}

impl<const SPIN_NS: u32, const YIELDS: u32> Wait for PauseYieldPark<SPIN_NS, YIELDS> {
    const NAME: &'static str = "pause-yield-park";
    const MAY_SLEEP: bool = true;
    const CROWD_SPINS: bool = true;
    #[inline]
    fn relax(word: &AtomicU32, _: u32, episode: &mut Episode) -> bool {
        Self::relax_yielding(episode, Some(|| look_fetched(word)), || sync::yield_was_quick(QUICK_YIELD_NS))
    }

    /// Every yield replaced by the spell of pauses that follows a yield that came back at
    /// once: the same budget.
    #[inline]
    fn relax_running(_: &AtomicU32, _: u32, episode: &mut Episode) -> bool {
        Self::relax_yielding(episode, None::<fn() -> bool>, || true)
    }
}

/// Whether a look at `word` had to fetch its line from another CPU: another thread wrote the
/// word since this one last read it (the holder released and took the lock again, say), and
/// the holder's next write must then take the line back, a transfer on its own path. Timed
/// ([`tsc::timed_load`](crate::sys::tsc::timed_load)) against a look that hits in this CPU's
/// cache: more than twice as long is a fetch. `false` where loads cannot be timed, and under
/// loom.
#[inline]
fn look_fetched(word: &AtomicU32) -> bool {
    #[cfg(not(loom))]
    {
        crate::sys::tsc::timed_load(word).is_some_and(|ticks| ticks > 2 * calibration::hit_ticks())
    }
    #[cfg(loom)]
    {
        let _ = word;
        false
    }
}

#[cfg(not(loom))]
pub(crate) mod calibration {
    use crate::sys::measured::MeasuredNumber;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Instant;

    /// Counter ticks of a timed load that hits in this CPU's cache
    /// ([`tsc::timed_load`](crate::sys::tsc::timed_load)), measured once: the median of 31
    /// loads of a word nobody else touches, after one that brings it in.
    pub fn hit_ticks() -> u64 {
        static TICKS: MeasuredNumber = MeasuredNumber::new();
        TICKS.get(|| {
            let word = AtomicU32::new(0);
            let _ = crate::sys::tsc::timed_load(&word);
            let mut ticks: Vec<u64> = (0..31).filter_map(|_| crate::sys::tsc::timed_load(&word)).collect();
            ticks.sort_unstable();
            ticks.get(ticks.len() / 2).copied().unwrap_or(u64::MAX / 2)
        })
    }

    /// The cost of one spin-phase iteration (a re-read and `pause`), measured once: the
    /// fastest of five timed runs of 20 000 iterations, since preemption can only make a run
    /// slower. At least 0.01 ns.
    pub fn ns_per_iteration() -> f64 {
        static NS: MeasuredNumber = MeasuredNumber::new();
        f64::from_bits(NS.get(|| {
            let word = AtomicU32::new(0);
            let mut best = f64::MAX;
            for _ in 0..5 {
                let start = Instant::now();
                for _ in 0..20_000 {
                    if word.load(Ordering::Relaxed) != 0 {
                        break;
                    }
                    core::hint::spin_loop();
                }
                best = best.min(start.elapsed().as_nanos() as f64 / 20_000.0);
            }
            best.max(0.01).to_bits()
        }))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn budget_scales_with_the_measured_iteration_cost() {
        assert_eq!(iterations_for(4000, 1.0), 4000);
        assert_eq!(iterations_for(4000, 40.0), 100);
        assert_eq!(iterations_for(10, 1000.0), 1, "at least one iteration");
        let ns = calibration::ns_per_iteration();
        assert!(ns > 0.0 && ns < 10_000.0, "{ns} ns per pause iteration");
        assert!(SpinPark::<8000>::budget_iterations() >= SpinPark::<4000>::budget_iterations());
    }

    /// Counts the steps a waiter runs before its policy sends it to sleep.
    fn steps_before_sleep<W: Wait>() -> u32 {
        steps_until_sleep(W::NAME, W::step)
    }

    /// Counts the steps of `step`, a policy's [`Wait::step`] or [`Wait::step_running`],
    /// before it says sleep.
    fn steps_until_sleep(policy: &str, step: fn(&AtomicU32, u32, &mut Episode) -> crate::wait::Step) -> u32 {
        let word = AtomicU32::new(1);
        let mut episode = Episode::new(None);
        let mut steps = 0;
        while step(&word, 1, &mut episode) == crate::wait::Step::Continue {
            steps += 1;
            assert!(steps < 10_000_000, "{policy} never sleeps");
        }
        steps
    }

    #[test]
    fn pause_yield_park_pauses_for_its_budget_then_yields_then_sleeps() {
        let pauses = SpinPark::<100>::budget_iterations();
        // Real yields may come back at once or not (the next test covers both), so the
        // budget with yields is counted there.
        assert!(steps_before_sleep::<PauseYieldPark>() >= pauses + 13);
        assert_eq!(steps_before_sleep::<PauseYieldPark<1000, 0>>(), SpinPark::<1000>::budget_iterations());
        // A fresh spin phase after a sleep gets the whole budget again.
        let word = AtomicU32::new(1);
        let mut episode = Episode::new(None);
        while PauseYieldPark::<100, 2>::step(&word, 1, &mut episode) == crate::wait::Step::Continue {}
        episode.restart_spinning();
        assert_eq!(PauseYieldPark::<100, 2>::step(&word, 1, &mut episode), crate::wait::Step::Continue);
    }

    /// Runs `PauseYieldPark`'s body until it says sleep, with every yield answering `quick`;
    /// returns the steps and the yields.
    fn steps_and_yields<const YIELDS: u32>(quick: bool) -> (u32, u32) {
        let mut episode = Episode::new(None);
        let (mut steps, mut yields) = (0, 0);
        while PauseYieldPark::<100, YIELDS>::relax_yielding(&mut episode, None::<fn() -> bool>, || {
            yields += 1;
            quick
        }) {
            episode.iterations += 1;
            steps += 1;
        }
        (steps, yields)
    }

    #[test]
    fn pause_yield_park_pauses_after_a_yield_that_came_back_at_once() {
        let pauses = SpinPark::<100>::budget_iterations();
        let spell = SpinPark::<SPELL_NS>::budget_iterations();
        // Yields that ran something else: the whole budget is yields, with no pause between.
        assert_eq!(steps_and_yields::<64>(false), (pauses + 64, 64));
        assert_eq!(steps_and_yields::<3>(false), (pauses + 3, 3));
        // Yields that came back at once: each buys a spell and uses five of the 64, so the
        // thirteenth is the last (60 used before it).
        assert_eq!(steps_and_yields::<64>(true), (pauses + 13 + 13 * spell, 13));
        assert_eq!(steps_and_yields::<3>(true), (pauses + 1 + spell, 1));
        assert!(spell > 1, "a 2 µs spell is more than one look");
    }

    /// The look right after a quick yield is timed. If it found the line where this thread
    /// left it, a spell of one look per pause follows; if the line had moved (the holder
    /// wrote it meanwhile), none does, and the next look is the next yield's. Only the look
    /// after a yield is timed, and only a spell spends four more yields of the budget.
    #[test]
    fn a_spell_follows_a_quick_yield_only_to_a_line_nobody_wrote() {
        let spell = SpinPark::<SPELL_NS>::budget_iterations();
        assert!(spell > 20, "a 2 µs spell is {spell} pauses");
        let mut episode = Episode::new(None);
        episode.iterations = SpinPark::<100>::budget_iterations();
        let untimed = Some(|| panic!("only the look after a yield is timed"));
        let mut spells = Vec::new();
        for moved in [false, true, true, false] {
            let mut yielded = false;
            assert!(PauseYieldPark::<100, 64>::relax_yielding(&mut episode, Some(|| moved), || {
                yielded = true;
                true
            }));
            assert!(yielded);
            let mut pauses = 0;
            while episode.spell > 0 {
                assert!(PauseYieldPark::<100, 64>::relax_yielding(&mut episode, untimed, || panic!(
                    "a yield mid-spell"
                )));
                pauses += 1;
            }
            spells.push((pauses, episode.yields));
        }
        assert_eq!(spells, [(spell, 5), (0, 6), (0, 7), (spell, 12)]);
    }

    /// The running body keeps the budget and never yields: `pause-yield-park` pauses a spell
    /// wherever it would yield (as after a yield that came back at once, so the count is
    /// exact), and `spin-yield-park` pauses as `spin-park` does.
    #[test]
    fn running_steps_keep_the_budget_and_pause_where_the_policy_would_yield() {
        fn running_steps<W: Wait>() -> u32 {
            steps_until_sleep(W::NAME, W::step_running)
        }
        let pauses = SpinPark::<100>::budget_iterations();
        let spell = SpinPark::<SPELL_NS>::budget_iterations();
        assert_eq!(running_steps::<PauseYieldPark>(), pauses + 13 + 13 * spell);
        assert_eq!(running_steps::<SpinYieldPark>(), SpinPark::<4000>::budget_iterations());
        assert_eq!(running_steps::<crate::wait::Futex>(), 0);
    }
}
