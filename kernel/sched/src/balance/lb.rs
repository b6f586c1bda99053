//! One balancing pass at one domain: `sched_balance_rq()` (`load_balance`)
//! with `should_we_balance()`, `detach_tasks()`, `can_migrate_task()`,
//! `task_hot()`, `need_active_balance()` and the active-balance stopper
//! `active_load_balance_cpu_stop()` (reference §E.5, §E.7).

use super::fbg::{find_busiest_group, find_busiest_queue};
use super::{CpuIdleType, LbEnv, MigrationType};
use crate::CpuId;
use crate::core::{Migration, Migrations, SchedCore};
use crate::features::Feat;
use crate::stats::MigrationReason;
use crate::task::{TaskId, TaskPolicy};
use alloc::vec::Vec;
use topology::SD_SHARE_CPUCAPACITY;

/// Result of one `load_balance()` call.
#[derive(Clone, Debug, Default)]
pub struct LbResult {
    /// Tasks moved.
    pub moved: Migrations,
    /// `continue_balancing`: false when another CPU balances this domain.
    pub continue_balancing: bool,
}

/// `should_we_balance()`: only one CPU per local group balances a domain:
/// the first idle CPU of the group's balance mask (preferring one on a fully
/// idle core above the SMT level), else the group's balance CPU.
pub fn should_we_balance(core: &SchedCore, env: &LbEnv) -> bool {
    let dst = env.dst_cpu;
    if env.idle == CpuIdleType::NewlyIdle {
        return core.rqs[dst].nr_running() == 0 && !core.shared.ttwu_pending(dst);
    }
    let sd = &core.topo.sd(dst)[env.level];
    let Some(g) = sd.groups.iter().find(|g| g.span.contains(dst)) else {
        return true;
    };
    let mask = &g.balance_mask;
    let above_smt = !sd.flags.contains(SD_SHARE_CPUCAPACITY) && core.topo.smt_active;
    let mut idle_smt = None;
    for cpu in mask.iter() {
        if !core.idle_cpu(cpu) {
            continue;
        }
        if above_smt && !crate::placement::sis::core_fully_idle(core, cpu) {
            if idle_smt.is_none() {
                idle_smt = Some(cpu);
            }
            continue;
        }
        return cpu == dst;
    }
    if let Some(c) = idle_smt {
        return c == dst;
    }
    g.balance_cpu().is_none_or(|c| c == dst)
}

/// `task_hot()`: ran too recently on the source to be worth moving.
pub fn task_hot(core: &SchedCore, env: &LbEnv, p: TaskId) -> bool {
    let t = &core.tasks[p];
    if t.policy == TaskPolicy::Idle {
        return false;
    }
    if core.topo.sd(env.dst_cpu)[env.level]
        .flags
        .contains(SD_SHARE_CPUCAPACITY)
    {
        return false;
    }
    let src = &core.rqs[env.src_cpu];
    if core.cfg.features.has(Feat::CacheHotBuddy)
        && core.rqs[env.dst_cpu].nr_running() > 0
        && (src.cfs.next == Some(p) || src.cfs.last == Some(p))
    {
        return true;
    }
    let cost = core.cfg.tunables.migration_cost_ns;
    if cost == 0 {
        return false;
    }
    src.clock.saturating_sub(t.se.exec_start) < cost
}

