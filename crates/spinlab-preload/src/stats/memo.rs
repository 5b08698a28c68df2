//! What a replaced mutex remembers for the statistics, in 8 bytes of its own
//! `pthread_mutex_t` (bytes 32..40, see `glibc`), so that an uncontended lock and unlock pair
//! finds its row once, with one load and one compare, and its release counts nothing.
//!
//! - `row`: the index of the mutex's row. Only a hint: it is trusted only when that row's
//!   address is the mutex's own (rows are keyed by address, one per address, and never given
//!   up), so a copied mutex, or bytes that something else left in its memory, fall back to
//!   the search by address and never count in another object's row. The holder writes it.
//! - `flags`: [`SAMPLED`] while the current hold is timed, set by the holder with the hold's
//!   start and cleared at the release that ends it; [`WAITED`] once a thread has waited for
//!   the mutex, set by waiters before they count themselves in, and cleared only by an init,
//!   which zeroes the whole mutex. Holder and waiters write the one word, so each write is a
//!   read-modify-write; none is made on an uncontended pair whose hold is not timed.
//!
//! A release with no flag set has no timed hold to end and no waiter whose wake-up it could
//! count: one load, and it skips its row. glibc's own mutexes have no memo: their rows are
//! searched for on both sides.

use super::rows::{self, Row};
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// A replaced mutex's memo; all-zero bytes (a new or statically initialised mutex) are one
/// that knows nothing yet.
#[repr(C)]
pub struct Memo {
    row: AtomicU32,
    flags: AtomicU32,
}

/// [`Memo`]'s flags.
const SAMPLED: u32 = 1;
const WAITED: u32 = 2;

impl Memo {
    /// The row it names, if that is the row of the object at `address`.
    #[inline(always)]
    pub(super) fn row(&self, address: usize) -> Option<&'static Row> {
        rows::at(self.row.load(Relaxed), address)
    }

    /// Remembers `row`, the row of this mutex.
    #[inline(always)]
    pub(super) fn remember(&self, row: &'static Row) {
        self.row.store(rows::index_of(row), Relaxed);
    }

    /// Marks the current hold as timed.
    pub(super) fn hold_sampled(&self) {
        self.flags.fetch_or(SAMPLED, Relaxed);
    }

    /// Clears the timed-hold mark, at the release.
    pub(super) fn hold_ends(&self) {
        if self.flags.load(Relaxed) & SAMPLED != 0 {
            self.flags.fetch_and(!SAMPLED, Relaxed);
        }
    }

    /// Marks the mutex as waited for (written only the first time: waiters of a busy mutex
    /// would otherwise write the holder's line on every wait).
    pub(super) fn waited(&self) {
        if self.flags.load(Relaxed) & WAITED == 0 {
            self.flags.fetch_or(WAITED, Relaxed);
        }
    }

    /// Whether a release has anything to count: a timed hold to end, or a mutex that has been
    /// waited for, whose release may wake a waiter.
    #[inline(always)]
    pub fn release_counts(&self) -> bool {
        self.flags.load(Relaxed) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::super::{acquired_free, releasing_remembered, Waiting};
    use super::*;

    fn memo(row: u32, flags: u32) -> Memo {
        Memo { row: AtomicU32::new(row), flags: AtomicU32::new(flags) }
    }

    #[test]
    fn a_memo_is_trusted_only_for_its_own_address_and_asks_for_a_release_only_when_it_counts() {
        // Addresses no real object has.
        let (original, copy) = (0x7_3000_0008usize, 0x7_3000_0010usize);
        let me = crate::fork::me();
        let first = memo(0, 0);
        acquired_free(original, &first, me);
        let row = rows::existing_row(original).unwrap();
        assert!(first.row(original).is_some_and(|found| core::ptr::eq(found, row)), "learnt");
        assert!(first.release_counts(), "the first hold is timed");
        assert!(releasing_remembered(original, &first).is_none(), "never contended");
        assert!(!first.release_counts() && row.hold_started.load(Relaxed) == 0, "the hold ended");
        acquired_free(original, &first, me);
        assert!(!first.release_counts(), "the second hold is not timed");

        // A copy of the mutex carries the original's memo.
        let copied = memo(first.row.load(Relaxed), first.flags.load(Relaxed));
        assert!(copied.row(copy).is_none());
        acquired_free(copy, &copied, me);
        let own = rows::existing_row(copy).unwrap();
        assert_eq!((row.acquisitions.load(Relaxed), own.acquisitions.load(Relaxed)), (2, 1));
        assert!(copied.row(copy).is_some_and(|found| core::ptr::eq(found, own)), "its own row now");
        assert!(releasing_remembered(copy, &copied).is_none());

        let waiting = Waiting::start_remembered(copy, &copied);
        assert!(copied.release_counts(), "waited for: its releases may wake");
        assert!(releasing_remembered(copy, &copied).is_some(), "a waiter to wake");
        drop(waiting);
        assert!(copied.release_counts(), "waited for stays");
    }
}
