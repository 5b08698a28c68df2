//! Active workloads: seed 000 §III.D's benchmarks, the threads whose slowdown `spinlab run
//! interference` measures. Each does a fixed amount of work per call and returns a checksum
//! (so the work cannot be elided, and tests can compare it with a reference).
//!
//! - single-behaviour ([`single`]): `add`, `mul`, `branch` (long runs of one instruction, as
//!   000's 512-instruction loops), `l1` (loads hitting in half the L1d), `l2` (loads that miss
//!   the L1d and hit in half the L2);
//! - multiple-behaviour ([`multiple`]): `mbv-int`, `mbv-fp` (matrix by vector over a matrix
//!   larger than the last-level cache; the int variant non-sequential), `sort` (recursive
//!   quicksort), `hash` (random integers into a large 2-D hash table).
//!
//! Sizes follow this machine's caches ([`CacheSizes`]) the way 000's followed the T1/T2's:
//! see [`Sizes::for_caches`] for each rule. The amount of work per call is a number of
//! *units* (a block of 512 instructions, one matrix-vector product, one sort, one batch of
//! inserts), chosen once by [`Active::calibrate`] to take about a target time.

pub mod counters;
pub mod multiple;
pub mod single;

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

/// One of seed 000's active benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// Integer additions (000: ADD).
    Add,
    /// 64-bit integer multiplications (000: MULX).
    Mul,
    /// Taken unconditional branches (000: BAA).
    Branch,
    /// Loads that hit in the L1 data cache (000: L1 hit).
    L1,
    /// Loads that miss the L1 and hit in the L2 (000: L2 hit).
    L2,
    /// Integer matrix by vector, non-sequential (000: MbV INT).
    MbvInt,
    /// Floating-point matrix by vector, sequential (000: MbV FP).
    MbvFp,
    /// Recursive quicksort (000: QuickSort).
    Sort,
    /// Inserts into a 2-D hash table (000: Hash).
    Hash,
}

impl Workload {
    /// Every workload, single-behaviour first, in 000's order.
    pub const ALL: [Workload; 9] = [
        Workload::Add,
        Workload::Mul,
        Workload::Branch,
        Workload::L1,
        Workload::L2,
        Workload::MbvInt,
        Workload::MbvFp,
        Workload::Sort,
        Workload::Hash,
    ];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Add => "add",
            Workload::Mul => "mul",
            Workload::Branch => "branch",
            Workload::L1 => "l1",
            Workload::L2 => "l2",
            Workload::MbvInt => "mbv-int",
            Workload::MbvFp => "mbv-fp",
            Workload::Sort => "sort",
            Workload::Hash => "hash",
        }
    }

    /// `single` or `multiple` behaviour (000's two groups).
    pub fn behaviour(self) -> &'static str {
        match self {
            Workload::Add | Workload::Mul | Workload::Branch | Workload::L1 | Workload::L2 => "single",
            _ => "multiple",
        }
    }

    /// Parses a name; the error lists the accepted ones.
    pub fn parse(name: &str) -> Result<Workload, String> {
        Workload::ALL.into_iter().find(|w| w.name() == name).ok_or_else(|| {
            format!("unknown workload `{name}`; accepted: {}", Workload::ALL.map(Workload::name).join(", "))
        })
    }

    /// A comma-separated list, duplicates dropped.
    pub fn parse_list(text: &str) -> Result<Vec<Workload>, String> {
        let mut out = Vec::new();
        for item in crate::select::split_list(text)? {
            let w = Workload::parse(item)?;
            if !out.contains(&w) {
                out.push(w);
            }
        }
        Ok(out)
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The data caches the workloads are sized for, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSizes {
    /// Level-1 data cache of one core.
    pub l1d: u64,
    /// Level-2 cache of one core.
    pub l2: u64,
    /// The last-level cache.
    pub llc: u64,
}

/// The cache sizes the workloads are sized for, and which of them were assumed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caches {
    /// The sizes.
    pub sizes: CacheSizes,
    /// The levels (`l1d`, `l2`, `llc`) the OS did not list, taken from a common server core.
    pub assumed: Vec<&'static str>,
}

