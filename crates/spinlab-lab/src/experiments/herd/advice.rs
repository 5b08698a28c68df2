//! The herd experiment's part of the recommendation: the quickest lock for a herd.

use super::FLOOR_LOCK;
use crate::reading::advice::{lowest_tie, total_order, Advice, Figure, Unit};
use crate::reading::scorecard::Estimate;
use crate::reading::Context;
use crate::results::format::number;
use crate::results::rows::{typed, HerdRow};
use crate::select::{self};

/// A lock's row of the herd with its wall time and that time's interval (0 where the row has
/// none: one repetition).
struct Walled {
    row: HerdRow,
    wall: Estimate,
    threads: u64,
}

impl Walled {
    fn name(&self) -> &str {
        self.row.lock.as_deref().unwrap_or("?")
    }
}

pub(super) fn quickest(ctx: &Context<'_>) -> Advice {
    let situation = "many threads released at once (a herd), oversubscribed";
    let brief = "herd, > CPUs";
    let rows: Vec<Walled> = typed::<HerdRow>(ctx.rows_of("herd"))
        .into_iter()
        .filter(is_lock)
        .filter_map(|row| {
            let wall = Estimate::of(row.wall_s, row.wall_ci95_s.get())?;
            Some(Walled { threads: row.threads?, wall, row })
        })
        .collect();
    let Some(n) = rows.iter().map(|r| r.threads).max() else {
        return Advice::missing(situation, brief, ctx.missing_reason("herd"));
    };
    let listed: Vec<&Walled> = rows.iter().filter(|r| r.threads == n).collect();
    let order = total_order(&TIE_ORDER, listed.iter().map(|r| r.name()));
    let mut at = listed.clone();
    at.sort_by(|a, b| a.wall.value.total_cmp(&b.wall.value));
    let tie = lowest_tie(&at, |r| (r.name(), r.wall), &order).expect("rows at the largest thread count");
    let best = *tie.chosen;
    let worst = at[at.len() - 1];
    let wall = best.wall.value;
    let mut why = format!("{} s wall at {n} threads", number(wall));
    if let Some(over) = best.row.wall_over_floor {
        why.push_str(&format!(", {over:.2}x the herd's with no lock"));
    }
    if let Some(sys) = best.row.sys_s.get() {
        why.push_str(&format!(" ({} s system time)", number(sys)));
    }
    if !std::ptr::eq(best, worst) {
        let slowest = worst.wall.value;
        why.push_str(&format!("; {} took {} s ({:.1}x)", worst.name(), number(slowest), slowest / wall.max(1e-12)));
    }
    why.push_str(&tie.words(|r| r.name(), &order));
    let wall_of = |r: &&Walled| Figure::new(r.wall, Unit::Seconds, format!("wall at {n} threads"));
    let runner_up = tie.runner_up_by(|r| r.name(), wall_of);
    Advice::new(situation, brief, best.name().to_string(), why).chosen_by(wall_of(&best), runner_up)
}

/// A measured lock's row: not skipped, and not the floor.
fn is_lock(row: &HerdRow) -> bool {
    row.skipped.is_none() && row.lock.as_deref() != Some(FLOOR_LOCK)
}

/// The locks a tie is resolved towards, in order: spinlab's default, then the references people
/// already use; then the others in the order the run measured them (its `--locks`).
pub(super) const TIE_ORDER: [&str; 4] = [select::DEFAULT_LOCK, "std", "parking_lot", "pthread"];
