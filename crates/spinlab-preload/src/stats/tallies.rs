//! Each thread's tallies of the replaced mutexes handed over to it: the acquisitions that
//! change a mutex's holder, each one acquisition and one owner change, kept in memory that
//! only the counting thread writes, and added to the rows' counts when they are read. A mutex that passes
//! between threads moves its own line at every owner change; counts written to its row there
//! would move the row's line as well, a second transfer on the program's own path (a mutex
//! benchmark's acquisitions take half as long again). An acquisition by the last holder
//! counts in the row, whose line it wrote last: finding a tally costs more than that.
//!
//! - **Threads** are known by their thread pointer (`fork::me`): [`THREADS`] keys one block
//!   of tallies to each thread pointer seen, for good. glibc reuses an exited thread's memory,
//!   thread pointer included, for a new thread, which then adds to the same block: a block
//!   belongs to no one thread, only its writes do, one thread at a time. A thread finds its
//!   block from its thread pointer at each hand-over, a hash and a load: a thread-local
//!   would be a call in a shared library, or static TLS, which a library opened after
//!   start-up may not get.
//! - **A block** holds [`SLOTS`] tallies, one per row handed to the thread, found from the
//!   row's index by a short probe. A thread handed more objects than its probe window holds
//!   adds the tally at the window's start to its row (a read-modify-write there) and reuses
//!   the slot.
//! - **Nothing is allocated**: the blocks are static, zero-initialised, and only the blocks
//!   and tallies in use are ever touched. With its probe window of blocks taken (up to
//!   [`BLOCKS`] threads seen), a thread counts in the rows directly, with read-modify-writes.
//! - **Reading** ([`gather`]) sums every block's tallies by row, while the threads may still
//!   count: a count read at exit is exact for every thread that has stopped counting.
//! - **A forked child** ([`forget_all`]) keeps the blocks' keys and zeroes their tallies, as the
//!   rows forget theirs: it counts its own acquisitions.

use super::rows::{self, CAPACITY};
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Threads (distinct thread pointers) that get a block of tallies.
pub const BLOCKS: usize = 1024;
/// Tallies in one thread's block.
pub const SLOTS: usize = 256;
/// How far from its home a thread pointer or a row's tally may land.
const PROBES: usize = 8;

/// One thread's count of the hand-overs of one row's mutex to it.
#[repr(C)]
pub struct Tally {
    /// The row's index plus 1; 0 while the slot is free.
    row: AtomicU32,
    hand_overs: AtomicU64,
}

impl Tally {
    /// A free slot.
    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: Tally = Tally { row: AtomicU32::new(0), hand_overs: AtomicU64::new(0) };

    /// Counts a hand-over; returns whether it is the first of
    /// [`HOLD_SAMPLE_EVERY`](super::HOLD_SAMPLE_EVERY) of this thread's, whose hold is timed.
    #[inline(always)]
    pub fn count(&self) -> bool {
        let before = self.hand_overs.load(Relaxed);
        self.hand_overs.store(before + 1, Relaxed);
        before % super::HOLD_SAMPLE_EVERY == 0
    }

    /// Adds the count to the row it belongs to, and frees the slot.
    fn give_back(&self) {
        let Some(index) = self.row.load(Relaxed).checked_sub(1) else { return };
        rows::by_index(index).add_tallied(self.hand_overs.load(Relaxed));
        self.forget();
    }

    fn forget(&self) {
        self.hand_overs.store(0, Relaxed);
        self.row.store(0, Relaxed);
    }
}

/// The thread pointers that own a block, by block; 0: free.
static THREADS: [AtomicUsize; BLOCKS] = [const { AtomicUsize::new(0) }; BLOCKS];
/// Each block's tallies, all free (zero) to begin with.
static TALLIES: [[Tally; SLOTS]; BLOCKS] = [const { [const { Tally::FREE }; SLOTS] }; BLOCKS];

