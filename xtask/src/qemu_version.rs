//! Which QEMU runs the kernel, and what that version can and cannot do.
//!
//! - x2APIC under TCG came with QEMU 9: a machine whose highest APIC id is
//!   above 254 (more than 255 CPUs, or fewer with gaps in the ids) needs it.
//!   Debian bookworm's QEMU is 7.2; bookworm-backports has 10.0.
//! - QEMU 10.0.2 under `-icount` stops with "Bad icount read" once the guest
//!   switches its local APIC to x2APIC mode; xtask hides x2APIC from an
//!   `--icount` guest (`-cpu ...,-x2apic`), so icount runs stay at or below
//!   255 CPUs there.
//! - QEMU 10.0.2 with `vendor=GenuineIntel` and more than one die per socket
//!   aborts in `encode_topo_cpuid1f` (leaf 0x1F) before the guest runs; hiding
//!   leaf 0x1F avoids the abort but also hides the dies from the kernel, so
//!   xtask refuses that combination instead of booting a machine without dies.
//! - QEMU 7.2 under `-icount` with more than one vCPU delivers the timer
//!   interrupts of a halted vCPU late, while another vCPU keeps running: in a
//!   2-vCPU hackbench (g4 l500, release kernel) vCPU 1 took about 30 of the
//!   ~1,430 ticks its 5.7 s of virtual time should give, made 15,412 context
//!   switches to vCPU 0's 593,515, and one task waited 4.58 s on a runqueue;
//!   a debug kernel ended in WATCHDOG ("CPU 1 has not ticked"). QEMU 10.0.2
//!   ran the same kernel and arguments with 2,422 of 2,425 ticks, 274,937 /
//!   280,837 switches and a 0.44 s longest wait. The guest is not at fault
//!   (its LAPIC timer is periodic and armed), so xtask warns before such a
//!   boot ([`icount_smp_warning`]) instead of hiding what the run shows.

use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Result, bail};

/// A QEMU version, e.g. 10.0.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub micro: u32,
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.micro)
    }
}

/// Parses `qemu-system-x86_64 --version`'s first line ("QEMU emulator
/// version 10.0.2 (Debian ...)").
pub fn parse(text: &str) -> Option<Version> {
    let rest = text.lines().next()?.split("version ").nth(1)?;
    let v = rest.split_whitespace().next()?;
    let mut n = v.split('.').map(|x| {
        x.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u32>()
            .ok()
    });
    Some(Version {
        major: n.next()??,
        minor: n.next().flatten().unwrap_or(0),
        micro: n.next().flatten().unwrap_or(0),
    })
}

/// The installed `qemu-system-x86_64`'s version (asked once), `None` when
/// it is not installed or does not say.
pub fn installed() -> Option<Version> {
    static V: OnceLock<Option<Version>> = OnceLock::new();
    *V.get_or_init(|| {
        let out = Command::new("qemu-system-x86_64")
            .arg("--version")
            .output()
            .ok()?;
        parse(&String::from_utf8_lossy(&out.stdout))
    })
}

/// QEMU's first version whose TCG emulates x2APIC.
pub const X2APIC_SINCE: Version = Version {
    major: 9,
    minor: 0,
    micro: 0,
};

/// What a QEMU version needs changed on the `-cpu` line to boot a machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Workarounds {
    /// `-x2apic`: QEMU 10.0.2 stops with "Bad icount read" once an
    /// `--icount` guest enables x2APIC.
    pub hide_x2apic: bool,
    /// `level=0x1e`: QEMU 10.0.2 aborts in `encode_topo_cpuid1f` for more
    /// than one die per socket with vendor=GenuineIntel. Without leaf 0x1F
    /// the guest sees each socket as one die whose cores are all of the
    /// socket's, and each die's L3 (QEMU 10 shares L3 per die) as an LLC:
    /// what Linux sees on such a machine without leaf 0x1F.
    pub hide_leaf_1f: bool,
}

