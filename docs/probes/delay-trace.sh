# Guest script for ../shared/linux-rig (run.sh --bench "$(cat delay-trace.sh)" --reps 1
# --icount 0, the 8-vCPU default preset's options): counts Linux 6.12's delayed dequeues in
# one `hackbench -p -T -g 4 -l 500` with filtered kprobe events (BTF arguments):
# - deqr: dequeue_task_fair returning false (a block left queued, sched_delayed);
# - enq: enqueue_task_fair with ENQUEUE_DELAYED (0x200): a wakeup's requeue (ttwu_runnable);
# - dents: dequeue_entities with DEQUEUE_DELAYED (0x200): a delayed task dequeued at the
#   pick (or at task_dead_fair);
# and sched_wakeup for all wakeups. Prints @@DELAYED, @@REQUEUED, @@PICKED, @@WAKEUPS and
# the ring buffers' overrun counts (all must be 0). docs/benchmarks.md, "Delayed dequeue".
T=/sys/kernel/debug/tracing
echo 0 > $T/tracing_on
echo 32768 > $T/buffer_size_kb
echo 'r:deqr dequeue_task_fair ret=$retval' >> $T/kprobe_events
echo 'p:enq enqueue_task_fair fl=flags' >> $T/kprobe_events
echo 'p:dents dequeue_entities fl=flags' >> $T/kprobe_events
echo 'ret == 0' > $T/events/kprobes/deqr/filter && echo "@@F1 ok"
echo 'fl & 512' > $T/events/kprobes/enq/filter && echo "@@F2 ok"
echo 'fl & 512' > $T/events/kprobes/dents/filter && echo "@@F3 ok"
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
echo "@@DELAYED $(grep -c ' deqr:' /tmp/tr.txt)"
echo "@@REQUEUED $(grep -c ' enq:' /tmp/tr.txt)"
echo "@@PICKED $(grep -c ' dents:' /tmp/tr.txt)"
echo "@@WAKEUPS $(grep -c ' sched_wakeup:' /tmp/tr.txt)"
grep -m2 ' deqr:' /tmp/tr.txt; grep -m2 ' enq:' /tmp/tr.txt; grep -m2 ' dents:' /tmp/tr.txt
grep -h overrun $T/per_cpu/cpu*/stats
