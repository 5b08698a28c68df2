//! The seeds' claims the wakeup rows speak to: seed 001's Table 1, pthreads against a
//! spinner, the monitor wait, and a spinner on its worker's sibling.

use super::tradeoff::long_computation;
use super::PTHREAD_COND;
use crate::machine::Placement;
use crate::reading::scorecard::{
    needs, why_missing, words, Claim, Estimate, Finding, Need, Observed, Remeasure, Verdict as Judged,
};
use crate::reading::Context;
use crate::results::format::number;
use crate::results::rows::WakeupRow;

pub(super) const PTHREADS_WAKEUP: Claim = Claim {
    id: "001-twakeup-pthreads-vs-spin",
    seed: "001",
    source: "Table 1",
    claim: "a waiter blocked in a pthread condition variable wakes far later than a spinning one",
    paper: "Twakeup 116989 cycles for pthreads against 584 for spin with PAUSE (200x), Xeon with HT",
    needs: &[],
    remeasure: Some(Remeasure { experiment: "wakeup", options: &[("waits", "pause")] }),
};

pub(super) const PTHREADS_CALL: Claim = Claim {
    id: "001-tcall-pthreads-vs-spin",
    seed: "001",
    source: "Table 1",
    claim: "notifying a pthread condition variable costs the notifier far more than setting a flag",
    paper: "Tcall 70042 cycles for pthreads against 785 for spin (89x)",
    needs: &[],
    remeasure: Some(Remeasure { experiment: "wakeup", options: &[("waits", "pause")] }),
};

pub(super) const MWAIT_WAKEUP: Claim = Claim {
    id: "001-twakeup-mwait-vs-spin",
    seed: "001",
    source: "Table 1",
    claim: "a waiter in MWAIT wakes between a spinner and a sleeping thread",
    paper: "Twakeup 25381 cycles for mwait against 584 for spin (43x) and 116989 for pthreads",
    needs: &[needs::MONITOR_WAIT],
    remeasure: Some(Remeasure { experiment: "wakeup", options: &[("waits", "pause,umwait,mwaitx")] }),
};

pub(super) const SPINNER_ON_SIBLING: Claim = Claim {
    id: "001-spinner-slows-sibling",
    seed: "001",
    source: "§4.2, Table 1",
    claim: "a spinning waiter on the sibling hardware thread slows the worker more than the other primitives",
    paper: "Twork 4.2446 s beside spin against 3.566 s on average beside halt, pthreads and mwait (19% \
            longer), 2.8 GHz Netburst Xeon with HT",
    needs: &[needs::SMT],
    remeasure: Some(Remeasure { experiment: "wakeup", options: &[("waits", "pause,futex"), ("placement", "smt")] }),
};

/// Seed 001's spinning waiter: a spin loop with PAUSE.
pub(super) const SPIN: &str = "pause";

/// Where the seed's waiter was (the worker's sibling), or the nearest this document has.
pub(super) fn table_1_placement(rows: &[WakeupRow]) -> Option<&'static str> {
    [Placement::Smt, Placement::Core]
        .into_iter()
        .map(Placement::name)
        .find(|p| rows.iter().any(|r| r.placement.as_deref() == Some(*p)))
}

/// One of seed 001's Table 1 times, as a wake-up row holds it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Time {
    /// `twakeup_ns`.
    Wakeup,
    /// `tcall_ns`.
    Call,
}

impl Time {
    fn key(self) -> &'static str {
        match self {
            Time::Wakeup => "twakeup_ns",
            Time::Call => "tcall_ns",
        }
    }

    fn of(self, row: &WakeupRow) -> Option<Estimate> {
        match self {
            Time::Wakeup => Estimate::of(row.twakeup_ns, row.twakeup_ci95_ns.get()),
            Time::Call => Estimate::of(row.tcall_ns, row.tcall_ci95_ns.get()),
        }
    }
}

/// `time` of the first of `waits` measured, over the PAUSE spinner's (seed 001's "spin"), at
/// Table 1's placement.
pub(super) fn against_spin(ctx: &Context<'_>, claim: &Claim, time: Time, waits: &[&str], range: (f64, f64)) -> Finding {
    let rows = long_computation(ctx.rows_as::<WakeupRow>());
    let Some(placement) = table_1_placement(&rows) else {
        return Finding::without(claim, "wakeup", Judged::NotMeasured(ctx.missing_reason("wakeup")));
    };
    let key = time.key();
    let at =
        |wait: &str| rows.iter().find(|r| r.wait.as_deref() == Some(wait) && r.placement.as_deref() == Some(placement));
    let rows_words = format!("wakeup, {} and {SPIN} at {placement}, long computation: {key}", waits.join(" or "));
    let Some((wait, other)) = waits.iter().find_map(|w| at(w).map(|r| (*w, r))) else {
        let needs: Vec<Need<'_, WakeupRow>> =
            waits.iter().map(|w| Box::new(move |r: &WakeupRow| r.wait.as_deref() == Some(*w)) as Box<_>).collect();
        let needs: Vec<&dyn Fn(&WakeupRow) -> bool> = needs.iter().map(|n| n.as_ref()).collect();
        return Finding::without(claim, &rows_words, why_missing(ctx, &needs));
    };
    let (Some(spin), Some(other)) = (at(SPIN).and_then(|r| time.of(r)), time.of(other)) else {
        return Finding::without(claim, &rows_words, Judged::NotMeasured(ctx.missing_reason("wakeup")));
    };
    let Some(here) = other.ratio(&spin) else {
        return Finding::without(claim, &rows_words, Judged::NotMeasured(format!("{SPIN}'s {key} is zero")));
    };
    let detail = format!("{wait} {}, {SPIN} {}", words(&other, " ns"), words(&spin, " ns"));
    let reason = "the kernel's wake-up path and the CPU are not the 2008 Xeon's: a futex wake-up, and a \
                  cache line moving between cores, cost other multiples of each other today";
    let behind: Vec<&WakeupRow> = [at(wait), at(SPIN)].into_iter().flatten().collect();
    Finding::judged(claim, ctx, "wakeup", Observed { here, unit: "x", detail, rows: rows_words }, range, reason)
        .read_from_rows(&behind)
}

