//! Contended lock + unlock through the typed mutexes a Rust program writes: `spinlab::Mutex`
//! (the default, `Adaptive<PauseYieldPark>`), the bounded word alone under `lock_api::Mutex`,
//! `parking_lot::Mutex` and `std::sync::Mutex`, in rounds that interleave them.
//!
//! `cargo bench -p spinlab --bench contended`
//!
//! The lab (`spinlab run contention`) reaches locks by name, through the registry, which
//! builds the default as the lock the machine gets (the word alone on up to 4 CPUs). A Rust
//! program that writes `spinlab::Mutex` gets `Adaptive`, which chooses at every contended
//! acquisition and keeps its guard in the `MutexGuard`. This bench measures
//! that path beside the word alone and the two references, the guard on the stack as the
//! caller keeps it.
//!
//! Each configuration (2 and 16 threads; an empty critical section and one of about 100 ns)
//! runs [`ROUNDS`] rounds, twice: with the threads left to the scheduler, as a Rust program's
//! threads run, and with each thread pinned to one of the process's CPUs in turn, as the lab
//! runs them (`-- --unpinned` or `-- --pinned` runs one of the two). A round runs every
//! subject for [`SLICE`], in an order drawn afresh each round. Under the
//! lock a thread adds one to the mutex's count, notes itself as the last to take it (so it can
//! tell a hand-over), and runs the section's work; at the end of each slice the count must
//! equal the acquisitions the threads made, or the bench stops (mutual exclusion by exact
//! count). The slice's window opens once every thread is in its loop, and an acquisition
//! counts if it ended while the window was open, as in the lab. Before each round two pinned
//! threads bounce a cache line to time a one-way transfer: on a virtual machine the host may
//! move the virtual CPUs to nearer or further cores, and every figure follows that cost.
//!
//! Reported per configuration: each subject's acquisitions per second (median over rounds),
//! Jain's index over its threads' acquisitions and the share of acquisitions that took the
//! lock from another thread (hand-overs; both means over rounds), and its ratio to the better
//! of parking_lot and std in each round: the median of the per-round ratios, with their 25th
//! and 75th percentiles.
//! When the slowest round's transfer is more than twice the fastest's, the rounds are
//! reported in two groups, split at the geometric middle of the two.
//!
//! Without `--bench` (`cargo test --benches`), one short round of each configuration checks
//! the counts and prints nothing else.

use lock_api::RawMutex;
use spinlab::lock::Bounded;
use spinlab::wait::PauseYieldPark;
use spinlab::CachePadded;
use std::hint::black_box;
use std::ops::DerefMut;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::PoisonError;
use std::time::{Duration, Instant};

/// Rounds per configuration in benchmark mode.
const ROUNDS: usize = 21;
/// How long each subject runs in a round: the window over which spinlab's fairness target,
/// Jain's index >= 0.95, is stated (docs/design.md, "Measurement").
const SLICE: Duration = Duration::from_millis(100);
/// The thread counts of those targets: two threads, and more threads than a small machine has
/// CPUs.
const THREADS: [usize; 2] = [2, 16];
/// The critical sections' work, in nanoseconds (0: the increment alone).
const SECTIONS_NS: [u32; 2] = [0, 100];
/// Rounds are reported in two groups when the slowest round's transfer is more than this
/// multiple of the fastest's: a host that moves a guest's virtual CPUs between near and far
/// cores gives two such modes.
const TWO_MODES: f64 = 2.0;

/// What the mutex protects: the acquisitions, and which thread made the last one (threads
/// are numbered from 1; 0 before the first acquisition).
#[derive(Default)]
struct Tally {
    count: u64,
    last: usize,
}

impl Tally {
    /// Counts thread `me`'s acquisition; returns whether it took the lock from another thread
    /// (the first acquisition of all took it from nobody).
    #[inline]
    fn add(&mut self, me: usize) -> bool {
        self.count += 1;
        let handed_over = self.last != 0 && self.last != me;
        self.last = me;
        handed_over
    }
}

