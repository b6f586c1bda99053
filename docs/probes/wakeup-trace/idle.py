# idle.py TRACE (with sched_switch): was prev_cpu running idle at each wakeup that
# skipped the weight test; idle seconds per CPU. docs/benchmarks.md.
import re,sys,collections
pat=re.compile(r'\[(\d+)\].*?\s([\d.]+): (\w+): (.*)$')
running={}  # cpu -> next pid
cur={}; c=collections.Counter(); idle_t=collections.Counter(); last={}
for l in open(sys.argv[1]):
    m=pat.search(l)
    if not m: continue
    cpu=int(m.group(1)); t=float(m.group(2)); ev=m.group(3); rest=m.group(4)
    if ev=='sched_switch':
        np_=int(re.search(r'next_pid=(\d+)',rest).group(1))
        if cpu in last and running.get(cpu)==0: idle_t[cpu]+=t-last[cpu]
        running[cpu]=np_; last[cpu]=t
        continue
    kv=dict(x.split('=') for x in rest.split(') ',1)[-1].split() if '=' in x)
    if ev=='srf':
        wf=int(kv['wf'])
        if not wf&8: continue
        prev=int(kv['prev'])
        cur[cpu]={'prev':prev,'thl':0,'prev_idle':running.get(prev)==0,'this_idle':running.get(cpu)==0}
    elif ev=='thl' and cpu in cur: cur[cpu]['thl']+=1
    elif ev=='srfr' and cpu in cur:
        d=cur.pop(cpu); ret=int(kv['ret'])
        c['wakeups']+=1
        c['prev_idle']+=d['prev_idle']
        if cpu!=d['prev']:
            k='weight' if d['thl'] else 'noweight'
            c[k]+=1; c[k+'_prev_idle']+=d['prev_idle']; c[k+'_ret_prev']+=ret==d['prev']
print(dict(c)); print('idle s per cpu',{k:round(v,3) for k,v in sorted(idle_t.items())})
