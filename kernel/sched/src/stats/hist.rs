//! Log2-bucketed histogram with percentile extraction (no_std, no floats).
//!
//! Bucket `b` holds values in `[2^(b-1), 2^b)` (bucket 0 holds 0). A
//! percentile is reported as the upper bound of the bucket containing it,
//! clamped to the observed maximum — within a factor of two, which is what a
//! runqueue-latency comparison needs (like `schbench`'s or the seed 002
//! "max90/max99" columns).

use core::fmt::{self, Write};

/// Number of buckets (covers all u64 values).
pub const NR_BUCKETS: usize = 65;

/// Log2 histogram of u64 samples (e.g. wait times in ns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Log2Histogram {
    /// Per-bucket counts.
    pub buckets: [u64; NR_BUCKETS],
    /// Number of samples.
    pub count: u64,
    /// Sum of samples (saturating).
    pub sum: u64,
    /// Largest sample.
    pub max: u64,
}

impl Default for Log2Histogram {
    fn default() -> Self {
        Log2Histogram {
            buckets: [0; NR_BUCKETS],
            count: 0,
            sum: 0,
            max: 0,
        }
    }
}

/// Bucket index of a value.
pub fn bucket_of(v: u64) -> usize {
    (64 - v.leading_zeros()) as usize
}

impl Log2Histogram {
    /// Add one sample.
    pub fn record(&mut self, v: u64) {
        self.buckets[bucket_of(v)] += 1;
        self.count += 1;
        self.sum = self.sum.saturating_add(v);
        self.max = self.max.max(v);
    }

    /// The samples recorded since `before` (an earlier copy of this
    /// histogram). `max` stays the overall maximum when the interval's own
    /// maximum cannot be told apart: it is the upper bound of the highest
    /// bucket that gained samples, clamped to the overall maximum.
    pub fn since(&self, before: &Log2Histogram) -> Log2Histogram {
        let mut d = Log2Histogram::default();
        for (i, (a, b)) in self.buckets.iter().zip(before.buckets.iter()).enumerate() {
            d.buckets[i] = a.saturating_sub(*b);
        }
        d.count = self.count.saturating_sub(before.count);
        d.sum = self.sum.saturating_sub(before.sum);
        d.max = match d.buckets.iter().rposition(|&n| n > 0) {
            None => 0,
            Some(0) => 0,
            Some(b) if b >= 64 => self.max,
            Some(b) => ((1u64 << b) - 1).min(self.max),
        };
        d
    }

    /// Merge another histogram into this one.
    pub fn merge(&mut self, o: &Log2Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(o.buckets.iter()) {
            *a += b;
        }
        self.count += o.count;
        self.sum = self.sum.saturating_add(o.sum);
        self.max = self.max.max(o.max);
    }

    /// Mean (integer division), 0 when empty.
    pub fn mean(&self) -> u64 {
        self.sum.checked_div(self.count).unwrap_or(0)
    }

    /// The `pct`-th percentile (1..=100) as a bucket upper bound, clamped to max.
    pub fn percentile(&self, pct: u64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = (self.count * pct.clamp(1, 100)).div_ceil(100);
        let mut seen = 0;
        for (b, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let upper = if b == 0 {
                    0
                } else if b >= 64 {
                    u64::MAX
                } else {
                    (1u64 << b) - 1
                };
                return upper.min(self.max);
            }
        }
        self.max
    }

    /// JSON: count, mean, p50, p90, p99, max and the non-empty buckets.
    pub fn write_json(&self, w: &mut impl Write) -> fmt::Result {
        write!(
            w,
            "{{\"count\":{},\"mean\":{},\"p50\":{},\"p90\":{},\"p99\":{},\"max\":{},\"log2_buckets\":{{",
            self.count,
            self.mean(),
            self.percentile(50),
            self.percentile(90),
            self.percentile(99),
            self.max
        )?;
        let mut first = true;
        for (b, &n) in self.buckets.iter().enumerate().filter(|(_, n)| **n != 0) {
            if !first {
                w.write_char(',')?;
            }
            first = false;
            write!(w, "\"{b}\":{n}")?;
        }
        w.write_str("}}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_and_percentiles() {
        let mut h = Log2Histogram::default();
        for v in 1..=100u64 {
            h.record(v * 1000);
        }
        assert_eq!(h.count, 100);
        assert_eq!(h.max, 100_000);
        assert_eq!(h.mean(), 50_500);
        // p50 = 50_000 lies in [32768, 65536).
        assert_eq!(h.percentile(50), 65_535);
        // p99 = 99_000 lies in [65536, 131072) -> clamped to max.
        assert_eq!(h.percentile(99), 100_000);
        assert_eq!(h.percentile(100), 100_000);
        let mut s = String::new();
        h.write_json(&mut s).unwrap();
        assert!(s.starts_with("{\"count\":100,\"mean\":50500,\"p50\":65535"));
    }

    #[test]
    fn percentile_within_factor_two_of_exact() {
        let mut h = Log2Histogram::default();
        let vals: Vec<u64> = (0..1000u64).map(|i| (i * i * 7919) % 1_000_003).collect();
        for &v in &vals {
            h.record(v);
        }
        let mut sorted = vals.clone();
        sorted.sort();
        for p in [50u64, 90, 99] {
            let exact = sorted[(vals.len() * p as usize).div_ceil(100) - 1];
            let est = h.percentile(p);
            assert!(
                est >= exact && est <= exact * 2 + 1,
                "p{p}: {est} vs {exact}"
            );
        }
        assert_eq!(Log2Histogram::default().percentile(50), 0);
    }
}