/// A mutex over a [`Tally`], as a program uses it: its guard.
trait Guarded: Sync {
    fn tally(&self) -> impl DerefMut<Target = Tally> + '_;
}

impl<R: RawMutex + Sync + Send> Guarded for lock_api::Mutex<R, Tally> {
    #[inline]
    fn tally(&self) -> impl DerefMut<Target = Tally> + '_ {
        self.lock()
    }
}

impl Guarded for std::sync::Mutex<Tally> {
    #[inline]
    fn tally(&self) -> impl DerefMut<Target = Tally> + '_ {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a round does with a subject's mutex.
trait Counter: Sync {
    /// Takes the lock as thread `me` (numbered from 1), counts, runs `work` iterations of the
    /// section's work, releases; returns whether the lock came from another thread.
    fn bump(&self, me: usize, work: u32) -> bool;
    /// The count (no thread holds or takes the lock meanwhile).
    fn count(&self) -> u64;
    /// Sets the count to zero (as `count`).
    fn reset(&self);
}

impl<G: Guarded> Counter for CachePadded<G> {
    #[inline]
    fn bump(&self, me: usize, work: u32) -> bool {
        let mut guard = self.tally();
        let handed_over = guard.add(me);
        spin(work);
        handed_over
    }
    fn count(&self) -> u64 {
        self.tally().count
    }
    fn reset(&self) {
        *self.tally() = Tally::default();
    }
}

/// `iterations` steps of a dependent arithmetic chain: work the compiler cannot remove.
#[inline]
fn spin(iterations: u32) {
    let mut x = 1u64;
    for _ in 0..iterations {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
    }
    black_box(x);
}

/// Iterations of [`spin`] that take about `ns`: from the fastest of five timed runs, since a
/// preempted run can only be slower.
fn iterations_for(ns: u32) -> u32 {
    if ns == 0 {
        return 0;
    }
    const PROBE: u32 = 1_000_000;
    let fastest = (0..5)
        .map(|_| {
            let start = Instant::now();
            spin(PROBE);
            start.elapsed()
        })
        .min()
        .unwrap_or(Duration::from_millis(1));
    let per_iteration_ns = fastest.as_nanos() as f64 / f64::from(PROBE);
    (f64::from(ns) / per_iteration_ns).round().max(1.0) as u32
}

struct Subject {
    name: &'static str,
    lock: Box<dyn Counter>,
    /// One of the locks people already use: the ratios are to the better of these.
    reference: bool,
}

fn subjects() -> Vec<Subject> {
    fn padded<G: Guarded + 'static>(mutex: G) -> Box<dyn Counter> {
        // Alone on its line pair, as the lab places every lock.
        Box::new(CachePadded::new(mutex))
    }
    vec![
        Subject {
            name: "default (spinlab::Mutex)",
            lock: padded(spinlab::Mutex::new(Tally::default())),
            reference: false,
        },
        Subject {
            name: "bounded:pause-yield-park",
            lock: padded(lock_api::Mutex::<Bounded<PauseYieldPark>, Tally>::new(Tally::default())),
            reference: false,
        },
        Subject { name: "parking_lot", lock: padded(parking_lot::Mutex::new(Tally::default())), reference: true },
        Subject { name: "std", lock: padded(std::sync::Mutex::new(Tally::default())), reference: true },
    ]
}

/// Where a slice's threads run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// Wherever the scheduler puts them, as a program's threads run.
    Unpinned,
    /// Thread `i` on the `i`-th allowed CPU, in turn, as the lab places them.
    Pinned,
}

impl Placement {
    fn label(self) -> &'static str {
        match self {
            Placement::Unpinned => "threads unpinned",
            Placement::Pinned => "threads pinned to the CPUs in turn",
        }
    }
}

/// The placements the command line asks for: `--unpinned`, `--pinned`, or both when it names
/// neither.
fn placements(args: &[String]) -> Vec<Placement> {
    let unpinned = args.iter().any(|a| a == "--unpinned");
    let pinned = args.iter().any(|a| a == "--pinned");
    match (unpinned, pinned) {
        (true, false) => vec![Placement::Unpinned],
        (false, true) => vec![Placement::Pinned],
        _ => vec![Placement::Unpinned, Placement::Pinned],
    }
}

