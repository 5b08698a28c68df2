//! The seed's claims the herd rows speak to: seed 004's backoff gain and sleeping waiters.

use super::FLOOR_LOCK;
use crate::reading::scorecard::{words, Claim, Estimate, Finding, Observed, Remeasure, Verdict as Judged};
use crate::reading::Context;
use crate::results::rows::HerdRow;

pub(super) const BACKOFF_GAIN: Claim = Claim {
    id: "004-backoff-gain",
    seed: "004",
    source: "the post's two tables",
    claim: "exponential backoff in the spin loop gains a little wall time on a highly contended lock",
    paper: "about 2.5% of wall time (71.78 to 69.84 s at 64 CPUs, 2.7%; 6.3% at 8), ia64, one inode lock",
    needs: &[],
    remeasure: Some(Remeasure { experiment: "herd", options: &[("locks", "ttas:spin,ttas:backoff")] }),
};

pub(super) const SLEEPING_WINS: Claim = Claim {
    id: "004-sleeping-wins",
    seed: "004",
    source: "the post's closing paragraph",
    claim: "with many threads on one lock, sleeping waiters beat spinning ones",
    paper: "the rw-semaphore cut wall and system time (no figure given)",
    needs: &[],
    remeasure: Some(Remeasure { experiment: "herd", options: &[("locks", "ttas:spin,ttas:futex")] }),
};

/// How much longer the spinning herd (`ttas:spin`) takes than the herd under `lock`, at the
/// largest thread count (the most contended), in percent.
pub(super) fn spin_over(ctx: &Context<'_>, claim: &Claim, lock: &str, range: (f64, f64), reason: &str) -> Finding {
    let rows: Vec<HerdRow> = ctx.measured_as();
    let largest = rows.iter().filter_map(|r| r.threads).max();
    let at = |name: &str| rows.iter().find(|r| r.lock.as_deref() == Some(name) && r.threads == largest);
    let wall = |r: &HerdRow| Estimate::of(r.wall_s, r.wall_ci95_s.get());
    let largest = largest.map_or("none".to_string(), |n| n.to_string());
    let rows_words = format!("herd, ttas:spin and {lock} at the largest thread count ({largest}): wall_s");
    let walls = (at("ttas:spin").and_then(wall), at(lock).and_then(wall));
    let (Some(spin), Some(other)) = walls else {
        return Finding::without(claim, &rows_words, Judged::NotMeasured(ctx.missing_reason("herd")));
    };
    let Some(ratio) = spin.ratio(&other) else {
        return Finding::without(claim, &rows_words, Judged::NotMeasured(format!("{lock}'s wall time is zero")));
    };
    let here = ratio.affine(100.0, -100.0);
    let mut detail = format!("ttas:spin {}, {lock} {}", words(&spin, " s"), words(&other, " s"));
    if let Some(floor) = at(FLOOR_LOCK).and_then(wall) {
        detail.push_str(&format!("; with no lock at all {}", words(&floor, " s")));
    }
    Finding::judged(claim, ctx, "herd", Observed { here, unit: "%", detail, rows: rows_words }, range, reason)
}