/// How much longer the worker's computation takes beside a spinning waiter on its sibling
/// than beside the sleeping primitives (seed 001: Twork 4.2446 s against 3.566 s, 1.19x), in
/// percent.
pub(super) fn spinner_on_sibling(ctx: &Context<'_>) -> Finding {
    let rows = long_computation(ctx.rows_as::<WakeupRow>());
    let smt = Placement::Smt.name();
    let rows_words =
        format!("wakeup at {smt}: twork of {SPIN} over the mean of futex and pthread-cond, from twork_vs_alone_pct");
    let at = |wait: &str| rows.iter().find(|r| r.wait.as_deref() == Some(wait) && r.placement.as_deref() == Some(smt));
    let slowdown = |wait: &str| at(wait).and_then(|r| r.twork_vs_alone_pct);
    let sleepers: Vec<f64> = ["futex", PTHREAD_COND].iter().filter_map(|w| slowdown(w)).collect();
    let (Some(spin), false) = (slowdown(SPIN), sleepers.is_empty()) else {
        return Finding::without(
            &SPINNER_ON_SIBLING,
            &rows_words,
            why_missing::<WakeupRow>(ctx, &[&|r| r.placement.as_deref() == Some(smt)]),
        );
    };
    let others = sleepers.iter().sum::<f64>() / sleepers.len() as f64;
    let here = Estimate::exact(100.0 * ((1.0 + spin / 100.0) / (1.0 + others / 100.0) - 1.0));
    let detail = format!("{SPIN} {}%, sleeping primitives {}%", number(spin), number(others));
    let reason = "a modern core shares its pipeline between two threads differently from Netburst, and a \
                  spin with PAUSE yields more of it";
    Finding::judged(
        &SPINNER_ON_SIBLING,
        ctx,
        "wakeup",
        Observed { here, unit: "%", detail, rows: rows_words },
        (9.5, f64::INFINITY),
        reason,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::wakeup::{KEY_MATRIX_N, TCALL_NS, TWAKEUP_NS};
    use crate::results::keys::{PLACEMENT, WAIT};
    use crate::results::{Row, Run};

    #[test]
    fn the_pthreads_claims_say_the_machine_moved_only_when_it_moved_under_their_rows() {
        use crate::results::{TRANSFER_AFTER_NS, TRANSFER_BEFORE_NS};
        let results_with = |pause_after_ns: f64| {
            let mut results = crate::results::Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
            let mut run = Run::new("wakeup");
            // The run as a whole saw the machine move (under another configuration).
            run.param(TRANSFER_BEFORE_NS, 50.0).param(TRANSFER_AFTER_NS, 200.0);
            let row = |placement: &str, wait: &str, tcall: f64, after: f64| {
                Row::new()
                    .with(PLACEMENT, placement)
                    .with(WAIT, wait)
                    .with(KEY_MATRIX_N, 512)
                    .with(TWAKEUP_NS, 100.0 * tcall)
                    .with(TCALL_NS, tcall)
                    .with(TRANSFER_BEFORE_NS, 50.0)
                    .with(TRANSFER_AFTER_NS, after)
            };
            run.rows.push(row("core", SPIN, 50.0, pause_after_ns));
            run.rows.push(row("core", PTHREAD_COND, 25_000.0, pause_after_ns));
            run.rows.push(row("same-cpu", SPIN, 10.0, 50.0));
            results.runs.push(run);
            results
        };
        let finding = |results: &crate::results::Results| {
            let ctx = Context::new(results);
            against_spin(&ctx, &PTHREADS_CALL, Time::Call, &[PTHREAD_COND], (22.0, 356.0))
        };
        // The rows behind the figure held still: no mark, whatever the run saw elsewhere.
        let still = finding(&results_with(55.0));
        assert!(still.here.is_some_and(|e| (e.value - 500.0).abs() < 1e-9), "{:?}", still.here);
        assert_eq!(still.machine_moved, None);
        // It moved under them: marked, with their transfers.
        let moved = finding(&results_with(210.0));
        assert!(moved.machine_moved.as_deref().is_some_and(|w| w.contains("210 ns")), "{:?}", moved.machine_moved);
    }
}
