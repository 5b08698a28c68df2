//! Uncontended lock + unlock: every spinlab lock with `Spin` and `SpinPark`, the default, the
//! three reference locks, and two floors, all in one run; and a condition variable's
//! notification with nobody waiting, spinlab's beside parking_lot's and std's.
//!
//! `cargo bench -p spinlab --bench uncontended`
//!
//! Two phases:
//!
//! 1. criterion groups (`floor`, `spinlab`, `reference`): criterion's usual report, per
//!    benchmark, one after the other.
//! 2. a ratio table on stdout, from interleaved rounds timed by this file (see
//!    [`interleaved`]): every ratio there pairs two subjects measured a few milliseconds
//!    apart in the same round, because this machine's speed drifts over the minute the
//!    criterion phase takes (other jobs, frequency, the hypervisor). It runs only in
//!    benchmark mode (`--bench`, which `cargo bench` passes), not under `cargo test`.
//!
//! Both phases time exactly the same thing per operation: [`TimedOp::op`] on a long-lived
//! lock (or condition variable) behind `black_box`, which hides the lock's address (so nothing
//! is hoisted or merged across iterations) and adds one register spill and reload, the same
//! for every subject, floors included.
//!
//! The floors are the atomics an uncontended lock cannot avoid: a CAS(0 -> 1, Acquire) to
//! take the word, and either a plain Release store or a Release swap to give it back. A pure
//! spin lock needs only the store; a lock whose waiters may sleep needs the swap (or a CAS) to
//! learn whether to wake one.

use criterion::{Bencher, Criterion};
use lock_api::RawMutex;
use spinlab::lock::{Adaptive, Bounded, Clh, Fair, Gated, Mcs, McsQueue, Tas, Ticket, Ttas};
use spinlab::wait::{PauseYieldPark, Spin, SpinPark, Wait};
use spinlab::{CachePadded, DefaultRawMutex};
use std::cell::UnsafeCell;
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering::*};
use std::sync::PoisonError;
use std::time::{Duration, Instant};

/// What every benchmark times: one uncontended acquisition and release, or one notification
/// that nobody waits for.
trait TimedOp: Sync {
    fn op(&self);
}

/// A lock measured through lock_api's raw calls, the guard handed back to `unlock`.
struct Raw<R>(R);

impl<R: RawMutex + Sync> TimedOp for Raw<R> {
    #[inline(always)]
    fn op(&self) {
        let guard = self.0.lock();
        // SAFETY: `guard` is the state of the acquisition this thread has just made.
        unsafe { self.0.unlock(guard) }
    }
}

/// Floor for a pure spin lock: CAS to acquire, plain store to release.
struct CasStore(AtomicU32);

impl TimedOp for CasStore {
    #[inline(always)]
    fn op(&self) {
        // Nothing else touches the word, so the CAS always succeeds; its result is not needed.
        let _ = self.0.compare_exchange(0, 1, Acquire, Relaxed);
        self.0.store(0, Release);
    }
}

/// Floor for a lock whose waiters may sleep: CAS to acquire, swap to release.
struct CasSwap(AtomicU32);

impl TimedOp for CasSwap {
    #[inline(always)]
    fn op(&self) {
        let _ = self.0.compare_exchange(0, 1, Acquire, Relaxed);
        self.0.swap(0, Release);
    }
}

/// `std::sync::Mutex` has no raw interface: lock, then drop the guard (std's own cost
/// includes its poison check).
struct StdMutex(std::sync::Mutex<()>);

impl TimedOp for StdMutex {
    #[inline(always)]
    fn op(&self) {
        drop(self.0.lock().unwrap_or_else(PoisonError::into_inner));
    }
}

/// A default `pthread_mutex_t`, called through glibc as C programs do.
struct Pthread(UnsafeCell<libc::pthread_mutex_t>);

// SAFETY: pthread mutexes are made to be shared between threads; the cell only gives libc the
// mutable pointer it asks for.
unsafe impl Sync for Pthread {}

impl TimedOp for Pthread {
    #[inline(always)]
    fn op(&self) {
        // SAFETY: an initialised mutex that never moves once used (it is leaked in place), and
        // this thread unlocks only what it has just locked.
        unsafe {
            libc::pthread_mutex_lock(self.0.get());
            libc::pthread_mutex_unlock(self.0.get());
        }
    }
}

/// A `notify_one` with no thread waiting, on spinlab's condition variable over `W`.
struct Notify<W: Wait>(spinlab::Condvar<W>);

