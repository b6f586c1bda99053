//! Load-balancing unit tests.

use super::domains::{newidle_balance, rebalance_domains, sd_balance_interval_ns};
use super::fbg::{find_busiest_group, sibling_imbalance};
use super::lb::load_balance;
use super::stats::{GroupType, SgLbStats, group_classify};
use super::{CpuIdleType, LbEnv, MigrationType};
use crate::CpuId;
use crate::config::PickPolicy;
use crate::sched::Scheduler;
use crate::stats::{MigrationDistance, MigrationReason};
use crate::task::{TaskId, TaskPolicy};
use crate::testutil::{sched, spec};

/// A balancing pass's environment as `load_balance` starts it: `dst_cpu`
/// balancing its own queue at `level`, nothing to move yet.
fn lb_env(dst_cpu: CpuId, level: usize, idle: CpuIdleType, migration_type: MigrationType) -> LbEnv {
    LbEnv {
        dst_cpu,
        level,
        idle,
        src_cpu: dst_cpu,
        imbalance: 0,
        migration_type,
        loop_max: 32,
        all_pinned: false,
        excluded: Default::default(),
    }
}

fn queue_on(s: &mut Scheduler, cpu: CpuId, n: usize, now: u64) -> Vec<TaskId> {
    let v: Vec<TaskId> = (0..n)
        .map(|_| {
            s.wake_up_new_task_on(None, cpu, 0, TaskPolicy::Normal, now)
                .task
        })
        .collect();
    s.schedule(cpu, now);
    v
}

/// The two rule sets the balancer tests cover: 5.10 (default) and 6.x.
const VERSIONS: [(bool, &str); 2] = [(false, ""), (true, "IMBALANCED_ACTIVE_BALANCE")];

/// A running task and a queued per-CPU kthread on CPU 0 of a 4-CPU socket,
/// then five idle MC passes of CPU 1: the last ones kick the stopper on
/// CPU 0 (the kthread may not move, the runner may). Returns (runner, kthread).
fn kick_runner_off_cpu0(s: &mut Scheduler) -> (TaskId, TaskId) {
    let runner = queue_on(s, 0, 1, 1000)[0];
    let kt = s
        .wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, 1000)
        .task;
    s.set_percpu_kthread(kt, true);
    assert_eq!(s.current(0), Some(runner));
    for i in 0..5 {
        load_balance(&mut s.core(), 1, 0, CpuIdleType::Idle, 2_000_000 + i);
    }
    (runner, kt)
}

#[test]
fn classification() {
    // 2 CPUs, 3 tasks, saturated util -> overloaded.
    assert_eq!(
        group_classify(117, 3, 2, 2048, 2048, 3072),
        GroupType::Overloaded
    );
    // 3 tasks on 2 CPUs with low util and runnable -> still has capacity.
    assert_eq!(
        group_classify(117, 3, 2, 2048, 500, 600),
        GroupType::HasSpare
    );
    // nr == weight, util near capacity -> fully busy.
    assert_eq!(
        group_classify(117, 2, 2, 2048, 1900, 2048),
        GroupType::FullyBusy
    );
    assert_eq!(
        group_classify(117, 1, 2, 2048, 1900, 2048),
        GroupType::HasSpare
    );
}

#[test]
fn sibling_imbalance_equalizes_tasks_per_core() {
    let env = lb_env(0, 0, CpuIdleType::Idle, MigrationType::Task);
    let g = |nr: u32, cores: u32| SgLbStats {
        sum_nr_running: nr,
        cores,
        ..Default::default()
    };
    assert_eq!(sibling_imbalance(&env, &g(4, 2), &g(0, 2)), 4);
    assert_eq!(sibling_imbalance(&env, &g(4, 4), &g(1, 2)), 2); // (2*4-4*1)=4 -> (8+6)/6 = 2
    assert_eq!(sibling_imbalance(&env, &g(2, 4), &g(0, 1)), 2); // rounds to 1, empty local -> 2
    let busy = LbEnv {
        idle: CpuIdleType::NotIdle,
        ..env
    };
    assert_eq!(sibling_imbalance(&busy, &g(4, 2), &g(0, 2)), 0);
}

#[test]
fn idle_cpu_pulls_from_overloaded_cpu() {
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "");
    queue_on(&mut s, 0, 3, 1000);
    let r = load_balance(&mut s.core(), 1, 0, CpuIdleType::Idle, 2_000_000);
    assert_eq!(r.moved.len(), 1, "{:?}", s.stats().lb);
    let m = r.moved[0];
    assert_eq!((m.from, m.to, m.reason), (0, 1, MigrationReason::Balance));
    assert_eq!(s.core().rqs[1].nr_running(), 1);
    assert_eq!(s.core().rqs[0].nr_running(), 2);
    assert_eq!(
        s.stats().migrations.by_distance(MigrationDistance::SameLlc),
        1
    );
    assert_eq!(s.stats().lb.lb_gained, 1);
    assert!(s.core().rqs[1].need_resched, "dst is kicked");
    assert_eq!(s.stats().lb_by_domain.len(), 1);
    assert_eq!(s.stats().lb_by_domain[0].0, "MC");
    assert_eq!(s.stats().lb_by_domain[0].1.lb_gained, 1);
}

#[test]
fn balanced_domain_backs_off() {
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "");
    for cpu in 0..4 {
        queue_on(&mut s, cpu, 1, 1000);
    }
    let mut env = lb_env(1, 0, CpuIdleType::NotIdle, MigrationType::Load);
    assert_eq!(find_busiest_group(&mut s.core(), &mut env), None);
    let before = s.core().rqs[0].sd[0].balance_interval_ms;
    load_balance(&mut s.core(), 0, 0, CpuIdleType::NotIdle, 2_000_000);
    assert_eq!(s.core().rqs[0].sd[0].balance_interval_ms, 2 * before);
    assert_eq!(s.stats().lb.lb_balanced, 1);
    // Busy CPUs balance busy_factor (16) times less often.
    let idle_iv = sd_balance_interval_ns(&s.core(), 0, 0, false);
    let busy_iv = sd_balance_interval_ns(&s.core(), 0, 0, true);
    assert_eq!(busy_iv, 16 * idle_iv - 1_000_000);
}

#[test]
fn cache_hot_task_stays_until_balancing_keeps_failing() {
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "");
    let ts = queue_on(&mut s, 0, 2, 1000);
    let waiting = ts
        .iter()
        .copied()
        .find(|&t| s.current(0) != Some(t))
        .unwrap();
    let now = 10_000_000;
    s.core().tasks[waiting].se.exec_start = now - 100_000;
    s.core().rqs[0].clock = now;
    let r = load_balance(&mut s.core(), 1, 0, CpuIdleType::Idle, now);
    assert!(r.moved.is_empty());
    assert_eq!(s.stats().lb.lb_failed_hot, 1);
    assert_eq!(s.core().rqs[1].sd[0].nr_balance_failed, 1);
    let r = load_balance(&mut s.core(), 1, 0, CpuIdleType::Idle, now);
    assert!(
        r.moved.is_empty(),
        "cache_nice_tries = 1 failure still allowed"
    );
    let r = load_balance(&mut s.core(), 1, 0, CpuIdleType::Idle, now);
    assert_eq!(
        r.moved.len(),
        1,
        "forced after nr_balance_failed > cache_nice_tries"
    );
    assert_eq!(s.stats().lb.lb_hot_gained, 1);
}

