//! `SPINLAB_STATS=1`: for every mutex (and spin lock), how often it was acquired, how often
//! that found it held (contended), how long those acquisitions waited, and how long the lock
//! took to pass from a release to a waiting thread (the hand-over: a convoy behind a sleeping
//! or preempted waiter shows there); for every barrier and condition variable, its waits and
//! how long they blocked. Printed at exit as a table of the objects with the most waiting,
//! what mutrace and lockstat give, for any lock.
//!
//! The rows live in a fixed table in the library's zero-initialised data, keyed by the
//! mutex's address (open addressing), so counting never allocates or takes a lock, a fork
//! copies it whole, and a mutex that is destroyed and re-created at the same address keeps
//! adding to one row. A row is written only by the thread that holds its mutex, so the
//! mutex itself serialises the updates: plain relaxed loads and stores, no read-modify-write
//! on the hot line. Only claiming a free row for a new address is a compare-and-swap.
//!
//! A reader-writer lock's readers hold it together, so its rows are counted with
//! [`acquired_shared`], with read-modify-writes as for barriers and condition variables.
//!
//! A wait is timed only when the acquisition found the mutex held: a free mutex is taken
//! with one `try_lock` and costs no clock read.

use core::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use libc::c_int;
use std::fmt::Write as _;

/// Rows in the table; a program with more distinct mutexes has the rest counted as untracked.
const CAPACITY: usize = 1 << 14;
/// How far from its home row an address may land before it is counted as untracked.
const MAX_PROBES: usize = 64;

/// One mutex's counts, alone on its line: the holders of two busy mutexes must not write one
/// line.
#[repr(align(64))]
struct Row {
    /// The mutex's address; 0 while the row is free.
    mutex: AtomicUsize,
    /// Its glibc `__kind` when last counted, or `OURS`.
    kind: AtomicI32,
    acquisitions: AtomicU64,
    contended: AtomicU64,
    wait_ns: AtomicU64,
    max_wait_ns: AtomicU64,
    /// When the mutex was last released ([`now_ns`]), kept once it has been contended.
    released_ns: AtomicU64,
    /// Contended acquisitions that came after a release made while they waited, and the time
    /// from that release to the acquisition.
    handovers: AtomicU64,
    handover_ns: AtomicU64,
    max_handover_ns: AtomicU64,
}

impl Row {
    const fn new() -> Row {
        Row {
            mutex: AtomicUsize::new(0),
            kind: AtomicI32::new(0),
            acquisitions: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            wait_ns: AtomicU64::new(0),
            max_wait_ns: AtomicU64::new(0),
            released_ns: AtomicU64::new(0),
            handovers: AtomicU64::new(0),
            handover_ns: AtomicU64::new(0),
            max_handover_ns: AtomicU64::new(0),
        }
    }

    /// Every count, for emptying the row.
    fn counts(&self) -> [&AtomicU64; 8] {
        [
            &self.acquisitions,
            &self.contended,
            &self.wait_ns,
            &self.max_wait_ns,
            &self.released_ns,
            &self.handovers,
            &self.handover_ns,
            &self.max_handover_ns,
        ]
    }
}

static ROWS: [Row; CAPACITY] = [const { Row::new() }; CAPACITY];
/// Acquisitions of mutexes that found no row.
static UNTRACKED: AtomicU64 = AtomicU64::new(0);

/// The `kind` of a mutex the preload library replaced (glibc's kinds are small and >= -1).
pub const OURS: c_int = c_int::MIN;
/// The `kind` of a spin lock, replaced or glibc's.
pub const SPIN: c_int = c_int::MIN + 1;
/// The `kind` of a barrier, replaced or glibc's: its rows count waits.
pub const BARRIER: c_int = c_int::MIN + 2;
/// The `kind` of a condition variable, replaced or glibc's: its rows count waits.
pub const COND: c_int = c_int::MIN + 3;
/// The `kind` of a reader-writer lock the preload library replaced.
pub const RWLOCK: c_int = c_int::MIN + 4;
/// The `kind` of a reader-writer lock glibc keeps (process-shared, or `SPINLAB_RWLOCK=pthread`).
pub const GLIBC_RWLOCK: c_int = c_int::MIN + 5;

/// `CLOCK_MONOTONIC` in nanoseconds (the vDSO's clock: no system call).
#[inline]
fn now_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes the current time into `now`; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// The row of the mutex at `address`, claimed if new; `None` if its probe window is full.
fn row(address: usize) -> Option<&'static Row> {
    // Fibonacci hashing of the address without its always-zero low bits.
    let home = ((address >> 3) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CAPACITY.trailing_zeros());
    for probe in 0..MAX_PROBES {
        let row = &ROWS[(home as usize + probe) % CAPACITY];
        match row.mutex.load(Relaxed) {
            0 => match row.mutex.compare_exchange(0, address, Relaxed, Relaxed) {
                Ok(_) => return Some(row),
                Err(taken) if taken == address => return Some(row),
                Err(_) => {}
            },
            taken if taken == address => return Some(row),
            _ => {}
        }
    }
    None
}

