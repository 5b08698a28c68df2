//! The herd charts: wall time per thread count, each lock beside the floor.

use crate::reading::plot::{self, Axis, Band, Scale};
use crate::reading::{measured, series_per, Context, Panel};
use crate::results::keys::{LOCK, THREADS};
use crate::results::Row;

pub(super) fn charts(ctx: &Context<'_>, rows: &[&Row]) -> Vec<Result<Panel, String>> {
    let rows = measured(rows.iter().copied());
    let by_lock = |key: &str| series_per(&rows, LOCK, THREADS, key);
    let threads: Vec<f64> = rows.iter().filter_map(|r| r.number(THREADS)).collect();
    let x = Axis::log_at("threads (log scale)", &threads);
    let band = Band { from: ctx.cpus as f64, label: format!("oversubscribed: threads > {} CPUs", ctx.cpus) };
    let mut out = Vec::new();
    for (key, what, caption) in [
        (
            "wall_s",
            "wall time per repetition (s, log scale)",
            "Wall time for the herd (all threads released by a barrier, each taking one lock in turn) per lock and \
             thread count: lower is better; seed 004 found sleeping waiters win once threads outnumber CPUs. \
             'floor: no lock' is the same herd without the lock, measured in the same rounds: no lock can be \
             faster, and the gap above it is all a lock can change.",
        ),
        (
            "sys_s",
            "system CPU time per repetition (s, log scale)",
            "System CPU time the herd's threads spent in the kernel (futex calls, sched_yield, preemption): the \
             cost of sleeping and of being descheduled, per lock and thread count.",
        ),
    ] {
        let series = by_lock(key);
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