#[test]
fn active_balance_pushes_the_running_task() {
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "");
    let (runner, kt) = kick_runner_off_cpu0(&mut s);
    assert_eq!(s.core().rqs[0].active_balance, Some(1));
    // Linux counts alb_count in the stopper, not at the kick.
    assert_eq!(s.stats().lb.alb_count, 0);
    assert!(s.need_resched(0));
    let sw = s.schedule(0, 3_000_000);
    assert_eq!(s.stats().lb.alb_count, 1);
    assert_eq!(sw.migrations.len(), 1);
    assert_eq!(sw.migrations[0].task, runner);
    assert_eq!(sw.migrations[0].reason, MigrationReason::Active);
    assert_eq!(sw.next, Some(kt));
    assert_eq!(s.stats().lb.alb_pushed, 1);
}

#[test]
fn newidle_pulls_when_going_idle() {
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Eevdf, "");
    queue_on(&mut s, 0, 3, 1000);
    let t1 = queue_on(&mut s, 1, 1, 1000)[0];
    assert_eq!(s.current(1), Some(t1));
    s.block(1, 5_000_000);
    let sw = s.schedule(1, 5_000_000);
    assert_eq!(sw.migrations.len(), 1, "{:?}", s.stats().lb);
    assert_eq!(sw.migrations[0].reason, MigrationReason::NewIdle);
    assert!(sw.next.is_some());
    assert_eq!(s.stats().lb.newidle_pulled, 1);
    // cpu0 still has 2 tasks: idle cpu2 pulls the waiting one.
    assert_eq!(newidle_balance(&mut s.core(), 2, 6_000_000).len(), 1);
    // Now no CPU is overloaded, but the root domain's flag is sticky: CPU
    // 2's pass saw CPU 0 with two tasks. CPU 3 balances, finds nothing, and
    // its top-level (MC) pass clears the flag; its next pass is skipped.
    assert!(newidle_balance(&mut s.core(), 3, 7_000_000).is_empty());
    assert_eq!(s.stats().lb.newidle_skipped, 0);
    assert!(!s.core().any_overloaded());
    assert!(newidle_balance(&mut s.core(), 3, 8_000_000).is_empty());
    assert_eq!(s.stats().lb.newidle_skipped, 1);
}

#[test]
fn sched_exec_moves_the_exec_ing_task_to_an_idle_node() {
    let mut s = sched(&spec(2, 2, 1, 2), PickPolicy::Eevdf, "");
    let ts = queue_on(&mut s, 0, 2, 1000);
    let runner = s.current(0).unwrap();
    let dest = s.sched_exec(0, 2000).expect("an idle CPU elsewhere");
    assert_ne!(dest, 0);
    assert!(s.need_resched(0));
    let sw = s.schedule(0, 2000);
    assert_eq!(sw.migrations.len(), 1);
    assert_eq!(
        (sw.migrations[0].task, sw.migrations[0].reason),
        (runner, MigrationReason::Exec)
    );
    assert_eq!(s.task(runner).cpu, dest);
    assert!(ts.contains(&runner));
    // Nothing to gain: exec on a machine where this CPU is the idlest stays.
    let mut s1 = sched(&spec(1, 1, 1, 1), PickPolicy::Cfs, "");
    queue_on(&mut s1, 0, 1, 10);
    assert_eq!(s1.sched_exec(0, 20), None);
}

#[test]
fn periodic_balance_spreads_across_numa_nodes() {
    let mut s = sched(&spec(2, 2, 1, 2), PickPolicy::Cfs, "");
    let ts = queue_on(&mut s, 0, 4, 1000);
    // Let util/runnable saturate so the source group is overloaded.
    for t in 1..=200u64 {
        let now = t * 1_000_000;
        for cpu in 0..4 {
            let r = s.tick(cpu, now);
            if r.need_resched {
                s.schedule(cpu, now);
            }
            for c in r.resched {
                if c != cpu {
                    s.schedule(c, now);
                }
            }
        }
    }
    let per_cpu: Vec<u32> = (0..4).map(|c| s.core().rqs[c].nr_running()).collect();
    assert_eq!(per_cpu, vec![1, 1, 1, 1], "{:?}", s.stats().lb);
    assert!(
        s.stats()
            .migrations
            .by_distance(MigrationDistance::OtherNode)
            >= 1
    );
    let _ = ts;
    assert!(rebalance_domains(&mut s.core(), 3, 300_000_000).is_empty());
}

#[test]
fn pick_busiest_prefers_busier_types_then_fewer_idle_cpus() {
    use super::stats::update_sd_pick_busiest;
    let g = |t: GroupType, idle: u32, nr: u32, avg: u64| SgLbStats {
        group_type: t,
        idle_cpus: idle,
        sum_nr_running: nr,
        sum_h_nr_running: nr,
        avg_load: avg,
        ..Default::default()
    };
    let spare = g(GroupType::HasSpare, 1, 1, 0);
    assert!(update_sd_pick_busiest(None, &spare));
    assert!(
        !update_sd_pick_busiest(None, &g(GroupType::HasSpare, 2, 0, 0)),
        "no tasks"
    );
    assert!(update_sd_pick_busiest(
        Some(&spare),
        &g(GroupType::Overloaded, 0, 3, 10)
    ));
    assert!(!update_sd_pick_busiest(
        Some(&g(GroupType::Overloaded, 0, 3, 10)),
        &spare
    ));
    assert!(
        update_sd_pick_busiest(Some(&spare), &g(GroupType::HasSpare, 0, 1, 0)),
        "fewer idle"
    );
    assert!(
        update_sd_pick_busiest(Some(&spare), &g(GroupType::HasSpare, 1, 2, 0)),
        "tie: more tasks"
    );
    assert!(!update_sd_pick_busiest(
        Some(&spare),
        &g(GroupType::HasSpare, 1, 1, 0)
    ));
    let ov = g(GroupType::Overloaded, 0, 3, 10);
    assert!(update_sd_pick_busiest(
        Some(&ov),
        &g(GroupType::Overloaded, 0, 3, 11)
    ));
    assert!(!update_sd_pick_busiest(
        Some(&ov),
        &g(GroupType::Overloaded, 0, 9, 10)
    ));
}

