//! A sleeping mutex: contenders block on a wait queue instead of spinning,
//! so a preempted holder costs waiters nothing but their wakeup.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};

use super::IrqSpinLock;
use crate::task::{self, WaitQueue};

/// Mutual exclusion around `T` for kernel threads (never from interrupts).
pub struct Mutex<T> {
    locked: IrqSpinLock<bool>,
    waiters: WaitQueue,
    data: UnsafeCell<T>,
}

// SAFETY: `data` is only reachable through a `MutexGuard`, and at most one
// guard exists at a time (the `locked` flag is set under the spinlock).
unsafe impl<T: Send> Sync for Mutex<T> {}
// SAFETY: moving the mutex moves the `T` it owns.
unsafe impl<T: Send> Send for Mutex<T> {}

/// Proof of holding the mutex; unlocks on drop.
pub struct MutexGuard<'a, T> {
    mutex: &'a Mutex<T>,
}

impl<T> Mutex<T> {
    /// A new unlocked mutex.
    pub const fn new(value: T) -> Self {
        Mutex {
            locked: IrqSpinLock::new(false),
            waiters: WaitQueue::new(),
            data: UnsafeCell::new(value),
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
        MutexGuard { mutex: self }
    }
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one (see `Sync` impl).
        unsafe { &*self.mutex.data.get() }
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard is the only one (see `Sync` impl).
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        *self.mutex.locked.lock() = false;
        self.mutex.waiters.wake_one(false);
    }
}
