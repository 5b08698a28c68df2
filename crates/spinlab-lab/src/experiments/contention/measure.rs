//! The measurement: repetitions of every lock at one configuration, interleaved, and the
//! uncontended lock/unlock pair; a repetition's window, drain and collapse.

use super::{COLLAPSE_DRAIN, NO_LOCK};
use crate::error::LabError;
use crate::experiments::floor;
use crate::experiments::lab::Lab;
use crate::lockbox::LockBox;
use crate::measure::clock::{cpu_clock_s, now, this_thread_cpu_clock, thread_cpu_s};
use crate::measure::histogram::Histogram;
use crate::measure::pin::{pin_or_die, with_pinned};
use crate::measure::stats::{jain, population_rsd_pct};
use crate::measure::team::{spawn_team, StartLine, MEASURING, STARTING, STOPPED};
use crate::measure::work::{spin, SharedLines};
use crate::measure::{self, interleave, interleave_stoppable, Progress, Rep, StoppingRule, Summary, Taken};
use crate::select::LockChoice;
use spinlab::sys::topology::{self, Level};
use spinlab::CachePadded;
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Lock/unlock pairs per batch of the uncontended measurement, and batches per repetition.
pub(super) const UNCONTENDED_BATCH: u64 = 10_000;
pub(super) const UNCONTENDED_BATCHES: usize = 21;

/// One repetition's figures.
pub(super) struct RepResult {
    pub(super) elapsed_s: f64,
    /// From the stop signal until every thread had finished its last acquisition and left.
    pub(super) drain_s: f64,
    /// From the opening of the start line until the last thread had left: every thread's CPU
    /// time falls inside it.
    pub(super) ran_s: f64,
    pub(super) per_thread: Vec<u64>,
    /// Counted acquisitions that took the lock from another thread, all threads together.
    pub(super) handovers: u64,
    /// Of those, the ones from a thread in the same group at each level of the locks'
    /// topology ([`Level::ALL`]'s order), by the CPUs the two threads were pinned to.
    pub(super) in_group: [u64; 3],
    /// CPU time each thread used, from the start line until it left.
    pub(super) per_thread_cpu_s: Vec<f64>,
    /// Distinct CPUs the threads were pinned to.
    pub(super) cpus_used: usize,
    pub(super) wait: Histogram,
    pub(super) hold: Histogram,
    pub(super) lost_updates: u64,
    /// Every acquisition each thread made, counted or not (outside the window), and how many
    /// of them, all threads together, took the lock from another thread.
    pub(super) made_per_thread: Vec<u64>,
    pub(super) made_handovers: u64,
}

/// Everything measured for one lock at one configuration, over all repetitions.
#[derive(Default)]
pub(super) struct Totals {
    pub(super) per_thread: Vec<u64>,
    pub(super) jain: Vec<f64>,
    pub(super) rsd_pct: Vec<f64>,
    pub(super) cpu_busy_pct: Vec<f64>,
    pub(super) jain_cpu_time: Vec<f64>,
    /// Each repetition's hand-overs, as a percentage of its acquisitions.
    pub(super) handovers_pct: Vec<f64>,
    /// Each repetition's hand-overs within a group at each level ([`Level::ALL`]'s order), as
    /// a percentage of its hand-overs.
    pub(super) in_group_pct: [Vec<f64>; 3],
    pub(super) wait: Histogram,
    pub(super) hold: Histogram,
    /// Each repetition's longest wait and longest hold, in ticks: the maxima over the whole run
    /// are one sample each, these give them an interval.
    pub(super) rep_max_wait: Vec<f64>,
    pub(super) rep_max_hold: Vec<f64>,
    pub(super) lost_updates: u64,
    /// The longest drain of any repetition, and whether one of them showed a collapse.
    pub(super) max_drain_s: f64,
    pub(super) collapsed: bool,
}

