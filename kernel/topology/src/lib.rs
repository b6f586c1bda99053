//! `topology`: the pure machine model of schedlab.
//!
//! Firmware facts (ACPI MADT/SRAT/SLIT, CPUID leaves) become a plain [`Topology`] value;
//! [`build_sched_domains`] turns it into Linux-style scheduling domains. No hardware
//! access and no `unsafe`: the kernel supplies memory and CPUID results through
//! closures/traits, the host tests supply fixtures. See `docs/topology.md`.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod acpi;
mod assemble;
pub mod cpuid;
pub mod domains;
mod error;
mod lscpu;
mod mask;
mod synthetic;
mod topo;
mod warning;

pub use assemble::assemble;
pub use domains::flags::*;
pub use domains::{
    DomainConfig, SchedDomain, SchedDomains, SchedGroup, SdFlags, SpanFixup, build_sched_domains,
    build_sched_domains_with,
};
pub use error::TopologyError;
pub use lscpu::{lscpu_table, numa_table};
pub use mask::{CpuMask, Iter as CpuMaskIter, WrapIter};
pub use synthetic::{MAX_SYNTHETIC_CPUS, SyntheticSpec, qemu_max_apic_id};
pub use topo::{
    Cache, CacheKind, CpuTopo, LOCAL_DISTANCE, REMOTE_DISTANCE, Topology, default_distances,
    validate_distances,
};
pub use warning::Warning;

/// Dense logical CPU number `0..nr_cpus` (BSP = 0, then MADT order).
pub type CpuId = usize;
