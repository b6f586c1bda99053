# Guest script for ../shared/linux-rig (run.sh --bench "$(grep -v '^#' delay-lag.sh)" --reps 1
# --icount 0, the 8-vCPU default preset's options): in one `hackbench -p -T -g 4 -l 500`,
# the lag V - v_i of each sleeping task at its block in Linux 6.12, for the blocks that
# shared their fair queue (schedlab's `block_lag` record section measures the same).
# - dsl: dequeue_task_fair with DEQUEUE_SLEEP (flag 1), reading (BTF arguments) the
#   sleeper's vruntime, exec_start and weight, the runqueue's clock_task, and its queue's
#   nr_running, min_vruntime and EEVDF sums avg_vruntime / avg_load (the threads run in the
#   root task group, so `rq->cfs` is their queue; the sleeper is its `curr`, outside the
#   sums); blocks with DEQUEUE_SPECIAL (0x10) or DEQUEUE_DELAYED (0x200) are skipped.
# - deqr: dequeue_task_fair's return (0: the block was delayed); paired with the dsl before
#   it on its CPU (the runqueue lock is held between them).
# The probe fires before dequeue_entity's update_curr, so the script applies it: the
# sleeper's vruntime grows by (clock_task - exec_start) * 1024 / weight (calc_delta_fair),
# then V = min_vruntime + floor((avg_vruntime + key * w) / (avg_load + w)) with w the
# sleeper's weight scaled down and key its vruntime - min_vruntime (avg_vruntime() with
# curr), and lag = V - vruntime: eligible (dequeued at once) when >= 0, delayed otherwise.
# Prints @@L LAG DELAYED (1 when the return said delayed) per shared block, @@SKIPPED, and
# the ring buffers' overrun counts (all must be 0); `delay-lag.py LOG` turns the @@L lines
# into schedlab's `block_lag` histograms and counts the blocks whose computed sign
# disagrees with the return (must be 0). Pass it without its comments (the rig's kernel
# command line holds 2,000 bytes): --bench "$(grep -v '^#' delay-lag.sh)".
# docs/benchmarks.md, "Lag at the block".
T=/sys/kernel/debug/tracing
echo 0 > $T/tracing_on
echo 65536 > $T/buffer_size_kb
echo 'p:dsl dequeue_task_fair fl=flags nr=rq->cfs.nr_running v=p->se.vruntime es=p->se.exec_start w=p->se.load.weight ct=rq->clock_task mv=rq->cfs.zero_vruntime av=rq->cfs.avg_vruntime al=rq->cfs.avg_load' >> $T/kprobe_events && echo "@@P1 ok"
echo 'r:deqr dequeue_task_fair ret=$retval' >> $T/kprobe_events && echo "@@P2 ok"
echo 'fl & 1' > $T/events/kprobes/dsl/filter && echo "@@F1 ok"
echo 1 > $T/events/kprobes/enable
echo > $T/trace
echo 1 > $T/tracing_on
hackbench -p -T -g 4 -l 500
echo 0 > $T/tracing_on
echo 0 > $T/events/kprobes/enable
grep -v '^#' $T/trace > /tmp/tr.txt
echo "@@LINES $(wc -l < /tmp/tr.txt)"
grep -m1 " dsl:" /tmp/tr.txt
awk 'function g(k,  i,a){for(i=1;i<=NF;i++)if(index($i,k"=")==1){split($i,a,"=");return a[2]+0}}
{c=$2}
/ dsl:/{if(g("nr")<2||and(g("fl"),528)){sk++;delete p[c];next}
w=g("w");v=g("v")+int((g("ct")-g("es"))*1048576/w);x=int(w/1024);if(x<2)x=2
k=v-g("mv");q=(g("av")+k*x)/(g("al")+x);f=int(q);if(f>q)f--;p[c]=f-k;next}
/ deqr:/{if(c in p){print "@@L",p[c],($NF=="ret=0x0"||$NF=="ret=0");delete p[c]}}
END{print "@@SKIPPED",sk+0}' /tmp/tr.txt
grep -h overrun $T/per_cpu/cpu*/stats; cat $T/error_log
