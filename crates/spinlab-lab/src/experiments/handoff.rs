//! `spinlab run handoff`: seed 000 §V.D's responsiveness, measured directly. Two threads
//! pass a lock back and forth: each time, one holds it while the other is waiting in
//! `lock()`, releases it, and the other acquires it. `handoff_ns` is the time from the
//! release to the acquisition, per lock (and so per wait policy), read against the floor for
//! any hand-off between the same two CPUs: the hand-off of a bare cache line (a
//! test-and-test-and-set with nothing between its re-reads), which moves the line as often as
//! any lock's hand-off must, measured by the same code and stamps, interleaved with the locks
//! in the same invocation. A lock row below the floor by more than both intervals carries
//! `below_floor` (and the report says so under the figure).
//!
//! One hand-off, with the lock held by H and W about to wait:
//! 1. W waits until H has acquired the previous hand-off (so W cannot take the lock before it
//!    was handed over), announces that it is about to lock, and calls `lock()`.
//! 2. H sees the announcement, holds the lock `--hold-ns` longer (so that W is in its wait
//!    loop, or asleep, when the release comes), stamps the counter, and unlocks.
//! 3. W returns from `lock()`, stamps the counter: one `handoff_ns`; the roles swap.
//!
//! Both stamps are fenced counter reads, and the two directions are kept apart: W's and H's
//! counters may be offset by some nanoseconds, which adds to one direction what it takes from
//! the other, so a repetition's value is the mean of the two directions' medians.
//!
//! The hold time decides what is measured: a short one catches a spin-then-park policy still
//! spinning, a long one catches it asleep. Both are run by default.

use super::driver::one_run;
use super::lab::Lab;
use super::options::Common;
use super::settings::{smoke_locks, Length, Step};
use super::{floor, Experiment};
use crate::error::LabError;
use crate::lockbox::LockBox;
use crate::machine::Placement;
use crate::measure::clock::{fenced_now, fenced_overhead};
use crate::measure::partner::with_partner;
use crate::measure::pin::with_pinned;
use crate::measure::work::spin;
use crate::measure::{interleave, Clock, Series, Summary};
use crate::reading::plot::{self, Axis, Bar, Scale};
use crate::reading::{distinct_by, measured_as, Context, Panel};
use crate::results::format::{duration_words, number};
use crate::results::keys::{BELOW_FLOOR, LOCK, ORIGIN, PLACEMENT, WAIT};
use crate::results::rows::HandoffRow;
use crate::results::table::{col, Column};
use crate::results::{Row, Run};
use crate::select::{self, Bounds, LockChoice};
use clap::Args;
use spinlab::CachePadded;
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};
use std::sync::Barrier;
use std::time::Instant;

/// How long the releasing thread held the lock (the option's bounds are [`HOLD_NS`]).
pub const KEY_HOLD_NS: &str = "hold_ns";

/// Lock hand-off latency.
pub const HANDOFF_NS: &str = "handoff_ns";
/// The floor row's `lock`.
pub const FLOOR_LOCK: &str = "floor: bare line";
/// [`HANDOFF_NS`] over the floor's (a bare cache line handed over the same way).
pub const RATIO_TO_FLOOR: &str = "ratio_to_floor";

/// The locks measured when neither `--locks` nor `--waits` is given: TTAS over every policy
/// of seed 000 and the sleeping ones, spinlab's default, and the references.
pub const DEFAULT_LOCKS: &[&str] = &[
    "ttas:spin",
    "ttas:pause",
    "ttas:idiv",
    "ttas:fdiv",
    "ttas:cas",
    "ttas:miss",
    "ttas:backoff",
    "ttas:yield",
    "ttas:futex",
    "ttas:spin-park",
    "default",
    "std",
    "parking_lot",
    "pthread",
];

/// A hold-time list option's value.
#[derive(Clone, Debug)]
pub struct Holds(pub Vec<u64>);

/// `--hold-ns`: each hold up to 10 ms, paid once per hand-off.
pub const HOLD_NS: Bounds = Bounds::new(0, 10_000_000).unit(" ns (10 ms)");
/// `--handoffs`: at least one each way (a repetition's value averages the two directions,
/// which cancels the two CPUs' counter offset), up to a million per repetition.
pub const HANDOFFS: Bounds = Bounds::new(2, 1_000_000);

fn parse_holds(s: &str) -> Result<Holds, String> {
    let mut out = Vec::new();
    for item in select::split_list(s)? {
        let ns: u64 = HOLD_NS.parse(item)?;
        if !out.contains(&ns) {
            out.push(ns);
        }
    }
    Ok(Holds(out))
}