/// `can_migrate_task()` (affinity is a per-CPU kthread or one bound CPU;
/// no `LBF_SOME_PINNED` / `LBF_DST_PINNED` retargeting). `active`: called
/// by the active-balance stopper.
pub fn can_migrate_task(core: &mut SchedCore, env: &mut LbEnv, p: TaskId, active: bool) -> bool {
    // Linux: kthread_is_per_cpu(), or dst_cpu not in p->cpus_ptr.
    if core.tasks[p].is_percpu_kthread || core.tasks[p].bound_cpu.is_some_and(|c| c != env.dst_cpu)
    {
        return false;
    }
    // At least one task could run on dst.
    env.all_pinned = false;
    // Running, or still on the CPU while its schedule() has the runqueue
    // lock dropped for a balance pass (Linux's task_on_cpu()); the active
    // push moves exactly that task, from its own CPU.
    let src = &core.rqs[env.src_cpu];
    if src.curr == Some(p) || (!active && src.switching_out == Some(p)) {
        core.stats.lb.lb_failed_running += 1;
        return false;
    }
    // 6.x's stopper passes LBF_ACTIVE_LB and skips the hotness test
    // (91771246031b); 5.10's goes through it and relies on the
    // `nr_balance_failed = cache_nice_tries + 1` its kick left behind.
    if active && core.cfg.features.has(Feat::ImbalancedActiveBalance) {
        return true;
    }
    let hot = task_hot(core, env, p);
    let sd_failed = core.rqs[env.dst_cpu].sd[env.level].nr_balance_failed;
    let tries = core.topo.sd(env.dst_cpu)[env.level].cache_nice_tries;
    if !hot || sd_failed > tries {
        if hot {
            core.stats.lb.lb_hot_gained += 1;
        }
        return true;
    }
    core.stats.lb.lb_failed_hot += 1;
    false
}

/// Source tasks in `cfs_tasks` tail order. Linux puts a task at the list
/// head when it is enqueued (`account_entity_enqueue`), picked
/// (`__set_next_task_fair`) or skipped by `detach_tasks`, so the tail holds
/// the task that least recently had one of those: ascending
/// [`cfs_tasks_pos`](crate::task::SchedEntity::cfs_tasks_pos). Sorted into `cpu`'s scratch list (taken out of its runqueue; the caller
/// gives it back with [`Rq::lru_scratch`](crate::rq::Rq::lru_scratch)), so
/// balancing allocates only when a runqueue holds more tasks than ever.
fn lru_tasks(core: &mut SchedCore, cpu: CpuId, max: usize) -> Vec<(u64, TaskId)> {
    let mut v = core::mem::take(&mut core.rqs[cpu].lru_scratch);
    v.clear();
    v.extend(core.rq_tasks(cpu).map(|t| {
        let task = &core.tasks[t];
        (task.se.cfs_tasks_pos, t)
    }));
    v.sort_unstable();
    v.truncate(max);
    v
}

/// `detach_tasks`' `next:` label: a task it looked at and left goes to the
/// head of the source's `cfs_tasks` (`list_move`), so the next pass looks
/// at the others first.
fn skip_to_head(core: &mut SchedCore, src: CpuId, p: TaskId) {
    let c = &mut *core;
    c.rqs[src].cfs.cfs_tasks_move_to_head(&mut c.tasks[p].se);
}

/// `detach_tasks()` + `attach_tasks()`.
pub fn detach_tasks(
    core: &mut SchedCore,
    env: &mut LbEnv,
    reason: MigrationReason,
    now: u64,
) -> Migrations {
    let mut moved = Migrations::new();
    if env.imbalance <= 0 || core.rqs[env.src_cpu].nr_running() <= 1 {
        return moved;
    }
    let failed = core.rqs[env.dst_cpu].sd[env.level].nr_balance_failed;
    let lru = lru_tasks(core, env.src_cpu, env.loop_max as usize);
    for &(_, p) in &lru {
        if env.idle != CpuIdleType::NotIdle && core.rqs[env.src_cpu].nr_running() <= 1 {
            break;
        }
        if !can_migrate_task(core, env, p, false) {
            skip_to_head(core, env.src_cpu, p);
            continue;
        }
        match env.migration_type {
            MigrationType::Load => {
                let load = core.task_h_load(p).max(1);
                if core.cfg.features.has(Feat::LbMin) && load < 16 && failed == 0 {
                    skip_to_head(core, env.src_cpu, p);
                    continue;
                }
                if (load >> failed.min(63)) as i64 > env.imbalance {
                    skip_to_head(core, env.src_cpu, p);
                    continue;
                }
                env.imbalance -= load as i64;
            }
            MigrationType::Util => {
                let util = core.tasks[p].se.avg.util_avg;
                if (util >> failed.min(63)) as i64 > env.imbalance {
                    skip_to_head(core, env.src_cpu, p);
                    continue;
                }
                env.imbalance -= util as i64;
            }
            MigrationType::Task | MigrationType::Misfit => env.imbalance -= 1,
        }
        let m = core.move_queued_task(p, env.dst_cpu, reason, now);
        core.push_migration(env.dst_cpu, &mut moved, m);
        if env.idle == CpuIdleType::NewlyIdle || env.imbalance <= 0 {
            break;
        }
    }
    core.rqs[env.src_cpu].lru_scratch = lru;
    // Linux detaches onto a list (`list_add`: last detached first) and
    // `attach_tasks` enqueues from its head, so the destination's
    // `cfs_tasks` gets them in reverse detach order: the first task
    // detached ends nearest the head. (Each was enqueued as it was moved.)
    if moved.len() > 1 {
        let c = &mut *core;
        for m in moved.iter().rev() {
            c.rqs[env.dst_cpu]
                .cfs
                .cfs_tasks_move_to_head(&mut c.tasks[m.task].se);
        }
    }
    moved
}