/// The CPUs this process may run on, in order.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the call writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above; 0 names the calling thread.
    let read = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) };
    let cpus: Vec<usize> =
        // SAFETY: `set` was filled in by the kernel.
        (0..libc::CPU_SETSIZE as usize).filter(|&c| read == 0 && unsafe { libc::CPU_ISSET(c, &set) }).collect();
    if cpus.is_empty() {
        vec![0]
    } else {
        cpus
    }
}

/// Pins the calling thread to `cpu`; stops the bench if the kernel refuses.
fn pin(cpu: usize) {
    // SAFETY: as in `allowed_cpus`; CPU_SET writes inside the set for cpu < CPU_SETSIZE.
    let ok = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) == 0
    };
    assert!(ok, "could not pin a thread to CPU {cpu}: {}", std::io::Error::last_os_error());
}

/// What one subject's slice measured.
struct Slice {
    /// Each thread's acquisitions inside the window.
    counts: Vec<u64>,
    /// Acquisitions inside the window that took the lock from another thread.
    handovers: u64,
    seconds: f64,
}

/// The phases of a slice, in one word that every thread reads after each release.
const STARTING: u8 = 0;
const MEASURING: u8 = 1;
const STOPPED: u8 = 2;

/// What one thread counted in a slice.
#[derive(Default)]
struct ThreadTally {
    /// Acquisitions that ended inside the window, and those of them that were hand-overs.
    counted: u64,
    handovers: u64,
    /// Every acquisition it made, inside the window or not: the lock's own count must match
    /// their sum.
    made: u64,
}

/// One subject's slice: `threads` pinned threads bump the counter in a loop; the window opens
/// once every thread is in its loop and lasts `slice`. An acquisition counts if it ended while
/// the window was open (the phase is read after each release), as in the lab's contention
/// experiment: a window opened as the threads leave a start line counts the start, and with
/// several threads on each CPU the last thread leaves a sleeping barrier several time slices
/// after the first (docs/design.md, "Measurement").
fn run_slice(
    lock: &dyn Counter,
    cpus: &[usize],
    placement: Placement,
    threads: usize,
    work: u32,
    slice: Duration,
) -> Slice {
    lock.reset();
    let phase = CachePadded::new(AtomicU8::new(STARTING));
    let in_loop = CachePadded::new(AtomicUsize::new(0));
    let (tallies, seconds) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (phase, in_loop) = (&phase, &in_loop);
                scope.spawn(move || {
                    if placement == Placement::Pinned {
                        pin(cpus[i % cpus.len()]);
                    }
                    in_loop.fetch_add(1, Relaxed);
                    let mut tally = ThreadTally::default();
                    loop {
                        let handed_over = lock.bump(i + 1, work);
                        tally.made += 1;
                        match phase.load(Relaxed) {
                            MEASURING => {
                                tally.counted += 1;
                                tally.handovers += u64::from(handed_over);
                            }
                            STOPPED => break,
                            _ => {}
                        }
                    }
                    tally
                })
            })
            .collect();
        while in_loop.load(Relaxed) < threads {
            std::thread::sleep(Duration::from_micros(50));
        }
        phase.store(MEASURING, Relaxed);
        let opened = Instant::now();
        std::thread::sleep(slice);
        phase.store(STOPPED, Relaxed);
        let seconds = opened.elapsed().as_secs_f64();
        let tallies: Vec<ThreadTally> =
            handles.into_iter().map(|h| h.join().expect("a bench thread panicked")).collect();
        (tallies, seconds)
    });
    let made: u64 = tallies.iter().map(|t| t.made).sum();
    let counted = lock.count();
    assert_eq!(counted, made, "mutual exclusion failed: the counter holds {counted} after {made} acquisitions");
    Slice {
        counts: tallies.iter().map(|t| t.counted).collect(),
        handovers: tallies.iter().map(|t| t.handovers).sum(),
        seconds,
    }
}

