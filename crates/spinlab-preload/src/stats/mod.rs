//! Lock statistics (`SPINLAB_STATS=1`, `SPINLAB_STATS_FILE=PREFIX`): for every object, its
//! acquisitions, contended acquisitions and owner changes, its waits and sampled holds as log2
//! histograms, how many threads waited at once and for how long, where its waits went (spin,
//! yield, sleep, from `spinlab::sys::phases`) and the wake-ups its releases sent; for a
//! condition variable its waits, timeouts, signals and broadcasts, for a rwlock its read/write
//! split. Rows are grouped at exit by the call stack of the object's init call, or else of its
//! first contended acquisition, and printed as a table of sites, written as JSON, or both.
//!
//! - [`rows`]: the fixed table of rows, keyed by address, and who writes which counter;
//!   [`inits`]: where objects were made, until they have rows; [`memo`]: what a replaced
//!   mutex keeps of its row, its last holder and its last hold; [`tallies`]: each thread's
//!   counts of the replaced mutexes handed over to it.
//! - [`hist`]: the histograms' buckets and percentiles.
//! - [`sites`]: capturing call stacks without allocation, naming them at exit.
//! - [`report`]: grouping rows into sites, and the table; [`file`]: the JSON file, whose keys
//!   docs/profile.md lists.
//!
//! Costs, and what keeps them off the uncontended path: a free object is taken with one
//! `try_lock`. A replaced mutex then finds its row and last holder in its memo (the mutex's
//! own line), and counts in the row's first line if the holder is the same, or in the new
//! holder's tally if it changed; other objects count in their row's first line, by the
//! holder. No clock is read. One acquisition in [`HOLD_SAMPLE_EVERY`] of each count (a row's,
//! a tally's) reads the clock to time its hold, and its release reads it again. Only an acquisition that found the
//! object held times its wait, counts itself among the waiters (read-modify-writes), reads its
//! thread's phase counters before and after, and, the first time for its row, captures its
//! stack. A release reads the phase counters around the unlock only for a row that has been
//! contended or has a waiter; a replaced mutex whose memo says neither, and whose hold is not
//! timed, skips its row. Init calls capture their stack, once each.
//!
//! The time-integral of the number of waiters (`waiter_ns`) is the sum of the waits, each
//! waiter adding its own; `contended_ns` is the time during which at least one waited, opened
//! when the waiter count leaves 0 and closed when it returns there.

mod file;
mod hist;
mod inits;
mod memo;
mod report;
mod rows;
mod sites;
mod tallies;

pub use file::{check_writable, write_file};
pub use memo::Memo;
pub use report::{render_at_exit, snapshot_is_empty, Process};
pub use rows::forget_all;
pub use sites::{capturing_here, find_own_code};

use crate::fork;
use core::sync::atomic::Ordering::Relaxed;
use libc::c_int;
use rows::{add, raise, row, Row, CLAIMED, UNTRACKED};
use spinlab::sys::phases::{self, Phases};

/// Holds are timed once in this many acquisitions of an object (of those its row counts, and
/// of those each thread's tally counts, for a replaced mutex): two clock reads per sampled
/// hold, spread over 64 acquisitions, stay a few percent of an uncontended pair.
pub const HOLD_SAMPLE_EVERY: u64 = 64;

/// The `kind` of a mutex the preload library replaced (glibc's kinds are small and >= -1).
pub const OURS: c_int = c_int::MIN;
/// The `kind` of a spin lock, replaced or glibc's.
pub const SPIN: c_int = c_int::MIN + 1;
/// The `kind` of a barrier, replaced or glibc's: its rows count waits.
pub const BARRIER: c_int = c_int::MIN + 2;
/// The `kind` of a condition variable the library replaced: its rows count waits.
pub const COND: c_int = c_int::MIN + 3;
/// The `kind` of a reader-writer lock the preload library replaced.
pub const RWLOCK: c_int = c_int::MIN + 4;
/// The `kind` of a reader-writer lock glibc keeps (process-shared, or `SPINLAB_RWLOCK=pthread`).
pub const GLIBC_RWLOCK: c_int = c_int::MIN + 5;
/// The `kind` of a condition variable glibc keeps (`SPINLAB_LOCK=pthread`, process-shared):
/// its rows count waits.
pub const GLIBC_COND: c_int = c_int::MIN + 6;

