use super::wait::WAKING_PAUSES;
use super::*;
use crate::sys::futex::FutexWait;
use crate::wait::{Episode, Step};
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
        assert_eq!(lock.await_waker(seen, &mut episode), Step::Exhausted, "{}: spent, it naps at each look", W::NAME);
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
            let _never = crate::testing::never_starve();
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
    let _never = crate::testing::never_starve();
    let ok = std::thread::scope(|s| {
        lock.lock();
        s.spawn(|| {
            ROLE.with(|role| role.set(Role::WokenThenSpins));
            let _never = crate::testing::never_starve();
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
            let _never = crate::testing::never_starve();
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
            let _never = crate::testing::never_starve();
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