/// Options of `spinlab run handoff`.
#[derive(Args, Clone, Debug, Default)]
#[group(skip)]
pub struct Handoff {
    /// How long the holder keeps the lock once the other thread is waiting, in nanoseconds,
    /// comma-separated, each within [`HOLD_NS`] [default: 1000,50000: a short wait, and one
    /// long enough to sleep]
    #[arg(long, value_name = "LIST", value_parser = parse_holds, allow_hyphen_values = true,
          help = HOLD_NS.help("How long the holder keeps the lock once the other thread is waiting, in \
                               nanoseconds, comma-separated [default: 1000,50000: a short wait, and one long \
                               enough to sleep]"))]
    pub hold_ns: Option<Holds>,
    /// Hand-offs per repetition (the repetition's value is their median), within [`HANDOFFS`]
    /// [default: 300]
    #[arg(long, value_name = "N", value_parser = |s: &str| HANDOFFS.parse::<usize>(s), allow_hyphen_values = true,
          help = HANDOFFS.help("Hand-offs per repetition (the repetition's value is their median) [default: 300]"))]
    pub handoffs: Option<usize>,
}

const COLUMNS: &[Column] = &[
    col(LOCK, "lock"),
    col(PLACEMENT, "placement"),
    col(KEY_HOLD_NS, "hold ns"),
    col(HANDOFF_NS, "hand-off ns"),
    col("handoff_ci95_ns", "±95%"),
    col(RATIO_TO_FLOOR, "x floor"),
    col("p99_handoff_ns", "p99 ns"),
    col("reps", "reps"),
];

/// What the two threads pass back and forth: a registry lock, or the bare line that is the
/// floor of every hand-off.
trait Pass: Sync {
    /// Waits for it and takes it.
    fn acquire(&self);
    /// Gives it up.
    ///
    /// # Safety
    /// The calling thread holds it.
    unsafe fn release(&self);
}

impl Pass for LockBox {
    #[inline]
    fn acquire(&self) {
        self.lock();
    }
    #[inline]
    unsafe fn release(&self) {
        // SAFETY: forwarded from the caller, who holds the lock.
        unsafe { self.unlock() };
    }
}

/// The floor of any lock hand-off: a test-and-test-and-set on a bare cache line with nothing
/// between its re-reads, called directly. It moves the line as often as any lock's hand-off
/// must: the release store takes it from the waiter's cache, the waiter's re-read brings it
/// back, and the waiter's acquiring atomic takes it exclusive. The one-way ping-pong of
/// `spinlab run floor` moves it one time fewer (no atomic), so it is not the floor here.
struct BareLine(CachePadded<AtomicU32>);

impl Pass for BareLine {
    #[inline]
    fn acquire(&self) {
        loop {
            while self.0.load(Relaxed) != 0 {}
            if self.0.swap(1, Acquire) == 0 {
                return;
            }
        }
    }
    #[inline]
    unsafe fn release(&self) {
        self.0.store(0, Release);
    }
}

/// One repetition's hand-offs, in counter ticks from the releaser's stamp to the acquirer's,
/// each way. The two threads read different CPUs' counters, so each direction carries their
/// offset once, with opposite signs: hence signed, and kept apart.
#[derive(Clone, Debug, Default)]
struct Directions {
    /// Hand-offs from the thread on CPU `a` to the one on `b`.
    a_to_b: Vec<i64>,
    /// From `b` to `a`.
    b_to_a: Vec<i64>,
}

impl Directions {
    /// The mean of the two directions' medians, in ticks: the counters' offset cancels.
    fn value(&self) -> f64 {
        (median(&self.a_to_b) + median(&self.b_to_a)) / 2.0
    }

    /// Half the difference of the directions' medians: the offset of `b`'s counter over `a`'s
    /// where the two directions take equally long (the floor's do).
    fn offset(&self) -> f64 {
        (median(&self.a_to_b) - median(&self.b_to_a)) / 2.0
    }

    fn extend(&mut self, other: Directions) {
        self.a_to_b.extend(other.a_to_b);
        self.b_to_a.extend(other.b_to_a);
    }

    /// Every hand-off with `offset` taken out of it, sorted.
    fn corrected(&self, offset: f64) -> Vec<f64> {
        let mut all: Vec<f64> = self.a_to_b.iter().map(|&t| t as f64 - offset).collect();
        all.extend(self.b_to_a.iter().map(|&t| t as f64 + offset));
        all.sort_unstable_by(f64::total_cmp);
        all
    }
}

