//! Summary statistics and the baseline-vs-variant comparison of mmtests'
//! `compare-kernels` (reference §5.1): Min, Amean/Hmean, Stddev, CoeffVar,
//! Max, BAmean-95 / BHmean-95; the percentage column is signed so that a
//! positive value always means "better than baseline"; a difference is
//! significant when the two means' ±1.96σ bands do not overlap (mmtests
//! since 2024-12, Jan Kara's "Use CI interval for significance testing").
//! A Welch t-test p-value (statrs' Student's t) is given alongside, for
//! readers used to the pre-2024 tables (α = 0.10 there).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// qnorm(0.975): the half-width factor of mmtests' bands.
pub const Z_975: f64 = 1.959_963_984_540_054;

/// Which direction is better for a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Times, latencies: Amean, BAmean, pndiff.
    Lower,
    /// Throughputs: Hmean, BHmean, pdiff.
    Higher,
}

/// The summary of one configuration's samples.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub max: f64,
    /// Amean for lower-better metrics, Hmean for higher-better ones.
    pub mean: f64,
    /// Sample standard deviation (n - 1).
    pub stddev: f64,
    /// 100 * stddev / mean.
    pub coeffvar: f64,
    /// Mean of the best 95 % of samples (BAmean-95 / BHmean-95).
    pub best95: f64,
}

/// Arithmetic mean.
pub fn amean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// Harmonic mean (NaN if a sample is <= 0, as in mmtests).
pub fn hmean(x: &[f64]) -> f64 {
    if x.iter().any(|&v| v <= 0.0) {
        return f64::NAN;
    }
    x.len() as f64 / x.iter().map(|v| 1.0 / v).sum::<f64>()
}

/// Sample standard deviation (0 for one sample, and exactly 0 for equal
/// samples, where the mean's rounding would otherwise leave a residue).
pub fn stddev(x: &[f64]) -> f64 {
    if x.len() < 2 || x.iter().all(|v| v.to_bits() == x[0].to_bits()) {
        return 0.0;
    }
    let m = amean(x);
    (x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() - 1) as f64).sqrt()
}

/// Summarise samples (at least one).
pub fn summarize(x: &[f64], better: Better) -> Summary {
    assert!(!x.is_empty(), "no samples");
    let mut sorted = x.to_vec();
    sorted.sort_by(f64::total_cmp);
    if better == Better::Higher {
        sorted.reverse();
    }
    // Best-first; keep the best 95 % (at least one sample).
    let keep = ((x.len() * 95) / 100).max(1);
    let mean_of = |v: &[f64]| match better {
        Better::Lower => amean(v),
        Better::Higher => hmean(v),
    };
    let mean = mean_of(x);
    let sd = stddev(x);
    Summary {
        n: x.len(),
        min: x.iter().copied().fold(f64::INFINITY, f64::min),
        max: x.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        mean,
        stddev: sd,
        coeffvar: if mean == 0.0 { 0.0 } else { 100.0 * sd / mean },
        best95: mean_of(&sorted[..keep]),
    }
}

/// Percentage difference, positive = better: `pndiff = 100 - new*100/base`
/// for lower-better values, `pdiff = new*100/base - 100` for higher-better.
pub fn pct_better(base: f64, new: f64, better: Better) -> f64 {
    if base == 0.0 {
        return 0.0;
    }
    match better {
        Better::Lower => 100.0 - new * 100.0 / base,
        Better::Higher => new * 100.0 / base - 100.0,
    }
}

/// mmtests' significance: the mean difference over the sum of the two
/// ±1.96σ half-widths facing each other; significant iff > 1 (the bands do
/// not overlap). Equal means are never significant; with no variance on
/// either side (every run of each configuration identical, as repeated
/// `--icount` runs with one seed are) there are no bands to compare and
/// nothing is called significant: [`identical`] says so instead.
pub fn significant(base: &Summary, new: &Summary) -> bool {
    let diff = (new.mean - base.mean).abs();
    if diff == 0.0 {
        return false;
    }
    let bands = Z_975 * (base.stddev + new.stddev);
    bands > 0.0 && diff / bands > 1.0
}

