//! [`decode`]: [`CpuidLeaves`] -> [`CpuIdentity`].
//!
//! Topology (mirrors Linux 6.x `arch/x86/kernel/cpu/topology_*.c`): leaf 0x1F, else
//! 0xB (`cpu_parse_topology_ext`, any vendor), else on AMD/Hygon with TOPOEXT leaves
//! 0x8000001E + 0x80000008 (`parse_8000_001e`/`parse_8000_0008`), else legacy leaf 1
//! logical count with leaf 4 (Intel) / 0x80000008 (AMD) core count, else nothing: each
//! CPU its own core and package. Caches: leaf 4 (Intel) or 0x8000001D (AMD with
//! TOPOEXT), decoded like `cacheinfo`'s `cpuid4_cache_lookup_regs`.

use alloc::vec::Vec;
use core::fmt;

use super::identity::*;
use super::leaves::{CpuidLeaves, MAX_SUBLEAVES};
use crate::synthetic::bits_for_count;
use crate::topo::CacheKind;
use crate::warning::Warning;

/// Why CPUID data could not be decoded at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuidError {
    /// Leaf 0 (vendor and maximum leaf) is absent.
    NoLeaf0,
}

impl fmt::Display for CpuidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuidError::NoLeaf0 => f.write_str("CPUID: leaf 0 (vendor, maximum leaf) missing"),
        }
    }
}

/// Level types of leaves 0xB/0x1F (ECX[15:8]).
const LEVEL_SMT: u32 = 1;
const LEVEL_DIE: u32 = 5;
/// TOPOEXT: CPUID 0x80000001 ECX bit 22.
const TOPOEXT: u32 = 1 << 22;
/// HTT: CPUID 1 EDX bit 28.
const HTT: u32 = 1 << 28;

fn vendor_of(r: [u32; 4]) -> Vendor {
    let mut v = [0u8; 12];
    for (chunk, reg) in v.chunks_mut(4).zip([r[1], r[3], r[2]]) {
        chunk.copy_from_slice(&reg.to_le_bytes());
    }
    match &v {
        b"GenuineIntel" => Vendor::Intel,
        b"AuthenticAMD" => Vendor::Amd,
        b"HygonGenuine" => Vendor::Hygon,
        _ => Vendor::Other(v),
    }
}

/// Shifts from an extended topology leaf (0xB or 0x1F): `(smt, die, pkg, x2apic)`,
/// or `None` when the leaf is absent or invalid (subleaf 0 must be the SMT level with
/// a non-zero logical count, as Linux checks).
fn parse_ext_leaf(
    l: &CpuidLeaves,
    leaf: u32,
    w: &mut Vec<Warning>,
) -> Option<(u32, u32, u32, u32)> {
    let first = l.get(leaf, 0)?;
    if (first[2] >> 8) & 0xff != LEVEL_SMT || first[1] & 0xffff == 0 {
        return None;
    }
    let (mut smt, mut below_die, mut pkg, mut has_die) = (0, 0, 0, false);
    for sub in 0..MAX_SUBLEAVES {
        let Some(r) = l.get(leaf, sub) else { break };
        let ty = (r[2] >> 8) & 0xff;
        if ty == 0 {
            break;
        }
        let mut shift = r[0] & 0x1f;
        if shift < pkg {
            w.push(Warning::BadTopologyShift { leaf, subleaf: sub });
            shift = pkg;
        }
        if ty == LEVEL_SMT {
            smt = shift;
        }
        if ty < LEVEL_DIE {
            below_die = shift;
        } else {
            has_die = true;
        }
        pkg = shift;
    }
    let die = if has_die { below_die } else { pkg };
    Some((smt, die.max(smt), pkg, first[3]))
}

/// Decodes one leaf-4-format cache subleaf; `None` for type 0 or unknown types.
fn cache_of(r: [u32; 4]) -> Option<CacheInfo> {
    let kind = match r[0] & 0x1f {
        1 => CacheKind::Data,
        2 => CacheKind::Instruction,
        3 => CacheKind::Unified,
        _ => return None,
    };
    let ways = (r[1] >> 22) + 1;
    let partitions = ((r[1] >> 12) & 0x3ff) + 1;
    let line = (r[1] & 0xfff) + 1;
    let sets = u64::from(r[2]) + 1;
    let size = u64::from(ways)
        .checked_mul(u64::from(partitions))
        .and_then(|x| x.checked_mul(u64::from(line)))
        .and_then(|x| x.checked_mul(sets))
        .unwrap_or(u64::MAX);
    Some(CacheInfo {
        level: ((r[0] >> 5) & 7) as u8,
        kind,
        size_bytes: size,
        line_bytes: line,
        ways,
        partitions,
        sets,
        fully_associative: r[0] & (1 << 9) != 0,
        sharing_shift: bits_for_count(((r[0] >> 14) & 0xfff) + 1),
    })
}

fn caches_of(l: &CpuidLeaves, leaf: u32) -> Vec<CacheInfo> {
    (0..MAX_SUBLEAVES)
        .map_while(|s| l.get(leaf, s))
        .map_while(cache_of)
        .collect()
}