/// The row of the mutex at `address` if it has one (no row is claimed).
fn existing_row(address: usize) -> Option<&'static Row> {
    let home = ((address >> 3) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CAPACITY.trailing_zeros());
    (0..MAX_PROBES).map(|probe| &ROWS[(home as usize + probe) % CAPACITY]).find_map(|row| {
        match row.mutex.load(Relaxed) {
            0 => Some(None),
            taken if taken == address => Some(Some(row)),
            _ => None,
        }
    })?
}

/// When a contended acquisition started waiting ([`now_ns`]).
pub struct Waiting(u64);

impl Waiting {
    /// Starts timing a wait.
    #[inline]
    pub fn start() -> Waiting {
        Waiting(now_ns())
    }
}

/// Notes that the calling thread is about to release the mutex at `address`, which it holds:
/// the start of the next hand-over. Only mutexes that have been contended pay the clock read.
#[inline]
pub fn releasing(address: usize) {
    if let Some(row) = existing_row(address) {
        if row.contended.load(Relaxed) != 0 {
            // A store by the holder, read by the next holder: the mutex orders the two.
            row.released_ns.store(now_ns(), Relaxed);
        }
    }
}

/// Counts an acquisition of the mutex at `address`, made by the calling thread, which holds
/// it now; `waited` is `None` if it was free.
#[inline]
pub fn acquired(address: usize, kind: c_int, waited: Option<Waiting>) {
    let Some(row) = row(address) else {
        UNTRACKED.fetch_add(1, Relaxed);
        return;
    };
    // Loads and stores rather than read-modify-writes: see the module's documentation.
    row.kind.store(kind, Relaxed);
    row.acquisitions.store(row.acquisitions.load(Relaxed) + 1, Relaxed);
    if let Some(Waiting(since)) = waited {
        let now = now_ns();
        let ns = now.saturating_sub(since);
        row.contended.store(row.contended.load(Relaxed) + 1, Relaxed);
        row.wait_ns.store(row.wait_ns.load(Relaxed).saturating_add(ns), Relaxed);
        if ns > row.max_wait_ns.load(Relaxed) {
            row.max_wait_ns.store(ns, Relaxed);
        }
        // A release while this thread waited, and then its acquisition: a hand-over. (A
        // release before the wait began is one this thread lost to another.)
        let released = row.released_ns.load(Relaxed);
        if released >= since {
            let handover = now.saturating_sub(released);
            row.handovers.store(row.handovers.load(Relaxed) + 1, Relaxed);
            row.handover_ns.store(row.handover_ns.load(Relaxed).saturating_add(handover), Relaxed);
            if handover > row.max_handover_ns.load(Relaxed) {
                row.max_handover_ns.store(handover, Relaxed);
            }
        }
    }
}

/// Counts one wait at the barrier or condition variable at `address` (`kind` [`BARRIER`] or
/// [`COND`]), which `blocked` if the thread had to wait for others.
pub fn waited(address: usize, kind: c_int, since: Waiting, blocked: bool) {
    count_together(address, kind, blocked.then(|| now_ns().saturating_sub(since.0)));
}

/// Counts an acquisition, read or write, of the reader-writer lock at `address` by the calling
/// thread, which holds it now; `waited` is `None` if it got in at once. No hand-over is
/// counted: a rwlock passes from its last reader or its writer to many threads at once.
#[inline]
pub fn acquired_shared(address: usize, kind: c_int, waited: Option<Waiting>) {
    count_together(address, kind, waited.map(|Waiting(since)| now_ns().saturating_sub(since)));
}

/// Counts one use of an object that many threads use at once (a barrier's or a condition
/// variable's waiters, a rwlock's readers), so with read-modify-writes; `wait_ns` is how long
/// it waited, `None` if it did not.
fn count_together(address: usize, kind: c_int, wait_ns: Option<u64>) {
    let Some(row) = row(address) else {
        UNTRACKED.fetch_add(1, Relaxed);
        return;
    };
    row.kind.store(kind, Relaxed);
    row.acquisitions.fetch_add(1, Relaxed);
    if let Some(ns) = wait_ns {
        row.contended.fetch_add(1, Relaxed);
        row.wait_ns.fetch_add(ns, Relaxed);
        row.max_wait_ns.fetch_max(ns, Relaxed);
    }
}

