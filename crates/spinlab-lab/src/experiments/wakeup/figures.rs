//! The wakeup charts.

use super::tradeoff::{long_computation, tradeoff, Tradeoff};
use crate::reading::plot::{self, Axis, Point, Scale};
use crate::reading::{distinct_by, Context, Panel};
use crate::results::rows::WakeupRow;

pub(super) fn charts(ctx: &Context<'_>, rows: Vec<WakeupRow>) -> Vec<Result<Panel, String>> {
    let rows = long_computation(rows);
    let mut out = Vec::new();
    for placement in distinct_by(&rows, |r| r.placement.clone()) {
        let at: Vec<&WakeupRow> = rows
            .iter()
            .filter(|r| r.placement.as_deref() == Some(placement.as_str()))
            .filter(|r| r.twakeup_ns.is_some() || r.tcall_ns.is_some())
            .collect();
        if at.is_empty() {
            continue;
        }
        let categories: Vec<String> = at.iter().map(|r| r.wait.as_deref().unwrap_or("?").to_string()).collect();
        let groups = vec![
            ("Twakeup: notify to waiter running".to_string(), at.iter().map(|r| r.twakeup_ns).collect()),
            ("Tcall: the notify call itself".to_string(), at.iter().map(|r| r.tcall_ns).collect::<Vec<_>>()),
        ];
        let values = groups.iter().flat_map(|g: &(String, Vec<Option<f64>>)| g.1.iter().flatten().copied());
        let y = Axis::numeric("nanoseconds (log scale)", Scale::Log, values, false);
        out.push(
            plot::grouped_bars(
                &format!("Wake-up and notify cost, waiter at {placement}"),
                &categories,
                "notify primitive",
                &y,
                &groups,
                None,
            )
            .map(|svg| Panel {
                svg,
                caption: format!(
                    "Seed 001's Twakeup (from the notify call to the waiter running again) and Tcall (what the \
                         notify costs the notifier) per primitive, the waiter at {placement} from the worker."
                ),
            }),
        );
    }
    if let Some(Tradeoff { placement, points, interference: what }) = tradeoff(ctx) {
        let pts: Vec<Point> =
            points.iter().map(|p| Point { label: p.wait.clone(), x: p.interference_pct, y: p.wakeup_ns }).collect();
        let x = Axis::numeric(&format!("{what} (%)"), Scale::Linear, pts.iter().map(|p| p.x), true);
        let y = Axis::numeric("wake-up latency Twakeup (ns, log scale)", Scale::Log, pts.iter().map(|p| p.y), false);
        out.push(
            plot::scatter(&format!("The trade-off at {placement}: wake-up latency vs interference"), &x, &y, &pts).map(
                |svg| Panel {
                    svg,
                    caption: format!(
                    "Each wait policy as one point, waiter and worker at {placement}: left is kinder to the thread \
                     doing work (seeds 000/002), low is quicker to respond (seed 001); the best policies sit near the \
                     bottom-left corner."
                ),
                },
            ),
        );
    }
    out
}
