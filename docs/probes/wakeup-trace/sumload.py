# sumload.py TRACE: sum of the 8 CPUs' latest traced cfs_rq load (all seen within
# 4 ms) and the mean waker / wakee loads. docs/benchmarks.md.
import re,sys,statistics as st
pat=re.compile(r'\[(\d+)\].*?\s([\d.]+): (\w+): \(([^)]*)\)\s*(.*)$')
latest={}; sums=[]; cur={}
tl=[];pl=[]
for l in open(sys.argv[1]):
    m=pat.search(l)
    if not m: continue
    cpu=int(m.group(1)); t=float(m.group(2)); ev=m.group(3); kv=dict(x.split('=') for x in m.group(5).split())
    if ev=='srf': cur[cpu]={'prev':int(kv['prev']),'n':0}
    elif ev=='thl' and cpu in cur:
        d=cur[cpu]; d['n']+=1
        c = cpu if (d['n']==1) else d['prev']
        latest[c]=(t,int(kv['cl']))
        if len(latest)==8 and all(t-x[0]<0.004 for x in latest.values()):
            sums.append(sum(x[1] for x in latest.values()))
        if d['n']==1: tl.append(int(kv['pl']))
        else: pl.append(int(kv['pl']))
print('samples',len(sums),'mean sum of 8 cpu loads',round(st.mean(sums)),'median',st.median(sums))
print('current (waker) se load mean',round(st.mean(tl)),'wakee se load mean',round(st.mean(pl)))