impl<W: Wait> TimedOp for Notify<W> {
    #[inline(always)]
    fn op(&self) {
        self.0.notify_one();
    }
}

/// parking_lot's `notify_one` with no thread waiting.
struct ParkingLotNotify(parking_lot::Condvar);

impl TimedOp for ParkingLotNotify {
    #[inline(always)]
    fn op(&self) {
        self.0.notify_one();
    }
}

/// std's `notify_one` with no thread waiting.
struct StdNotify(std::sync::Condvar);

impl TimedOp for StdNotify {
    #[inline(always)]
    fn op(&self) {
        self.0.notify_one();
    }
}

/// One benchmarked subject (a lock, or a condition variable): where it is reported, and its
/// two timing loops.
struct Subject {
    group: &'static str,
    name: String,
    criterion: Box<dyn Fn(&mut Bencher)>,
    /// Runs `ops` operations and returns the time they took.
    batch: Box<dyn Fn(u64) -> Duration>,
}

fn subject<S: TimedOp + 'static>(group: &'static str, name: impl Into<String>, lock: S) -> Subject {
    // Leaked, so it lives through both phases and never moves; alone on its line.
    let lock: &'static S = Box::leak(Box::new(CachePadded::new(lock)));
    Subject {
        group,
        name: name.into(),
        criterion: Box::new(move |b| b.iter(|| black_box(lock).op())),
        batch: Box::new(move |ops| time_batch(lock, ops)),
    }
}

/// The interleaved phase's timing loop: the same body as criterion's `iter`.
#[inline(never)]
fn time_batch<S: TimedOp>(lock: &S, ops: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..ops {
        black_box(lock).op();
    }
    start.elapsed()
}

fn spinlab_locks<W: Wait + 'static>(subjects: &mut Vec<Subject>) {
    let p = W::NAME;
    subjects.push(subject("spinlab", format!("tas:{p}"), Raw(Tas::<W>::INIT)));
    subjects.push(subject("spinlab", format!("ttas:{p}"), Raw(Ttas::<W>::INIT)));
    subjects.push(subject("spinlab", format!("ticket:{p}"), Raw(Ticket::<W>::INIT)));
    subjects.push(subject("spinlab", format!("mcs:{p}"), Raw(Mcs::<W>::INIT)));
    // The classic MCS lock, the gate of the registry's `mcs` over sleeping policies.
    subjects.push(subject("spinlab", format!("mcs-queue:{p}"), Raw(McsQueue::<W>::INIT)));
    subjects.push(subject("spinlab", format!("clh:{p}"), Raw(Clh::<W>::INIT)));
    subjects.push(subject("spinlab", format!("fair:{p}"), Raw(Fair::<W>::INIT)));
    subjects.push(subject("spinlab", format!("bounded:{p}"), Raw(Bounded::<W>::INIT)));
    subjects.push(subject("spinlab", format!("gated-ticket:{p}"), Raw(Gated::<Ticket<W>, W>::INIT)));
    // The registry's `mcs` over sleeping policies.
    subjects.push(subject("spinlab", format!("gated-mcs:{p}"), Raw(Gated::<McsQueue<W>, W>::INIT)));
}

const FLOOR_CAS_STORE: &str = "cas+store";
const NOTIFY_SPIN_PARK: &str = "notify condvar:spin-park";
const NOTIFY_PARKING_LOT: &str = "notify parking_lot";
const FLOOR_CAS_SWAP: &str = "cas+swap";
const DEFAULT: &str = "default";
/// The registry name of `DefaultRawMutex`.
const DEFAULT_NAME: &str = "adaptive:pause-yield-park";

