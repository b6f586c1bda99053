//! NI_RANDOM: newly idle balancing in proportion to its success rate
//! (Peter Zijlstra's "sched/fair: Proportional newidle balance", mainline
//! v6.19-rc and the 6.1.y/6.12.y stable series of December 2025; the rig's
//! Debian 6.12.117 has it on).
//!
//! Each domain of each CPU keeps a success ratio of its newly idle passes
//! (`newidle_call`, `newidle_success`, `newidle_ratio`, starting at 50 %:
//! 512 / 256 / 512). A pass rolls a 1,024-sided die and runs only if the
//! roll is at most `1 + ratio` (`sched_balance_newidle`); a skipped pass
//! counts as a failure; a pass that runs counts its success weighted by the
//! inverse of its probability, so the ratio estimates the success rate of
//! every pass (`update_newidle_stats`: when `newidle_call` reaches 1,024 the
//! ratio becomes the success count and both counts halve, so from the
//! starting 512 calls the ratio is refreshed every 512 passes). The die is the kernel's `prandom_u32_state`, L'Ecuyer's
//! four-component Tausworthe generator LFSR113 ([`Lfsr113`]), one per CPU;
//! Linux seeds it from the boot's entropy, schedlab from the run's seed
//! (`SchedConfig::rng_seed`) and the CPU number, so a run repeats exactly
//! and each `--seed` rolls other dice.

use crate::rq::SdState;

/// `prandom_u32_state()`: the combined Tausworthe generator of L'Ecuyer
/// (1999, "Tables of maximally equidistributed combined LFSR generators",
/// the LFSR113 parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lfsr113 {
    s: [u32; 4],
}

impl Lfsr113 {
    /// A generator seeded from `seed` (any value): the four components are
    /// spread by splitmix64 and kept above their minimum values (s1 > 1,
    /// s2 > 7, s3 > 15, s4 > 127), as `prandom_seed_state` ensures.
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as u32
        };
        let min = [2u32, 8, 16, 128];
        let mut s = [0u32; 4];
        for (v, m) in s.iter_mut().zip(min) {
            let r = next();
            *v = if r < m { r + m } else { r };
        }
        Lfsr113 { s }
    }

    /// The next 32-bit output.
    pub fn next_u32(&mut self) -> u32 {
        #[inline(always)]
        fn step(s: u32, a: u32, b: u32, c: u32, d: u32) -> u32 {
            ((s & c) << d) ^ (((s << a) ^ s) >> b)
        }
        let s = &mut self.s;
        s[0] = step(s[0], 6, 13, 0xffff_fffe, 18);
        s[1] = step(s[1], 2, 27, 0xffff_fff8, 2);
        s[2] = step(s[2], 13, 21, 0xffff_fff0, 7);
        s[3] = step(s[3], 3, 12, 0xffff_ff80, 13);
        s[0] ^ s[1] ^ s[2] ^ s[3]
    }
}

/// `update_newidle_stats(sd, success)`.
pub fn update_newidle_stats(st: &mut SdState, success: u32) {
    st.newidle_call += 1;
    st.newidle_success += success;
    if st.newidle_call >= 1024 {
        st.newidle_ratio = st.newidle_success;
        st.newidle_call /= 2;
        st.newidle_success /= 2;
    }
}

