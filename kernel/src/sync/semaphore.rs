//! A counting semaphore (`down` blocks while the count is zero).

use super::IrqSpinLock;
use crate::task::{self, WF_NONE, WaitQueue};

/// Counting semaphore for kernel threads.
pub struct Semaphore {
    count: IrqSpinLock<u64>,
    waiters: WaitQueue,
}

impl Semaphore {
    /// A semaphore holding `count` permits.
    pub const fn new(count: u64) -> Self {
        Semaphore {
            count: IrqSpinLock::new(count),
            waiters: WaitQueue::new(),
        }
    }

    /// Takes a permit, blocking while there is none.
    pub fn down(&self) {
        loop {
            {
                let mut c = self.count.lock();
                if *c > 0 {
                    *c -= 1;
                    break;
                }
                self.waiters.prepare();
            }
            task::block();
        }
        self.waiters.finish();
    }

    /// Returns a permit and wakes one waiter.
    pub fn up(&self) {
        *self.count.lock() += 1;
        self.waiters.wake_one(WF_NONE);
    }
}
