//! Synchronisation: the interrupt-safe spinlock every shared kernel structure
//! uses, and the blocking primitives workloads use (mutex, semaphore,
//! barrier, pipe, socketpair-like channel), all built on the scheduler's wait
//! queues (`task::wait`).

pub mod barrier;
pub mod mutex;
pub mod pipe;
pub mod semaphore;
pub mod spinlock;

pub use barrier::Barrier;
pub use mutex::Mutex;
pub use pipe::{pipe, socketpair};
pub use semaphore::Semaphore;
pub use spinlock::IrqSpinLock;
