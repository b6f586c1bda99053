# Guest script for ../shared/linux-rig (run.sh --bench "$(cat delay-depth.sh)" --reps 1
# --icount 0, the 8-vCPU default preset's options): in one `hackbench -p -T -g 4 -l 500`,
# how many of Linux 6.12's sleeping dequeues shared their fair queue and how many of those
# were delayed (BTF arguments):
# - dsl: dequeue_task_fair with DEQUEUE_SLEEP (flag 1), with the task's queue's
#   `nr_running` (the sleeper included; the threads run in the root task group, so the
#   CPU's `rq->cfs` is their queue);
# - deqr: dequeue_task_fair's return (0: the block left the task queued, sched_delayed).
# Each dsl is paired with the next deqr on its CPU (the runqueue lock is held between
# them). Prints @@DEPTH {shared|alone} {delayed|dequeued} N, @@WAKEUPS, and the ring
# buffers' overrun counts (all must be 0). docs/benchmarks.md, "Delayed dequeue".
T=/sys/kernel/debug/tracing
echo 0 > $T/tracing_on
echo 32768 > $T/buffer_size_kb
echo 'p:dsl dequeue_task_fair fl=flags nr=rq->cfs.nr_running' >> $T/kprobe_events && echo "@@P1 ok"
echo 'r:deqr dequeue_task_fair ret=$retval' >> $T/kprobe_events && echo "@@P2 ok"
echo 'fl & 1' > $T/events/kprobes/dsl/filter && echo "@@F1 ok"
echo 1 > $T/events/kprobes/enable
echo 1 > $T/events/sched/sched_wakeup/enable
echo > $T/trace
echo 1 > $T/tracing_on
hackbench -p -T -g 4 -l 500
echo 0 > $T/tracing_on
echo 0 > $T/events/kprobes/enable
echo 0 > $T/events/sched/sched_wakeup/enable
grep -v '^#' $T/trace > /tmp/tr.txt
echo "@@LINES $(wc -l < /tmp/tr.txt)"
echo "@@WAKEUPS $(grep -c ' sched_wakeup:' /tmp/tr.txt)"
grep -m2 ' dsl:' /tmp/tr.txt; grep -m2 ' deqr:' /tmp/tr.txt
awk '{ c=$2 } / dsl:/ { for(i=1;i<=NF;i++) if ($i ~ /^nr=/) { split($i,a,"="); pend[c]=a[2] } next }
/ deqr:/ { if (c in pend) { n=pend[c]; delete pend[c]; r=($NF=="ret=0x0"||$NF=="ret=0")?"delayed":"dequeued"; k=(n+0>=2)?"shared":"alone"; cnt[k" "r]++ } }
END { for (k in cnt) print "@@DEPTH", k, cnt[k] }' /tmp/tr.txt
grep -h overrun $T/per_cpu/cpu*/stats
