//! A sleeping mutex: contenders block on a wait queue instead of spinning,
//! so a preempted holder costs waiters nothing but their wakeup.
//!
//! The data sits in a plain (non-IRQ) spinlock that only the thread which
//! set `locked` ever takes, so it is never contended: it is how safe code
//! hands out `&mut T` without an `UnsafeCell`.

use core::ops::{Deref, DerefMut};

use super::IrqSpinLock;
use crate::task::{self, WF_NONE, WaitQueue};

/// Mutual exclusion around `T` for kernel threads (never from interrupts).
pub struct Mutex<T> {
    locked: IrqSpinLock<bool>,
    waiters: WaitQueue,
    /// Taken only by the holder of `locked` (uncontended).
    data: spin::Mutex<T>,
}

/// Proof of holding the mutex; unlocks on drop.
pub struct MutexGuard<'a, T> {
    mutex: &'a Mutex<T>,
    /// Released before `locked` is cleared.
    data: Option<spin::MutexGuard<'a, T>>,
}

impl<T> Mutex<T> {
    /// A new unlocked mutex.
    pub const fn new(value: T) -> Self {
        Mutex {
            locked: IrqSpinLock::new(false),
            waiters: WaitQueue::new(),
            data: spin::Mutex::new(value),
        }
    }

    /// Blocks until the mutex is ours.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        loop {
            {
                let mut locked = self.locked.lock();
                if !*locked {
                    *locked = true;
                    break;
                }
                self.waiters.prepare();
            }
            task::block();
        }
        self.waiters.finish();
        let data = self
            .data
            .try_lock()
            .expect("mutex data held without `locked`");
        MutexGuard {
            mutex: self,
            data: Some(data),
        }
    }
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.data.as_ref().expect("guard used after unlock")
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.data.as_mut().expect("guard used after unlock")
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        self.data.take();
        *self.mutex.locked.lock() = false;
        self.mutex.waiters.wake_one(WF_NONE);
    }
}