#[test]
fn should_we_balance_elects_one_cpu_per_group() {
    use super::lb::should_we_balance;
    // 1 socket x 2 cores x 2 threads: at MC level groups are the cores.
    let mut s = sched(&spec(1, 2, 2, 1), PickPolicy::Cfs, "");
    let env = |dst: CpuId, idle| lb_env(dst, 1, idle, MigrationType::Task);
    // All idle: cpu0 is the first idle CPU of core {0,1}.
    assert!(should_we_balance(&s.core(), &env(0, CpuIdleType::Idle)));
    assert!(!should_we_balance(&s.core(), &env(1, CpuIdleType::Idle)));
    // cpu0 busy: its idle sibling cpu1 balances for the group.
    queue_on(&mut s, 0, 1, 10);
    assert!(should_we_balance(&s.core(), &env(1, CpuIdleType::Idle)));
    // Newly idle: always, unless there is work.
    assert!(should_we_balance(
        &s.core(),
        &env(3, CpuIdleType::NewlyIdle)
    ));
    assert!(!should_we_balance(
        &s.core(),
        &env(0, CpuIdleType::NewlyIdle)
    ));
    // Everyone busy: the group's first CPU.
    queue_on(&mut s, 1, 1, 10);
    assert!(should_we_balance(&s.core(), &env(0, CpuIdleType::NotIdle)));
    assert!(!should_we_balance(&s.core(), &env(1, CpuIdleType::NotIdle)));
}

#[test]
fn busiest_queue_by_migration_type() {
    use super::fbg::find_busiest_queue;
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "");
    queue_on(&mut s, 1, 3, 10);
    queue_on(&mut s, 2, 2, 10);
    queue_on(&mut s, 3, 1, 10);
    s.core().rqs[2].cfs.avg.load_avg = 5000;
    s.core().rqs[1].cfs.avg.load_avg = 3000;
    s.core().rqs[3].cfs.avg.load_avg = 9000;
    s.core().rqs[2].cfs.avg.util_avg = 900;
    s.core().rqs[1].cfs.avg.util_avg = 800;
    // Groups at MC level are single CPUs: group index == cpu here.
    let mut env = LbEnv {
        imbalance: 4000,
        ..lb_env(0, 0, CpuIdleType::Idle, MigrationType::Task)
    };
    let group_of = |s: &Scheduler, cpu: CpuId| {
        s.shared.topo.sd(0)[0]
            .groups
            .iter()
            .position(|g| g.span.contains(cpu))
            .unwrap()
    };
    assert_eq!(
        find_busiest_queue(&s.core(), &env, group_of(&s, 1)),
        Some(1)
    );
    env.migration_type = MigrationType::Load;
    // A lone task heavier than the imbalance is not worth moving.
    assert_eq!(find_busiest_queue(&s.core(), &env, group_of(&s, 3)), None);
    assert_eq!(
        find_busiest_queue(&s.core(), &env, group_of(&s, 2)),
        Some(2)
    );
    env.migration_type = MigrationType::Util;
    assert_eq!(
        find_busiest_queue(&s.core(), &env, group_of(&s, 3)),
        None,
        "util: single task CPUs skipped"
    );
}

#[test]
fn task_hot_rules() {
    use super::lb::task_hot;
    let mut s = sched(&spec(1, 2, 2, 1), PickPolicy::Cfs, "");
    let ts = queue_on(&mut s, 0, 2, 10);
    let waiting = ts
        .iter()
        .copied()
        .find(|&t| s.current(0) != Some(t))
        .unwrap();
    s.core().rqs[0].clock = 1_000_000;
    s.core().tasks[waiting].se.exec_start = 900_000;
    let mc = LbEnv {
        src_cpu: 0,
        imbalance: 1,
        ..lb_env(2, 1, CpuIdleType::Idle, MigrationType::Task)
    };
    assert!(task_hot(&s.core(), &mc, waiting), "ran 100us ago");
    let smt = LbEnv {
        dst_cpu: 1,
        level: 0,
        ..mc
    };
    assert!(
        !task_hot(&s.core(), &smt, waiting),
        "SMT siblings share the cache"
    );
    s.core().tasks[waiting].se.exec_start = 400_000;
    assert!(
        !task_hot(&s.core(), &mc, waiting),
        "older than migration_cost"
    );
}

/// Linux's rule (`sched_balance_rq` / `load_balance`): an idle core's CPU
/// that finds the busiest queue running a single task cannot detach it
/// (`detach_tasks` needs `nr_running > 1`), counts a failure per periodic
/// pass, and once `nr_balance_failed > cache_nice_tries + 2` (MC:
/// cache_nice_tries = 1, so on the 4th failure) kicks the stopper, which
/// moves the lone task (the stopper is what runs then, so the task is
/// queued, not current). Two tasks on the SMT siblings of core 0 with core 1
/// idle: the MC balance of CPU 2 must spread them. After the kick, 5.10
/// sets the failures to cache_nice_tries + 1 and backs the interval off;
/// 6.x (IMBALANCED_ACTIVE_BALANCE) keeps the failures and resets the
/// interval to its minimum. The push resets the failures in both.
#[test]
fn active_balance_moves_a_lone_task_off_a_busy_core() {
    for (linux6, features) in VERSIONS {
        let mut s = sched(&spec(1, 2, 2, 1), PickPolicy::Cfs, features);
        let (a, b) = {
            let c = s.core();
            let smt = &c.topo.sd(0)[0];
            assert_eq!(smt.name, "SMT");
            (0, smt.span.iter().find(|&c| c != 0).unwrap())
        };
        let other = (0..4)
            .find(|&c| !s.core().topo.sd(0)[0].span.contains(c))
            .unwrap();
        let ta = queue_on(&mut s, a, 1, 1000)[0];
        let tb = queue_on(&mut s, b, 1, 1000)[0];
        let mc = s
            .core()
            .topo
            .sd(other)
            .iter()
            .position(|d| d.name == "MC")
            .unwrap();
        let min = u64::from(s.core().topo.sd(other)[mc].min_interval_ms);
        let kicked = |s: &Scheduler| {
            [a, b]
                .into_iter()
                .find(|&c| s.core().rqs[c].active_balance == Some(other))
        };
        let mut now = 2_000_000;
        for pass in 1..=3 {
            let r = load_balance(&mut s.core(), other, mc, CpuIdleType::Idle, now);
            assert!(r.moved.is_empty());
            assert_eq!(kicked(&s), None, "{features}: pass {pass}: no kick yet");
            assert_eq!(s.core().rqs[other].sd[mc].nr_balance_failed, pass);
            assert_eq!(s.core().rqs[other].sd[mc].balance_interval_ms, min);
            now += 1_000_000;
        }
        load_balance(&mut s.core(), other, mc, CpuIdleType::Idle, now);
        let busiest = kicked(&s).expect("one of the siblings is kicked");
        let (failed, interval) = {
            let c = s.core();
            let st = &c.rqs[other].sd[mc];
            (st.nr_balance_failed, st.balance_interval_ms)
        };
        if linux6 {
            assert_eq!((failed, interval), (4, min), "6.x after the kick");
        } else {
            assert_eq!((failed, interval), (2, 2 * min), "5.10 after the kick");
        }
        assert!(s.need_resched(busiest));
        let sw = s.schedule(busiest, now + 1000);
        assert_eq!(sw.migrations.len(), 1);
        let moved = sw.migrations[0];
        assert_eq!((moved.from, moved.to), (busiest, other));
        assert_eq!(moved.reason, MigrationReason::Active);
        assert!([ta, tb].contains(&moved.task));
        assert_eq!(sw.next, None, "the kicked sibling is left idle");
        assert_eq!(s.core().rqs[other].nr_running(), 1);
        let st = s.stats();
        assert_eq!(
            (st.lb.alb_count, st.lb.alb_pushed, st.lb.alb_failed),
            (1, 1, 0)
        );
        let mc_stats = st.lb_by_domain.iter().find(|(n, _)| *n == "MC").unwrap().1;
        assert_eq!((mc_stats.alb_count, mc_stats.alb_pushed), (1, 1));
        assert_eq!(
            s.core().rqs[other].sd[mc].nr_balance_failed,
            0,
            "a push resets the failure count"
        );
    }
}