/// The median of `ticks` (0 for none).
fn median(ticks: &[i64]) -> f64 {
    let mut sorted = ticks.to_vec();
    sorted.sort_unstable();
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2] as f64,
        n => (sorted[n / 2 - 1] as f64 + sorted[n / 2] as f64) / 2.0,
    }
}

/// One repetition: `handoffs` hand-offs of `pass` between threads pinned to `a` and `b`. Both
/// stamps are fenced reads ([`fenced_now`]): a plain read after `lock()` may be taken before
/// the acquiring atomic has finished, which made hand-offs come out shorter than the line
/// transfers they contain.
fn handoff_rep<P: Pass>(
    pass: &P,
    a: usize,
    b: usize,
    handoffs: u32,
    hold_iterations: u64,
) -> Result<Directions, LabError> {
    // Hand-off r (from 1) goes to thread r % 2; thread 0 holds it first.
    let announced = CachePadded::new(AtomicU32::new(0));
    let acquired = CachePadded::new(AtomicU32::new(0));
    let released_at = CachePadded::new(AtomicU64::new(0));
    let start = Barrier::new(2);
    let overhead = fenced_overhead() as i64;
    let party = |me: u32| {
        let mut latencies = Vec::with_capacity(handoffs as usize / 2 + 1);
        if me == 0 {
            pass.acquire();
        }
        start.wait();
        let mut seed = me as u64 + 1;
        for r in 1..=handoffs {
            if r % 2 == me {
                while acquired.load(Acquire) != r - 1 {
                    std::hint::spin_loop();
                }
                announced.store(r, Release);
                pass.acquire();
                let acquired_at = fenced_now();
                latencies.push(acquired_at.wrapping_sub(released_at.load(Acquire)) as i64 - overhead);
                acquired.store(r, Release);
            } else {
                while announced.load(Acquire) != r {
                    std::hint::spin_loop();
                }
                seed = spin(hold_iterations, seed);
                released_at.store(fenced_now(), Release);
                // SAFETY: this thread acquired it (before the start, or in hand-off r - 1).
                unsafe { pass.release() };
            }
        }
        if handoffs % 2 == me {
            // SAFETY: this thread took the last hand-off and still holds it.
            unsafe { pass.release() };
        }
        black_box(seed);
        latencies
    };
    // The other party is started before this thread takes the lock: a refusal leaves nothing
    // held or waiting.
    // The calling thread is pinned to `a` for its side only: it is the report's own thread,
    // and every later experiment (and every thread it starts) would inherit the pinning.
    let sides = with_partner(b, || party(1), || with_pinned(a, || party(0)))?;
    Ok(Directions { a_to_b: sides.partner, b_to_a: sides.main })
}

/// `p99_handoff_ns` and `max_handoff_ns`, over every measured hand-off (in ticks).
fn add_tail(row: &mut Row, sorted_ticks: &[f64], clock: &Clock) {
    if let Some(&max) = sorted_ticks.last() {
        let p99 = sorted_ticks[(sorted_ticks.len() * 99 / 100).min(sorted_ticks.len() - 1)];
        row.set("p99_handoff_ns", clock.ns(p99));
        row.set("max_handoff_ns", clock.ns(max));
    }
}

impl Handoff {
    fn locks(&self, common: &Common) -> Vec<LockChoice> {
        let mut locks: Vec<LockChoice> = Vec::new();
        if let Some(l) = &common.locks {
            locks.extend(l.0.iter().cloned());
        }
        if let Some(w) = &common.waits {
            for policy in &w.0 {
                if let Ok(choice) = select::lock(&format!("ttas:{policy}")) {
                    if !locks.iter().any(|c| c.name() == choice.name()) {
                        locks.push(choice);
                    }
                }
            }
        }
        if locks.is_empty() {
            locks = select::default_locks(DEFAULT_LOCKS);
        }
        locks
    }
}

