//! [`SynthCpuid`]: CPUID leaves for a regular machine, encoded the way Intel (leaves
//! 0xB, 0x1F, 4) and AMD (0x8000001E, 0x80000008, 0x8000001D) document them. Used by
//! tests and by host-side simulation to feed [`crate::assemble()`] without hardware.
//! The values are a model, not a capture: caches are nominal (32 KiB L1d/L1i, 1 MiB
//! L2 per core, 2 MiB of L3 per core of the LLC group).

use alloc::vec::Vec;

use super::identity::Vendor;
use super::leaves::{CpuidEntry, CpuidLeaves};
use crate::synthetic::bits_for_count;

/// Shape of the CPUs to describe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SynthCpuid {
    /// Vendor to encode (`Other` gives only leaves 0 and 1).
    pub vendor: Vendor,
    /// Threads per core.
    pub threads_per_core: u32,
    /// Cores per die.
    pub cores_per_die: u32,
    /// Dies per package (Intel: reported through leaf 0x1F when > 1).
    pub dies_per_package: u32,
    /// log2 of the APIC ids sharing the L3; `None` = the whole package.
    pub l3_sharing_bits: Option<u32>,
    /// Intel: also report leaf 0x1F even with one die.
    pub leaf_1f: bool,
}

fn vendor_regs(v: [u8; 12]) -> [u32; 3] {
    let w = |i: usize| u32::from_le_bytes([v[i], v[i + 1], v[i + 2], v[i + 3]]);
    [w(0), w(8), w(4)] // ebx, ecx, edx
}

impl SynthCpuid {
    fn bits(&self) -> (u32, u32, u32) {
        let t = bits_for_count(self.threads_per_core);
        let c = bits_for_count(self.cores_per_die);
        let d = bits_for_count(self.dies_per_package);
        (t, t + c, t + c + d)
    }

    /// Leaf-4-format cache subleaf.
    fn cache(ty: u32, level: u32, sharing_bits: u32, ways: u32, sets: u32, cores: u32) -> [u32; 4] {
        let ids = (1u32 << sharing_bits.min(12)).min(4096) - 1;
        let eax = ty | (level << 5) | (1 << 8) | (ids << 14) | ((cores.clamp(1, 64) - 1) << 26);
        [eax, 63 | ((ways - 1) << 22), sets - 1, 0]
    }

    /// The leaves a CPU with this APIC id would report, in [`super::collect`] order.
    pub fn leaves(&self, apic: u32) -> CpuidLeaves {
        let (smt, core, pkg) = self.bits();
        // Saturating arithmetic: absurd shapes give absurd leaves, never a panic.
        let threads = self.threads_per_core.max(1);
        let cores = self
            .cores_per_die
            .max(1)
            .saturating_mul(self.dies_per_package.max(1));
        let logical = threads.saturating_mul(cores);
        let l3 = self.l3_sharing_bits.unwrap_or(pkg);
        let ncores_l3 = (1u32 << l3.min(16))
            .div_ceil(1u32.checked_shl(smt).unwrap_or(u32::MAX))
            .max(1);
        let mut e: Vec<CpuidEntry> = Vec::new();
        let mut push = |leaf, subleaf, regs| {
            e.push(CpuidEntry {
                leaf,
                subleaf,
                regs,
            })
        };
        let htt = if logical > 1 { 1 << 28 } else { 0 };
        let leaf1_ebx = (apic << 24) | (logical.min(255) << 16);
        match self.vendor {
            Vendor::Intel => {
                let max = if self.leaf_1f || self.dies_per_package > 1 {
                    0x1F
                } else {
                    0xD
                };
                let [b, c, d] = vendor_regs(*b"GenuineIntel");
                push(0, 0, [max, b, c, d]);
                push(1, 0, [0x0005_0654, leaf1_ebx, 0, htt]);
                let caches = [
                    Self::cache(1, 1, smt, 8, 64, cores),
                    Self::cache(2, 1, smt, 8, 64, cores),
                    Self::cache(3, 2, smt, 16, 1024, cores),
                    Self::cache(3, 3, l3, 16, ncores_l3.saturating_mul(2048), cores),
                ];
                for (i, c) in caches.into_iter().enumerate() {
                    push(4, i as u32, c);
                }
                push(4, 4, [0; 4]);
                push(0xB, 0, [smt, threads, 0x100, apic]);
                push(0xB, 1, [pkg, logical, 0x201, apic]);
                push(0xB, 2, [0, 0, 2, apic]);
                if max >= 0x1F {
                    push(0x1F, 0, [smt, threads, 0x100, apic]);
                    push(
                        0x1F,
                        1,
                        [
                            core,
                            threads.saturating_mul(self.cores_per_die.max(1)),
                            0x201,
                            apic,
                        ],
                    );
                    push(0x1F, 2, [pkg, logical, 0x502, apic]);
                    push(0x1F, 3, [0, 0, 3, apic]);
                }
                push(0x8000_0000, 0, [0x8000_0008, 0, 0, 0]);
                push(0x8000_0001, 0, [0, 0, 0x121, 0x2c10_0800]);
                push(0x8000_0008, 0, [0x3030, 0, 0, 0]);
            }
            Vendor::Amd | Vendor::Hygon => {
                let name = if self.vendor == Vendor::Amd {
                    *b"AuthenticAMD"
                } else {
                    *b"HygonGenuine"
                };
                let [b, c, d] = vendor_regs(name);
                push(0, 0, [0xD, b, c, d]);
                push(1, 0, [0x0080_0f12, leaf1_ebx, 0, htt]);
                push(0x8000_0000, 0, [0x8000_001F, 0, 0, 0]);
                push(0x8000_0001, 0, [0, 0, 1 << 22, 0]);
                push(
                    0x8000_0008,
                    0,
                    [0x3030, 0, ((pkg & 0xf) << 12) | (logical.min(256) - 1), 0],
                );
                let caches = [
                    Self::cache(1, 1, smt, 8, 64, 1),
                    Self::cache(2, 1, smt, 8, 64, 1),
                    Self::cache(3, 2, smt, 8, 2048, 1),
                    Self::cache(3, 3, l3, 16, ncores_l3.saturating_mul(2048), 1),
                ];
                for (i, c) in caches.into_iter().enumerate() {
                    push(0x8000_001D, i as u32, c);
                }
                push(0x8000_001D, 4, [0; 4]);
                let core_id = apic.checked_shr(smt).unwrap_or(0) & 0xff;
                push(
                    0x8000_001E,
                    0,
                    [apic, (((threads - 1) & 0xff) << 8) | core_id, 0, 0],
                );
            }
            Vendor::Other(v) => {
                let [b, c, d] = vendor_regs(v);
                push(0, 0, [1, b, c, d]);
                push(1, 0, [0x0000_0f00, leaf1_ebx, 0, htt]);
                push(0x8000_0000, 0, [0, 0, 0, 0]);
            }
        }
        CpuidLeaves { entries: e }
    }

    /// APIC id of the CPU at (package, die, core, thread), like QEMU's
    /// `x86_apicid_from_topo_ids`.
    /// Fields wider than their bits or shifts of 32 bits and more are truncated.
    pub fn apic_id(&self, package: u32, die: u32, core: u32, thread: u32) -> u32 {
        let (smt, c, d) = self.bits();
        let shl = |v: u32, s: u32| v.checked_shl(s).unwrap_or(0);
        shl(package, d) | shl(die, c) | shl(core, smt) | thread
    }
}