/// The stopper and cache hotness: 5.10's `detach_one_task` goes through
/// `can_migrate_task`'s hotness test, so a hot task moves only while the
/// failure count is above cache_nice_tries (as the kick left it); 6.x's
/// passes LBF_ACTIVE_LB and moves it regardless. The count is reset
/// between the kick and the stopper here (as a successful pass of
/// another kind would).
#[test]
fn the_stopper_honours_hotness_only_in_5_10() {
    for (linux6, features) in VERSIONS {
        let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, features);
        let (runner, _) = kick_runner_off_cpu0(&mut s);
        assert_eq!(s.core().rqs[0].active_balance, Some(1), "{features}");
        s.core().rqs[1].sd[0].nr_balance_failed = 0;
        let sw = s.schedule(0, 2_000_100);
        let st = s.stats().lb;
        if linux6 {
            assert_eq!(sw.migrations.len(), 1, "{features}");
            assert_eq!(sw.migrations[0].task, runner);
            assert_eq!((st.alb_pushed, st.alb_failed), (1, 0));
        } else {
            assert!(sw.migrations.is_empty(), "5.10: the hot runner stays");
            assert_eq!((st.alb_pushed, st.alb_failed, st.lb_failed_hot), (0, 1, 1));
            assert_eq!(s.core().tasks[runner].cpu, 0);
        }
    }
}

/// `out_one_pinned` and `out_all_pinned`: a balancer that may not take
/// what it finds backs off. Lone pinned tasks: one task bound to each SMT
/// sibling of core 0, core 1 idle; the MC balance of core 1 finds a busiest
/// queue with a single, pinned task: failures keep counting, the stopper is
/// never kicked (the running task may not move), nothing counts as
/// balanced, and from the 4th failure (need_active_balance) the interval
/// doubles up to MAX_PINNED_INTERVAL (512 ms), past the domain's
/// max_interval: 5.10 sets LBF_ALL_PINNED at that exit, 6.x has it set
/// since no task was seen. All pinned: two tasks bound to CPU 0
/// (detach_tasks ran and found nothing that may run on dst):
/// out_all_pinned in both, i.e. balanced (not failed), failures reset, the
/// interval doubling up to 512 ms.
#[test]
fn pinned_tasks_back_the_balancer_off() {
    for (_, features) in VERSIONS {
        for lone in [true, false] {
            let (s, dst, level) = if lone {
                let s = sched(&spec(1, 2, 2, 1), PickPolicy::Cfs, features);
                let (sib, other, mc) = {
                    let c = s.core();
                    let smt = &c.topo.sd(0)[0].span;
                    let sib = smt.iter().find(|&c| c != 0).unwrap();
                    let other = (0..4).find(|&c| !smt.contains(c)).unwrap();
                    let mc = c
                        .topo
                        .sd(other)
                        .iter()
                        .position(|d| d.name == "MC")
                        .unwrap();
                    (sib, other, mc)
                };
                for cpu in [0, sib] {
                    s.wake_up_new_task_bound(None, cpu, 0, TaskPolicy::Normal, 1000);
                    s.schedule(cpu, 1000);
                }
                (s, other, mc)
            } else {
                let s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, features);
                for _ in 0..2 {
                    s.wake_up_new_task_bound(None, 0, 0, TaskPolicy::Normal, 1000);
                }
                s.schedule(0, 1000);
                (s, 1, 0)
            };
            let (min, max) = {
                let c = s.core();
                let d = &c.topo.sd(dst)[level];
                (u64::from(d.min_interval_ms), u64::from(d.max_interval_ms))
            };
            assert!(max < 512, "the test needs max_interval below 512 ms");
            let mut want = min;
            for pass in 1..=12u32 {
                let now = 2_000_000 + u64::from(pass);
                let r = load_balance(&mut s.core(), dst, level, CpuIdleType::Idle, now);
                assert!(r.moved.is_empty());
                let lb = s.stats().lb;
                let c = s.core();
                let st = &c.rqs[dst].sd[level];
                let tag = format!("{features} lone={lone} pass {pass}");
                assert!(
                    (0..4).all(|cpu| c.rqs[cpu].active_balance.is_none()),
                    "{tag}: no kick"
                );
                if lone {
                    assert_eq!(st.nr_balance_failed, pass, "{tag}");
                    assert_eq!(lb.lb_balanced, 0, "{tag}");
                    assert_eq!(lb.lb_failed, u64::from(pass), "{tag}");
                    if pass >= 4 && want < 512 {
                        want *= 2;
                    }
                } else {
                    assert_eq!(st.nr_balance_failed, 0, "{tag}");
                    assert_eq!(lb.lb_balanced, u64::from(pass), "{tag}");
                    assert_eq!(lb.lb_failed, 0, "{tag}");
                    if want < 512 {
                        want *= 2;
                    }
                }
                assert_eq!(st.balance_interval_ms, want, "{tag}");
            }
            assert!(want > max, "backed off past max_interval");
        }
    }
}

/// `need_active_balance`'s failure rule: `nr_balance_failed >
/// cache_nice_tries + 2` (MC: cache_nice_tries = 1, so from 4 failures), for
/// any migration type in 5.10, only for `migrate_task` with
/// IMBALANCED_ACTIVE_BALANCE (5.13+), and for newly idle passes too.
#[test]
fn imbalanced_active_balance_needs_a_task_imbalance() {
    use super::lb::need_active_balance;
    for (features, load_kicks) in [("", true), ("IMBALANCED_ACTIVE_BALANCE", false)] {
        let s = sched(&spec(1, 2, 1, 1), PickPolicy::Cfs, features);
        let mut core = s.core();
        assert_eq!(core.topo.sd(1)[0].cache_nice_tries, 1);
        for idle in [
            CpuIdleType::NotIdle,
            CpuIdleType::Idle,
            CpuIdleType::NewlyIdle,
        ] {
            for (ty, kicks_at_4) in [
                (MigrationType::Task, true),
                (MigrationType::Load, load_kicks),
                (MigrationType::Util, load_kicks),
            ] {
                let env = LbEnv {
                    src_cpu: 0,
                    imbalance: 1,
                    ..lb_env(1, 0, idle, ty)
                };
                for (failed, want) in [(0, false), (3, false), (4, kicks_at_4), (9, kicks_at_4)] {
                    core.rqs[1].sd[0].nr_balance_failed = failed;
                    assert_eq!(
                        need_active_balance(&core, &env),
                        want,
                        "{features:?} {idle:?} {ty:?} failed={failed}"
                    );
                }
            }
        }
    }
}

