//! [`TopologyError`]: why a [`crate::Topology`] could not be built or is inconsistent.
//!
//! Every variant names the offending value so that the kernel console message is
//! actionable without a debugger.

use alloc::string::String;
use core::fmt;

use crate::CpuId;
use crate::acpi::AcpiError;

/// Errors from [`crate::Topology::synthetic`], [`crate::Topology::validate`] and
/// [`crate::assemble()`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopologyError {
    /// A `SyntheticSpec` field is invalid; the text names the field and the rule.
    InvalidSpec(String),
    /// The topology has no CPU.
    NoCpus,
    /// `cpus[index].cpu` is not `index`.
    CpuNumbering { index: usize, cpu: CpuId },
    /// A CPU names a node `>= nr_nodes`.
    NodeOutOfRange {
        cpu: CpuId,
        node: u32,
        nr_nodes: usize,
    },
    /// A node has no CPU.
    EmptyNode { node: u32 },
    /// The distance matrix is not `nr_nodes x nr_nodes`.
    DistanceShape { nr_nodes: usize },
    /// A distance breaks the SLIT rules (10 local, > 10 remote).
    BadDistance { from: u32, to: u32, value: u32 },
    /// Two SMT siblings disagree on package, die, node or LLC.
    SmtSiblingsSplit { cpu: CpuId, sibling: CpuId },
    /// One LLC group contains CPUs of two nodes.
    LlcSpansNodes { cpu: CpuId, other: CpuId },
    /// A cache's CPU mask is empty or sized for another CPU count.
    BadCacheMask { index: usize },
    /// Another invariant is broken (text names it).
    Inconsistent(&'static str),
    /// An ACPI table could not be used.
    Acpi(AcpiError),
    /// The MADT lists no enabled processor.
    NoEnabledCpus,
    /// The boot processor's APIC id is not an enabled MADT processor.
    BspNotInMadt { apic_id: u32 },
    /// Two enabled MADT processors have the same APIC id.
    DuplicateApicId { apic_id: u32 },
    /// No CPUID data was supplied for the boot processor.
    NoCpuidForBsp { apic_id: u32 },
}

impl From<AcpiError> for TopologyError {
    fn from(e: AcpiError) -> Self {
        TopologyError::Acpi(e)
    }
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use TopologyError as E;
        match self {
            E::InvalidSpec(s) => write!(f, "synthetic topology: {s}"),
            E::NoCpus => f.write_str("topology has no CPU"),
            E::CpuNumbering { index, cpu } => write!(f, "cpus[{index}] has cpu number {cpu}"),
            E::NodeOutOfRange {
                cpu,
                node,
                nr_nodes,
            } => {
                write!(
                    f,
                    "CPU{cpu} is on node {node} but there are only {nr_nodes} nodes"
                )
            }
            E::EmptyNode { node } => write!(f, "node {node} has no CPU"),
            E::DistanceShape { nr_nodes } => {
                write!(f, "distance matrix is not {nr_nodes}x{nr_nodes}")
            }
            E::BadDistance { from, to, value } => write!(
                f,
                "distance {from}->{to} is {value}: local must be 10 and remote above 10"
            ),
            E::SmtSiblingsSplit { cpu, sibling } => write!(
                f,
                "SMT siblings CPU{cpu} and CPU{sibling} differ in package, die, node or LLC"
            ),
            E::LlcSpansNodes { cpu, other } => {
                write!(
                    f,
                    "CPU{cpu} and CPU{other} share an LLC but are on different nodes"
                )
            }
            E::BadCacheMask { index } => {
                write!(f, "cache {index} has an empty or mis-sized CPU mask")
            }
            E::Inconsistent(s) => write!(f, "inconsistent topology: {s}"),
            E::Acpi(e) => write!(f, "{e}"),
            E::NoEnabledCpus => f.write_str("MADT: no enabled processor entry"),
            E::BspNotInMadt { apic_id } => {
                write!(
                    f,
                    "MADT: boot CPU APIC id {apic_id} has no enabled processor entry"
                )
            }
            E::DuplicateApicId { apic_id } => {
                write!(
                    f,
                    "MADT: APIC id {apic_id} appears in two enabled processor entries"
                )
            }
            E::NoCpuidForBsp { apic_id } => {
                write!(f, "CPUID: no data for the boot CPU (APIC id {apic_id})")
            }
        }
    }
}