/// `need_active_balance()`. The asym-packing, reduced-capacity and misfit
/// cases cannot arise on the symmetric, RT-free machines modelled here, so
/// what is left is the failure rule: `nr_balance_failed >
/// cache_nice_tries + 2` at this domain, for any migration type (5.10), or, with
/// `IMBALANCED_ACTIVE_BALANCE`, only when the imbalance is counted in tasks
/// (`imbalanced_active_balance()`, v5.13 "sched/fair: Reduce cases for
/// active balance": an overloaded group has a waiting task that
/// `detach_tasks` ends up taking once the failures lower its threshold).
/// Newly idle passes do not raise the count but may act on it, as in Linux.
pub fn need_active_balance(core: &SchedCore, env: &LbEnv) -> bool {
    let failed = core.rqs[env.dst_cpu].sd[env.level].nr_balance_failed;
    let tries = core.topo.sd(env.dst_cpu)[env.level].cache_nice_tries;
    if core.cfg.features.has(Feat::ImbalancedActiveBalance)
        && env.migration_type != MigrationType::Task
    {
        return false;
    }
    failed > tries + 2
}

/// `!cpumask_subset(env->cpus, env->dst_grpmask)`: does the domain still
/// have a CPU outside dst's group that the redo has not taken out?
fn others_left(core: &SchedCore, env: &LbEnv) -> bool {
    let sd = &core.topo.sd(env.dst_cpu)[env.level];
    let Some(local) = sd.groups.iter().find(|g| g.span.contains(env.dst_cpu)) else {
        return false;
    };
    sd.span
        .iter()
        .any(|c| !local.span.contains(c) && !env.excluded.contains(c))
}

/// `MAX_PINNED_INTERVAL`: the back-off cap (ms) when every task was pinned.
const MAX_PINNED_INTERVAL_MS: u64 = 512;

/// `out_one_pinned`: no balance interval change on a newly idle pass
/// (it ignores intervals); otherwise double the interval, up to
/// `MAX_PINNED_INTERVAL` when every task was pinned, else up to the
/// domain's `max_interval`.
fn out_one_pinned(core: &mut SchedCore, env: &LbEnv) {
    if env.idle == CpuIdleType::NewlyIdle {
        return;
    }
    let max = u64::from(core.topo.sd(env.dst_cpu)[env.level].max_interval_ms);
    let st = &mut core.rqs[env.dst_cpu].sd[env.level];
    if (env.all_pinned && st.balance_interval_ms < MAX_PINNED_INTERVAL_MS)
        || st.balance_interval_ms < max
    {
        st.balance_interval_ms *= 2;
    }
}

/// May the task running on `src` move to `dst` (Linux tests
/// `busiest->curr->cpus_ptr` before kicking the stopper)? An idle `src`
/// runs its idle task, which is pinned.
fn curr_may_move(core: &SchedCore, src: CpuId, dst: CpuId) -> bool {
    core.rqs[src].curr.is_some_and(|p| {
        let t = &core.tasks[p];
        !t.is_percpu_kthread && t.bound_cpu.is_none_or(|c| c == dst)
    })
}

