//! The contention experiment's part of the recommendation: the best lock for short and long
//! critical sections, with and without oversubscription.

use super::figures::{cs_ns, sections, Sections};
use crate::experiments::floor;
use crate::reading::advice::{Advice, Compared, Figure, Margin, RunnerUp, Unit};
use crate::reading::caveat::{self, Caveat};
use crate::reading::scorecard::Estimate;
use crate::reading::Context;
use crate::results::format::{duration_words, number};
use crate::results::rows::{ContentionRow, FloorRow, Nullable, Transfers};
use crate::results::Run;
use crate::select;

/// The best lock per critical-section length, with threads within and above the CPUs.
pub(super) fn best_locks(ctx: &Context<'_>) -> Vec<Advice> {
    let mut out = Vec::new();
    let contention: Vec<&Run> = ctx.runs_of("contention");
    let Sections { empty, shortest, longest } = sections(&contention);
    let why_no_contention = ctx.missing_reason("contention");
    let lengths = [
        ("empty", empty, "not measured: no contention run with an empty critical section (--cs-ns 0)"),
        ("short", shortest, "not measured: no contention run with work in its critical section (--cs-ns above 0)"),
        ("long", longest, "not measured: no contention run with a critical section of 1 µs or more"),
    ];
    for (length, run, not_run) in lengths {
        for oversubscribed in [false, true] {
            let (threads, brief) = if oversubscribed {
                ("threads > CPUs (oversubscribed)", "> CPUs")
            } else {
                ("threads <= CPUs", "<= CPUs")
            };
            let situation = format!("{length} critical section, {threads}");
            let brief = format!("{length} cs, {brief}");
            out.push(match run {
                None if !contention.is_empty() => Advice::missing(&situation, &brief, not_run.to_string()),
                None => Advice::missing(&situation, &brief, why_no_contention.clone()),
                Some(run) => best_lock(ctx, run, (&situation, &brief), oversubscribed),
            });
        }
    }
    out
}

/// The floor's `yield-forfeit` in the document, if it was measured: its run, and the figure
/// (ns) with its interval.
pub(super) fn yield_forfeit<'a>(ctx: &Context<'a>) -> Option<(&'a Run, Estimate)> {
    ctx.runs_of("floor").into_iter().find_map(|run| {
        let row = run.rows_as::<FloorRow>().into_iter().find(|r| r.measure.as_deref() == Some(floor::YIELD_FORFEIT))?;
        Some((run, Estimate::of(row.ns, row.ci95_ns.get())?))
    })
}

/// The reference locks a tie is resolved towards, in order: what people already use.
pub(super) const PREFERRED_REFERENCES: [&str; 3] = ["std", "parking_lot", "pthread"];

/// A measured lock of a contention run: its row, and its throughput with the interval (none
/// where the row has none: one repetition).
pub(super) struct Measured {
    row: ContentionRow,
    throughput: Estimate,
}

impl Measured {
    /// Every row of `run` with a throughput.
    fn of(run: &Run) -> Vec<Measured> {
        run.measured_as::<ContentionRow>()
            .into_iter()
            .filter_map(|row| {
                let throughput = Estimate::of(row.throughput_ops_s, row.throughput_ci95_ops_s.get())?;
                Some(Measured { row, throughput })
            })
            .collect()
    }

    fn name(&self) -> &str {
        self.row.lock.as_deref().unwrap_or("?")
    }

    fn is_reference(&self) -> bool {
        self.row.origin.as_deref() == Some("reference")
    }

    /// The row's paired ratio of throughput to reference lock `name`, with its interval.
    fn vs_reference(&self, name: &str) -> Option<Estimate> {
        let r = &self.row;
        let (value, ci95): (Option<f64>, Nullable<f64>) = match name {
            "std" => (r.throughput_vs_std, r.throughput_vs_std_ci95),
            "parking_lot" => (r.throughput_vs_parking_lot, r.throughput_vs_parking_lot_ci95),
            "pthread" => (r.throughput_vs_pthread, r.throughput_vs_pthread_ci95),
            _ => return None,
        };
        Some(Estimate::within(value?, ci95.get()?))
    }
}