/// Empties the table: a forked child counts its own acquisitions, not its parent's.
pub fn forget_all() {
    for row in ROWS.iter().filter(|row| row.mutex.load(Relaxed) != 0) {
        for count in row.counts() {
            count.store(0, Relaxed);
        }
        row.mutex.store(0, Relaxed);
    }
    UNTRACKED.store(0, Relaxed);
}

/// One row as the report sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Counted {
    pub mutex: usize,
    pub kind: &'static str,
    pub acquisitions: u64,
    pub contended: u64,
    pub wait_ns: u64,
    pub max_wait_ns: u64,
    pub handovers: u64,
    pub handover_ns: u64,
    pub max_handover_ns: u64,
}

/// Every used row, read now.
pub fn snapshot(kind_name: impl Fn(c_int) -> &'static str) -> (Vec<Counted>, u64) {
    let rows = ROWS
        .iter()
        .filter(|row| row.mutex.load(Relaxed) != 0 && row.acquisitions.load(Relaxed) != 0)
        .map(|row| Counted {
            mutex: row.mutex.load(Relaxed),
            kind: kind_name(row.kind.load(Relaxed)),
            acquisitions: row.acquisitions.load(Relaxed),
            contended: row.contended.load(Relaxed),
            wait_ns: row.wait_ns.load(Relaxed),
            max_wait_ns: row.max_wait_ns.load(Relaxed),
            handovers: row.handovers.load(Relaxed),
            handover_ns: row.handover_ns.load(Relaxed),
            max_handover_ns: row.max_handover_ns.load(Relaxed),
        })
        .collect();
    (rows, UNTRACKED.load(Relaxed))
}

/// The report: a heading naming the program and the lock, then the `top` mutexes with the
/// most total waiting (then the most contended, then the most used).
pub fn render(program: &str, lock: &str, mut rows: Vec<Counted>, untracked: u64, top: usize) -> String {
    let objects = rows.len();
    let acquisitions: u64 = rows.iter().map(|r| r.acquisitions).sum();
    rows.sort_by(|a, b| {
        (b.wait_ns, b.contended, b.acquisitions, a.mutex).cmp(&(a.wait_ns, a.contended, a.acquisitions, b.mutex))
    });
    rows.truncate(top);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "spinlab-preload: lock statistics of {program} (pid {}), mutexes {lock}: {objects} objects, {acquisitions} acquisitions; the {} with the most waiting:",
        std::process::id(),
        rows.len(),
    );
    let _ = writeln!(
        out,
        "  {:>18}  {:<12} {:>14} {:>10} {:>11} {:>11} {:>11} {:>13} {:>13}",
        "mutex",
        "kind",
        "acquisitions",
        "contended",
        "mean wait",
        "max wait",
        "total wait",
        "mean handover",
        "max handover"
    );
    for row in &rows {
        let contended_pct = 100.0 * row.contended as f64 / row.acquisitions as f64;
        let mean = row.wait_ns.checked_div(row.contended).unwrap_or(0);
        let (mean_handover, max_handover) = match row.handover_ns.checked_div(row.handovers) {
            Some(mean) => (duration(mean), duration(row.max_handover_ns)),
            None => ("-".to_string(), "-".to_string()),
        };
        let _ = writeln!(
            out,
            "  {:>#18x}  {:<12} {:>14} {:>9.2}% {:>11} {:>11} {:>11} {:>13} {:>13}",
            row.mutex,
            row.kind,
            row.acquisitions,
            contended_pct,
            duration(mean),
            duration(row.max_wait_ns),
            duration(row.wait_ns),
            mean_handover,
            max_handover,
        );
    }
    let _ = writeln!(out, "  (contended: acquisitions that found the mutex held; the waits are theirs)");
    let _ = writeln!(
        out,
        "  (handover: from a release to the acquisition by a thread that was waiting for it; a convoy shows as handovers near the wake-up time)"
    );
    let _ = writeln!(
        out,
        "  (a barrier's or condition variable's acquisitions are its waits, contended those that blocked)"
    );
    if untracked > 0 {
        let _ =
            writeln!(out, "  ({untracked} acquisitions of mutexes beyond the table's {CAPACITY} rows are not shown)");
    }
    out
}