/// `sched_balance_rq()` / `load_balance()` of `dst` at domain `level`, with
/// its counters also attributed to the domain level (`/proc/schedstat`
/// domain lines).
pub fn load_balance(
    core: &mut SchedCore,
    dst: CpuId,
    level: usize,
    idle: CpuIdleType,
    now: u64,
) -> LbResult {
    let before = core.stats.lb;
    let r = load_balance_one(core, dst, level, idle, now);
    let delta = core.stats.lb.since(&before);
    let name = core.topo.sd(dst)[level].name;
    core.stats.lb_domain(name).accumulate(&delta);
    r
}

fn load_balance_one(
    core: &mut SchedCore,
    dst: CpuId,
    level: usize,
    idle: CpuIdleType,
    now: u64,
) -> LbResult {
    let mut env = LbEnv {
        dst_cpu: dst,
        level,
        idle,
        src_cpu: dst,
        imbalance: 0,
        migration_type: MigrationType::Load,
        loop_max: core.cfg.tunables.nr_migrate,
        all_pinned: false,
        excluded: Default::default(),
    };
    core.stats.lb.lb_count += 1;
    let mut res = LbResult {
        moved: Migrations::new(),
        continue_balancing: true,
    };
    let balanced = 'find: loop {
        if !should_we_balance(core, &env) {
            res.continue_balancing = false;
            break 'find true;
        }
        let Some(group) = find_busiest_group(core, &mut env) else {
            core.stats.lb.lb_nobusyg += 1;
            break 'find true;
        };
        let Some(src) = find_busiest_queue(core, &env, group) else {
            core.stats.lb.lb_nobusyq += 1;
            break 'find true;
        };
        env.src_cpu = src;
        // double_lock_balance(this, busiest) + update_rq_clock(busiest);
        // the busiest queue is released again below.
        core.lock_also(src);
        core.update_rq_clock(src, now);
        let reason = if idle == CpuIdleType::NewlyIdle {
            MigrationReason::NewIdle
        } else {
            MigrationReason::Balance
        };
        // LBF_ALL_PINNED: 6.x sets it once a busiest queue is found and
        // clears it at the first task that may run on dst (8a41dfcda7a3,
        // v5.12); 5.10 sets it when it tries to detach, and again when the
        // busiest CPU's running task may not move (below).
        let linux6 = core.cfg.features.has(Feat::ImbalancedActiveBalance);
        let tried = core.rqs[src].nr_running() > 1;
        env.all_pinned = linux6 || tried;
        if tried {
            env.loop_max = core.cfg.tunables.nr_migrate.min(core.rqs[src].nr_running());
            res.moved = detach_tasks(core, &mut env, reason, now);
            if res.moved.is_empty() && env.all_pinned {
                // Every task here is pinned away from dst: take this queue
                // out of env->cpus and retry while CPUs outside dst's group
                // remain (`redo`), else out_all_pinned.
                core.unlock(src);
                if env.excluded.push(src) && others_left(core, &env) {
                    continue 'find;
                }
                // out_all_pinned: the balanced exit below.
                break 'find true;
            }
        }
        let min_interval = u64::from(core.topo.sd(dst)[level].min_interval_ms);
        let st = &mut core.rqs[dst].sd[level];
        if res.moved.is_empty() {
            core.stats.lb.lb_failed += 1;
            if idle != CpuIdleType::NewlyIdle {
                st.nr_balance_failed += 1;
            }
            let mut active = false;
            if need_active_balance(core, &env) {
                if !curr_may_move(core, src, dst) {
                    // out_one_pinned: no kick, no interval reset; the
                    // failure count stays. 5.10 marks the pass all pinned
                    // here whatever detach_tasks saw; 6.x keeps the flag
                    // as detach_tasks left it (8a41dfcda7a3).
                    if !linux6 {
                        env.all_pinned = true;
                    }
                    out_one_pinned(core, &env);
                    core.unlock(src);
                    return res;
                }
                env.all_pinned = false;
                // The stopper preempts whatever runs on src, so even a lone
                // running task is moved (active_load_balance_cpu_stop).
                if core.rqs[src].active_balance.is_none() {
                    core.rqs[src].active_balance = Some(dst);
                    core.resched_curr(src);
                    active = true;
                }
                // 5.10: "We've kicked active balancing, force task
                // migration". 6.x dropped this (91771246031b, v5.13): the
                // stopper ignores hotness through LBF_ACTIVE_LB instead.
                if !linux6 {
                    let tries = core.topo.sd(dst)[level].cache_nice_tries;
                    core.rqs[dst].sd[level].nr_balance_failed = tries + 1;
                }
            }
            // 5.10 resets the interval unless it kicked the stopper, then
            // backs off (voluntary_active_balance is never true here); 6.x
            // resets it also while need_active_balance still holds
            // (e9b9734b7465, v5.12).
            if !active || (linux6 && need_active_balance(core, &env)) {
                core.rqs[dst].sd[level].balance_interval_ms = min_interval;
            } else if !linux6 {
                let max = u64::from(core.topo.sd(dst)[level].max_interval_ms);
                let st = &mut core.rqs[dst].sd[level];
                if st.balance_interval_ms < max {
                    st.balance_interval_ms *= 2;
                }
            }
        } else {
            core.stats.lb.lb_gained += res.moved.len() as u64;
            st.nr_balance_failed = 0;
            st.balance_interval_ms = min_interval;
        }
        core.unlock(src);
        break 'find false;
    };
    if balanced {
        // out_balanced, then out_one_pinned's back-off (capped at 512 ms
        // when a redo came here after an all-pinned queue).
        core.stats.lb.lb_balanced += 1;
        core.rqs[dst].sd[level].nr_balance_failed = 0;
        out_one_pinned(core, &env);
    }
    res
}

