//! The table of rows, one per object (mutex, spin lock, rwlock, condition variable,
//! barrier), keyed by its address with open addressing in the library's zero-initialised
//! data: counting never allocates or takes a lock, a fork copies the table whole, and an
//! object destroyed and re-created at the same address keeps adding to one row.
//!
//! A row is 960 bytes, 15 cache lines, all `u64` counters: the first line holds the key,
//! kind, sites, acquisitions and the owner-change count with the last holder, which is all an
//! uncontended acquisition writes (a replaced mutex handed to another thread counts in that
//! thread's tally instead: see `tallies`); the second the sampled hold and the contended counts; then
//! the condition variable's and rwlock's counts and the two 40-bucket histograms.
//!
//! Which thread writes what: the acquisitions, owner and hold counts of a mutex, spin lock or
//! rwlock writer are written by the holder, whom the lock itself serialises, with plain
//! relaxed loads and stores; objects that many threads use at once (rwlock readers, condition
//! variables, barriers) use read-modify-writes there. The waiter counts, phases and wake-ups
//! are read-modify-writes, on the contended path only.

use super::hist::BUCKETS;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Rows in the table; a program with more distinct objects has the rest counted as untracked.
pub const CAPACITY: usize = 1 << 14;
/// How far from its home row an address may land before it is counted as untracked.
const MAX_PROBES: usize = 64;

/// One object's counts, aligned to its own lines: the holders of two busy mutexes must not
/// write one line. Every field is a `u64` (see [`Row::clear`]).
#[repr(C, align(64))]
pub struct Row {
    // The holder's line.
    /// The object's address; 0 while the row is free.
    pub address: AtomicU64,
    /// Its glibc `__kind` when last counted, or one of `stats`' kinds (a `c_int`).
    pub kind: AtomicU64,
    /// The site of its init call and of its first contended acquisition (`sites` numbers; 0:
    /// none; [`CLAIMED`]: being captured).
    pub init_site: AtomicU64,
    pub contended_site: AtomicU64,
    /// Whether it is a C11 `mtx_t` (1).
    pub c11: AtomicU64,
    // The counts, from here on (see `Row::forget_counts`).
    pub acquisitions: AtomicU64,
    /// A replaced mutex's hand-overs counted elsewhere first (see [`Row::add_tallied`]), each an
    /// acquisition and an owner change: read-modify-writes, apart from the holder's count.
    pub tallied: AtomicU64,
    pub owner_changes: AtomicU64,
    /// The thread (`fork::me`) that acquired it last.
    pub last_holder: AtomicU64,
    /// When the sampled hold began (`now_ns`); 0 when the current hold is not sampled.
    pub hold_started: AtomicU64,
    // The hold histogram's totals (written by the holder).
    pub hold_ns: AtomicU64,
    pub max_hold_ns: AtomicU64,
    // The contended path.
    pub contended: AtomicU64,
    pub wait_ns: AtomicU64,
    pub max_wait_ns: AtomicU64,
    pub waiters: AtomicU64,
    pub max_waiters: AtomicU64,
    /// When the number of waiters last rose from 0.
    pub contended_since: AtomicU64,
    pub contended_ns: AtomicU64,
    pub sleep_ns: AtomicU64,
    pub yield_ns: AtomicU64,
    pub wakes: AtomicU64,
    pub wakes_empty: AtomicU64,
    // Condition variables.
    pub timed_waits: AtomicU64,
    pub timed_out: AtomicU64,
    pub signals: AtomicU64,
    pub broadcasts: AtomicU64,
    /// Waits that returned, not timed out, with no signal or broadcast made meanwhile.
    pub spurious: AtomicU64,
    // Reader-writer locks.
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    pub read_contended: AtomicU64,
    pub write_contended: AtomicU64,
    pub read_wait_ns: AtomicU64,
    pub write_wait_ns: AtomicU64,
    pub wait_buckets: [AtomicU64; BUCKETS],
    pub hold_buckets: [AtomicU64; BUCKETS],
}

/// A site being captured by the thread that claimed it.
pub const CLAIMED: u64 = u64::MAX;

const WORDS: usize = size_of::<Row>() / 8;
/// The words before `acquisitions`: the address, kind, sites and C11 mark.
const IDENTITY: usize = core::mem::offset_of!(Row, acquisitions) / 8;
const _: () = assert!(size_of::<Row>() % 8 == 0 && WORDS >= 33 + 2 * BUCKETS);

impl Row {
    const fn new() -> Row {
        // SAFETY: every field is an `AtomicU64`, for which all-zero bytes are 0.
        unsafe { core::mem::zeroed() }
    }

    /// Every word of the row, in order.
    fn words(&self) -> &[AtomicU64; WORDS] {
        // SAFETY: a `repr(C)` struct of `AtomicU64`s only (and its padding to 64 bytes,
        // which `WORDS` includes: padding of a zeroed static is zero, and only atomics write
        // it here).
        unsafe { &*(self as *const Row).cast::<[AtomicU64; WORDS]>() }
    }

