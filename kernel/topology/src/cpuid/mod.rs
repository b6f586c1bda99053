//! CPUID: [`collect`] reads the leaves on a CPU through a caller-supplied function
//! (the kernel passes the real instruction), [`decode`] turns them into a
//! [`CpuIdentity`]: x2APIC id, APIC-id layout (thread/core/die/package) and caches.

mod decode;
mod identity;
mod leaves;
mod synth;

pub use decode::{CpuidError, decode};
/// `value >> shift`, 0 for shifts of 32 or more.
pub(crate) use identity::shr as shr_pub;
pub use identity::{ApicLayout, CacheInfo, CpuIdentity, TopologySource, Vendor};
pub use leaves::{CpuidEntry, CpuidLeaves, MAX_SUBLEAVES, collect};
pub use synth::SynthCpuid;

#[cfg(test)]
mod tests;
