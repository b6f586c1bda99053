//! Nice levels, load weights and the fixed-point `delta * w / W` primitive.
//!
//! Mirrors Linux's `sched_prio_to_weight[]` / `sched_prio_to_wmult[]` tables
//! (kernel/sched/core.c), `struct load_weight` with its lazily recomputed
//! inverse, and `__calc_delta()` / `calc_delta_fair()` (kernel/sched/fair.c).
//! Weights are stored in the scaled-down 1024-for-nice-0 range.

/// Weight of a nice-0 task (`NICE_0_LOAD`, scaled down).
pub const NICE_0_LOAD: u64 = 1024;

/// Weight used for SCHED_IDLE tasks (`WEIGHT_IDLEPRIO`).
pub const WEIGHT_IDLEPRIO: u64 = 3;

/// Lowest and highest nice values.
pub const MIN_NICE: i32 = -20;
/// See [`MIN_NICE`].
pub const MAX_NICE: i32 = 19;

/// Linux's `sched_prio_to_weight[40]`: index 0 is nice -20, index 39 nice +19.
pub const SCHED_PRIO_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// Linux's `sched_prio_to_wmult[40]` (= 2^32 / weight, rounded).
pub const SCHED_PRIO_TO_WMULT: [u32; 40] = [
    48388, 59856, 76040, 92818, 118348, 147320, 184698, 229616, 287308, 360437, 449829, 563644,
    704093, 875809, 1099582, 1376151, 1717300, 2157191, 2708050, 3363326, 4194304, 5237765,
    6557202, 8165337, 10153587, 12820798, 15790321, 19976592, 24970740, 31350126, 39045157,
    49367440, 61356676, 76695844, 95443717, 119304647, 148102320, 186737708, 238609294, 286331153,
];

const WMULT_CONST: u64 = 0xFFFF_FFFF;
const WMULT_SHIFT: u32 = 32;

/// A weight plus its cached inverse (`struct load_weight`). `inv_weight == 0`
/// means "stale, recompute on use" exactly as in Linux.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadWeight {
    /// Scaled-down weight (nice 0 = 1024).
    pub weight: u64,
    /// `0xFFFF_FFFF / weight`, or 0 when stale.
    pub inv_weight: u32,
}

impl LoadWeight {
    /// The weight of a task at `nice` (clamped to [-20, 19]), with the exact
    /// table inverse (`set_load_weight`).
    pub fn from_nice(nice: i32) -> Self {
        let idx = (nice.clamp(MIN_NICE, MAX_NICE) - MIN_NICE) as usize;
        LoadWeight {
            weight: u64::from(SCHED_PRIO_TO_WEIGHT[idx]),
            inv_weight: SCHED_PRIO_TO_WMULT[idx],
        }
    }

    /// An arbitrary weight with a stale inverse (runqueue sums).
    pub fn from_weight(weight: u64) -> Self {
        LoadWeight {
            weight,
            inv_weight: 0,
        }
    }

    /// `update_load_add()`: add to the sum and mark the inverse stale.
    pub fn add(&mut self, w: u64) {
        self.weight += w;
        self.inv_weight = 0;
    }

    /// `update_load_sub()`: subtract from the sum and mark the inverse stale.
    pub fn sub(&mut self, w: u64) {
        debug_assert!(self.weight >= w, "load weight underflow");
        self.weight = self.weight.saturating_sub(w);
        self.inv_weight = 0;
    }

    /// `__update_inv_weight()`: the inverse, recomputed if stale.
    pub fn inv(&self) -> u32 {
        if self.inv_weight != 0 {
            return self.inv_weight;
        }
        if self.weight >= WMULT_CONST {
            1
        } else {
            WMULT_CONST.checked_div(self.weight).unwrap_or(WMULT_CONST) as u32
        }
    }
}

/// `__calc_delta(delta, weight, lw)`: `delta * weight / lw.weight` computed
/// with the 32-bit inverse and the shift-down steps of Linux, so results match
/// Linux's rounding. Integer-only (the kernel target is soft-float).
pub fn calc_delta(delta: u64, weight: u64, lw: &LoadWeight) -> u64 {
    let mut fact: u64 = weight;
    let mut shift: u32 = WMULT_SHIFT;
    // Step 2: make `fact` fit 32 bits.
    while fact >> 32 != 0 {
        fact >>= 1;
        shift -= 1;
    }
    // Step 3: 32x32 -> 64 multiply by the inverse.
    fact *= u64::from(lw.inv());
    // Step 4: make it fit 32 bits again.
    while fact >> 32 != 0 {
        fact >>= 1;
        shift -= 1;
    }
    // Step 5: 64x32 multiply, shifted back.
    ((u128::from(delta) * u128::from(fact)) >> shift) as u64
}