pub(super) struct Setting<'a> {
    pub(super) cpus: &'a [usize],
    pub(super) duration: Duration,
    pub(super) cs_iterations: u64,
    pub(super) ncs_iterations: u64,
    pub(super) lines: &'a SharedLines,
    pub(super) overhead_ticks: u64,
}

/// What one thread counted in one repetition.
pub(super) struct ThreadTally {
    pub(super) acquisitions: u64,
    /// Counted acquisitions that took the lock from another thread ([`SharedLines::touch_as`]).
    pub(super) handovers: u64,
    /// Of those, the ones from a thread of its own group, per level ([`Level::ALL`]'s order).
    pub(super) in_group: [u64; 3],
    /// Every acquisition it made, counted or not (those that ended before the window opened,
    /// or after it closed), and those of them that took the lock from another thread.
    pub(super) made: u64,
    pub(super) made_handovers: u64,
    /// Its CPU time when it left, all of it (the window's share is taken off by the caller).
    pub(super) cpu_s: f64,
    pub(super) wait: Histogram,
    pub(super) hold: Histogram,
}

/// One repetition: every thread of `s` takes `lock` in a loop, or, with no lock, runs the
/// same work (the critical section's and the one outside it) without one, so that what it
/// counts is how evenly the scheduler alone shared the CPUs out.
///
/// The measured window opens only once every thread is past the start line and in its loop.
/// The line wakes its sleeping threads together, and they leave it one at a time through its
/// mutex: with several threads on each CPU the last leaves it time slices after the first,
/// and a window opened at the line would count that stagger as the scheduler's unfairness
/// (docs/contention.md, "The scheduler's own fairness").
pub(super) fn contended_rep(lock: Option<&LockBox>, s: &Setting<'_>) -> Result<RepResult, LabError> {
    let threads = s.cpus.len();
    let phase = CachePadded::new(AtomicU8::new(STARTING));
    let in_loop = CachePadded::new(AtomicUsize::new(0));
    // Each thread's CPU-time clock, which the main thread reads as it opens the window.
    let clocks: Vec<OnceLock<libc::clockid_t>> = (0..threads).map(|_| OnceLock::new()).collect();
    let line = StartLine::new(threads);
    let groups = groups_of(s.cpus);
    s.lines.reset();
    let worker = |i: usize| {
        pin_or_die(s.cpus[i]);
        // Below THREADS_CEILING, far below u16::MAX.
        let me = u16::try_from(i).expect("a thread number fits 16 bits");
        let mut tally = ThreadTally {
            acquisitions: 0,
            handovers: 0,
            in_group: [0; 3],
            made: 0,
            made_handovers: 0,
            cpu_s: 0.0,
            wait: Histogram::default(),
            hold: Histogram::default(),
        };
        let mut seed = i as u64 + 1;
        if !line.arrive() {
            return None;
        }
        clocks[i].get_or_init(this_thread_cpu_clock);
        // Release: the main thread that sees every thread here finds every clock.
        in_loop.fetch_add(1, Release);
        seed = take_turns(lock, s, (me, &groups), &phase, &mut tally, seed);
        // All it used; the main thread takes off what it had used when the window opened.
        tally.cpu_s = thread_cpu_s();
        black_box(seed);
        Some(tally)
    };
    let (elapsed_s, drain_s, ran_s, tallies, cpu_at_open) = std::thread::scope(|scope| {
        let handles = spawn_team(scope, &line, threads, &worker)?;
        line.open();
        while in_loop.load(Acquire) < threads {
            std::thread::sleep(Duration::from_micros(50));
        }
        // Every thread is running its loop, so every clock is live and set. The CPU time each
        // thread used until now falls outside [opened, joined].
        let opened = Instant::now();
        let cpu_at_open: Vec<f64> =
            clocks.iter().map(|c| cpu_clock_s(*c.get().expect("each thread set its clock"))).collect();
        phase.store(MEASURING, Relaxed);
        std::thread::sleep(s.duration);
        phase.store(STOPPED, Relaxed);
        let elapsed = opened.elapsed().as_secs_f64();
        let stopped = Instant::now();
        let tallies: Vec<ThreadTally> = handles
            .into_iter()
            .map(|h| h.join().expect("a contention thread panicked").expect("the start line was opened"))
            .collect();
        let ran = opened.elapsed().as_secs_f64();
        Ok::<_, LabError>((elapsed, stopped.elapsed().as_secs_f64(), ran, tallies, cpu_at_open))
    })?;
    Ok(RepResult::gather(lock.is_some(), s, (elapsed_s, drain_s, ran_s), tallies, cpu_at_open))
}

