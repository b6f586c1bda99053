//! The interrupt flag of this CPU, and the one proof that it is clear.
//!
//! [`IrqsOff`] is a zero-sized token that only exists while interrupts are
//! off on the CPU that holds it. Code that must run with interrupts off (the
//! scheduler glue's `schedule`, `switch_to`, `wake`, the tick and IPI hooks)
//! takes `&IrqsOff` instead of carrying an `_irqs_off` suffix, so the compiler
//! checks what used to be a naming convention. Tokens come from:
//! - [`save_disable`]: disables interrupts, lends a token, restores the
//!   previous state when the [`IrqSave`] guard drops;
//! - [`without`]: the same around a closure;
//! - [`disable`]: disables for good (exit path, idle loop); the token is
//!   given back by [`enable`] or [`enable_and_hlt`], which consume it;
//! - interrupt entry (`trap.rs`): handlers run with IF = 0 and get a token.
//!
//! The token is neither `Send` nor `Sync` (it belongs to one CPU) and not
//! `Clone`. A context switch made with a token held resumes another context
//! that also switched with interrupts off, so the token stays true across
//! `switch_to`. Limit: dropping an outer [`IrqSave`] (which re-enables)
//! while an inner one lives would leave the inner token wrong; guards are
//! always dropped in scope order in this kernel.

use core::marker::PhantomData;

use x86_64::instructions::interrupts;

/// Proof that interrupts are off on this CPU (see the module docs).
pub struct IrqsOff {
    /// `!Send + !Sync`: a token is only true on the CPU that made it.
    _cpu_local: PhantomData<*mut ()>,
}

impl IrqsOff {
    /// A token for code entered with interrupts off by the hardware
    /// (interrupt and exception entry).
    ///
    /// # Safety
    /// Interrupts must be off now and stay off while the token lives.
    pub(super) unsafe fn assume() -> IrqsOff {
        debug_assert!(!interrupts::are_enabled(), "IrqsOff with interrupts on");
        IrqsOff {
            _cpu_local: PhantomData,
        }
    }
}

/// Interrupts disabled, the previous state restored on drop.
pub struct IrqSave {
    were_on: bool,
    off: IrqsOff,
}

impl IrqSave {
    /// The proof that interrupts are off while this guard lives.
    pub fn irqs(&self) -> &IrqsOff {
        &self.off
    }

    /// Whether interrupts were on before this guard disabled them (they come
    /// back on when it drops).
    pub fn were_on(&self) -> bool {
        self.were_on
    }
}

impl Drop for IrqSave {
    fn drop(&mut self) {
        if self.were_on {
            interrupts::enable();
        }
    }
}

/// Disables interrupts on this CPU until the returned guard drops.
pub fn save_disable() -> IrqSave {
    let were_on = interrupts::are_enabled();
    interrupts::disable();
    // SAFETY: interrupts were just disabled; they come back on only when
    // the guard, which owns the token, drops.
    let off = unsafe { IrqsOff::assume() };
    IrqSave { were_on, off }
}

/// Runs `f` with interrupts off, then restores their previous state.
pub fn without<R>(f: impl FnOnce(&IrqsOff) -> R) -> R {
    let g = save_disable();
    f(g.irqs())
}

/// Disables interrupts; they stay off until the token is given to
/// [`enable`] or [`enable_and_hlt`].
pub fn disable() -> IrqsOff {
    interrupts::disable();
    // SAFETY: interrupts were just disabled; only `enable`/`enable_and_hlt`,
    // which consume the token, turn them back on.
    unsafe { IrqsOff::assume() }
}

/// Enables interrupts, giving up the proof that they were off.
pub fn enable(_off: IrqsOff) {
    interrupts::enable();
}

/// `sti; hlt`: enables interrupts and halts until the next one, atomically
/// (no interrupt can arrive between the two).
pub fn enable_and_hlt(_off: IrqsOff) {
    interrupts::enable_and_hlt();
}

/// Enables interrupts where no token is held: the boot CPU and APs once
/// they are set up, and the first code of a new thread (entered by a switch
/// made with interrupts off; the switcher's token stays with its context).
pub fn enable_unguarded() {
    interrupts::enable();
}

/// Whether interrupts are enabled on this CPU (assertions, reports).
pub fn are_enabled() -> bool {
    interrupts::are_enabled()
}