/// `active_load_balance_cpu_stop()`: runs on the busiest CPU (from its
/// schedule(), curr already put back) and pushes one task to `target`.
pub fn active_load_balance_cpu_stop(
    core: &mut SchedCore,
    busiest: CpuId,
    target: CpuId,
    now: u64,
) -> Option<Migration> {
    // Linux's `busiest_rq->nr_running <= 1` counts the running stopper;
    // here the stopper is this schedule() with curr put back, so any fair
    // task left on the queue is one to move. Nothing is counted then.
    if core.rqs[busiest].nr_running() == 0 || busiest == target {
        return None;
    }
    let level = core
        .topo
        .sd(target)
        .iter()
        .position(|d| d.span.contains(busiest))?;
    // schedstat: alb_count / alb_pushed / alb_failed of the target's lowest
    // domain spanning busiest, as Linux counts them.
    let domain = core.topo.sd(target)[level].name;
    core.stats.lb.alb_count += 1;
    core.stats.lb_domain(domain).alb_count += 1;
    let mut env = LbEnv {
        dst_cpu: target,
        level,
        idle: CpuIdleType::Idle,
        src_cpu: busiest,
        imbalance: 1,
        migration_type: MigrationType::Task,
        loop_max: 1,
        all_pinned: false,
        excluded: Default::default(),
    };
    core.update_rq_clock(busiest, now);
    let mut pushed = None;
    // Taking the target's lock may have dropped busiest's for a moment:
    // another balancer can have pulled from it meanwhile (then, as in
    // Linux's detach_one_task, nothing is found).
    if !(core.lock_also(target) && core.rqs[busiest].nr_running() == 0) {
        let lru = lru_tasks(core, busiest, usize::MAX);
        for &(_, p) in &lru {
            if core.rqs[busiest].curr != Some(p) && can_migrate_task(core, &mut env, p, true) {
                // Active balancing done: the target's domain forgets its
                // failures.
                core.rqs[target].sd[level].nr_balance_failed = 0;
                pushed = Some(core.move_queued_task(p, target, MigrationReason::Active, now));
                break;
            }
        }
        core.rqs[busiest].lru_scratch = lru;
    }
    core.unlock(target);
    if pushed.is_some() {
        core.stats.lb.alb_pushed += 1;
        core.stats.lb_domain(domain).alb_pushed += 1;
    } else {
        core.stats.lb.alb_failed += 1;
        core.stats.lb_domain(domain).alb_failed += 1;
    }
    pushed
}
