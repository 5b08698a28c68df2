#![cfg_attr(loom, allow(dead_code))]
//! Seed 000's `L2miss` loop body: one load per iteration that always misses the last-level
//! cache, from a pointer chase confined to a few cache sets.
//!
//! The chase visits one 64-byte line per 4 KiB page, always at the same page offset. Address
//! bits 6-11 pick part of a set index in every cache level, so all lines of the chase fall into
//! the 1/64 of each cache's sets that share those bits; the chase covers at least twice the
//! capacity of that slice of the last-level cache, in a random cyclic order, so every load
//! misses. Higher set-index bits come from physical page numbers, which user space does not
//! control on 4 KiB pages; on the huge pages the chase asks for (below) it could confine itself
//! further, but it keeps one line per 4 KiB so that its footprint does not depend on whether
//! the kernel grants them. The neighbours lose at most the lines of that slice, which is what
//! seed 000 aimed for on the T1/T2 L2, however long the chase: a longer one evicts the same
//! sets, only more often.
//!
//! **The size is measured, not only read.** Twice the slice of the cache Linux reports is not
//! always a miss: a virtual machine may be told of a smaller cache than its host's, and how
//! much of the host's it gets can change from minute to minute, so that such a chase hits at
//! times (docs/design.md, "Wait policies"). So the first use builds the longest chase allowed
//! ([`LARGEST`] times the reported cache, at most [`most_bytes`]) as a reference, tries seed
//! 000's size and its doublings below it until one's steps take at least [`SETTLED`] of the
//! reference's, and keeps the chase twice that one's length. Comparing each size with the next
//! doubling instead would stop at once where both hit. [`chase_size`] says what was tried and
//! kept; the lab records it beside its measurements of the `miss` policy. A cache larger than
//! the longest chase would fool the search; nothing in user space can tell that from a machine
//! whose memory is that fast.
//!
//! The pages are offered to the kernel as transparent huge pages, so that a step costs one
//! load and no page-table walk (see [`Mapped`]); the confinement to a slice of the sets is the
//! same, since it rests on the page offset.
//!
//! The buffer is allocated on first use and never freed; sizing it takes up to about a second
//! once per process (page faults, a walk round each chase, and a few thousand timed steps per
//! size), and the reference's memory (up to [`most_bytes`]) until a shorter chase is kept.
//! Unlike the values of [`sys::measured`](crate::sys::measured), it is sized by one thread
//! while the others wait (two searches at once would evict each other's chases and read every
//! size wrong), so a process that forks mid-search leaves its child waiting for ever: call
//! [`chase_size`] before forking (the preload library sizes it before `main`).

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
    pages: Mapped,
}

/// Pages mapped for a chase: anonymous memory aligned to [`HUGE_PAGE`] and offered to the
/// kernel for transparent huge pages (`MADV_HUGEPAGE`), so that a chase's steps find their
/// page in the TLB. On 4 KiB pages each step also misses the TLB, and its page-table walk
/// misses the caches as often as not, so that a step's cost varies from run to run. Where the
/// kernel grants no huge page, the chase still works, on small pages.
struct Mapped {
    /// The whole mapping, as mmap returned it, and its length (for munmap).
    map: *mut libc::c_void,
    map_len: usize,
    /// The first page, aligned to [`HUGE_PAGE`], and how many pages follow it.
    first: *mut Page,
    len: usize,
}

const HUGE_PAGE: usize = 2 << 20;

// SAFETY: the mapping is owned by `Mapped` alone and only read once built.
unsafe impl Send for Mapped {}
// SAFETY: as above; shared references only read.
unsafe impl Sync for Mapped {}

impl Mapped {
    /// `len` zeroed pages, or `None` if the kernel refuses the memory.
    fn new(len: usize) -> Option<Mapped> {
        let map_len = len.checked_mul(PAGE)?.checked_add(HUGE_PAGE)?;
        // SAFETY: an anonymous private mapping, no address hint.
        let map = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return None;
        }
        let aligned = (map as usize).next_multiple_of(HUGE_PAGE);
        // SAFETY: the aligned range lies within the mapping. A refusal (no THP in this kernel)
        // leaves small pages, which the chase works on too.
        unsafe { libc::madvise(aligned as *mut libc::c_void, len * PAGE, libc::MADV_HUGEPAGE) };
        Some(Mapped { map, map_len, first: aligned as *mut Page, len })
    }

    /// Bytes of the chase's pages the kernel backs with huge pages (0 if /proc/self/smaps
    /// cannot be read). `MADV_HUGEPAGE` gave them an entry of their own there, starting at the
    /// first page: the advice splits them from the rest of the mapping and its neighbours.
    fn huge_page_bytes(&self) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
        anon_huge_kib(&smaps, self.first as usize).map_or(0, |kib| (kib << 10).min(self.len * PAGE))
    }
}