/// What `v` needs for this run: refuses what it cannot do (naming the
/// version and the way out), else the `-cpu` changes it needs.
pub fn check(
    v: Version,
    max_apic_id: u64,
    dies: u32,
    icount: bool,
    cpus: u32,
) -> Result<Workarounds> {
    let x2apic = max_apic_id > crate::machine::MAX_APIC_ID;
    if x2apic && v < X2APIC_SINCE {
        bail!(
            "{cpus} CPUs: the highest APIC id QEMU would give is {max_apic_id}, above {}, which \
             needs x2APIC; QEMU {v}'s TCG has none (it came in QEMU {X2APIC_SINCE}). On Debian \
             bookworm: echo 'deb http://deb.debian.org/debian bookworm-backports main' > \
             /etc/apt/sources.list.d/backports.list && apt-get update && apt-get install -t \
             bookworm-backports qemu-system-x86 (QEMU 10); or use --backend sim",
            crate::machine::MAX_APIC_ID
        );
    }
    let newer = v.major >= 10;
    if newer && x2apic && icount {
        bail!(
            "{cpus} CPUs need x2APIC, and QEMU {v} stops with 'Bad icount read' once an --icount \
             guest enables x2APIC: run this machine without --icount (multi-threaded TCG), or \
             with at most 255 CPUs"
        );
    }
    Ok(Workarounds {
        hide_x2apic: newer && icount,
        hide_leaf_1f: newer && dies > 1,
    })
}

/// The first QEMU version measured to deliver a halted vCPU's timer
/// interrupts on time under `-icount` with several vCPUs (7.2 does not;
/// 10.0.2 does; versions between were not measured, so they are warned
/// about too: "may").
pub const ICOUNT_SMP_TIMERS_SINCE: Version = Version {
    major: 10,
    minor: 0,
    micro: 0,
};

/// The warning for an `--icount` run of `cpus` vCPUs on QEMU `v`, if it
/// needs one (module doc: QEMU 7.2 starves halted vCPUs of their ticks).
pub fn icount_smp_warning(v: Version, icount: bool, cpus: u32) -> Option<String> {
    (icount && cpus > 1 && v < ICOUNT_SMP_TIMERS_SINCE).then(|| {
        format!(
            "QEMU {v} under --icount with {cpus} vCPUs may deliver a halted vCPU's timer \
             interrupts late while another vCPU runs (measured on 7.2: one of 2 vCPUs took \
             ~30 of its ~1,430 ticks in a 5.7 s hackbench, and a debug kernel ended in \
             WATCHDOG), so balancing and idle decisions describe the emulator; QEMU \
             {ICOUNT_SMP_TIMERS_SINCE} or later does not (docs/boot.md, \"QEMU versions\")"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(major: u32, minor: u32, micro: u32) -> Version {
        Version {
            major,
            minor,
            micro,
        }
    }

    #[test]
    fn versions_parse_from_qemus_banner() {
        assert_eq!(
            parse("QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2+deb13u1~bpo12+1)\nCopyright"),
            Some(v(10, 0, 2))
        );
        assert_eq!(
            parse("QEMU emulator version 7.2.19 (Debian 1:7.2+dfsg-7+deb12u18)"),
            Some(v(7, 2, 19))
        );
        assert_eq!(parse("QEMU emulator version 9.1"), Some(v(9, 1, 0)));
        assert_eq!(parse("something else"), None);
    }

    #[test]
    fn each_version_gets_what_it_can_do() {
        // 288 CPUs (2 x 72 x 2): APIC ids up to 399.
        let e = check(v(7, 2, 19), 399, 1, false, 288)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("QEMU 7.2.19") && e.contains("bookworm-backports"),
            "{e}"
        );
        let none = Workarounds::default();
        assert_eq!(check(v(10, 0, 2), 399, 1, false, 288).unwrap(), none);
        let e = check(v(10, 0, 2), 399, 1, true, 288)
            .unwrap_err()
            .to_string();
        assert!(e.contains("Bad icount read"), "{e}");
        // At most 255 CPUs under icount on 10: x2APIC hidden.
        assert!(check(v(10, 0, 2), 7, 1, true, 8).unwrap().hide_x2apic);
        assert_eq!(check(v(7, 2, 19), 7, 1, true, 8).unwrap(), none);
        // Dies on 10: leaf 0x1F hidden; on 7.2 shown.
        let w = check(v(10, 0, 2), 7, 2, false, 8).unwrap();
        assert!(w.hide_leaf_1f && !w.hide_x2apic);
        assert_eq!(check(v(7, 2, 19), 7, 2, false, 8).unwrap(), none);
    }

    #[test]
    fn icount_on_several_vcpus_warns_before_qemu_10_only() {
        let w = icount_smp_warning(v(7, 2, 22), true, 2).expect("7.2, icount, 2 vCPUs");
        assert!(w.contains("QEMU 7.2.22") && w.contains("2 vCPUs"), "{w}");
        assert_eq!(icount_smp_warning(v(7, 2, 22), true, 1), None);
        assert_eq!(icount_smp_warning(v(7, 2, 22), false, 8), None);
        assert_eq!(icount_smp_warning(v(10, 0, 2), true, 8), None);
    }
}
