//! The rows of one configuration: each lock's figures, its counts per thread and per group,
//! its waits and holds, and the ratios between the locks.

use super::measure::{Contended, Totals, Uncontended};
use super::{
    At, Contention, Plan, COLLAPSED, CPU_BUSY_PCT, DRAIN_MAX_MS, HANDOVERS_IN_GROUP, HANDOVERS_PCT, JAIN,
    JAIN_CPU_TIME, JAIN_NO_LOCK, PER_THREAD, THROUGHPUT_OPS_S, UNCONTENDED_FLOOR_NS, UNCONTENDED_NS,
};
use crate::experiments::lab::Lab;
use crate::experiments::ratios::add_ratios_to_each_reference;
use crate::machine::topology::{format_cpu_list, Group};
use crate::measure::stats::{mean, paired_ratio_ci95};
use crate::measure::{Clock, Summary};
use crate::results::keys::{BELOW_FLOOR, LOCK, ORIGIN};
use crate::results::rows::{LevelShare, Nullable};
use crate::results::Row;
use crate::select::LockChoice;
use serde_json::json;
use spinlab::sys::topology::{self, Level};

impl Contention {
    /// One configuration's rows: one per lock (skipped where it cannot run here), with the
    /// ratios between them.
    pub(super) fn rows(
        &self,
        plan: &Plan,
        lab: &Lab,
        at: &At,
        cpus: &[usize],
        measured: &Contended,
        uncontended: &Uncontended,
    ) -> Vec<Row> {
        let mut figures = measured.locks.iter().zip(uncontended.locks.iter().zip(&uncontended.below_floor));
        let mut rows = Vec::new();
        let mut rounds: Vec<&[f64]> = Vec::new();
        for lock in &plan.locks {
            if let Some(why) = lock.unavailable() {
                rows.push(at.row(lock).skipped(why));
                rounds.push(&[]);
                continue;
            }
            let (m, (u, below)) = figures.next().expect("one measurement per available lock");
            rounds.push(&m.series.samples);
            let t = &m.totals;
            let mut row = at.row(lock).with("cpus", format_cpu_list(cpus));
            if let Some(sum) = Summary::of(&m.series.samples) {
                row = row.summary("throughput", "ops_s", &sum);
            }
            row.set("stop", m.series.verdict);
            add_drain(&mut row, lock, at, t);
            add_counts(&mut row, &plan.groups, cpus, t);
            add_no_lock(&mut row, &measured.no_lock);
            add_waits(&mut row, &lab.clock, t);
            // The algorithm's guarantee, beside the waits it shows here.
            row.set("bound", lock.entry.facts.bound);
            row.set("acquisitions", t.wait.count());
            if let Some(u) = u {
                row.set(UNCONTENDED_NS, u.mean);
                row.set("uncontended_ci95_ns", u.ci95);
                row.set("uncontended_reps", u.reps);
                add_uncontended_floor(&mut row, u, uncontended.floor.as_ref());
            }
            if let Some(why) = below {
                row.set(BELOW_FLOOR, why);
            }
            if self.cs_lines > 0 {
                add_lost_updates(&mut row, lock, at, t);
                add_handovers(&mut row, t);
                add_in_group(&mut row, cpus, t);
            }
            rows.push(row);
        }
        add_ratios(&mut rows, &rounds, self.baseline.name());
        rows
    }
}

/// The floor's uncontended pair beside the lock's, and their ratio.
pub(super) fn add_uncontended_floor(row: &mut Row, u: &Summary, floor: Option<&Summary>) {
    let Some(f) = floor.filter(|f| f.mean > 0.0) else { return };
    row.set(UNCONTENDED_FLOOR_NS, f.mean);
    row.set("uncontended_floor_ci95_ns", f.ci95);
    row.set("uncontended_vs_floor", u.mean / f.mean);
}

/// The longest drain after the stop, and whether the lock collapsed (also said on stderr).
pub(super) fn add_drain(row: &mut Row, lock: &LockChoice, at: &At, t: &Totals) {
    row.set(DRAIN_MAX_MS, t.max_drain_s * 1e3);
    if t.collapsed {
        row.set(COLLAPSED, true);
        eprintln!(
            "note: {} collapsed at {} threads: its threads took {:.0} ms to finish one more acquisition each after the stop; not repeated further",
            lock.name(),
            at.threads,
            t.max_drain_s * 1e3
        );
    }
}

