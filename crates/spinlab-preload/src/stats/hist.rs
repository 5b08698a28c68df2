//! Log2 histograms of durations: bucket `i` holds values in `[2^i, 2^(i+1))` ns (0 ns in
//! bucket 0), the last bucket everything from `2^(BUCKETS-1)` ns (about nine minutes) up.
//! A row keeps one of atomic counters per histogram; a report reads it into a [`Hist`], whose
//! percentiles are the upper bounds of the buckets they fall in, clamped to the largest value.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Buckets per histogram: up to `2^40` ns, 18 minutes.
pub const BUCKETS: usize = 40;

/// The bucket of a duration of `ns`.
#[inline]
pub fn bucket(ns: u64) -> usize {
    (63 - (ns | 1).leading_zeros() as usize).min(BUCKETS - 1)
}

/// A histogram as read from a row, or summed over a site's rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Hist {
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    pub buckets: [u64; BUCKETS],
}

impl Default for Hist {
    fn default() -> Hist {
        Hist { count: 0, total_ns: 0, max_ns: 0, buckets: [0; BUCKETS] }
    }
}

impl Hist {
    /// Reads `buckets`, with the `total_ns` and `max_ns` kept beside them.
    pub fn read(buckets: &[AtomicU64; BUCKETS], total_ns: u64, max_ns: u64) -> Hist {
        let buckets: [u64; BUCKETS] = core::array::from_fn(|i| buckets[i].load(Relaxed));
        Hist { count: buckets.iter().sum(), total_ns, max_ns, buckets }
    }

    /// Adds `other`'s values to this one's.
    pub fn add(&mut self, other: &Hist) {
        self.count += other.count;
        self.total_ns = self.total_ns.saturating_add(other.total_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets) {
            *mine += theirs;
        }
    }

    /// The value below which a share `q` (0..=1) of the values lie: the upper bound of its
    /// bucket, at most the largest value; 0 for an empty histogram.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return upper_ns(i).min(self.max_ns);
            }
        }
        self.max_ns
    }

    /// The non-empty buckets, ascending: `(upper bound in ns, count)`.
    pub fn non_empty(&self) -> Vec<(u64, u64)> {
        self.buckets.iter().enumerate().filter(|(_, &n)| n > 0).map(|(i, &n)| (upper_ns(i), n)).collect()
    }
}

/// The exclusive upper bound of bucket `i`.
fn upper_ns(i: usize) -> u64 {
    1u64 << (i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[u64]) -> Hist {
        let counters: [AtomicU64; BUCKETS] = core::array::from_fn(|_| AtomicU64::new(0));
        for &v in values {
            counters[bucket(v)].fetch_add(1, Relaxed);
        }
        Hist::read(&counters, values.iter().sum(), values.iter().copied().max().unwrap_or(0))
    }

    #[test]
    fn a_value_lands_in_the_bucket_of_its_highest_bit() {
        assert_eq!([bucket(0), bucket(1), bucket(2), bucket(3), bucket(4)], [0, 0, 1, 1, 2]);
        assert_eq!(bucket(1023), 9);
        assert_eq!(bucket(1024), 10);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1, "the last bucket takes everything above");
    }

    #[test]
    fn percentiles_are_bucket_upper_bounds_clamped_to_the_largest_value() {
        // 90 values of 100 ns (bucket [64, 128)), 9 of 1000 ns ([512, 1024)), one of 5000 ns.
        let mut values = vec![100; 90];
        values.extend([1000; 9]);
        values.push(5000);
        let hist = of(&values);
        assert_eq!((hist.count, hist.max_ns), (100, 5000));
        assert_eq!(hist.quantile(0.5), 128);
        assert_eq!(hist.quantile(0.9), 128, "the 90th value is the last of 100 ns");
        assert_eq!(hist.quantile(0.99), 1024);
        assert_eq!(hist.quantile(1.0), 5000, "bucket [4096, 8192) clamped to the max");
        assert_eq!(hist.non_empty(), [(128, 90), (1024, 9), (8192, 1)]);
        assert_eq!(Hist::default().quantile(0.5), 0);
        assert_eq!(of(&[0]).quantile(0.5), 0, "0 ns is in bucket 0, clamped to max 0");
    }

    #[test]
    fn histograms_add_bucket_by_bucket() {
        let mut sum = of(&[10, 20]);
        sum.add(&of(&[3000]));
        assert_eq!((sum.count, sum.total_ns, sum.max_ns), (3, 3030, 3000));
        assert_eq!(sum.non_empty(), [(16, 1), (32, 1), (4096, 1)]);
    }
}
