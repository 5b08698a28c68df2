//! Summary statistics of repeated measurements, and the fairness figures of seed 003.

use serde::Serialize;

/// Mean, median, spread and 95% interval of a set of repetitions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Arithmetic mean.
    pub mean: f64,
    /// Middle value (mean of the two middle values for an even count).
    pub median: f64,
    /// Sample standard deviation (n − 1 in the denominator); 0 for one repetition.
    pub sd: f64,
    /// Half-width of the 95% confidence interval of the mean (Student's t), `None` for one
    /// repetition, where no interval exists.
    pub ci95: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Number of repetitions.
    pub reps: usize,
}

impl Summary {
    /// A summary of three repetitions that all read `mean`, with the interval `ci95`: for
    /// tests of code that reads summaries.
    #[cfg(test)]
    pub fn exact(mean: f64, ci95: f64) -> Summary {
        Summary { mean, median: mean, sd: 0.0, ci95: Some(ci95), min: mean, max: mean, reps: 3 }
    }

    /// The summary of `samples`, or `None` when there are none. NaN samples are ignored:
    /// experiments use NaN for a repetition that produced no value.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = mean(&sorted);
        let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
        let sd = sample_sd(&sorted, mean);
        let ci95 = (n > 1).then(|| t_975(n - 1) * sd / (n as f64).sqrt());
        Some(Summary { mean, median, sd, ci95, min: sorted[0], max: sorted[n - 1], reps: n })
    }

    /// Standard deviation as a percentage of the mean (0 when the mean is 0).
    pub fn rsd_pct(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            100.0 * self.sd / self.mean.abs()
        }
    }
}

/// Arithmetic mean (NaN for an empty slice).
pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample standard deviation around `mean` (0 for fewer than two values).
pub fn sample_sd(xs: &[f64], mean: f64) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    (ss / (xs.len() - 1) as f64).sqrt()
}

/// Jain's fairness index of per-thread shares: (Σx)² / (n·Σx²). 1 when every thread got the
/// same, 1/n when one thread got everything. 1 for an empty or all-zero set (nobody was
/// treated worse than anybody else).
pub fn jain(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let sum_sq: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || sum_sq == 0.0 {
        return 1.0;
    }
    sum * sum / (xs.len() as f64 * sum_sq)
}

/// Relative standard deviation of per-thread shares, in percent: the population standard
/// deviation (the threads are all there is, not a sample) over the mean.
pub fn population_rsd_pct(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let m = mean(xs);
    if m == 0.0 {
        return 0.0;
    }
    let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64;
    100.0 * var.sqrt() / m.abs()
}

/// The 97.5th percentile of Student's t distribution with `df` degrees of freedom: the factor
/// of the standard error in a two-sided 95% interval. Exact table to 30, then the usual
/// steps (40, 60, 120, ∞), taking the more conservative neighbour.
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        31..=40 => 2.042,
        41..=60 => 2.021,
        61..=120 => 2.000,
        121..=1000 => 1.980,
        _ => 1.960,
    }
}

/// The half-width of the 95% interval of `treatment` over `reference`, from their ratio
/// within each round both ran in. Interleaved rounds run both under the same conditions, so
/// the machine's drift between rounds (the host moving the vCPUs, other load) moves both
/// values of a round and cancels in its ratio, where the intervals of the two means taken
/// apart would each carry it. A treatment stopped early has fewer rounds: the rounds pair
/// from the first. Rounds without a finite ratio (a NaN sample, a zero reference) are left
/// out; `None` with fewer than two left.
pub fn paired_ratio_ci95(treatment: &[f64], reference: &[f64]) -> Option<f64> {
    let ratios: Vec<f64> = treatment.iter().zip(reference).map(|(t, r)| t / r).filter(|x| x.is_finite()).collect();
    Summary::of(&ratios)?.ci95
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn summary_of_a_known_set() {
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert!(close(s.mean, 5.0));
        assert!(close(s.median, 4.5));
        // Sample variance 32/7.
        assert!(close(s.sd, (32.0f64 / 7.0).sqrt()));
        assert!(close(s.ci95.unwrap(), 2.365 * s.sd / 8f64.sqrt()));
        assert_eq!((s.min, s.max, s.reps), (2.0, 9.0, 8));
    }

    #[test]
    fn odd_count_median_is_the_middle_value_and_order_does_not_matter() {
        let s = Summary::of(&[9.0, 1.0, 5.0]).unwrap();
        assert_eq!(s.median, 5.0);
        assert_eq!(s.min, 1.0);
    }

    #[test]
    fn one_repetition_has_no_interval_and_nan_is_ignored() {
        let s = Summary::of(&[f64::NAN, 3.0]).unwrap();
        assert_eq!(s.reps, 1);
        assert_eq!(s.sd, 0.0);
        assert_eq!(s.ci95, None);
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn jain_is_one_when_even_and_one_over_n_when_one_thread_takes_all() {
        assert!(close(jain(&[5.0, 5.0, 5.0, 5.0]), 1.0));
        assert!(close(jain(&[8.0, 0.0, 0.0, 0.0]), 0.25));
        // Seed 003 Table 1, spinlock column: far from fair.
        let spin = jain(&[780297.0, 801152.0, 26213.0, 26558.0]);
        let fair = jain(&[310915.0, 316622.0, 238295.0, 234268.0]);
        assert!(spin < 0.55 && fair > 0.97, "spin {spin} fair {fair}");
        assert_eq!(jain(&[]), 1.0);
    }

    #[test]
    fn rsd_uses_the_population_deviation() {
        assert!(close(population_rsd_pct(&[1.0, 3.0]), 50.0));
        assert_eq!(population_rsd_pct(&[0.0, 0.0]), 0.0);
    }

    #[test]
    fn t_factor_shrinks_towards_the_normal_quantile() {
        assert!(t_975(1) > t_975(2));
        assert!(t_975(30) > t_975(100));
        assert_eq!(t_975(1_000_000), 1.960);
    }

    #[test]
    fn a_paired_ratio_interval_ignores_drift_shared_by_a_round() {
        // Twofold drift between rounds, the same ratio in each: no spread.
        assert!(paired_ratio_ci95(&[9.0, 18.0, 9.0, 18.0], &[10.0, 20.0, 10.0, 20.0]).unwrap() < 1e-12);
        let expected = Summary::of(&[1.0, 1.2, 0.8]).unwrap().ci95;
        assert_eq!(paired_ratio_ci95(&[10.0, 12.0, 8.0], &[10.0, 10.0, 10.0]), expected);
        // Rounds pair from the first (from the last, the 40 would pair with the 8); a NaN
        // sample or a zero reference drops its round.
        assert_eq!(paired_ratio_ci95(&[10.0, 12.0, 8.0], &[10.0, 10.0, 10.0, 40.0]), expected);
        assert_eq!(paired_ratio_ci95(&[10.0, 12.0, 8.0, f64::NAN], &[10.0, 10.0, 10.0, 10.0, 10.0]), expected);
        assert_eq!(paired_ratio_ci95(&[10.0, 12.0, 5.0, 8.0], &[10.0, 10.0, 0.0, 10.0]), expected);
        assert_eq!(paired_ratio_ci95(&[3.0, 4.0], &[2.0]), None, "one round has no interval");
    }
}