/// Acquisitions per thread and per group, and how evenly they were shared.
pub(super) fn add_counts(row: &mut Row, groups: &[Group], cpus: &[usize], t: &Totals) {
    row.set(PER_THREAD, &t.per_thread);
    row.set("per_group", per_group(groups, cpus, &t.per_thread));
    if let Some(ratio) = group_max_min_ratio(groups, cpus, &t.per_thread) {
        row.set("group_max_min_ratio", ratio);
    }
    row.set(JAIN, mean(&t.jain));
    row.set("jain_min", t.jain.iter().copied().fold(f64::INFINITY, f64::min));
    row.set("rsd_pct", mean(&t.rsd_pct));
    row.set(CPU_BUSY_PCT, mean(&t.cpu_busy_pct));
    row.set(JAIN_CPU_TIME, mean(&t.jain_cpu_time));
}

/// The fairness of the same threads with no lock, measured in the same rounds.
pub(super) fn add_no_lock(row: &mut Row, t: &Totals) {
    if let Some(s) = Summary::of(&t.jain) {
        row.set(JAIN_NO_LOCK, s.mean);
        row.set("jain_no_lock_ci95", s.ci95);
        row.set("jain_no_lock_min", t.jain.iter().copied().fold(f64::INFINITY, f64::min));
    }
}

/// Time inside `lock()` and time holding the lock, in nanoseconds.
pub(super) fn add_waits(row: &mut Row, clock: &Clock, t: &Totals) {
    let ns = |ticks: f64| clock.ns(ticks);
    row.set("mean_wait_ns", t.wait.mean().map(ns));
    row.set("p99_wait_ns", t.wait.percentile(99.0).map(|v| ns(v as f64)));
    row.set("max_wait_ns", t.wait.max().map(|v| ns(v as f64)));
    row.set("mean_hold_ns", t.hold.mean().map(ns));
    row.set("max_hold_ns", t.hold.max().map(|v| ns(v as f64)));
    // The longest wait and hold of a repetition, as a mean over repetitions with its interval,
    // and their ratio per repetition: figures a rerun can be compared with.
    let in_ns = |ticks: &[f64]| Summary::of(&ticks.iter().map(|&t| ns(t)).collect::<Vec<_>>());
    for (key, ticks) in [("rep_max_wait", &t.rep_max_wait), ("rep_max_hold", &t.rep_max_hold)] {
        if let Some(s) = in_ns(ticks) {
            row.set(&format!("{key}_ns"), s.mean);
            row.set(&format!("{key}_ci95_ns"), s.ci95);
        }
    }
    let ratios: Vec<f64> =
        t.rep_max_wait.iter().zip(&t.rep_max_hold).filter(|(_, &hold)| hold > 0.0).map(|(w, h)| w / h).collect();
    if let Some(s) = Summary::of(&ratios) {
        row.set("rep_max_wait_over_hold_x", s.mean);
        row.set("rep_max_wait_over_hold_ci95_x", s.ci95);
    }
}

/// How often the lock changed threads: the share of acquisitions that took it from another
/// thread, each one at least a transfer of the lock's line and the shared lines to a new
/// cache. A round-robin lock hands over at nearly every acquisition; a barging lock whose
/// releaser takes it back seldom does.
pub(super) fn add_handovers(row: &mut Row, t: &Totals) {
    if let Some(s) = Summary::of(&t.handovers_pct) {
        row.set(HANDOVERS_PCT, s.mean);
        row.set("handovers_ci95_pct", s.ci95);
    }
}

/// The share of hand-overs that stayed inside a group, at each level of the locks' topology
/// (`spinlab::sys::topology`, with the groups `SPINLAB_TOPOLOGY` declares) where the threads'
/// CPUs fall in two groups or more: what a topology-aware lock buys is hand-overs that stay
/// in one group. A lock blind to groups, with threads spread evenly over two, keeps about
/// half of them in one.
pub(super) fn add_in_group(row: &mut Row, cpus: &[usize], t: &Totals) {
    let model = topology::machine();
    let shares: Vec<LevelShare> = Level::ALL
        .into_iter()
        .zip(&t.in_group_pct)
        .filter_map(|(level, pcts)| {
            let mut spanned: Vec<usize> = cpus.iter().map(|&cpu| model.group_of(level, cpu)).collect();
            spanned.sort_unstable();
            spanned.dedup();
            let s = Summary::of(pcts).filter(|_| spanned.len() > 1)?;
            Some(LevelShare {
                level: level.name().to_string(),
                groups: spanned.len() as u64,
                declared: model.groups(level).declared,
                pct: s.mean,
                ci95_pct: Nullable::from(s.ci95),
            })
        })
        .collect();
    if !shares.is_empty() {
        row.set(HANDOVERS_IN_GROUP, shares);
    }
}