/// Decodes CPUID leaves (see the module docs for the order of sources). Only a
/// missing leaf 0 is an error; every other gap gives a [`Warning`] in
/// [`CpuIdentity::warnings`] and an explicit fallback.
pub fn decode(l: &CpuidLeaves) -> Result<CpuIdentity, CpuidError> {
    let l0 = l.get(0, 0).ok_or(CpuidError::NoLeaf0)?;
    let vendor = vendor_of(l0);
    let mut w = Vec::new();
    if let Vendor::Other(v) = vendor {
        w.push(Warning::UnknownVendor { vendor: v });
    }
    let max_basic = l0[0];
    let max_ext = l.get(0x8000_0000, 0).map_or(0, |r| r[0]).min(0x8000_ffff);
    let max_ext = if max_ext >= 0x8000_0000 { max_ext } else { 0 };
    let basic = |leaf: u32| {
        if max_basic >= leaf {
            l.get(leaf, 0)
        } else {
            None
        }
    };
    let ext = |leaf: u32| {
        if max_ext >= leaf {
            l.get(leaf, 0)
        } else {
            None
        }
    };
    let leaf1 = basic(1);
    if leaf1.is_none() {
        w.push(Warning::LeafMissing { leaf: 1 });
    }
    let (mut family, mut model, mut stepping) = (0, 0, 0);
    if let Some(r) = leaf1 {
        let eax = r[0];
        family = (eax >> 8) & 0xf;
        model = (eax >> 4) & 0xf;
        stepping = eax & 0xf;
        if family == 0xf {
            family += (eax >> 20) & 0xff;
        }
        if family == 6 || family >= 0xf {
            model += ((eax >> 16) & 0xf) << 4;
        }
    }
    let topoext = vendor.is_amd_like() && ext(0x8000_0001).is_some_and(|r| r[2] & TOPOEXT != 0);
    let leaf1e = if topoext { ext(0x8000_001E) } else { None };

    let ext_topo = if max_basic >= 0x1F {
        parse_ext_leaf(l, 0x1F, &mut w).map(|t| (t, TopologySource::Leaf1F))
    } else {
        None
    };
    let ext_topo = ext_topo.or_else(|| {
        if max_basic >= 0xB {
            parse_ext_leaf(l, 0xB, &mut w).map(|t| (t, TopologySource::Leaf0B))
        } else {
            None
        }
    });
    let mut x2apic_id = leaf1.map(|r| r[1] >> 24);
    let layout = if let Some(((smt, die, pkg, id), source)) = ext_topo {
        x2apic_id = Some(id);
        ApicLayout {
            smt_shift: smt,
            die_shift: die,
            pkg_shift: pkg,
            source,
        }
    } else if let (Some(e), Some(r8)) = (leaf1e, ext(0x8000_0008)) {
        x2apic_id = Some(e[0]);
        let smt = bits_for_count(((e[1] >> 8) & 0xff) + 1);
        let core_bits = (r8[2] >> 12) & 0xf;
        let pkg = if core_bits != 0 {
            core_bits
        } else {
            bits_for_count((r8[2] & 0xff) + 1)
        };
        let pkg = pkg.max(smt);
        ApicLayout {
            smt_shift: smt,
            die_shift: pkg,
            pkg_shift: pkg,
            source: TopologySource::AmdExtended,
        }
    } else if let Some(r1) = leaf1 {
        w.push(Warning::LegacyTopology);
        let logical = if r1[3] & HTT != 0 {
            ((r1[1] >> 16) & 0xff).max(1)
        } else {
            1
        };
        let cores = if vendor == Vendor::Intel {
            basic(4)
                .filter(|r| r[0] & 0x1f != 0)
                .map_or(1, |r| (r[0] >> 26) + 1)
        } else if vendor.is_amd_like() {
            ext(0x8000_0008).map_or(1, |r| (r[2] & 0xff) + 1)
        } else {
            1
        };
        let pkg = bits_for_count(logical);
        let smt = bits_for_count((logical / cores.max(1)).max(1)).min(pkg);
        ApicLayout {
            smt_shift: smt,
            die_shift: pkg,
            pkg_shift: pkg,
            source: TopologySource::Legacy,
        }
    } else {
        w.push(Warning::NoTopologyLeaf);
        ApicLayout {
            smt_shift: 0,
            die_shift: 0,
            pkg_shift: 0,
            source: TopologySource::None,
        }
    };

    let caches = match vendor {
        Vendor::Intel if max_basic >= 4 => caches_of(l, 4),
        Vendor::Amd | Vendor::Hygon if topoext && max_ext >= 0x8000_001D => {
            caches_of(l, 0x8000_001D)
        }
        _ => Vec::new(),
    };
    if caches.is_empty() {
        w.push(Warning::NoCacheLeaf);
    }
    Ok(CpuIdentity {
        vendor,
        family,
        model,
        stepping,
        x2apic_id,
        layout,
        caches,
        max_basic_leaf: max_basic,
        max_ext_leaf: max_ext,
        warnings: w,
    })
}
