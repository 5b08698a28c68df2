//! Measuring a configuration again when the machine moves under it.
//!
//! A virtual machine's CPUs are threads of the host, which may move them between its cores
//! and sockets while a run goes on. A cache line's transfer between two CPUs can then change
//! several-fold within seconds (docs/contention.md, "The host"), and which lock is fastest, or
//! how much a waiter on the other CPU costs, changes with it. So an experiment times one
//! ping-pong between two of a configuration's CPUs just before and just after measuring it
//! (`around`); when the two lie more than [`MOVED_FACTOR`](crate::results::MOVED_FACTOR)
//! apart, the figures mix two machines, and the configuration is measured again
//! (`until_still`), up to [`MAX_ATTEMPTS`] times. Its rows keep the last attempt and say what
//! each discarded one saw (`mark`).

use super::floor::{self, Transfer};
use crate::error::LabError;
use crate::measure::Clock;
use crate::results::rows::Transfers;
use crate::results::{transfers_moved, Row, ATTEMPTS, MOVED_UNDER_NS, TRANSFER_AFTER_NS, TRANSFER_BEFORE_NS};

/// The CPU pair of a row's line-transfer figures ([`TRANSFER_BEFORE_NS`],
/// [`TRANSFER_AFTER_NS`]: ping-pong between them just before and just after the row's
/// configuration ran).
pub const LINE_TRANSFER_CPUS: &str = "line_transfer_cpus";

/// Attempts at a configuration, in all, while the machine moves under them. Each attempt runs
/// the whole configuration through the stopping rule, so a third costs as much as the first; a
/// machine that moves under three in a row is reported as moved.
pub const MAX_ATTEMPTS: usize = 3;

/// The line transfers just before and just after an attempt (`None` when every thread it ran
/// shares one CPU).
pub(crate) type Around = Option<(Transfer, Transfer)>;

/// What [`until_still`] kept.
pub(crate) struct Kept<T> {
    /// The last attempt's result.
    pub(crate) result: T,
    /// The transfers around it.
    pub(crate) transfers: Around,
    /// The transfers (before, after, ns) around each attempt discarded because the machine
    /// moved under it.
    pub(crate) moved_under: Vec<[f64; 2]>,
}

/// Runs `attempt` (numbered from 1) until the line transfers around it hold still, at most
/// [`MAX_ATTEMPTS`] times.
pub(crate) fn until_still<T>(
    mut attempt: impl FnMut(usize) -> Result<(T, Around), LabError>,
) -> Result<Kept<T>, LabError> {
    let mut moved_under = Vec::new();
    loop {
        let (result, transfers) = attempt(moved_under.len() + 1)?;
        match transfers {
            Some((b, a)) if transfers_moved(b.ns, a.ns) && moved_under.len() + 1 < MAX_ATTEMPTS => {
                moved_under.push([b.ns, a.ns]);
            }
            _ => return Ok(Kept { result, transfers, moved_under }),
        }
    }
}

/// What the discarded attempts at a row's configuration saw, for the terminal: empty when the
/// first attempt held still.
pub fn discarded(row: &impl Transfers) -> String {
    let pairs: Vec<String> =
        row.moved_under_ns().iter().map(|[before, after]| format!("{before:.0} then {after:.0} ns")).collect();
    if pairs.is_empty() {
        return String::new();
    }
    let this_one = if row.machine_moved().is_some() { ", and under this one too" } else { "" };
    format!(" (attempt {}; the machine moved under the earlier: {}{this_one})", pairs.len() + 1, pairs.join(", "))
}

/// Runs `measure` between two line transfers over the first two distinct CPUs of `cpus`: the
/// attempt [`until_still`] judges.
pub(crate) fn around<T>(
    cpus: &[usize],
    clock: &Clock,
    measure: impl FnOnce() -> Result<T, LabError>,
) -> Result<(T, Around), LabError> {
    let before = floor::first_pair_transfer(cpus, clock)?;
    let result = measure()?;
    let after = floor::first_pair_transfer(cpus, clock)?;
    Ok((result, before.zip(after)))
}

/// Puts on a row of a configuration what [`until_still`] kept: the attempts, the transfers
/// around each discarded one, and those around the one kept.
pub(crate) fn mark<T>(row: &mut Row, kept: &Kept<T>) {
    row.set(ATTEMPTS, kept.moved_under.len() + 1);
    row.set(MOVED_UNDER_NS, &kept.moved_under);
    if let Some((before, after)) = kept.transfers {
        row.set(LINE_TRANSFER_CPUS, format!("{},{}", before.a, before.b));
        row.set(TRANSFER_BEFORE_NS, before.ns);
        row.set(TRANSFER_AFTER_NS, after.ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::rows::ContentionRow;

    /// Plays `until_still` against line transfers (before, after) given in advance, one pair
    /// per attempt; `None` for a machine with one CPU. Returns the attempt kept and the ones
    /// discarded.
    fn attempts(script: &[Option<(f64, f64)>]) -> (usize, Option<(f64, f64)>, Vec<[f64; 2]>) {
        let transfer = |ns| Transfer { a: 0, b: 1, ns };
        let kept = until_still(|n| {
            let pair = script[n - 1].map(|(b, a)| (transfer(b), transfer(a)));
            Ok((n, pair))
        })
        .unwrap();
        (kept.result, kept.transfers.map(|(b, a)| (b.ns, a.ns)), kept.moved_under)
    }

    #[test]
    fn a_configuration_the_machine_moved_under_is_measured_again() {
        // Held still: one attempt.
        assert_eq!(attempts(&[Some((48.0, 60.0))]), (1, Some((48.0, 60.0)), vec![]));
        // Moved, then held still: the second attempt is kept, the first reported.
        assert_eq!(attempts(&[Some((48.0, 230.0)), Some((45.0, 50.0))]), (2, Some((45.0, 50.0)), vec![[48.0, 230.0]]));
        // Moved back the other way: that counts as moving too.
        let (kept, _, moved) = attempts(&[Some((228.0, 45.0)), Some((230.0, 31.0)), Some((31.0, 33.0))]);
        assert_eq!((kept, moved), (3, vec![[228.0, 45.0], [230.0, 31.0]]));
        // Moving under every attempt: the last is kept, as moved, after MAX_ATTEMPTS in all.
        let always = vec![Some((40.0, 200.0)); 10];
        let (kept, last, moved) = attempts(&always);
        assert_eq!((kept, last, moved.len()), (MAX_ATTEMPTS, Some((40.0, 200.0)), MAX_ATTEMPTS - 1));
        // One CPU, no transfer: nothing to judge, one attempt.
        assert_eq!(attempts(&[None]), (1, None, vec![]));
    }

    #[test]
    fn the_terminal_names_the_attempts_the_machine_moved_under() {
        let row = ContentionRow { moved_under_ns: Some(vec![[48.0, 230.0], [228.0, 45.0]]), ..Default::default() };
        assert_eq!(
            discarded(&row),
            " (attempt 3; the machine moved under the earlier: 48 then 230 ns, 228 then 45 ns)"
        );
        let every_time =
            ContentionRow { line_transfer_before_ns: Some(230.0), line_transfer_after_ns: Some(47.0), ..row };
        assert!(
            discarded(&every_time).ends_with("228 then 45 ns, and under this one too)"),
            "{}",
            discarded(&every_time)
        );
        assert_eq!(discarded(&ContentionRow { moved_under_ns: Some(Vec::new()), ..Default::default() }), "");
        assert_eq!(discarded(&ContentionRow::default()), "");
    }
}
