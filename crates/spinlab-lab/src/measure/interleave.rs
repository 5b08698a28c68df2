//! Repeating several treatments (locks, policies, CPU pairs) *interleaved*: one shared
//! warm-up, then rounds in which every treatment runs once, until every treatment's mean is
//! stable by the FAME rule or the maximum count is reached.
//!
//! Why interleave: this machine's speed drifts (the same single-threaded loop was seen taking
//! 0.061 s and 0.042 s a few seconds apart). Measured in blocks, a baseline taken first and a
//! treatment taken later differ by the drift as well as by the treatment, which can make a
//! slowdown come out negative. Interleaved, the drift spreads over all of them. Rounds
//! alternate direction (A B C, C B A, …), so a steady drift does not favour whoever goes
//! first. Every treatment gets the same number of repetitions: once all have converged the
//! run stops; one that converged early keeps being measured while the others have not.

use super::fame::{StoppingRule, Verdict};
use super::progress::Progress;
use crate::error::LabError;

/// Which kind of repetition a measurement is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rep {
    /// The shared warm-up: measure as usual; the value is thrown away.
    Warmup,
    /// Measured repetition number `n` (from 0).
    Measured(usize),
}

/// One treatment's repetitions.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// One value per measured repetition (NaN where a repetition yielded none).
    pub samples: Vec<f64>,
    /// How the rule ended it: `Converged` if the mean met the MAIV at some round.
    pub verdict: Verdict,
}

/// Runs `count` treatments interleaved. `measure(i, rep)` runs treatment `i` once and returns
/// the value the stopping rule watches (throughput, a latency, …); experiments keep any other
/// figures of the repetition themselves.
pub fn interleave(
    count: usize,
    rule: &StoppingRule,
    progress: Option<&Progress>,
    mut measure: impl FnMut(usize, Rep) -> Result<f64, LabError>,
) -> Result<Vec<Series>, LabError> {
    interleave_stoppable(count, rule, progress, |i, rep| measure(i, rep).map(Taken::Value))
}

/// What one measured repetition of a stoppable treatment gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Taken {
    /// A value; the treatment goes on as the stopping rule says.
    Value(f64),
    /// A value, and the last one: the experiment judged the treatment collapsed (it would
    /// only run for minutes more and say nothing new), so it is not repeated again and its
    /// series ends [`Verdict::Stopped`].
    Last(f64),
}

/// [`interleave`], where `measure` may stop a treatment early with [`Taken::Last`]. The other
/// treatments go on; the warm-up value is ignored.
pub fn interleave_stoppable(
    count: usize,
    rule: &StoppingRule,
    progress: Option<&Progress>,
    mut measure: impl FnMut(usize, Rep) -> Result<Taken, LabError>,
) -> Result<Vec<Series>, LabError> {
    let mut series: Vec<Series> =
        (0..count).map(|_| Series { samples: Vec::new(), verdict: Verdict::Continue }).collect();
    if count == 0 {
        return Ok(series);
    }
    for (i, s) in series.iter_mut().enumerate() {
        if let Taken::Last(_) = measure(i, Rep::Warmup)? {
            s.verdict = Verdict::Stopped;
        }
    }
    for round in 0..rule.max_reps.max(1) {
        let order: Vec<usize> = if round % 2 == 0 { (0..count).collect() } else { (0..count).rev().collect() };
        if let Some(p) = progress {
            p.detail(&format!("repetition {}", round + 1));
        }
        // A treatment stopped in the warm-up still gets one measured repetition, so its row
        // shows what it does; after that, a stopped treatment is not run again.
        for i in order {
            if series[i].verdict == Verdict::Stopped && !series[i].samples.is_empty() {
                continue;
            }
            match measure(i, Rep::Measured(round))? {
                Taken::Value(value) => series[i].samples.push(value),
                Taken::Last(value) => {
                    series[i].samples.push(value);
                    series[i].verdict = Verdict::Stopped;
                }
            }
        }
        for s in series.iter_mut() {
            if !matches!(s.verdict, Verdict::Converged | Verdict::Stopped) {
                s.verdict = rule.verdict(&s.samples);
            }
        }
        if series.iter().all(|s| s.verdict.stop()) {
            break;
        }
    }
    for s in series.iter_mut() {
        if s.verdict == Verdict::Continue {
            s.verdict = Verdict::MaxReps;
        }
    }
    Ok(series)
}

