//! Synchronisation: the interrupt-safe spinlock every shared kernel structure
//! uses, and the blocking primitives workloads use (mutex, semaphore,
//! barrier, pipe, channel), all built on the scheduler's wait queues.

pub mod spinlock;

pub use spinlock::IrqSpinLock;
