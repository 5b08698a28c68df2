#![cfg_attr(loom, allow(dead_code))]
//! Seed 000's `L2miss` loop body: one load per iteration that always misses the last-level
//! cache, from a pointer chase confined to a few cache sets.
//!
//! The chase visits one 64-byte line per 4 KiB page, always at the same page offset. Address
//! bits 6-11 pick part of a set index in every cache level, so all lines of the chase fall into
//! the 1/64 of each cache's sets that share those bits; the chase covers at least twice the
//! capacity of that slice of the last-level cache, in a random cyclic order, so every load
//! misses. Higher set-index bits come from physical page numbers, which user space does not
//! control, so this is as narrow as the confinement can be without huge pages. The neighbours
//! lose at most the lines of that slice, which is what seed 000 aimed for on the T1/T2 L2,
//! however long the chase: a longer one evicts the same sets, only more often.
//!
//! **The size is measured, not only read.** Twice the slice of the cache Linux reports is not
//! always a miss: on the project's 2-vCPU EPYC guest, which reports a 32 MiB L3, such a chase
//! took 41-69 ns a step (it hit in a larger cache than the guest is told of), and one of four
//! to sixteen times the slice 184-234 ns, a load from memory. So the first use builds the
//! longest chase allowed ([`LARGEST`] times the reported cache, at most [`most_bytes`]) as a
//! reference, then tries seed 000's size and its doublings below it, and keeps the shortest
//! whose steps take at least [`SETTLED`] of the reference's.
//! Comparing each size with the next doubling instead would stop at once where both hit.
//! [`chase_size`] says what was tried and kept; the lab records it beside its measurements of
//! the `miss` policy. A cache larger than the longest chase would fool the search; nothing in
//! user space can tell that from a machine whose memory is that fast.
//!
//! The buffer is allocated on first use and never freed; sizing it takes a few hundred
//! milliseconds once per process (page faults, and a few thousand timed steps per size), and
//! the reference's memory (up to [`most_bytes`]) until a shorter chase is kept.

use super::{Episode, Wait};
use crate::sync::AtomicU32;
use std::sync::OnceLock;

/// Re-read plus one last-level-cache miss per iteration.
#[derive(Debug, Clone, Copy, Default)]
pub struct Miss;

impl Wait for Miss {
    const NAME: &'static str = "miss";
    #[inline]
    fn relax(_: &AtomicU32, _: u32, _: &mut Episode) -> bool {
        #[cfg(not(loom))]
        chase_one();
        true
    }
}

const PAGE: usize = 4096;

#[repr(C, align(4096))]
struct Page {
    /// Index of the next page of the chase; the rest of the page is never touched.
    next: u32,
}

struct Chase {
    pages: Box<[Page]>,
}

std::thread_local! {
    /// Where this thread's walk stands, so threads do not share one hot cursor.
    static CURSOR: core::cell::Cell<u32> = const { core::cell::Cell::new(0) };
}

#[cfg(not(loom))]
#[inline]
fn chase_one() {
    let chase = chase();
    CURSOR.with(|cursor| {
        let at = cursor.get() as usize % chase.pages.len();
        // SAFETY: `at` is in bounds; a volatile read keeps the compiler from dropping a load
        // whose only purpose is its latency.
        let next = unsafe { core::ptr::read_volatile(&chase.pages[at].next) };
        cursor.set(next);
    });
}

/// A chase misses, as far as the search can tell, once its steps take at least this share of
/// the longest chase's. Below it the chase still hits somewhere: on the 2-vCPU EPYC guest a
/// chase of twice the reported slice took 0.25-0.34 of the longest's time a step, and one of
/// four times 0.79-0.97 (the longest is slower still, from its page-table walks).
pub const SETTLED: f64 = 0.7;

/// The longest chase, the search's reference, in multiples of the reported last-level
/// cache's bytes: eight times seed 000's size, and never more than [`most_bytes`].
pub const LARGEST: usize = 16;

/// The most memory the reference chase may take: 1/32 of the machine's memory, or 256 MiB if
/// that is more (it is freed once a shorter chase is kept).
pub fn most_bytes() -> usize {
    // SAFETY: sysconf reads a system setting; -1 (unknown) is handled.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    let memory = usize::try_from(pages).unwrap_or(0).saturating_mul(PAGE);
    (memory / 32).max(256 << 20)
}

/// Steps timed per trial, and trials per size: the fastest trial counts, since preemption
/// and other load only ever slow a trial down.
const STEPS: usize = 4096;
const TRIALS: usize = 7;