/// `CLOCK_MONOTONIC` in nanoseconds (the vDSO's clock: no system call).
#[inline]
pub fn now_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes the current time into `now`; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// A contended acquisition in progress, counted among its object's waiters.
pub struct Waiting {
    row: Option<&'static Row>,
    since: u64,
    phases: Phases,
}

impl Waiting {
    /// Starts timing a wait for the object at `address`.
    #[inline(never)]
    pub fn start(address: usize) -> Waiting {
        let since = now_ns();
        Waiting::counted_in(since, row(address))
    }

    /// [`Waiting::start`] for the replaced mutex at `address`, whose memo is `memo`.
    #[inline(never)]
    pub fn start_remembered(address: usize, memo: &Memo) -> Waiting {
        let since = now_ns();
        memo.waited();
        Waiting::counted_in(since, memo.row(address).or_else(|| row(address)))
    }

    /// A wait since `since`, counted among `row`'s waiters.
    fn counted_in(since: u64, row: Option<&'static Row>) -> Waiting {
        if let Some(row) = row {
            let before = row.waiters.fetch_add(1, Relaxed);
            if before == 0 {
                row.contended_since.store(since, Relaxed);
            }
            row.max_waiters.fetch_max(before + 1, Relaxed);
        }
        Waiting { row, since, phases: phases::current() }
    }

    /// The signals and broadcasts made so far at the condition variable being waited for (0
    /// without a row): a condition wait that ends with the same count was not notified.
    pub fn notifications(&self) -> u64 {
        self.row.map_or(0, notifications)
    }

    /// Ends the wait: the object's counts of it (`alone`: the caller holds the object alone).
    /// Returns the time it ended.
    fn end(mut self, row: &'static Row, alone: bool) -> u64 {
        let now = now_ns();
        let ns = now.saturating_sub(self.since);
        add(&row.contended, 1, alone);
        add(&row.wait_ns, ns, alone);
        raise(&row.max_wait_ns, ns, alone);
        add(&row.wait_buckets[hist::bucket(ns)], 1, alone);
        let spent = phases::current().since(self.phases);
        if spent.sleep_ns != 0 {
            row.sleep_ns.fetch_add(spent.sleep_ns, Relaxed);
        }
        if spent.yield_ns != 0 {
            row.yield_ns.fetch_add(spent.yield_ns, Relaxed);
        }
        if let Some(counted) = self.row.take() {
            leave(counted, now);
        }
        if row.contended_site.load(Relaxed) == 0
            && row.contended_site.compare_exchange(0, CLAIMED, Relaxed, Relaxed).is_ok()
        {
            row.contended_site.store(u64::from(sites::capture()), Relaxed);
        }
        now
    }
}

/// A wait that ends without an acquisition (a timeout, an error, a barrier's last thread)
/// leaves the waiters uncounted.
impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(row) = self.row.take() {
            leave(row, now_ns());
        }
    }
}

/// Takes a waiter off `row`'s count at `now`, closing the contended interval if it was the
/// last.
fn leave(row: &Row, now: u64) {
    if row.waiters.fetch_sub(1, Relaxed) == 1 {
        let since = row.contended_since.load(Relaxed);
        row.contended_ns.fetch_add(now.saturating_sub(since.min(now)), Relaxed);
    }
}

/// Counts an acquisition of the mutex or spin lock at `address`, made by the calling thread,
/// which holds it now; `waited` is `None` if it was free.
#[inline]
pub fn acquired(address: usize, kind: c_int, waited: Option<Waiting>) {
    count_acquisition(address, kind, waited);
}

/// [`acquired`] for the replaced mutex at `address`, whose memo is `memo`, found free by the
/// calling thread `me` (`fork::me`): counted in its row, or at a hand-over in the thread's
/// tally; the rest out of line.
#[inline(always)]
pub fn acquired_free(address: usize, memo: &Memo, me: usize) {
    let Some((row, index, changed)) = memo.acquired_free(address, me) else {
        return acquired_first(address, memo, me);
    };
    // A call last: the caller keeps nothing across it.
    if counted(row, index, me, changed) {
        hold_begins(row, memo, now_ns());
    }
}

