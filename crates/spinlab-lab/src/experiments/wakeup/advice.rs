//! The wakeup experiment's part of the recommendation: the kindest policy beside
//! sensitive co-runners, and the quickest to wake where they do not mind.

use super::tradeoff::{tradeoff, wakeups_apart, PolicyPoint, Tradeoff, WakeupPoint, Wakeups};
use crate::reading::advice::{lowest_tie, tie_words, Advice, Figure, Margin, RunnerUp, Unit};
use crate::reading::Context;
use crate::results::format::duration_words;

pub(super) const SENSITIVE: &str = "co-runners sensitive (waiters share a core or CPU with threads doing work)";
pub(super) const NOT_SENSITIVE: &str = "co-runners not sensitive, wake-up latency matters";
/// [`SENSITIVE`] in a few words.
pub(super) const SENSITIVE_BRIEF: &str = "co-runners sensitive";
/// [`NOT_SENSITIVE`] in a few words.
pub(super) const NOT_SENSITIVE_BRIEF: &str = "wake-up latency";

pub(super) fn co_runners(ctx: &Context<'_>) -> Vec<Advice> {
    vec![kindest(ctx), quickest(ctx)]
}

/// For waiters beside sensitive work: the kindest policy on the trade-off at the closest
/// placement measured, and among those within one percentage point of it, the quickest.
pub(super) fn kindest(ctx: &Context<'_>) -> Advice {
    let Some(Tradeoff { placement, points, interference: what }) = tradeoff(ctx) else {
        return Advice::missing(
            SENSITIVE,
            SENSITIVE_BRIEF,
            format!(
                "not measured: no placement had two or more wait policies with both a wake-up latency and an \
                 interference figure ({}; {})",
                ctx.missing_reason("wakeup"),
                ctx.missing_reason("interference")
            ),
        );
    };
    // Policies whose interval reaches the least's (or within one percentage point of it) tie;
    // among them the first in KIND_ORDER, else the quickest to wake, so that reruns that differ
    // only by noise choose alike.
    let least = points.iter().min_by(|a, b| a.interference_pct.total_cmp(&b.interference_pct)).expect("two points");
    let reach = least.interference().high().max(least.interference_pct + 1.0);
    let tied: Vec<&PolicyPoint> = points.iter().filter(|p| p.interference().low() <= reach).collect();
    let kind = KIND_ORDER
        .iter()
        .find_map(|&w| tied.iter().copied().find(|p| p.wait == w))
        .or_else(|| tied.iter().copied().min_by(|a, b| a.wakeup_ns.total_cmp(&b.wakeup_ns)))
        .expect("tradeoff returns at least two points");
    let worst =
        points.iter().max_by(|a, b| a.interference_pct.total_cmp(&b.interference_pct)).expect("at least two points");
    let cost = |p: &PolicyPoint| p.interference();
    let runner_up = points
        .iter()
        .filter(|p| !std::ptr::eq(*p, kind))
        .min_by(|a, b| a.interference_pct.total_cmp(&b.interference_pct))
        .map(|other| RunnerUp {
            name: other.wait.clone(),
            figure: Figure::new(cost(other), Unit::Percent, ""),
            margin: Margin::points(&cost(kind), &cost(other), tied.iter().any(|t| std::ptr::eq(*t, other))),
        });
    let figure = Figure::new(cost(kind), Unit::Percent, format!("at {placement}"));
    Advice::new(
        SENSITIVE,
        SENSITIVE_BRIEF,
        format!("wait policy {}", kind.wait),
        format!(
            "{:.1}% {what}, wake-up {}, at {placement}; the worst here, {}, costs {:.1}%{}",
            kind.interference_pct,
            duration_words(kind.wakeup_ns),
            worst.wait,
            worst.interference_pct,
            tie_words(&others(tied.iter().map(|p| p.wait.as_str()), &kind.wait), &KIND_ORDER)
        ),
    )
    .chosen_by(figure, runner_up)
}

/// The tied policies other than the one named.
pub(super) fn others<'a>(tied: impl Iterator<Item = &'a str>, chosen: &str) -> Vec<&'a str> {
    tied.filter(|&w| w != chosen).collect()
}