/// Assumed where the OS lists no cache (a common x86 server core).
const FALLBACK: CacheSizes = CacheSizes { l1d: 32 << 10, l2: 1 << 20, llc: 32 << 20 };

impl CacheSizes {
    /// The caches of `cpu` as `sys_root`'s `devices/system/cpu/cpuN/cache` lists them; a level
    /// it does not list is taken from a common server core (32 KiB, 1 MiB, 32 MiB) and named
    /// in [`Caches::assumed`].
    pub fn read(sys_root: &Path, cpu: usize) -> Caches {
        let dir = sys_root.join(format!("devices/system/cpu/cpu{cpu}/cache"));
        let mut found: Vec<(u32, String, u64)> = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let p = e.path();
                let read = |f: &str| std::fs::read_to_string(p.join(f)).map(|s| s.trim().to_string()).ok();
                let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size")) else {
                    continue;
                };
                if let (Ok(level), Some(size)) = (level.parse::<u32>(), parse_size(&size)) {
                    found.push((level, kind, size));
                }
            }
        }
        let data =
            |level: u32| found.iter().filter(|(l, k, _)| *l == level && k != "Instruction").map(|(_, _, s)| *s).max();
        let top = found.iter().filter(|(_, k, _)| k != "Instruction").map(|(l, _, _)| *l).max();
        let mut assumed = Vec::new();
        let mut pick = |v: Option<u64>, fallback: u64, name: &'static str| {
            v.unwrap_or_else(|| {
                assumed.push(name);
                fallback
            })
        };
        let l1d = pick(data(1), FALLBACK.l1d, "l1d");
        let l2 = pick(data(2), FALLBACK.l2, "l2");
        let llc = pick(top.filter(|&t| t >= 2).and_then(data), FALLBACK.llc, "llc");
        Caches { sizes: CacheSizes { l1d, l2, llc }, assumed }
    }

    /// The size each of `--cache-sizes` may be: 1 KiB to 1 GiB. The largest workload data is
    /// twice the last-level cache (`mbv-int`, `mbv-fp`), so at most 2 GiB.
    pub const LIMITS: (u64, u64) = (1 << 10, 1 << 30);

    /// What `--cache-sizes` accepts, in words.
    pub const ACCEPTED: &'static str = "three sizes L1D,L2,LLC such as 32K,512K,32M, each from 1K to 1G";

    /// Parses `L1D,L2,LLC` sizes such as `32K,512K,32M` (for `--cache-sizes`), each within
    /// [`CacheSizes::LIMITS`].
    pub fn parse(text: &str) -> Result<CacheSizes, String> {
        let accepted = CacheSizes::ACCEPTED;
        let (min, max) = CacheSizes::LIMITS;
        let parts = crate::select::split_list(text)?;
        let sizes: Vec<u64> = parts
            .iter()
            .map(|p| match parse_size(p) {
                Some(s) if (min..=max).contains(&s) => Ok(s),
                Some(_) => Err(format!("`{p}` is outside the limits; accepted: {accepted}")),
                None => Err(format!("`{p}` is not a cache size; accepted: {accepted}")),
            })
            .collect::<Result<_, _>>()?;
        match sizes[..] {
            [l1d, l2, llc] => Ok(CacheSizes { l1d, l2, llc }),
            _ => Err(format!("`{text}` has {} sizes; accepted: {accepted}", sizes.len())),
        }
    }
}

/// `32K`, `512K`, `32M`, `1G` or plain bytes; `None` for anything else, or a size past `u64`.
fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, scale) = match t.char_indices().last()? {
        (i, 'K' | 'k') => (&t[..i], 1u64 << 10),
        (i, 'M' | 'm') => (&t[..i], 1 << 20),
        (i, 'G' | 'g') => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    digits.trim().parse::<u64>().ok().and_then(|n| n.checked_mul(scale))
}

