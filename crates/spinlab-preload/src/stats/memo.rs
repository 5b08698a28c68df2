//! What a replaced mutex remembers for the statistics, in 8 bytes of its own
//! `pthread_mutex_t` (bytes 32..40, see `glibc`), so that an uncontended lock and unlock pair
//! finds its row with one load and one compare, tells an owner change without the row, and
//! has its release count nothing.
//!
//! | bits   | field       | meaning                                                          |
//! |--------|-------------|------------------------------------------------------------------|
//! | 0..15  | row         | the index of the mutex's row, plus 1; 0: none                    |
//! | 15     | [`SAMPLED`] | the current hold is timed                                        |
//! | 16     | [`WAITED`]  | a thread has waited for the mutex                                |
//! | 17..64 | last holder | the thread pointer (`fork::me`, 16-aligned) of the last acquirer, shifted right by 4; 0: none |
//!
//! - **The row is only a hint**: it is trusted only when that row's address is the mutex's
//!   own (rows are keyed by address, one per address, and never given up), so a copied mutex,
//!   or bytes that something else left in its memory, fall back to the search by address and
//!   never count in another object's row. A new mutex's all-zero memo names no row: its first
//!   acquisition finds the row by address and stores what the row needs once (its kind).
//! - **Owner changes**: an acquirer whose thread pointer is not the last holder's counts one,
//!   with its acquisition, in its own tally (see `tallies`), unless there was none; an
//!   acquirer that held the mutex last counts in the row, whose line it wrote last.
//! - **Who writes it**: the holder, with plain loads and stores, since the lock serialises the
//!   holders; and a waiter, which sets [`WAITED`] with a read-modify-write before it counts
//!   itself in, so that the release it waits for counts its wake-up. A holder's store can undo
//!   a waiter's mark; the waiter sets it again once it holds the mutex, so at most one release
//!   goes uncounted, and the mark stays until an init zeroes the mutex.
//!
//! A release with neither mark set has no timed hold to end and no waiter whose wake-up it
//! could count: one load, and it skips its row. glibc's own mutexes have no memo: their rows
//! are searched for, and counted, on both sides.

use super::rows::{self, Row};
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A replaced mutex's memo; all-zero bytes (a new or statically initialised mutex) are one
/// that knows nothing yet.
#[repr(C)]
pub struct Memo(AtomicU64);

/// The row's index plus 1.
const ROW: u64 = (1 << 15) - 1;
const _: () = assert!(rows::CAPACITY as u64 <= ROW);
/// The current hold is timed.
const SAMPLED: u64 = 1 << 15;
/// A thread has waited for the mutex.
const WAITED: u64 = 1 << 16;
const HOLDER_SHIFT: u32 = 17;
/// The last holder's field.
const HOLDER: u64 = !(ROW | SAMPLED | WAITED);

/// The last-holder field for the thread whose pointer is `me`.
#[inline(always)]
fn holder(me: usize) -> u64 {
    (me as u64 >> 4) << HOLDER_SHIFT
}