/// One placement's and hold's rows, `(placement, (a, b), hold)`: the bare line's, then one
/// per lock, each with its ratio to the floor and its tail from `all`, the hand-offs kept per
/// direction (treatment 0 the floor).
fn hold_rows(
    (placement, (a, b), hold): (Placement, (usize, usize), u64),
    available: &[&LockChoice],
    series: &[Series],
    all: &[Directions],
    clock: &Clock,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let floor = Summary::of(&series[0].samples);
    // The counters' offset, from the floor's hand-offs, which take equally long
    // both ways: taken out of every single hand-off before its tail is read.
    let offset = all[0].offset();
    let mut floor_row = Row::new()
        .with(LOCK, FLOOR_LOCK)
        .with(PLACEMENT, placement.name())
        .with("cpus", format!("{a},{b}"))
        .with(KEY_HOLD_NS, hold);
    match floor {
        Some(s) => {
            floor_row = floor_row
                .summary("handoff", "ns", &s)
                .with(RATIO_TO_FLOOR, 1.0)
                .with("counter_offset_ns", clock.ns(offset));
            add_tail(&mut floor_row, &all[0].corrected(offset), clock);
        }
        None => floor_row = floor_row.skipped("no cache line moves between two threads on one CPU"),
    }
    rows.push(floor_row);
    for (k, lock) in available.iter().enumerate() {
        let mut row = Row::new()
            .with(LOCK, lock.name())
            .with(ORIGIN, lock.origin())
            .with(WAIT, lock.entry.policy)
            .with(PLACEMENT, placement.name())
            .with("cpus", format!("{a},{b}"))
            .with(KEY_HOLD_NS, hold);
        let Some(s) = Summary::of(&series[k + 1].samples) else {
            rows.push(row.skipped("no repetition produced a value"));
            continue;
        };
        row = row.summary("handoff", "ns", &s).with("stop", series[k + 1].verdict);
        if let Some(f) = floor.filter(|f| f.mean > 0.0) {
            row.set(RATIO_TO_FLOOR, s.mean / f.mean);
            if let Some(why) = floor::below_floor(&s, &f, "latency", 0.0) {
                eprintln!("warning: handoff: {} at {placement}, hold {hold} ns: {why}", lock.name());
                row.set(BELOW_FLOOR, why);
            }
        }
        add_tail(&mut row, &all[k + 1].corrected(offset), clock);
        rows.push(row);
    }
    rows
}

impl Experiment for Handoff {
    fn name(&self) -> &'static str {
        "handoff"
    }

    fn about(&self) -> &'static str {
        "Lock hand-off latency between two threads, as a ratio to a bare cache line's hand-off (seed 000)"
    }

    fn uses(&self) -> &'static [&'static str] {
        &["locks", "waits", "placement"]
    }

    fn columns(&self) -> &'static [Column] {
        COLUMNS
    }

    fn run(&self, lab: &Lab, common: &Common) -> Result<Vec<Run>, LabError> {
        let started = Instant::now();
        let rule = common.rule(3, 10)?;
        let locks = self.locks(common);
        let holds = self.hold_ns.as_ref().map_or_else(|| vec![1000, 50_000], |h| h.0.clone());
        let handoffs = self.handoffs.unwrap_or(300) as u32;
        let placements = common.placement.as_ref().map_or_else(|| vec![Placement::Core], |p| p.0.clone());
        let clock = lab.clock;

        let mut run = Run::new(self.name());
        run.param("locks", locks.iter().map(|l| l.name()).collect::<Vec<_>>())
            .param("hold_ns", &holds)
            .param("handoffs_per_rep", handoffs)
            .param("placements", placements.iter().map(|p| p.name()).collect::<Vec<_>>())
            .param(
                "floor",
                "hand-off of a bare cache line (test-and-test-and-set, nothing between re-reads), \
                 by the same code and stamps, interleaved with the locks",
            )
            .stopping_rule(&rule);

        let mut rows = Vec::new();
        let available: Vec<&LockChoice> = locks
            .iter()
            .filter(|l| match l.unavailable() {
                Some(why) => {
                    rows.push(Row::new().with(LOCK, l.name()).skipped(why));
                    false
                }
                None => true,
            })
            .collect();
        let instances: Vec<LockBox> = available
            .iter()
            .map(|l| LockBox::new(l.entry).map_err(|e| LabError::failed(e.to_string())))
            .collect::<Result<_, _>>()?;

        one_run(lab, started, run, (placements.len() * holds.len()) as u64, |progress| {
            for &placement in &placements {
                let (a, b) = match lab.topology.pair(placement) {
                    Ok(pair) => pair,
                    Err(why) => {
                        rows.push(Row::new().with(PLACEMENT, placement.name()).skipped(why));
                        continue;
                    }
                };
                for &hold in &holds {
                    progress.step(&format!("{placement}, hold {hold} ns"));
                    let hold_iterations = lab.work.iterations(hold as f64);
                    let floor_line = BareLine(CachePadded::new(AtomicU32::new(0)));
                    // Treatment 0 is the floor; 1.. are the locks. Every hand-off of the measured
                    // repetitions is kept, per direction, for the tail figures.
                    let mut all: Vec<Directions> = vec![Directions::default(); instances.len() + 1];
                    let series = interleave(instances.len() + 1, &rule, Some(progress), |i, rep| {
                        if a == b && i == 0 {
                            return Ok(f64::NAN);
                        }
                        let directions = match i {
                            0 => handoff_rep(&floor_line, a, b, handoffs, hold_iterations)?,
                            _ => handoff_rep(&instances[i - 1], a, b, handoffs, hold_iterations)?,
                        };
                        let value = clock.ns(directions.value());
                        if rep != crate::measure::Rep::Warmup {
                            all[i].extend(directions);
                        }
                        Ok(value)
                    })?;
                    rows.extend(hold_rows((placement, (a, b), hold), &available, &series, &all, &clock));
                    progress.inc();
                }
            }
            Ok(rows)
        })
    }

    fn report_steps(&self, length: Length, _cpus: usize) -> Vec<Step> {
        let handoff = match length {
            Length::Full => self.clone(),
            Length::Short => Handoff { handoffs: Some(60), ..self.clone() },
            Length::Smoke => Handoff { handoffs: Some(10), hold_ns: Some(Holds(vec![1000])) },
        };
        let mut c = length.common(&handoff, 2, 4, 0);
        if length == Length::Smoke {
            c.locks = smoke_locks();
        }
        vec![Step::new(handoff, c, "handoff: lock hand-off latency")]
    }

    fn figures(&self, _ctx: &Context<'_>, runs: &[&Run]) -> Vec<Result<Panel, String>> {
        chart(&measured_as::<HandoffRow>(runs))
    }
}

