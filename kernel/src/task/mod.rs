//! Kernel threads and their scheduling: thread records and stacks
//! (`thread`), the seed's start jitter (`jitter`), the glue that runs the pure
//! `sched` core and carries out its decisions (`sched`), and wait queues
//! (`wait`), on which every blocking primitive is built.

pub mod api;
pub mod jitter;
pub mod sched;
pub mod thread;
pub mod wait;

pub use api::{JoinHandle, SpawnOptions, block, sleep_ns, spawn, yield_now};
pub use wait::WaitQueue;
