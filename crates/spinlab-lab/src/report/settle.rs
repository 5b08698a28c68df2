//! Settling: after a report's runs, each claim left `unsettled` whose claim declares a
//! re-measurement ([`Claim::remeasure`](crate::reading::scorecard::Claim::remeasure)) has its
//! experiment run again, restricted to the rows it reads, with more repetitions, until the
//! verdict settles or a budget runs out. The latest re-measurement replaces the one before
//! it in `remeasured[]`, and the claim alone reads it ([`scorecard::findings`]).
//!
//! Claims that declare the same re-measurement share it: a later one starts from the runs an
//! earlier one left, at no cost, and goes on from there.
//!
//! The first round doubles the repetitions n behind the figure: its cost is not known yet, and
//! twice a restricted run's repetitions stays near the restricted run's own time. Each later
//! round gives every configuration max(2n, 1.25·(n + [`Finding::more_repetitions`]))
//! repetitions (a quarter over the estimate, which puts the interval's end on the range's
//! end), at most [`REPS`]'s top. A round starts only while the claim's and the whole budget
//! have time left, and, after the first, only when the last round's time per repetition says
//! it fits in both. The
//! time charged is each run's `elapsed_s`, so a test's fake experiment spends no real time.

use super::scorecard;
use crate::error::LabError;
use crate::experiments::Common;
use crate::reading::scorecard::{Claim, Finding, Remeasure, Verdict};
use crate::reading::Context;
use crate::results::{Remeasured, Results, Run};
use crate::select::{Bounds, REPS};
use clap::{Args, FromArgMatches};

/// Seconds one claim's re-measurements may take: a contention or interference run restricted
/// to the two treatments a claim compares takes a few seconds at the short report's
/// repetitions, so this leaves room for about two doublings.
pub const CLAIM_BUDGET_S: u64 = 20;
/// Seconds all re-measurements of one report may take: under half the short report's own
/// time (about 130 s on a 2-CPU machine), so that settling keeps it within 1.5 times that.
pub const TOTAL_BUDGET_S: u64 = 60;
/// `--settle-s`: the whole budget; 0 turns settling off.
pub const TOTAL_BOUNDS: Bounds = Bounds::new(0, 3600).unit(" s");
/// `--settle-claim-s`: one claim's budget.
pub const CLAIM_BOUNDS: Bounds = Bounds::new(1, 600).unit(" s");

/// How long settling may take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    /// Seconds for one claim.
    pub claim_s: f64,
    /// Seconds for them all; 0 settles nothing.
    pub total_s: f64,
}

impl Budget {
    /// [`CLAIM_BUDGET_S`] and [`TOTAL_BUDGET_S`].
    pub const DEFAULT: Budget = Budget { claim_s: CLAIM_BUDGET_S as f64, total_s: TOTAL_BUDGET_S as f64 };
}

/// What settling did for one claim.
#[derive(Clone, Debug, PartialEq)]
pub struct Attempt {
    /// The claim's key.
    pub claim: &'static str,
    /// How many re-measurements ran.
    pub rounds: usize,
    /// The seconds they took.
    pub spent_s: f64,
    /// The verdict after them.
    pub verdict: &'static str,
    /// For a claim still unsettled: about how many more repetitions would settle it.
    pub more_repetitions: Option<usize>,
}

/// Runs a claim's re-measurement with so many repetitions of each configuration.
pub type Measure<'a> = dyn FnMut(&Remeasure, usize) -> Result<Vec<Run>, LabError> + 'a;