fn chart(rows: &[HandoffRow]) -> Vec<Result<Panel, String>> {
    let placements = distinct_by(rows, |r| r.placement.clone());
    let holds = distinct_by(rows, |r| r.hold_ns);
    let bars: Vec<Bar> = rows
        .iter()
        .filter_map(|r| {
            let name = r.lock.as_deref().or_else(|| r.wait.value().map(String::as_str))?;
            let placement = r.placement.as_deref();
            let ratio = r.ratio_to_floor.map_or(String::new(), |x| format!(" (x{} floor)", number(x)));
            let hold = r
                .hold_ns
                .filter(|_| holds.len() > 1)
                .map_or(String::new(), |h| format!(", hold {}", duration_words(h as f64)));
            Some(Bar {
                label: format!("{name}{}{hold}{ratio}", placement.map_or(String::new(), |p| format!(", {p}"))),
                value: r.handoff_ns?,
                color: placement.and_then(|p| placements.iter().position(|q| q == p)).unwrap_or(0),
            })
        })
        .collect();
    if bars.is_empty() {
        return Vec::new();
    }
    let legend: Vec<(String, usize)> = placements.iter().enumerate().map(|(i, p)| (p.clone(), i)).collect();
    let x = Axis::numeric("hand-off latency (ns, log scale)", Scale::Log, bars.iter().map(|b| b.value), false);
    vec![plot::hbars("Lock hand-off latency", &x, &bars, &legend).map(|svg| Panel {
        svg,
        caption: "Time from one thread releasing the lock to the waiting thread holding it, per wait policy (and \
                  placement), with its ratio to the floor (a bare cache line handed over the same way): the \
                  responsiveness a policy pays for \
                  what it saves its neighbours."
            .to_string(),
    })]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_offset_cancels_between_the_two_directions() {
        // True hand-off 100 ticks each way; b's counter runs 30 ahead of a's.
        let d = Directions { a_to_b: vec![130, 131, 129], b_to_a: vec![70, 69, 71] };
        assert_eq!(d.value(), 100.0);
        assert_eq!(d.offset(), 30.0);
        assert_eq!(d.corrected(d.offset()), vec![99.0, 99.0, 100.0, 100.0, 101.0, 101.0]);
    }

    #[test]
    fn only_a_figure_below_the_floor_by_more_than_both_intervals_is_flagged() {
        let at = Summary::exact(70.0, 2.0);
        assert!(floor::below_floor(&Summary::exact(35.0, 3.0), &at, "latency", 0.0).is_some());
        assert!(floor::below_floor(&Summary::exact(66.0, 3.0), &at, "latency", 0.0).is_none(), "within the intervals");
        assert!(floor::below_floor(&Summary::exact(90.0, 3.0), &at, "latency", 0.0).is_none());
    }

    #[test]
    fn the_bare_line_passes_between_threads_exclusively() {
        let line = BareLine(CachePadded::new(AtomicU32::new(0)));
        let counter = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        line.acquire();
                        // A split read-modify-write: a second holder would lose updates.
                        let seen = counter.load(Relaxed);
                        counter.store(seen + 1, Relaxed);
                        // SAFETY: acquired just above.
                        unsafe { line.release() };
                    }
                });
            }
        });
        assert_eq!(counter.load(Relaxed), 40_000);
    }
}
