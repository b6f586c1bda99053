//! Lag at the sleeping block: how far from V (`avg_vruntime`) a task is
//! when it blocks while another entity shares its queue.
//!
//! Under EEVDF with DELAY_DEQUEUE such a block is delayed exactly when the
//! lag `V - v_i` is negative (`entity_eligible` fails), so these two
//! distributions say why a run delays the share of its blocks it does: the
//! `delayed` counter is `delayed.count` and `eligible_shared` is
//! `eligible.count`. `docs/probes/delay-lag.sh` measures the same quantity
//! in Linux 6.12 (`docs/benchmarks.md`, "Lag at the block").

use super::hist::Log2Histogram;
use core::fmt::{self, Write};

/// Lag at the block of sleepers that shared their queue (DELAY_DEQUEUE
/// under EEVDF only), virtual ns (real ns for nice-0 tasks).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockLag {
    /// Eligible sleepers (dequeued at once): the lag, >= 0.
    pub eligible: Log2Histogram,
    /// Ineligible sleepers (delayed): minus the lag, > 0.
    pub delayed: Log2Histogram,
}

impl BlockLag {
    /// Record one block's lag `V - v_i`.
    pub fn record(&mut self, lag: i64) {
        if lag >= 0 {
            self.eligible.record(lag as u64);
        } else {
            self.delayed.record(lag.unsigned_abs());
        }
    }

    /// Nothing recorded (the record then has no `block_lag` section).
    pub fn is_empty(&self) -> bool {
        self.eligible.count == 0 && self.delayed.count == 0
    }

    /// The blocks recorded since `before`.
    pub fn since(&self, before: &BlockLag) -> BlockLag {
        BlockLag {
            eligible: self.eligible.since(&before.eligible),
            delayed: self.delayed.since(&before.delayed),
        }
    }

    /// Add another CPU's blocks.
    pub fn merge(&mut self, o: &BlockLag) {
        self.eligible.merge(&o.eligible);
        self.delayed.merge(&o.delayed);
    }

    /// `{"eligible": histogram, "delayed": histogram}`.
    pub fn write_json(&self, w: &mut impl Write) -> fmt::Result {
        w.write_str("{\"eligible\":")?;
        self.eligible.write_json(w)?;
        w.write_str(",\"delayed\":")?;
        self.delayed.write_json(w)?;
        w.write_char('}')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sign_of_the_lag_picks_the_histogram() {
        let mut l = BlockLag::default();
        assert!(l.is_empty());
        l.record(0);
        l.record(5_000);
        l.record(-1);
        l.record(-300_000);
        assert_eq!((l.eligible.count, l.eligible.sum), (2, 5_000));
        assert_eq!(
            (l.delayed.count, l.delayed.sum, l.delayed.max),
            (2, 300_001, 300_000)
        );
        let before = l.clone();
        l.record(-7);
        let d = l.since(&before);
        assert_eq!(
            (d.eligible.count, d.delayed.count, d.delayed.sum),
            (0, 1, 7)
        );
        let mut s = String::new();
        d.write_json(&mut s).unwrap();
        assert!(s.starts_with("{\"eligible\":{\"count\":0,"), "{s}");
        assert!(s.contains("\"delayed\":{\"count\":1,\"mean\":7,"), "{s}");
    }
}
