//! Inter-processor interrupts: reschedule, and "run this function on CPU x /
//! on all CPUs" with completion.
//!
//! A call is queued on the target's per-CPU list, then a call-function IPI is
//! sent; the target's handler drains its list in interrupt context and counts
//! each finished call down on a shared completion counter the caller waits on.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};

use x86_64::instructions::interrupts;

use super::apic::{self, CALL_FUNCTION_VECTOR, RESCHEDULE_VECTOR};
use super::percpu::{self, PerCpu};

/// A queued function and the completion counter to decrement when it is done.
pub struct CallRequest {
    func: Box<dyn FnOnce() + Send>,
    pending: Arc<AtomicUsize>,
}

/// Waitable completion of one or more calls.
pub struct Completion(Arc<AtomicUsize>);

impl Completion {
    /// Spins until every call finished or `timeout_ns` passed; true if finished.
    pub fn wait_timeout(&self, timeout_ns: u64) -> bool {
        let end = super::time::now_ns() + timeout_ns;
        while self.0.load(Ordering::Acquire) != 0 {
            if super::time::now_ns() > end {
                return false;
            }
            core::hint::spin_loop();
        }
        true
    }

    /// Calls not finished yet.
    pub fn pending(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }
}

fn queue(target: &PerCpu, func: Box<dyn FnOnce() + Send>, pending: &Arc<AtomicUsize>) {
    interrupts::without_interrupts(|| {
        target.calls.lock().push(CallRequest {
            func,
            pending: pending.clone(),
        });
    });
    apic::send_ipi(target.apic_id, CALL_FUNCTION_VECTOR);
}

/// Runs `func` on online CPU `cpu` (by IPI, also when `cpu` is the caller).
/// Panics if `cpu` is not online.
pub fn call_on(cpu: usize, func: impl FnOnce() + Send + 'static) -> Completion {
    let target = percpu::get(cpu).filter(|p| p.is_online());
    let target = target.unwrap_or_else(|| panic!("call_on: CPU {cpu} is not online"));
    let pending = Arc::new(AtomicUsize::new(1));
    queue(target, Box::new(func), &pending);
    Completion(pending)
}

/// Runs `func(cpu)` on every online CPU, the caller included.
pub fn call_on_all(func: impl Fn(u32) + Send + Sync + 'static) -> Completion {
    let func = Arc::new(func);
    let targets: alloc::vec::Vec<&PerCpu> = percpu::online().collect();
    let pending = Arc::new(AtomicUsize::new(targets.len()));
    // With interrupts off, our own (self-)IPI waits until every request is
    // queued and sent; otherwise it could run first and never return.
    interrupts::without_interrupts(|| {
        for t in targets {
            let f = func.clone();
            let cpu = t.cpu;
            queue(t, Box::new(move || f(cpu)), &pending);
        }
    });
    Completion(pending)
}

/// Asks `cpu` to reschedule.
pub fn send_reschedule(cpu: usize) {
    if let Some(p) = percpu::get(cpu) {
        apic::send_ipi(p.apic_id, RESCHEDULE_VECTOR);
    }
}

/// Handler of the call-function IPI (interrupt context).
pub fn handle_call_function() {
    let me = percpu::current();
    me.call_ipis.fetch_add(1, Ordering::Relaxed);
    loop {
        let batch = core::mem::take(&mut *me.calls.lock());
        if batch.is_empty() {
            break;
        }
        for req in batch {
            (req.func)();
            req.pending.fetch_sub(1, Ordering::Release);
        }
    }
}

/// Handler of the reschedule IPI (interrupt context).
pub fn handle_reschedule() {
    percpu::current()
        .resched_ipis
        .fetch_add(1, Ordering::Relaxed);
}
