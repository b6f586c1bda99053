//! The start gate of the benchmark experiments: hackbench's "ready" pipe
//! and "wake" fd. Every worker checks in and waits; the parent waits for all
//! check-ins, takes its start time, then opens the gate for everyone at once,
//! so thread creation and placement are outside the timed interval.

use core::sync::atomic::{AtomicUsize, Ordering};

use crate::sync::IrqSpinLock;
use crate::task::{self, WaitQueue};

/// hackbench's ready pipe and wake fd: workers check in, then wait until the
/// parent opens the gate.
pub struct Gate {
    ready: AtomicUsize,
    parent: WaitQueue,
    open: IrqSpinLock<bool>,
    workers: WaitQueue,
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl Gate {
    /// A closed gate nobody has checked in to.
    pub fn new() -> Gate {
        Gate {
            ready: AtomicUsize::new(0),
            parent: WaitQueue::new(),
            open: IrqSpinLock::new(false),
            workers: WaitQueue::new(),
        }
    }

    /// A worker checks in and waits for the start.
    pub fn check_in_and_wait(&self) {
        self.ready.fetch_add(1, Ordering::AcqRel);
        self.parent.wake_one(false);
        loop {
            self.workers.prepare();
            if *self.open.lock() {
                break;
            }
            task::block();
        }
        self.workers.finish();
    }

    /// The parent waits until `n` workers checked in.
    pub fn wait_ready(&self, n: usize) {
        loop {
            self.parent.prepare();
            if self.ready.load(Ordering::Acquire) >= n {
                break;
            }
            task::block();
        }
        self.parent.finish();
    }

    /// Starts everyone.
    pub fn open(&self) {
        *self.open.lock() = true;
        self.workers.wake_all(false);
    }
}
