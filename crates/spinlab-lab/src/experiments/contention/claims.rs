//! The seeds' claims the contention rows speak to: seed 003's fair lock against the spin
//! lock, uncontended and contended, by node, and its waits against its holds.

use super::figures::{cs_ns, sections, Sections};
use crate::reading::scorecard::{
    needs, words, Claim, Estimate, Finding, MachineState, Observed, Remeasure, Verdict as Judged,
};
use crate::reading::Context;
use crate::results::format::{duration_words, section_words};
use crate::results::rows::ContentionRow;
use crate::results::Run;

pub(super) const FAIR_UNCONTENDED: Claim = Claim {
    id: "003-fairlock-uncontended-cost",
    seed: "003",
    source: "§6.2, Table 3",
    claim: "uncontended, the fairlock costs about twice a spinlock",
    paper: "5 910 851 µs against 2 937 928 µs for 10^8 lock/unlock pairs by one thread (2.01x)",
    needs: &[],
    remeasure: Some(Remeasure {
        experiment: "contention",
        options: &[("locks", "ttas:spin,fair:spin"), ("threads", "cpus")],
    }),
};

pub(super) const FAIR_THROUGHPUT: Claim = Claim {
    id: "003-fairlock-throughput",
    seed: "003",
    source: "§6.2, Fig. 8",
    claim: "under contention the fairlock keeps most of a spinlock's throughput",
    paper: "64% of the spinlock's throughput on average, 2 to 8 threads pinned one per CPU (2-quad 8-way NUMA-Q)",
    needs: &[],
    remeasure: Some(Remeasure {
        experiment: "contention",
        options: &[("locks", "ttas:spin,fair:spin"), ("threads", "cpus")],
    }),
};

pub(super) const SPINLOCK_FAVOURS_NODE: Claim = Claim {
    id: "003-spinlock-favours-node",
    seed: "003",
    source: "§6.1, Table 1",
    claim: "a spinlock favours the CPUs of one node",
    paper: "quad 0's two threads acquired it 30 times as often as quad 1's (4 threads, two per quad; 4x with 8)",
    needs: &[needs::NUMA],
    remeasure: None,
};

pub(super) const MAX_WAIT_RATIO: Claim = Claim {
    id: "003-max-wait-spinlock-vs-fairlock",
    seed: "003",
    source: "§6.3, Table 4",
    claim: "a spinlock's longest wait is far longer than the fairlock's",
    paper: "two thousand times longer (the kernel's runqueue_lock under the Reflex benchmark, lockmeter)",
    needs: &[],
    remeasure: Some(Remeasure {
        experiment: "contention",
        options: &[("locks", "ttas:spin,fair:spin"), ("threads", "cpus")],
    }),
};

pub(super) const FAIR_WAIT_VS_HOLD: Claim = Claim {
    id: "003-fairlock-max-wait-vs-hold",
    seed: "003",
    source: "§6.3",
    claim: "the fairlock's longest wait stays a small multiple of its longest hold",
    paper: "a little more than three times the longest hold (runqueue_lock, Reflex)",
    needs: &[],
    remeasure: Some(Remeasure {
        experiment: "contention",
        options: &[("locks", "ttas:spin,fair:spin"), ("threads", "cpus")],
    }),
};

/// The spinlock seed 003 measured against (Linux's spinlock: test and test-and-set).
pub(super) const SPINLOCK: &str = "ttas:spin";

/// Whether `lock` names seed 003's fairlock: a `fair:` registry entry that hands over in order.
pub(super) fn is_seed_fairlock(lock: &str) -> bool {
    lock.starts_with("fair:") && spinlab_registry::LOCKS.info(lock).is_ok_and(|entry| entry.facts.fair)
}

/// One contention run, read at one thread per CPU (every CPU contending, as in seed 003's
/// measurements).
pub(super) struct OnePerCpu<'a> {
    pub(super) run: Option<&'a Run>,
    pub(super) threads: u64,
    rows: Vec<ContentionRow>,
}