    /// Adds `hand_overs` of a replaced mutex that were counted elsewhere first: a tally given
    /// back, or a hand-over to a thread without a block of tallies. Any thread may call it.
    pub fn add_tallied(&self, hand_overs: u64) {
        self.tallied.fetch_add(hand_overs, Relaxed);
        self.owner_changes.fetch_add(hand_overs, Relaxed);
    }

    /// Takes what [`inits`](super::inits) knows of how the object was made.
    pub fn made(&self, made: u64) {
        self.init_site.store(made & (super::inits::C11 - 1), Relaxed);
        self.c11.store(u64::from(made & super::inits::C11 != 0), Relaxed);
    }

    /// Zeroes the counts, keeping what the object is and where it was made (a fork child's
    /// objects are its parent's, counted afresh).
    fn forget_counts(&self) {
        for word in &self.words()[IDENTITY..] {
            word.store(0, Relaxed);
        }
    }
}

static ROWS: [Row; CAPACITY] = [const { Row::new() }; CAPACITY];
/// Acquisitions of objects that found no row.
pub static UNTRACKED: AtomicU64 = AtomicU64::new(0);

fn home(address: usize) -> usize {
    // Fibonacci hashing of the address without its always-zero low bits.
    (((address >> 3) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CAPACITY.trailing_zeros())) as usize
}

/// The row of the object at `address`, claimed if new; `None` if its probe window is full.
#[inline]
pub fn row(address: usize) -> Option<&'static Row> {
    let address = address as u64;
    let home = home(address as usize);
    for probe in 0..MAX_PROBES {
        let row = &ROWS[(home + probe) % CAPACITY];
        match row.address.load(Relaxed) {
            0 => match row.address.compare_exchange(0, address, Relaxed, Relaxed) {
                Ok(_) => {
                    row.made(super::inits::of(address as usize));
                    return Some(row);
                }
                Err(taken) if taken == address => return Some(row),
                Err(_) => {}
            },
            taken if taken == address => return Some(row),
            _ => {}
        }
    }
    None
}

/// The row at `index` (taken into the table), if it is the row of the object at `address`:
/// an index kept outside the table (a [`Memo`](super::Memo)) is trusted only after this check.
#[inline(always)]
pub fn at(index: u32, address: usize) -> Option<&'static Row> {
    let row = &ROWS[index as usize % CAPACITY];
    (row.address.load(Relaxed) == address as u64).then_some(row)
}

/// The row at `index`.
#[inline(always)]
pub fn by_index(index: u32) -> &'static Row {
    &ROWS[index as usize % CAPACITY]
}

/// The index of `row` in the table, for [`at`].
#[inline(always)]
pub fn index_of(row: &Row) -> u32 {
    ((row as *const Row as usize - ROWS.as_ptr() as usize) / size_of::<Row>()) as u32
}

/// The row of the object at `address` if it has one (no row is claimed).
#[inline]
pub fn existing_row(address: usize) -> Option<&'static Row> {
    let home = home(address);
    (0..MAX_PROBES).map(|probe| &ROWS[(home + probe) % CAPACITY]).find_map(|row| match row.address.load(Relaxed) {
        0 => Some(None),
        taken if taken == address as u64 => Some(Some(row)),
        _ => None,
    })?
}

/// Zeroes every count: a forked child counts its own acquisitions, not its parent's, and
/// keeps the sites of the objects it inherits.
pub fn forget_all() {
    for row in ROWS.iter().filter(|row| row.address.load(Relaxed) != 0) {
        row.forget_counts();
        if row.contended_site.load(Relaxed) == CLAIMED {
            // A capture by a thread of the parent, which the child does not have.
            row.contended_site.store(0, Relaxed);
        }
    }
    UNTRACKED.store(0, Relaxed);
    super::tallies::forget_all();
    super::sites::forget_captures();
}

/// Every row that counted an acquisition, here or in the threads' tallies (`tallied`, from
/// `tallies::gather`), with its index.
pub fn used(tallied: &[u64]) -> impl Iterator<Item = (usize, &'static Row)> + '_ {
    ROWS.iter().enumerate().filter(|(index, row)| {
        row.address.load(Relaxed) != 0
            && (row.acquisitions.load(Relaxed) != 0 || row.tallied.load(Relaxed) != 0 || tallied[*index] != 0)
    })
}

/// Adds `n` to `counter`: a load and a store when `alone` (the caller holds the object), else
/// a read-modify-write.
#[inline(always)]
pub fn add(counter: &AtomicU64, n: u64, alone: bool) {
    if alone {
        counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
    } else {
        counter.fetch_add(n, Relaxed);
    }
}

/// Raises `counter` to `n` if below, as [`add`] does.
#[inline(always)]
pub fn raise(counter: &AtomicU64, n: u64, alone: bool) {
    if alone {
        if n > counter.load(Relaxed) {
            counter.store(n, Relaxed);
        }
    } else {
        counter.fetch_max(n, Relaxed);
    }
}
