//! The rows read at exit, grouped into sites, and the table of the sites with the most
//! waiting. A site is a kind of object, where its stack came from (its init call, its first
//! contended acquisition, or neither) and the stack's addresses: objects made at one line
//! through one path make one site, with the object count beside it.

use super::hist::Hist;
use super::rows::{self, Row, CLAIMED, UNTRACKED};
use super::sites::{self, Frame};
use super::{BARRIER, COND, GLIBC_COND, GLIBC_RWLOCK, OURS, RWLOCK, SPIN};
use core::sync::atomic::Ordering::Relaxed;
use libc::c_int;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Where a site's stack was captured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    Init,
    Contended,
    None,
}

impl Origin {
    pub fn name(self) -> &'static str {
        match self {
            Origin::Init => "init",
            Origin::Contended => "contended",
            Origin::None => "none",
        }
    }
}

/// A condition variable's own counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CondCounts {
    pub timed_waits: u64,
    pub timed_out: u64,
    pub signals: u64,
    pub broadcasts: u64,
    pub spurious: u64,
}

/// A reader-writer lock's own counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RwCounts {
    pub reads: u64,
    pub writes: u64,
    pub read_contended: u64,
    pub write_contended: u64,
    pub read_wait_ns: u64,
    pub write_wait_ns: u64,
}

/// One object's counts, or a site's sums of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    pub acquisitions: u64,
    pub contended: u64,
    pub owner_changes: u64,
    pub wait: Hist,
    pub hold: Hist,
    pub sleep_ns: u64,
    pub yield_ns: u64,
    pub wakes: u64,
    pub wakes_empty: u64,
    pub max_waiters: u64,
    pub contended_ns: u64,
    pub cond: CondCounts,
    pub rw: RwCounts,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.acquisitions += o.acquisitions;
        self.contended += o.contended;
        self.owner_changes += o.owner_changes;
        self.wait.add(&o.wait);
        self.hold.add(&o.hold);
        self.sleep_ns += o.sleep_ns;
        self.yield_ns += o.yield_ns;
        self.wakes += o.wakes;
        self.wakes_empty += o.wakes_empty;
        self.max_waiters = self.max_waiters.max(o.max_waiters);
        self.contended_ns += o.contended_ns;
        self.cond.timed_waits += o.cond.timed_waits;
        self.cond.timed_out += o.cond.timed_out;
        self.cond.signals += o.cond.signals;
        self.cond.broadcasts += o.cond.broadcasts;
        self.cond.spurious += o.cond.spurious;
        self.rw.reads += o.rw.reads;
        self.rw.writes += o.rw.writes;
        self.rw.read_contended += o.rw.read_contended;
        self.rw.write_contended += o.rw.write_contended;
        self.rw.read_wait_ns += o.rw.read_wait_ns;
        self.rw.write_wait_ns += o.rw.write_wait_ns;
    }
}

/// One object as read from its row.
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    pub address: usize,
    /// The file's kind: `mutex`, `spin`, `rwlock`, `cond`, `barrier`, `c11-mutex`,
    /// `glibc-mutex` or `glibc-rwlock`.
    pub kind: &'static str,
    pub origin: Origin,
    /// Its site's number (`sites`), 0 with [`Origin::None`].
    pub site: u32,
    pub counts: Counts,
}

/// Objects grouped by kind, origin and stack.
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    pub kind: &'static str,
    pub origin: Origin,
    pub stack: Vec<usize>,
    pub objects: usize,
    pub counts: Counts,
    /// Up to [`TOP_OBJECTS`] of its objects, the most waited first.
    pub top: Vec<Object>,
}

/// Objects listed per site.
pub const TOP_OBJECTS: usize = 8;

/// The file's name of a row's kind.
fn kind_name(kind: c_int, c11: bool) -> &'static str {
    match kind {
        OURS if c11 => "c11-mutex",
        OURS => "mutex",
        SPIN => "spin",
        BARRIER => "barrier",
        COND | GLIBC_COND => "cond",
        RWLOCK => "rwlock",
        GLIBC_RWLOCK => "glibc-rwlock",
        _ => "glibc-mutex",
    }
}