/// The die roll of `sched_balance_newidle` for one domain: `None` when the
/// pass is skipped (counted as a failure), else the weight its success
/// counts with (`(1024 + w/2) / w`, `w = 1 + newidle_ratio`).
pub fn roll(st: &mut SdState, rng: &mut Lfsr113) -> Option<u32> {
    let d1k = rng.next_u32() % 1024;
    let weight = 1 + st.newidle_ratio;
    if d1k > weight {
        update_newidle_stats(st, 0);
        return None;
    }
    Some((1024 + weight / 2) / weight)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sd() -> SdState {
        SdState::new(1)
    }

    #[test]
    fn lfsr113_steps_as_the_published_recurrence() {
        // L'Ecuyer's LFSR113 from its parameter table, (k, q, s) =
        // (31, 6, 18), (29, 2, 2), (28, 13, 7), (25, 3, 13): for each
        // component b = ((z << q) ^ z) >> (k - s), z = ((z & m_k) << s) ^ b
        // with m_k the top k bits; the output is the four z's xor-ed.
        const TABLE: [(u32, u32, u32); 4] = [(31, 6, 18), (29, 2, 2), (28, 13, 7), (25, 3, 13)];
        let mut z = [12_345u32, 67_890, 13_579, 24_680];
        let mut g = Lfsr113 { s: z };
        for _ in 0..1000 {
            let mut out = 0;
            for (zi, &(k, q, sh)) in z.iter_mut().zip(&TABLE) {
                let mask = u32::MAX << (32 - k);
                let b = ((*zi << q) ^ *zi) >> (k - sh);
                *zi = ((*zi & mask) << sh) ^ b;
                out ^= *zi;
            }
            assert_eq!(g.next_u32(), out);
        }
        // Seeding keeps every component above its minimum.
        for seed in 0..1000 {
            let g = Lfsr113::new(seed);
            assert!(g.s[0] > 1 && g.s[1] > 7 && g.s[2] > 15 && g.s[3] > 127);
        }
    }

    #[test]
    fn the_ratio_is_refreshed_every_512_passes_as_the_calls_reach_1024() {
        // Start at 50 %: 512 calls, 256 successes, ratio 512. 512 more calls
        // with no success reach 1,024: ratio = 256, counts halved to 512 / 128.
        let mut st = sd();
        assert_eq!(
            (st.newidle_call, st.newidle_success, st.newidle_ratio),
            (512, 256, 512)
        );
        for _ in 0..511 {
            update_newidle_stats(&mut st, 0);
        }
        assert_eq!(st.newidle_ratio, 512, "not yet 1,024 calls");
        update_newidle_stats(&mut st, 0);
        assert_eq!(
            (st.newidle_call, st.newidle_success, st.newidle_ratio),
            (512, 128, 256)
        );
    }

    #[test]
    fn a_pass_runs_with_probability_one_plus_ratio_over_1024() {
        // With the ratio held at r, a roll d in 0..1024 runs iff d <= 1 + r:
        // (r + 2) of 1,024 values. Over many rolls the share converges, and
        // a run's weight is round(1024 / (1 + r)).
        for r in [0u32, 100, 511, 1023] {
            let mut rng = Lfsr113::new(u64::from(r) + 7);
            let n = 200_000;
            let mut ran = 0;
            for _ in 0..n {
                let mut st = sd();
                st.newidle_ratio = r;
                if let Some(w) = roll(&mut st, &mut rng) {
                    ran += 1;
                    let odds = 1 + r;
                    assert_eq!(w, (1024 + odds / 2) / odds);
                }
            }
            let want = f64::from((r + 2).min(1024)) / 1024.0;
            let got = f64::from(ran) / f64::from(n);
            assert!(
                (got - want).abs() < 0.01,
                "ratio {r}: ran {got}, want {want}"
            );
        }
    }

    #[test]
    fn failing_passes_lower_the_ratio_as_the_rule_says() {
        // 2 CPUs of one LLC: two tasks bound to cpu0 keep it overloaded with
        // nothing any other CPU may take; a task on cpu1 blocks and wakes,
        // so cpu1 goes newly idle again and again and every pass it runs
        // fails. Each pass (run or skipped) counts a failure: from 512
        // calls / 256 successes the ratio becomes the success count at every
        // 512th pass, which halves each time: 256, 128, 64, ...
        use crate::config::PickPolicy;
        use crate::task::TaskPolicy;
        use crate::testutil::{check_invariants, sched, spec};
        let s = sched(&spec(1, 2, 1, 1), PickPolicy::Eevdf, "NI_RANDOM");
        let ms = 1_000_000;
        for _ in 0..2 {
            s.wake_up_new_task_bound(None, 0, 0, TaskPolicy::Normal, ms);
        }
        s.schedule(0, ms);
        let w = s
            .wake_up_new_task_bound(None, 1, 0, TaskPolicy::Normal, ms)
            .task;
        s.schedule(1, ms);
        let mut now = 2 * ms;
        for _ in 0..3000 {
            s.block_and_schedule(1, now);
            now += 50_000;
            s.wake_up(w, 1, false, now);
            s.schedule(1, now);
            now += 50_000;
        }
        let st = s.stats().ni;
        assert_eq!(st.pulled, 0, "nothing may move");
        let passes = st.skipped + st.ran;
        assert!(passes > 2000, "{st:?}");
        assert!(
            st.skipped > st.ran,
            "the die skips most once the ratio fell: {st:?}"
        );
        let c = s.core();
        let sd = &c.rqs[1].sd[0];
        let checkpoints = (passes / 512) as u32;
        assert_eq!(
            sd.newidle_ratio,
            256 >> (checkpoints - 1),
            "{passes} passes"
        );
        assert_eq!(sd.newidle_call as u64, 512 + passes % 512);
        drop(c);
        check_invariants(&s);
    }

    #[test]
    fn each_run_seed_rolls_other_dice_and_the_same_seed_the_same() {
        use crate::config::{PickPolicy, SchedConfig};
        use crate::sched::Scheduler;
        use crate::topo::SchedTopo;
        let dice = |seed: u64| {
            let topo = SchedTopo::synthetic(&crate::testutil::spec(1, 2, 1, 1)).unwrap();
            let mut cfg = SchedConfig::new(topo.nr_cpus, PickPolicy::Eevdf);
            cfg.rng_seed = seed;
            let s = Scheduler::new(topo, cfg);
            let c = s.core();
            [c.rqs[0].ni_rng, c.rqs[1].ni_rng]
        };
        assert_eq!(dice(7), dice(7));
        assert_ne!(dice(7), dice(8));
        let d = dice(0);
        assert_ne!(d[0], d[1], "each CPU its own");
    }
}
