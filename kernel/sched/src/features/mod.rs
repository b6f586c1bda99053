//! `sched_feat`-style switches, selectable per run by name.
//!
//! Linux's own flags (kernel/sched/features.h) keep their names and defaults;
//! the seed experiments add switches named after the patch they model. A run
//! selects them with a string such as `"WA_IDLE,NO_WA_WEIGHT,SIS_UTIL"`,
//! applied on top of the defaults exactly like writes to
//! `/sys/kernel/debug/sched/features`; `Display` prints the full set back in
//! the same syntax, so `parse(display(f)) == f`.

use alloc::string::{String, ToString};
use core::fmt;

/// One switch: bit, name, default and the documentation (with its seed).
pub struct FeatureDesc {
    /// The flag.
    pub feat: Feat,
    /// Name as used in feature strings.
    pub name: &'static str,
    /// Default value (Linux's, or mainline behaviour for seed switches).
    pub default: bool,
    /// What it does, and which seed/patch it models.
    pub doc: &'static str,
}

/// Feature identifiers (bit positions in [`Features`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Feat {
    /// CFS place_entity: sleeper credit is half of sched_latency.
    GentleFairSleepers,
    /// CFS place_entity: a forked task starts one vslice right of min_vruntime.
    StartDebit,
    /// Mark a waking task as the next buddy.
    NextBuddy,
    /// CFS: mark the preempted task as the last buddy.
    LastBuddy,
    /// task_hot: the next buddy of a busy dst is cache hot.
    CacheHotBuddy,
    /// Allow wakeup preemption at all.
    WakeupPreemption,
    /// EEVDF place_entity keeps lag across sleep/migration.
    PlaceLag,
    /// EEVDF: a new task gets half a slice as its first deadline.
    PlaceDeadlineInitial,
    /// EEVDF: let curr finish its slice before picking another.
    RunToParity,
    /// EEVDF: pick the next buddy if it is eligible.
    PickBuddy,
    /// wake_affine: use wake_affine_idle.
    WaIdle,
    /// wake_affine: use wake_affine_weight.
    WaWeight,
    /// wake_affine_weight: imbalance_pct bias toward prev.
    WaBias,
    /// select_idle_cpu: SIS_UTIL scan limit.
    SisUtil,
    /// detach_tasks: skip tiny loads unless balancing failed.
    LbMin,
    /// Seed 000: wake_affine_idle returns an idle prev_cpu.
    WaIdlePrev,
    /// Seeds 000/002: runnable (not blocked-inclusive) load in wakeup paths.
    RunnableLoad,
    /// Seed 002: blocked load as the second key in legacy find_idlest_group.
    IdlestBlocked,
    /// Seed 001: nr_busy_cpus accounted at idle entry/exit (not at the tick).
    IdleAcctEntry,
    /// Seed 001: per-LLC "next idle core" hint.
    IdleCoreHint,
    /// Seed 003: couple wakee flips with heavy wakers.
    WakeWideHeavy,
    /// Seed 004: honour WF_SYNC in wake_affine.
    WaSync,
    /// Seed 004: normal placement for wakees.
    WakeeUnbound,
    /// Seed 004: wakee forced onto the waker's CPU.
    WakeeStacked,
    /// Seed 004: wakee forced onto an SMT sibling of the waker's CPU.
    WakeeCrossSmt,
    /// Seed 004: wakee forced onto another core of the waker's LLC.
    WakeeCrossCore,
}

