//! The seeds' claims the interference rows speak to: seed 000's slowdowns of a sibling's work
//! under each waiting loop, and the waiters' responsiveness.

use super::CORE_SHARED;
use crate::machine::Placement;
use crate::reading::scorecard::{
    mean_of, needs, why_missing, words, Claim, Estimate, Finding, Observed, Remeasure, Verdict as Judged,
};
use crate::reading::Context;
use crate::results::format::number;
use crate::results::rows::InterferenceRow;

pub(super) const ONE_LINUX_LOOP_ON_SIBLING: Claim = Claim {
    id: "000-linux-loop-one-sibling",
    seed: "000",
    source: "§IV.B",
    claim: "one thread in the Linux spin loop on the same core slows the active thread",
    paper: "9.5% on average over the workloads on UltraSPARC T1, 8.6% on T2 (one spinning strand)",
    needs: &[needs::SMT],
    remeasure: Some(Remeasure { experiment: "interference", options: &[("waits", "spin"), ("placement", "smt")] }),
};

pub(super) const LINUX_LOOP_ON_SIBLING: Claim = Claim {
    id: "002-linux-loop-smt",
    seed: "002",
    source: "slide \"Results\"",
    claim: "the Linux spin loop on the same core slows the active thread's real work heavily",
    paper: "42% on average over the multiple-behaviour workloads (61% worst case), UltraSPARC T2, spinning \
            strands on the active thread's core (seed 000 Fig. 7: three in its pipe)",
    needs: &[needs::SMT],
    remeasure: Some(Remeasure { experiment: "interference", options: &[("waits", "spin"), ("placement", "smt")] }),
};

pub(super) const MISS_LOOP_ON_SIBLING: Claim = Claim {
    id: "002-miss-loop-smt",
    seed: "002",
    source: "slide \"Results\"",
    claim: "a spin loop that waits on a load that always misses nearly removes that slowdown",
    paper: "1.5% on average over the multiple-behaviour workloads (2% worst case), UltraSPARC T2",
    needs: &[needs::SMT],
    remeasure: Some(Remeasure { experiment: "interference", options: &[("waits", "miss"), ("placement", "smt")] }),
};

pub(super) const LINUX_LOOP_OTHER_CORE: Claim = Claim {
    id: "000-linux-loop-other-core",
    seed: "000",
    source: "§V.B.2",
    claim: "a spinning thread on another core does not slow the active thread",
    paper: "negligible (not charted); under 3% from another pipe of the same T2 core",
    needs: &[needs::TWO_CORES],
    remeasure: Some(Remeasure { experiment: "interference", options: &[("waits", "spin"), ("placement", "core")] }),
};

pub(super) const RESPONSIVENESS: Claim = Claim {
    id: "002-miss-loop-responsiveness",
    seed: "002",
    source: "slide \"Results\"; seed 000 §V.D",
    claim: "the cache-miss loop pays for it in responsiveness: it reads the lock far less often",
    paper: "about 220 cycles between two reads of the lock instead of 10 (22x); 170 ns on T2",
    needs: &[needs::TWO_CORES],
    remeasure: Some(Remeasure {
        experiment: "interference",
        options: &[("waits", "miss,spin"), ("placement", "core")],
    }),
};

/// Which active workloads a claim averages over (seed 000 §III.D's two groups).
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Workloads {
    All,
    Multiple,
}