/// `row`, with `tallied`, the hand-overs the threads' tallies hold for it (`tallies::gather`).
fn read(row: &Row, tallied: u64) -> Object {
    let counts = Counts {
        acquisitions: row.acquisitions.load(Relaxed) + row.tallied.load(Relaxed) + tallied,
        contended: row.contended.load(Relaxed),
        owner_changes: row.owner_changes.load(Relaxed) + tallied,
        wait: Hist::read(&row.wait_buckets, row.wait_ns.load(Relaxed), row.max_wait_ns.load(Relaxed)),
        hold: Hist::read(&row.hold_buckets, row.hold_ns.load(Relaxed), row.max_hold_ns.load(Relaxed)),
        sleep_ns: row.sleep_ns.load(Relaxed),
        yield_ns: row.yield_ns.load(Relaxed),
        wakes: row.wakes.load(Relaxed),
        wakes_empty: row.wakes_empty.load(Relaxed),
        max_waiters: row.max_waiters.load(Relaxed),
        contended_ns: row.contended_ns.load(Relaxed),
        cond: CondCounts {
            timed_waits: row.timed_waits.load(Relaxed),
            timed_out: row.timed_out.load(Relaxed),
            signals: row.signals.load(Relaxed),
            broadcasts: row.broadcasts.load(Relaxed),
            spurious: row.spurious.load(Relaxed),
        },
        rw: RwCounts {
            reads: row.reads.load(Relaxed),
            writes: row.writes.load(Relaxed),
            read_contended: row.read_contended.load(Relaxed),
            write_contended: row.write_contended.load(Relaxed),
            read_wait_ns: row.read_wait_ns.load(Relaxed),
            write_wait_ns: row.write_wait_ns.load(Relaxed),
        },
    };
    let (init, contended) = (row.init_site.load(Relaxed), row.contended_site.load(Relaxed));
    let (origin, site) = match (init, contended) {
        (site, _) if site != 0 && site != CLAIMED => (Origin::Init, site as u32),
        (_, site) if site != 0 && site != CLAIMED => (Origin::Contended, site as u32),
        _ => (Origin::None, 0),
    };
    let kind = kind_name(row.kind.load(Relaxed) as c_int, row.c11.load(Relaxed) != 0);
    Object { address: row.address.load(Relaxed) as usize, kind, origin, site, counts }
}

/// Whether no object was acquired, used or waited for.
pub fn snapshot_is_empty() -> bool {
    rows::used(&super::tallies::gather()).next().is_none() && UNTRACKED.load(Relaxed) == 0
}

/// Every used row, read now, grouped into sites, the most waited first; and the untracked
/// acquisitions.
pub fn snapshot() -> (Vec<Site>, u64) {
    let tallied = super::tallies::gather();
    let objects: Vec<Object> = rows::used(&tallied).map(|(index, row)| read(row, tallied[index])).collect();
    (group(objects, sites::stack), UNTRACKED.load(Relaxed))
}

