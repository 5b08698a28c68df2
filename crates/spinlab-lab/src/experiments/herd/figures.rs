//! The herd charts: wall time per thread count, each lock beside the floor.

use crate::reading::plot::{self, Axis, Band, Scale};
use crate::reading::{series_by, Context, Panel};
use crate::results::rows::HerdRow;

pub(super) fn charts(ctx: &Context<'_>, rows: &[HerdRow]) -> Vec<Result<Panel, String>> {
    let by_lock = |figure: fn(&HerdRow) -> Option<f64>| {
        series_by(rows, |r| r.lock.as_deref(), |r| Some((r.threads? as f64, figure(r)?)))
    };
    let threads: Vec<f64> = rows.iter().filter_map(|r| r.threads).map(|t| t as f64).collect();
    let x = Axis::log_at("threads (log scale)", &threads);
    let band = Band { from: ctx.cpus as f64, label: format!("oversubscribed: threads > {} CPUs", ctx.cpus) };
    let mut out = Vec::new();
    let wall: fn(&HerdRow) -> Option<f64> = |r| r.wall_s;
    let sys: fn(&HerdRow) -> Option<f64> = |r| r.sys_s.get();
    for (key, figure, what, caption) in [
        (
            "wall_s",
            wall,
            "wall time per repetition (s, log scale)",
            "Wall time for the herd (all threads released by a barrier, each taking one lock in turn) per lock and \
             thread count: lower is better; seed 004 found sleeping waiters win once threads outnumber CPUs. \
             'floor: no lock' is the same herd without the lock, measured in the same rounds: no lock can be \
             faster, and the gap above it is all a lock can change.",
        ),
        (
            "sys_s",
            sys,
            "system CPU time per repetition (s, log scale)",
            "System CPU time the herd's threads spent in the kernel (futex calls, sched_yield, preemption): the \
             cost of sleeping and of being descheduled, per lock and thread count.",
        ),
    ] {
        let series = by_lock(figure);
        if series.is_empty() {
            continue;
        }
        let y = Axis::numeric(what, Scale::Log, series.iter().flat_map(|s| s.points.iter().map(|p| p.1)), false);
        let title = if key == "wall_s" { "Herd: wall time" } else { "Herd: system time" };
        out.push(
            plot::lines(title, &x, &y, &series, Some(&band)).map(|svg| Panel { svg, caption: caption.to_string() }),
        );
    }
    out
}