/// `redo`: when every task of the busiest queue is pinned away from the
/// puller, Linux takes that queue out of `env->cpus` and balances the level
/// again while CPUs outside the puller's group remain. Three tasks bound to
/// CPU 0 and two free ones on CPU 2: CPU 1's pass first finds CPU 0 (more
/// tasks), cannot take any, and then pulls one of CPU 2's.
#[test]
fn an_all_pinned_queue_is_skipped_and_the_next_busiest_balanced() {
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "");
    for _ in 0..3 {
        s.wake_up_new_task_bound(None, 0, 0, TaskPolicy::Normal, 1000);
    }
    s.schedule(0, 1000);
    let free = queue_on(&mut s, 2, 2, 1000);
    let mut env = lb_env(1, 0, CpuIdleType::Idle, MigrationType::Load);
    let group = find_busiest_group(&mut s.core(), &mut env).expect("imbalanced");
    let first = super::fbg::find_busiest_queue(&s.core(), &env, group);
    assert_eq!(first, Some(0), "the pinned queue is the busiest");
    let r = load_balance(&mut s.core(), 1, 0, CpuIdleType::Idle, 2_000_000);
    assert_eq!(r.moved.len(), 1, "{:?}", s.stats().lb);
    assert_eq!((r.moved[0].from, r.moved[0].to), (2, 1));
    assert!(free.contains(&r.moved[0].task));
    let lb = s.stats().lb;
    assert_eq!((lb.lb_count, lb.lb_gained, lb.lb_balanced), (1, 1, 0));
    // With nothing else to take, the same pass ends all pinned.
    let r = load_balance(&mut s.core(), 3, 0, CpuIdleType::Idle, 3_000_000);
    assert!(r.moved.is_empty());
    assert_eq!(s.stats().lb.lb_balanced, 1);
}

#[test]
fn going_newly_idle_brings_the_next_balance_forward_to_the_idle_interval() {
    // Linux's `sched_balance_newidle` calls `update_next_balance` (the
    // interval with cpu_busy = 0) for the domains it visits, and for the
    // lowest one when it does not balance, then moves `rq->next_balance`
    // forward: a CPU that went idle balances an idle interval after its
    // last balance, not the busy one its last busy tick scheduled.
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Eevdf, "");
    queue_on(&mut s, 1, 1, 1000);
    // Past the busy interval from boot, so the tick's balance is due.
    let t0 = 200_000_000;
    s.tick(1, t0);
    let (last, idle, busy) = {
        let c = s.core();
        let last = c.rqs[1].sd[0].last_balance;
        (
            last,
            sd_balance_interval_ns(&c, 1, 0, false),
            sd_balance_interval_ns(&c, 1, 0, true),
        )
    };
    assert_eq!(last, t0, "the busy tick balanced");
    assert!(idle < busy, "{idle} vs {busy}");
    assert_eq!(s.core().rqs[1].next_balance, last + busy);
    // The task blocks; nothing is overloaded, so newidle does not balance
    // and takes the lowest domain's idle interval.
    s.block(1, t0 + 100_000);
    assert_eq!(s.schedule(1, t0 + 100_000).next, None);
    assert_eq!(s.stats().lb.newidle_skipped, 1);
    assert_eq!(s.core().rqs[1].next_balance, last + idle);
    // The balance that is due then runs as CPU_IDLE at that tick.
    let before = s.stats().lb.lb_count;
    s.tick(1, last + idle);
    assert!(
        s.stats().lb.lb_count > before,
        "balanced at the idle interval"
    );
}

#[test]
fn idle_stamp_survives_a_pick_so_the_next_wakeup_folds_the_whole_period() {
    // Linux clears `idle_stamp` only in `ttwu_do_activate` (folding the
    // period into avg_idle) or when newidle pulled; a CPU that got work
    // from a fork keeps the stamp of its idle entry, and the next wakeup
    // onto it folds everything since, capped at 2 * max_idle_balance_cost.
    let s = sched(&spec(1, 2, 1, 1), PickPolicy::Eevdf, "");
    let t = 1_000_000;
    assert_eq!(s.schedule(1, t).next, None, "cpu1 goes idle");
    let stamp = s.core().rqs[1].idle_stamp;
    assert_eq!(stamp, t);
    // Short idle periods before brought avg_idle down (it starts at its
    // cap, 2 * migration_cost).
    s.core().rqs[1].avg_idle = 100_000;
    // Two tasks bound to cpu1 arrive by fork; one runs and blocks, the
    // other runs on: cpu1 never goes idle again.
    let a = s
        .wake_up_new_task_bound(None, 1, 0, TaskPolicy::Normal, 2 * t)
        .task;
    let b = s
        .wake_up_new_task_bound(None, 1, 0, TaskPolicy::Normal, 2 * t)
        .task;
    let first = s.schedule(1, 2 * t).next.expect("a forked task runs");
    assert_eq!(
        s.core().rqs[1].idle_stamp,
        stamp,
        "a pick does not clear it"
    );
    s.block(1, 3 * t);
    let second = s.schedule(1, 3 * t).next;
    assert_eq!(second, Some(if first == a { b } else { a }));
    assert_eq!(s.core().rqs[1].idle_stamp, stamp);
    let (avg0, max) = {
        let c = s.core();
        (c.rqs[1].avg_idle, 2 * c.rqs[1].max_idle_balance_cost)
    };
    // The blocked one is woken (bound, it stays on busy cpu1).
    assert_eq!(s.wake_up(first, 1, false, 10 * t).cpu, 1);
    let c = s.core();
    let delta = (10 * t - stamp) as i64;
    let expect = ((avg0 as i64 + (delta - avg0 as i64) / 8).max(0) as u64).min(max);
    assert_eq!(c.rqs[1].avg_idle, expect);
    assert!(
        expect > avg0,
        "the long period raised avg_idle: {avg0} -> {expect}"
    );
    assert_eq!(c.rqs[1].idle_stamp, 0, "the wakeup folded and cleared it");
}

/// `sched_balance_find_src_rq` starts its maxima at zero (load 0 over
/// capacity 1, util 0) and replaces them only by a strictly larger value:
/// a group whose queues carry no load has no source queue, however many
/// tasks they hold. On 2 sockets x 2 cores, CPU 0 looks at socket 1
/// (CPUs 2 and 3) at the package level.
#[test]
fn a_queue_without_load_or_utilization_is_never_the_source() {
    use super::fbg::find_busiest_queue;
    let mut s = sched(&spec(2, 2, 1, 1), PickPolicy::Cfs, "");
    queue_on(&mut s, 2, 2, 10);
    queue_on(&mut s, 3, 2, 10);
    for cpu in [2, 3] {
        let avg = &mut s.core().rqs[cpu].cfs.avg;
        (avg.load_avg, avg.util_avg, avg.runnable_avg) = (0, 0, 0);
    }
    let level = s.shared.topo.sd(0).len() - 1;
    let group = s.shared.topo.sd(0)[level]
        .groups
        .iter()
        .position(|g| g.span.contains(2))
        .unwrap();
    let mut env = LbEnv {
        imbalance: 100,
        ..lb_env(0, level, CpuIdleType::Idle, MigrationType::Load)
    };
    assert_eq!(find_busiest_queue(&s.core(), &env, group), None, "load 0");
    env.migration_type = MigrationType::Util;
    assert_eq!(find_busiest_queue(&s.core(), &env, group), None, "util 0");
    // Any load at all makes a queue the source.
    s.core().rqs[3].cfs.avg.load_avg = 1;
    env.migration_type = MigrationType::Load;
    assert_eq!(find_busiest_queue(&s.core(), &env, group), Some(3));
}