/// `calc_delta_fair(delta, se)`: wall time to virtual time for an entity of
/// weight `lw` (`delta * NICE_0_LOAD / w`).
pub fn calc_delta_fair(delta: u64, lw: &LoadWeight) -> u64 {
    if lw.weight == NICE_0_LOAD {
        delta
    } else {
        calc_delta(delta, NICE_0_LOAD, lw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wmult_table_is_inverse_of_weight_table() {
        // Linux's sched_prio_to_wmult[] is 2^32 / weight rounded to nearest,
        // except nice 13, 14, 16 and 17 (weights 56, 45, 29, 23), which the
        // published table truncates. Exact equality, not within one.
        for (i, (&w, &m)) in SCHED_PRIO_TO_WEIGHT
            .iter()
            .zip(&SCHED_PRIO_TO_WMULT)
            .enumerate()
        {
            let (w, nice) = (u64::from(w), i as i32 + MIN_NICE);
            let want = if [13, 14, 16, 17].contains(&nice) {
                (1u64 << 32) / w
            } else {
                ((1u64 << 32) + w / 2) / w
            };
            assert_eq!(u64::from(m), want, "nice {nice}");
        }
    }

    #[test]
    fn calc_delta_matches_linux_fixed_point_exactly() {
        // Linux __calc_delta(): inv = lw->inv_weight or 0xFFFFFFFF / W;
        // fact = weight * inv, shifted right by fls(fact >> 32) (shift
        // 32 - that); result = (delta * fact) >> shift (mul_u64_u32_shr).
        // Values worked out by hand/bignum from that rule:
        //  6e6 * 1024 / 3892: inv 1103537, fact 1130021888 -> 1578622
        //  2^40 * 88761 / 15: inv 286331153, fact 25415...e12 >> 13 =
        //    3102421810, shift 19 -> 6506250103685120
        //  24e6 * 15 / 1e6: inv 4294, fact 64410 -> 359 (exact 360)
        //  6e6 * 335 / 1359: inv 3160388, fact 1058729980 -> 1479028
        let cases = [
            (6_000_000u64, 1024u64, 3892u64, 1_578_622u64),
            (1 << 40, 88761, 15, 6_506_250_103_685_120),
            (24_000_000, 15, 1_000_000, 359),
            (6_000_000, 335, 1024 + 335, 1_479_028),
        ];
        for (delta, w, sum, want) in cases {
            let got = calc_delta(delta, w, &LoadWeight::from_weight(sum));
            assert_eq!(got, want, "{delta} * {w} / {sum}");
        }
    }

    #[test]
    fn nice_steps_are_about_1_25() {
        for i in 1..40 {
            let r = f64::from(SCHED_PRIO_TO_WEIGHT[i - 1]) / f64::from(SCHED_PRIO_TO_WEIGHT[i]);
            assert!((1.15..1.35).contains(&r), "step {i}: {r}");
        }
        assert_eq!(LoadWeight::from_nice(0).weight, 1024);
        assert_eq!(LoadWeight::from_nice(-20).weight, 88761);
        assert_eq!(LoadWeight::from_nice(19).weight, 15);
        assert_eq!(LoadWeight::from_nice(100).weight, 15);
    }

    #[test]
    fn calc_delta_matches_exact_division_closely() {
        let sums = [1024u64, 2048, 3072 + 820, 88761 + 15, 15, 1_000_000];
        for &sum in &sums {
            let lw = LoadWeight::from_weight(sum);
            for &w in &[15u64, 1024, 88761] {
                for &delta in &[1u64, 1000, 6_000_000, 24_000_000, 1 << 40] {
                    let got = calc_delta(delta, w, &lw) as f64;
                    let want = delta as f64 * w as f64 / sum as f64;
                    // Linux's 32-bit inverse has relative error ~ W / 2^32.
                    let tol = want * (2.0 * sum as f64 / 4294967296.0 + 1e-6) + 1.0;
                    assert!(
                        (got - want).abs() <= tol,
                        "{delta}*{w}/{sum}: {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn calc_delta_fair_scales_inversely_with_weight() {
        let nice0 = LoadWeight::from_nice(0);
        assert_eq!(calc_delta_fair(1_000_000, &nice0), 1_000_000);
        // Linux __calc_delta with the table inverse: nice -5 (wmult
        // 1376151): fact = 1024 * 1376151 = 1409178624, shift 32:
        // 3121000 * fact >> 32 = 1023999. Nice 5 (wmult 12820798): fact =
        // 13128497152 > 2^32, >> fls(3) = 2 -> 3282124288, shift 30:
        // 335000 * fact >> 30 = 1024000.
        let heavy = LoadWeight::from_nice(-5); // 3121
        assert_eq!(calc_delta_fair(3_121_000, &heavy), 1_023_999);
        let light = LoadWeight::from_nice(5); // 335
        assert_eq!(calc_delta_fair(335_000, &light), 1_024_000);
    }

    #[test]
    fn load_weight_sum_inverse_is_lazy() {
        let mut lw = LoadWeight::from_weight(0);
        assert_eq!(lw.inv(), 0xFFFF_FFFF);
        lw.add(1024);
        assert_eq!(lw.inv(), 0xFFFF_FFFF / 1024);
        lw.add(1024);
        assert_eq!(lw.inv(), 0xFFFF_FFFF / 2048);
        lw.sub(2048);
        assert_eq!(lw.weight, 0);
    }
}