/// Each thread's group at every level of the locks' topology ([`Level::ALL`]'s order), by
/// the CPU it is pinned to: the groups the topology-aware locks see it in.
fn groups_of(cpus: &[usize]) -> Vec<[usize; 3]> {
    let model = topology::machine();
    cpus.iter().map(|&cpu| Level::ALL.map(|level| model.group_of(level, cpu))).collect()
}

/// One thread's loop until the stop: takes `lock` (or, with none, runs the same work) and
/// counts into `tally` what falls inside the window; returns the work's running value.
/// `me` is the thread's number, `groups` every thread's groups ([`groups_of`]).
fn take_turns(
    lock: Option<&LockBox>,
    s: &Setting<'_>,
    (me, groups): (u16, &[[usize; 3]]),
    phase: &AtomicU8,
    tally: &mut ThreadTally,
    mut seed: u64,
) -> u64 {
    while phase.load(Relaxed) != STOPPED {
        // An acquisition counts if it ended inside the window: the phase is read again
        // after it, so one that began before the window opened and ended after counts (a
        // hand-over it made is the window's), and one that ends after the stop does not
        // (threads queued behind a slow hand-off would otherwise inflate the count after
        // the clock stopped).
        let Some(lock) = lock else {
            seed = spin(s.ncs_iterations, spin(s.cs_iterations, seed));
            match phase.load(Relaxed) {
                MEASURING => tally.acquisitions += 1,
                STOPPED => break,
                _ => {}
            }
            continue;
        };
        let asked = now();
        lock.lock();
        let acquired = now();
        let handed_over = s.lines.touch_as(me);
        seed = spin(s.cs_iterations, seed);
        let releasing = now();
        // SAFETY: this thread acquired the lock just above.
        unsafe { lock.unlock() };
        tally.made += 1;
        tally.made_handovers += u64::from(handed_over.is_some());
        match phase.load(Relaxed) {
            MEASURING => {}
            STOPPED => break,
            _ => {
                seed = spin(s.ncs_iterations, seed);
                continue;
            }
        }
        tally.wait.record(acquired.wrapping_sub(asked).saturating_sub(s.overhead_ticks));
        tally.hold.record(releasing.wrapping_sub(acquired).saturating_sub(s.overhead_ticks));
        tally.acquisitions += 1;
        if let Some(from) = handed_over {
            tally.handovers += 1;
            // After the release: the comparison stays out of the critical section.
            let (mine, theirs) = (&groups[usize::from(me)], &groups[usize::from(from)]);
            for (count, (a, b)) in tally.in_group.iter_mut().zip(mine.iter().zip(theirs)) {
                *count += u64::from(a == b);
            }
        }
        seed = spin(s.ncs_iterations, seed);
    }
    seed
}