/// A figure of a contention row a claim compares: its key, and the figure with its interval.
pub(super) type Figure = (&'static str, fn(&ContentionRow) -> Option<Estimate>);

/// One lock/unlock pair by one thread.
pub(super) const UNCONTENDED: Figure =
    ("uncontended_ns", |r| Estimate::of(r.uncontended_ns, r.uncontended_ci95_ns.get()));
/// Acquisitions per second.
pub(super) const THROUGHPUT: Figure =
    ("throughput_ops_s", |r| Estimate::of(r.throughput_ops_s, r.throughput_ci95_ops_s.get()));
/// Each repetition's longest wait, as a mean over them.
pub(super) const REP_MAX_WAIT: Figure =
    ("rep_max_wait_ns", |r| Estimate::of(r.rep_max_wait_ns, r.rep_max_wait_ci95_ns.get()));

impl<'a> OnePerCpu<'a> {
    /// The run with the shortest (`longest == false`) critical section that has work in it
    /// (an empty one only where no other was run), or the longest.
    pub(super) fn pick(ctx: &Context<'a>, longest: bool) -> OnePerCpu<'a> {
        let runs = ctx.runs_of("contention");
        let run = if longest {
            runs.iter().filter_map(|r| Some((*r, cs_ns(r)?))).max_by(|a, b| a.1.total_cmp(&b.1)).map(|r| r.0)
        } else {
            let Sections { empty, shortest, .. } = sections(&runs);
            shortest.or(empty)
        };
        let rows = run.map(|r| r.rows_as::<ContentionRow>()).unwrap_or_default();
        OnePerCpu { run, threads: ctx.cpus as u64, rows }
    }

    pub(super) fn row(&self, lock: &str) -> Option<&ContentionRow> {
        self.rows
            .iter()
            .find(|r| r.skipped.is_none() && r.lock.as_deref() == Some(lock) && r.threads == Some(self.threads))
    }

    /// Seed 003's fairlock: the first `fair:POLICY` lock measured that hands the lock over in
    /// round-robin order (`fair:spin` in the report). Over a policy whose waiters give their
    /// CPU away (one that may sleep, or `yield`) the registry builds the fair lock as a gate in
    /// front of a word that running threads may take (`lock::Gated`): a different lock, with
    /// a different cost and fairness, so it does not stand for the seed's.
    pub(super) fn fairlock(&self) -> Option<&ContentionRow> {
        let name = self.rows.iter().filter_map(|r| r.lock.as_deref()).find(|l| is_seed_fairlock(l))?;
        self.row(name)
    }

    /// Why no fairlock figure can be read: the run is missing, or it measured no lock that is
    /// seed 003's fairlock (only gated fair locks, say).
    pub(super) fn no_fairlock(&self, ctx: &Context<'_>) -> Judged {
        if self.run.is_none() {
            return Judged::NotMeasured(ctx.missing_reason("contention"));
        }
        let gated = self.rows.iter().filter_map(|r| r.lock.as_deref()).find(|l| l.starts_with("fair:"));
        let mut why = "not measured: the contention run has no lock that hands over as seed 003's fairlock does \
                       (fair:spin, or fair over another spinning policy)"
            .to_string();
        if let Some(first) = gated {
            why.push_str(&format!(
                "; {first} is the fair lock as a gate in front of a word that running threads may take, another lock"
            ));
        }
        Judged::NotMeasured(why)
    }

    pub(super) fn words(&self, figure: &str) -> String {
        // A run that does not say its critical section is not called empty.
        let section = self.run.and_then(cs_ns).map_or("critical section not recorded".to_string(), section_words);
        format!("contention, {SPINLOCK} and the fairlock, {} threads (one per CPU), {section}: {figure}", self.threads)
    }
}

/// `figure` of the fairlock over the spinlock's (or the spinlock's over the fairlock's).
pub(super) fn fair_vs_spin(
    ctx: &Context<'_>,
    claim: &Claim,
    at: &OnePerCpu<'_>,
    (key, figure): Figure,
    fair_over_spin: bool,
    range: (f64, f64),
    reason: &str,
) -> Finding {
    let rows = at.words(key);
    let Some(fair) = at.fairlock() else {
        return Finding::without(claim, &rows, at.no_fairlock(ctx));
    };
    let Some(spin) = at.row(SPINLOCK) else {
        return Finding::without(claim, &rows, Judged::NotMeasured(ctx.missing_reason("contention")));
    };
    let (Some(f), Some(s)) = (figure(fair), figure(spin)) else {
        return Finding::without(claim, &rows, Judged::NotMeasured(ctx.missing_reason("contention")));
    };
    let Some(here) = (if fair_over_spin { f.ratio(&s) } else { s.ratio(&f) }) else {
        return Finding::without(claim, &rows, Judged::NotMeasured(format!("a {key} of zero")));
    };
    let detail = format!("{} {}, {SPINLOCK} {}", fair.lock.as_deref().unwrap_or("fair"), words(&f, ""), words(&s, ""));
    Finding::judged(claim, ctx, "contention", Observed { here, unit: "x", detail, rows }, range, reason).read_from(fair)
}

/// The uncontended floor measured in the same rounds as the fairlock's uncontended pair:
/// uncontended costs follow what an atomic costs on this machine at that time.
pub(super) fn uncontended_floor(at: &OnePerCpu<'_>) -> Option<MachineState> {
    let fair = at.fairlock()?;
    let estimate = Estimate::of(fair.uncontended_floor_ns, fair.uncontended_floor_ci95_ns.get())?;
    Some(MachineState { name: "uncontended floor", unit: "ns", estimate })
}

/// The spinlock's busiest group of CPUs over its idlest, where the groups are NUMA nodes.
pub(super) fn node_favoured(ctx: &Context<'_>, at: &OnePerCpu<'_>) -> Finding {
    let rows = at.words("group_max_min_ratio of the spinlock, threads grouped by node");
    let by_node = at.run.and_then(|r| r.known_params().groups_by).as_deref() == Some("node");
    if at.run.is_some() && !by_node {
        let why = "one NUMA node: there is no second node to be favoured over".to_string();
        return Finding::without(&SPINLOCK_FAVOURS_NODE, &rows, Judged::CannotTest(why));
    }
    let Some((spin, value)) = at.row(SPINLOCK).and_then(|r| Some((r, r.group_max_min_ratio.get()?))) else {
        return Finding::without(&SPINLOCK_FAVOURS_NODE, &rows, Judged::NotMeasured(ctx.missing_reason("contention")));
    };
    let here = Estimate::exact(value);
    let reason = "today's interconnects hand a line to a remote node at a smaller multiple of a local hand-off";
    let declared = at.run.and_then(|r| r.known_params().groups_declared).unwrap_or(false);
    let detail = if declared {
        "nodes declared by SPINLAB_TOPOLOGY, not the machine's: this tests the lock's order between two groups of CPUs, not an interconnect".to_string()
    } else {
        String::new()
    };
    let observed = Observed { here, unit: "x", detail, rows };
    Finding::judged(&SPINLOCK_FAVOURS_NODE, ctx, "contention", observed, (10.0, f64::INFINITY), reason).read_from(spin)
}

/// The fairlock's longest wait over its longest hold.
pub(super) fn fair_wait_vs_hold(ctx: &Context<'_>, at: &OnePerCpu<'_>) -> Finding {
    let rows =
        at.words("rep_max_wait_over_hold_x of the fairlock (each repetition's longest wait over its longest hold)");
    let Some(fair) = at.fairlock() else {
        return Finding::without(&FAIR_WAIT_VS_HOLD, &rows, at.no_fairlock(ctx));
    };
    let (Some(here), Some(wait), Some(hold)) = (
        Estimate::of(fair.rep_max_wait_over_hold_x, fair.rep_max_wait_over_hold_ci95_x.get()),
        fair.rep_max_wait_ns,
        fair.rep_max_hold_ns,
    ) else {
        return Finding::without(&FAIR_WAIT_VS_HOLD, &rows, Judged::NotMeasured(ctx.missing_reason("contention")));
    };
    let detail =
        format!("longest wait {}, longest hold {} per repetition (means)", duration_words(wait), duration_words(hold));
    let reason = "a thread preempted while it holds or waits for the lock (other work on these CPUs, or more \
                  threads than CPUs) sets both maxima, not the hand-over order";
    Finding::judged(
        &FAIR_WAIT_VS_HOLD,
        ctx,
        "contention",
        Observed { here, unit: "x", detail, rows },
        (0.0, 6.0),
        reason,
    )
    .read_from(fair)
}

/// Seed 003's claims: cost and throughput from the run with the shortest critical section,
/// waits and holds from the one with the longest.
pub(super) fn fairlock_claims(ctx: &Context<'_>) -> Vec<Finding> {
    let short = OnePerCpu::pick(ctx, false);
    let long = OnePerCpu::pick(ctx, true);
    vec![
        fair_vs_spin(
            ctx,
            &FAIR_UNCONTENDED,
            &short,
            UNCONTENDED,
            true,
            (1.5, 3.0),
            "the fairlock releases with a read-modify-write where the spinlock stores, so the ratio is what a core charges for one such atomic against a plain store",
        )
        .beside(uncontended_floor(&short)),
        fair_vs_spin(
            ctx,
            &FAIR_THROUGHPUT,
            &short,
            THROUGHPUT,
            true,
            (0.45, 0.9),
            "with few CPUs the round-robin hand-over moves the line between as few caches as the spinlock's",
        ),
        node_favoured(ctx, &short),
        fair_vs_spin(
            ctx,
            &MAX_WAIT_RATIO,
            &long,
            REP_MAX_WAIT,
            false,
            (200.0, f64::INFINITY),
            "with one thread per CPU on few CPUs a spinlock has few rivals to lose to; preemption sets both maxima",
        ),
        fair_wait_vs_hold(ctx, &long),
    ]
}
