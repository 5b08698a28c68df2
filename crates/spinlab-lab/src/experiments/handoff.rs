//! `spinlab run handoff`: seed 000 §V.D's responsiveness, measured directly. Two threads
//! pass a lock back and forth: each time, one holds it while the other is waiting in
//! `lock()`, releases it, and the other acquires it. `handoff_ns` is the time from the
//! release to the acquisition, per lock (and so per wait policy), read against the floor for
//! any hand-off between the same two CPUs: the one-way cache-line ping-pong of `spinlab run
//! floor`, measured by the same code, interleaved with the locks in the same invocation.
//!
//! One hand-off, with the lock held by H and W about to wait:
//! 1. W waits until H has acquired the previous hand-off (so W cannot take the lock before it
//!    was handed over), announces that it is about to lock, and calls `lock()`.
//! 2. H sees the announcement, holds the lock `--hold-ns` longer (so that W is in its wait
//!    loop, or asleep, when the release comes), stamps the counter, and unlocks.
//! 3. W returns from `lock()`, stamps the counter: one `handoff_ns`; the roles swap.
//!
//! The hold time decides what is measured: a short one catches a spin-then-park policy still
//! spinning, a long one catches it asleep. Both are run by default.

use super::floor::{ping_pong_batches, BATCH, BATCHES};
use super::settings::{smoke_locks, Length, Step};
use super::{finish, Common, Experiment, Lab};
use crate::error::LabError;
use crate::lockbox::LockBox;
use crate::machine::Placement;
use crate::measure::clock::now;
use crate::measure::partner::with_partner;
use crate::measure::pin::pin_or_die;
use crate::measure::work::spin;
use crate::measure::{interleave, Summary};
use crate::reading::plot::{self, Axis, Bar, Scale};
use crate::reading::{distinct, measured, rows_of, Context, Panel};
use crate::results::format::{duration_words, number};
use crate::results::keys::{LOCK, ORIGIN, PLACEMENT, WAIT};
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
/// [`HANDOFF_NS`] over the cache-line ping-pong floor.
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
/// `--handoffs`: up to a million hand-offs per repetition.
pub const HANDOFFS: Bounds = Bounds::new(1, 1_000_000);

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