impl RepResult {
    /// The repetition's figures from its threads' tallies (`cpu_at_open`: each thread's CPU
    /// time as the window opened), timed `(elapsed_s, drain_s, ran_s)`.
    fn gather(
        locked: bool,
        s: &Setting<'_>,
        (elapsed_s, drain_s, ran_s): (f64, f64, f64),
        tallies: Vec<ThreadTally>,
        cpu_at_open: Vec<f64>,
    ) -> RepResult {
        let threads = s.cpus.len();
        let mut r = RepResult {
            elapsed_s,
            drain_s,
            ran_s,
            per_thread: Vec::with_capacity(threads),
            handovers: 0,
            in_group: [0; 3],
            per_thread_cpu_s: Vec::with_capacity(threads),
            cpus_used: distinct_cpus(s.cpus),
            wait: Histogram::default(),
            hold: Histogram::default(),
            lost_updates: 0,
            made_per_thread: Vec::with_capacity(threads),
            made_handovers: 0,
        };
        for (tally, at_open) in tallies.into_iter().zip(cpu_at_open) {
            r.per_thread.push(tally.acquisitions);
            r.handovers += tally.handovers;
            for (sum, count) in r.in_group.iter_mut().zip(tally.in_group) {
                *sum += count;
            }
            r.per_thread_cpu_s.push(tally.cpu_s - at_open);
            r.made_per_thread.push(tally.made);
            r.made_handovers += tally.made_handovers;
            r.wait.merge(&tally.wait);
            r.hold.merge(&tally.hold);
        }
        // Every acquisition touched the lines, counted or not: a mutual-exclusion failure shows as
        // fewer touches than acquisitions.
        if locked {
            let made: u64 = r.made_per_thread.iter().sum();
            r.lost_updates = s.lines.total().map_or(0, |seen| made.saturating_sub(seen));
        }
        r
    }
}

/// How many different CPUs are in `cpus`.
fn distinct_cpus(cpus: &[usize]) -> usize {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    sorted.len()
}

/// Nanoseconds per uncontended lock/unlock pair, one repetition: the median of
/// `UNCONTENDED_BATCHES` batches of `UNCONTENDED_BATCH` pairs, so that an interrupt or a
/// preemption spoils one batch rather than the repetition. `pairs(n)` runs `n` pairs in one
/// loop compiled for the lock (`RawLockOps::pairs`), as seed 003 timed its locks: through the
/// per-operation function pointers the contention loop uses, two indirect calls per pair hid
/// half of a read-modify-write's cost (the fair lock measured 1.04-1.17 times the spinlock
/// that way, 2.0 times inlined).
pub(super) fn median_pair_ns(lab: &Lab, pairs: impl Fn(u64)) -> f64 {
    let mut batches: Vec<u64> = (0..UNCONTENDED_BATCHES)
        .map(|_| {
            let batch_started = now();
            pairs(UNCONTENDED_BATCH);
            now().wrapping_sub(batch_started).saturating_sub(lab.clock.overhead_ticks)
        })
        .collect();
    batches.sort_unstable();
    lab.clock.ns(batches[batches.len() / 2] as f64) / UNCONTENDED_BATCH as f64
}

/// One lock at one configuration: its throughput per repetition and what its threads counted.
pub(super) struct Measured {
    pub(super) series: measure::Series,
    pub(super) totals: Totals,
}

impl Totals {
    /// Adds one measured repetition; returns its throughput for the stopping rule, as the
    /// last value once a repetition has collapsed.
    pub(super) fn add(&mut self, r: &RepResult, collapse_after_s: f64) -> Taken {
        self.max_drain_s = self.max_drain_s.max(r.drain_s);
        self.collapsed |= r.drain_s > collapse_after_s;
        for (sum, c) in self.per_thread.iter_mut().zip(&r.per_thread) {
            *sum += c;
        }
        let shares: Vec<f64> = r.per_thread.iter().map(|&c| c as f64).collect();
        self.jain.push(jain(&shares));
        self.rsd_pct.push(population_rsd_pct(&shares));
        let available_s = r.ran_s * r.cpus_used as f64;
        self.cpu_busy_pct.push(100.0 * r.per_thread_cpu_s.iter().sum::<f64>() / available_s);
        self.jain_cpu_time.push(jain(&r.per_thread_cpu_s));
        let acquisitions = r.per_thread.iter().sum::<u64>();
        if acquisitions > 0 {
            self.handovers_pct.push(100.0 * r.handovers as f64 / acquisitions as f64);
        }
        if r.handovers > 0 {
            for (pcts, count) in self.in_group_pct.iter_mut().zip(r.in_group) {
                pcts.push(100.0 * count as f64 / r.handovers as f64);
            }
        }
        self.wait.merge(&r.wait);
        self.hold.merge(&r.hold);
        if let (Some(wait), Some(hold)) = (r.wait.max(), r.hold.max()) {
            self.rep_max_wait.push(wait as f64);
            self.rep_max_hold.push(hold as f64);
        }
        self.lost_updates += r.lost_updates;
        let throughput = acquisitions as f64 / r.elapsed_s;
        if self.collapsed {
            Taken::Last(throughput)
        } else {
            Taken::Value(throughput)
        }
    }
}

