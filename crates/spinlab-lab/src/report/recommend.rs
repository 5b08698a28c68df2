//! The recommendation: which lock and which wait policy for which situation, chosen from this
//! document's numbers, each with the measured figure that justifies it. Where the experiment
//! behind a line was not run or could not measure, the line says so instead of guessing.

use super::figures::{self, text, Context};
use crate::results::format::{duration_words, number};
use crate::results::{Row, Run};

/// One line of the recommendation.
#[derive(Clone, Debug, PartialEq)]
pub struct Advice {
    /// The situation: `short critical section, threads <= CPUs`.
    pub situation: String,
    /// What to use, or `no recommendation`.
    pub choice: String,
    /// Why, with the measured figure (or why there is none).
    pub why: String,
}

impl Advice {
    fn missing(situation: &str, why: String) -> Advice {
        Advice { situation: situation.to_string(), choice: "no recommendation".to_string(), why }
    }
}

/// The recommendation for the document behind `ctx`.
pub fn recommend(ctx: &Context<'_>) -> Vec<Advice> {
    let mut out = Vec::new();
    let contention: Vec<&Run> = ctx.results.runs.iter().filter(|r| r.experiment == "contention").collect();
    let cs = |run: &&Run| run.params.get("cs_ns").and_then(|v| v.as_f64()).unwrap_or(0.0);
    let short = contention.iter().min_by(|a, b| cs(a).total_cmp(&cs(b)));
    let long = contention.iter().filter(|r| cs(r) >= 1000.0).max_by(|a, b| cs(a).total_cmp(&cs(b)));
    let why_no_contention = missing_reason(ctx, "contention");
    for (length, run) in [("short", short), ("long", long.filter(|l| short.is_none_or(|s| !std::ptr::eq(*s, **l))))] {
        for oversubscribed in [false, true] {
            let situation = format!(
                "{length} critical section, {}",
                if oversubscribed { "threads > CPUs (oversubscribed)" } else { "threads <= CPUs" }
            );
            out.push(match run {
                None if length == "long" && short.is_some() => Advice::missing(
                    &situation,
                    "not measured: no contention run with a critical section of 1 µs or more".to_string(),
                ),
                None => Advice::missing(&situation, why_no_contention.clone()),
                Some(run) => best_lock(ctx, run, &situation, oversubscribed),
            });
        }
    }
    out.extend(co_runners(ctx));
    out.push(herd(ctx));
    out.push(barrier(ctx));
    out
}

/// Why an experiment has no usable rows: not run, or every configuration skipped.
fn missing_reason(ctx: &Context<'_>, experiment: &str) -> String {
    let rows: Vec<&Row> =
        ctx.results.runs.iter().filter(|r| r.experiment == experiment).flat_map(|r| r.rows.iter()).collect();
    if rows.is_empty() {
        return format!("not measured: the {experiment} experiment was not run");
    }
    match rows.iter().find_map(|r| text(r, "skipped")) {
        Some(why) if rows.iter().all(|r| r.is_skipped()) => format!("not measured: {experiment} was skipped ({why})"),
        _ => format!("not measured: {experiment} has no rows with the figures this needs"),
    }
}

fn is_reference(row: &Row) -> bool {
    text(row, "origin") == Some("reference")
}

/// Half-width of the 95% interval of a row's throughput (0 when unknown).
fn ci(row: &Row) -> f64 {
    row.number("throughput_ci95_ops_s").unwrap_or(0.0)
}

