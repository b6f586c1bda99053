# Guest script for ../shared/linux-rig (run.sh --bench "$(grep -v '^#' switch-kinds.sh)" --reps 1
# --icount 0, the 8-vCPU default preset's options): how the context switches of one
# `hackbench -p -T -g 4 -l 500` in Linux 6.12 come about, from the sched_switch tracepoint:
# prev_state R or R+ (prev still runnable: a preemption, by a wakeup or the tick), S or D
# (prev blocked), prev or next the idle task (pid 0); and the sched_wakeup count.
# schedlab's `rq` record counts the same: wakeup_preempt + tick_preempt against nr_switches.
# Prints @@K PREEMPTED BLOCKED TO_IDLE FROM_IDLE TOTAL, @@W WAKEUPS and the ring buffers'
# overrun counts (all must be 0). docs/benchmarks.md, "Waits, switch kinds and the clock's scale" (under "Lag at the block").
T=/sys/kernel/debug/tracing
echo 0 > $T/tracing_on
echo 65536 > $T/buffer_size_kb
echo 1 > $T/events/sched/sched_switch/enable
echo 1 > $T/events/sched/sched_wakeup/enable
echo > $T/trace
echo 1 > $T/tracing_on
hackbench -p -T -g 4 -l 500
echo 0 > $T/tracing_on
echo 0 > $T/events/sched/enable
grep -v '^#' $T/trace > /tmp/tr.txt
awk '/ sched_switch:/{n++;for(i=1;i<=NF;i++){if(index($i,"prev_state=")==1)s=substr($i,12);if(index($i,"prev_pid=")==1)pp=substr($i,10);if(index($i,"next_pid=")==1)np=substr($i,10)}
if(pp==0)fi++;else if(s=="R"||s=="R+")pr++;else bl++;if(np==0)ti++}
/ sched_wakeup:/{w++}
END{print "@@K",pr+0,bl+0,ti+0,fi+0,n+0;print "@@W",w+0}' /tmp/tr.txt
grep -h overrun $T/per_cpu/cpu*/stats