/// The floor under every uncontended lock/unlock pair: one atomic read-modify-write that takes
/// a word (Acquire) and a plain store that gives it back (Release), what a test-and-set or
/// ticket spin lock does and no lock can do with less. Each read-modify-write a lock may take
/// with is timed (x86's `cmpxchg`, `xchg` and `xadd` cost differently), and the floor is the
/// cheapest. Its own padded word, timed as the locks are.
#[derive(Clone, Copy)]
pub(super) enum UncontendedFloor {
    CompareAndSwap,
    Swap,
    FetchAdd,
}

impl UncontendedFloor {
    const ALL: [UncontendedFloor; 3] =
        [UncontendedFloor::CompareAndSwap, UncontendedFloor::Swap, UncontendedFloor::FetchAdd];

    pub(super) fn pairs(self, word: &AtomicU32, n: u64) {
        for _ in 0..n {
            // As `RawLockOps::pairs`: the word's address passes through `black_box` each time.
            let word = black_box(word);
            // Nothing else touches the word, so each of these takes it from 0.
            match self {
                UncontendedFloor::CompareAndSwap => drop(word.compare_exchange(0, 1, Acquire, Relaxed)),
                UncontendedFloor::Swap => drop(word.swap(1, Acquire)),
                UncontendedFloor::FetchAdd => drop(word.fetch_add(1, Acquire)),
            }
            word.store(0, Release);
        }
    }
}

/// How far below the floor an uncontended pair may time before it is flagged: identical
/// instructions time up to a few percent apart with the loop placed differently in the binary
/// (a lock's `xadd` and store against the floor's own loop of the same two instructions).
pub(super) const UNCONTENDED_SLACK: f64 = 0.05;

/// What the uncontended pass measured: each lock's pair, and the floor's in the same rounds.
pub(super) struct Uncontended {
    pub(super) locks: Vec<Option<Summary>>,
    /// The cheapest of the [`UncontendedFloor`] pairs.
    pub(super) floor: Option<Summary>,
    /// For each lock, why its pair is below the floor, when it is (`below_floor`).
    pub(super) below_floor: Vec<Option<String>>,
}

/// Table 3, on the home CPU: each lock's uncontended lock/unlock pair, in nanoseconds, with
/// the floors' ([`UncontendedFloor`]) as more subjects of the same interleaved rounds.
pub(super) fn measure_uncontended(
    instances: &[LockBox],
    rule: &StoppingRule,
    progress: &Progress,
    lab: &Lab,
) -> Result<Uncontended, LabError> {
    let word = CachePadded::new(AtomicU32::new(0));
    let subjects = instances.len() + UncontendedFloor::ALL.len();
    let series = with_pinned(lab.home_cpu(), || {
        interleave(subjects, rule, Some(progress), |i, _| {
            Ok(match instances.get(i) {
                // SAFETY: one thread measures at a time, and the lock is free between
                // measurements.
                Some(lock) => median_pair_ns(lab, |n| unsafe { lock.pairs(n) }),
                None => median_pair_ns(lab, |n| UncontendedFloor::ALL[i - instances.len()].pairs(&word, n)),
            })
        })
    })?;
    progress.inc();
    let mut summaries: Vec<Option<Summary>> = series.iter().map(|s| Summary::of(&s.samples)).collect();
    let floors = summaries.split_off(instances.len());
    let floor = floors.into_iter().flatten().min_by(|a, b| a.mean.total_cmp(&b.mean));
    let below_floor = summaries
        .iter()
        .map(|u| match (u, &floor) {
            (Some(u), Some(f)) => {
                floor::below_floor(u, f, "cost", UNCONTENDED_SLACK).map(|why| format!("uncontended: {why}"))
            }
            _ => None,
        })
        .collect();
    Ok(Uncontended { locks: summaries, floor, below_floor })
}