fn best_lock(ctx: &Context<'_>, run: &Run, situation: &str, oversubscribed: bool) -> Advice {
    let rows: Vec<&Row> =
        run.rows.iter().filter(|r| !r.is_skipped() && r.number("throughput_ops_s").is_some()).collect();
    let counts: Vec<f64> = {
        let mut c: Vec<f64> = rows.iter().filter_map(|r| r.number("threads")).collect();
        c.sort_by(f64::total_cmp);
        c.dedup();
        c
    };
    let cpus = ctx.cpus as f64;
    // Threads <= CPUs: the most threads that still fit (contended: 2 or more). Oversubscribed:
    // twice the CPUs where measured, else the least oversubscription measured.
    let n = if oversubscribed {
        counts.iter().copied().find(|&t| t == 2.0 * cpus).or_else(|| counts.iter().copied().find(|&t| t > cpus))
    } else {
        counts.iter().rev().copied().find(|&t| t <= cpus && t >= 2.0)
    };
    let Some(n) = n else {
        return Advice::missing(
            situation,
            if oversubscribed {
                format!("not measured: no contention run had more threads than the {} CPUs", ctx.cpus)
            } else {
                format!("not measured: with {} usable CPU(s) no contended thread count fits within the CPUs", ctx.cpus)
            },
        );
    };
    let mut at: Vec<&Row> = rows.iter().copied().filter(|r| r.number("threads") == Some(n)).collect();
    at.sort_by(|a, b| {
        b.number("throughput_ops_s").unwrap_or(0.0).total_cmp(&a.number("throughput_ops_s").unwrap_or(0.0))
    });
    let Some(best) = at.first() else {
        return Advice::missing(situation, "not measured".to_string());
    };
    let name = text(best, "lock").unwrap_or("?");
    let t = best.number("throughput_ops_s").unwrap_or(0.0);
    let mut why = format!("{} acquisitions/s at {n} threads", number(t));
    if let Some(cs_ns) = run.params.get("cs_ns").and_then(|v| v.as_f64()) {
        why.push_str(&format!(" with a {} critical section", duration_words(cs_ns)));
    }
    if let Some(reference) = at.iter().find(|r| is_reference(r) && !std::ptr::eq(**r, *best)) {
        let rt = reference.number("throughput_ops_s").unwrap_or(0.0);
        if rt > 0.0 {
            let which = if is_reference(best) { "the next reference lock" } else { "the best reference lock" };
            why.push_str(&format!(
                "; {:.2}x {which} ({}, {})",
                t / rt,
                text(reference, "lock").unwrap_or("?"),
                number(rt)
            ));
        }
    } else if is_reference(best) {
        why.push_str("; no spinlab lock beat it");
    }
    if let Some(second) = at.get(1) {
        let s = second.number("throughput_ops_s").unwrap_or(0.0);
        if t - ci(best) <= s + ci(second) {
            why.push_str(&format!(
                "; {} ({}) is within the 95% intervals: a tie on this run",
                text(second, "lock").unwrap_or("?"),
                number(s)
            ));
        }
    }
    if let Some(u) = best.number("uncontended_ns") {
        why.push_str(&format!("; {} ns per uncontended lock/unlock", number(u)));
    }
    Advice { situation: situation.to_string(), choice: name.to_string(), why }
}

fn co_runners(ctx: &Context<'_>) -> Vec<Advice> {
    let sensitive = "co-runners sensitive (waiters share a core or CPU with threads doing work)";
    let not_sensitive = "co-runners not sensitive, wake-up latency matters";
    let Some((placement, points, what)) = figures::tradeoff(ctx) else {
        let why = format!(
            "not measured: no placement had two or more wait policies with both a wake-up latency and an \
             interference figure ({}; {})",
            missing_reason(ctx, "wakeup"),
            missing_reason(ctx, "interference")
        );
        return vec![Advice::missing(sensitive, why.clone()), Advice::missing(not_sensitive, why)];
    };
    // The kindest policy; among those within one percentage point of it, the quickest.
    let least = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let kind = points
        .iter()
        .filter(|p| p.1 <= least + 1.0)
        .min_by(|a, b| a.2.total_cmp(&b.2))
        .expect("tradeoff returns at least two points");
    let quick = points.iter().min_by(|a, b| a.2.total_cmp(&b.2)).expect("tradeoff returns at least two points");
    let describe =
        |p: &(String, f64, f64)| format!("{:.1}% {what}, wake-up {}, at {placement}", p.1, duration_words(p.2));
    let worst = points.iter().max_by(|a, b| a.1.total_cmp(&b.1)).expect("at least two points");
    vec![
        Advice {
            situation: sensitive.to_string(),
            choice: format!("wait policy {}", kind.0),
            why: format!("{}; the worst here, {}, costs {:.1}%", describe(kind), worst.0, worst.1),
        },
        Advice {
            situation: not_sensitive.to_string(),
            choice: format!("wait policy {}", quick.0),
            why: if quick.0 == kind.0 {
                format!("{}; also the kindest to co-runners here", describe(quick))
            } else {
                format!("{}; {} wakes in {}", describe(quick), kind.0, duration_words(kind.2))
            },
        },
    ]
}