/// The `AnonHugePages` of the mapping that starts at `start` in an smaps listing, in KiB.
fn anon_huge_kib(smaps: &str, start: usize) -> Option<usize> {
    let header = format!("{start:x}-");
    let mut lines = smaps.lines().skip_while(|line| !line.starts_with(&header));
    lines.next()?;
    lines
        .take_while(|line| line.split_whitespace().next().is_some_and(|key| key.ends_with(':')))
        .find_map(|line| line.strip_prefix("AnonHugePages:"))
        .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse().ok())
}

impl core::ops::Deref for Mapped {
    type Target = [Page];
    fn deref(&self) -> &[Page] {
        // SAFETY: `len` pages from `first` lie in the mapping, zeroed (a valid `Page`) or
        // written by `build_chase`, and live as long as `self`.
        unsafe { core::slice::from_raw_parts(self.first, self.len) }
    }
}

impl core::ops::DerefMut for Mapped {
    fn deref_mut(&mut self) -> &mut [Page] {
        // SAFETY: as for `deref`, and `&mut self` is the only reference.
        unsafe { core::slice::from_raw_parts_mut(self.first, self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped; no reference into it outlives `self`.
        unsafe { libc::munmap(self.map, self.map_len) };
    }
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
/// the longest chase's (on huge pages, where the longest pays no more page-table walks than
/// the others). A chase that only sometimes misses, as seed 000's size can on a virtual
/// machine, takes a varying share of the longest chase's time a step, often far below this:
/// a share this high keeps it from passing.
pub const SETTLED: f64 = 0.85;

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
    /// Bytes of the kept chase on huge pages, as /proc/self/smaps says (0 where the kernel
    /// granted none: each step then walks the page table too).
    pub huge_page_bytes: usize,
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

    /// The reference's nanoseconds per step: the longest chase tried, listed last.
    pub fn longest_step_ns(&self) -> f64 {
        self.tried.last().map_or(f64::NAN, |&(_, ns)| ns)
    }

    /// Each size tried in MiB, with its nanoseconds per step.
    pub fn tried_mib(&self) -> Vec<(usize, f64)> {
        self.tried.iter().map(|&(pages, ns)| ((pages * PAGE) >> 20, ns)).collect()
    }

    /// The chase's length in multiples of twice the reported cache's slice (1: seed 000's
    /// size on a cache reported truly).
    pub fn multiple(&self) -> f64 {
        self.pages as f64 / chase_pages(self.reported_llc_bytes) as f64
    }
}

/// Sizes the chase on first use and says how (up to about a second the first time).
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
        let first = chase_pages(llc);
        let Some(Searched { kept: chase, tried, settled }) =
            size_below_longest(first, (LARGEST * llc).min(most_bytes()) / PAGE, build_chase, step_ns)
        else {
            // As a failed allocation of the buffer always did: the miss loop cannot run without one.
            std::alloc::handle_alloc_error(std::alloc::Layout::from_size_align(first * PAGE, PAGE).unwrap())
        };
        let (pages, huge_page_bytes) = (chase.pages.len(), chase.pages.huge_page_bytes());
        (chase, ChaseSize { reported_llc_bytes: llc, pages, tried, settled, huge_page_bytes })
    })
}

/// The search: build the longest chase allowed (`most` pages, or the largest power-of-two
/// multiple of `first` within it; half that, and so on, while the memory is refused) and time
/// it as the reference, then try `first`, `2 first`, ... below it until one's step takes at
/// least [`SETTLED`] of the reference's, and keep the chase twice as long as that one (the
/// reference, if that is the reference's length): how much of the cache the machine gives us
/// changes from minute to minute under a hypervisor, so the kept chase has one doubling to
/// spare. Returns the kept chase, every size timed (the reference last), and whether a shorter
/// size kept the reference's pace (`false`: only the reference itself did, so nothing says
/// that even it misses); `None` when not even `first` pages could be had. `time` times one
/// chase, alone: every chase reads lines of the same cache sets, so timing two in turn would
/// have each evict the other.
fn size_below_longest<C>(
    first: usize,
    most: usize,
    build: impl Fn(usize) -> Option<C>,
    time: impl Fn(&C) -> f64,
) -> Option<Searched<C>> {
    let mut longest = first;
    while longest * 2 <= most {
        longest *= 2;
    }
    let reference = loop {
        match build(longest) {
            Some(chase) => break chase,
            None if longest > first => longest /= 2,
            None => return None,
        }
    };
    let reference_ns = time(&reference);
    let mut tried = Vec::new();
    let mut pages = first;
    while pages < longest {
        let Some(candidate) = build(pages) else { break };
        let ns = time(&candidate);
        tried.push((pages, ns));
        if ns >= SETTLED * reference_ns {
            drop(candidate);
            if pages * 2 < longest {
                if let Some(spare) = build(pages * 2) {
                    tried.push((pages * 2, time(&spare)));
                    tried.push((longest, reference_ns));
                    return Some(Searched { kept: spare, tried, settled: true });
                }
            }
            tried.push((longest, reference_ns));
            return Some(Searched { kept: reference, tried, settled: true });
        }
        pages *= 2;
    }
    tried.push((longest, reference_ns));
    Some(Searched { kept: reference, tried, settled: false })
}