/// Every lock of `locks` at one setting, interleaved after one shared warm-up; a lock whose
/// threads collapse is not repeated further. The same threads with no lock are one more
/// subject of the rounds ([`Contended::no_lock`]).
pub(super) fn measure_contended(
    locks: &[&LockChoice],
    instances: &[LockBox],
    setting: &Setting<'_>,
    rule: &StoppingRule,
    progress: &Progress,
) -> Result<Contended, LabError> {
    let warmup = Setting { duration: (setting.duration / 4).max(Duration::from_millis(10)), ..*setting };
    let mut totals: Vec<Totals> =
        (0..=locks.len()).map(|_| Totals { per_thread: vec![0; setting.cpus.len()], ..Default::default() }).collect();
    let collapse_after_s = COLLAPSE_DRAIN.max(setting.duration).as_secs_f64();
    let mut series = interleave_stoppable(locks.len() + 1, rule, Some(progress), |i, rep| {
        let (name, lock) = match instances.get(i) {
            Some(lock) => (locks[i].name(), Some(lock)),
            None => (NO_LOCK, None),
        };
        progress.detail(&format!("{name}, {}", rep_label(rep)));
        let t = &mut totals[i];
        if rep == Rep::Warmup {
            let r = contended_rep(lock, &warmup)?;
            t.max_drain_s = t.max_drain_s.max(r.drain_s);
            t.collapsed = r.drain_s > collapse_after_s;
            return Ok(if t.collapsed { Taken::Last(f64::NAN) } else { Taken::Value(f64::NAN) });
        }
        let taken = t.add(&contended_rep(lock, setting)?, collapse_after_s);
        // With no lock the figure kept is the fairness, so the rounds go on until it is stable.
        Ok(match (lock, t.jain.last()) {
            (None, Some(&jain)) => Taken::Value(jain),
            _ => taken,
        })
    })?;
    let no_lock = totals.pop().expect("the no-lock subject");
    series.pop();
    let locks = series.into_iter().zip(totals).map(|(series, totals)| Measured { series, totals }).collect();
    Ok(Contended { locks, no_lock })
}

/// What one setting measured: each lock, and the same threads with no lock.
pub(super) struct Contended {
    pub(super) locks: Vec<Measured>,
    /// The threads running the loop's work with no lock, in the same rounds: the evenness
    /// the scheduler gives them by itself (`jain_no_lock`), which a lock that serves running
    /// threads cannot exceed.
    pub(super) no_lock: Totals,
}

