//! The verdict on one published row against schedlab's cell: does the
//! change go the same way, is schedlab's change significant by compare's
//! own rule (mmtests' non-overlapping ±1.96σ bands, `compare::stats`), and
//! how large is it relative to the published one.
//!
//! Both changes are taken "positive = the variant is better", each in its
//! own metric's direction (`Row::better_pct`, `compare::stats::pct_better`),
//! so a published throughput gain and a schedlab time reduction compare
//! directly; when both metrics point the same way the ratio equals the
//! ratio of the raw changes.

use crate::compare::stats::{self, Better, Summary};

/// The verdict column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Significant in schedlab and the same sign as published.
    Same,
    /// Significant in schedlab and the opposite sign.
    Opposite,
    /// schedlab's bands overlap (or there is no spread): no direction claimed.
    NotSignificant,
    /// The published change is exactly 0: no direction to match.
    PublishedFlat,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Same => "same direction",
            Verdict::Opposite => "opposite",
            Verdict::NotSignificant => "no significant difference",
            Verdict::PublishedFlat => "published: no change",
        }
    }
}

/// One judged row.
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    /// The published change, positive = better.
    pub published_pct: f64,
    /// schedlab's mean-row change, positive = better (compare's % column).
    pub schedlab_pct: f64,
    pub significant: bool,
    pub verdict: Verdict,
    /// schedlab_pct / published_pct (None when the published change is 0).
    pub ratio: Option<f64>,
}

/// Judges schedlab's baseline and variant summaries (of a metric where
/// `better` holds) against a published change (positive = better).
pub fn judge(published_pct: f64, base: &Summary, var: &Summary, better: Better) -> Judgement {
    let schedlab_pct = stats::pct_better(base.mean, var.mean, better);
    let significant = stats::significant(base, var);
    let verdict = if published_pct == 0.0 {
        Verdict::PublishedFlat
    } else if !significant {
        Verdict::NotSignificant
    } else if (schedlab_pct > 0.0) == (published_pct > 0.0) {
        Verdict::Same
    } else {
        Verdict::Opposite
    };
    let ratio = (published_pct != 0.0).then(|| schedlab_pct / published_pct);
    Judgement {
        published_pct,
        schedlab_pct,
        significant,
        verdict,
        ratio,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::summarize;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn lower_is_better_same_direction() {
        // Times 2.0 s -> 1.8 s, tight: pndiff = 100 - 1.8*100/2.0 = +10 %.
        // Published (e.g. 003-07) +11.28 %: same direction, ratio
        // 10 / 11.28 = 0.8865.
        let b = summarize(&[2.0, 2.01, 1.99], Better::Lower);
        let v = summarize(&[1.8, 1.81, 1.79], Better::Lower);
        let j = judge(11.28, &b, &v, Better::Lower);
        assert!(close(j.schedlab_pct, 10.0), "{j:?}");
        assert!(j.significant);
        assert_eq!(j.verdict, Verdict::Same);
        assert!(close(j.ratio.unwrap(), 10.0 / 11.28));
    }

    #[test]
    fn higher_is_better_opposite_direction() {
        // Throughput about 100 -> 80: pdiff about -20 %. Published +21.36 %
        // (004-13): opposite, ratio about -20 / 21.36 = -0.936.
        let b = summarize(&[100.0, 101.0, 99.0], Better::Higher);
        let v = summarize(&[80.0, 81.0, 79.0], Better::Higher);
        let j = judge(21.36, &b, &v, Better::Higher);
        // Hmean(100, 101, 99) = 3 / (1/100 + 1/101 + 1/99) = 99.99333;
        // Hmean(80, 81, 79) = 79.99167: 79.99167*100/99.99333 - 100 = -20.0030.
        assert!((j.schedlab_pct + 20.0030).abs() < 1e-3, "{j:?}");
        assert_eq!(j.verdict, Verdict::Opposite);
        assert!((j.ratio.unwrap() + 20.0030 / 21.36).abs() < 1e-4);
    }

    #[test]
    fn a_worse_time_matches_a_published_loss() {
        // Time 1.0 -> 1.1 s: pndiff = 100 - 110 = -10 %; published -9.7 %
        // (002-04, 2.41228 -> 2.64528 s): same direction, ratio 10/9.7 = 1.0309.
        let b = summarize(&[1.0, 1.0, 1.0, 1.001], Better::Lower);
        let v = summarize(&[1.1, 1.1, 1.1, 1.101], Better::Lower);
        let j = judge(-9.7, &b, &v, Better::Lower);
        assert_eq!(j.verdict, Verdict::Same);
        assert!((j.ratio.unwrap() - 10.0 / 9.7).abs() < 1e-3, "{j:?}");
    }

    #[test]
    fn overlapping_bands_claim_no_direction() {
        // Means 1.0 and 0.99 (pndiff +1 %) with σ 0.1 each: the difference
        // 0.01 is far inside 1.96 x (0.1 + 0.1) = 0.392.
        let b = summarize(&[0.9, 1.0, 1.1], Better::Lower);
        let v = summarize(&[0.89, 0.99, 1.09], Better::Lower);
        let j = judge(5.0, &b, &v, Better::Lower);
        assert!(!j.significant);
        assert_eq!(j.verdict, Verdict::NotSignificant);
        assert!(close(j.ratio.unwrap(), (100.0 - 99.0) / 5.0));
        // Identical runs on both sides: no bands, no significance.
        let same = summarize(&[1.0, 1.0], Better::Lower);
        let other = summarize(&[2.0, 2.0], Better::Lower);
        assert_eq!(
            judge(5.0, &same, &other, Better::Lower).verdict,
            Verdict::NotSignificant
        );
    }

    #[test]
    fn a_flat_published_row_has_no_ratio() {
        let b = summarize(&[1.0, 1.01], Better::Lower);
        let j = judge(0.0, &b, &b, Better::Lower);
        assert_eq!(j.verdict, Verdict::PublishedFlat);
        assert_eq!(j.ratio, None);
    }
}