/// Updates lost to a mutual-exclusion failure (a warning on stderr when there are any).
pub(super) fn add_lost_updates(row: &mut Row, lock: &LockChoice, at: &At, t: &Totals) {
    row.set("lost_updates", t.lost_updates);
    if t.lost_updates > 0 {
        eprintln!(
            "warning: {} lost {} updates at {} threads: two threads were inside its critical section at once",
            lock.name(),
            t.lost_updates,
            at.threads
        );
    }
}

pub(super) fn per_group(groups: &[Group], cpus: &[usize], per_thread: &[u64]) -> serde_json::Value {
    groups
        .iter()
        .map(|g| {
            let members: Vec<usize> = (0..cpus.len()).filter(|&i| g.cpus.contains(&cpus[i])).collect();
            json!({
                "group": g.label,
                "cpus": format_cpu_list(&g.cpus),
                "threads": members.len(),
                "acquisitions": members.iter().map(|&i| per_thread[i]).sum::<u64>(),
            })
        })
        .collect()
}

/// The busiest group's acquisitions over the idlest's, among groups that have threads (seed
/// 003's "favours Quad 0 30 times over Quad 1"); `None` with fewer than two such groups.
pub(super) fn group_max_min_ratio(groups: &[Group], cpus: &[usize], per_thread: &[u64]) -> Option<f64> {
    let occupied: Vec<u64> = groups
        .iter()
        .filter(|g| cpus.iter().any(|c| g.cpus.contains(c)))
        .map(|g| cpus.iter().zip(per_thread).filter(|(c, _)| g.cpus.contains(c)).map(|(_, n)| n).sum())
        .collect();
    if occupied.len() < 2 {
        return None;
    }
    let (max, min) = (*occupied.iter().max()?, *occupied.iter().min()?);
    Some(if min == 0 { f64::INFINITY } else { max as f64 / min as f64 })
}

