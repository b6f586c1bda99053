//! `IrqSpinLock`: a spinlock taken with interrupts disabled on this CPU, and
//! restored to their previous state when the guard drops. Every lock that an
//! interrupt handler (tick, IPI) may take must be one of these, or a handler
//! interrupting the holder on the same CPU would spin forever.
//!
//! It is a test-and-set lock (`spin::Mutex` without `use_ticket_mutex`): a
//! ticket lock collapsed under multi-threaded TCG, where each hand-off waited
//! for the next waiter's descheduled vCPU (docs/kernel.md).
//!
//! A caller that already holds an [`IrqsOff`] token may take the lock with
//! [`IrqSpinLock::lock_irqs_off`] (the scheduler's wake and switch paths
//! do): interrupts are off and stay off, so there is no flag to save or
//! restore.

use core::ops::{Deref, DerefMut};

use spin::{Mutex, MutexGuard};
use x86_64::instructions::interrupts;

use crate::arch::irq::IrqsOff;

/// Spinlock with interrupts off while held.
pub struct IrqSpinLock<T> {
    inner: Mutex<T>,
}

/// Guard of an [`IrqSpinLock`]; re-enables interrupts on drop if they were on.
/// Fields drop in declaration order: the lock is released before the
/// interrupt flag comes back, so no handler on this CPU can find it held
/// by the code it interrupted.
pub struct IrqGuard<'a, T> {
    guard: MutexGuard<'a, T>,
    _restore: IrqRestore,
}

/// Re-enables interrupts on drop if they were on before the lock.
struct IrqRestore {
    was_enabled: bool,
}

impl Drop for IrqRestore {
    #[inline]
    fn drop(&mut self) {
        if self.was_enabled {
            interrupts::enable();
        }
    }
}

impl<T> IrqSpinLock<T> {
    /// A new unlocked lock.
    pub const fn new(value: T) -> Self {
        IrqSpinLock {
            inner: Mutex::new(value),
        }
    }

    /// Disables interrupts, then spins until the lock is ours.
    #[inline]
    pub fn lock(&self) -> IrqGuard<'_, T> {
        let was_enabled = interrupts::are_enabled();
        interrupts::disable();
        let restore = IrqRestore { was_enabled };
        IrqGuard {
            guard: self.inner.lock(),
            _restore: restore,
        }
    }

    /// Spins until the lock is ours, for a caller with interrupts off (its
    /// token proves it): nothing to save, nothing to restore. The guard
    /// borrows the token, so interrupts cannot come back while it is held.
    #[inline]
    pub fn lock_irqs_off<'a>(&'a self, _irq: &'a IrqsOff) -> MutexGuard<'a, T> {
        self.inner.lock()
    }

    /// Takes the lock if it is free (interrupts off while held).
    pub fn try_lock(&self) -> Option<IrqGuard<'_, T>> {
        let was_enabled = interrupts::are_enabled();
        interrupts::disable();
        // On failure `restore` drops here and gives the flag back.
        let restore = IrqRestore { was_enabled };
        let guard = self.inner.try_lock()?;
        Some(IrqGuard {
            guard,
            _restore: restore,
        })
    }
}

impl<T> Deref for IrqGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for IrqGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}