/// The data sizes of every workload, from the caches, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// `l1`'s pointer-chase buffer: half the L1d (000: 4 KB of 8 KB).
    pub l1_bytes: u64,
    /// `l2`'s buffer: half the L2 (000: 1.5 MB of 3 MB, 2 MB of 4 MB).
    pub l2_bytes: u64,
    /// `mbv-int`'s matrix: twice the last-level cache (000: 800 MB against a 3-4 MB L2; what
    /// matters is that it does not fit, and twice keeps one product near 000's time scale).
    pub mbv_int_bytes: u64,
    /// `mbv-fp`'s matrix: twice the last-level cache too (000's was half of mbv-int's 800 MB,
    /// still far beyond its cache).
    pub mbv_fp_bytes: u64,
    /// `sort`'s array: ten times the L1d (000: 80 KB, ten times T1's 8 KB L1d, well inside
    /// its L2), but at most half the L2, so it stays L2-resident as 000's did.
    pub sort_bytes: u64,
    /// `hash`'s table: two thirds of the last-level cache (000: about 2 MB against T1's 3 MB).
    pub hash_bytes: u64,
}

impl Sizes {
    /// The sizes for `caches`, by the rules on each field.
    pub fn for_caches(caches: CacheSizes) -> Sizes {
        Sizes {
            l1_bytes: caches.l1d / 2,
            l2_bytes: caches.l2 / 2,
            mbv_int_bytes: caches.llc * 2,
            mbv_fp_bytes: caches.llc * 2,
            sort_bytes: (caches.l1d * 10).min(caches.l2 / 2),
            hash_bytes: caches.llc * 2 / 3,
        }
    }

    /// The bytes `workload` works over (0 for those without data).
    pub fn bytes(&self, workload: Workload) -> u64 {
        match workload {
            Workload::Add | Workload::Mul | Workload::Branch => 0,
            Workload::L1 => self.l1_bytes,
            Workload::L2 => self.l2_bytes,
            Workload::MbvInt => self.mbv_int_bytes,
            Workload::MbvFp => self.mbv_fp_bytes,
            Workload::Sort => self.sort_bytes,
            Workload::Hash => self.hash_bytes,
        }
    }
}

/// A workload with its data built, ready to run `units` units per call.
pub struct Active {
    workload: Workload,
    units: u64,
    state: State,
}

enum State {
    Add,
    Mul,
    Branch,
    Chase(single::Chase),
    MbvInt(multiple::MbvInt),
    MbvFp(multiple::MbvFp),
    Sort(multiple::Sort),
    Hash(multiple::Hash),
}

/// The seed every workload's data and random numbers start from.
pub const SEED: u64 = 0x5eed_000d;

impl Active {
    /// Builds `workload`'s data for `sizes` (allocation and initialisation happen here, not in
    /// [`Active::run`]).
    pub fn new(workload: Workload, sizes: &Sizes, units: u64) -> Active {
        let state = match workload {
            Workload::Add => State::Add,
            Workload::Mul => State::Mul,
            Workload::Branch => State::Branch,
            Workload::L1 => State::Chase(single::Chase::new(sizes.l1_bytes, SEED)),
            Workload::L2 => State::Chase(single::Chase::new(sizes.l2_bytes, SEED)),
            Workload::MbvInt => State::MbvInt(multiple::MbvInt::new(sizes.mbv_int_bytes, SEED)),
            Workload::MbvFp => State::MbvFp(multiple::MbvFp::new(sizes.mbv_fp_bytes, SEED)),
            Workload::Sort => State::Sort(multiple::Sort::new(sizes.sort_bytes, SEED)),
            Workload::Hash => State::Hash(multiple::Hash::new(sizes.hash_bytes)),
        };
        Active { workload, units: units.max(1), state }
    }

    /// Which workload this is.
    pub fn workload(&self) -> Workload {
        self.workload
    }

