//! Scheduling-domain flags ([`SdFlags`]), with the values Linux 6.x generates from
//! `include/linux/sched/sd_flags.h`, and the `SDF_NEEDS_GROUPS` meta-flag set used by
//! `sd_degenerate`.

use core::fmt;
use core::ops::{BitAnd, BitOr, BitOrAssign, Not};

/// A set of `SD_*` flags.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SdFlags(pub u32);

/// Balance when about to become idle.
pub const SD_BALANCE_NEWIDLE: SdFlags = SdFlags(0x1);
/// Balance on exec.
pub const SD_BALANCE_EXEC: SdFlags = SdFlags(0x2);
/// Balance on fork/clone.
pub const SD_BALANCE_FORK: SdFlags = SdFlags(0x4);
/// Balance on wakeup (never set by `sd_init`).
pub const SD_BALANCE_WAKE: SdFlags = SdFlags(0x8);
/// Wake a task next to its waker.
pub const SD_WAKE_AFFINE: SdFlags = SdFlags(0x10);
/// Members have different CPU capacities.
pub const SD_ASYM_CPUCAPACITY: SdFlags = SdFlags(0x20);
/// All capacities of the system are visible at this level.
pub const SD_ASYM_CPUCAPACITY_FULL: SdFlags = SdFlags(0x40);
/// Members share CPU capacity (SMT).
pub const SD_SHARE_CPUCAPACITY: SdFlags = SdFlags(0x80);
/// Members share an L2/cluster.
pub const SD_CLUSTER: SdFlags = SdFlags(0x100);
/// Members share the last-level cache (`SD_SHARE_PKG_RESOURCES` before 6.9).
pub const SD_SHARE_LLC: SdFlags = SdFlags(0x200);
/// Only one CPU balances this domain at a time.
pub const SD_SERIALIZE: SdFlags = SdFlags(0x400);
/// Prefer higher-priority CPUs (ITMT).
pub const SD_ASYM_PACKING: SdFlags = SdFlags(0x800);
/// Spread tasks to sibling groups.
pub const SD_PREFER_SIBLING: SdFlags = SdFlags(0x1000);
/// Groups of this domain overlap (NUMA).
pub const SD_OVERLAP: SdFlags = SdFlags(0x2000);
/// A NUMA level.
pub const SD_NUMA: SdFlags = SdFlags(0x4000);

/// Flags that only make sense with at least two groups (`SD_DEGENERATE_GROUPS_MASK`:
/// every flag with the `SDF_NEEDS_GROUPS` meta-flag, i.e. all but `SD_WAKE_AFFINE`).
pub const SD_DEGENERATE_GROUPS_MASK: SdFlags = SdFlags(0x7fff & !SD_WAKE_AFFINE.0);

const NAMES: [(SdFlags, &str); 15] = [
    (SD_BALANCE_NEWIDLE, "SD_BALANCE_NEWIDLE"),
    (SD_BALANCE_EXEC, "SD_BALANCE_EXEC"),
    (SD_BALANCE_FORK, "SD_BALANCE_FORK"),
    (SD_BALANCE_WAKE, "SD_BALANCE_WAKE"),
    (SD_WAKE_AFFINE, "SD_WAKE_AFFINE"),
    (SD_ASYM_CPUCAPACITY, "SD_ASYM_CPUCAPACITY"),
    (SD_ASYM_CPUCAPACITY_FULL, "SD_ASYM_CPUCAPACITY_FULL"),
    (SD_SHARE_CPUCAPACITY, "SD_SHARE_CPUCAPACITY"),
    (SD_CLUSTER, "SD_CLUSTER"),
    (SD_SHARE_LLC, "SD_SHARE_LLC"),
    (SD_SERIALIZE, "SD_SERIALIZE"),
    (SD_ASYM_PACKING, "SD_ASYM_PACKING"),
    (SD_PREFER_SIBLING, "SD_PREFER_SIBLING"),
    (SD_OVERLAP, "SD_OVERLAP"),
    (SD_NUMA, "SD_NUMA"),
];

impl SdFlags {
    /// No flag.
    pub const EMPTY: SdFlags = SdFlags(0);

    /// True when every flag of `f` is set.
    pub fn contains(self, f: SdFlags) -> bool {
        self.0 & f.0 == f.0
    }

    /// True when any flag of `f` is set.
    pub fn intersects(self, f: SdFlags) -> bool {
        self.0 & f.0 != 0
    }

    /// `self` without the flags of `f`.
    pub fn without(self, f: SdFlags) -> SdFlags {
        SdFlags(self.0 & !f.0)
    }
}

impl BitOr for SdFlags {
    type Output = SdFlags;
    fn bitor(self, o: SdFlags) -> SdFlags {
        SdFlags(self.0 | o.0)
    }
}

impl BitOrAssign for SdFlags {
    fn bitor_assign(&mut self, o: SdFlags) {
        self.0 |= o.0;
    }
}

impl BitAnd for SdFlags {
    type Output = SdFlags;
    fn bitand(self, o: SdFlags) -> SdFlags {
        SdFlags(self.0 & o.0)
    }
}

impl Not for SdFlags {
    type Output = SdFlags;
    fn not(self) -> SdFlags {
        SdFlags(!self.0)
    }
}

/// Names joined by `|` in bit order, like `/proc/sys/kernel/sched_domain/.../flags`
/// (which separates them with spaces); unknown bits are printed in hex.
impl fmt::Display for SdFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut rest = self.0;
        for (flag, name) in NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str("|")?;
                }
                first = false;
                f.write_str(name)?;
                rest &= !flag.0;
            }
        }
        if rest != 0 {
            if !first {
                f.write_str("|")?;
            }
            write!(f, "{rest:#x}")?;
        } else if first {
            f.write_str("0")?;
        }
        Ok(())
    }
}

impl fmt::Debug for SdFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SdFlags({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn display_and_ops() {
        let f = SD_SHARE_CPUCAPACITY | SD_SHARE_LLC;
        assert_eq!(format!("{f}"), "SD_SHARE_CPUCAPACITY|SD_SHARE_LLC");
        assert_eq!(format!("{}", SdFlags(0)), "0");
        assert_eq!(
            format!("{}", SdFlags(0x10001)),
            "SD_BALANCE_NEWIDLE|0x10000"
        );
        assert!(f.contains(SD_SHARE_LLC));
        assert!(!f.contains(SD_SHARE_LLC | SD_NUMA));
        assert_eq!(f.without(SD_SHARE_LLC), SD_SHARE_CPUCAPACITY);
        assert!(!SD_DEGENERATE_GROUPS_MASK.contains(SD_WAKE_AFFINE));
        assert!(SD_DEGENERATE_GROUPS_MASK.contains(SD_NUMA | SD_BALANCE_NEWIDLE | SD_OVERLAP));
    }
}
