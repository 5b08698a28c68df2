//! Where each object was made, kept apart from the rows until it is first used: a program may
//! make far more objects than it locks (a mutex per hash bucket, say), and a row (960 bytes)
//! is claimed only at an object's first acquisition. An entry is 16 bytes, keyed by address
//! with open addressing in the library's zero-initialised data: the object's init site and
//! whether it is a C11 `mtx_t`. A row copies its object's entry when it is claimed; an object
//! made again at an address that has a row updates the row too.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Entries in the table; objects made beyond it keep no init site.
const CAPACITY: usize = 1 << 18;
const MAX_PROBES: usize = 64;

/// The mark of a C11 `mtx_t` in [`Entry::made`], above the site number.
pub const C11: u64 = 1 << 32;

struct Entry {
    /// The object's address; 0 while free.
    address: AtomicU64,
    /// Its init site's number, and [`C11`].
    made: AtomicU64,
}

static ENTRIES: [Entry; CAPACITY] = [const { Entry { address: AtomicU64::new(0), made: AtomicU64::new(0) } }; CAPACITY];

fn home(address: usize) -> usize {
    (((address >> 3) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CAPACITY.trailing_zeros())) as usize
}

/// The entry of `address`, claimed if new and `claim`.
fn entry(address: usize, claim: bool) -> Option<&'static Entry> {
    let home = home(address);
    for probe in 0..MAX_PROBES {
        let entry = &ENTRIES[(home + probe) % CAPACITY];
        match entry.address.load(Relaxed) {
            0 if !claim => return None,
            0 => match entry.address.compare_exchange(0, address as u64, Relaxed, Relaxed) {
                Ok(_) => return Some(entry),
                Err(taken) if taken == address as u64 => return Some(entry),
                Err(_) => {}
            },
            taken if taken == address as u64 => return Some(entry),
            _ => {}
        }
    }
    None
}

/// Records that the object at `address` was made at `site` (0: no stack), replacing what an
/// object made there before left; returns the entry's new value.
pub fn made(address: usize, site: u32) -> u64 {
    let value = u64::from(site);
    if let Some(entry) = entry(address, true) {
        entry.made.store(value, Relaxed);
    }
    value
}

/// Marks the object at `address` as a C11 `mtx_t`; returns the entry's new value.
pub fn mark_c11(address: usize) -> u64 {
    entry(address, true).map_or(C11, |entry| entry.made.fetch_or(C11, Relaxed) | C11)
}

/// What is known of how the object at `address` was made: its site number and [`C11`].
pub fn of(address: usize) -> u64 {
    entry(address, false).map_or(0, |entry| entry.made.load(Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_made_again_at_an_address_replaces_its_site_and_c11_marks_stay_apart() {
        let (a, b) = (0x7_1000_0008usize, 0x7_1000_0010usize);
        assert_eq!(of(a), 0);
        made(a, 5);
        assert_eq!(mark_c11(a), C11 | 5);
        made(b, 9);
        assert_eq!((of(a), of(b)), (C11 | 5, 9));
        made(a, 6);
        assert_eq!(of(a), 6, "made again: a plain mutex at the same address");
    }
}