/// `migrate_util` ranks source queues by `cpu_util_cfs_boost`: util_avg
/// raised to runnable_avg. CPU 2 runs little but its tasks wait (util 300,
/// runnable 900: boosted 900); CPU 3's run without waiting (500, 500).
/// Linux takes CPU 2 (900 > 500); by util_avg alone it would be CPU 3.
#[test]
fn migrate_util_takes_the_queue_whose_tasks_wait_longest() {
    use super::fbg::find_busiest_queue;
    let mut s = sched(&spec(2, 2, 1, 1), PickPolicy::Cfs, "");
    queue_on(&mut s, 2, 2, 10);
    queue_on(&mut s, 3, 2, 10);
    for (cpu, util, runnable) in [(2, 300, 900), (3, 500, 500)] {
        let avg = &mut s.core().rqs[cpu].cfs.avg;
        (avg.util_avg, avg.runnable_avg) = (util, runnable);
    }
    let level = s.shared.topo.sd(0).len() - 1;
    let group = s.shared.topo.sd(0)[level]
        .groups
        .iter()
        .position(|g| g.span.contains(2))
        .unwrap();
    let env = LbEnv {
        imbalance: 100,
        ..lb_env(0, level, CpuIdleType::Idle, MigrationType::Util)
    };
    assert_eq!(s.core().cpu_util_cfs_boost(2), 900);
    assert_eq!(find_busiest_queue(&s.core(), &env, group), Some(2));
    // The cap: runnable above the CPU's capacity counts as full capacity.
    s.core().rqs[3].cfs.avg.runnable_avg = 5000;
    assert_eq!(s.core().cpu_util_cfs_boost(3), 1024);
    assert_eq!(find_busiest_queue(&s.core(), &env, group), Some(3));
}

/// `calculate_imbalance`'s last step is unsigned in Linux:
/// `min((busiest.avg_load - sds.avg_load) * busiest.capacity,
/// (sds.avg_load - local.avg_load) * local.capacity) / 1024`. When the
/// busiest (overloaded) group's avg_load is below the domain's, because a
/// third, not overloaded group is heavier still, the first term wraps to a
/// huge value and the local group's gap decides: local fully busy at 512
/// (1024 of load over 2048), busiest overloaded at 1000, the domain at
/// 6000 * 1024 / 4096 = 1500, so imbalance = (1500 - 512) * 2048 / 1024 =
/// 1976. A saturating subtraction would make it 0 (balanced).
#[test]
fn the_load_imbalance_wraps_like_linux_when_the_busiest_group_is_below_average() {
    use super::fbg::calculate_imbalance;
    use super::stats::SdLbStats;
    let s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "");
    let local = SgLbStats {
        group: 0,
        group_load: 1024,
        group_capacity: 2048,
        sum_nr_running: 2,
        group_weight: 2,
        group_type: GroupType::FullyBusy,
        ..Default::default()
    };
    let busiest = SgLbStats {
        group: 1,
        avg_load: 1000,
        group_load: 2000,
        group_capacity: 2048,
        sum_nr_running: 3,
        sum_h_nr_running: 3,
        group_weight: 2,
        group_type: GroupType::Overloaded,
        ..Default::default()
    };
    let mut sds = SdLbStats {
        busiest: Some(busiest),
        local,
        total_load: 6000,
        total_capacity: 4096,
        ..Default::default()
    };
    let mut env = lb_env(0, 0, CpuIdleType::Idle, MigrationType::Task);
    calculate_imbalance(&s.core(), &mut env, &mut sds);
    assert_eq!(env.migration_type, MigrationType::Load);
    assert_eq!(sds.avg_load, 1500);
    assert_eq!(env.imbalance, (1500 - 512) * 2048 / 1024);
}

/// Linux's `idle_cpu()` tests `rq->curr == rq->idle`, and `rq->curr` stays
/// the blocking task until the context switch, so `update_sg_lb_stats`
/// during the CPU's own newly idle balance does not count it idle: on
/// 2 sockets x 2 cores, CPU 0's task blocked and `schedule()` balances
/// (curr gone, switching_out = the task, nothing queued); CPU 1 is idle.
/// CPU 0's package-level group {0, 1} has one idle CPU, not two. Once the
/// switch to idle is done, CPU 0 is idle.
#[test]
fn a_cpu_balancing_on_its_way_to_idle_is_not_counted_idle() {
    use super::stats::update_sg_lb_stats;
    let mut s = sched(&spec(2, 2, 1, 1), PickPolicy::Cfs, "");
    let t = queue_on(&mut s, 0, 1, 10)[0];
    s.block(0, 1000);
    let level = s.shared.topo.sd(0).len() - 1;
    let (gi, span) = s.shared.topo.sd(0)[level]
        .groups
        .iter()
        .enumerate()
        .find(|(_, g)| g.span.contains(0))
        .map(|(i, g)| (i, g.span.clone()))
        .unwrap();
    assert_eq!(span.weight(), 2);
    {
        let mut c = s.core();
        // What `schedule()` leaves while it balances.
        c.rqs[0].curr = None;
        c.rqs[0].switching_out = Some(t);
        assert_eq!(c.rqs[0].nr_running(), 0);
        assert!(!c.idle_cpu(0));
        let (st, _) = update_sg_lb_stats(&c, 117, gi, &span, &Default::default());
        assert_eq!(st.idle_cpus, 1, "only CPU 1");
        c.rqs[0].switching_out = None;
        let (st, _) = update_sg_lb_stats(&c, 117, gi, &span, &Default::default());
        assert_eq!(st.idle_cpus, 2);
    }
}