/// Counts an acquisition of the replaced mutex whose row is `row` (at `index`) by `me`, which
/// holds it (`changed`: from another thread): in the row if the holder did not change, where
/// the line is the holder's own from its last acquisition; in the thread's tally if it did,
/// where the row's line is another CPU's (see `tallies`). Returns whether the hold is timed.
#[inline(always)]
fn counted(row: &Row, index: u32, me: usize, changed: bool) -> bool {
    if !changed {
        let before = row.acquisitions.load(Relaxed);
        row.acquisitions.store(before + 1, Relaxed);
        return before % HOLD_SAMPLE_EVERY == 0;
    }
    match tallies::tally_at(me, index) {
        Some(tally) => tally.count(),
        None => handed_over_in_row(row),
    }
}

/// Times the hold of `memo`'s mutex, whose row is `row`, that begins at `now`.
#[cold]
#[inline(never)]
fn hold_begins(row: &Row, memo: &Memo, now: u64) {
    row.hold_started.store(now, Relaxed);
    memo.hold_sampled();
}

/// [`acquired_free`] with a memo that does not name the mutex's row.
#[cold]
#[inline(never)]
fn acquired_first(address: usize, memo: &Memo, me: usize) {
    count_remembered(address, memo, me, None);
}

/// [`acquired`] for the replaced mutex at `address`, whose memo is `memo` and learns its row.
#[inline(never)]
pub fn acquired_remembering(address: usize, memo: &Memo, waited: Option<Waiting>) {
    count_remembered(address, memo, fork::me(), waited);
}

/// Counts an acquisition of the replaced mutex at `address` by `me`, as [`counted`] does, and
/// notes it in the memo, with the wait that came before it, if any.
fn count_remembered(address: usize, memo: &Memo, me: usize, waited: Option<Waiting>) {
    let Some(row) = waited.as_ref().and_then(|w| w.row).or_else(|| row(address)) else {
        UNTRACKED.fetch_add(1, Relaxed);
        return;
    };
    row.kind.store(OURS as u64, Relaxed);
    let changed = memo.acquired(row, me, waited.is_some());
    let now = waited.map(|waiting| waiting.end(row, true));
    if counted(row, rows::index_of(row), me, changed) {
        hold_begins(row, memo, now.unwrap_or_else(now_ns));
    }
}

/// Counts a hand-over of a replaced mutex in its row itself, for a thread without a block of
/// tallies. Returns whether its hold is timed.
#[cold]
#[inline(never)]
fn handed_over_in_row(row: &Row) -> bool {
    let before = row.tallied.load(Relaxed);
    row.add_tallied(1);
    before % HOLD_SAMPLE_EVERY == 0
}

#[inline(always)]
fn count_acquisition(address: usize, kind: c_int, waited: Option<Waiting>) {
    let Some(row) = waited.as_ref().and_then(|w| w.row).or_else(|| row(address)) else {
        UNTRACKED.fetch_add(1, Relaxed);
        return;
    };
    // Loads and stores rather than read-modify-writes: see `rows`.
    row.kind.store(kind as u64, Relaxed);
    let n = row.acquisitions.load(Relaxed) + 1;
    row.acquisitions.store(n, Relaxed);
    changed_hands(row);
    let now = waited.map(|waiting| waiting.end(row, true));
    if (n - 1) % HOLD_SAMPLE_EVERY == 0 {
        row.hold_started.store(now.unwrap_or_else(now_ns), Relaxed);
    }
}

/// Counts an owner change if the last acquisition was another thread's.
#[inline(always)]
fn changed_hands(row: &Row) {
    let me = fork::me() as u64;
    let last = row.last_holder.load(Relaxed);
    if last != me {
        // No change from nobody, the first acquisition's.
        row.owner_changes.store(row.owner_changes.load(Relaxed) + u64::from(last != 0), Relaxed);
        row.last_holder.store(me, Relaxed);
    }
}

