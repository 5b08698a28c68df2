#![cfg_attr(loom, allow(dead_code))]
//! Seed 000's `L2miss` loop body: one load per iteration that always misses the last-level
//! cache, from a pointer chase confined to a few cache sets.
//!
//! The chase visits one 64-byte line per 4 KiB page, always at the same page offset. Address
//! bits 6-11 pick part of a set index in every cache level, so all lines of the chase fall into
//! the 1/64 of each cache's sets that share those bits; the chase covers twice the capacity of
//! that slice of the last-level cache, in a random cyclic order, so every load misses. Higher
//! set-index bits come from physical page numbers, which user space does not control, so this
//! is as narrow as the confinement can be without huge pages. The neighbours lose at most the
//! lines of that slice, which is what seed 000 aimed for on the T1/T2 L2.
//!
//! The buffer (twice the last-level cache) is allocated on first use and never freed.

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

fn chase() -> &'static Chase {
    static CHASE: OnceLock<Chase> = OnceLock::new();
    CHASE.get_or_init(|| build_chase(chase_pages(last_level_cache_bytes())))
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
