//! The herd experiment's part of the recommendation: the quickest lock for a herd.

use super::{FLOOR_LOCK, SYS_S, WALL_OVER_FLOOR, WALL_S};
use crate::reading::advice::{lowest_tie, total_order, Advice, Figure, Unit};
use crate::reading::scorecard::Estimate;
use crate::reading::Context;
use crate::results::format::number;
use crate::results::keys::{LOCK, THREADS};
use crate::results::Row;
use crate::select::{self};

pub(super) fn quickest(ctx: &Context<'_>) -> Advice {
    let situation = "many threads released at once (a herd), oversubscribed";
    let brief = "herd, > CPUs";
    let rows: Vec<&Row> =
        ctx.rows_of("herd").into_iter().filter(|r| is_lock(r) && r.number(WALL_S).is_some()).collect();
    let Some(n) = rows.iter().filter_map(|r| r.number(THREADS)).reduce(f64::max) else {
        return Advice::missing(situation, brief, ctx.missing_reason("herd"));
    };
    let mut at: Vec<&Row> = rows.into_iter().filter(|r| r.number(THREADS) == Some(n)).collect();
    let order = total_order(&TIE_ORDER, at.iter().filter_map(|r| r.text(LOCK)));
    at.sort_by(|a, b| a.number(WALL_S).unwrap_or(f64::MAX).total_cmp(&b.number(WALL_S).unwrap_or(f64::MAX)));
    let tie = lowest_tie(
        &at,
        |r| {
            let wall = Estimate::of(r, WALL_S);
            (r.text(LOCK).unwrap_or("?"), wall.map_or(f64::MAX, |w| w.value), wall.map_or(0.0, |w| w.ci95))
        },
        &order,
    )
    .expect("rows at the largest thread count");
    let best = *tie.chosen;
    let worst = at[at.len() - 1];
    let wall = best.number(WALL_S).unwrap_or(0.0);
    let mut why = format!("{} s wall at {n} threads", number(wall));
    if let Some(over) = best.number(WALL_OVER_FLOOR) {
        why.push_str(&format!(", {over:.2}x the herd's with no lock"));
    }
    if let Some(sys) = best.number(SYS_S) {
        why.push_str(&format!(" ({} s system time)", number(sys)));
    }
    if !std::ptr::eq(best, worst) {
        why.push_str(&format!(
            "; {} took {} s ({:.1}x)",
            worst.text(LOCK).unwrap_or("?"),
            number(worst.number(WALL_S).unwrap_or(0.0)),
            worst.number(WALL_S).unwrap_or(0.0) / wall.max(1e-12)
        ));
    }
    why.push_str(&tie.words(|r| r.text(LOCK).unwrap_or("?"), &order));
    let wall_of = |r: &&Row| {
        let wall = Estimate::of(r, WALL_S).unwrap_or(Estimate { value: 0.0, ci95: 0.0 });
        Figure::new(wall, Unit::Seconds, format!("wall at {n} threads"))
    };
    let runner_up = tie.runner_up_by(|r| r.text(LOCK).unwrap_or("?"), wall_of);
    Advice::new(situation, brief, best.text(LOCK).unwrap_or("?").to_string(), why).chosen_by(wall_of(&best), runner_up)
}

/// A measured lock's row: not skipped, and not the floor.
pub(super) fn is_lock(row: &Row) -> bool {
    !row.is_skipped() && row.text(LOCK) != Some(FLOOR_LOCK)
}

/// The locks a tie is resolved towards, in order: spinlab's default, then the references people
/// already use; then the others in the order the run measured them (its `--locks`).
pub(super) const TIE_ORDER: [&str; 4] = [select::DEFAULT_LOCK, "std", "parking_lot", "pthread"];
