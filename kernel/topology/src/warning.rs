//! [`Warning`]: facts that firmware or CPUID got wrong or left out, and the fallback
//! that was used instead. Warnings never stop the boot; each says what was assumed.

use core::fmt;

use crate::acpi::AcpiError;
use crate::acpi::error::Table;
use crate::acpi::error::write_sig;

/// A non-fatal problem found while parsing or assembling the topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// A table listed in the RSDT/XSDT could not be read or validated; it was skipped.
    TableSkipped { phys: u64, error: AcpiError },
    /// A MADT local APIC entry has the invalid APIC id 0xff; it was ignored.
    MadtInvalidApicId { index: usize },
    /// An SRAT processor entry names an APIC id with no enabled MADT processor.
    SratCpuNotInMadt { apic_id: u32, x2apic: bool },
    /// The SRAT could not be parsed; one node assumed (Linux: "SRAT not used").
    SratIgnored(AcpiError),
    /// The SLIT could not be used; default distances assumed.
    SlitIgnored(AcpiError),
    /// The RSDT/XSDT lists a second table with this signature; only the first is used.
    DuplicateTable {
        table: Table,
        used: u64,
        ignored: u64,
    },
    /// A SLIT distance between two scheduling nodes is 255 (ACPI: no connection);
    /// the SLIT is not used for distances (10 local / 20 remote assumed).
    SlitUnreachable { from: u32, to: u32 },
    /// Several nodes but no SLIT: 10 local / 20 remote assumed.
    NoSlit { nodes: usize },
    /// A proximity domain is beyond the SLIT's localities: default distances for it.
    SlitMissingDomain {
        proximity_domain: u32,
        localities: usize,
    },
    /// A proximity domain has memory but no CPU; it is not a scheduling node.
    MemoryOnlyDomain { proximity_domain: u32 },
    /// A MADT CPU has no SRAT affinity entry although the SRAT lists others; node 0 used.
    CpuNotInSrat { apic_id: u32 },
    /// No CPUID data for a MADT CPU; its ids were derived from its APIC id with the
    /// boot CPU's APIC-id layout.
    CpuidMissing { apic_id: u32 },
    /// CPUID data was supplied for an APIC id that is no enabled MADT processor.
    CpuidForUnknownCpu { apic_id: u32 },
    /// A CPU's CPUID APIC-id layout differs from the boot CPU's; the boot CPU's was
    /// used for every CPU (as Linux 6.9+ does).
    LayoutMismatch { apic_id: u32 },
    /// The x2APIC id a CPU reports differs from the one it was listed under.
    ApicIdMismatch { listed: u32, reported: u32 },
    /// The CPUID vendor string is neither GenuineIntel nor AuthenticAMD/HygonGenuine.
    UnknownVendor { vendor: [u8; 12] },
    /// No topology leaf (0x1F, 0xB, 0x8000001E, legacy 1/4): each CPU its own core and
    /// package.
    NoTopologyLeaf,
    /// Only legacy leaves 1/4 described the topology (no 0xB/0x1F/0x8000001E).
    LegacyTopology,
    /// No cache leaf (4 or 0x8000001D): no cache and no shared LLC is known; each core
    /// is its own LLC group.
    NoCacheLeaf,
    /// A CPUID leaf the decoder needed was beyond the reported maximum or absent.
    LeafMissing { leaf: u32 },
    /// A CPUID topology leaf had an inconsistent shift (not increasing); ignored.
    BadTopologyShift { leaf: u32, subleaf: u32 },
    /// CPUs sharing an LLC according to CPUID are on different nodes; the LLC was
    /// split at the node boundary (Linux `topology_sane` "Ignoring dependency").
    LlcSplitByNode { cpu: usize, other: usize },
    /// SMT siblings according to CPUID are on different nodes; split into cores.
    SmtSplitByNode { cpu: usize, other: usize },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Warning as W;
        match self {
            W::TableSkipped { phys, error } => write!(f, "ACPI: table at {phys:#x} skipped: {error}"),
            W::MadtInvalidApicId { index } => {
                write!(f, "MADT: entry {index} (local APIC) has APIC id 0xff (invalid); ignored")
            }
            W::SratCpuNotInMadt { apic_id, x2apic: false } => {
                write!(f, "SRAT: processor APIC id {apic_id} has no MADT entry")
            }
            W::SratCpuNotInMadt { apic_id, x2apic: true } => {
                write!(f, "SRAT: processor x2APIC id {apic_id} has no MADT entry")
            }
            W::SratIgnored(e) => write!(f, "{e}; SRAT ignored, one node assumed"),
            W::SlitIgnored(e) => write!(f, "{e}; SLIT ignored, distances 10 local / 20 remote assumed"),
            W::DuplicateTable { table, used, ignored } => write!(
                f,
                "{table}: a second table at {ignored:#x} ignored; the first at {used:#x} is used"
            ),
            W::SlitUnreachable { from, to } => write!(
                f,
                "SLIT: distance from proximity domain {from} to {to} is 255 (no connection), but both have CPUs; SLIT not used, distances 10 local / 20 remote assumed"
            ),
            W::NoSlit { nodes } => {
                write!(f, "SLIT: absent with {nodes} nodes; distances 10 local / 20 remote assumed")
            }
            W::SlitMissingDomain { proximity_domain, localities } => write!(
                f,
                "SLIT: proximity domain {proximity_domain} is beyond its {localities} localities; default distances used"
            ),
            W::MemoryOnlyDomain { proximity_domain } => write!(
                f,
                "SRAT: proximity domain {proximity_domain} has memory but no CPU; not a scheduling node"
            ),
            W::CpuNotInSrat { apic_id } => {
                write!(f, "SRAT: CPU with APIC id {apic_id} has no affinity entry; placed on node 0")
            }
            W::CpuidMissing { apic_id } => write!(
                f,
                "CPUID: no data for APIC id {apic_id}; ids derived with the boot CPU's APIC-id layout"
            ),
            W::CpuidForUnknownCpu { apic_id } => {
                write!(f, "CPUID: data for APIC id {apic_id}, which is no enabled MADT processor; ignored")
            }
            W::LayoutMismatch { apic_id } => write!(
                f,
                "CPUID: APIC id {apic_id} reports an APIC-id layout different from the boot CPU's; boot CPU's used"
            ),
            W::ApicIdMismatch { listed, reported } => {
                write!(f, "CPUID: CPU listed with APIC id {listed} reports x2APIC id {reported}")
            }
            W::UnknownVendor { vendor } => {
                f.write_str("CPUID: unknown vendor \"")?;
                for chunk in vendor.chunks(4) {
                    let c: [u8; 4] = chunk.try_into().unwrap_or_default();
                    write_sig(f, &c)?;
                }
                f.write_str("\"; only vendor-neutral leaves used")
            }
            W::NoTopologyLeaf => f.write_str(
                "CPUID: no topology leaf (0x1F, 0xB, 0x8000001E, 1/4); each CPU taken as its own core and package",
            ),
            W::LegacyTopology => {
                f.write_str("CPUID: no leaf 0xB/0x1F/0x8000001E; topology from legacy leaves 1 and 4")
            }
            W::NoCacheLeaf => f.write_str(
                "CPUID: no cache leaf (4 or 0x8000001D); no shared cache known, each core its own LLC group",
            ),
            W::LeafMissing { leaf } => write!(f, "CPUID: leaf {leaf:#x} not available"),
            W::BadTopologyShift { leaf, subleaf } => write!(
                f,
                "CPUID: leaf {leaf:#x} subleaf {subleaf} has a shift below the previous level's; ignored"
            ),
            W::LlcSplitByNode { cpu, other } => write!(
                f,
                "CPU{cpu} and CPU{other} share an LLC per CPUID but are on different nodes; LLC split at the node"
            ),
            W::SmtSplitByNode { cpu, other } => write!(
                f,
                "CPU{cpu} and CPU{other} are SMT siblings per CPUID but on different nodes; treated as separate cores"
            ),
        }
    }
}