/// Ratios within one configuration: to the best reference lock and to the baseline lock.
/// `rounds` holds each row's throughput per measured round (empty for a skipped lock), in the
/// rows' order: a ratio's interval comes from the ratios within each round.
pub(super) fn add_ratios(rows: &mut [Row], rounds: &[&[f64]], baseline: &str) {
    let best_ref = rows
        .iter()
        .filter(|r| r.text(ORIGIN) == Some("reference"))
        .filter_map(|r| r.number(THROUGHPUT_OPS_S))
        .fold(f64::NAN, f64::max);
    let rounds_of = |found: Option<usize>| found.map_or(&[][..], |i| rounds[i]);
    let best_ref_rounds = rounds_of(
        rows.iter().position(|r| r.text(ORIGIN) == Some("reference") && r.number(THROUGHPUT_OPS_S) == Some(best_ref)),
    );
    let base_rounds = rounds_of(rows.iter().position(|r| r.text(LOCK) == Some(baseline)));
    let best_ref_uncontended = rows
        .iter()
        .filter(|r| r.text(ORIGIN) == Some("reference"))
        .filter_map(|r| r.number(UNCONTENDED_NS))
        .fold(f64::NAN, f64::min);
    let base = rows.iter().find(|r| r.text(LOCK) == Some(baseline)).and_then(|r| r.number(THROUGHPUT_OPS_S));
    add_ratios_to_each_reference(rows, rounds, THROUGHPUT_OPS_S, "throughput");
    for (row, own) in rows.iter_mut().zip(rounds) {
        let Some(t) = row.number(THROUGHPUT_OPS_S) else { continue };
        if best_ref.is_finite() && best_ref > 0.0 {
            row.set("throughput_vs_best_reference", t / best_ref);
            row.set("throughput_vs_best_reference_ci95", paired_ratio_ci95(own, best_ref_rounds));
        }
        if let Some(b) = base.filter(|b| *b > 0.0) {
            row.set("throughput_vs_baseline", t / b);
            row.set("throughput_vs_baseline_ci95", paired_ratio_ci95(own, base_rounds));
        }
        if let Some(u) = row.number(UNCONTENDED_NS) {
            if best_ref_uncontended.is_finite() && best_ref_uncontended > 0.0 {
                row.set("uncontended_vs_best_reference", u / best_ref_uncontended);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::contention::measure::UNCONTENDED_SLACK;
    use crate::experiments::floor;

    #[test]
    fn a_lock_below_the_uncontended_floor_is_flagged_and_one_above_is_not() {
        let floor = Summary::exact(2.5, 0.1);
        let below = |u: f64, ci: f64, floor: &Summary| {
            floor::below_floor(&Summary::exact(u, ci), floor, "cost", UNCONTENDED_SLACK)
        };
        assert!(below(1.0, 0.2, &floor).is_some_and(|why| why.starts_with("1.0 ns is below")));
        assert_eq!(below(5.0, 0.2, &floor), None);
        // Two percent below, with intervals far narrower: code placement, not a broken figure.
        assert_eq!(below(2.45, 0.001, &Summary::exact(2.5, 0.001)), None);
        let mut above = Row::new();
        add_uncontended_floor(&mut above, &Summary::exact(5.0, 0.2), Some(&floor));
        assert_eq!(above.number("uncontended_vs_floor"), Some(2.0));
        assert_eq!(above.number("uncontended_floor_ns"), Some(2.5));
        let mut no_floor = Row::new();
        add_uncontended_floor(&mut no_floor, &Summary::exact(1.0, 0.2), None);
        assert_eq!(no_floor.number("uncontended_vs_floor"), None);
    }

    /// Rounds in which the machine ran at half speed and then at full move both locks alike:
    /// the interval of their ratio comes from the ratio within each round, not from the drift.
    #[test]
    fn ratio_intervals_come_from_the_rounds_both_locks_ran_in() {
        let row = |lock: &str, origin: &str, rounds: &[f64]| {
            let s = Summary::of(rounds).unwrap();
            Row::new().with(LOCK, lock).with(ORIGIN, origin).summary("throughput", "ops_s", &s)
        };
        let std_rounds = [10.0, 20.0, 20.0, 10.0];
        let pl_rounds = std_rounds.map(|x| x * 0.9);
        let steady = std_rounds.map(|x| x * 0.99);
        let unsteady = [10.0, 20.0, 24.0, 8.0];
        let collapsed = [5.0, 10.0];
        let mut rows = vec![
            row("default", "spinlab", &steady),
            row("std", "reference", &std_rounds),
            row("parking_lot", "reference", &pl_rounds),
            row("ticket:spin", "spinlab", &collapsed),
            row("mcs:spin", "spinlab", &unsteady),
            Row::new().with(LOCK, "tpause").skipped("no WAITPKG"),
        ];
        let rounds: [&[f64]; 6] = [&steady, &std_rounds, &pl_rounds, &collapsed, &unsteady, &[]];
        add_ratios(&mut rows, &rounds, "ticket:spin");
        let vs_best = |i: usize| rows[i].number("throughput_vs_best_reference").unwrap();
        let ci = |i: usize, key: &str| rows[i].number(key);
        // std is the best reference (mean 15 against 13.5); the default is 0.99 of it in every
        // round, so its ratio has no spread although either throughput alone swings twofold.
        assert!((vs_best(0) - 0.99).abs() < 1e-9);
        assert!(ci(0, "throughput_vs_best_reference_ci95").unwrap() < 1e-9);
        assert_eq!(ci(1, "throughput_vs_best_reference_ci95"), Some(0.0));
        // Ratios 1.0, 1.0, 1.2, 0.8 round by round: an interval the drift alone would not give.
        let unsteady_ci = ci(4, "throughput_vs_best_reference_ci95").unwrap();
        let expected = Summary::of(&[1.0, 1.0, 1.2, 0.8]).unwrap().ci95.unwrap();
        assert!((unsteady_ci - expected).abs() < 1e-9, "{unsteady_ci} against {expected}");
        // A lock stopped after two rounds pairs with the other's first two: 0.5 of std in both,
        // and the default 1.98 of it in both (its later rounds have no partner). Paired from
        // the last rounds instead, they would spread from 0.25 to 1 and from 0.99 to 3.96.
        assert!(ci(3, "throughput_vs_best_reference_ci95").unwrap() < 1e-9);
        assert!(ci(0, "throughput_vs_baseline_ci95").unwrap() < 1e-9);
        assert_eq!(rows[5].number("throughput_vs_best_reference"), None);
        // Each reference on its own, from its own rounds: parking_lot is 0.9 of std in every
        // round, so the default is 1.1 of it, with no spread; the skipped lock gets none.
        assert!((ci(0, "throughput_vs_parking_lot").unwrap() - 1.1).abs() < 1e-9);
        assert!(ci(0, "throughput_vs_parking_lot_ci95").unwrap() < 1e-9);
        assert!((ci(0, "throughput_vs_std").unwrap() - 0.99).abs() < 1e-9);
        assert!((ci(2, "throughput_vs_std").unwrap() - 0.9).abs() < 1e-9);
        assert_eq!(ci(1, "throughput_vs_std"), Some(1.0));
        assert_eq!(rows[5].number("throughput_vs_std"), None);
    }
}
