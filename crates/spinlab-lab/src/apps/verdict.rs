//! What the suite's rows say: the best lock per program, the default's verdict (at least
//! [`DEFAULT_VS_GLIBC`] times glibc's metric on every program and at least [`DEFAULT_VS_BEST`]
//! times the best lock's), and the locks over a sleeping policy that fall below
//! [`COLLAPSE_BELOW`] times glibc's. A ratio is oriented so that above 1 is better (see
//! [`ratio_to_glibc`](super::AppsRow::ratio_to_glibc)). Shared by `spinlab apps` and the
//! report's section.

use super::GLIBC;
use crate::results::rows::AppsRow;
use crate::select::DEFAULT_ALIAS;

/// The default must reach this ratio to glibc on every program.
pub const DEFAULT_VS_GLIBC: f64 = 1.0;
/// ... and this fraction of the best lock's ratio.
pub const DEFAULT_VS_BEST: f64 = 0.95;
/// A lock over a sleeping policy below this ratio to glibc has collapsed on that program.
pub const COLLAPSE_BELOW: f64 = 0.5;

/// The wait policies whose waiters sleep (the registry's lock name ends in one of them).
const SLEEPING: &[&str] = &["futex", "spin-park", "spin-yield-park", "pause-yield-park"];

/// One program's measured treatments.
#[derive(Clone, Debug)]
pub struct Program<'a> {
    /// Its entry's name.
    pub name: &'a str,
    /// Its rows, glibc's first.
    pub rows: Vec<&'a AppsRow>,
}

impl<'a> Program<'a> {
    /// The lock with the highest ratio to glibc (glibc itself, at 1, when none beats it),
    /// and that ratio.
    pub fn best(&self) -> Option<(&'a str, f64)> {
        let mut best: Option<(&str, f64)> = None;
        for row in &self.rows {
            let ratio = if row.lock.as_deref() == Some(GLIBC) { Some(1.0) } else { row.ratio_to_glibc.get() };
            let (Some(ratio), Some(lock), None) = (ratio, row.lock.as_deref(), &row.failed) else { continue };
            if best.is_none_or(|(_, b)| ratio > b) {
                best = Some((lock, ratio));
            }
        }
        best
    }

    /// The default's row, if it ran.
    pub fn default_row(&self) -> Option<&'a AppsRow> {
        self.rows.iter().copied().find(|r| r.lock.as_deref() == Some(DEFAULT_ALIAS))
    }
}

/// The programs of `rows` that were measured, in order.
pub fn programs(rows: &[AppsRow]) -> Vec<Program<'_>> {
    let mut out: Vec<Program<'_>> = Vec::new();
    for row in rows.iter().filter(|r| r.skipped.is_none()) {
        let Some(name) = row.program.as_deref() else { continue };
        match out.iter_mut().find(|p| p.name == name) {
            Some(p) => p.rows.push(row),
            None => out.push(Program { name, rows: vec![row] }),
        }
    }
    out
}

/// `1.02x [0.98, 1.06]`.
pub fn ratio_words(row: &AppsRow) -> String {
    match (row.ratio_to_glibc.get(), row.ratio_ci95_to_glibc.get()) {
        (Some(r), Some(ci)) => format!("{r:.3}x ±{ci:.3}"),
        (Some(r), None) => format!("{r:.3}x"),
        _ => "no ratio".to_string(),
    }
}

/// The best lock of each program, in words.
pub fn best_lines(rows: &[AppsRow]) -> Vec<String> {
    programs(rows)
        .iter()
        .filter_map(|p| {
            let (lock, ratio) = p.best()?;
            Some(format!("best on {}: {lock} ({ratio:.2}x glibc)", p.name))
        })
        .collect()
}

/// The default's verdict in one line, with the programs where it misses.
pub fn default_line(rows: &[AppsRow]) -> String {
    let programs = programs(rows);
    let mut misses: Vec<String> = Vec::new();
    let mut judged = 0;
    for p in &programs {
        let Some(row) = p.default_row() else { continue };
        judged += 1;
        if let Some(why) = &row.failed {
            misses.push(format!("{} (failed: {why})", p.name));
            continue;
        }
        let Some(ratio) = row.ratio_to_glibc.get() else {
            misses.push(format!("{} (no ratio)", p.name));
            continue;
        };
        let mut said = Vec::new();
        if ratio < DEFAULT_VS_GLIBC {
            said.push(format!("{} glibc", ratio_words(row)));
        }
        // Below glibc when glibc is the best says it all.
        if let Some((lock, best)) = p.best().filter(|(l, b)| *l != GLIBC && ratio < DEFAULT_VS_BEST * b) {
            said.push(format!("{:.2} of the best, {lock} at {best:.2}x", ratio / best));
        }
        if !said.is_empty() {
            misses.push(format!("{} ({})", p.name, said.join("; ")));
        }
    }
    let name = rows.iter().find_map(|r| r.lock_name.as_deref()).unwrap_or(DEFAULT_ALIAS);
    if judged == 0 {
        return format!("default ({name}): not run");
    }
    let target = format!(">= {DEFAULT_VS_GLIBC:.2}x glibc and >= {DEFAULT_VS_BEST:.2}x the best lock");
    if misses.is_empty() {
        format!("default ({name}): meets {target} on all {judged} programs")
    } else {
        format!("default ({name}): misses {target} on {} of {judged} programs: {}", misses.len(), misses.join(", "))
    }
}