/// All switches, in display order.
pub const FEATURES: &[FeatureDesc] = &[
    FeatureDesc {
        feat: Feat::GentleFairSleepers,
        name: "GENTLE_FAIR_SLEEPERS",
        default: true,
        doc: "CFS place_entity: sleeper credit is sched_latency/2 (Linux features.h)",
    },
    FeatureDesc {
        feat: Feat::StartDebit,
        name: "START_DEBIT",
        default: true,
        doc: "CFS place_entity: new task placed one vslice after min_vruntime (Linux)",
    },
    FeatureDesc {
        feat: Feat::NextBuddy,
        name: "NEXT_BUDDY",
        default: false,
        doc: "prefer the last woken task as next (Linux, default off)",
    },
    FeatureDesc {
        feat: Feat::LastBuddy,
        name: "LAST_BUDDY",
        default: true,
        doc: "CFS: prefer the wakeup-preempted task to run next (Linux <=6.5)",
    },
    FeatureDesc {
        feat: Feat::CacheHotBuddy,
        name: "CACHE_HOT_BUDDY",
        default: true,
        doc: "task_hot: dst's next buddy counts as cache hot (Linux)",
    },
    FeatureDesc {
        feat: Feat::WakeupPreemption,
        name: "WAKEUP_PREEMPTION",
        default: true,
        doc: "allow wakeup preemption (Linux)",
    },
    FeatureDesc {
        feat: Feat::PlaceLag,
        name: "PLACE_LAG",
        default: true,
        doc: "EEVDF place_entity preserves lag (Linux 6.6+)",
    },
    FeatureDesc {
        feat: Feat::PlaceDeadlineInitial,
        name: "PLACE_DEADLINE_INITIAL",
        default: true,
        doc: "EEVDF: new task deadline = vruntime + vslice/2 (Linux 6.6+)",
    },
    FeatureDesc {
        feat: Feat::RunToParity,
        name: "RUN_TO_PARITY",
        default: true,
        doc: "EEVDF: curr keeps the CPU until its deadline moves (Linux 6.6+)",
    },
    FeatureDesc {
        feat: Feat::PickBuddy,
        name: "PICK_BUDDY",
        default: true,
        doc: "EEVDF: pick an eligible next buddy (Linux 6.12+)",
    },
    FeatureDesc {
        feat: Feat::WaIdle,
        name: "WA_IDLE",
        default: true,
        doc: "wake_affine: run wake_affine_idle (Linux)",
    },
    FeatureDesc {
        feat: Feat::WaWeight,
        name: "WA_WEIGHT",
        default: true,
        doc: "wake_affine: run wake_affine_weight (Linux)",
    },
    FeatureDesc {
        feat: Feat::WaBias,
        name: "WA_BIAS",
        default: true,
        doc: "wake_affine_weight: imbalance_pct/2 bias toward prev (Linux)",
    },
    FeatureDesc {
        feat: Feat::SisUtil,
        name: "SIS_UTIL",
        default: true,
        doc: "select_idle_cpu: LLC-utilization scan limit (Linux 6.0+); off = unlimited scan",
    },
    FeatureDesc {
        feat: Feat::LbMin,
        name: "LB_MIN",
        default: false,
        doc: "detach_tasks: skip loads < 16 unless balancing failed (Linux, off)",
    },
    FeatureDesc {
        feat: Feat::WaIdlePrev,
        name: "WA_IDLE_PREV",
        default: true,
        doc: "seed 000 (Lawall, d8fcb81f1acf, v5.11): wake_affine_idle returns prev_cpu when it is idle; off = pre-5.11 (fall through to wake_affine_weight)",
    },
    FeatureDesc {
        feat: Feat::RunnableLoad,
        name: "RUNNABLE_LOAD",
        default: false,
        doc: "seeds 000/002: wake_affine_weight and find_idlest_group compare runnable load (no blocked load) with the pre-5.5 algorithms; off = 5.5+ cpu_load and group classification",
    },
    FeatureDesc {
        feat: Feat::IdlestBlocked,
        name: "IDLEST_BLOCKED",
        default: true,
        doc: "seed 002 (Guittot, 6b94780e45c1, v4.11): with RUNNABLE_LOAD, near-equal runnable loads are separated by blocked-inclusive load; off = pre-4.11 runnable-only comparison",
    },
    FeatureDesc {
        feat: Feat::IdleAcctEntry,
        name: "IDLE_ACCT_ENTRY",
        default: false,
        doc: "seed 001 (Srikar v3 6/8+7/8): nr_busy_cpus updated at idle entry/exit and select_idle_cpu skips a fully busy LLC; off = mainline accounting at the tick (nohz)",
    },
    FeatureDesc {
        feat: Feat::IdleCoreHint,
        name: "IDLE_CORE_HINT",
        default: false,
        doc: "seed 001 (Srikar v3 2/8+3/8): LLC remembers a known idle core (-2 none, -1 unknown, >=0 core) tried first by select_idle_cpu; off = mainline has_idle_cores bool",
    },
    FeatureDesc {
        feat: Feat::WakeWideHeavy,
        name: "WAKE_WIDE_HEAVY",
        default: false,
        doc: "seed 003 (Gorman, 'Couple wakee flips with heavy wakers', 2021, unmerged): wakee inherits a flip from a heavy waker (record_wakee) and wake_wide spreads a wakee with few flips when the waker has at least (llc/2)*llc flips",
    },
    FeatureDesc {
        feat: Feat::WaSync,
        name: "WA_SYNC",
        default: true,
        doc: "seed 004: honour WF_SYNC in wake_affine (waker about to sleep); off = treat sync wakeups as normal",
    },
    FeatureDesc {
        feat: Feat::WakeeUnbound,
        name: "WAKEE_UNBOUND",
        default: true,
        doc: "seed 004 (Galbraith netperf): wakee placed by the policy",
    },
    FeatureDesc {
        feat: Feat::WakeeStacked,
        name: "WAKEE_STACKED",
        default: false,
        doc: "seed 004: wakee forced onto the waker's CPU",
    },
    FeatureDesc {
        feat: Feat::WakeeCrossSmt,
        name: "WAKEE_CROSS_SMT",
        default: false,
        doc: "seed 004: wakee forced onto an SMT sibling of the waker's CPU",
    },
    FeatureDesc {
        feat: Feat::WakeeCrossCore,
        name: "WAKEE_CROSS_CORE",
        default: false,
        doc: "seed 004: wakee forced onto another core of the waker's LLC",
    },
];