/// How much faster `best` measured than `other`: the ratio of their rounds, paired, where the
/// row carries it (`throughput_vs_REFERENCE`, which leaves out the drift the rounds share),
/// else the ratio of the two means with both intervals.
fn margin_over(best: &Measured, other: &Measured, tied: bool) -> Option<Margin> {
    let paired = Some(other.name()).filter(|_| other.is_reference()).and_then(|name| best.vs_reference(name));
    match paired {
        Some(by) if by.value.is_finite() && by.bounded() => Some(Margin { by, compared: Compared::Times, tied }),
        _ => Margin::higher(&best.throughput, &other.throughput, tied),
    }
}

/// The thread count a line reads: within the CPUs, the most threads that still fit
/// (contended: 2 or more); oversubscribed, twice the CPUs where measured, else the least
/// oversubscription measured. `Err`: why there is none.
fn thread_count(ctx: &Context<'_>, rows: &[Measured], oversubscribed: bool) -> Result<f64, String> {
    let counts: Vec<f64> = {
        let mut c: Vec<f64> = rows.iter().filter_map(|r| r.row.threads).map(|t| t as f64).collect();
        c.sort_by(f64::total_cmp);
        c.dedup();
        c
    };
    let cpus = ctx.cpus as f64;
    let n = if oversubscribed {
        counts.iter().copied().find(|&t| t == 2.0 * cpus).or_else(|| counts.iter().copied().find(|&t| t > cpus))
    } else {
        counts.iter().rev().copied().find(|&t| t <= cpus && t >= 2.0)
    };
    n.ok_or_else(|| {
        if oversubscribed {
            format!("not measured: no contention run had more threads than the {} CPUs", ctx.cpus)
        } else {
            format!("not measured: with {} usable CPU(s) no contended thread count fits within the CPUs", ctx.cpus)
        }
    })
}

/// The lock a line names among `listed` (in the run's order), and the locks tied with the
/// fastest, in that order.
fn choose<'a>(listed: &[&'a Measured], fastest: &'a Measured) -> (&'a Measured, Vec<&'a Measured>) {
    // Locks whose interval reaches the fastest's are a tie on this run; among them the choice
    // follows a fixed order, so that reruns that differ only by noise name the same lock:
    // spinlab's default, then the reference locks people already use, then the first lock with
    // a fairness guarantee (its `bound` is not "none": equal speed, and no starvation) in the
    // order the run measured them, then the first in that order. Never the fastest of a tie:
    // within the intervals, which one that is is noise.
    let ties = |r: &&Measured| fastest.throughput.low() <= r.throughput.high();
    // The tied locks in the run's order (the order the choice and the line's words follow).
    let tied: Vec<&'a Measured> = listed.iter().copied().filter(ties).collect();
    let named = |name: &str| tied.iter().copied().find(|r| r.name() == name);
    let guaranteed = || tied.iter().copied().find(|r| r.row.bound.as_deref().is_some_and(|b| b != "none"));
    let best = std::iter::once(select::DEFAULT_LOCK)
        .chain(PREFERRED_REFERENCES)
        .find_map(named)
        .or_else(guaranteed)
        .or_else(|| tied.first().copied())
        .unwrap_or(fastest);
    (best, tied)
}

/// The choice against the best reference lock other than itself (`t`: its throughput).
fn reference_words(at: &[&Measured], best: &Measured, t: f64) -> String {
    let mut why = String::new();
    if let Some(reference) = at.iter().find(|r| r.is_reference() && !std::ptr::eq(**r, best)) {
        let rt = reference.throughput.value;
        if rt > 0.0 {
            let which = if best.is_reference() { "the next reference lock" } else { "the best reference lock" };
            why.push_str(&format!("; {:.2}x {which} ({}, {})", t / rt, reference.name(), number(rt)));
        }
    } else if best.is_reference() {
        why.push_str("; no spinlab lock beat it");
    }
    why
}

/// With more threads than CPUs, the yield forfeit's words and the floor run's load caveat.
fn yield_words(ctx: &Context<'_>, oversubscribed: bool) -> (String, Option<Caveat>) {
    // With more threads than CPUs, what a waiter's yield costs it here: where the kernel
    // charges a yielder the rest of its time slice, waiting that yields makes the threads' CPU
    // time, and their acquisitions with it, less even than the scheduler alone would
    // (docs/floor.md, `yield-forfeit`). The floor's load comes with the figure as a caveat; a
    // move of the line transfer does not bear on two threads sharing one CPU.
    let mut why = String::new();
    let mut floor_caveat = None;
    if let Some((run, forfeit)) = oversubscribed.then(|| yield_forfeit(ctx)).flatten() {
        // Within its interval of zero, the figure says nothing was charged.
        let cost = if forfeit.low() > 0.0 {
            format!("{} of", duration_words(forfeit.value))
        } else {
            "no measurable".to_string()
        };
        why.push_str(&format!(
            "; each sched_yield here cost the yielding thread {cost} CPU time beside a busy one (floor: yield-forfeit)"
        ));
        floor_caveat = caveat::load_of(ctx, run);
    }
    (why, floor_caveat)
}

