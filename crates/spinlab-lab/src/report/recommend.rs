//! The recommendation: which lock and which wait policy for which situation, chosen from this
//! document's numbers, each with the measured figure that justifies it, the runner-up and the
//! margin between them. Every experiment contributes its own lines
//! ([`Experiment::advice`](crate::experiments::Experiment::advice)); they are listed by
//! [`Topic`](crate::reading::advice::Topic). Where the experiment behind a line was not run or
//! could not measure, the line says so instead of guessing. Where a run it read measured under
//! load or saw the machine change under it, the line carries that as a caveat, as the
//! scorecard's claims do.

use crate::experiments;
pub use crate::reading::advice::Advice;
use crate::reading::advice::Contribution;
pub use crate::reading::advice::NO_RECOMMENDATION;
use crate::reading::caveat;
use crate::reading::Context;

/// The recommendation for the document behind `ctx`.
pub fn recommend(ctx: &Context<'_>) -> Vec<Advice> {
    let mut parts: Vec<Contribution> = experiments::all().iter().filter_map(|e| e.advice(ctx)).collect();
    // Stable: lines of one topic keep the order of the experiments that gave them.
    parts.sort_by_key(|p| p.topic);
    parts
        .into_iter()
        .flat_map(|p| {
            // A contribution either reads experiments or has its lines name their own runs
            // (`reads` empty), so these never repeat a line's own caveats.
            let caveats = caveat::of_runs(ctx, p.reads.iter().flat_map(|e| ctx.runs_of(e)));
            p.lines.into_iter().map(move |mut line| {
                if line.choice != NO_RECOMMENDATION {
                    line.caveats.extend(caveats.iter().cloned());
                }
                line
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Results, Row, Run};

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

    fn texts(caveats: &[crate::reading::caveat::Caveat]) -> Vec<String> {
        caveats.iter().map(|c| c.text()).collect()
    }

    /// The line for a short critical section with threads <= CPUs.
    fn short_line(advice: Vec<Advice>) -> Advice {
        let short = advice.into_iter().find(|a| a.situation == "short critical section, threads <= CPUs");
        short.expect("a short critical section line")
    }

    #[test]
    fn an_empty_section_has_lines_of_its_own_and_the_short_lines_keep_the_shortest_with_work() {
        let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        results.runs.push(contention_run(0, &[("ttas:spin", "spinlab", 2, 9e6), ("std", "reference", 2, 6e6)]));
        results.runs.push(contention_run(100, &[("ttas:spin", "spinlab", 2, 3e6), ("std", "reference", 2, 4e6)]));
        results.runs.push(contention_run(10_000, &[("ttas:spin", "spinlab", 2, 5e4), ("std", "reference", 2, 9e4)]));
        let advice = recommend(&Context::new(&results));
        let line = |situation: &str| advice.iter().find(|a| a.situation == situation).unwrap();
        let empty = line("empty critical section, threads <= CPUs");
        assert_eq!(empty.choice, "ttas:spin", "{}", empty.why);
        assert!(empty.why.contains("9M acquisitions/s at 2 threads with an empty critical section"), "{}", empty.why);
        let short = line("short critical section, threads <= CPUs");
        assert_eq!(short.choice, "std", "the 100 ns run, not the empty one: {}", short.why);
        assert!(short.why.contains("with a 100 ns critical section"), "{}", short.why);
        let long = line("long critical section, threads <= CPUs");
        assert_eq!(long.choice, "std", "{}", long.why);
        assert!(long.why.contains("with a 10 µs critical section"), "{}", long.why);
        // With only an empty run, the short lines say what is missing rather than read it.
        let mut only_empty = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        only_empty.runs.push(contention_run(0, &[("ttas:spin", "spinlab", 2, 9e6)]));
        let advice = recommend(&Context::new(&only_empty));
        let short = advice.iter().find(|a| a.situation == "short critical section, threads <= CPUs").unwrap();
        assert_eq!(short.choice, NO_RECOMMENDATION);
        assert!(short.why.contains("no contention run with work in its critical section"), "{}", short.why);
    }

    #[test]
    fn a_tie_names_spinlabs_default_then_a_reference_so_reruns_agree() {
        let advice_for = |rows: &[(&str, &str, u64, f64)]| {
            let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
            results.runs.push(contention_run(100, rows));
            short_line(recommend(&Context::new(&results)))
        };
        // 1% intervals: 9.0M and 8.95M overlap, 8.0M does not.
        let tie = advice_for(&[
            ("fair:spin-park", "spinlab", 2, 9.0e6),
            ("adaptive:pause-yield-park", "spinlab", 2, 8.95e6),
            ("std", "reference", 2, 8.0e6),
        ]);
        assert_eq!(tie.choice, "adaptive:pause-yield-park", "{}", tie.why);
        assert!(tie.why.contains("fair:spin-park (9M) within the 95% intervals: a tie on this run"), "{}", tie.why);
        assert!(tie.why.contains("comes first among tied locks"), "{}", tie.why);
        // The structured line: the choice's figure, and the faster lock it tied with next.
        let figure = tie.figure.as_ref().unwrap();
        assert_eq!((figure.value.value, figure.words().as_str()), (8.95e6, "8.95M acquisitions/s at 2 threads"));
        let next = tie.runner_up.as_ref().unwrap();
        assert_eq!(next.name, "fair:spin-park");
        assert!(next.margin.tied && (next.margin.by.value - 8.95 / 9.0).abs() < 1e-9, "{:?}", next.margin);
        assert_eq!(next.margin.words(), "0.994x, within the interval");
        let reference = advice_for(&[("ttas:spin", "spinlab", 2, 9.0e6), ("parking_lot", "reference", 2, 8.95e6)]);
        assert_eq!(reference.choice, "parking_lot", "{}", reference.why);
        // Neither the default nor a reference in the tie: the first lock with a fairness
        // guarantee in the run's list, then the first in the list, whichever was faster.
        let tied_on = |rows: &[(&str, &str, f64)]| {
            let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
            let listed: Vec<(&str, &str, u64, f64)> = rows.iter().map(|&(l, _, t)| (l, "spinlab", 2, t)).collect();
            let mut run = contention_run(100, &listed);
            for (row, &(_, bound, _)) in run.rows.iter_mut().zip(rows) {
                row.set("bound", bound);
            }
            results.runs.push(run);
            short_line(recommend(&Context::new(&results)))
        };
        for (x, y, z) in [(9.0e6, 8.95e6, 8.93e6), (8.93e6, 8.95e6, 9.0e6), (8.95e6, 9.0e6, 8.93e6)] {
            let fair =
                tied_on(&[("ttas:spin", "none", x), ("ticket:spin", "FIFO", y), ("fair:spin", "round-robin", z)]);
            assert_eq!(fair.choice, "ticket:spin", "{}", fair.why);
            assert!(fair.why.contains("a tie on this run"), "{}", fair.why);
            let listed = tied_on(&[("ttas:spin", "none", x), ("tas:spin", "none", y), ("clh:spin", "none", z)]);
            assert_eq!(listed.choice, "ttas:spin", "{}", listed.why);
        }
        let clear =
            advice_for(&[("ttas:spin", "spinlab", 2, 9.0e6), ("adaptive:pause-yield-park", "spinlab", 2, 7.0e6)]);
        assert_eq!(clear.choice, "ttas:spin", "outside the intervals the fastest is named: {}", clear.why);
        let next = clear.runner_up.as_ref().unwrap();
        assert!(!next.margin.tied && next.margin.by.low() > 1.0, "{:?}", next.margin);
        assert!(next.margin.words().starts_with("1.29x ["), "{}", next.margin.words());
        assert!(!clear.why.contains("tie"), "{}", clear.why);
        assert!(!clear.why.contains("Jain"), "rows without an index say nothing of fairness: {}", clear.why);
    }

    #[test]
    fn a_margin_over_a_reference_lock_is_the_ratio_of_the_rounds_both_ran_in() {
        let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        let mut run = contention_run(100, &[("ttas:spin", "spinlab", 2, 9e6), ("std", "reference", 2, 6e6)]);
        run.rows[0].set("throughput_vs_std", 1.52);
        run.rows[0].set("throughput_vs_std_ci95", 0.01);
        results.runs.push(run);
        let line = short_line(recommend(&Context::new(&results)));
        let next = line.runner_up.expect("std came next");
        assert_eq!((next.name.as_str(), next.margin.by.value, next.margin.by.ci95()), ("std", 1.52, Some(0.01)));
        assert_eq!(next.margin.words(), "1.52x [1.51, 1.53]");
        // Without the paired ratio (an older document): the ratio of the two means.
        let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        results.runs.push(contention_run(100, &[("ttas:spin", "spinlab", 2, 9e6), ("std", "reference", 2, 6e6)]));
        let next = short_line(recommend(&Context::new(&results))).runner_up.unwrap();
        assert!((next.margin.by.value - 1.5).abs() < 1e-9 && next.margin.by.half_width() > 0.0, "{:?}", next.margin);
        // A line that recommends nothing has neither.
        let nothing = recommend(&Context::new(&results)).into_iter().find(|a| a.choice == NO_RECOMMENDATION).unwrap();
        assert!(nothing.figure.is_none() && nothing.runner_up.is_none(), "{nothing:?}");
    }

    #[test]
    fn a_lock_line_gives_the_choices_fairness_beside_the_schedulers() {
        let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        let mut run = contention_run(100, &[("ttas:spin", "spinlab", 4, 9e6), ("std", "reference", 4, 5e6)]);
        run.rows[0].set("jain", 0.9123);
        run.rows[0].set("jain_no_lock", 0.984);
        run.rows[1].set("jain", 0.5);
        results.runs.push(run);
        let advice = recommend(&Context::new(&results));
        let line = advice.iter().find(|a| a.situation.contains("oversubscribed") && a.situation.starts_with("short"));
        let line = line.expect("an oversubscribed line");
        assert_eq!(line.choice, "ttas:spin");
        assert!(
            line.why.contains("; Jain 0.912 over its threads' acquisitions (the same threads with no lock: 0.984)"),
            "{}",
            line.why
        );
        assert!(!line.why.contains("0.500"), "the chosen lock's index, not another's: {}", line.why);
        assert!(!line.why.contains("sched_yield"), "no floor run, no word of a yield's cost: {}", line.why);
    }

    #[test]
    fn an_oversubscribed_line_says_what_a_yield_cost_the_yielder() {
        use crate::results::{TRANSFER_AFTER_NS, TRANSFER_BEFORE_NS, UNDER_LOAD};
        // The floor's row, or none, and whether the floor ran under load.
        let with_forfeit = |forfeit: Option<Row>, loaded: bool| {
            let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
            results
                .runs
                .push(contention_run(100, &[("ttas:spin", "spinlab", 2, 9e6), ("ttas:spin", "spinlab", 4, 8e6)]));
            let mut floor = Run::new("floor");
            floor.rows.push(Row::new().with("measure", "sched-yield").with("ns", 800.0));
            floor.rows.extend(forfeit);
            if loaded {
                floor.param(UNDER_LOAD, "other processes used 35% of the CPUs");
            }
            floor.param(TRANSFER_BEFORE_NS, 40.0).param(TRANSFER_AFTER_NS, 200.0);
            results.runs.push(floor);
            let advice = recommend(&Context::new(&results));
            let line = |start: &str| advice.iter().find(|a| a.situation.starts_with(start)).unwrap().clone();
            (line("short critical section, threads > CPUs"), line("short critical section, threads <="))
        };
        let measured =
            |ns: f64, ci: f64| Some(Row::new().with("measure", "yield-forfeit").with("ns", ns).with("ci95_ns", ci));
        let (over, within) = with_forfeit(measured(1_184_000.0, 30_000.0), false);
        assert!(
            over.why.contains("; each sched_yield here cost the yielding thread 1.18 ms of CPU time beside a busy one"),
            "{}",
            over.why
        );
        assert!(over.caveats.is_empty(), "{:?}", over.caveats);
        assert!(!within.why.contains("sched_yield"), "only where threads outnumber CPUs: {}", within.why);
        // A figure whose interval holds zero, or below zero, is no cost.
        for (ns, ci) in [(5_000.0, 6_000.0), (5_000.0, 5_000.0), (-3_000.0, 1_000.0)] {
            let (over, _) = with_forfeit(measured(ns, ci), false);
            assert!(over.why.contains("cost the yielding thread no measurable CPU time"), "{ns} ± {ci}: {}", over.why);
        }
        // Not measured (skipped, or absent): nothing said.
        for row in [Some(Row::new().with("measure", "yield-forfeit").skipped("no repetition produced a value")), None] {
            let (over, _) = with_forfeit(row, false);
            assert!(!over.why.contains("sched_yield"), "{}", over.why);
        }
        // The floor's load comes with its figure; its line transfer's move does not (two
        // threads on one CPU move no line).
        let (over, within) = with_forfeit(measured(1_184_000.0, 30_000.0), true);
        assert_eq!(texts(&over.caveats), ["floor ran under load: other processes used 35% of the CPUs"]);
        assert_eq!(over.caveats[0].pass, Some(1), "the floor's run, a caveat of its whole pass");
        assert!(within.caveats.is_empty(), "{:?}", within.caveats);
    }

    #[test]
    fn a_line_whose_run_moved_or_ran_under_load_says_so() {
        use crate::results::{TRANSFER_AFTER_NS, TRANSFER_BEFORE_NS, UNDER_LOAD};
        let advice_for = |params: &[(&str, serde_json::Value)]| {
            let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
            let mut run = contention_run(100, &[("ttas:spin", "spinlab", 2, 9e6), ("std", "reference", 2, 6e6)]);
            for (key, value) in params {
                run.param(key, value);
            }
            results.runs.push(run);
            recommend(&Context::new(&results))
        };
        let still = advice_for(&[(TRANSFER_BEFORE_NS, 50.0.into()), (TRANSFER_AFTER_NS, 60.0.into())]);
        assert!(still.iter().all(|a| a.caveats.is_empty()), "{:?}", still[0]);
        let moved = advice_for(&[(TRANSFER_BEFORE_NS, 40.0.into()), (TRANSFER_AFTER_NS, 200.0.into())]);
        let short = short_line(moved.clone());
        assert_eq!(short.choice, "ttas:spin");
        assert_eq!(short.caveats.len(), 1, "{short:?}");
        let said = short.caveats[0].text();
        assert!(said.starts_with("the machine changed under contention: "), "{short:?}");
        assert!(said.contains("40 ns") && said.contains("200 ns"), "{short:?}");
        assert_eq!(short.caveats[0].pass, Some(0), "the run's move, a caveat of its whole pass");
        // Only the lines chosen from the run that moved, and never a line that chose nothing.
        let herd = moved.iter().find(|a| a.situation.contains("herd")).unwrap();
        assert!(herd.caveats.is_empty(), "{herd:?}");
        let long = moved.iter().find(|a| a.situation.starts_with("long critical section")).unwrap();
        assert!(long.choice == NO_RECOMMENDATION && long.caveats.is_empty(), "{long:?}");
        // Two contention runs: a line carries the caveats of the run it was chosen from.
        let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        for (cs_ns, after) in [(100, 200.0), (10_000, 45.0)] {
            let mut run = contention_run(cs_ns, &[("ttas:spin", "spinlab", 2, 9e6), ("std", "reference", 2, 6e6)]);
            run.param(TRANSFER_BEFORE_NS, 40.0).param(TRANSFER_AFTER_NS, after);
            results.runs.push(run);
        }
        let both = recommend(&Context::new(&results));
        let short = both.iter().find(|a| a.situation.starts_with("short critical section, threads <=")).unwrap();
        let long = both.iter().find(|a| a.situation.starts_with("long critical section, threads <=")).unwrap();
        assert_eq!((short.caveats.len(), long.caveats.len()), (1, 0), "{short:?}\n{long:?}");
        assert_eq!(long.choice, "ttas:spin", "the long line recommends, from the run that held still");
        let loaded = advice_for(&[(UNDER_LOAD, "other processes used 35% of the CPUs".into())]);
        assert_eq!(
            texts(&short_line(loaded).caveats),
            ["contention ran under load: other processes used 35% of the CPUs"]
        );
        // Rows with transfers of their own (measured again until the machine held still under
        // them): the run's move elsewhere is not theirs, and their own move is said.
        let rows_moved = |after: f64| {
            let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
            let mut run = contention_run(100, &[("ttas:spin", "spinlab", 2, 9e6), ("std", "reference", 2, 6e6)]);
            run.param(TRANSFER_BEFORE_NS, 40.0).param(TRANSFER_AFTER_NS, 200.0);
            for row in &mut run.rows {
                row.set(TRANSFER_BEFORE_NS, 45.0);
                row.set(TRANSFER_AFTER_NS, after);
            }
            results.runs.push(run);
            short_line(recommend(&Context::new(&results))).caveats
        };
        assert!(rows_moved(50.0).is_empty(), "{:?}", rows_moved(50.0));
        let own = rows_moved(230.0);
        assert!(own.len() == 1 && own[0].words.contains("45 ns") && own[0].words.contains("230 ns"), "{own:?}");
        assert_eq!(own[0].pass, None, "the rows' own move belongs to the line alone");
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
        let situations: Vec<&str> = advice.iter().take(6).map(|a| a.situation.as_str()).collect();
        assert_eq!(
            situations,
            [
                "empty critical section, threads <= CPUs",
                "empty critical section, threads > CPUs (oversubscribed)",
                "short critical section, threads <= CPUs",
                "short critical section, threads > CPUs (oversubscribed)",
                "long critical section, threads <= CPUs",
                "long critical section, threads > CPUs (oversubscribed)",
            ]
        );
        assert!(advice[0].why.contains("no contention run with an empty critical section"), "{:?}", advice[0]);
        assert_eq!(advice[2].choice, "ttas:spin");
        assert!(advice[2].why.contains("1.50x the best reference lock (std"), "{}", advice[2].why);
        assert_eq!(advice[3].choice, "std");
        assert!(advice[4].why.contains("no contention run with a critical section of 1 µs"), "{:?}", advice[4]);
        let co = advice.iter().find(|a| a.situation.starts_with("co-runners sensitive")).unwrap();
        assert!(co.why.contains("wakeup experiment was not run"), "{}", co.why);
        assert!(advice.iter().any(|a| a.why.contains("herd experiment was not run")));
    }
}
