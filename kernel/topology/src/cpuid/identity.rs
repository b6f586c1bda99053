//! The decoded view of one CPU's CPUID: [`CpuIdentity`], its APIC-id layout
//! ([`ApicLayout`]) and caches ([`CacheInfo`]).

use alloc::vec::Vec;

use crate::topo::CacheKind;
use crate::warning::Warning;

/// CPU vendor from leaf 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    /// "GenuineIntel".
    Intel,
    /// "AuthenticAMD".
    Amd,
    /// "HygonGenuine" (AMD-compatible).
    Hygon,
    /// Anything else (raw 12-byte string).
    Other([u8; 12]),
}

impl Vendor {
    /// True for AMD and Hygon (AMD topology/cache leaves apply).
    pub fn is_amd_like(self) -> bool {
        matches!(self, Vendor::Amd | Vendor::Hygon)
    }
}

/// Where the APIC-id layout came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopologySource {
    /// Leaf 0x1F (V2 extended topology).
    Leaf1F,
    /// Leaf 0xB (extended topology).
    Leaf0B,
    /// AMD leaves 0x8000001E (threads per core) and 0x80000008 (core id size).
    AmdExtended,
    /// Legacy leaf 1 (logical count) and leaf 4 / 0x80000008 (core count).
    Legacy,
    /// Nothing usable: every CPU its own core and package.
    None,
}

/// How an APIC id splits into thread / core / die / package fields (Linux 6.x
/// `topo_shift_apicid` with the domain shifts of the boot CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApicLayout {
    /// Bits of the SMT (thread) field; `apic >> smt_shift` identifies the core.
    pub smt_shift: u32,
    /// `apic >> die_shift` identifies the die (equals `pkg_shift` without dies).
    pub die_shift: u32,
    /// `apic >> pkg_shift` identifies the package.
    pub pkg_shift: u32,
    /// Source of the shifts.
    pub source: TopologySource,
}

/// `value >> shift`, 0 for shifts of 32 or more.
pub(crate) fn shr(value: u32, shift: u32) -> u32 {
    value.checked_shr(shift).unwrap_or(0)
}

impl ApicLayout {
    /// Thread index within the core (the SMT field).
    pub fn thread_field(&self, apic: u32) -> u32 {
        apic & !shr(u32::MAX, self.smt_shift)
            .checked_shl(self.smt_shift)
            .unwrap_or(0)
    }
    /// System-unique core key.
    pub fn core_key(&self, apic: u32) -> u32 {
        shr(apic, self.smt_shift)
    }
    /// System-unique die key.
    pub fn die_key(&self, apic: u32) -> u32 {
        shr(apic, self.die_shift)
    }
    /// Package key.
    pub fn pkg_key(&self, apic: u32) -> u32 {
        shr(apic, self.pkg_shift)
    }
}

/// One cache level as a CPU describes it (leaf 4 / 0x8000001D).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheInfo {
    /// Cache level.
    pub level: u8,
    /// Data, instruction or unified.
    pub kind: CacheKind,
    /// ways x partitions x line x sets.
    pub size_bytes: u64,
    /// Line size.
    pub line_bytes: u32,
    /// Ways of associativity.
    pub ways: u32,
    /// Physical line partitions.
    pub partitions: u32,
    /// Sets.
    pub sets: u64,
    /// Fully associative (EAX bit 9).
    pub fully_associative: bool,
    /// `get_count_order(max sharing ids)`: CPUs whose `apic >> sharing_shift` agree
    /// share one instance.
    pub sharing_shift: u32,
}

impl CacheInfo {
    /// Key identifying the instance used by the CPU with this APIC id.
    pub fn instance_key(&self, apic: u32) -> u32 {
        shr(apic, self.sharing_shift)
    }
}

/// Everything the topology needs from one CPU's CPUID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuIdentity {
    /// Vendor.
    pub vendor: Vendor,
    /// Display family (base + extended).
    pub family: u32,
    /// Display model (base + extended for family 6 / >= 0xF).
    pub model: u32,
    /// Stepping.
    pub stepping: u32,
    /// x2APIC id (0x1F/0xB EDX, AMD 0x8000001E EAX, or leaf 1 `EBX[31:24]`).
    pub x2apic_id: Option<u32>,
    /// APIC-id layout.
    pub layout: ApicLayout,
    /// Caches, in leaf order (L1d, L1i, L2, L3 typically).
    pub caches: Vec<CacheInfo>,
    /// Highest basic leaf.
    pub max_basic_leaf: u32,
    /// Highest extended leaf (0 when none).
    pub max_ext_leaf: u32,
    /// What was missing or odd, and the fallback used.
    pub warnings: Vec<Warning>,
}

/// Bits `[lo, hi)` of `v`.
fn bits(v: u32, lo: u32, hi: u32) -> u32 {
    let width = hi.saturating_sub(lo);
    let mask = if width >= 32 {
        u32::MAX
    } else {
        (1u32 << width) - 1
    };
    shr(v, lo) & mask
}

impl CpuIdentity {
    /// SMT (thread) id within the core, from this CPU's own x2APIC id.
    pub fn smt_id(&self) -> Option<u32> {
        self.x2apic_id.map(|a| self.layout.thread_field(a))
    }
    /// Core id within the die (APIC-id bits between the SMT and die shifts; may be sparse).
    pub fn core_id(&self) -> Option<u32> {
        self.x2apic_id
            .map(|a| bits(a, self.layout.smt_shift, self.layout.die_shift))
    }
    /// Die id within the package (0 without a die level).
    pub fn die_id(&self) -> Option<u32> {
        self.x2apic_id
            .map(|a| bits(a, self.layout.die_shift, self.layout.pkg_shift))
    }
    /// Package id (APIC-id bits above the package shift).
    pub fn package_id(&self) -> Option<u32> {
        self.x2apic_id.map(|a| self.layout.pkg_key(a))
    }

    /// The last-level cache: highest level among data and unified caches.
    pub fn llc(&self) -> Option<&CacheInfo> {
        self.caches
            .iter()
            .filter(|c| c.kind != CacheKind::Instruction)
            .max_by_key(|c| c.level)
    }
}
