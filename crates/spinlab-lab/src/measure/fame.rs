//! The FAME stopping rule (seed 000 §IV.B): repeat a measurement until another repetition
//! would move the mean by less than the MAIV (maximum allowable variation), within a minimum
//! and a maximum count.
//!
//! "Would move" is judged two ways, and both must be under the MAIV:
//! - the move the *last* repetition actually made, |mean(n) − mean(n−1)| / mean(n);
//! - the move a *typical next* repetition would make, one standard deviation away from the
//!   mean: sd(n) / ((n + 1) · mean(n)).
//!
//! The first alone stops too early when a repetition happens to land on the mean; the second
//! alone ignores a trend (a machine whose speed drifts makes the last moves large while the
//! spread still looks small).

use super::stats::{mean, sample_sd};
use serde::Serialize;

/// When to stop repeating.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StoppingRule {
    /// Maximum allowable variation of the mean, in percent (`--maiv`, default 1).
    pub maiv_pct: f64,
    /// Never fewer repetitions than this (at least 2: one repetition cannot show a move).
    pub min_reps: usize,
    /// Never more.
    pub max_reps: usize,
}

/// What the rule says after the repetitions so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Take another repetition.
    Continue,
    /// The mean is stable to within the MAIV.
    Converged,
    /// The maximum count was reached before the mean was stable.
    MaxReps,
    /// The experiment stopped repeating this treatment: it collapsed (see
    /// [`interleave_stoppable`](super::interleave_stoppable)), and its samples are what was
    /// measured before.
    Stopped,
}

impl Verdict {
    /// Whether to stop.
    pub fn stop(self) -> bool {
        self != Verdict::Continue
    }
}

impl StoppingRule {
    /// The verdict after `samples` (NaN samples, repetitions without a value, are skipped).
    pub fn verdict(&self, samples: &[f64]) -> Verdict {
        let values: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
        let n = values.len();
        if n >= self.min_reps.max(2) && self.converged(&values) {
            return Verdict::Converged;
        }
        if samples.len() >= self.max_reps.max(1) {
            return Verdict::MaxReps;
        }
        Verdict::Continue
    }

    fn converged(&self, values: &[f64]) -> bool {
        let n = values.len();
        let now = mean(values);
        let before = mean(&values[..n - 1]);
        let sd = sample_sd(values, now);
        if now == 0.0 {
            return sd == 0.0 && before == 0.0;
        }
        let last_move_pct = 100.0 * (now - before).abs() / now.abs();
        let next_move_pct = 100.0 * sd / ((n + 1) as f64 * now.abs());
        last_move_pct < self.maiv_pct && next_move_pct < self.maiv_pct
    }

    /// The number of repetitions after which the rule stops for `samples` fed one by one, and
    /// the verdict it stopped with (for tests and for documentation of the rule).
    pub fn stops_after(&self, samples: &[f64]) -> Option<(usize, Verdict)> {
        (1..=samples.len()).map(|n| (n, self.verdict(&samples[..n]))).find(|(_, v)| v.stop())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE_PCT: StoppingRule = StoppingRule { maiv_pct: 1.0, min_reps: 3, max_reps: 50 };

    #[test]
    fn a_constant_sequence_stops_at_the_minimum() {
        assert_eq!(ONE_PCT.stops_after(&[10.0; 20]), Some((3, Verdict::Converged)));
        let two = StoppingRule { min_reps: 1, ..ONE_PCT };
        assert_eq!(two.stops_after(&[10.0; 20]), Some((2, Verdict::Converged)), "never on one repetition");
    }

    #[test]
    fn a_noisy_sequence_needs_more_repetitions_the_noisier_it_is() {
        // ±1% around 100: sd ≈ 1, so the next move is under 1% almost at once.
        let mild: Vec<f64> = (0..50).map(|i| if i % 2 == 0 { 99.0 } else { 101.0 }).collect();
        // ±20% around 100: sd ≈ 20, so 1% needs about 20 repetitions.
        let wild: Vec<f64> = (0..50).map(|i| if i % 2 == 0 { 80.0 } else { 120.0 }).collect();
        let (n_mild, v_mild) = ONE_PCT.stops_after(&mild).unwrap();
        let (n_wild, v_wild) = ONE_PCT.stops_after(&wild).unwrap();
        assert_eq!((v_mild, v_wild), (Verdict::Converged, Verdict::Converged));
        assert!(n_mild <= 4, "{n_mild}");
        assert!((19..=30).contains(&n_wild), "{n_wild}");
    }

    #[test]
    fn a_drifting_sequence_never_converges_and_stops_at_the_maximum() {
        // The machine slows by 5% every repetition: the last move never gets small.
        let drift: Vec<f64> = (0..50).map(|i| 100.0 * 1.05f64.powi(i)).collect();
        assert_eq!(ONE_PCT.stops_after(&drift), Some((50, Verdict::MaxReps)));
    }

    #[test]
    fn an_outlier_in_the_last_repetition_keeps_it_going() {
        let mut xs = vec![100.0; 5];
        xs.push(130.0);
        assert_eq!(ONE_PCT.verdict(&xs[..5]), Verdict::Converged);
        assert_eq!(ONE_PCT.verdict(&xs), Verdict::Continue);
    }

    #[test]
    fn a_larger_maiv_stops_sooner() {
        let wild: Vec<f64> = (0..50).map(|i| if i % 2 == 0 { 80.0 } else { 120.0 }).collect();
        let loose = StoppingRule { maiv_pct: 5.0, ..ONE_PCT };
        assert!(loose.stops_after(&wild).unwrap().0 < ONE_PCT.stops_after(&wild).unwrap().0);
    }

    #[test]
    fn zeros_converge_and_nan_repetitions_do_not_count_as_values() {
        assert_eq!(ONE_PCT.stops_after(&[0.0; 10]), Some((3, Verdict::Converged)));
        let gaps = [f64::NAN, 5.0, f64::NAN, 5.0, 5.0];
        assert_eq!(ONE_PCT.stops_after(&gaps), Some((5, Verdict::Converged)));
        // ...but they count towards the maximum, so a measurement that never yields stops.
        let never = [f64::NAN; 50];
        assert_eq!(ONE_PCT.stops_after(&never), Some((50, Verdict::MaxReps)));
    }
}