/// Re-measures the unsettled claims of `results` within `budget`: `measure(remeasure, n)`
/// runs the claim's experiment restricted as it declares, with `n` repetitions of each
/// configuration. A re-measurement that fails ends that claim's rounds, said on stderr.
pub fn settle(results: &mut Results, budget: Budget, measure: &mut Measure<'_>) -> Vec<Attempt> {
    let unsettled: Vec<Claim> = scorecard::findings(&Context::new(results))
        .into_iter()
        .filter(|f| matches!(f.verdict, Verdict::Unsettled(_)) && f.claim.remeasure.is_some())
        .map(|f| f.claim)
        .collect();
    let mut total_s = 0.0;
    let mut attempts = Vec::new();
    // Each re-measurement made, with its time per repetition: a claim that declares the same
    // one as a claim before it starts from that one's runs, at no cost.
    let mut made: Vec<(Remeasure, Remeasured, f64)> = Vec::new();
    for claim in unsettled {
        let Some(remeasure) = claim.remeasure else { continue };
        let (mut rounds, mut spent_s, mut per_repetition_s) = (0, 0.0, None::<f64>);
        let shared = made.iter().filter(|(r, ..)| *r == remeasure).max_by_key(|(_, m, _)| m.repetitions);
        if let Some((_, again, per_repetition)) = shared.cloned() {
            results.remeasured.retain(|r| r.claim != claim.id);
            results.remeasured.push(Remeasured { claim: claim.id.to_string(), ..again });
            per_repetition_s = Some(per_repetition);
        }
        let mut now = finding(results, &claim);
        while let Some(f) = now.as_ref().filter(|f| matches!(f.verdict, Verdict::Unsettled(_))) {
            let n = f.repetitions.unwrap_or(1);
            let estimate = if per_repetition_s.is_none() {
                0
            } else {
                (1.25 * (n + f.more_repetitions().unwrap_or(0)) as f64).ceil() as usize
            };
            let next = (2 * n).max(estimate).min(REPS.max as usize);
            let left = (budget.claim_s - spent_s).min(budget.total_s - total_s);
            let predicted = per_repetition_s.map_or(0.0, |s| s * next as f64);
            if next <= n || left <= 0.0 || predicted > left {
                break;
            }
            let runs = match measure(&remeasure, next) {
                Ok(runs) => runs,
                Err(e) => {
                    eprintln!("warning: re-measuring {} failed: {e}", claim.id);
                    break;
                }
            };
            let took: f64 = runs.iter().map(|r| r.elapsed_s).sum();
            (rounds, spent_s, total_s) = (rounds + 1, spent_s + took, total_s + took);
            per_repetition_s = Some(took / next as f64);
            let again = Remeasured { claim: claim.id.to_string(), repetitions: next, runs };
            made.push((remeasure, again.clone(), took / next as f64));
            results.remeasured.retain(|r| r.claim != claim.id);
            results.remeasured.push(again);
            now = finding(results, &claim);
        }
        let (verdict, more_repetitions) =
            now.map_or(("not measured", None), |f| (f.verdict.name(), f.more_repetitions()));
        attempts.push(Attempt { claim: claim.id, rounds, spent_s, verdict, more_repetitions });
    }
    attempts
}

/// `common` restricted as `remeasure` declares, with `repetitions` of each configuration.
pub fn restricted(common: &Common, remeasure: &Remeasure, repetitions: usize) -> Result<Common, LabError> {
    let mut args = Vec::new();
    for (option, value) in remeasure.options {
        args.push(format!("--{option}"));
        args.push(value.to_string());
    }
    let command = Common::augment_args(clap::Command::new("remeasure").no_binary_name(true));
    let given = command
        .try_get_matches_from(&args)
        .and_then(|m| Common::from_arg_matches(&m))
        .map_err(|e| LabError::failed(format!("the re-measurement {}: {e}", args.join(" "))))?;
    let mut c = common.clone();
    c.locks = given.locks.or(c.locks);
    c.waits = given.waits.or(c.waits);
    c.threads = given.threads.or(c.threads);
    c.placement = given.placement.or(c.placement);
    c.repetition.min_reps = Some(repetitions);
    c.repetition.max_reps = Some(repetitions);
    Ok(c)
}