/// Groups `objects` by kind, origin and stack (`stack_of` a site number's stack).
pub fn group(objects: Vec<Object>, stack_of: impl Fn(u32) -> Vec<usize>) -> Vec<Site> {
    let mut stacks: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    let mut groups: BTreeMap<(&'static str, Origin, Vec<usize>), Vec<Object>> = BTreeMap::new();
    for object in objects {
        let stack =
            stacks
                .entry(object.site)
                .or_insert_with(|| if object.site == 0 { Vec::new() } else { stack_of(object.site) });
        let origin = if stack.is_empty() { Origin::None } else { object.origin };
        groups.entry((object.kind, origin, stack.clone())).or_default().push(object);
    }
    let mut sites: Vec<Site> = groups
        .into_iter()
        .map(|((kind, origin, stack), mut objects)| {
            let mut counts = Counts::default();
            for object in &objects {
                counts.add(&object.counts);
            }
            objects.sort_by(|a, b| {
                (b.counts.wait.total_ns, b.counts.acquisitions, a.address).cmp(&(
                    a.counts.wait.total_ns,
                    a.counts.acquisitions,
                    b.address,
                ))
            });
            let count = objects.len();
            objects.truncate(TOP_OBJECTS);
            Site { kind, origin, stack, objects: count, counts, top: objects }
        })
        .collect();
    sites.sort_by(|a, b| {
        (b.counts.wait.total_ns, b.counts.contended, b.counts.acquisitions).cmp(&(
            a.counts.wait.total_ns,
            a.counts.contended,
            a.counts.acquisitions,
        ))
    });
    sites
}

/// The kinds whose waits go through spinlab's policies, so that their phases and wake-ups are
/// known (the others are glibc's).
pub fn phases_known(kind: &str, spins_replaced: bool, barriers_replaced: bool, mutexes_replaced: bool) -> bool {
    match kind {
        "mutex" | "c11-mutex" | "rwlock" => true,
        "cond" => mutexes_replaced,
        "spin" => spins_replaced,
        "barrier" => barriers_replaced,
        _ => false,
    }
}

/// The innermost frame's name for the table: `function (file:line)`, or what is known.
pub fn place(frame: Option<&Frame>) -> String {
    let Some(frame) = frame else { return "(no stack: a static initialiser, never contended)".to_string() };
    let function = frame.function.as_deref().unwrap_or("??");
    match (&frame.file, frame.line) {
        (Some(file), Some(line)) => {
            let short = file.rsplit('/').next().unwrap_or(file);
            format!("{function} ({short}:{line})")
        }
        _ => {
            let module = frame.module.as_deref().map_or("?", |m| m.rsplit('/').next().unwrap_or(m));
            format!("{function} ({module}+{:#x})", frame.offset.unwrap_or(0))
        }
    }
}

/// The table printed at exit (`SPINLAB_STATS=1`): a heading, then the `top` sites, two lines
/// each, within 100 columns. `known` says whether a kind's phases are known; `innermost`
/// names a site's innermost frame.
pub fn render(
    heading: &Heading,
    sites: &[Site],
    untracked: u64,
    top: usize,
    known: impl Fn(&str) -> bool,
    innermost: impl Fn(&Site) -> Option<Frame>,
) -> String {
    let objects: usize = sites.iter().map(|s| s.objects).sum();
    let acquisitions: u64 = sites.iter().map(|s| s.counts.acquisitions).sum();
    let shown = sites.len().min(top);
    let Heading { program, pid, lock } = heading;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "spinlab-preload: lock statistics of {program} (pid {pid}), mutexes {lock}:\n  {} sites, {objects} objects, {acquisitions} acquisitions; the {shown} sites with the most waiting:",
        sites.len(),
    );
    let _ = writeln!(
        out,
        "  {:>3} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>12}",
        "#",
        "objects",
        "acquired",
        "contended",
        "owner-chg",
        "wait p50",
        "wait p99",
        "total wait",
        "hold p99",
        "spin/yld/slp"
    );
    for (rank, site) in sites.iter().take(top).enumerate() {
        let c = &site.counts;
        let contended = if c.acquisitions == 0 { 0.0 } else { 100.0 * c.contended as f64 / c.acquisitions as f64 };
        let hold = if c.hold.count == 0 { "-".to_string() } else { duration(c.hold.quantile(0.99)) };
        let split = match (known(site.kind), c.wait.total_ns) {
            (false, _) | (true, 0) => "-".to_string(),
            (true, total) => {
                let share = |ns: u64| (100 * ns.min(total) / total) as u32;
                let (sleep, yielded) = (share(c.sleep_ns), share(c.yield_ns));
                format!("{}/{yielded}/{sleep}%", 100u32.saturating_sub(sleep + yielded))
            }
        };
        let _ = writeln!(
            out,
            "  {:>3} {:>7} {:>10} {:>8.2}% {:>9} {:>9} {:>9} {:>10} {:>9} {:>12}",
            rank + 1,
            site.objects,
            c.acquisitions,
            contended,
            c.owner_changes,
            duration(c.wait.quantile(0.5)),
            duration(c.wait.quantile(0.99)),
            duration(c.wait.total_ns),
            hold,
            split,
        );
        let _ = writeln!(out, "      {} {}: {}", site.kind, site.origin.name(), place(innermost(site).as_ref()));
    }
    let _ = writeln!(
        out,
        "  (contended: acquisitions that found the object held; the waits are theirs; holds sampled 1 in {})",
        super::HOLD_SAMPLE_EVERY
    );
    let _ = writeln!(
        out,
        "  (a barrier's or condition variable's acquisitions are its waits; spin/yld/slp: shares of the wait)"
    );
    if untracked > 0 {
        let _ = writeln!(
            out,
            "  ({untracked} acquisitions of objects beyond the table's {} rows are not shown)",
            rows::CAPACITY
        );
    }
    out
}

/// Nanoseconds, in the largest unit that keeps at least one digit before the point.
pub fn duration(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.1} us", ns as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// What the table's heading names.
pub struct Heading<'a> {
    pub program: &'a str,
    pub pid: u32,
    pub lock: &'a str,
}

/// What [`render_at_exit`] and the file need of the process.
pub struct Process<'a> {
    pub program: &'a str,
    pub lock: &'a str,
    pub spins_replaced: bool,
    pub barriers_replaced: bool,
    pub mutexes_replaced: bool,
}

