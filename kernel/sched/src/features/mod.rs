//! `sched_feat`-style switches, selectable per run by name.
//!
//! Linux's own flags (kernel/sched/features.h) keep their names and defaults;
//! the seed experiments add switches named after the patch they model, one
//! switch per patch where a thread posted several (docs/policies.md maps each
//! to its message). [`ALIASES`] name a series applied together and the names
//! older recipes used. A run selects switches with a string such as
//! `"WA_IDLE,NO_WA_WEIGHT,SIS_UTIL"`, applied on top of the defaults exactly
//! like writes to `/sys/kernel/debug/sched/features`; `Display` prints the
//! full set back in the same syntax, so `parse(display(f)) == f`.

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
    /// EEVDF update_curr: reschedule an unprotected curr once ineligible.
    PreemptShort,
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
    /// Seed 002 (Zijlstra's proposal quoted by Guittot): wake_up_new_task
    /// updates the destination's clock before attaching the new task.
    ForkClockUpdate,
    /// Seed 002 (Fleming): no PELT decay of a new task at its first enqueue.
    NewTaskNoDecay,
    /// Seed 001 (Srikar v3 2/8): the LLC remembers which core is idle.
    IdleCoreId,
    /// Seed 001 (Srikar v3 3/8): the idle core is updated at idle entry/exit.
    IdleCoreUpdate,
    /// Seed 001 (Srikar v3 4/8): `wake_affine_idler_llc`.
    WaIdlerLlc,
    /// Seed 001 (Srikar v3 5/8): wake_affine_idle within an LLC,
    /// wake_affine_idler_llc across LLCs.
    WaIdlerLlcAcross,
    /// Seed 001 (Srikar v3 6/8): nr_busy_cpus accounted in the idle task's
    /// pick/put callbacks.
    IdleBusyAcct,
    /// Seed 001 (Srikar v3 8/8): no LLC scan when both LLCs are fully busy.
    SisSkipBusyLlcs,
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
    /// try_to_wake_up: remote wakeups through the target CPU's wake list.
    TtwuQueue,
    /// Domains: `imbalance_pct` 117 above the LLC (Linux v5.10+) instead of 125.
    ImbPct117,
    /// Active balancing as in 5.13+ (migrate_task gate, interval, no failure reset, early ALL_PINNED).
    ImbalancedActiveBalance,
    /// NO_HZ_IDLE: idle CPUs stop their tick; the idle load balancer
    /// balances for them.
    NohzIdle,
    /// EEVDF (6.12+): a task that blocks while not eligible stays queued
    /// until it is picked or woken (`sched_delayed`).
    DelayDequeue,
    /// EEVDF (6.12+): a delayed task leaves (or is woken) with its
    /// positive lag clipped to 0.
    DelayZero,
    /// EEVDF: a 0.70 ms base slice (6.15, backported to 6.12.y) instead of
    /// 0.75 ms.
    BaseSlice700us,
    /// Newly idle balancing in proportion to its success rate (Dec 2025,
    /// mainline and 6.12.y).
    NiRandom,
    /// `__schedule(SM_IDLE)` (6.12): an idle CPU with nothing queued that
    /// is asked to reschedule keeps running idle without a pick.
    SmIdle,
    /// `task_h_load` as a `CONFIG_FAIR_GROUP_SCHED` kernel computes it for
    /// a task in the root group (a per-jiffy `h_load`).
    RootHLoad,
    /// Load balancing's `group_smt_balance` class (v6.6): an idle CPU
    /// pulls one task from an SMT core that runs more than one.
    GroupSmtBalance,
    /// PELT removals recompute a queue's sums from its averages (5.14-5.16).
    PeltResyncSums,
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
        feat: Feat::TtwuQueue,
        name: "TTWU_QUEUE",
        default: true,
        doc: "try_to_wake_up: when ttwu_queue_cond holds (target in another LLC, or an idle CPU of this LLC) the waker places the task and puts it on the target's wake list; the target activates it after its reschedule IPI (Linux, default on). Kernel only: the simulator always activates on the waker",
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
        feat: Feat::PreemptShort,
        name: "PREEMPT_SHORT",
        default: true,
        doc: "EEVDF update_curr: reschedule a curr that lost its slice protection (a wakeup cancelled it, or it was picked again after a renewal) as soon as it is not eligible (did_preempt_short, Linux 6.12+; the slice-comparing half, do_preempt_short, needs custom slices and is not modelled)",
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
        feat: Feat::ForkClockUpdate,
        name: "FORK_CLOCK_UPDATE",
        default: true,
        doc: "seed 002 (Zijlstra's proposal, quoted in Guittot's 'sched: use load_avg for selecting idlest group', Oct 2016; mainline): wake_up_new_task updates the destination's rq clock before post_init_entity_util_avg, so the first enqueue does not decay the new task's load; off = v4.8 (7dc603c9028e): attached at the destination's stale clock, decayed to now at the first enqueue",
    },
    FeatureDesc {
        feat: Feat::NewTaskNoDecay,
        name: "NEW_TASK_NO_DECAY",
        default: false,
        doc: "seed 002 (Fleming, 'sched/fair: Do not decay new task load on first enqueue', Sep 2016, unmerged): enqueue_entity_load_avg does not decay a new task's own averages at its first enqueue; only changes anything with NO_FORK_CLOCK_UPDATE",
    },
    FeatureDesc {
        feat: Feat::IdleCoreId,
        name: "IDLE_CORE_ID",
        default: false,
        doc: "seed 001 (Srikar v3 2/8 'sched/fair: Maintain the identity of idle-core'): the LLC keeps the id of an idle core (-1 none) instead of has_idle_cores; set at idle entry when the whole core is idle, reset to -1 when select_idle_cpu takes that core, never cleared by a failed scan",
    },
    FeatureDesc {
        feat: Feat::IdleCoreUpdate,
        name: "IDLE_CORE_UPDATE",
        default: false,
        doc: "seed 001 (Srikar v3 3/8 'sched/fair: Update idle-core more often', on top of 2/8, implies IDLE_CORE_ID): -2 none, -1 unknown (scanned as 'has idle core'), >=0 core; idle entry with a busy sibling and -1 searches the LLC for an idle core (set_next_idle_core); idle exit of the recorded core sets -1 (set_core_busy)",
    },
    FeatureDesc {
        feat: Feat::WaIdlerLlc,
        name: "WA_IDLER_LLC",
        default: false,
        doc: "seed 001 (Srikar v3 4/8 'sched/fair: Prefer idle CPU to cache affinity', the patch's own feature): wake_affine_idler_llc after WA_IDLE: preferred CPU (prev, or the waker's if sync) if idle, else its LLC's idle core claimed by compare-and-swap, the same for the other CPU, else the LLC with the smaller busy fraction",
    },
    FeatureDesc {
        feat: Feat::WaIdlerLlcAcross,
        name: "WA_IDLER_LLC_ACROSS",
        default: false,
        doc: "seed 001 (Srikar v3 5/8 'sched/fair: Use affine_idler_llc for wakeups across LLC', implies WA_IDLER_LLC): wake_affine_idle (prev idle, else waker idle; no sync rule) only within an LLC, wake_affine_idler_llc only across LLCs; wake_affine_weight's sync path returns the waker's CPU when it runs at most one task",
    },
    FeatureDesc {
        feat: Feat::IdleBusyAcct,
        name: "IDLE_BUSY_ACCT",
        default: false,
        doc: "seed 001 (Srikar v3 6/8 'sched/idle: Move busy_cpu accounting to idle callback', with 7/8): nr_busy_cpus decremented at every idle pick (floored at 0), incremented when the idle task is put if the CPU was counted idle, and by set_cpu_sd_state_busy (bounded by the LLC size) only then; set_cpu_sd_state_idle no longer decrements; off = mainline nohz accounting at the tick",
    },
    FeatureDesc {
        feat: Feat::SisSkipBusyLlcs,
        name: "SIS_SKIP_BUSY_LLCS",
        default: false,
        doc: "seed 001 (Srikar v3 8/8 'sched/fair: Dont iterate if no idle CPUs'): when wake_affine_idler_llc finds both LLCs fully busy (nr_busy_cpus == size), select_idle_sibling returns the target without scanning the LLC; acts only through WA_IDLER_LLC",
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
    FeatureDesc {
        feat: Feat::ImbPct117,
        name: "IMB_PCT_117",
        default: false,
        doc: "domains: sd_init's imbalance_pct above the LLC (PKG, NODE, NUMA levels) is 117, as in Linux v5.10+ and 6.x ('sched/fair: Reduce minimal imbalance threshold'), instead of the default 125 (pre-5.10); read when the domains are built, so it applies to the whole run",
    },
    FeatureDesc {
        feat: Feat::ImbalancedActiveBalance,
        name: "IMBALANCED_ACTIVE_BALANCE",
        default: false,
        doc: "load balancing as Linux v5.13+ and 6.x do it around active balancing: repeated failures kick the stopper only for a migrate_task imbalance (imbalanced_active_balance, e9b9734b7465 'sched/fair: Reduce cases for active balance', v5.12), which also resets the interval while the rule holds instead of backing off after a kick; no nr_balance_failed = cache_nice_tries + 1 after a kick, the stopper skipping the hotness test instead (LBF_ACTIVE_LB, 91771246031b, v5.13); LBF_ALL_PINNED set as soon as a busiest queue is found and no longer forced when the running task may not move (8a41dfcda7a3, v5.12). Off: 5.10",
    },
    FeatureDesc {
        feat: Feat::NohzIdle,
        name: "NOHZ_IDLE",
        default: false,
        doc: "CONFIG_NO_HZ_IDLE as Linux 6.x runs it on a machine without a cpuidle driver (HLT idle): a CPU stops its tick when it enters idle (nohz_balance_enter_idle: counted idle in nr_busy_cpus from then, blocked load no longer decayed by its own tick) until its first busy tick (nohz_balance_exit_idle); a busy CPU's tick kicks an idle load balancer (nohz_balancer_kick: >= 2 tasks here or more than one busy CPU in the LLC for a balance kick; stale blocked load for a stats kick; a CPU newly tickless for a next_balance collation) by IPI, and that CPU balances and updates blocked load on behalf of every tickless idle CPU (_nohz_idle_balance). Off: every CPU ticks, and a CPU idle at a tick counts as tickless",
    },
    FeatureDesc {
        feat: Feat::DelayDequeue,
        name: "DELAY_DEQUEUE",
        default: false,
        doc: "EEVDF delayed dequeue as Linux 6.12 runs it (on by default there; Peter Zijlstra's 'sched/fair: Implement delayed dequeue', v6.12): a task that blocks while not eligible (negative lag) stays on its runqueue, marked sched_delayed, still counted in the queue's load, nr_running and V but not in its runnable signal, until pick_eevdf picks it (then it is dequeued, and the pick repeats) or a wakeup finds it still queued (ttwu_runnable: it is requeued where it is, with no select_task_rq, no wake_affine and no migration); the balancer may move it like any queued task, and it stays delayed on the destination. Needs --pick eevdf (CFS has no eligibility; ignored there, and cargo xtask says so). Off: a blocking task leaves its queue at once (6.6-6.11)",
    },
    FeatureDesc {
        feat: Feat::DelayZero,
        name: "DELAY_ZERO",
        default: true,
        doc: "with DELAY_DEQUEUE: a delayed task's positive lag is clipped to 0 when its dequeue completes at the pick (finish_delayed_dequeue_entity) and when a wakeup requeues it (requeue_delayed_entity re-places it at V), so it cannot earn credit while queued asleep ('sched/fair: Implement DELAY_ZERO', v6.12; on by default there). No effect without DELAY_DEQUEUE",
    },
    FeatureDesc {
        feat: Feat::NiRandom,
        name: "NI_RANDOM",
        default: false,
        doc: "sched_balance_newidle runs a domain's pass only if a 1,024-sided die (the per-CPU prandom_u32_state) shows at most 1 + the domain's success ratio, which starts at 50 % and counts skipped passes as failures and a run's success weighted by the inverse of its odds (Peter Zijlstra's 'sched/fair: Proportional newidle balance', December 2025, mainline and the 6.1.y/6.12.y stable series; on in the rig's 6.12.117). Off: every pass the cost test allows runs, as before it",
    },
    FeatureDesc {
        feat: Feat::SmIdle,
        name: "SM_IDLE",
        default: false,
        doc: "__schedule(SM_IDLE), Linux 6.12 (K Prateek Nayak, 'sched/core: Introduce SM_IDLE and an idle re-entry fast-path in __schedule()'): the idle task's schedule_idle() on a CPU whose runqueue is empty (after its wake list was flushed) keeps the idle task without pick_next_task, so no newly idle balance runs and idle_stamp is not renewed; on in the rig's 6.12.117. Off: every reschedule of an idle CPU picks, running a newly idle balance first (6.11 and before)",
    },
    FeatureDesc {
        feat: Feat::RootHLoad,
        name: "ROOT_H_LOAD",
        default: false,
        doc: "task_h_load() as a CONFIG_FAIR_GROUP_SCHED kernel (Debian's, the rig's) computes it for a task in the root task group: update_cfs_rq_h_load() sets the queue's h_load to its load_avg at most once per jiffy (jiffies from the runqueue clocks and the tick period) and task_h_load = p.load_avg * h_load / (load_avg + 1), so the task's load is rounded down and, within a jiffy, scaled by how the queue's load changed since its h_load was taken; read by wake_affine_weight (the wakee's and the sync waker's load), cpu_load_without and detach_tasks. The rig's benchmarks run in the root group (busybox init, no sessions, so no autogroup). Off: the !CONFIG_FAIR_GROUP_SCHED form, the task's load_avg. Task groups themselves are not modelled either way",
    },
    FeatureDesc {
        feat: Feat::GroupSmtBalance,
        name: "GROUP_SMT_BALANCE",
        default: false,
        doc: "load balancing's group_smt_balance class (Tim Chen, 'sched/fair: Determine active load balance for SMT sched groups', v6.6): when an idle or newly idle CPU balances, a non-local group that is one SMT core running more than one task is group_smt_balance unless overloaded, ranking above fully busy; two such groups compare by idle CPUs and task counts (has-spare rules) if either has an idle CPU, else the first is kept; calculate_imbalance then moves one task (migrate_task, 1). Off: such a core is fully busy or has spare by its utilization, and the prefer-sibling path sizes the move (5.10-6.5)",
    },
    FeatureDesc {
        feat: Feat::PeltResyncSums,
        name: "PELT_RESYNC_SUMS",
        default: false,
        doc: "PELT as Linux 5.14-5.16 keep a queue's sums after a removal (Odin Ugedal, 'sched/fair: Ensure _sum and _avg values stay consistent' and 'Sync load_sum with load_avg after dequeue'): update_cfs_rq_load_avg's removed-load branch and detach_entity_load_avg set each sum to its average times the divider. Off: 5.17+ (Vincent Guittot, 'sched/pelt: Relax the sync of load_sum with load_avg' and its siblings), the sum minus the removed part, floored with max_t(u32, sum, avg * PELT_MIN_DIVIDER), which wraps a queue's load_sum modulo 2^32 once its load_avg passes about 91,900",
    },
    FeatureDesc {
        feat: Feat::BaseSlice700us,
        name: "BASE_SLICE_700US",
        default: false,
        doc: "EEVDF: normalized_sysctl_sched_base_slice 0.70 ms instead of 0.75 ms (times the CPU-count factor), as in v6.15 ('sched: Reduce the default slice to avoid tasks getting an extra tick') and in the 6.12.y kernels that took it: the rig's Debian 6.12.117 reports base_slice_ns 2800000 on 8 CPUs. Read when the configuration is made, so it holds for the whole run. Off: 0.75 ms (6.6-6.14, 6.12.20)",
    },
];