/// One repetition: `handoffs` hand-offs of `lock` between threads pinned to `a` and `b`;
/// returns each one's latency in ticks (release stamp to acquisition stamp).
fn handoff_rep(lock: &LockBox, a: usize, b: usize, handoffs: u32, hold_iterations: u64) -> Result<Vec<u64>, LabError> {
    // Hand-off r (from 1) goes to thread r % 2; thread 0 holds the lock first.
    let announced = CachePadded::new(AtomicU32::new(0));
    let acquired = CachePadded::new(AtomicU32::new(0));
    let released_at = CachePadded::new(AtomicU64::new(0));
    let start = Barrier::new(2);
    let party = |me: u32| {
        let mut latencies = Vec::with_capacity(handoffs as usize / 2 + 1);
        if me == 0 {
            lock.lock();
        }
        start.wait();
        let mut seed = me as u64 + 1;
        for r in 1..=handoffs {
            if r % 2 == me {
                while acquired.load(Acquire) != r - 1 {
                    std::hint::spin_loop();
                }
                announced.store(r, Release);
                lock.lock();
                let acquired_at = now();
                latencies.push(acquired_at.saturating_sub(released_at.load(Acquire)));
                acquired.store(r, Release);
            } else {
                while announced.load(Acquire) != r {
                    std::hint::spin_loop();
                }
                seed = spin(hold_iterations, seed);
                released_at.store(now(), Release);
                // SAFETY: this thread acquired the lock (before the start, or in hand-off r - 1).
                unsafe { lock.unlock() };
            }
        }
        if handoffs % 2 == me {
            // SAFETY: this thread took the last hand-off and still holds the lock.
            unsafe { lock.unlock() };
        }
        black_box(seed);
        latencies
    };
    // The other party is started before this thread takes the lock: a refusal leaves nothing
    // held or waiting.
    let sides = with_partner(
        b,
        || party(1),
        || {
            pin_or_die(a);
            party(0)
        },
    )?;
    let mut all = sides.partner;
    all.extend(sides.main);
    Ok(all)
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

impl Experiment for Handoff {
    fn name(&self) -> &'static str {
        "handoff"
    }

    fn about(&self) -> &'static str {
        "Lock hand-off latency between two threads, as a ratio to the ping-pong floor (seed 000)"
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
            .param("floor", "one-way ping-pong (floor's code), interleaved with the locks")
            .param("ping_pong_batch_round_trips", BATCH)
            .param("ping_pong_batches_per_rep", BATCHES)
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

        let progress = lab.progress("handoff", (placements.len() * holds.len()) as u64);
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
                let mut all: Vec<Vec<u64>> = vec![Vec::new(); instances.len()];
                // Treatment 0 is the floor; 1.. are the locks.
                let series = interleave(instances.len() + 1, &rule, Some(&progress), |i, rep| {
                    if i == 0 {
                        if a == b {
                            return Ok(f64::NAN);
                        }
                        let mut batches = ping_pong_batches(a, b, BATCHES)?;
                        batches.sort_unstable();
                        let median = batches[batches.len() / 2];
                        return Ok(clock.ns(median.saturating_sub(clock.overhead_ticks) as f64) / (2.0 * BATCH as f64));
                    }
                    let mut ticks = handoff_rep(&instances[i - 1], a, b, handoffs, hold_iterations)?;
                    for t in ticks.iter_mut() {
                        *t = t.saturating_sub(clock.overhead_ticks);
                    }
                    ticks.sort_unstable();
                    let median = ticks[ticks.len() / 2];
                    if rep != crate::measure::Rep::Warmup {
                        all[i - 1].extend(ticks);
                    }
                    Ok(clock.ns(median as f64))
                })?;
                let floor = Summary::of(&series[0].samples);
                let mut floor_row = Row::new()
                    .with(LOCK, "floor: ping-pong")
                    .with(PLACEMENT, placement.name())
                    .with("cpus", format!("{a},{b}"))
                    .with(KEY_HOLD_NS, hold);
                match floor {
                    Some(s) => floor_row = floor_row.summary("handoff", "ns", &s).with(RATIO_TO_FLOOR, 1.0),
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
                    }
                    let mut lat = std::mem::take(&mut all[k]);
                    lat.sort_unstable();
                    if let Some(&max) = lat.last() {
                        row.set("p99_handoff_ns", clock.ns(lat[(lat.len() * 99 / 100).min(lat.len() - 1)] as f64));
                        row.set("max_handoff_ns", clock.ns(max as f64));
                    }
                    rows.push(row);
                }
                progress.inc();
            }
        }
        finish(&progress, run, rows, started)
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
        chart(&rows_of(runs))
    }
}

fn chart(rows: &[&Row]) -> Vec<Result<Panel, String>> {
    let rows = measured(rows.iter().copied());
    let placements = distinct(&rows, PLACEMENT);
    let holds = distinct(&rows, KEY_HOLD_NS);
    let bars: Vec<Bar> = rows
        .iter()
        .filter_map(|r| {
            let name = r.text(LOCK).or_else(|| r.text(WAIT))?;
            let placement = r.text(PLACEMENT);
            let ratio = r.number(RATIO_TO_FLOOR).map_or(String::new(), |x| format!(" (x{} floor)", number(x)));
            let hold = r
                .number(KEY_HOLD_NS)
                .filter(|_| holds.len() > 1)
                .map_or(String::new(), |h| format!(", hold {}", duration_words(h)));
            Some(Bar {
                label: format!("{name}{}{hold}{ratio}", placement.map_or(String::new(), |p| format!(", {p}"))),
                value: r.number(HANDOFF_NS)?,
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
                  placement), with its ratio to the cache-line ping-pong floor: the responsiveness a policy pays for \
                  what it saves its neighbours."
            .to_string(),
    })]
}