/// The active thread's slowdown beside waiters of `wait` at `placement` (the most waiters
/// measured there), averaged over the active workloads, against `range` (percent). The
/// figure is the CPU-time slowdown: on a sibling or another core the active thread keeps its
/// CPU, and the seeds' figures are what the waiters cost the work per cycle it runs.
pub(super) fn mean_slowdown(
    ctx: &Context<'_>,
    claim: &Claim,
    wait: &str,
    placement: Placement,
    workloads: Workloads,
    range: (f64, f64),
) -> Finding {
    let at: Vec<InterferenceRow> = ctx
        .measured_as::<InterferenceRow>()
        .into_iter()
        .filter(|r| r.wait.as_deref() == Some(wait) && r.placement.as_deref() == Some(placement.name()))
        .filter(|r| workloads == Workloads::All || r.behaviour.as_deref() == Some("multiple"))
        .collect();
    let most = at.iter().filter_map(|r| r.waiters).max();
    let rows: Vec<&InterferenceRow> = at.iter().filter(|r| most.is_some() && r.waiters == most).collect();
    let group = if workloads == Workloads::All { "every" } else { "each multiple-behaviour" };
    let mut rows_words =
        format!("interference, wait {wait}, at {placement}, the most waiters measured, {group} active workload");
    // At `core`, only rows whose CPUs were two cores when probed: the others measured one
    // core's two hardware threads (a virtual machine's host can run its CPUs so), which is
    // another claim's placement.
    let (rows, one_core): (Vec<&InterferenceRow>, Vec<&InterferenceRow>) =
        rows.into_iter().partition(|r| placement != Placement::Core || on_two_cores(r));
    if !one_core.is_empty() {
        rows_words.push_str(&format!(
            ", less {} measured while the two CPUs shared one physical core or the host moved them ({CORE_SHARED})",
            one_core.iter().map(|r| r.active.as_deref().unwrap_or("?")).collect::<Vec<_>>().join(", ")
        ));
        if rows.is_empty() {
            let why = "every row was measured while the two CPUs shared one physical core (a virtual machine's host \
                       ran them on one core's two hardware threads, which the guest cannot see) or moved between \
                       probes: no row measured two cores";
            return Finding::without(claim, &rows_words, Judged::CannotTest(why.to_string()));
        }
    }
    let per_workload: Vec<Estimate> =
        rows.iter().filter_map(|r| Estimate::of(r.cpu_slowdown_pct, r.cpu_slowdown_ci95_pct.get())).collect();
    let Some(here) = mean_of(&per_workload) else {
        let why = why_missing::<InterferenceRow>(
            ctx,
            &[&|r| r.placement.as_deref() == Some(placement.name()), &|r| r.wait.as_deref() == Some(wait)],
        );
        return Finding::without(claim, &rows_words, why);
    };
    let detail = rows
        .iter()
        .zip(&per_workload)
        .map(|(r, e)| format!("{} {}", r.active.as_deref().unwrap_or("?"), words(e, "%")))
        .collect::<Vec<_>>()
        .join(", ");
    let most = most.map_or("?".to_string(), |n| n.to_string());
    let detail = format!("{most} waiter(s): {detail}");
    let reason = match placement {
        Placement::Core => {
            "the two cores still share a last-level cache, memory bandwidth and, in a virtual \
                            machine, the host's scheduling"
        }
        _ => {
            "an x86 core shares its pipeline between its two hardware threads differently from the T1/T2's \
              fine-grained multithreading, and holds only one waiter beside the active thread"
        }
    };
    Finding::judged(claim, ctx, "interference", Observed { here, unit: "%", detail, rows: rows_words }, range, reason)
        .read_from_rows(&rows)
}

/// Whether a `core` row was measured on two cores: its probes said so, or it has none (a
/// document from before the probes, or a machine without the `core` pair's probe).
pub(super) fn on_two_cores(row: &InterferenceRow) -> bool {
    row.core_shared.as_deref().is_none_or(|said| said == "no")
}

/// The miss loop's re-read interval over the Linux loop's, both at `core` (waiters alone on
/// their CPU), averaged over the active workloads.
pub(super) fn responsiveness(ctx: &Context<'_>) -> Finding {
    let rows_words =
        "interference, waits miss and spin, one waiter, at core, on two cores (core_shared): reread_ns".to_string();
    let measured: Vec<InterferenceRow> = ctx.measured_as();
    let rows: Vec<&InterferenceRow> = measured
        .iter()
        .filter(|r| r.placement.as_deref() == Some(Placement::Core.name()) && on_two_cores(r))
        .filter(|r| matches!(r.wait.as_deref(), Some("miss" | "spin")) && r.reread_ns.is_some())
        .collect();
    let reread = |wait: &str| -> Vec<Estimate> {
        rows.iter()
            .filter(|r| r.wait.as_deref() == Some(wait))
            .filter_map(|r| Estimate::of(r.reread_ns, r.reread_ci95_ns.get()))
            .collect()
    };
    let (miss, spin) = (mean_of(&reread("miss")), mean_of(&reread("spin")));
    let (Some(miss), Some(spin)) = (miss, spin) else {
        let why = why_missing::<InterferenceRow>(ctx, &[&|r| r.placement.as_deref() == Some(Placement::Core.name())]);
        return Finding::without(&RESPONSIVENESS, &rows_words, why);
    };
    let Some(here) = miss.ratio(&spin) else {
        return Finding::without(&RESPONSIVENESS, &rows_words, Judged::NotMeasured("a re-read of zero".to_string()));
    };
    let mut detail = format!("miss {} ns, spin {} ns per read", number(miss.value), number(spin.value));
    let chase = ctx.runs_of("interference").into_iter().find_map(|run| {
        let params = run.known_params();
        Some((params.miss_chase_bytes?, params.miss_chase_times_seed_size?, params.miss_chase_step_ns?))
    });
    if let Some((bytes, times, step_ns)) = chase {
        detail.push_str(&format!(
            "; the chase: {} MiB, {}x seed 000's size, {} ns a step alone",
            number(bytes / f64::from(1 << 20)),
            number(times),
            number(step_ns)
        ));
    }
    let reason = "today's cores re-read a cached line in a cycle or two, far faster than the T2's 10-cycle loop, \
                  while a load from memory still costs a few hundred cycles";
    Finding::judged(
        &RESPONSIVENESS,
        ctx,
        "interference",
        Observed { here, unit: "x", detail, rows: rows_words },
        (11.0, f64::INFINITY),
        reason,
    )
    .read_from_rows(&rows)
}