/// A name standing for several switches: a patch series applied together,
/// or a name that older recipes and results use. Parsed like a switch
/// (`NO_X` clears every member); `Display` prints the members, never the alias.
pub struct FeatureAlias {
    /// Name as used in feature strings.
    pub name: &'static str,
    /// The switches it sets or clears.
    pub feats: &'static [Feat],
    /// What it stands for.
    pub doc: &'static str,
}

/// Seed 001's v3 series as Aubrey Li tested it (2/8, 3/8, 4/8, 5/8, 6/8 and
/// 8/8; 1/8 only changes statistics, 7/8 only removes `#ifdef`s).
const SRIKAR_V3: &[Feat] = &[
    Feat::IdleCoreId,
    Feat::IdleCoreUpdate,
    Feat::WaIdlerLlc,
    Feat::WaIdlerLlcAcross,
    Feat::IdleBusyAcct,
    Feat::SisSkipBusyLlcs,
];

/// The switches that make the core's balancing and EEVDF follow Linux 6.12
/// where they differ from the defaults (5.10-era balancing, every CPU
/// ticking, no delayed dequeue, 6.6-6.14's base slice, every newly idle
/// pass run, an idle CPU's reschedule always picking, `task_h_load` without
/// group scheduling, no `group_smt_balance` class).
const LINUX_6_12: &[Feat] = &[
    Feat::ImbPct117,
    Feat::ImbalancedActiveBalance,
    Feat::DelayDequeue,
    Feat::NohzIdle,
    Feat::BaseSlice700us,
    Feat::NiRandom,
    Feat::SmIdle,
    Feat::RootHLoad,
    Feat::GroupSmtBalance,
];