/// `rd->overloaded` is sticky: `add_nr_running` sets it when a CPU gets a
/// second task, and only `update_sd_lb_stats` at the top domain (no
/// parent) writes it again, with what that pass saw. `sched_balance_newidle`
/// skips balancing while it is clear. On 4 CPUs of one LLC (MC is the top
/// domain): CPU 0 holds two tasks (set); one of them blocks, no CPU holds
/// two, the flag stays set, so CPU 2's newidle pass balances (not
/// skipped) and its MC pass clears the flag; CPU 3's newidle pass is then
/// skipped.
#[test]
fn the_root_domains_overloaded_flag_stays_set_until_a_top_level_pass() {
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "");
    assert!(!s.core().any_overloaded());
    queue_on(&mut s, 0, 2, 1000);
    assert!(s.core().any_overloaded());
    s.block(0, 2000);
    s.schedule(0, 2000);
    assert_eq!(s.core().rqs[0].nr_running(), 1);
    assert!((0..4).all(|c| s.core().nr_running(c) <= 1));
    assert!(s.core().any_overloaded(), "sticky");
    // Enough idle time that avg_idle does not stop the passes.
    for cpu in [2, 3] {
        s.core().rqs[cpu].avg_idle = 10_000_000;
    }
    let skipped = s.stats().lb.newidle_skipped;
    assert!(newidle_balance(&mut s.core(), 2, 3000).is_empty());
    assert_eq!(s.stats().lb.newidle_skipped, skipped, "CPU 2 balanced");
    assert!(!s.core().any_overloaded(), "the MC pass cleared it");
    assert!(newidle_balance(&mut s.core(), 3, 4000).is_empty());
    assert_eq!(s.stats().lb.newidle_skipped, skipped + 1, "CPU 3 skipped");
}

/// The end both `cfs_tasks` order tests share: the tick at 20 ms preempts
/// A on CPU 0 and another task is picked; at 30 ms newly idle CPU 1 pulls
/// one task, which must be A (cold by then).
fn tick_preempts_then_cpu1_pulls(s: &mut Scheduler, a: TaskId, pick: PickPolicy) {
    let _ = s.tick(0, 20_000_000);
    s.schedule(0, 20_000_000);
    assert_ne!(s.current(0), Some(a), "{pick:?}: the tick preempted A");
    let r = load_balance(&mut s.core(), 1, 0, CpuIdleType::NewlyIdle, 30_000_000);
    assert_eq!(r.moved.len(), 1, "{pick:?}: {:?}", s.stats().lb);
    assert_eq!(r.moved[0].task, a, "{pick:?}");
}

/// `detach_tasks` takes tasks from the tail of the source's `cfs_tasks`
/// list, to which `account_entity_enqueue` adds at the head and which
/// `__set_next_task_fair` reorders by moving the picked task to the head:
/// the tail is the task least recently enqueued or picked, whatever it
/// ran since. On CPU 0, A is picked at 1 ms and runs until 20 ms; B and C
/// are created there at 5 and 6 ms (list C, B, A); at 20 ms the tick
/// preempts A and B or C is picked (to the head; A stays at the tail). At
/// 30 ms newly idle CPU 1 pulls one task: A, cold by then (it stopped 10 ms
/// ago, more than the 0.5 ms migration cost). Ordering by the last time a
/// task ran or was queued would have taken the waiting one of B and C.
#[test]
fn the_balancer_takes_the_least_recently_enqueued_or_picked_task_first() {
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        let mut s = sched(&spec(1, 4, 1, 1), pick, "");
        let a = queue_on(&mut s, 0, 1, 1_000_000)[0];
        assert_eq!(s.current(0), Some(a));
        for t in [5_000_000, 6_000_000] {
            s.wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, t);
        }
        tick_preempts_then_cpu1_pulls(&mut s, a, pick);
    }
}

/// Only a *different* task moves to the head of `cfs_tasks` at a pick
/// (`pick_next_task_fair` calls `__set_next_task_fair` for `prev != p`;
/// `put_prev_set_next_task` returns at once for `next == prev`). On CPU 0,
/// A is picked at 1 ms, runs 0.1 ms and forks B and C (list C, B, A);
/// `schedule()` picks A again (CFS: `task_fork_fair`'s `update_curr` moved
/// min_vruntime up to A's vruntime, so START_DEBIT puts the children a
/// slice after A; EEVDF: all three are eligible and A's slice is
/// protected), which keeps its place; at 20 ms the tick preempts A and B
/// or C is picked (list X, Y, A). At 30 ms newly idle CPU 1 pulls the tail,
/// A (cold). Had the re-pick moved A to the head (A, C, B, then X, A, Y),
/// the pull would take the waiting one of B and C. (Forked at 1 ms, with A
/// not yet charged, CFS children tie with A at min_vruntime + vslice, and
/// the put-back A goes right of them: Linux's rbtree puts equal keys after
/// those already there, so a child would be picked.)
#[test]
fn picking_the_running_task_again_keeps_its_cfs_tasks_place() {
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        let mut s = sched(&spec(1, 4, 1, 1), pick, "");
        let a = queue_on(&mut s, 0, 1, 1_000_000)[0];
        for t in [1_100_000, 1_100_000] {
            s.wake_up_new_task_on(Some(a), 0, 0, TaskPolicy::Normal, t);
        }
        s.schedule(0, 1_100_000);
        assert_eq!(s.current(0), Some(a), "{pick:?}: A picked again");
        tick_preempts_then_cpu1_pulls(&mut s, a, pick);
    }
}

/// A running CFS task that forks before it was charged any runtime ties
/// with its children (`task_fork_fair`: `update_curr` charges nothing, so
/// min_vruntime stays, and `place_entity(initial)` gives the children
/// max(parent's vruntime, min_vruntime + vslice) = the parent's, when the
/// parent itself was placed at min_vruntime + the same vslice). The put-back
/// parent goes right of the equal children (`rb_add_cached`), so the first
/// child runs: insertion order, not task ids, breaks the tie.
#[test]
fn cfs_children_tied_with_their_parent_run_first_in_fork_order() {
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "");
    let a = queue_on(&mut s, 0, 1, 1_000_000)[0];
    let b = s
        .wake_up_new_task_on(Some(a), 0, 0, TaskPolicy::Normal, 1_000_000)
        .task;
    let c = s
        .wake_up_new_task_on(Some(a), 0, 0, TaskPolicy::Normal, 1_000_000)
        .task;
    let v = s.task(a).se.vruntime;
    assert_eq!((s.task(b).se.vruntime, s.task(c).se.vruntime), (v, v));
    assert_eq!(s.schedule(0, 1_000_000).next, Some(b));
}

/// `detach_tasks` moves a task it looked at and left to the head of the
/// source's `cfs_tasks` (`list_move` at its `next:` label), so the next
/// pass looks at the others first. On CPU 0, A is picked at 1 ms and runs
/// until the tick at 20 ms; B, C, D are created at 5, 6, 7 ms; one of them,
/// X, is picked at 20 ms (list X, then the two others newest first, A). At
/// 20.1 ms newly idle CPU 1 looks at A first: cache hot (it ran 0.1 ms
/// ago, under the 0.5 ms migration cost, no failures yet), so A goes to
/// the head; it pulls the next, Y, the older of the two waiting. CPU 0 is
/// left with A, X, Z from the head. At 30 ms (A cold) newly idle CPU 2
/// pulls the tail, Z; without the move A would still be the tail.
#[test]
fn a_task_the_balancer_skips_goes_to_the_head_of_the_list() {
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        let mut s = sched(&spec(1, 4, 1, 1), pick, "");
        let a = queue_on(&mut s, 0, 1, 1_000_000)[0];
        let others: Vec<TaskId> = [5_000_000, 6_000_000, 7_000_000]
            .iter()
            .map(|&t| {
                s.wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, t)
                    .task
            })
            .collect();
        let _ = s.tick(0, 20_000_000);
        s.schedule(0, 20_000_000);
        let x = s.current(0).unwrap();
        assert_ne!(x, a, "{pick:?}: the tick preempted A");
        let waiting: Vec<TaskId> = others.iter().copied().filter(|&t| t != x).collect();
        let (y, z) = (waiting[0], waiting[1]);
        let hot = s.stats().lb.lb_failed_hot;
        let r = load_balance(&mut s.core(), 1, 0, CpuIdleType::NewlyIdle, 20_100_000);
        assert_eq!(s.stats().lb.lb_failed_hot, hot + 1, "{pick:?}: A was hot");
        assert_eq!(r.moved.len(), 1, "{pick:?}: {:?}", s.stats().lb);
        assert_eq!(r.moved[0].task, y, "{pick:?}");
        let r = load_balance(&mut s.core(), 2, 0, CpuIdleType::NewlyIdle, 30_000_000);
        assert_eq!(r.moved.len(), 1, "{pick:?}: {:?}", s.stats().lb);
        assert_eq!(r.moved[0].task, z, "{pick:?}");
    }
}

