//! `IrqSpinLock`: a spinlock taken with interrupts disabled on this CPU, and
//! restored to their previous state when the guard drops. Every lock that an
//! interrupt handler (tick, IPI) may take must be one of these, or a handler
//! interrupting the holder on the same CPU would spin forever.
//!
//! It is a test-and-set lock (`spin::Mutex` without `use_ticket_mutex`): a
//! ticket lock collapsed under multi-threaded TCG, where each hand-off waited
//! for the next waiter's descheduled vCPU (docs/kernel.md).

use core::ops::{Deref, DerefMut};

use spin::{Mutex, MutexGuard};
use x86_64::instructions::interrupts;

/// Spinlock with interrupts off while held.
pub struct IrqSpinLock<T> {
    inner: Mutex<T>,
}

/// Guard of an [`IrqSpinLock`]; re-enables interrupts on drop if they were on.
pub struct IrqGuard<'a, T> {
    guard: Option<MutexGuard<'a, T>>,
    irq_was_enabled: bool,
}

impl<T> IrqSpinLock<T> {
    /// A new unlocked lock.
    pub const fn new(value: T) -> Self {
        IrqSpinLock {
            inner: Mutex::new(value),
        }
    }

    /// Disables interrupts, then spins until the lock is ours.
    pub fn lock(&self) -> IrqGuard<'_, T> {
        let irq_was_enabled = interrupts::are_enabled();
        interrupts::disable();
        IrqGuard {
            guard: Some(self.inner.lock()),
            irq_was_enabled,
        }
    }

    /// Takes the lock if it is free (interrupts off while held).
    pub fn try_lock(&self) -> Option<IrqGuard<'_, T>> {
        let irq_was_enabled = interrupts::are_enabled();
        interrupts::disable();
        match self.inner.try_lock() {
            Some(g) => Some(IrqGuard {
                guard: Some(g),
                irq_was_enabled,
            }),
            None => {
                if irq_was_enabled {
                    interrupts::enable();
                }
                None
            }
        }
    }
}

impl<T> Deref for IrqGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().expect("guard used after unlock")
    }
}

impl<T> DerefMut for IrqGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_mut().expect("guard used after unlock")
    }
}

impl<T> Drop for IrqGuard<'_, T> {
    fn drop(&mut self) {
        self.guard.take();
        if self.irq_was_enabled {
            interrupts::enable();
        }
    }
}