/// One-way cache-line transfer between the first two allowed CPUs, in nanoseconds: half the
/// round trip of the median of [`BATCHES`] batches of [`TRIPS`] round trips, so that a
/// preemption spoils one batch (`None` with one CPU). The lab's ping-pong, without a `pause`
/// in the wait, which would add its own latency. Both ends are threads of their own, so the
/// main thread's affinity, which the slices' threads inherit, stays the process's.
fn line_transfer_ns(cpus: &[usize]) -> Option<f64> {
    const TRIPS: u64 = 100;
    const BATCHES: u64 = 51;
    let (&a, &b) = (cpus.first()?, cpus.get(1)?);
    let ball = CachePadded::new(AtomicU64::new(0));
    let ball = &ball;
    let mut batches: Vec<Duration> = std::thread::scope(|scope| {
        scope.spawn(move || {
            pin(b);
            for k in 0..TRIPS * BATCHES {
                while ball.load(Acquire) != 2 * k + 1 {}
                ball.store(2 * k + 2, Release);
            }
        });
        let timer = scope.spawn(move || {
            pin(a);
            (0..BATCHES)
                .map(|batch| {
                    let began = Instant::now();
                    for k in batch * TRIPS..(batch + 1) * TRIPS {
                        ball.store(2 * k + 1, Release);
                        while ball.load(Acquire) != 2 * k + 2 {}
                    }
                    began.elapsed()
                })
                .collect()
        });
        timer.join().expect("the transfer probe panicked")
    });
    batches.sort_unstable();
    Some(batches[batches.len() / 2].as_nanos() as f64 / (2 * TRIPS) as f64)
}

/// Jain's fairness index of the threads' acquisitions: 1.0 when all made the same number.
fn jain(counts: &[u64]) -> f64 {
    let sum: f64 = counts.iter().map(|&c| c as f64).sum();
    let squares: f64 = counts.iter().map(|&c| (c as f64).powi(2)).sum();
    if squares == 0.0 {
        return 1.0;
    }
    sum * sum / (counts.len() as f64 * squares)
}

