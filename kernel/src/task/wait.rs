//! Wait queues: the one way a thread sleeps until some condition holds.
//!
//! Protocol (Linux's prepare_to_wait / schedule / finish_wait):
//! ```text
//! loop {
//!     wq.prepare();                 // enqueue self (under the primitive's lock)
//!     if condition() { break }      // checked under the primitive's lock
//!     task::block();                // sleeps unless a wakeup already arrived
//! }
//! wq.finish();
//! ```
//! A waker changes the condition, then calls `wake_one`/`wake_all`. A wakeup
//! that lands between `prepare` and `block` is remembered by the scheduler
//! (`wake_pending`) and makes `block` return at once, so none is ever lost.

use alloc::sync::Arc;
use alloc::vec::Vec;

use super::thread::Thread;
use super::{sched, wake};
use crate::sync::IrqSpinLock;
use ::sched::WakeFlags;

/// Threads waiting for one condition.
pub struct WaitQueue {
    waiters: IrqSpinLock<Vec<Arc<Thread>>>,
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitQueue {
    /// An empty queue.
    pub const fn new() -> Self {
        WaitQueue {
            waiters: IrqSpinLock::new(Vec::new()),
        }
    }

    /// Adds the current thread (once) before it checks its condition.
    pub fn prepare(&self) {
        let me = sched::current().expect("waiting outside a thread");
        let mut w = self.waiters.lock();
        if !w.iter().any(|t| Arc::ptr_eq(t, &me)) {
            w.push(me);
        }
    }

    /// Removes the current thread (after its condition held).
    pub fn finish(&self) {
        if let Some(me) = sched::current() {
            self.waiters.lock().retain(|t| !Arc::ptr_eq(t, &me));
        }
    }

    /// Wakes the longest waiter with the caller's `flags`; false if nobody
    /// waited.
    pub fn wake_one(&self, flags: WakeFlags) -> bool {
        let t = {
            let mut w = self.waiters.lock();
            if w.is_empty() {
                None
            } else {
                Some(w.remove(0))
            }
        };
        match t {
            Some(t) => {
                wake::wake(&t, flags);
                true
            }
            None => false,
        }
    }

    /// Wakes every waiter with the caller's `flags`; returns how many.
    pub fn wake_all(&self, flags: WakeFlags) -> usize {
        let all = core::mem::take(&mut *self.waiters.lock());
        for t in &all {
            wake::wake(t, flags);
        }
        all.len()
    }
}