/// Whether a configuration's runs (at least two) all gave the same value.
pub fn identical(x: &[f64]) -> bool {
    x.len() >= 2 && x.iter().all(|v| v.to_bits() == x[0].to_bits())
}

/// Two-sided p-value of Welch's t-test on the raw samples (None with fewer
/// than two samples on a side, or no variance at all).
pub fn welch_p(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (va, vb) = (
        stddev(a).powi(2) / a.len() as f64,
        stddev(b).powi(2) / b.len() as f64,
    );
    if va + vb == 0.0 {
        return None;
    }
    let t = (amean(a) - amean(b)).abs() / (va + vb).sqrt();
    let df =
        (va + vb).powi(2) / (va.powi(2) / (a.len() - 1) as f64 + vb.powi(2) / (b.len() - 1) as f64);
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(2.0 * (1.0 - dist.cdf(t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, eps: f64) -> bool {
        (a - b).abs() < eps
    }

    #[test]
    fn summary_matches_hand_computation() {
        let x = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let s = summarize(&x, Better::Lower);
        assert_eq!((s.n, s.min, s.max), (8, 2.0, 9.0));
        assert!(close(s.mean, 5.0, 1e-12));
        // Sample SD: sqrt(32 / 7).
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt(), 1e-12));
        assert!(close(
            s.coeffvar,
            100.0 * (32.0f64 / 7.0).sqrt() / 5.0,
            1e-9
        ));
        // Best 95 % of 8 = 7 samples: drop the worst (9).
        assert!(close(s.best95, 31.0 / 7.0, 1e-12));
        let h = summarize(&[1.0, 2.0, 4.0], Better::Higher);
        assert!(close(h.mean, 3.0 / 1.75, 1e-12), "harmonic mean");
        // Best 95 % of 3 = 2 samples, best-first = the highest: 4 and 2.
        assert!(close(h.best95, 2.0 / 0.75, 1e-12));
        assert!(hmean(&[1.0, 0.0]).is_nan());
    }

    #[test]
    fn percentage_is_positive_when_better() {
        // mmtests' hackbench example: 0.2357 -> 0.2540 s prints -7.78 %.
        assert!(close(
            pct_better(0.2357, 0.2540, Better::Lower),
            -7.76,
            0.02
        ));
        assert!(close(pct_better(2.0363, 1.9610, Better::Lower), 3.70, 0.01));
        assert!(close(
            pct_better(18102.63, 20650.23, Better::Higher),
            14.07,
            0.01
        ));
    }

    #[test]
    fn significance_needs_non_overlapping_bands() {
        let a = summarize(&[1.0, 1.1, 0.9, 1.0], Better::Lower);
        let far = summarize(&[2.0, 2.1, 1.9, 2.0], Better::Lower);
        let near = summarize(&[1.05, 1.15, 0.95, 1.05], Better::Lower);
        assert!(significant(&a, &far));
        assert!(!significant(&a, &near));
        assert!(!significant(&a, &a));
        let exact = summarize(&[3.0, 3.0], Better::Lower);
        let other = summarize(&[3.5, 3.5], Better::Lower);
        assert!(
            !significant(&exact, &other),
            "no variance on either side: no bands, no significance"
        );
        assert!(identical(&[3.0, 3.0]));
        assert!(!identical(&[3.0]));
        assert!(!identical(&[3.0, 3.5]));
    }

    #[test]
    fn welch_p_value_against_a_known_case() {
        // By hand: means 19.56 and 21.66, variances 0.383 and 0.293, so
        // t = 2.10 / sqrt(0.383/5 + 0.293/5) = 5.71 with Welch df = 7.86:
        // two-sided p is about 5e-4.
        let a = [19.1, 20.3, 18.8, 20.0, 19.6];
        let b = [21.4, 22.0, 20.9, 21.7, 22.3];
        let p = welch_p(&a, &b).unwrap();
        assert!(p > 0.0002 && p < 0.0008, "p = {p}");
        assert!(welch_p(&a, &a).unwrap() > 0.99);
        assert_eq!(welch_p(&[1.0], &b), None);
        assert_eq!(welch_p(&[1.0, 1.0], &[2.0, 2.0]), None);
    }
}