    /// Units per call.
    pub fn units(&self) -> u64 {
        self.units
    }

    /// Sets the units per call.
    pub fn set_units(&mut self, units: u64) {
        self.units = units.max(1);
    }

    /// Does the fixed amount of work and returns its checksum; every call does the same work
    /// and returns the same checksum.
    pub fn run(&mut self) -> u64 {
        let units = self.units;
        match &mut self.state {
            State::Add => single::add(units, SEED),
            State::Mul => single::mul(units, SEED),
            State::Branch => single::branch(units),
            State::Chase(c) => c.walk(units),
            // Repeated products and sorts give the same value each time: rotate before
            // combining, so the units do not cancel out.
            State::MbvInt(m) => (0..units).fold(0, |acc: u64, _| acc.rotate_left(1) ^ m.run()),
            State::MbvFp(m) => (0..units).fold(0, |acc: u64, _| acc.rotate_left(1) ^ m.run()),
            State::Sort(s) => (0..units).fold(0, |acc: u64, _| acc.rotate_left(1) ^ s.run()),
            State::Hash(h) => h.run(units, SEED),
        }
    }

    /// Sets the units so one call takes about `target` on the calling thread (at least one
    /// unit); see `units_for`.
    pub fn calibrate(&mut self, target: Duration) {
        let units = units_for(target, |units| {
            self.set_units(units);
            let call_started = Instant::now();
            std::hint::black_box(self.run());
            call_started.elapsed()
        });
        self.set_units(units);
    }
}

/// How close a calibrated call must come to its target before [`units_for`] stops refining.
const CALIBRATION_TOLERANCE: f64 = 0.05;
/// The most refining calls [`units_for`] makes.
const CALIBRATION_ROUNDS: usize = 4;
/// Calls are calibrated at no more than this, then scaled: long enough that a call's time is
/// proportional to its units, short enough that a refining call stays cheap.
const CALIBRATION_CEILING: Duration = Duration::from_millis(100);

/// The units for which one call takes about `target`, given `time(units)`, which runs one
/// call of that many units and returns how long it took.
///
/// A first estimate comes from one-unit calls (one warm, then the fastest of three). A single
/// unit takes a fraction of a microsecond, where the clock's own cost and a cold pipeline
/// weigh, so that estimate can be off several times over in either direction. It is refined
/// by timing calls of the estimated size and rescaling, until one lands within
/// [`CALIBRATION_TOLERANCE`] of `min(target, CALIBRATION_CEILING)`, then scaled up to
/// `target`.
pub(crate) fn units_for(target: Duration, mut time: impl FnMut(u64) -> Duration) -> u64 {
    let seconds = |d: Duration| d.as_secs_f64().max(1e-9);
    let aim = target.min(CALIBRATION_CEILING);
    time(1);
    let one = (0..3).map(|_| time(1)).min().unwrap_or(Duration::ZERO);
    let mut units = (seconds(aim) / seconds(one)).round().max(1.0);
    for _ in 0..CALIBRATION_ROUNDS {
        let off = seconds(aim) / seconds(time(units as u64));
        units = (units * off).round().max(1.0);
        if (off - 1.0).abs() <= CALIBRATION_TOLERANCE {
            break;
        }
    }
    (units * seconds(target) / seconds(aim)).round().max(1.0) as u64
}

/// A small, fast, deterministic generator (xorshift64*), so data and checksums are the same
/// on every run and in the tests' reference implementations.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value; zero is replaced).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (`n` > 0).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// A random cyclic permutation of `0..n` (Sattolo): `next[i]` is the element after `i`, and
/// following `next` from any element visits all `n` before returning.
pub fn random_cycle(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.below(i as u64) as usize;
        order.swap(i, j);
    }
    let mut next = vec![0; n];
    for k in 0..n {
        next[order[k]] = order[(k + 1) % n];
    }
    next
}