/// Policies preferred, in order, when several tie for the least interference: those that give
/// the CPU up soonest.
pub(super) const KIND_ORDER: [&str; 4] = ["futex", "spin-park", "spin-yield-park", "yield"];
/// Policies preferred, in order, when several tie for the quickest wake-up: the gentlest
/// spinning first (seed 000: `pause` leaves the most to a sibling).
pub(super) const QUICK_ORDER: [&str; 2] = ["pause", "spin"];

/// For waiters whose co-runners do not mind them: the quickest to wake, where the waiter has a
/// CPU of its own (a spinner on its notifier's CPU holds the CPU the notifier needs).
pub(super) fn quickest(ctx: &Context<'_>) -> Advice {
    let Some(Wakeups { placement, points }) = wakeups_apart(ctx) else {
        return Advice::missing(
            NOT_SENSITIVE,
            NOT_SENSITIVE_BRIEF,
            format!(
                "not measured: no placement where the waiter has a CPU of its own had two or more wait policies \
                 with a wake-up latency ({})",
                ctx.missing_reason("wakeup")
            ),
        );
    };
    let tie = lowest_tie(&points, |p| (p.wait.as_str(), p.wakeup()), &QUICK_ORDER).expect("two or more points");
    let quick = tie.chosen;
    let slowest = points.iter().max_by(|a, b| a.wakeup_ns.total_cmp(&b.wakeup_ns)).expect("two or more points");
    let wakeup = |p: &WakeupPoint| Figure::new(p.wakeup(), Unit::Nanoseconds, format!("at {placement}"));
    let runner_up = tie.runner_up_by(|p| p.wait.as_str(), wakeup);
    Advice::new(
        NOT_SENSITIVE,
        NOT_SENSITIVE_BRIEF,
        format!("wait policy {}", quick.wait),
        format!(
            "wake-up {} with the waiter on its own CPU (wakeup rows at {placement}, long computation); the slowest \
             there, {}, {}{}",
            duration_words(quick.wakeup_ns),
            slowest.wait,
            duration_words(slowest.wakeup_ns),
            tie.words(|p| p.wait.as_str(), &QUICK_ORDER)
        ),
    )
    .chosen_by(wakeup(quick), runner_up)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::interference::{SLOWDOWN_PCT, WAITER_CPU_PCT};
    use crate::experiments::wakeup::{KEY_MATRIX_N, TWAKEUP_NS, TWORK_VS_ALONE_PCT};
    use crate::results::keys::{PLACEMENT, WAIT};
    use crate::results::{Row, Run};

    #[test]
    fn the_quickest_policy_comes_from_a_placement_where_the_waiter_has_its_own_cpu() {
        let mut results = crate::results::Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        let mut run = Run::new("wakeup");
        let row = |placement: &str, wait: &str, twakeup: f64, slowdown: f64| {
            Row::new()
                .with(PLACEMENT, placement)
                .with(WAIT, wait)
                .with(KEY_MATRIX_N, 512)
                .with(TWAKEUP_NS, twakeup)
                .with(TWORK_VS_ALONE_PCT, slowdown)
        };
        // On a shared CPU the spinners wait out their time slices; `yield` wakes quickest.
        run.rows.push(row("same-cpu", "spin", 900_000.0, 90.0));
        run.rows.push(row("same-cpu", "yield", 5_010.0, 40.0));
        run.rows.push(row("core", "spin", 45.0, 1.0));
        run.rows.push(row("core", "spin-park", 53.0, 0.5));
        run.rows.push(row("core", "yield", 6_000.0, 0.4));
        results.runs.push(run);
        let ctx = Context::new(&results);
        let advice = co_runners(&ctx);
        let quick = advice.iter().find(|a| a.situation == NOT_SENSITIVE).unwrap();
        assert_eq!(quick.choice, "wait policy spin", "{quick:?}");
        assert!(quick.why.contains("at core") && quick.why.contains("yield"), "{quick:?}");
        // The kindest comes from the closest placement measured, where sharing is what hurts.
        let kind = advice.iter().find(|a| a.situation == SENSITIVE).unwrap();
        assert_eq!(kind.choice, "wait policy yield", "{kind:?}");
        assert!(kind.why.contains("at same-cpu"), "{kind:?}");
    }

    #[test]
    fn policies_that_tie_are_named_in_a_fixed_order_so_reruns_agree() {
        let mut results = crate::results::Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        let mut wakeup = Run::new("wakeup");
        let row = |wait: &str, twakeup: f64, ci: f64| {
            Row::new()
                .with(PLACEMENT, "core")
                .with(WAIT, wait)
                .with(KEY_MATRIX_N, 512)
                .with(TWAKEUP_NS, twakeup)
                .with("twakeup_ci95_ns", ci)
        };
        // spin is quickest, but pause's interval reaches it: a tie, and pause comes first.
        wakeup.rows.push(row("spin", 45.0, 5.0));
        wakeup.rows.push(row("pause", 52.0, 5.0));
        wakeup.rows.push(row("futex", 20_000.0, 900.0));
        let mut interference = Run::new("interference");
        let slowdown = |wait: &str, pct: f64, ci: f64| {
            Row::new().with(PLACEMENT, "core").with(WAIT, wait).with(SLOWDOWN_PCT, pct).with("slowdown_ci95_pct", ci)
        };
        // At core futex costs -0.5 ± 3%, pause 1.2 ± 2.5%, spin 9 ± 1%: futex and pause tie.
        interference.rows.push(slowdown("futex", -0.5, 3.0));
        interference.rows.push(slowdown("pause", 1.2, 2.5));
        interference.rows.push(slowdown("spin", 9.0, 1.0));
        results.runs.push(wakeup);
        results.runs.push(interference);
        let ctx = Context::new(&results);
        let advice = co_runners(&ctx);
        let quick = advice.iter().find(|a| a.situation == NOT_SENSITIVE).unwrap();
        assert_eq!(quick.choice, "wait policy pause", "{quick:?}");
        assert!(quick.why.contains("spin within the 95% intervals too"), "{quick:?}");
        let kind = advice.iter().find(|a| a.situation == SENSITIVE).unwrap();
        assert_eq!(kind.choice, "wait policy futex", "{kind:?}");
        assert!(kind.why.contains("pause within the 95% intervals too"), "{kind:?}");
        assert!(!kind.why.contains("spin within"), "spin's 9 ± 1% is outside: {kind:?}");
        // The runner-ups: spin, quicker and tied; pause, 1.7 points more and tied.
        let next = quick.runner_up.as_ref().unwrap();
        assert_eq!((next.name.as_str(), next.margin.tied), ("spin", true), "{quick:?}");
        assert_eq!(next.margin.words(), "0.865x, within the interval");
        let next = kind.runner_up.as_ref().unwrap();
        assert_eq!((next.name.as_str(), next.margin.words().as_str()), ("pause", "+1.7 points, within the interval"));
    }

    #[test]
    fn on_a_shared_cpu_the_kindest_policy_is_read_from_the_cpu_the_waiters_took() {
        let results_with = |taken_measured: bool| {
            let mut results = crate::results::Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
            let mut wakeup = Run::new("wakeup");
            for (wait, twakeup) in [("spin", 900_000.0), ("futex", 30_000.0)] {
                let row = Row::new().with(PLACEMENT, "same-cpu").with(WAIT, wait).with(KEY_MATRIX_N, 512);
                wakeup.rows.push(row.with(TWAKEUP_NS, twakeup));
            }
            // Under load the wall slowdowns crossed (other processes' turns fell in futex's
            // co-runs); the waiters' own CPU time did not.
            let mut interference = Run::new("interference");
            for (wait, wall, taken) in [("spin", 20.0, 98.0), ("futex", 40.0, 0.0)] {
                let mut row = Row::new()
                    .with(PLACEMENT, "same-cpu")
                    .with(WAIT, wait)
                    .with(SLOWDOWN_PCT, wall)
                    .with("slowdown_ci95_pct", 5.0);
                if taken_measured {
                    row = row.with(WAITER_CPU_PCT, taken).with("waiter_cpu_ci95_pct", 1.0);
                }
                interference.rows.push(row);
            }
            results.runs.push(wakeup);
            results.runs.push(interference);
            results
        };
        let results = results_with(true);
        let kind = kindest(&Context::new(&results));
        assert_eq!(kind.choice, "wait policy futex", "{kind:?}");
        assert!(kind.why.starts_with("0.0% mean CPU time the waiters took on the worker's CPU"), "{kind:?}");
        assert!(kind.why.contains("the worst here, spin, costs 98.0%"), "{kind:?}");
        // Results written before the waiters' figure existed: the wall slowdown is read.
        let older = results_with(false);
        let older = kindest(&Context::new(&older));
        assert_eq!(older.choice, "wait policy spin", "{older:?}");
        assert!(older.why.contains("mean slowdown of the interference workloads"), "{older:?}");
    }
}