pub(super) fn rep_label(rep: Rep) -> String {
    match rep {
        Rep::Warmup => "warm-up".to_string(),
        Rep::Measured(n) => format!("repetition {}", n + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 30 ms repetition on `cpus` with `cs_iterations` inside the lock and 10 outside.
    fn short_setting<'a>(cpus: &'a [usize], lines: &'a SharedLines, cs_iterations: u64) -> Setting<'a> {
        Setting {
            cpus,
            duration: Duration::from_millis(30),
            cs_iterations,
            ncs_iterations: 10,
            lines,
            overhead_ticks: 0,
        }
    }

    #[test]
    fn every_thread_but_the_first_to_acquire_counts_a_hand_over() {
        // Each thread that acquired at all took the lock from another at least once, except
        // the repetition's first holder; and no acquisition is more than one hand-over. Four
        // threads on the first CPU, so that the scheduler, not the lock, moves it between them.
        let lines = SharedLines::new(1);
        let cpus = [0; 4];
        let setting = short_setting(&cpus, &lines, 0);
        for name in ["ttas:spin", "ticket:spin-park", "std"] {
            let lock = LockBox::new(spinlab_registry::LOCKS.info(name).unwrap()).unwrap();
            let r = contended_rep(Some(&lock), &setting).unwrap();
            // Every acquisition touched the line once: the ones the window counted and the
            // ones it did not, each thread's counted ones among those it made.
            let made: u64 = r.made_per_thread.iter().sum();
            assert_eq!(lines.total(), Some(made), "{name}");
            assert!(r.per_thread.iter().zip(&r.made_per_thread).all(|(counted, made)| counted <= made), "{name}");
            assert!(r.handovers <= r.made_handovers, "{name}");
            // Over everything the repetition made (a window opened mid-run may count a
            // thread's retakes and not the hand-over before them).
            let acquired = r.made_per_thread.iter().filter(|&&c| c > 0).count() as u64;
            assert!(
                r.made_handovers + 1 >= acquired,
                "{name}: {} hand-overs, {acquired} threads acquired",
                r.made_handovers
            );
            assert!(r.made_handovers <= made, "{name}: {} hand-overs in {made}", r.made_handovers);
            assert_eq!(r.lost_updates, 0, "{name}");
        }
        // One thread never hands over.
        let alone = Setting { cpus: &cpus[..1], ..setting };
        let lock = LockBox::new(spinlab_registry::LOCKS.info("ttas:spin").unwrap()).unwrap();
        let r = contended_rep(Some(&lock), &alone).unwrap();
        assert!(r.per_thread[0] > 0);
        assert_eq!(r.handovers, 0);
    }

    #[test]
    fn a_hand_over_counts_in_group_exactly_where_the_two_threads_cpus_share_the_group() {
        // Threads on one CPU share its group at every level: every hand-over stays inside.
        let lines = SharedLines::new(1);
        let lock = LockBox::new(spinlab_registry::LOCKS.info("ticket:spin-park").unwrap()).unwrap();
        // Repetitions until one counts a hand-over: on one CPU the scheduler makes them, a
        // few per time slice, and other load on the CPU can leave a short window without one.
        let with_handovers = |cpus: &[usize]| {
            (0..50)
                .map(|_| contended_rep(Some(&lock), &short_setting(cpus, &lines, 0)).unwrap())
                .find(|r| r.handovers > 0)
                .expect("some repetition counts a hand-over")
        };
        let r = with_handovers(&[0; 3]);
        assert_eq!(r.in_group, [r.handovers; 3]);
        // Two threads on CPUs of different groups at a level never hand over inside a group
        // there, and inside one at every level where they share it.
        let model = topology::machine();
        let Some(other) = crate::measure::pin::allowed_cpus().into_iter().find(|&c| c != 0) else {
            return;
        };
        let r = with_handovers(&[0, other]);
        for (level, count) in Level::ALL.into_iter().zip(r.in_group) {
            let shared = model.group_of(level, 0) == model.group_of(level, other);
            assert_eq!(count, if shared { r.handovers } else { 0 }, "{level}");
        }
    }

    #[test]
    fn with_no_lock_the_threads_run_the_same_work_and_touch_nothing() {
        let lines = SharedLines::new(1);
        let cpus = [0; 3];
        let r = contended_rep(None, &short_setting(&cpus, &lines, 5)).unwrap();
        assert_eq!(lines.total(), Some(0), "no lock, no critical section's lines");
        assert_eq!((r.lost_updates, r.handovers), (0, 0));
        assert!(r.per_thread.iter().sum::<u64>() > 0, "{:?}", r.per_thread);
        assert_eq!(r.per_thread_cpu_s.len(), 3);
        assert!(r.per_thread_cpu_s.iter().all(|&s| s >= 0.0), "{:?}", r.per_thread_cpu_s);
        // One CPU, shared: the threads' CPU time within the window fits in it.
        assert!(r.per_thread_cpu_s.iter().sum::<f64>() <= r.ran_s + 0.005, "{:?} in {}", r.per_thread_cpu_s, r.ran_s);
    }
}
