# Guest script for ../shared/linux-rig (run.sh --bench "$(grep -v '^#' run-delay.sh)" --reps 1
# --icount 0, the 8-vCPU default preset's options): the runqueue wait of one
# `hackbench -p -T -g 4 -l 500` in Linux 6.12, from /proc/schedstat's per-CPU sched_info
# fields (CONFIG_SCHED_INFO, counted whether or not kernel.sched_schedstats is on):
# field 7 = time tasks ran on the CPU, field 8 = run_delay (time runnable tasks waited on
# the CPU's queue: from sched_info_enqueue at a wakeup or a preemption's put-back to
# sched_info_arrive at the switch-in), field 9 = pcount (switch-ins). The difference over
# the run, summed over CPUs, gives the mean wait per switch-in: schedlab's `wait_ns`
# histogram measures the same interval (enqueue or put-back to pick; a delayed-dequeue
# task's wait starts at its block there, at its requeue here). rq_cpu_time is added when a
# task leaves the CPU, so the run-time sum includes a little time from before the window.
# Prints @@S CPU RUN_NS DELAY_NS SWITCH_INS per CPU and @@T with the sums.
# docs/benchmarks.md, "Waits, switch kinds and the clock's scale" (under "Lag at the block").
grep '^cpu' /proc/schedstat > /tmp/s0
hackbench -p -T -g 4 -l 500
grep '^cpu' /proc/schedstat > /tmp/s1
awk 'NR==FNR{r[$1]=$8;d[$1]=$9;p[$1]=$10;next}
{a=$8-r[$1];b=$9-d[$1];c=$10-p[$1];print "@@S",$1,a,b,c;R+=a;D+=b;P+=c}
END{print "@@T run",R,"delay",D,"switch_ins",P,"mean_delay",D/P}' /tmp/s0 /tmp/s1