/// How this process's miss-loop chase was sized (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct ChaseSize {
    /// The last-level cache Linux reports for CPU 0, in bytes.
    pub reported_llc_bytes: usize,
    /// The chase's pages (one line read from each), and so its bytes of memory divided by
    /// 4096.
    pub pages: usize,
    /// Each size tried, in order, the reference last: its pages and its fastest trial's
    /// nanoseconds per step.
    pub tried: Vec<(usize, f64)>,
    /// Whether a chase shorter than the reference kept its pace (`false`: only the reference
    /// did, so nothing shows that even its loads miss).
    pub settled: bool,
}

impl ChaseSize {
    /// The kept size's nanoseconds per step (one load that misses, when settled).
    pub fn step_ns(&self) -> f64 {
        self.tried.iter().find(|&&(pages, _)| pages == self.pages).map_or(f64::NAN, |&(_, ns)| ns)
    }

    /// The chase's memory, in bytes (one page per line read).
    pub fn bytes(&self) -> usize {
        self.pages * PAGE
    }

    /// The chase's length in multiples of twice the reported cache's slice (1: seed 000's
    /// size on a cache reported truly).
    pub fn multiple(&self) -> f64 {
        self.pages as f64 / chase_pages(self.reported_llc_bytes) as f64
    }
}

/// Sizes the chase on first use and says how (a few hundred milliseconds the first time).
pub fn chase_size() -> &'static ChaseSize {
    &sized().1
}

#[cfg(not(loom))]
fn chase() -> &'static Chase {
    &sized().0
}

fn sized() -> &'static (Chase, ChaseSize) {
    static SIZED: OnceLock<(Chase, ChaseSize)> = OnceLock::new();
    SIZED.get_or_init(|| {
        let llc = last_level_cache_bytes();
        let (chase, tried, settled) =
            size_below_longest(chase_pages(llc), (LARGEST * llc).min(most_bytes()) / PAGE, build_chase, step_ns);
        let pages = chase.pages.len();
        (chase, ChaseSize { reported_llc_bytes: llc, pages, tried, settled })
    })
}

/// The search: build the longest chase allowed (`most` pages, or the largest power-of-two
/// multiple of `first` within it) and time it as the reference, then try `first`, `2 first`,
/// ... below it, and keep the shortest whose step takes at least [`SETTLED`] of the
/// reference's. Returns the kept chase, every size tried with its time (the reference last),
/// and whether a shorter size kept the reference's pace (`false`: only the reference itself
/// did, so nothing says that even it misses). `time` times one chase, alone: every chase
/// reads lines of the same cache sets, so timing two in turn would have each evict the other.
fn size_below_longest<C>(
    first: usize,
    most: usize,
    build: impl Fn(usize) -> C,
    time: impl Fn(&C) -> f64,
) -> (C, Vec<(usize, f64)>, bool) {
    let mut longest = first;
    while longest * 2 <= most {
        longest *= 2;
    }
    let reference = build(longest);
    let reference_ns = time(&reference);
    let mut tried = Vec::new();
    let mut pages = first;
    while pages < longest {
        let candidate = build(pages);
        let ns = time(&candidate);
        tried.push((pages, ns));
        if ns >= SETTLED * reference_ns {
            tried.push((longest, reference_ns));
            return (candidate, tried, true);
        }
        pages *= 2;
    }
    tried.push((longest, reference_ns));
    (reference, tried, false)
}

/// Follows `steps` links of `chase` from page `from`; returns where it ended.
fn walk(chase: &Chase, from: u32, steps: usize) -> u32 {
    let mut at = from;
    for _ in 0..steps {
        // SAFETY: every `next` is in bounds (build_chase); volatile keeps the load.
        at = unsafe { core::ptr::read_volatile(&chase.pages[at as usize].next) };
    }
    at
}

/// The fastest of [`TRIALS`] trials of [`STEPS`] steps through `chase`, in nanoseconds a step.
/// The chase is first walked once round its whole cycle, and every trial goes on from where
/// the last one stopped, as the loop does: a trial that began at the same page each time would
/// re-read the same few thousand lines, which may well stay cached.
fn step_ns(chase: &Chase) -> f64 {
    let mut at = walk(chase, 0, chase.pages.len());
    let mut best = f64::INFINITY;
    for _ in 0..TRIALS {
        let started = std::time::Instant::now();
        at = core::hint::black_box(walk(chase, at, STEPS));
        best = best.min(started.elapsed().as_nanos() as f64 / STEPS as f64);
    }
    best
}

/// Pages to chase for a last-level cache of `llc_bytes`: twice the capacity of the sets the
/// chase can reach (one 64th of the cache, see the module docs), one line per page.
pub(crate) fn chase_pages(llc_bytes: usize) -> usize {
    (2 * llc_bytes / PAGE).max(64)
}