/// A release of an object that has been contended: the wake-ups it sends are counted.
pub struct Releasing {
    row: &'static Row,
    phases: Phases,
}

/// Notes that the calling thread is about to release the mutex, spin lock or write lock at
/// `address`, which it holds: ends a sampled hold, and for a row that has been contended
/// starts counting the release's wake-ups (finish with [`released`]).
#[inline]
pub fn releasing(address: usize) -> Option<Releasing> {
    release_of(rows::existing_row(address)?)
}

/// [`releasing`] for the replaced mutex at `address`, whose memo is `memo`; a caller whose
/// memo says that the release counts nothing ([`Memo::release_counts`]) need not call it.
#[inline]
pub fn releasing_remembered(address: usize, memo: &Memo) -> Option<Releasing> {
    memo.hold_ends();
    release_of(memo.row(address).or_else(|| rows::existing_row(address))?)
}

#[inline(always)]
fn release_of(row: &'static Row) -> Option<Releasing> {
    let started = row.hold_started.load(Relaxed);
    if started != 0 {
        let ns = now_ns().saturating_sub(started);
        row.hold_started.store(0, Relaxed);
        add(&row.hold_ns, ns, true);
        raise(&row.max_hold_ns, ns, true);
        add(&row.hold_buckets[hist::bucket(ns)], 1, true);
    }
    // A waiter counts itself before it waits: the release that ends the first contended wait
    // sees it, before the row has a contended acquisition.
    let contended = row.contended.load(Relaxed) != 0 || row.waiters.load(Relaxed) != 0;
    contended.then(|| Releasing { row, phases: phases::current() })
}

/// Ends [`releasing`], after the unlock.
#[inline]
pub fn released(releasing: Option<Releasing>) {
    if let Some(Releasing { row, phases }) = releasing {
        woke(row, phases);
    }
}

fn woke(row: &Row, before: Phases) {
    let spent = phases::current().since(before);
    if spent.wakes != 0 {
        row.wakes.fetch_add(spent.wakes, Relaxed);
        row.wakes_empty.fetch_add(spent.wakes_empty, Relaxed);
    }
}

/// Counts one wait at the barrier at `address`, which blocked if the thread had to wait for
/// others.
pub fn barrier_waited(address: usize, since: Waiting, blocked: bool) {
    let Some(row) = since.row.or_else(|| row(address)) else {
        UNTRACKED.fetch_add(1, Relaxed);
        return;
    };
    row.kind.store(BARRIER as u64, Relaxed);
    row.acquisitions.fetch_add(1, Relaxed);
    if blocked {
        since.end(row, false);
    }
}

/// How a condition wait ended.
pub struct CondWait {
    pub timed: bool,
    pub timed_out: bool,
    /// The condition variable's signals and broadcasts when the wait began
    /// ([`Waiting::notifications`]).
    pub notifications: u64,
}

/// Counts one wait at the condition variable at `address` (`kind` [`COND`] or
/// [`GLIBC_COND`]); every wait blocks.
pub fn cond_waited(address: usize, kind: c_int, since: Waiting, wait: CondWait) {
    let Some(row) = since.row.or_else(|| row(address)) else {
        UNTRACKED.fetch_add(1, Relaxed);
        return;
    };
    row.kind.store(kind as u64, Relaxed);
    row.acquisitions.fetch_add(1, Relaxed);
    if wait.timed {
        row.timed_waits.fetch_add(1, Relaxed);
    }
    if wait.timed_out {
        row.timed_out.fetch_add(1, Relaxed);
    } else if notifications(row) == wait.notifications {
        // No signal or broadcast since the wait began: none could have ended it. (One made
        // meanwhile for another waiter may have ended it too, so this is a lower bound.)
        row.spurious.fetch_add(1, Relaxed);
    }
    since.end(row, false);
}

/// The signals and broadcasts made at a condition variable so far.
fn notifications(row: &Row) -> u64 {
    row.signals.load(Relaxed) + row.broadcasts.load(Relaxed)
}