/// All aliases.
pub const ALIASES: &[FeatureAlias] = &[
    FeatureAlias {
        name: "LINUX_6_12",
        feats: LINUX_6_12,
        doc: "Linux 6.12 as the rig runs it (Debian 6.12.117: EEVDF, CONFIG_NO_HZ_FULL without nohz_full= CPUs, so every idle CPU is tickless; base_slice_ns 2800000 on 8 CPUs): IMB_PCT_117, IMBALANCED_ACTIVE_BALANCE, DELAY_DEQUEUE, NOHZ_IDLE, BASE_SLICE_700US, NI_RANDOM, SM_IDLE, ROOT_H_LOAD, GROUP_SMT_BALANCE. Use it with --pick eevdf (under CFS only the balancing and tickless parts act). Not modelled either way: task groups below the root, util_est, uclamp",
    },
    FeatureAlias {
        name: "SRIKAR_V3",
        feats: SRIKAR_V3,
        doc: "seed 001: Srikar Dronamraju's 'sched/fair: wake_affine improvements' v3 (13 May 2021) applied together: IDLE_CORE_ID, IDLE_CORE_UPDATE, WA_IDLER_LLC, WA_IDLER_LLC_ACROSS, IDLE_BUSY_ACCT, SIS_SKIP_BUSY_LLCS",
    },
    FeatureAlias {
        name: "IDLE_CORE_HINT",
        feats: &[Feat::IdleCoreId, Feat::IdleCoreUpdate],
        doc: "seed 001, former switch (v3 2/8 + 3/8): IDLE_CORE_ID,IDLE_CORE_UPDATE. The former switch also claimed the hinted core by compare-and-swap before the LLC scan (4/8's rule, now WA_IDLER_LLC in wake_affine) and cleared the hint after a failed scan (2/8 removed that)",
    },
    FeatureAlias {
        name: "IDLE_ACCT_ENTRY",
        feats: &[Feat::IdleBusyAcct],
        doc: "seed 001, former switch (v3 6/8): IDLE_BUSY_ACCT. The former switch also skipped the LLC scan when the target's LLC counted all CPUs busy; 8/8's skip is SIS_SKIP_BUSY_LLCS",
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
    /// defaults; `NO_X` clears `X` (every member of an [`ALIASES`] entry).
    /// Unknown names are an error.
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
            if let Some(a) = ALIASES.iter().find(|a| a.name == name) {
                for &f in a.feats {
                    self.set(f, on);
                }
                continue;
            }
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