/// Nanoseconds, in the largest unit that keeps at least one digit before the point.
fn duration(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.1} us", ns as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(mutex: usize, acquisitions: u64, contended: u64, wait_ns: u64) -> Counted {
        let handovers = contended / 2;
        let handover_ns = wait_ns / 4;
        let max_handover_ns = handover_ns;
        Counted {
            mutex,
            kind: "spinlab",
            acquisitions,
            contended,
            wait_ns,
            max_wait_ns: wait_ns / 2,
            handovers,
            handover_ns,
            max_handover_ns,
        }
    }

    #[test]
    fn the_report_orders_by_waiting_and_keeps_the_top() {
        let rows = vec![counted(0x10, 100, 0, 0), counted(0x20, 50, 10, 5_000), counted(0x30, 70, 7, 90_000)];
        let text = render("prog", "mcs:futex", rows, 0, 2);
        let lines: Vec<_> = text.lines().collect();
        assert!(
            lines[0].contains("prog") && lines[0].contains("mcs:futex: 3 objects, 220 acquisitions; the 2"),
            "{text}"
        );
        assert!(lines[2].contains("0x30") && lines[2].contains("10.00%") && lines[2].contains("12.9 us"), "{text}");
        assert!(lines[3].contains("0x20") && lines[3].contains("20.00%") && lines[3].contains("500 ns"), "{text}");
        // 7 contended, 3 hand-overs taking 22.5 us in all: 7.5 us each, the longest 22.5 us.
        assert!(lines[2].ends_with("7.5 us       22.5 us"), "{text}");
        let free = render("p", "l", vec![counted(0x40, 9, 0, 0)], 0, 1);
        assert!(free.lines().nth(2).is_some_and(|line| line.ends_with("-             -")), "no hand-over: {free}");
        assert!(!text.contains("0x10"), "only the top 2: {text}");
        assert!(!text.contains("not shown"));
        assert!(render("p", "l", vec![], 5, 3).contains("5 acquisitions of mutexes beyond"));
    }

    /// The table is shared: a test that empties it must not run beside one that reads it.
    static TABLE: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn a_hand_over_is_a_release_while_the_acquirer_waited() {
        let _table = TABLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // An address no real mutex has (the tests of this crate share the table).
        let mutex = 0x7_0000_0100usize;
        let row = |()| snapshot(|_| "spinlab").0.into_iter().find(|row| row.mutex == mutex).unwrap();
        acquired(mutex, OURS, Some(Waiting::start()));
        assert_eq!(row(()).handovers, 0, "no release yet");
        let waiting = Waiting::start();
        std::thread::sleep(std::time::Duration::from_micros(2)); // distinct clock readings
        releasing(mutex);
        acquired(mutex, OURS, Some(waiting));
        let first = row(());
        assert_eq!((first.contended, first.handovers), (2, 1), "released while it waited: {first:?}");
        assert_eq!(first.handover_ns, first.max_handover_ns);
        releasing(mutex);
        std::thread::sleep(std::time::Duration::from_micros(2));
        acquired(mutex, OURS, Some(Waiting::start()));
        assert_eq!(row(()).handovers, 1, "released before it began to wait: lost to another, not handed over");
        releasing(0x7_0000_0200); // a mutex without a row gets none
        assert!(snapshot(|_| "x").0.iter().all(|row| row.mutex != 0x7_0000_0200));
    }

    #[test]
    fn durations_take_the_largest_unit_with_a_digit_before_the_point() {
        assert_eq!(duration(999), "999 ns");
        assert_eq!(duration(1_000), "1.0 us");
        assert_eq!(duration(12_345), "12.3 us");
        assert_eq!(duration(5_096_600), "5.1 ms");
        assert_eq!(duration(45_600_000), "45.6 ms");
        assert_eq!(duration(12_340_000_000), "12.34 s");
    }

    #[test]
    fn acquisitions_add_up_per_address_and_forget_all_empties_the_table() {
        let _table = TABLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Addresses no real mutex has (the tests of this crate share the table).
        let (a, b) = (0x7_0000_0008usize, 0x7_0000_0010usize);
        for _ in 0..3 {
            acquired(a, OURS, None);
        }
        acquired(b, 1, Some(Waiting::start()));
        let (rows, _) = snapshot(|kind| if kind == OURS { "spinlab" } else { "other" });
        let row_a = rows.iter().find(|r| r.mutex == a).unwrap();
        let row_b = rows.iter().find(|r| r.mutex == b).unwrap();
        assert_eq!((row_a.acquisitions, row_a.contended, row_a.kind), (3, 0, "spinlab"));
        assert_eq!((row_b.acquisitions, row_b.contended, row_b.kind), (1, 1, "other"));
        forget_all();
        assert!(snapshot(|_| "").0.is_empty());
    }

    #[test]
    fn shared_acquisitions_from_many_threads_at_once_are_all_counted() {
        let _table = TABLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let address = 0x7_0000_0018usize;
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for i in 0..10_000 {
                        acquired_shared(address, RWLOCK, (i % 2 == 0).then(Waiting::start));
                    }
                });
            }
        });
        let (rows, _) = snapshot(|kind| if kind == RWLOCK { "rwlock" } else { "other" });
        let row = rows.iter().find(|r| r.mutex == address).unwrap();
        assert_eq!((row.acquisitions, row.contended, row.kind), (40_000, 20_000, "rwlock"));
        assert!(row.max_wait_ns <= row.wait_ns && row.handovers == 0);
    }
}