fn subjects() -> Vec<Subject> {
    let mut subjects = vec![
        subject("floor", FLOOR_CAS_STORE, CasStore(AtomicU32::new(0))),
        subject("floor", FLOOR_CAS_SWAP, CasSwap(AtomicU32::new(0))),
    ];
    spinlab_locks::<Spin>(&mut subjects);
    spinlab_locks::<SpinPark>(&mut subjects);
    // The default's word alone, as the registry builds it on a machine of a few CPUs.
    subjects.push(subject("spinlab", "bounded:pause-yield-park", Raw(Bounded::<PauseYieldPark>::INIT)));
    // The default's type under its registry name, and again as `default`: the pair's ratio
    // shows how far two identical subjects drift apart in this run. Then the default as it is
    // on a machine of more CPUs than this one may have, the gate forced (`CROWD_CPUS` 0).
    subjects.push(subject("spinlab", DEFAULT_NAME, Raw(Adaptive::<PauseYieldPark>::INIT)));
    subjects.push(subject("spinlab", "adaptive-gated:pause-yield-park", Raw(Adaptive::<PauseYieldPark, 0>::INIT)));
    subjects.push(subject("spinlab", DEFAULT, Raw(DefaultRawMutex::INIT)));
    subjects.push(subject("reference", "std", StdMutex(std::sync::Mutex::new(()))));
    subjects.push(subject("reference", "parking_lot", Raw(parking_lot::RawMutex::INIT)));
    subjects.push(subject("reference", "pthread", Pthread(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER))));
    subjects.push(subject("notify", NOTIFY_SPIN_PARK, Notify(spinlab::Condvar::<SpinPark>::new())));
    subjects.push(subject("notify", "notify condvar:futex", Notify(spinlab::Condvar::<spinlab::wait::Futex>::new())));
    subjects.push(subject("notify", NOTIFY_PARKING_LOT, ParkingLotNotify(parking_lot::Condvar::new())));
    subjects.push(subject("notify", "notify std", StdNotify(std::sync::Condvar::new())));
    subjects
}

fn main() {
    // A second thread, asleep for the whole run. glibc takes a path without atomic
    // instructions for a mutex in a process that has only ever had one thread
    // (`__libc_single_threaded`); no program that needs a lock runs it, and it would put
    // `pthread` below the floors, which are those atomic instructions.
    std::thread::spawn(|| loop {
        std::thread::park();
    });
    let subjects = subjects();
    // ~18 benchmarks at about 3 s each: short enough for a small shared machine;
    // command-line options (`--measurement-time`, ...) still override these.
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50)
        .configure_from_args();
    for group_name in ["floor", "spinlab", "reference", "notify"] {
        let mut group = criterion.benchmark_group(group_name);
        for s in subjects.iter().filter(|s| s.group == group_name) {
            group.bench_function(s.name.as_str(), |b| (s.criterion)(b));
        }
        group.finish();
    }
    criterion.final_summary();

    // criterion keeps its mode private; mirror its rule: benchmark only with `--bench` and
    // without `--test`/`--list`/`--profile-time`.
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag || a.starts_with(&format!("{flag}=")));
    if has("--bench") && !has("--test") && !has("--list") && !has("--profile-time") {
        interleaved::report(&subjects);
    }
}

/// The ratio table, from rounds that interleave every subject.
///
/// How the numbers are computed:
/// - Each subject first gets a batch size that takes about [`BATCH`] (its probes also warm it up).
/// - Then [`ROUNDS`] rounds; each times one batch of every subject, starting at a different
///   subject each round (A B C .. then B C .. A, ...), so no subject is always first or always
///   follows the same neighbour. One batch gives one ns/op sample per subject per round.
/// - ns/op columns: the mean and the median of a subject's per-round samples.
/// - A ratio X/Y is the median, over rounds, of X's sample divided by Y's sample *from the same
///   round*: paired samples were taken milliseconds apart, so slow drift cancels, and the
///   median drops the rounds in which another process preempted one of the pair. The 25th
///   and 75th percentiles of those per-round ratios are printed beside it as its spread, and
///   the ratio of the two means for comparison (means include the preempted rounds).
/// - PASS/MISS compares the median paired ratio with the target's limit.
mod interleaved {
    use super::{
        Subject, DEFAULT, DEFAULT_NAME, FLOOR_CAS_STORE, FLOOR_CAS_SWAP, NOTIFY_PARKING_LOT, NOTIFY_SPIN_PARK,
    };
    use std::time::Duration;

    const BATCH: Duration = Duration::from_micros(100);
    const ROUNDS: usize = 2001;

