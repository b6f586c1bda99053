//! Kernel threads and their scheduling: thread records and stacks
//! (`thread`), the seed's start jitter (`jitter`), the glue that runs the pure
//! `sched` core and carries out its decisions (`sched`), the wake path
//! (`wake`), and wait queues (`wait`), on which every blocking primitive is
//! built.

pub mod api;
pub mod jitter;
pub mod sched;
pub mod thread;
pub mod wait;
pub mod wake;

pub use ::sched::WakeFlags;
pub use api::{
    JoinHandle, SpawnOptions, block, check_room_for_threads, sleep_ns, spawn, yield_now,
};
pub use wait::WaitQueue;
pub use wake::WF_NONE;