/// `claim`'s finding in `results` as it stands.
fn finding(results: &Results, claim: &Claim) -> Option<Finding> {
    scorecard::findings(&Context::new(results)).into_iter().find(|f| f.claim.id == claim.id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Row;
    use serde_json::json;

    const CLAIM: &str = "004-backoff-gain";

    /// A herd run whose spinning herd takes 10.5 s against the backoff herd's 10 s (5%, in the
    /// claim's 0-10% range), with a 95% half-width of `spread`/√n over n repetitions, each
    /// repetition charged `seconds_per_repetition`.
    fn herd(n: usize, spread: f64, seconds_per_repetition: f64) -> Run {
        let mut run = Run::new("herd");
        run.param("max_reps", n as u64);
        run.elapsed_s = n as f64 * seconds_per_repetition;
        let row = |lock: &str, wall: f64, ci: f64| {
            Row::new().with("lock", lock).with("threads", 8).with("wall_s", wall).with("wall_ci95_s", ci)
        };
        run.rows = vec![row("ttas:spin", 10.5, spread / (n as f64).sqrt()), row("ttas:backoff", 10.0, 0.0)];
        run
    }

    fn document(spread: f64) -> Results {
        let mut results = Results::new(&json!({"allowed_cpus": "0-1"}));
        results.runs = vec![herd(3, spread, 0.0)];
        results
    }

    fn verdict(results: &Results) -> (String, Option<usize>) {
        let all = scorecard::findings(&Context::new(results));
        let f = all.into_iter().find(|f| f.claim.id == CLAIM).unwrap();
        (f.verdict.name().to_string(), f.repetitions)
    }

    #[test]
    fn an_unsettled_claim_settles_with_more_repetitions_and_the_rounds_stop_there() {
        let mut results = document(2.5);
        assert_eq!(verdict(&results), ("unsettled".to_string(), Some(3)), "5 ± 14% over three repetitions");
        let mut asked = Vec::new();
        let attempts = settle(&mut results, Budget::DEFAULT, &mut |remeasure, n| {
            assert_eq!(remeasure.experiment, "herd");
            asked.push(n);
            Ok(vec![herd(n, 2.5, 0.0)])
        });
        // Doubled first (5 ± 10%: about 19 more would do), then a quarter over the estimate.
        assert_eq!(asked, [6, 32], "no round after the one that settled it");
        let attempt = attempts.iter().find(|a| a.claim == CLAIM).unwrap();
        assert_eq!((attempt.rounds, attempt.verdict, attempt.more_repetitions), (2, "reproduced", None));
        assert_eq!(verdict(&results), ("reproduced".to_string(), Some(32)));
        assert_eq!(results.remeasured.len(), 1, "the latest re-measurement replaces the one before");
        // The document as written reads the same: `report --from` and `compare` see it settled.
        let reread: Results = serde_json::from_str(&serde_json::to_string(&results).unwrap()).unwrap();
        assert_eq!(verdict(&reread), ("reproduced".to_string(), Some(32)));
        let line = scorecard::Scorecard::new(&Context::new(&reread), Vec::new()).lines();
        let line = line.iter().find(|l| l.id == CLAIM).unwrap();
        assert!(line.rows.contains("re-measured with 32 repetitions"), "{}", line.rows);
        // The other claims read the herd's runs as measured: the sleeping herd is not in them.
        assert_eq!(reread.runs.len(), 1);
        // `compare` reads each document's claims as its scorecard does.
        let before = document(2.5);
        let text = crate::compare::render("a", "b", &before, &reread, &crate::compare::compare(&before, &reread));
        let line = text.lines().find(|l| l.contains(CLAIM)).unwrap();
        assert!(line.contains("unsettled") && line.contains("reproduced"), "{line}");
    }

    #[test]
    fn a_claim_that_does_not_settle_stops_at_its_budget_and_says_how_many_more_it_needs() {
        // The interval does not narrow: whatever the repetitions, 5 ± 14%.
        let mut results = document(2.5);
        let mut asked = Vec::new();
        let budget = Budget { claim_s: 20.0, total_s: 90.0 };
        let attempts = settle(&mut results, budget, &mut |_, n| {
            asked.push(n);
            let mut run = herd(n, 2.5 * (n as f64 / 3.0).sqrt(), 1.0);
            run.param("max_reps", n as u64);
            Ok(vec![run])
        });
        // Six repetitions at a second each; the next round (some 330) would not fit in 14 s.
        assert_eq!(asked, [6]);
        let attempt = attempts.iter().find(|a| a.claim == CLAIM).unwrap();
        assert_eq!((attempt.rounds, attempt.spent_s, attempt.verdict), (1, 6.0, "unsettled"));
        // 5 ± 14.4% at 6 repetitions: 6·(14.4/5)² ≈ 50, so about 44 more.
        let more = attempt.more_repetitions.unwrap();
        assert!((40..=50).contains(&more), "{more}");
        let mut card = scorecard::Scorecard::new(&Context::new(&results), Vec::new());
        card.attempts = attempts.clone();
        let text = scorecard::terminal(&card, 40).join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
        let said = format!("still unsettled: {CLAIM} (6 repetitions, about {more} more)");
        assert!(
            text.contains("settling re-measured 1 unsettled claim(s) in 6 s: 0 settled.") && text.contains(&said),
            "{text}"
        );
        let line = card.lines().into_iter().find(|l| l.id == CLAIM).unwrap();
        assert_eq!((line.repetitions, line.more_repetitions), (Some(6), Some(more)));

        // No budget at all: nothing runs.
        let mut results = document(2.5);
        let attempts = settle(&mut results, Budget { claim_s: 20.0, total_s: 0.0 }, &mut |_, _| panic!("measured"));
        assert_eq!(attempts[0].rounds, 0);
        assert!(results.remeasured.is_empty());
    }

    #[test]
    fn claims_that_declare_the_same_remeasurement_share_its_runs() {
        // The fairlock's uncontended cost (2x, in 1.5-3) and throughput (0.64x, in 0.45-0.9)
        // over the spinlock's, both read from one restricted contention run.
        let contention = |n: usize| {
            let mut run = Run::new("contention");
            run.param("cs_ns", 100).param("max_reps", n as u64);
            let row = |lock: &str, ns: f64, ns_ci: f64, ops: f64, ops_ci: f64| {
                Row::new()
                    .with("lock", lock)
                    .with("threads", 2)
                    .with("uncontended_ns", ns)
                    .with("uncontended_ci95_ns", ns_ci)
                    .with("throughput_ops_s", ops)
                    .with("throughput_ci95_ops_s", ops_ci)
            };
            let root = (n as f64).sqrt();
            run.rows =
                vec![row("ttas:spin", 3.0, 0.0, 1000.0, 0.0), row("fair:spin", 6.0, 4.0 / root, 640.0, 400.0 / root)];
            run
        };
        let mut results = Results::new(&json!({"allowed_cpus": "0-1"}));
        results.runs = vec![contention(3)];
        let mut asked = Vec::new();
        let attempts = settle(&mut results, Budget::DEFAULT, &mut |remeasure, n| {
            assert_eq!(remeasure.experiment, "contention");
            asked.push(n);
            Ok(vec![contention(n)])
        });
        let of = |id: &str| attempts.iter().find(|a| a.claim == id).map(|a| (a.rounds, a.verdict)).unwrap();
        // The cost settles at 12 repetitions; the throughput, unsettled at 3, reads those.
        assert_eq!(asked, [6, 12]);
        assert_eq!(of("003-fairlock-uncontended-cost"), (2, "reproduced"));
        assert_eq!(of("003-fairlock-throughput"), (0, "reproduced"));
        assert_eq!(results.remeasured.len(), 2);
    }

    #[test]
    fn every_declared_remeasurement_parses_and_its_experiment_takes_its_options() {
        for f in scorecard::findings(&Context::new(&document(1.0))) {
            let Some(remeasure) = f.claim.remeasure else { continue };
            let experiment = crate::experiments::all().into_iter().find(|e| e.name() == remeasure.experiment);
            let experiment =
                experiment.unwrap_or_else(|| panic!("{}: no experiment {}", f.claim.id, remeasure.experiment));
            let common =
                restricted(&Default::default(), &remeasure, 7).unwrap_or_else(|e| panic!("{}: {e}", f.claim.id));
            crate::experiments::check_options(experiment.as_ref(), &common).unwrap();
            assert_eq!((common.repetition.min_reps, common.repetition.max_reps), (Some(7), Some(7)));
        }
    }
}