/// `detach_tasks` collects what it takes with `list_add` (last detached
/// first) and `attach_tasks` enqueues from that list's head, so on the
/// destination's `cfs_tasks` the first task detached ends nearest the
/// head. Five tasks on CPU 0 and an idle CPU 1 (MC groups of one CPU:
/// `sibling_imbalance` 5 - 0 = 5, halved to 2): one pass moves two.
#[test]
fn tasks_pulled_together_are_attached_in_reverse_detach_order() {
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "");
    queue_on(&mut s, 0, 5, 1000);
    let r = load_balance(&mut s.core(), 1, 0, CpuIdleType::Idle, 20_000_000);
    assert_eq!(r.moved.len(), 2, "{:?}", s.stats().lb);
    let pos = |t| s.core().tasks[t].se.cfs_tasks_pos;
    let (first, second) = (r.moved[0].task, r.moved[1].task);
    assert!(
        pos(first) > pos(second),
        "the first detached is nearer the head"
    );
}

/// Linux 6.12 sched_balance_domains(): at a domain with SD_SERIALIZE (the
/// NUMA levels) a CPU first takes `sched_balance_running` with
/// atomic_cmpxchg_acquire(0, 1); if another CPU holds it, the level is
/// skipped (`goto out`: no balance, `last_balance` kept) and retried at the
/// next due tick. Two nodes of two CPUs: node 0 runs two tasks on each CPU,
/// node 1 is idle, so only CPU 2's NUMA level can pull. With the flag held
/// (another CPU walking its NUMA level) CPU 2 pulls nothing; released, it
/// pulls across nodes.
#[test]
fn a_serialized_numa_level_is_skipped_while_another_cpu_walks_one() {
    for held in [true, false] {
        let mut s = sched(&spec(2, 2, 1, 2), PickPolicy::Cfs, "");
        let numa = s.shared.topo.sd(2).len() - 1;
        assert!(
            s.shared.topo.sd(2)[numa]
                .flags
                .contains(topology::SD_SERIALIZE)
        );
        queue_on(&mut s, 0, 2, 1_000_000);
        queue_on(&mut s, 1, 2, 1_000_000);
        let t = 40_000_000;
        let moved = {
            let mut c = s.core();
            c.update_rq_clock(2, t);
            if held {
                assert!(c.shared.try_serialize_balance());
            }
            let m = rebalance_domains(&mut c, 2, t);
            if held {
                c.shared.end_serialized_balance();
            }
            (
                m.len(),
                c.rqs[2].sd[numa].last_balance,
                c.stats.lb.serialize_skips,
            )
        };
        if held {
            assert_eq!(moved, (0, 0, 1), "skipped, stamp kept");
        } else {
            assert_eq!((moved.1, moved.2), (t, 0));
            assert!(moved.0 >= 1, "pulled across nodes");
        }
    }
}

/// Linux 6.6+ group_smt_balance (`smt_balance`, `group_classify`,
/// `calculate_imbalance`): an idle CPU balancing its MC level sees the
/// other SMT core running four just-forked tasks (three on one sibling,
/// one on the other; their PELT is young, so the core is not overloaded:
/// util 1,408 * 117 < 2,048 * 100, and it has capacity). It is
/// group_smt_balance, so migrate_task with imbalance 1: one task moves.
/// Without the class (5.10-6.5) the core has spare capacity and the
/// prefer-sibling path asks for sibling_imbalance = 4 - 0 tasks, halved:
/// two move.
#[test]
fn an_idle_cpu_pulls_one_task_from_a_shared_smt_core_with_group_smt_balance() {
    for (features, want) in [("GROUP_SMT_BALANCE", 1), ("", 2)] {
        let mut s = sched(&spec(1, 2, 2, 1), PickPolicy::Cfs, features);
        let sib = s.shared.topo.smt[0].clone();
        let other: Vec<CpuId> = (0..4).filter(|c| !sib.contains(*c)).collect();
        let t = 10_000_000;
        queue_on(&mut s, other[0], 3, t);
        queue_on(&mut s, other[1], 1, t);
        let mc = s.shared.topo.sd(0).len() - 1;
        assert!(s.shared.topo.sd(0)[mc].span.weight() == 4);
        let r = load_balance(&mut s.core(), 0, mc, CpuIdleType::Idle, t + 1_000);
        assert_eq!(r.moved.len(), want, "{features:?}");
    }
}

/// Linux 6.6+ update_sd_pick_busiest(), `case group_smt_balance`: if
/// either SMT core has an idle CPU the has-spare rule decides (fewer idle
/// CPUs, then more tasks); if neither has one, it falls through to the
/// fully-busy rule, where both avg_load are 0 and the current busiest is
/// an SMT group, so the first core found is kept.
#[test]
fn smt_balance_groups_compare_by_idle_cpus_else_the_first_is_kept() {
    use super::stats::update_sd_pick_busiest;
    let g = |idle: u32, nr: u32| SgLbStats {
        group_type: GroupType::SmtBalance,
        idle_cpus: idle,
        sum_nr_running: nr,
        sum_h_nr_running: nr,
        group_weight: 2,
        is_smt: true,
        ..Default::default()
    };
    // Neither idle: the first stays, even against more tasks.
    assert!(!update_sd_pick_busiest(Some(&g(0, 2)), &g(0, 5)));
    // One idle CPU somewhere: has-spare rules.
    assert!(update_sd_pick_busiest(Some(&g(1, 2)), &g(0, 2)));
    assert!(!update_sd_pick_busiest(Some(&g(0, 3)), &g(1, 4)));
    assert!(update_sd_pick_busiest(Some(&g(1, 2)), &g(1, 3)));
    // The class ranks above fully busy.
    let busy = SgLbStats {
        group_type: GroupType::FullyBusy,
        sum_nr_running: 4,
        sum_h_nr_running: 4,
        ..Default::default()
    };
    assert!(update_sd_pick_busiest(Some(&busy), &g(0, 2)));
}
