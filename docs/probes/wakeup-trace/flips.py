# flips.py TRACE: reconstructs record_wakee()/wake_wide() (factor = LLC size 4) seeded
# with the wakee_flips fetched at each select_task_rq_fair, and counts the wakeups
# that skipped wake_affine_weight which wake_wide explains. docs/benchmarks.md.
import re,sys,collections
pat=re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\].*?\s([\d.]+): (\w+): \(([^)]*)\)\s*(.*)$')
flips={}; decay={}; last={}; cur={}; res=collections.Counter()
HZ=250
# jiffies anchor: a task's decay stamp is never ahead of the current jiffies,
# so the largest dts - t*HZ over the trace is the offset (copied stamps lag).
j0=max(int(re.search(r'dts=(\d+)',l).group(1))-int(float(re.search(r'\s([\d.]+): srf:',l).group(1))*HZ)
       for l in open(sys.argv[1]) if ' srf: ' in l)
for l in open(sys.argv[1]):
    m=pat.search(l)
    if not m: continue
    wpid=int(m.group(2)); cpu=int(m.group(3)); t=float(m.group(4)); ev=m.group(5)
    kv=dict(x.split('=') for x in m.group(7).split())
    if ev=='srf':
        p=int(kv['pid']); fl=int(kv['fl']); dts=int(kv['dts'])
        # jiffies offset: a task's dts is at most the current jiffies, so the
        # largest dts - t*HZ seen so far is the best anchor (copied stamps lag)
        if p not in flips: flips[p]=fl; decay[p]=dts
        wf=int(kv['wf'])
        if not wf&8: continue
        j=j0+int(t*HZ)
        if wpid not in flips: flips[wpid]=0; decay[wpid]=j
        if j>decay[wpid]+HZ: flips[wpid]>>=1; decay[wpid]=j
        if last.get(wpid)!=p: last[wpid]=p; flips[wpid]+=1
        res['slave_match']+= (fl==flips[p]) ; flips[p]=fl  # wakee value exact
        master,slave=flips[wpid],fl
        if master<slave: master,slave=slave,master
        wide = not (slave<4 or master<slave*4)
        cur[cpu]={'wide':wide,'this':cpu,'prev':int(kv['prev']),'thl':0}
    elif ev=='thl' and cpu in cur: cur[cpu]['thl']+=1
    elif ev=='srfr' and cpu in cur:
        d=cur.pop(cpu)
        res['wakeups']+=1; res['wide']+=d['wide']
        if d['this']!=d['prev']:
            if d['thl']: res['weight']+=1; res['weight_but_wide']+=d['wide']
            else: res['noweight']+=1; res['noweight_wide']+=d['wide']
print(dict(res))