/// The order in which round `round` runs `n` subjects: a permutation drawn afresh each round
/// (from a fixed seed, so runs repeat), so that no subject always follows the same one. With
/// unpinned threads a slice inherits the scheduler's state from the slice before it: a
/// rotation, in which each subject follows the same neighbour in nearly every round, gave the
/// subject after `std` a lower Jain index whichever lock it was.
fn order(n: usize, round: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (round as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    for i in (1..n).rev() {
        // xorshift64: enough to shuffle a handful of subjects.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    order
}

/// One round of one configuration: every subject once, in the round's [`order`].
struct Round {
    transfer_ns: Option<f64>,
    /// Acquisitions per second, per subject.
    ops: Vec<f64>,
    jain: Vec<f64>,
    /// Hand-overs as a share of acquisitions, in percent.
    handovers_pct: Vec<f64>,
}

/// How one configuration runs: where its threads run, how many, and the section's work.
#[derive(Clone, Copy)]
struct Config {
    placement: Placement,
    threads: usize,
    work: u32,
    slice: Duration,
}

fn round(subjects: &[Subject], cpus: &[usize], config: Config, index: usize) -> Round {
    let transfer_ns = line_transfer_ns(cpus);
    let mut ops = vec![0.0; subjects.len()];
    let mut fairness = vec![0.0; subjects.len()];
    let mut handovers_pct = vec![0.0; subjects.len()];
    for i in order(subjects.len(), index) {
        let Config { placement, threads, work, slice } = config;
        let slice = run_slice(subjects[i].lock.as_ref(), cpus, placement, threads, work, slice);
        let total = slice.counts.iter().sum::<u64>();
        ops[i] = total as f64 / slice.seconds;
        fairness[i] = jain(&slice.counts);
        handovers_pct[i] = 100.0 * slice.handovers as f64 / total.max(1) as f64;
    }
    Round { transfer_ns, ops, jain: fairness, handovers_pct }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    let bench = has("--bench") && !has("--test") && !has("--list");
    if has("--list") {
        return;
    }
    let subjects = subjects();
    let cpus = allowed_cpus();
    let (rounds, slice) = if bench { (ROUNDS, SLICE) } else { (1, Duration::from_millis(5)) };
    if bench {
        println!(
            "contended lock+unlock through the typed mutexes, {rounds} interleaved rounds of {slice:?} per subject"
        );
        println!("CPUs {cpus:?}");
    }
    for placement in placements(&args) {
        for &threads in &THREADS {
            for &section_ns in &SECTIONS_NS {
                let config = Config { placement, threads, work: iterations_for(section_ns), slice };
                let results: Vec<Round> = (0..rounds).map(|r| round(&subjects, &cpus, config, r)).collect();
                if bench {
                    report(&subjects, config, section_ns, &results);
                }
            }
        }
    }
}

fn report(subjects: &[Subject], config: Config, section_ns: u32, rounds: &[Round]) {
    let section =
        if section_ns == 0 { "an empty critical section".to_string() } else { format!("{section_ns} ns sections") };
    println!();
    println!("{} threads, {section}, {}", config.threads, config.placement.label());
    let fastest = rounds.iter().filter_map(|r| r.transfer_ns).fold(f64::INFINITY, f64::min);
    let slowest = rounds.iter().filter_map(|r| r.transfer_ns).fold(0.0, f64::max);
    // Split at the geometric middle of the two, when they are far enough apart.
    let split = if slowest > TWO_MODES * fastest { (fastest * slowest).sqrt() } else { f64::INFINITY };
    let fast: Vec<&Round> = rounds.iter().filter(|r| r.transfer_ns.is_none_or(|t| t <= split)).collect();
    let slow: Vec<&Round> = rounds.iter().filter(|r| r.transfer_ns.is_some_and(|t| t > split)).collect();
    let first = if slow.is_empty() { "all rounds" } else { "faster transfer" };
    for (label, part) in [(first, &fast), ("slower transfer", &slow)] {
        if part.is_empty() {
            continue;
        }
        let transfers: Vec<f64> = part.iter().filter_map(|r| r.transfer_ns).collect();
        let range = if transfers.is_empty() {
            "not measured (one CPU)".to_string()
        } else {
            format!("{:.0}-{:.0} ns", quantile(&transfers, 0.0), quantile(&transfers, 1.0))
        };
        println!("  {label}: {} rounds, one-way line transfer {range}", part.len());
        println!(
            "  {:<26} {:>12} {:>7} {:>12}  {:>9} {:>16}",
            "subject", "acq/s", "jain", "hand-overs %", "/best ref", "[p25, p75]"
        );
        let references: Vec<usize> = (0..subjects.len()).filter(|&i| subjects[i].reference).collect();
        let best = |r: &Round| references.iter().map(|&i| r.ops[i]).fold(0.0, f64::max);
        for (i, s) in subjects.iter().enumerate() {
            let ops: Vec<f64> = part.iter().map(|r| r.ops[i]).collect();
            let ratios: Vec<f64> = part.iter().map(|r| r.ops[i] / best(r)).collect();
            let fairness = part.iter().map(|r| r.jain[i]).sum::<f64>() / part.len() as f64;
            let handovers = part.iter().map(|r| r.handovers_pct[i]).sum::<f64>() / part.len() as f64;
            println!(
                "  {:<26} {:>12.0} {:>7.3} {:>12.1}  {:>9.3} [{:>5.3}, {:>5.3}]",
                s.name,
                quantile(&ops, 0.5),
                fairness,
                handovers,
                quantile(&ratios, 0.5),
                quantile(&ratios, 0.25),
                quantile(&ratios, 0.75)
            );
        }
    }
}

/// The `q` quantile, by the nearest rank.
fn quantile(samples: &[f64], q: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}