/// What [`size_below_longest`] found: the chase kept, each size timed with its nanoseconds a
/// step (the reference last), and whether a shorter size kept the reference's pace.
struct Searched<C> {
    kept: C,
    tried: Vec<(usize, f64)>,
    settled: bool,
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
fn build_chase(n: usize) -> Option<Chase> {
    let mut pages = Mapped::new(n)?;
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
    Some(Chase { pages })
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
        let chase = build_chase(1000).unwrap();
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
    fn the_huge_pages_of_one_mapping_are_read_from_its_own_smaps_entry() {
        let smaps = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \n\
                     Size:               4096 kB\n\
                     AnonHugePages:      2048 kB\n\
                     VmFlags: rd wr mr mw me ac hg\n\
                     7f0000400000-7f0000600000 rw-p 00000000 00:00 0 \n\
                     Size:               2048 kB\n\
                     AnonHugePages:         0 kB\n";
        assert_eq!(anon_huge_kib(smaps, 0x7f00_0000_0000), Some(2048));
        assert_eq!(anon_huge_kib(smaps, 0x7f00_0040_0000), Some(0));
        assert_eq!(anon_huge_kib(smaps, 0x7f00_0020_0000), None, "not the start of a mapping");
        let chase = build_chase(1024).unwrap();
        assert!(chase.pages.huge_page_bytes() <= 1024 * PAGE);
        assert_eq!(chase.pages.as_ptr() as usize % HUGE_PAGE, 0, "aligned for a huge page");
    }

    #[test]
    fn every_line_of_the_chase_has_the_same_page_offset() {
        let chase = build_chase(16).unwrap();
        for page in chase.pages.iter() {
            assert_eq!(&page.next as *const u32 as usize % PAGE, 0);
        }
    }

    /// A cache model for the search: steps take 50 ns up to `fits` pages, then 190 ns, and
    /// 200 ns from 800 pages.
    fn search_refusing(
        first: usize,
        most: usize,
        fits: usize,
        refused_from: usize,
    ) -> (usize, Vec<(usize, f64)>, bool) {
        let ns = |pages: usize| match pages {
            p if p <= fits => 50.0,
            p if p < 800 => 190.0,
            _ => 200.0,
        };
        let found =
            size_below_longest(first, most, |pages| (pages < refused_from).then_some(pages), |&p: &usize| ns(p));
        found.map(|f| (f.kept, f.tried, f.settled)).unwrap()
    }

    fn search(first: usize, most: usize, fits: usize) -> (usize, Vec<(usize, f64)>, bool) {
        search_refusing(first, most, fits, usize::MAX)
    }

    #[test]
    fn a_chase_twice_the_shortest_at_the_longests_pace_is_kept() {
        // Reported truly: seed 000's size already misses; the next doubling is kept.
        assert_eq!(search(100, 800, 50), (200, vec![(100, 190.0), (200, 190.0), (800, 200.0)], true));
        // A cache three times the reported one (a guest told of less than its host's): 100
        // and 200 pages hit; 400 keeps pace, and twice it is the reference itself.
        assert_eq!(search(100, 800, 300), (800, vec![(100, 50.0), (200, 50.0), (400, 190.0), (800, 200.0)], true));
        // Both of the first two sizes hit: a doubling would have looked no slower.
        assert_eq!(
            search(100, 1600, 250),
            (800, vec![(100, 50.0), (200, 50.0), (400, 190.0), (800, 200.0), (1600, 200.0)], true)
        );
        // Nothing shorter than the reference keeps its pace: the reference, unsettled.
        assert_eq!(search(100, 800, 700), (800, vec![(100, 50.0), (200, 50.0), (400, 50.0), (800, 200.0)], false));
        // No room for a reference longer than the first size.
        assert_eq!(search(100, 150, 0), (100, vec![(100, 190.0)], false));
        // Memory refused from 800 pages: the reference is the longest chase that could be had.
        assert_eq!(search_refusing(100, 1600, 50, 800), (200, vec![(100, 190.0), (200, 190.0), (400, 190.0)], true));
        assert_eq!(search_refusing(100, 1600, 300, 800), (400, vec![(100, 50.0), (200, 50.0), (400, 190.0)], false));
        let no_memory = size_below_longest(100, 1600, |_| None::<usize>, |_: &usize| 0.0);
        assert!(no_memory.is_none());
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
        assert!(size.huge_page_bytes <= size.bytes(), "{size:?}");
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
