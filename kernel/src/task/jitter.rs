//! What `--seed N` perturbs: every thread, when it first runs, spins a
//! pseudo-random 0..=[`bootcfg::SEED_JITTER_MAX_NS`] ns before its body, the
//! amount derived from the seed and the thread's run-wide number (splitmix64);
//! and every time a barrier releases a thread (the benchmarks' start gate,
//! NAS's phase barriers) it spins again, the amount derived from the seed,
//! the thread and the run-wide count of releases, so a start gate does not
//! absorb the perturbation.
//! The spin is *work*, `ns / 2` compute steps (about 2 ns each on a server
//! core; about 7 instructions each, so under `--icount shift=S` about
//! 7·2^S ns), not a wait for a clock value: under `--icount` a
//! wait for a deadline costs nothing when another CPU carries the critical
//! path meanwhile (virtual time is every CPU's instructions), so a
//! deadline-based jitter was absorbed and runs with different seeds came out
//! identical. Work shifts when each thread first blocks, wakes and writes, as
//! cache misses and interrupts do on real hardware, without changing what it
//! does.
//! Under `-icount` a run is a function of its seed: the same seed repeats
//! exactly, and the spread across seeds measures how sensitive a result is to
//! small timing differences. Without a seed nothing is perturbed.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bootcfg::SEED_JITTER_MAX_NS;

static ENABLED: AtomicBool = AtomicBool::new(false);
static SEED: AtomicU64 = AtomicU64::new(0);
/// Barrier releases so far (run-wide).
static RELEASES: AtomicU64 = AtomicU64::new(0);

/// Sets the run's seed (`None`: no jitter). Called once before any thread starts.
pub fn set_seed(seed: Option<u64>) {
    SEED.store(seed.unwrap_or(0), Ordering::Relaxed);
    ENABLED.store(seed.is_some(), Ordering::Release);
}

/// splitmix64's output function (Steele, Lea, Flood 2014).
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Start jitter of thread `tid` in ns (0 when no seed is set).
pub fn start_jitter_ns(tid: u64) -> u64 {
    if !ENABLED.load(Ordering::Acquire) {
        return 0;
    }
    let seed = SEED.load(Ordering::Relaxed);
    splitmix64(seed ^ splitmix64(tid)) % (SEED_JITTER_MAX_NS + 1)
}

/// Jitter of thread `tid` as a barrier releases it (0 when no seed is set).
pub fn release_jitter_ns(tid: u64) -> u64 {
    if !ENABLED.load(Ordering::Acquire) {
        return 0;
    }
    let n = RELEASES.fetch_add(1, Ordering::Relaxed);
    let seed = SEED.load(Ordering::Relaxed);
    splitmix64(seed ^ splitmix64(tid ^ splitmix64(n))) % (SEED_JITTER_MAX_NS + 1)
}

/// Nanoseconds per compute step of [`burn`] (a dependent multiply-add:
/// ~5 cycles at ~2.5 GHz).
const NS_PER_STEP: u64 = 2;

/// Does about `ns` of CPU work (see the module docs).
pub fn burn(ns: u64) {
    workloads::args::compute(ns / NS_PER_STEP);
}

/// Spins the release jitter of the calling thread (`--seed`).
pub fn after_release() {
    if !ENABLED.load(Ordering::Acquire) {
        return;
    }
    if let Some(me) = super::sched::current() {
        let ns = release_jitter_ns(me.tid);
        if ns > 0 {
            burn(ns);
        }
    }
}