/// A signal or broadcast in progress at a condition variable.
pub struct Notifying {
    row: Option<&'static Row>,
    phases: Phases,
}

/// Counts a signal (or, `all`, a broadcast) at the condition variable at `address`; finish
/// with [`notified`] after it, to count its wake-ups.
pub fn notifying(address: usize, kind: c_int, all: bool) -> Notifying {
    let row = row(address);
    if let Some(row) = row {
        row.kind.store(kind as u64, Relaxed);
        row.signals.fetch_add(u64::from(!all), Relaxed);
        row.broadcasts.fetch_add(u64::from(all), Relaxed);
    }
    Notifying { row, phases: phases::current() }
}

/// Ends [`notifying`].
pub fn notified(notifying: Notifying) {
    if let Some(row) = notifying.row {
        woke(row, notifying.phases);
    }
}

/// Counts an acquisition of the reader-writer lock at `address` for reading or (`write`)
/// writing, by the calling thread, which holds it now; `waited` is `None` if it got in at
/// once. Readers hold it together, so the counts are read-modify-writes; a writer's hold is
/// sampled as a mutex's.
#[inline]
pub fn rw_acquired(address: usize, kind: c_int, write: bool, waited: Option<Waiting>) {
    let Some(row) = waited.as_ref().and_then(|w| w.row).or_else(|| row(address)) else {
        UNTRACKED.fetch_add(1, Relaxed);
        return;
    };
    row.kind.store(kind as u64, Relaxed);
    row.acquisitions.fetch_add(1, Relaxed);
    let n = if write { row.writes.fetch_add(1, Relaxed) } else { row.reads.fetch_add(1, Relaxed) } + 1;
    let wait_ns = waited.map(|waiting| {
        let since = waiting.since;
        (waiting.end(row, false), since)
    });
    if let Some((now, since)) = wait_ns {
        let (contended, total) =
            if write { (&row.write_contended, &row.write_wait_ns) } else { (&row.read_contended, &row.read_wait_ns) };
        contended.fetch_add(1, Relaxed);
        total.fetch_add(now.saturating_sub(since), Relaxed);
    }
    if write {
        changed_hands(row);
        if (n - 1) % HOLD_SAMPLE_EVERY == 0 {
            row.hold_started.store(wait_ns.map_or_else(now_ns, |(now, _)| now), Relaxed);
        }
    }
}

/// Records the call stack of the init call of the object at `address` (see `inits`).
#[inline(never)]
pub fn initialised(address: usize) {
    let made = inits::made(address, sites::capture());
    if let Some(row) = rows::existing_row(address) {
        row.made(made);
    }
}

/// Marks the mutex at `address` as a C11 `mtx_t`.
pub fn mark_c11(address: usize) {
    let made = inits::mark_c11(address);
    if let Some(row) = rows::existing_row(address) {
        row.made(made);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_made_but_never_locked_takes_no_row_and_its_first_use_finds_its_site() {
        // An address no real object has.
        let address = 0x7_2000_0008usize;
        initialised(address);
        assert!(rows::existing_row(address).is_none(), "no row before the first acquisition");
        acquired(address, OURS, None);
        let row = rows::existing_row(address).unwrap();
        assert_ne!(row.init_site.load(Relaxed), 0, "the init call's stack");
        assert_eq!(row.acquisitions.load(Relaxed), 1);
        assert_ne!(row.hold_started.load(Relaxed), 0, "the first hold is timed");
        released(releasing(address));
        assert_eq!(row.hold_started.load(Relaxed), 0);
        assert_eq!(hist::Hist::read(&row.hold_buckets, 0, 0).count, 1);
        for _ in 1..HOLD_SAMPLE_EVERY {
            acquired(address, OURS, None);
            released(releasing(address));
        }
        assert_eq!(hist::Hist::read(&row.hold_buckets, 0, 0).count, 1, "one in {HOLD_SAMPLE_EVERY}");
        acquired(address, OURS, None);
        released(releasing(address));
        assert_eq!(hist::Hist::read(&row.hold_buckets, 0, 0).count, 2);
        assert_eq!(row.owner_changes.load(Relaxed), 0, "one thread");
    }
}