fn herd(ctx: &Context<'_>) -> Advice {
    let situation = "many threads released at once (a herd), oversubscribed";
    let rows: Vec<&Row> = ctx
        .results
        .runs
        .iter()
        .filter(|r| r.experiment == "herd")
        .flat_map(|r| r.rows.iter())
        .filter(|r| !r.is_skipped() && r.number("wall_s").is_some())
        .collect();
    let Some(n) = rows.iter().filter_map(|r| r.number("threads")).reduce(f64::max) else {
        return Advice::missing(situation, missing_reason(ctx, "herd"));
    };
    let mut at: Vec<&Row> = rows.into_iter().filter(|r| r.number("threads") == Some(n)).collect();
    at.sort_by(|a, b| a.number("wall_s").unwrap_or(f64::MAX).total_cmp(&b.number("wall_s").unwrap_or(f64::MAX)));
    let best = at[0];
    let worst = at[at.len() - 1];
    let wall = best.number("wall_s").unwrap_or(0.0);
    let mut why = format!("{} s wall at {n} threads", number(wall));
    if let Some(sys) = best.number("sys_s") {
        why.push_str(&format!(" ({} s system time)", number(sys)));
    }
    if !std::ptr::eq(best, worst) {
        why.push_str(&format!(
            "; {} took {} s ({:.1}x)",
            text(worst, "lock").unwrap_or("?"),
            number(worst.number("wall_s").unwrap_or(0.0)),
            worst.number("wall_s").unwrap_or(0.0) / wall.max(1e-12)
        ));
    }
    Advice { situation: situation.to_string(), choice: text(best, "lock").unwrap_or("?").to_string(), why }
}

fn barrier(ctx: &Context<'_>) -> Advice {
    let situation = "a barrier between threads with unequal work";
    let rows: Vec<&Row> = ctx
        .results
        .runs
        .iter()
        .filter(|r| r.experiment == "barrier")
        .flat_map(|r| r.rows.iter())
        .filter(|r| !r.is_skipped() && r.number("completion_s").is_some())
        .collect();
    let barriers = {
        let mut b: Vec<&str> = rows.iter().filter_map(|r| text(r, "barrier")).collect();
        b.dedup();
        b.sort_unstable();
        b.dedup();
        b
    };
    let mean_of = |b: &str| -> f64 {
        let v: Vec<f64> =
            rows.iter().filter(|r| text(r, "barrier") == Some(b)).filter_map(|r| r.number("completion_s")).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let Some(best) = barriers.iter().copied().min_by(|a, b| mean_of(a).total_cmp(&mean_of(b))) else {
        return Advice::missing(situation, missing_reason(ctx, "barrier"));
    };
    let worst = barriers.iter().copied().max_by(|a, b| mean_of(a).total_cmp(&mean_of(b))).unwrap_or(best);
    let mut why = format!("{} s mean completion over the light-thread loads measured", number(mean_of(best)));
    if worst != best {
        why.push_str(&format!("; {worst}: {} s", number(mean_of(worst))));
    }
    Advice { situation: situation.to_string(), choice: format!("barrier {best}"), why }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Results;

    fn contention_run(cs_ns: u64, rows: &[(&str, &str, u64, f64)]) -> Run {
        let mut run = Run::new("contention");
        run.param("cs_ns", cs_ns);
        for &(lock, origin, threads, t) in rows {
            run.rows.push(
                Row::new()
                    .with("lock", lock)
                    .with("origin", origin)
                    .with("threads", threads)
                    .with("throughput_ops_s", t)
                    .with("throughput_ci95_ops_s", t * 0.01),
            );
        }
        run
    }

    #[test]
    fn the_lock_chosen_is_the_measured_best_and_missing_data_is_named() {
        let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        results.runs.push(contention_run(
            100,
            &[
                ("ttas:spin", "spinlab", 2, 9e6),
                ("std", "reference", 2, 6e6),
                ("ttas:spin", "spinlab", 4, 1e5),
                ("std", "reference", 4, 5e6),
            ],
        ));
        let ctx = Context::new(&results);
        let advice = recommend(&ctx);
        assert_eq!(advice[0].choice, "ttas:spin");
        assert!(advice[0].why.contains("1.50x the best reference lock (std"), "{}", advice[0].why);
        assert_eq!(advice[1].choice, "std");
        assert!(advice[2].why.contains("no contention run with a critical section of 1 µs"), "{:?}", advice[2]);
        let co = advice.iter().find(|a| a.situation.starts_with("co-runners sensitive")).unwrap();
        assert!(co.why.contains("wakeup experiment was not run"), "{}", co.why);
        assert!(advice.iter().any(|a| a.why.contains("herd experiment was not run")));
    }
}