/// A random permutation of `0..n` (Fisher-Yates).
pub fn shuffled(n: usize, rng: &mut Rng) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call of `units` that costs a fixed 300 ns (the clock, a cold pipeline) plus 10 ns a
    /// unit: timed one unit at a time, a unit looks 31 times dearer than it is.
    fn fake_call(units: u64) -> Duration {
        Duration::from_nanos(300 + 10 * units)
    }

    #[test]
    fn calibration_refines_an_estimate_that_one_unit_calls_got_wrong() {
        let mut calls = 0;
        let units = units_for(Duration::from_millis(100), |u| {
            calls += 1;
            fake_call(u)
        });
        let took = fake_call(units).as_secs_f64();
        assert!((took / 0.1 - 1.0).abs() <= CALIBRATION_TOLERANCE, "{units} units take {took} s");
        assert!(calls <= 4 + CALIBRATION_ROUNDS, "{calls} calls");
    }

    #[test]
    fn a_target_past_the_ceiling_is_scaled_from_a_calibrated_call() {
        let mut longest = 0;
        let units = units_for(Duration::from_secs(2), |u| {
            longest = longest.max(u);
            fake_call(u)
        });
        let took = fake_call(units).as_secs_f64();
        assert!((took / 2.0 - 1.0).abs() <= CALIBRATION_TOLERANCE, "{units} units take {took} s");
        // No refining call ran much past the ceiling.
        assert!(fake_call(longest) <= 2 * CALIBRATION_CEILING, "a refining call of {longest} units");
    }

    #[test]
    fn names_parse_and_unknown_ones_list_the_valid_ones() {
        for w in Workload::ALL {
            assert_eq!(Workload::parse(w.name()), Ok(w));
        }
        let err = Workload::parse("fft").unwrap_err();
        assert!(err.contains("`fft`") && err.contains("mbv-int") && err.contains("hash"), "{err}");
        assert_eq!(Workload::parse_list("add,hash,add").unwrap(), [Workload::Add, Workload::Hash]);
    }

    #[test]
    fn cache_sizes_parse_and_size_the_workloads_as_000_did() {
        let c = CacheSizes::parse("32K,512K,32M").unwrap();
        assert_eq!(c, CacheSizes { l1d: 32 << 10, l2: 512 << 10, llc: 32 << 20 });
        let s = Sizes::for_caches(c);
        assert_eq!(s.l1_bytes, 16 << 10);
        assert_eq!(s.l2_bytes, 256 << 10);
        assert_eq!(s.sort_bytes, 256 << 10, "ten L1s would not stay inside half the L2");
        assert!(s.mbv_int_bytes > c.llc && s.mbv_fp_bytes > c.llc && s.hash_bytes < c.llc);
        assert!(CacheSizes::parse("32K,512K").is_err());
        assert!(CacheSizes::parse("32K,big,1M").unwrap_err().contains("`big`"));
    }

    #[test]
    fn cache_sizes_fall_back_where_sysfs_lists_none() {
        let caches = CacheSizes::read(Path::new("/nonexistent"), 0);
        assert_eq!(caches.sizes, FALLBACK);
        assert_eq!(caches.assumed, ["l1d", "l2", "llc"]);
    }

    #[test]
    fn random_cycles_visit_everything_once() {
        let next = random_cycle(100, &mut Rng::new(7));
        let mut seen = [false; 100];
        let mut i = 0;
        for _ in 0..100 {
            assert!(!seen[i]);
            seen[i] = true;
            i = next[i];
        }
        assert_eq!(i, 0);
        let mut p = shuffled(50, &mut Rng::new(3));
        p.sort_unstable();
        assert_eq!(p, (0..50).collect::<Vec<u32>>());
    }

    #[test]
    fn every_call_does_the_same_work() {
        let sizes = Sizes::for_caches(CacheSizes { l1d: 1 << 10, l2: 4 << 10, llc: 16 << 10 });
        for w in Workload::ALL {
            let mut a = Active::new(w, &sizes, 2);
            let first = a.run();
            assert_eq!(a.run(), first, "{w}");
        }
    }
}