/// The locks over a sleeping policy below [`COLLAPSE_BELOW`] times glibc, or that failed.
pub fn collapse_line(rows: &[AppsRow]) -> Option<String> {
    let low: Vec<String> = programs(rows)
        .iter()
        .flat_map(|p| p.rows.iter().map(move |r| (p.name, *r)))
        .filter(|(_, r)| {
            let name = r.lock_name.as_deref().or(r.lock.as_deref()).unwrap_or_default();
            SLEEPING.iter().any(|s| name.ends_with(&format!(":{s}")))
        })
        .filter_map(|(program, r)| {
            let lock = r.lock.as_deref()?;
            match (&r.failed, r.ratio_to_glibc.get()) {
                (Some(_), _) => Some(format!("{lock} on {program} (failed)")),
                (None, Some(ratio)) if ratio < COLLAPSE_BELOW => Some(format!("{lock} on {program} ({ratio:.2}x)")),
                _ => None,
            }
        })
        .collect();
    (!low.is_empty()).then(|| format!("below {COLLAPSE_BELOW}x glibc over a sleeping policy: {}", low.join(", ")))
}

/// Every verdict line: the best per program, the default's, the collapses.
pub fn lines(rows: &[AppsRow]) -> Vec<String> {
    let mut out = best_lines(rows);
    out.push(default_line(rows));
    out.extend(collapse_line(rows));
    out.extend(rows.iter().filter(|r| r.failed.is_some()).map(|r| {
        format!(
            "failed: {} under {}: {}",
            r.program.as_deref().unwrap_or("?"),
            r.lock.as_deref().unwrap_or("?"),
            r.failed.as_deref().unwrap_or("")
        )
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::rows::Nullable;

    fn row(program: &str, lock: &str, ratio: Option<f64>) -> AppsRow {
        AppsRow {
            program: Some(program.into()),
            lock: Some(lock.into()),
            lock_name: (lock == DEFAULT_ALIAS).then(|| "adaptive:pause-yield-park".into()),
            ratio_to_glibc: ratio.map_or(Nullable::Absent, Nullable::Value),
            ..AppsRow::default()
        }
    }

    #[test]
    fn the_default_meets_its_target_only_at_glibc_or_above_and_near_the_best() {
        let rows = vec![
            row("a", GLIBC, None),
            row("a", DEFAULT_ALIAS, Some(1.10)),
            row("a", "mcs:spin-park", Some(1.12)),
            row("b", GLIBC, None),
            row("b", DEFAULT_ALIAS, Some(0.97)),
            row("b", "mcs:spin-park", Some(0.40)),
        ];
        assert_eq!(best_lines(&rows), ["best on a: mcs:spin-park (1.12x glibc)", "best on b: glibc (1.00x glibc)"]);
        let line = default_line(&rows);
        assert!(line.starts_with("default (adaptive:pause-yield-park): misses"), "{line}");
        assert!(line.contains("on 1 of 2 programs: b (0.970x glibc)"), "{line}");
        assert_eq!(
            collapse_line(&rows).as_deref(),
            Some("below 0.5x glibc over a sleeping policy: mcs:spin-park on b (0.40x)")
        );
        let rows = &rows[..3];
        assert!(default_line(rows).contains("meets"), "{}", default_line(rows));
    }

    #[test]
    fn a_default_that_failed_misses_and_one_not_run_is_said() {
        let mut failed = row("a", DEFAULT_ALIAS, None);
        failed.failed = Some("run 1: killed by signal 11".into());
        let line = default_line(&[row("a", GLIBC, None), failed]);
        assert!(line.contains("a (failed: run 1: killed by signal 11)"), "{line}");
        assert_eq!(default_line(&[row("a", GLIBC, None)]), "default (default): not run");
    }
}
