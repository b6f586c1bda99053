# Guest script for ../shared/linux-rig (run.sh --bench "$(cat rig-trace.sh)" --reps 1 --icount 0):
# kprobe events (BTF arguments) on select_task_rq_fair (wakee, prev_cpu, wake_flags,
# load, wakee_flips, decay stamp) and its return, and on task_h_load (the task, its
# load, its cfs_rq load) and its return, for one whole hackbench run; the trace is
# printed gzip+base64 between BEGIN64 and END64. Decode on the host:
#   awk '/@@OUT i=1 BEGIN64/{f=1;next} /@@OUT i=1 END64/{f=0} f{sub(/^.*@@OUT i=1 /,"");print}' LOG | base64 -d | gunzip > trace.txt
# Add "echo 1 > $T/events/sched/sched_switch/enable" for idle.py. docs/benchmarks.md.
T=/sys/kernel/debug/tracing
echo 0 > $T/tracing_on
echo 16384 > $T/buffer_size_kb
echo 'p:srf select_task_rq_fair pid=p->pid prev=prev_cpu wf=wake_flags pl=p->se.avg.load_avg fl=p->wakee_flips dts=p->wakee_flip_decay_ts' >> $T/kprobe_events
echo 'r:srfr select_task_rq_fair ret=$retval' >> $T/kprobe_events
echo 'p:thl task_h_load pid=p->pid pl=p->se.avg.load_avg cl=p->se.cfs_rq->avg.load_avg' >> $T/kprobe_events
echo 'r:thlr task_h_load ret=$retval' >> $T/kprobe_events
echo 1 > $T/events/kprobes/enable
echo > $T/trace

echo 1 > $T/tracing_on
hackbench -p -T -g 4 -l 500
echo 0 > $T/tracing_on
echo 0 > $T/events/kprobes/enable
grep -v '^#' $T/trace > /tmp/tr.txt
wc -l /tmp/tr.txt
gzip -c /tmp/tr.txt | base64 > /tmp/t.b64
echo BEGIN64; cat /tmp/t.b64; echo END64