/// Repeats one measurement until the rule stops it (no interleaving partner).
pub fn repeat(
    rule: &StoppingRule,
    progress: Option<&Progress>,
    mut measure: impl FnMut(Rep) -> Result<f64, LabError>,
) -> Result<Series, LabError> {
    let mut all = interleave(1, rule, progress, |_, rep| measure(rep))?;
    Ok(all.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn treatments_alternate_after_one_shared_warm_up() {
        let rule = StoppingRule { maiv_pct: 1.0, min_reps: 3, max_reps: 10 };
        let mut log = Vec::new();
        let series = interleave(2, &rule, None, |i, rep| {
            log.push((i, rep));
            Ok(10.0)
        })
        .unwrap();
        use Rep::*;
        assert_eq!(
            log,
            [
                (0, Warmup),
                (1, Warmup),
                (0, Measured(0)),
                (1, Measured(0)),
                (1, Measured(1)),
                (0, Measured(1)),
                (0, Measured(2)),
                (1, Measured(2))
            ]
        );
        assert!(series.iter().all(|s| s.samples == [10.0; 3] && s.verdict == Verdict::Converged));
    }

    #[test]
    fn a_noisy_treatment_keeps_the_stable_one_running_and_both_stop_at_the_maximum() {
        let rule = StoppingRule { maiv_pct: 1.0, min_reps: 3, max_reps: 6 };
        let mut n = 0;
        let series = interleave(2, &rule, None, |i, _| {
            n += 1;
            Ok(if i == 0 {
                5.0
            } else if n % 2 == 0 {
                1.0
            } else {
                100.0
            })
        })
        .unwrap();
        assert_eq!(series[0].samples.len(), 6);
        assert_eq!(series[1].samples.len(), 6);
        assert_eq!(series[0].verdict, Verdict::Converged);
        assert_eq!(series[1].verdict, Verdict::MaxReps);
    }

    #[test]
    fn a_stopped_treatment_is_not_repeated_and_the_others_go_on() {
        let rule = StoppingRule { maiv_pct: 1.0, min_reps: 3, max_reps: 6 };
        let mut runs = [0usize; 2];
        let series = interleave_stoppable(2, &rule, None, |i, rep| {
            runs[i] += 1;
            Ok(match (i, rep) {
                (1, Rep::Measured(1)) => Taken::Last(0.5),
                _ => Taken::Value(10.0),
            })
        })
        .unwrap();
        assert_eq!(series[1].samples, [10.0, 0.5], "what was measured before it stopped, and its last value");
        assert_eq!(series[1].verdict, Verdict::Stopped);
        assert_eq!(runs[1], 3, "warm-up and two measured repetitions, then never again");
        assert_eq!(series[0].samples, [10.0; 3]);
        assert_eq!(series[0].verdict, Verdict::Converged);
    }

    #[test]
    fn a_treatment_stopped_in_the_warm_up_still_gets_one_measured_repetition() {
        let rule = StoppingRule { maiv_pct: 1.0, min_reps: 3, max_reps: 6 };
        let series = interleave_stoppable(1, &rule, None, |_, _| Ok(Taken::Last(1.0))).unwrap();
        assert_eq!(series[0].samples, [1.0]);
        assert_eq!(series[0].verdict, Verdict::Stopped);
    }

    #[test]
    fn errors_stop_the_run() {
        let rule = StoppingRule { maiv_pct: 1.0, min_reps: 3, max_reps: 6 };
        let r =
            interleave(
                1,
                &rule,
                None,
                |_, rep| if rep == Rep::Measured(1) { Err(LabError::failed("boom")) } else { Ok(1.0) },
            );
        assert_eq!(r.unwrap_err(), LabError::failed("boom"));
    }
}