const WAKEE_GROUP: [Feat; 4] = [
    Feat::WakeeUnbound,
    Feat::WakeeStacked,
    Feat::WakeeCrossSmt,
    Feat::WakeeCrossCore,
];

/// A set of switches (bitmask over [`Feat`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Features(u64);

/// Why a feature string was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FeatureError {
    /// Name not in [`FEATURES`].
    Unknown(String),
    /// `NO_WAKEE_*`: a forced-placement mode cannot be cleared, only replaced.
    ClearWakeeMode(String),
}

impl fmt::Display for FeatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FeatureError::Unknown(n) => write!(f, "unknown scheduler feature '{n}'"),
            FeatureError::ClearWakeeMode(n) => {
                write!(
                    f,
                    "'NO_{n}': choose another WAKEE_* mode instead of clearing one"
                )
            }
        }
    }
}

impl Default for Features {
    fn default() -> Self {
        let mut bits = 0;
        for d in FEATURES {
            if d.default {
                bits |= 1 << d.feat as u8;
            }
        }
        Features(bits)
    }
}

impl Features {
    /// Is `f` on?
    pub fn has(&self, f: Feat) -> bool {
        self.0 & (1 << f as u8) != 0
    }

    /// Turn `f` on or off. Selecting a `WAKEE_*` mode clears the others.
    pub fn set(&mut self, f: Feat, on: bool) {
        if on && WAKEE_GROUP.contains(&f) {
            for g in WAKEE_GROUP {
                self.0 &= !(1 << g as u8);
            }
        }
        if on {
            self.0 |= 1 << f as u8;
        } else {
            self.0 &= !(1 << f as u8);
        }
    }

    /// Builder form of [`Features::set`].
    pub fn with(mut self, f: Feat, on: bool) -> Self {
        self.set(f, on);
        self
    }

    /// Look a name up (without `NO_`).
    pub fn lookup(name: &str) -> Option<&'static FeatureDesc> {
        FEATURES.iter().find(|d| d.name == name)
    }

    /// Parse a comma (or space) separated list applied on top of the
    /// defaults; `NO_X` clears `X`. Unknown names are an error.
    pub fn parse(s: &str) -> Result<Features, FeatureError> {
        let mut f = Features::default();
        f.apply(s)?;
        Ok(f)
    }

    /// Apply a feature string to this set.
    pub fn apply(&mut self, s: &str) -> Result<(), FeatureError> {
        for tok in s.split([',', ' ']).map(str::trim).filter(|t| !t.is_empty()) {
            let (name, on) = match tok.strip_prefix("NO_") {
                Some(rest) => (rest, false),
                None => (tok, true),
            };
            let d = Self::lookup(name).ok_or_else(|| FeatureError::Unknown(tok.to_string()))?;
            if !on && WAKEE_GROUP.contains(&d.feat) {
                return Err(FeatureError::ClearWakeeMode(name.to_string()));
            }
            self.set(d.feat, on);
        }
        Ok(())
    }
}

impl fmt::Display for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for d in FEATURES {
            let on = self.has(d.feat);
            if WAKEE_GROUP.contains(&d.feat) && !on {
                continue;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if !on {
                f.write_str("NO_")?;
            }
            f.write_str(d.name)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests;
