//! A log-linear histogram of durations in counter ticks: exact count, sum and maximum, and
//! percentiles to within 1/32 (3.1%) of the value.
//!
//! Each power of two is split into 32 equal buckets, as HdrHistogram does with two
//! significant digits. Recording is an index computation and an increment, cheap enough to
//! run after every lock acquisition without a syscall or an allocation.

const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
/// Values below `SUB` get a bucket each; every power of two above gets `SUB` buckets.
const BUCKETS: usize = SUB + (64 - SUB_BITS as usize) * SUB;

/// Durations in ticks.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    count: u64,
    sum: u128,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; BUCKETS], count: 0, sum: 0, max: 0 }
    }
}

fn bucket_of(value: u64) -> usize {
    if value < SUB as u64 {
        return value as usize;
    }
    let top = 63 - value.leading_zeros(); // >= SUB_BITS
    let shift = top - SUB_BITS;
    let sub = ((value >> shift) as usize) & (SUB - 1);
    SUB + (shift as usize) * SUB + sub
}

/// The largest value that falls into `bucket`.
fn bucket_top(bucket: usize) -> u64 {
    if bucket < SUB {
        return bucket as u64;
    }
    let shift = ((bucket - SUB) / SUB) as u32;
    let sub = ((bucket - SUB) % SUB) as u64;
    let low = (SUB as u64 + sub) << shift;
    low + ((1u64 << shift) - 1)
}

impl Histogram {
    /// Records one value.
    #[inline]
    pub fn record(&mut self, value: u64) {
        self.counts[bucket_of(value)] += 1;
        self.count += 1;
        self.sum += value as u128;
        self.max = self.max.max(value);
    }

    /// Adds another histogram's values.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
    }

    /// How many values were recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Exact mean, `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// Exact maximum, `None` when empty.
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// The smallest bucket top below which at least `pct` percent of the values lie (never
    /// above the exact maximum); `None` when empty.
    pub fn percentile(&self, pct: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((pct / 100.0) * self.count as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (bucket, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(bucket_top(bucket).min(self.max));
            }
        }
        Some(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for v in (0..5000u64).chain([u64::MAX / 3, u64::MAX]) {
            let b = bucket_of(v);
            assert!(b >= last && b < BUCKETS, "{v}");
            assert!(bucket_top(b) >= v, "{v} above its bucket's top {}", bucket_top(b));
            last = b;
        }
    }

    #[test]
    fn percentiles_are_within_the_resolution() {
        let mut h = Histogram::default();
        for v in 1..=10_000u64 {
            h.record(v);
        }
        let p99 = h.percentile(99.0).unwrap();
        assert!((9_900..=9_900 + 9_900 / 32).contains(&p99), "{p99}");
        assert_eq!(h.percentile(100.0), Some(10_000));
        assert_eq!(h.max(), Some(10_000));
        assert_eq!(h.mean(), Some(5_000.5));
        assert_eq!(h.percentile(0.0), Some(1));
    }

    #[test]
    fn merge_adds_counts_and_keeps_the_maximum() {
        let (mut a, mut b) = (Histogram::default(), Histogram::default());
        a.record(3);
        b.record(1_000_000);
        b.record(5);
        a.merge(&b);
        assert_eq!(a.count(), 3);
        assert_eq!(a.max(), Some(1_000_000));
        assert_eq!(a.percentile(50.0), Some(5));
        assert!(Histogram::default().percentile(99.0).is_none());
    }
}
