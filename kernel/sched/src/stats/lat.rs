//! Log-linear latency histogram, fio/schbench style (`PLAT_BITS`): values
//! below 2^PLAT_BITS are exact; above, every power-of-two range is split
//! into 2^PLAT_BITS equal buckets, so a percentile is within 1/64 (1.6 %)
//! of the true sample — fine enough for p99.9 wakeup latencies, unlike the
//! factor-of-two [`super::Log2Histogram`].

use alloc::vec;
use alloc::vec::Vec;
use core::fmt::{self, Write};

/// Buckets per power-of-two group (schbench uses 8; 6 keeps it small).
pub const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Groups: covers every u64.
const PLAT_GROUPS: usize = (64 - PLAT_BITS as usize) + 1;

/// A log-linear histogram of u64 samples (e.g. ns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatHistogram {
    buckets: Vec<u64>,
    /// Number of samples.
    pub count: u64,
    /// Smallest sample (u64::MAX when empty).
    pub min: u64,
    /// Largest sample.
    pub max: u64,
    /// Sum of samples (saturating).
    pub sum: u64,
}

impl Default for LatHistogram {
    fn default() -> Self {
        LatHistogram {
            buckets: vec![0; PLAT_GROUPS * PLAT_VAL as usize],
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }
}

/// Bucket index of a value (`plat_val_to_idx`).
pub fn index_of(v: u64) -> usize {
    if v < PLAT_VAL {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let group = msb - PLAT_BITS + 1;
    let offset = (v >> (msb - PLAT_BITS)) & (PLAT_VAL - 1);
    (group as u64 * PLAT_VAL + offset) as usize
}

/// The largest value of bucket `idx` (`plat_idx_to_val`, upper edge).
pub fn upper_of(idx: usize) -> u64 {
    let idx = idx as u64;
    if idx < PLAT_VAL {
        return idx;
    }
    let group = idx / PLAT_VAL;
    let offset = idx % PLAT_VAL;
    let shift = (group - 1) as u32;
    let base = (PLAT_VAL + offset) << shift;
    base.saturating_add((1u64 << shift) - 1)
}

/// The smallest value of bucket `idx` (its lower edge).
pub fn lower_of(idx: usize) -> u64 {
    match idx {
        0 => 0,
        i => upper_of(i - 1).saturating_add(1),
    }
}

impl LatHistogram {
    /// Add one sample.
    pub fn record(&mut self, v: u64) {
        self.buckets[index_of(v)] += 1;
        self.count += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum = self.sum.saturating_add(v);
    }

    /// Merge another histogram into this one.
    pub fn merge(&mut self, o: &LatHistogram) {
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.count += o.count;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum = self.sum.saturating_add(o.sum);
    }

    /// The samples recorded since `before` (an earlier copy of this
    /// histogram). The interval's `min` and `max` are the edges of its
    /// lowest and highest non-empty buckets, clamped to the overall range
    /// (within 1/64 of the interval's own extremes).
    pub fn since(&self, before: &LatHistogram) -> LatHistogram {
        let mut d = LatHistogram::default();
        for (x, (a, b)) in d
            .buckets
            .iter_mut()
            .zip(self.buckets.iter().zip(&before.buckets))
        {
            *x = a.saturating_sub(*b);
        }
        d.count = self.count.saturating_sub(before.count);
        d.sum = self.sum.saturating_sub(before.sum);
        if let (Some(lo), Some(hi)) = (
            d.buckets.iter().position(|&n| n > 0),
            d.buckets.iter().rposition(|&n| n > 0),
        ) {
            d.min = lower_of(lo).clamp(self.min, self.max);
            d.max = upper_of(hi).clamp(self.min, self.max);
        }
        d
    }

    /// The `per_mille`-th quantile (e.g. 990 = p99, 999 = p99.9) as its
    /// bucket's upper edge, clamped to the observed range; 0 when empty.
    pub fn quantile(&self, per_mille: u64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = (self.count * per_mille.clamp(1, 1000)).div_ceil(1000);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return upper_of(i).clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// Mean (0 when empty).
    pub fn mean(&self) -> u64 {
        self.sum.checked_div(self.count).unwrap_or(0)
    }

    /// JSON: count, min, mean, p50, p90, p95, p99, p99.9, max (schbench's
    /// set and the p95 of seed 002's runqueue latencies).
    pub fn write_json(&self, w: &mut impl Write) -> fmt::Result {
        write!(
            w,
            "{{\"count\":{},\"min\":{},\"mean\":{},\"p50\":{},\"p90\":{},\"p95\":{},\"p99\":{},\"p99_9\":{},\"max\":{}}}",
            self.count,
            if self.count == 0 { 0 } else { self.min },
            self.mean(),
            self.quantile(500),
            self.quantile(900),
            self.quantile(950),
            self.quantile(990),
            self.quantile(999),
            self.max
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_values_are_exact_and_buckets_are_contiguous() {
        for v in 0..PLAT_VAL {
            assert_eq!(index_of(v), v as usize);
            assert_eq!(upper_of(v as usize), v);
        }
        // Each bucket's upper edge + 1 starts the next bucket.
        for i in 0..(PLAT_GROUPS * PLAT_VAL as usize - 1) {
            let up = upper_of(i);
            if up == u64::MAX {
                break;
            }
            assert_eq!(index_of(up), i, "upper edge of {i}");
            assert_eq!(index_of(up + 1), i + 1, "after bucket {i}");
        }
    }

    #[test]
    fn quantiles_of_a_uniform_range() {
        let mut h = LatHistogram::default();
        for v in 1..=10_000u64 {
            h.record(v);
        }
        for (pm, exact) in [(500, 5000u64), (900, 9000), (990, 9900), (999, 9990)] {
            let q = h.quantile(pm);
            assert!(
                q >= exact && q <= exact + exact / 60,
                "p{pm}: {q} vs {exact}"
            );
        }
        assert_eq!((h.min, h.max, h.mean()), (1, 10_000, 5000));
        let mut s = String::new();
        h.write_json(&mut s).unwrap();
        assert!(s.starts_with("{\"count\":10000,\"min\":1,"));
    }

    #[test]
    fn since_is_the_interval_between_two_copies() {
        let mut h = LatHistogram::default();
        h.record(5);
        h.record(1_000_000);
        let before = h.clone();
        for v in [200u64, 300, 70_000] {
            h.record(v);
        }
        let d = h.since(&before);
        assert_eq!((d.count, d.sum, d.mean()), (3, 70_500, 23_500));
        // Values >= 64 keep their top 7 bits: 200, 300 and 70,000 sit in
        // buckets [200, 201], [300, 303] and [69,632, 70,655]. The
        // interval's range is the outer edges, inside the overall
        // [5, 1,000,000]; its median is 300's bucket's upper edge.
        assert_eq!((d.min, d.max), (200, 70_655));
        assert_eq!(d.quantile(500), 303);
        // Nothing recorded in between: empty, min/max as a new histogram.
        let e = h.since(&h);
        assert_eq!((e.count, e.max, e.quantile(990)), (0, 0, 0));
        let mut s = String::new();
        d.write_json(&mut s).unwrap();
        assert!(s.contains("\"p90\":70655,\"p95\":70655,"), "{s}");
    }

    #[test]
    fn lower_edges_follow_upper_edges() {
        assert_eq!((lower_of(0), lower_of(1), lower_of(64)), (0, 1, 64));
        for i in 1..2_000 {
            assert_eq!(lower_of(i), upper_of(i - 1) + 1);
            assert_eq!(index_of(lower_of(i)), i);
        }
    }

    proptest! {
        #[test]
        fn bucket_holds_its_value_within_one_sixty_fourth(v in any::<u64>()) {
            let up = upper_of(index_of(v));
            prop_assert!(up >= v);
            prop_assert!(up - v <= v / 64 + 1);
        }
    }
}
