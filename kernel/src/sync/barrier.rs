//! A reusable barrier for `n` threads (NAS-style compute phases).

use super::IrqSpinLock;
use crate::task::{self, WF_NONE, WaitQueue};

struct State {
    arrived: usize,
    generation: u64,
}

/// Blocks each caller until `n` threads have called `wait`.
pub struct Barrier {
    n: usize,
    state: IrqSpinLock<State>,
    waiters: WaitQueue,
}

impl Barrier {
    /// A barrier for `n` (>= 1) threads.
    pub fn new(n: usize) -> Self {
        assert!(n >= 1, "barrier for zero threads");
        Barrier {
            n,
            state: IrqSpinLock::new(State {
                arrived: 0,
                generation: 0,
            }),
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
                s.generation += 1;
                drop(s);
                self.waiters.wake_all(WF_NONE);
                return true;
            }
            s.generation
        };
        loop {
            {
                let s = self.state.lock();
                if s.generation != generation {
                    break;
                }
                self.waiters.prepare();
            }
            task::block();
        }
        self.waiters.finish();
        false
    }
}