/// The table of the sites now, for the exit hook.
pub fn render_at_exit(process: &Process, top: usize) -> String {
    let (sites, untracked) = snapshot();
    let known =
        |kind: &str| phases_known(kind, process.spins_replaced, process.barriers_replaced, process.mutexes_replaced);
    let heading = Heading { program: process.program, pid: std::process::id(), lock: process.lock };
    render(&heading, &sites, untracked, top, known, |site| site.stack.first().map(|&ip| sites::symbolise(ip)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(
        address: usize,
        kind: &'static str,
        origin: Origin,
        site: u32,
        acquisitions: u64,
        wait_ns: u64,
    ) -> Object {
        let mut counts = Counts { acquisitions, ..Counts::default() };
        counts.wait.total_ns = wait_ns;
        counts.contended = u64::from(wait_ns > 0);
        counts.wait.count = counts.contended;
        Object { address, kind, origin, site, counts }
    }

    fn stacks(site: u32) -> Vec<usize> {
        match site {
            1 | 2 => vec![0x100, 0x200],
            3 => vec![0x300],
            _ => Vec::new(),
        }
    }

    #[test]
    fn objects_group_by_kind_origin_and_stack_and_sites_sort_by_wait() {
        let mut objects: Vec<Object> =
            (0..1000).map(|i| object(0x1000 + 8 * i, "mutex", Origin::Init, 1, 3, 0)).collect();
        objects.push(object(0x9000, "mutex", Origin::Init, 2, 10, 5)); // site 2: the same stack as 1
        objects.push(object(0xa000, "mutex", Origin::Contended, 3, 40, 900));
        objects.push(object(0xb000, "rwlock", Origin::Init, 3, 7, 0)); // same stack, another kind
        objects.push(object(0xc000, "mutex", Origin::None, 0, 2, 0));
        let sites = group(objects, stacks);
        assert_eq!(sites.len(), 4, "{sites:#?}");
        assert_eq!((sites[0].origin, sites[0].counts.wait.total_ns), (Origin::Contended, 900));
        let array = &sites[1];
        assert_eq!((array.objects, array.counts.acquisitions, array.stack.clone()), (1001, 3010, vec![0x100, 0x200]));
        assert_eq!(array.top.len(), TOP_OBJECTS);
        assert_eq!(array.top[0].address, 0x9000, "the most waited object first");
        assert!(sites.iter().any(|s| s.kind == "rwlock" && s.objects == 1 && s.stack == [0x300]));
        assert!(sites.iter().any(|s| s.origin == Origin::None && s.stack.is_empty() && s.objects == 1));
    }

    #[test]
    fn the_table_names_each_site_and_fits_in_100_columns() {
        let sites = group(
            vec![object(0x10, "mutex", Origin::Init, 3, 100, 4_000), object(0x20, "cond", Origin::None, 0, 5, 0)],
            stacks,
        );
        let frame = Frame {
            address: 0x300,
            module: Some("/bin/p".into()),
            offset: Some(0x30),
            function: Some("make_hot".into()),
            file: Some("/src/p_profile.c".into()),
            line: Some(42),
        };
        let heading = Heading { program: "p", pid: 7, lock: "mcs:futex" };
        let text = render(&heading, &sites, 3, 1, |_| true, |site| site.stack.first().map(|_| frame.clone()));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "spinlab-preload: lock statistics of p (pid 7), mutexes mcs:futex:");
        assert!(lines[1].contains("2 sites, 2 objects, 105 acquisitions; the 1 sites"), "{text}");
        assert!(lines[3].contains("1.00%") && lines[3].contains("4.0 us"), "{text}");
        assert_eq!(lines[4].trim(), "mutex init: make_hot (p_profile.c:42)");
        assert!(!text.contains("cond none"), "only the top site: {text}");
        assert!(text.contains("3 acquisitions of objects beyond"));
        assert!(lines.iter().all(|line| line.len() <= 100), "{text}");
    }

    #[test]
    fn durations_take_the_largest_unit_with_a_digit_before_the_point() {
        assert_eq!(duration(999), "999 ns");
        assert_eq!(duration(1_000), "1.0 us");
        assert_eq!(duration(12_345), "12.3 us");
        assert_eq!(duration(5_096_600), "5.1 ms");
        assert_eq!(duration(12_340_000_000), "12.34 s");
    }
}