    pub fn report(subjects: &[Subject]) {
        let ops: Vec<u64> = subjects.iter().map(batch_size).collect();
        // ns_per_op[subject][round]
        let mut ns_per_op = vec![Vec::with_capacity(ROUNDS); subjects.len()];
        for round in 0..ROUNDS {
            for k in 0..subjects.len() {
                let i = (round + k) % subjects.len();
                let took = (subjects[i].batch)(ops[i]);
                ns_per_op[i].push(took.as_nanos() as f64 / ops[i] as f64);
            }
        }
        let index = |name: &str| subjects.iter().position(|s| s.name == name).expect("every named subject exists");
        let ratio = |x: &str, y: &str| paired_ratio(&ns_per_op[index(x)], &ns_per_op[index(y)]);

        println!();
        println!("uncontended lock+unlock, {ROUNDS} interleaved rounds of ~{BATCH:?} per subject");
        println!("machine: {}", machine());
        println!();
        println!("{:<26} {:>8} {:>10}  {:>10} {:>10}", "subject", "mean ns", "median ns", "/cas+store", "/cas+swap");
        for (s, samples) in subjects.iter().zip(&ns_per_op) {
            println!(
                "{:<26} {:>8.2} {:>10.2}  {:>10.3} {:>10.3}",
                s.name,
                mean(samples),
                quantile(samples, 0.5),
                ratio(&s.name, FLOOR_CAS_STORE).median,
                ratio(&s.name, FLOOR_CAS_SWAP).median,
            );
        }

        // (label, numerator, denominator, limit): spinlab's uncontended targets
        // (docs/design.md, "Measurement").
        let mut targets: Vec<(String, String, String, f64)> = Vec::new();
        let mut target = |x: &str, y: &str, limit: f64| targets.push((format!("{x} / {y}"), x.into(), y.into(), limit));
        target(DEFAULT, FLOOR_CAS_SWAP, 1.05);
        target(DEFAULT, "parking_lot", 1.0);
        target(DEFAULT, "std", 1.0);
        target("tas:spin", FLOOR_CAS_STORE, 1.05);
        target("ttas:spin", FLOOR_CAS_STORE, 1.05);
        target("fair:spin", "tas:spin", 1.2);
        target("fair:spin-park", "tas:spin-park", 1.2);
        target("mcs:spin", "tas:spin", 1.3);
        target("clh:spin", "tas:spin", 1.3);
        target("mcs:spin-park", "tas:spin-park", 1.3);
        target("clh:spin-park", "tas:spin-park", 1.3);
        println!();
        println!("{:<32} {:>7}  {:>15}  {:>8}  {:>7}  verdict", "target", "ratio", "[p25, p75]", "of means", "limit");
        for (name, x, y, limit) in &targets {
            let r = ratio(x, y);
            let of_means = mean(&ns_per_op[index(x)]) / mean(&ns_per_op[index(y)]);
            let verdict = if r.median <= *limit { "PASS" } else { "MISS" };
            println!(
                "{name:<32} {:>7.3}  [{:>5.3}, {:>5.3}]  {of_means:>8.3}  <= {limit:<4.2}  {verdict}",
                r.median, r.p25, r.p75
            );
        }
        // No target is set for a notification with nobody waiting; parking_lot's is one
        // load, and so is spinlab's since its condition variable counts its waiters.
        let notify = ratio(NOTIFY_SPIN_PARK, NOTIFY_PARKING_LOT);
        println!();
        println!(
            "{NOTIFY_SPIN_PARK} / {NOTIFY_PARKING_LOT} (nobody waiting) = {:.3} [{:.3}, {:.3}]",
            notify.median, notify.p25, notify.p75
        );
        let same = ratio(DEFAULT, DEFAULT_NAME);
        println!();
        println!(
            "noise gauge: {DEFAULT} / {DEFAULT_NAME} (the same type) = {:.3} [{:.3}, {:.3}]",
            same.median, same.p25, same.p75
        );
    }

    /// Operations that take about `BATCH`, from the fastest of a few probes (a preempted probe
    /// can only be slower, and must not shrink the batch).
    fn batch_size(s: &Subject) -> u64 {
        const PROBE_OPS: u64 = 16_384;
        let fastest = (0..5).map(|_| (s.batch)(PROBE_OPS)).min().unwrap_or(BATCH).max(Duration::from_nanos(1));
        (PROBE_OPS as f64 * BATCH.as_secs_f64() / fastest.as_secs_f64()).ceil() as u64
    }

    struct Ratio {
        median: f64,
        p25: f64,
        p75: f64,
    }

    fn paired_ratio(x: &[f64], y: &[f64]) -> Ratio {
        let per_round: Vec<f64> = x.iter().zip(y).map(|(x, y)| x / y).collect();
        Ratio { median: quantile(&per_round, 0.5), p25: quantile(&per_round, 0.25), p75: quantile(&per_round, 0.75) }
    }

    fn mean(samples: &[f64]) -> f64 {
        samples.iter().sum::<f64>() / samples.len() as f64
    }

    /// The `q` quantile, by the nearest rank.
    fn quantile(samples: &[f64], q: f64) -> f64 {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted[((sorted.len() - 1) as f64 * q).round() as usize]
    }

    fn machine() -> String {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(str::trim)
                    .map(String::from)
            })
            .unwrap_or_else(|| "unknown CPU".into());
        let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
        format!("{cpu}, {cpus} CPUs available")
    }
}
