//! schedlab's pure scheduler core.
//!
//! A `no_std`, `unsafe`-free re-implementation of Linux's fair class for a
//! research kernel: CFS and EEVDF runqueues ([`fair`]), PELT ([`pelt`]),
//! wakeup and fork placement ([`placement`]), idle-core tracking
//! ([`idle`]), load balancing ([`balance`]), seed switches ([`features`]),
//! a sched_ext-like policy seam ([`policy`]) and decision counters
//! ([`stats`]). Time is always an input (`now_ns`); all math is integer.
//! The kernel drives a [`Scheduler`] under its lock and executes the
//! returned decisions (switch, IPI). See docs/scheduler.md.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod balance;
pub mod config;
pub mod core;
pub mod fair;
pub mod features;
pub mod idle;
pub mod inline_vec;
mod padded;
pub mod pelt;
pub mod placement;
pub mod policies;
pub mod policy;
pub mod record;
pub mod rq;
pub mod sched;
mod small;
pub mod stats;
pub mod task;
pub mod topo;
pub mod tunables;
pub mod weight;

#[cfg(any(test, feature = "sim"))]
pub mod sim;

pub use config::{PickPolicy, SchedConfig};
pub use core::{CpuList, Migration, Migrations};
pub use fair::pick::PickDiscipline;
pub use features::{Feat, Features};
pub use placement::WakeFlags;
pub use policy::{DynPolicy, FairPolicy, SchedPolicy};
pub use sched::{Scheduler, Start, Switch, TickResult, WakeupResult};
pub use task::{TaskId, TaskPolicy, TaskState};
pub use topo::{SchedTopo, domain_config};
pub use topology::CpuId;

#[cfg(test)]
mod testutil;

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod concurrency_tests;