/// A random single cycle through `n` pages (Sattolo's algorithm), so the hardware prefetcher
/// sees no stride and the walk never falls into a short loop.
fn build_chase(n: usize) -> Chase {
    let mut pages: Vec<Page> = (0..n).map(|_| Page { next: 0 }).collect();
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..n).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = (state % i as u64) as usize;
        order.swap(i, j);
    }
    for (k, &from) in order.iter().enumerate() {
        pages[from as usize].next = order[(k + 1) % n];
    }
    Chase { pages: pages.into_boxed_slice() }
}

/// The size of the largest data or unified cache Linux reports for CPU 0 (32 MiB if sysfs
/// does not say).
pub(crate) fn last_level_cache_bytes() -> usize {
    let mut largest = 0;
    for index in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{index}");
        let Ok(kind) = std::fs::read_to_string(format!("{dir}/type")) else { continue };
        if kind.trim() == "Instruction" {
            continue;
        }
        if let Some(bytes) = std::fs::read_to_string(format!("{dir}/size")).ok().and_then(|s| parse_cache_size(&s)) {
            largest = largest.max(bytes);
        }
    }
    if largest == 0 {
        32 << 20
    } else {
        largest
    }
}

/// Parses sysfs cache sizes such as `32768K` or `1M`.
pub(crate) fn parse_cache_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, ""),
    };
    let n: usize = digits.parse().ok()?;
    match unit {
        "" => Some(n),
        "K" => Some(n << 10),
        "M" => Some(n << 20),
        "G" => Some(n << 30),
        _ => None,
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_chase_is_one_cycle_through_every_page() {
        let chase = build_chase(1000);
        let mut seen = vec![false; 1000];
        let mut at = 0usize;
        for _ in 0..1000 {
            assert!(!seen[at], "page {at} visited twice before the cycle closed");
            seen[at] = true;
            at = chase.pages[at].next as usize;
        }
        assert_eq!(at, 0);
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn every_line_of_the_chase_has_the_same_page_offset() {
        let chase = build_chase(16);
        for page in chase.pages.iter() {
            assert_eq!(&page.next as *const u32 as usize % PAGE, 0);
        }
    }

    /// A cache model for the search: steps take 50 ns up to `fits` pages, then 190 ns, and
    /// 200 ns at 800 pages (page-table walks).
    fn search(first: usize, most: usize, fits: usize) -> (usize, Vec<(usize, f64)>, bool) {
        let ns = |pages: usize| match pages {
            p if p <= fits => 50.0,
            p if p < 800 => 190.0,
            _ => 200.0,
        };
        size_below_longest(first, most, |pages| pages, |&pages: &usize| ns(pages))
    }

    #[test]
    fn the_shortest_chase_at_the_longests_pace_is_kept() {
        // Reported truly: seed 000's size already misses.
        assert_eq!(search(100, 800, 50), (100, vec![(100, 190.0), (800, 200.0)], true));
        // A cache three times the reported one (the 2-vCPU EPYC guest): 100 and 200 pages hit.
        assert_eq!(search(100, 800, 300), (400, vec![(100, 50.0), (200, 50.0), (400, 190.0), (800, 200.0)], true));
        // Both of the first two sizes hit: a doubling would have looked no slower.
        assert_eq!(search(100, 1000, 250), (400, vec![(100, 50.0), (200, 50.0), (400, 190.0), (800, 200.0)], true));
        // Nothing shorter than the reference keeps its pace: the reference, unsettled.
        assert_eq!(search(100, 800, 700), (800, vec![(100, 50.0), (200, 50.0), (400, 50.0), (800, 200.0)], false));
        // No room for a reference longer than the first size.
        assert_eq!(search(100, 150, 0), (100, vec![(100, 190.0)], false));
    }

    #[test]
    fn this_machines_chase_is_one_of_the_sizes_tried_within_the_limits() {
        let size = chase_size();
        let first = chase_pages(size.reported_llc_bytes);
        assert_eq!(size.tried[0].0, first, "{size:?}");
        assert!(size.tried.iter().any(|&(pages, _)| pages == size.pages), "{size:?}");
        assert!(
            size.pages >= first && size.pages * PAGE <= (LARGEST * size.reported_llc_bytes).min(most_bytes()),
            "{size:?}"
        );
        assert!(size.pages.is_multiple_of(first) && (size.pages / first).is_power_of_two(), "{size:?}");
        assert!(size.step_ns() > 0.0 && size.multiple() >= 1.0, "{size:?}");
        assert_eq!(chase().pages.len(), size.pages, "the loop reads the chase that was timed");
    }

    #[test]
    fn sizes_parse_and_the_chase_outgrows_its_cache_slice() {
        assert_eq!(parse_cache_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_cache_size("1M"), Some(1 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("lots"), None);
        // 32 MiB LLC: its slice reachable at one page offset is 512 KiB = 8192 lines.
        assert_eq!(chase_pages(32 << 20), 16384);
        assert!(last_level_cache_bytes() >= 1 << 20);
    }
}