impl Memo {
    /// The row it names, if that is the row of the object at `address`.
    #[inline(always)]
    pub(super) fn row(&self, address: usize) -> Option<&'static Row> {
        ((self.0.load(Relaxed) & ROW) as u32).checked_sub(1).and_then(|index| rows::at(index, address))
    }

    /// The row it names if that is the row of the object at `address`, with its index, and
    /// whether the holder changed to `me`, which has just acquired the mutex without waiting:
    /// [`Memo::acquired`] for the uncontended path, one load. (A memo names a row only once an
    /// acquisition has noted its holder, so there is always a last holder here.)
    #[inline(always)]
    pub(super) fn acquired_free(&self, address: usize, me: usize) -> Option<(&'static Row, u32, bool)> {
        let memo = self.0.load(Relaxed);
        let index = ((memo & ROW) as u32).checked_sub(1)?;
        let row = rows::at(index, address)?;
        let holder = holder(me);
        let changed = memo & HOLDER != holder;
        if changed {
            self.0.store((memo & !HOLDER) | holder, Relaxed);
        }
        Some((row, index, changed))
    }

    /// Notes an acquisition of this mutex, whose row is `row`, by the thread `me`, which holds
    /// it now (`waited`: after a wait); returns whether the holder changed (from another
    /// thread: the first acquisition is none). A memo that names another row starts afresh.
    #[inline(always)]
    pub(super) fn acquired(&self, row: &'static Row, me: usize, waited: bool) -> bool {
        let memo = self.0.load(Relaxed);
        let index = u64::from(rows::index_of(row)) + 1;
        let holder = holder(me);
        let (own, last) = (memo & ROW == index, memo & HOLDER);
        if own && last == holder && (!waited || memo & WAITED != 0) {
            return false;
        }
        let kept = if own { memo & (SAMPLED | WAITED) } else { 0 };
        self.0.store(index | kept | holder | if waited { WAITED } else { 0 }, Relaxed);
        own && last != 0 && last != holder
    }

    /// Marks the current hold as timed (by its holder).
    #[inline]
    pub(super) fn hold_sampled(&self) {
        self.0.store(self.0.load(Relaxed) | SAMPLED, Relaxed);
    }

    /// Clears the timed-hold mark, at the release (by the holder).
    #[inline(always)]
    pub(super) fn hold_ends(&self) {
        let memo = self.0.load(Relaxed);
        if memo & SAMPLED != 0 {
            self.0.store(memo & !SAMPLED, Relaxed);
        }
    }

    /// Marks the mutex as waited for, by a waiter (written only the first time: waiters of a
    /// busy mutex would otherwise write the holder's line on every wait).
    pub(super) fn waited(&self) {
        if self.0.load(Relaxed) & WAITED == 0 {
            self.0.fetch_or(WAITED, Relaxed);
        }
    }

    /// Whether a release has anything to count: a timed hold to end, or a mutex that has been
    /// waited for, whose release may wake a waiter.
    #[inline(always)]
    pub fn release_counts(&self) -> bool {
        self.0.load(Relaxed) & (SAMPLED | WAITED) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::super::{acquired_free, releasing_remembered, tallies, Waiting};
    use super::*;

    /// What the threads' tallies and the row hold for `row`: (acquisitions, owner changes).
    fn counted(row: &Row) -> (u64, u64) {
        let hand_overs = tallies::gather()[rows::index_of(row) as usize];
        let row_counted = row.acquisitions.load(Relaxed) + row.tallied.load(Relaxed);
        (row_counted + hand_overs, row.owner_changes.load(Relaxed) + hand_overs)
    }

    #[test]
    fn a_memo_is_trusted_only_for_its_own_address_and_asks_for_a_release_only_when_it_counts() {
        // Addresses no real object has.
        let (original, copy) = (0x7_3000_0008usize, 0x7_3000_0010usize);
        let me = crate::fork::me();
        let first = Memo(AtomicU64::new(0));
        assert!(first.row(original).is_none(), "all zero: no row");
        acquired_free(original, &first, me);
        let row = rows::existing_row(original).unwrap();
        assert!(first.row(original).is_some_and(|found| core::ptr::eq(found, row)), "learnt");
        assert!(first.release_counts(), "the first hold is timed");
        assert!(releasing_remembered(original, &first).is_none(), "never contended");
        assert!(!first.release_counts() && row.hold_started.load(Relaxed) == 0, "the hold ended");
        acquired_free(original, &first, me);
        assert!(!first.release_counts(), "the second hold is not timed");

        // A copy of the mutex carries the original's memo.
        let copied = Memo(AtomicU64::new(first.0.load(Relaxed)));
        assert!(copied.row(copy).is_none());
        acquired_free(copy, &copied, me);
        let own = rows::existing_row(copy).unwrap();
        assert_eq!((counted(row), counted(own)), ((2, 0), (1, 0)));
        assert!(copied.row(copy).is_some_and(|found| core::ptr::eq(found, own)), "its own row now");
        assert!(releasing_remembered(copy, &copied).is_none());

        let waiting = Waiting::start_remembered(copy, &copied);
        assert!(copied.release_counts(), "waited for: its releases may wake");
        assert!(releasing_remembered(copy, &copied).is_some(), "a waiter to wake");
        drop(waiting);
        assert!(copied.release_counts(), "waited for stays");
    }

    /// Two threads take a mutex in turn: every acquisition after the first is an owner change,
    /// each counted once, in the tally of the thread that made it; a copy starts with none.
    #[test]
    fn owner_changes_are_told_by_the_memo_and_counted_by_the_acquirer() {
        let (address, copy) = (0x7_3100_0008usize, 0x7_3100_0010usize);
        let memo = Memo(AtomicU64::new(0));
        let take = || {
            acquired_free(address, &memo, crate::fork::me());
            let _ = releasing_remembered(address, &memo);
        };
        for _ in 0..100 {
            std::thread::scope(|s| {
                s.spawn(take);
            });
            take();
        }
        let row = rows::existing_row(address).unwrap();
        assert_eq!(counted(row), (200, 199));
        let copied = Memo(AtomicU64::new(memo.0.load(Relaxed)));
        std::thread::scope(|s| {
            s.spawn(|| acquired_free(copy, &copied, crate::fork::me()));
        });
        assert_eq!(counted(rows::existing_row(copy).unwrap()), (1, 0), "a copy's first acquisition changes nothing");
    }
}
