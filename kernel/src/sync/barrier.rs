//! A reusable barrier for `n` threads (NAS-style compute phases).
//!
//! A waiter that is not the last to arrive may first spin: it polls the
//! round's generation with `pause` for as many polls as take `spin_ns` on
//! this machine (measured once), as libgomp's `gomp_barrier_wait` does for
//! `GOMP_SPINCOUNT` polls before its futex wait, and only then sleeps on
//! the wait queue. A released spinner needs no
//! wakeup; the last arrival wakes only the threads that went to sleep.

use core::sync::atomic::{AtomicU64, Ordering};

use super::IrqSpinLock;
use crate::arch::time;
use crate::task::{self, WF_NONE, WaitQueue};

struct State {
    arrived: usize,
}

/// Blocks each caller until `n` threads have called `wait`.
pub struct Barrier {
    n: usize,
    spin_ns: u64,
    state: IrqSpinLock<State>,
    /// The round number, advanced under `state`'s lock by the last arrival
    /// and read without it by spinners (release/acquire).
    generation: AtomicU64,
    waiters: WaitQueue,
}

impl Barrier {
    /// A barrier for `n` (>= 1) threads whose waiters sleep at once.
    pub fn new(n: usize) -> Self {
        Self::with_spin(n, 0)
    }

    /// A barrier for `n` (>= 1) threads whose waiters spin up to `spin_ns`
    /// before they sleep.
    pub fn with_spin(n: usize, spin_ns: u64) -> Self {
        assert!(n >= 1, "barrier for zero threads");
        Barrier {
            n,
            spin_ns,
            state: IrqSpinLock::new(State { arrived: 0 }),
            generation: AtomicU64::new(0),
            waiters: WaitQueue::new(),
        }
    }

    /// Waits for the others; returns true in exactly one thread per round
    /// (the last to arrive).
    pub fn wait(&self) -> bool {
        let generation = {
            let mut s = self.state.lock();
            s.arrived += 1;
            if s.arrived == self.n {
                s.arrived = 0;
                self.generation.fetch_add(1, Ordering::Release);
                drop(s);
                self.waiters.wake_all(WF_NONE);
                return true;
            }
            self.generation.load(Ordering::Relaxed)
        };
        if self.spin(generation) {
            return false;
        }
        loop {
            {
                let _s = self.state.lock();
                if self.generation.load(Ordering::Relaxed) != generation {
                    break;
                }
                self.waiters.prepare();
            }
            task::block();
        }
        self.waiters.finish();
        false
    }

    /// Polls for the end of round `generation` for up to `spin_ns` of this
    /// thread's CPU time; true if it ended.
    fn spin(&self, generation: u64) -> bool {
        if self.spin_ns == 0 {
            return false;
        }
        (0..batches_for(self.spin_ns)).any(|_| poll_batch(&self.generation, generation))
    }
}

/// Polls in one batch (between checks of the budget).
const POLLS_PER_BATCH: u32 = 64;
/// Batches timed to measure a batch's cost.
const CALIBRATION_BATCHES: u64 = 256;

/// What a batch of polls costs on this machine (ns), measured on first
/// use; 0 until then.
static NS_PER_BATCH: AtomicU64 = AtomicU64::new(0);

/// A spin budget as a count of poll batches, as libgomp's is a count of
/// polls: a spinner that is preempted does not use it up (the simulator
/// counts the same CPU time), and the loop reads no clock (under QEMU
/// `-icount` every `rdtsc` is an exit to the emulator).
fn batches_for(ns: u64) -> u64 {
    let mut per = NS_PER_BATCH.load(Ordering::Relaxed);
    if per == 0 {
        let probe = AtomicU64::new(0);
        let t0 = time::rdtsc();
        for _ in 0..CALIBRATION_BATCHES {
            poll_batch(&probe, 0);
        }
        per = (time::tsc_to_ns(time::rdtsc().wrapping_sub(t0)) / CALIBRATION_BATCHES).max(1);
        NS_PER_BATCH.store(per, Ordering::Relaxed);
    }
    ns.div_ceil(per)
}

/// One batch of polls of `g` with `pause` (libgomp's `do_spin`: a relaxed
/// load, then `cpu_relax`); true as soon as `g` differs from `generation`.
fn poll_batch(g: &AtomicU64, generation: u64) -> bool {
    for _ in 0..POLLS_PER_BATCH {
        if g.load(Ordering::Acquire) != generation {
            return true;
        }
        core::hint::spin_loop();
    }
    false
}