/// Where the block of the thread whose pointer is `me` would be, its probe window's start.
fn home(me: usize) -> usize {
    (((me >> 4) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize % BLOCKS
}

/// The block keyed to the thread pointer `me`, claimed if new; `None` if its probe window is
/// taken by other threads.
#[inline(always)]
fn block(me: usize) -> Option<&'static [Tally; SLOTS]> {
    let home = home(me);
    if THREADS[home].load(Relaxed) == me {
        return Some(&TALLIES[home]);
    }
    block_probed(me, home)
}

/// [`block`] past its home.
#[cold]
#[inline(never)]
fn block_probed(me: usize, home: usize) -> Option<&'static [Tally; SLOTS]> {
    for probe in 0..PROBES {
        let at = (home + probe) % BLOCKS;
        match THREADS[at].load(Relaxed) {
            key if key == me => return Some(&TALLIES[at]),
            0 => {}
            _ => continue,
        }
        match THREADS[at].compare_exchange(0, me, Relaxed, Relaxed) {
            Ok(_) => return Some(&TALLIES[at]),
            Err(key) if key == me => return Some(&TALLIES[at]),
            Err(_) => {}
        }
    }
    None
}

/// The calling thread's (`me`) tally of the row at `index`, taking a slot for it if it has
/// none (and giving back the oldest of the window if the window is full); `None` if the thread
/// has no block.
#[inline(always)]
pub fn tally_at(me: usize, index: u32) -> Option<&'static Tally> {
    let block = block(me)?;
    // A row's index is already a hash of its address.
    let home = index as usize % SLOTS;
    if block[home].row.load(Relaxed) == index + 1 {
        return Some(&block[home]);
    }
    Some(tally_probed(block, index, home))
}

/// [`tally_at`] past its home.
#[cold]
#[inline(never)]
fn tally_probed(block: &'static [Tally; SLOTS], index: u32, home: usize) -> &'static Tally {
    for probe in 0..PROBES {
        let tally = &block[(home + probe) % SLOTS];
        match tally.row.load(Relaxed) {
            named if named == index + 1 => return tally,
            0 => {
                tally.row.store(index + 1, Relaxed);
                return tally;
            }
            _ => {}
        }
    }
    let tally = &block[home];
    tally.give_back();
    tally.row.store(index + 1, Relaxed);
    tally
}

/// Every block's tallies summed by row index: hand-overs, each an acquisition and an owner
/// change.
pub fn gather() -> Vec<u64> {
    let mut sums = vec![0; CAPACITY];
    for (key, block) in THREADS.iter().zip(&TALLIES) {
        if key.load(Relaxed) == 0 {
            continue;
        }
        for tally in block {
            if let Some(index) = tally.row.load(Relaxed).checked_sub(1) {
                sums[index as usize % CAPACITY] += tally.hand_overs.load(Relaxed);
            }
        }
    }
    sums
}

/// Zeroes every tally (a forked child counts afresh; see the module docs).
pub fn forget_all() {
    for (key, block) in THREADS.iter().zip(&TALLIES) {
        if key.load(Relaxed) != 0 {
            block.iter().filter(|tally| tally.row.load(Relaxed) != 0).for_each(Tally::forget);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::rows::Row;
    use super::*;

    #[test]
    fn a_full_window_gives_its_first_tally_back_to_its_row() {
        // Addresses no real object has, whose rows' tallies share one home in a fresh block.
        let me = 0x7_4000_0000usize;
        let rows: Vec<&'static Row> = (0..200_000usize)
            .map(|i| 0x7_5000_0000 + 64 * i)
            .filter_map(rows::row)
            .filter(|row| rows::index_of(row) as usize % SLOTS == 5)
            .take(PROBES + 1)
            .collect();
        assert_eq!(rows.len(), PROBES + 1);
        for (n, row) in rows.iter().enumerate() {
            for _ in 0..=n {
                tally_at(me, rows::index_of(row)).unwrap().count();
            }
        }
        let sums = gather();
        let counted = |row: &Row| row.tallied.load(Relaxed) + sums[rows::index_of(row) as usize];
        assert_eq!(
            rows.iter().map(|row| counted(row)).collect::<Vec<_>>(),
            (1..=PROBES as u64 + 1).collect::<Vec<_>>()
        );
        assert_eq!(rows[0].tallied.load(Relaxed), 1, "the first tally went back to its row");
        assert!(rows[1..].iter().all(|row| row.tallied.load(Relaxed) == 0));
    }

    #[test]
    fn each_thread_pointer_keeps_its_block() {
        let (a, b) = (0x7_6000_0000usize, 0x7_6000_1000usize);
        assert!(core::ptr::eq(block(a).unwrap(), block(a).unwrap()));
        assert!(!core::ptr::eq(block(a).unwrap(), block(b).unwrap()));
    }
}