/// The other tied locks, and the rule that chose among them where it was not the fastest.
fn tie_words(tied: &[&Measured], best: &Measured, fastest: &Measured, name: &str) -> String {
    let mut why = String::new();
    let others: Vec<String> = tied
        .iter()
        .filter(|r| !std::ptr::eq(**r, best))
        .map(|r| format!("{} ({})", r.name(), number(r.throughput.value)))
        .collect();
    if !others.is_empty() {
        let rule = if std::ptr::eq(best, fastest) {
            String::new()
        } else {
            format!(
                ", and {name} comes first among tied locks (spinlab's default, then std, parking_lot, pthread, then \
                 the first with a fairness guarantee in the run's list of locks, then the first in that list)"
            )
        };
        why.push_str(&format!("; {} within the 95% intervals: a tie on this run{rule}", others.join(", ")));
    }
    why
}

/// The best lock of `run` for one line of the recommendation.
pub(super) fn best_lock(
    ctx: &Context<'_>,
    run: &Run,
    (situation, brief): (&str, &str),
    oversubscribed: bool,
) -> Advice {
    let rows = Measured::of(run);
    let n = match thread_count(ctx, &rows, oversubscribed) {
        Ok(n) => n,
        Err(why) => return Advice::missing(situation, brief, why),
    };
    // In the order the run measured them (its `--locks`), then sorted, fastest first.
    let listed: Vec<&Measured> = rows.iter().filter(|r| r.row.threads.map(|t| t as f64) == Some(n)).collect();
    let mut at = listed.clone();
    at.sort_by(|a, b| b.throughput.value.total_cmp(&a.throughput.value));
    let Some(&fastest) = at.first() else {
        return Advice::missing(situation, brief, "not measured".to_string());
    };
    let (best, tied) = choose(&listed, fastest);
    let name = best.name();
    let t = best.throughput.value;
    let mut why = format!("{} acquisitions/s at {n} threads", number(t));
    match cs_ns(run) {
        Some(0.0) => why.push_str(" with an empty critical section"),
        Some(ns) => why.push_str(&format!(" with a {} critical section", duration_words(ns))),
        None => {}
    }
    why.push_str(&reference_words(&at, best, t));
    // How evenly the choice served its threads, beside how evenly the scheduler alone shares
    // the CPUs out to the same threads: with more threads than CPUs no lock that serves the
    // running threads can be fairer than the latter.
    if let Some(jain) = best.row.jain.get() {
        why.push_str(&format!("; Jain {jain:.3} over its threads' acquisitions"));
        if let Some(alone) = best.row.jain_no_lock {
            why.push_str(&format!(" (the same threads with no lock: {alone:.3})"));
        }
    }
    let (yield_words, floor_caveat) = yield_words(ctx, oversubscribed);
    why.push_str(&yield_words);
    why.push_str(&tie_words(&tied, best, fastest, name));
    if let Some(u) = best.row.uncontended_ns {
        why.push_str(&format!("; {} ns per uncontended lock/unlock", number(u)));
    }
    // The runner-up: the fastest of the other locks, tied with the choice or not.
    let runner_up = at.iter().copied().find(|r| !std::ptr::eq(*r, best)).and_then(|other| {
        let margin = margin_over(best, other, tied.iter().any(|t| std::ptr::eq(*t, other)))?;
        let name = other.name().to_string();
        Some(RunnerUp { name, figure: Figure::new(other.throughput, Unit::Acquisitions, ""), margin })
    });
    let figure = Figure::new(best.throughput, Unit::Acquisitions, format!("at {n} threads"));
    let mut line = Advice::new(situation, brief, name.to_string(), why).chosen_by(figure, runner_up);
    line.caveats = caveat::of_row(ctx, run, &best.row);
    line.caveats.extend(floor_caveat);
    line.transfers = best.row.transfers();
    line
}
