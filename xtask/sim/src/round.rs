//! `x.round() as u64` without the library call: on x86-64 without SSE4.1
//! `f64::round` is a function call (`round` in compiler-builtins), and the
//! engine rounds every jittered cost (~1.5 % of host time on the 160-CPU
//! hackbench case). Same result for every input (tested): truncation is
//! exact, so is the fraction `x - trunc(x)`, and a fraction of one half or
//! more rounds away from zero, as `round` does.

/// `x.round() as u64`, for every `x` (negative and NaN give 0, too large
/// saturates, as the cast does).
pub(crate) fn round_u64(x: f64) -> u64 {
    let i = x as u64;
    if x - i as f64 >= 0.5 {
        i.saturating_add(1)
    } else {
        i
    }
}

#[cfg(test)]
mod tests {
    use super::round_u64;
    use workloads::args::Rng;

    fn check(x: f64) {
        assert_eq!(round_u64(x), x.round() as u64, "{x:e}");
    }

    #[test]
    fn same_as_round_then_cast() {
        for x in [
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            0.49999999999999994,
            4503599627370495.5,
            4503599627370497.0,
            9007199254740993.0,
            1.8446744073709552e19,
            1e30,
            -0.5,
            -3.7,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
        ] {
            check(x);
        }
        let mut rng = Rng::new(3);
        for _ in 0..1_000_000 {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            check(u * 1e4);
            check(u * 2.0);
            check(f64::from_bits(rng.next_u64()).abs());
            let n = rng.next_u64() % 100_000;
            check(n as f64 + 0.5);
            check(n as f64 + 0.5 - f64::EPSILON * n as f64);
        }
    }
}
