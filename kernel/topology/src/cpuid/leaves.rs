//! Raw CPUID data: [`CpuidLeaves`] (plain, serialisable) and [`collect`], which decides
//! which leaves and subleaves to read through a caller-supplied CPUID function.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

/// Upper bound of subleaves read for one enumerating leaf (4, 0xB, 0x1F, 0x8000001D),
/// so that a buggy or hostile CPUID cannot make `collect` loop forever.
pub const MAX_SUBLEAVES: u32 = 32;

/// One CPUID result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CpuidEntry {
    /// EAX input.
    pub leaf: u32,
    /// ECX input.
    pub subleaf: u32,
    /// `[eax, ebx, ecx, edx]` outputs.
    pub regs: [u32; 4],
}

/// The CPUID leaves read on one CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuidLeaves {
    /// Entries in the order they were read.
    pub entries: Vec<CpuidEntry>,
}

impl CpuidLeaves {
    /// Registers of `(leaf, subleaf)` if it was read.
    pub fn get(&self, leaf: u32, subleaf: u32) -> Option<[u32; 4]> {
        self.entries
            .iter()
            .find(|e| e.leaf == leaf && e.subleaf == subleaf)
            .map(|e| e.regs)
    }

    /// Text form, one entry per line: `leaf subleaf eax ebx ecx edx` in hex
    /// (`0x0000000b 0x00000001 ...`). Lines starting with `#` are comments.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for e in &self.entries {
            let [a, b, c, d] = e.regs;
            let _ = writeln!(
                s,
                "{:#010x} {:#010x} {a:#010x} {b:#010x} {c:#010x} {d:#010x}",
                e.leaf, e.subleaf
            );
        }
        s
    }

    /// Parses [`CpuidLeaves::to_text`] output; `None` on a malformed line.
    pub fn from_text(text: &str) -> Option<CpuidLeaves> {
        let mut entries = Vec::new();
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let mut v = [0u32; 6];
            let mut it = line.split_whitespace();
            for x in v.iter_mut() {
                let t = it.next()?;
                *x = u32::from_str_radix(t.strip_prefix("0x").unwrap_or(t), 16).ok()?;
            }
            if it.next().is_some() {
                return None;
            }
            let [leaf, subleaf, a, b, c, d] = v;
            entries.push(CpuidEntry {
                leaf,
                subleaf,
                regs: [a, b, c, d],
            });
        }
        Some(CpuidLeaves { entries })
    }
}

/// Reads the leaves the decoder uses, on the calling CPU, through `cpuid(leaf,
/// subleaf) -> [eax, ebx, ecx, edx]`:
/// leaf 0 (vendor, max basic leaf); 1; 4 for every subleaf up to and including the
/// first with cache type 0; 0xB and 0x1F for every level up to and including the first
/// with level type 0; 0x80000000 (max extended leaf); 0x80000001; 0x80000008;
/// 0x8000001D (every subleaf up to type 0) and 0x8000001E. A leaf above the reported
/// maximum is not read. At most [`MAX_SUBLEAVES`] subleaves per leaf.
pub fn collect(cpuid: impl FnMut(u32, u32) -> [u32; 4]) -> CpuidLeaves {
    let mut c = Collector {
        cpuid,
        out: CpuidLeaves::default(),
    };
    let max_basic = c.read(0, 0)[0];
    if max_basic >= 1 {
        c.read(1, 0);
    }
    // Cache type in EAX[4:0]; level type in ECX[15:8].
    let cache_end = |r: [u32; 4]| r[0] & 0x1f == 0;
    let level_end = |r: [u32; 4]| (r[2] >> 8) & 0xff == 0;
    if max_basic >= 4 {
        c.enumerate(4, cache_end);
    }
    if max_basic >= 0xB {
        c.enumerate(0xB, level_end);
    }
    if max_basic >= 0x1F {
        c.enumerate(0x1F, level_end);
    }
    let max_ext = c.read(0x8000_0000, 0)[0];
    // A CPU without extended leaves may echo basic-leaf data: require 0x8000_00xx.
    let max_ext = if max_ext & 0xffff_0000 == 0x8000_0000 {
        max_ext
    } else {
        0
    };
    for leaf in [0x8000_0001, 0x8000_0008] {
        if max_ext >= leaf {
            c.read(leaf, 0);
        }
    }
    if max_ext >= 0x8000_001D {
        c.enumerate(0x8000_001D, cache_end);
    }
    if max_ext >= 0x8000_001E {
        c.read(0x8000_001E, 0);
    }
    c.out
}

struct Collector<F> {
    cpuid: F,
    out: CpuidLeaves,
}

impl<F: FnMut(u32, u32) -> [u32; 4]> Collector<F> {
    fn read(&mut self, leaf: u32, subleaf: u32) -> [u32; 4] {
        let regs = (self.cpuid)(leaf, subleaf);
        self.out.entries.push(CpuidEntry {
            leaf,
            subleaf,
            regs,
        });
        regs
    }

    /// Reads subleaves 0.. up to and including the first for which `end` holds.
    fn enumerate(&mut self, leaf: u32, end: impl Fn([u32; 4]) -> bool) {
        for sub in 0..MAX_SUBLEAVES {
            if end(self.read(leaf, sub)) {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trip() {
        let l = CpuidLeaves {
            entries: alloc::vec![
                CpuidEntry {
                    leaf: 0,
                    subleaf: 0,
                    regs: [0xd, 0x756e6547, 0x6c65746e, 0x49656e69]
                },
                CpuidEntry {
                    leaf: 0xb,
                    subleaf: 1,
                    regs: [2, 4, 0x201, 7]
                },
            ],
        };
        let t = l.to_text();
        assert!(t.starts_with("0x00000000 0x00000000 0x0000000d "));
        assert_eq!(CpuidLeaves::from_text(&t), Some(l));
        assert_eq!(CpuidLeaves::from_text("0x1 0x0 1 2 3"), None);
        assert_eq!(
            CpuidLeaves::from_text("# c\n\n"),
            Some(CpuidLeaves::default())
        );
    }

    #[test]
    fn collect_stops_and_bounds() {
        // Max basic 0x1F, a leaf 4 that never reports type 0: bounded by MAX_SUBLEAVES.
        let l = collect(|leaf, sub| match leaf {
            0 => [0x1f, 0, 0, 0],
            4 => [1, 0, 0, 0],
            0xb => [1, 1, if sub < 2 { (sub + 1) << 8 } else { 0 }, 0],
            0x8000_0000 => [0x8000_0008, 0, 0, 0],
            _ => [0; 4],
        });
        assert_eq!(
            l.entries.iter().filter(|e| e.leaf == 4).count(),
            MAX_SUBLEAVES as usize
        );
        assert_eq!(l.entries.iter().filter(|e| e.leaf == 0xb).count(), 3);
        assert_eq!(l.entries.iter().filter(|e| e.leaf == 0x1f).count(), 1);
        assert!(l.get(0x8000_0008, 0).is_some());
        assert!(l.get(0x8000_001E, 0).is_none());
        // Bogus extended maximum: no extended leaf read beyond 0x80000000.
        let l = collect(|leaf, _| {
            if leaf == 0x8000_0000 {
                [0x0000_0014, 0, 0, 0]
            } else {
                [0; 4]
            }
        });
        assert_eq!(l.entries.len(), 2);
    }
}
