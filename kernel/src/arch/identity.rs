//! What machine the kernel runs on, as CPUID tells it: the CPU vendor and
//! brand string, and whether (and under which) hypervisor or emulator.
//!
//! The `boot` record carries these so a report made from any captured
//! console (`cargo xtask report --from`) can say which clock its times come
//! from: real time on bare metal, or a virtual machine's. CPUID.1:ECX[31]
//! is set by QEMU (TCG and KVM) and by every mainstream hypervisor; leaf
//! 0x4000_0000 then names it ("TCGTCGTCGTCG", "KVMKVMKVM", "VMwareVMware",
//! "Microsoft Hv", ...). Real CPUs leave the bit clear.

use core::arch::x86_64::__cpuid;

/// Twelve bytes of CPUID register output as text (trailing NULs dropped,
/// anything not printable ASCII replaced by '?', so the record stays valid).
fn ascii(bytes: &[u8], out: &mut alloc::string::String) {
    for &b in bytes {
        match b {
            0 => {}
            b' '..=b'~' => out.push(b as char),
            _ => out.push('?'),
        }
    }
}

/// The CPU vendor id of leaf 0 ("GenuineIntel", "AuthenticAMD", ...).
pub fn vendor() -> alloc::string::String {
    let mut s = alloc::string::String::new();
    if let Some(v) = raw_cpuid::CpuId::new().get_vendor_info() {
        ascii(v.as_str().as_bytes(), &mut s);
    }
    s
}

/// The processor brand string of leaves 0x8000_0002..4, trimmed; empty when
/// the CPU lacks those leaves.
pub fn brand() -> alloc::string::String {
    let mut s = alloc::string::String::new();
    if let Some(b) = raw_cpuid::CpuId::new().get_processor_brand_string() {
        ascii(b.as_str().as_bytes(), &mut s);
    }
    alloc::string::String::from(s.trim())
}

/// The hypervisor's signature from leaf 0x4000_0000, when CPUID.1:ECX[31]
/// says there is one; None on bare metal. Read by hand: raw-cpuid 11 maps
/// the signature to an enum (`HypervisorInfo::identify`) and does not give
/// the twelve bytes, which the record keeps verbatim.
pub fn hypervisor_vendor() -> Option<alloc::string::String> {
    if !super::cpu::under_hypervisor() {
        return None;
    }
    let r = __cpuid(0x4000_0000);
    let mut s = alloc::string::String::new();
    for reg in [r.ebx, r.ecx, r.edx] {
        ascii(&reg.to_le_bytes(), &mut s);
    }
    Some(s)
}
