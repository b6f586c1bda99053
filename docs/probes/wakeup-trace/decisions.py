# decisions.py TRACE: per wakeup, the wake_affine_weight inputs and answer from the
# rig-trace.sh kprobes (8-vCPU rig: CPUs 0-3 socket 0, 4-7 socket 1, SMT pairs 2k/2k+1);
# recomputes the weight rule with imbalance_pct 110/117/125. docs/benchmarks.md.
import re,sys,collections,statistics as st
# topology: 8 cpus, sockets of 4, cores of 2 (siblings 2k,2k+1)? check below
def sock(c): return c//4
def core(c): return c//2
lines=open(sys.argv[1]).read().splitlines()
pat=re.compile(r'\[(\d+)\].*?\s([\d.]+): (\w+): \(([^)]*)\)\s*(.*)$')
cur={}
dec=[]
for l in lines:
    m=pat.search(l)
    if not m: continue
    cpu=int(m.group(1)); ev=m.group(3); kv=dict(x.split('=') for x in m.group(5).split())
    if ev=='srf':
        cur[cpu]={'this':cpu,'prev':int(kv['prev']),'wf':int(kv['wf']),'pid':int(kv['pid']),'pl':int(kv['pl']),'thl':[]}
    elif ev=='thl' and cpu in cur:
        cur[cpu]['thl'].append([int(kv['pid']),int(kv['pl']),int(kv['cl']),None])
    elif ev=='thlr' and cpu in cur and cur[cpu]['thl']:
        cur[cpu]['thl'][-1][3]=int(kv['ret'])
    elif ev=='srfr' and cpu in cur:
        d=cur.pop(cpu); d['ret']=int(kv['ret']); dec.append(d)
print('decisions',len(dec))
c=collections.Counter()
w=[]
for d in dec:
    wf=d['wf']; sync=bool(wf&0x10); ttwu=bool(wf&8)
    if not ttwu: c['fork/exec']+=1; continue
    c['ttwu']+=1
    if d['this']==d['prev']: c['this==prev']+=1; 
    if d['ret']==d['this']: c['ret=this']+=1
    if d['ret']!=d['prev']: c['migr']+=1
    if d['thl']:
        c['weight']+=1
        w.append(d)
    elif d['this']!=d['prev'] and sock(d['this'])!=sock(d['prev']):
        c['noweight_crossllc']+=1
        if sock(d['ret'])==sock(d['this']): c['noweight_crossllc_ret_this_llc']+=1
print(dict(c))
# weight analysis
yes=0; rows=[]
for d in w:
    sync=bool(d['wf']&0x10); t=d['thl']
    this,prev=d['this'],d['prev']
    if sync:
        curp=t[0]; thisload=curp[2]; curload=curp[3]
        if len(t)==1: early=True; rows.append(('early',thisload,curload,None,None,d)); continue
        pl=t[1][3]; prevload=t[1][2]
    else:
        thisload=None; curload=None; pl=t[0][3]; prevload=t[0][2]
    rows.append(('full',thisload,curload,pl,prevload,d))
full=[r for r in rows if r[0]=='full' and r[1] is not None]
early=[r for r in rows if r[0]=='early']
print('weight decisions',len(rows),'early(current>this)',len(early),'full sync',len(full))
def pct(a,b): return f'{100*a/max(b,1):.1f}%'
yesc=0
for r in full:
    d=r[5]; this,prev=d['this'],d['prev']
    if sock(d['ret'])==sock(this) and sock(this)!=sock(prev): yesc+=1
crossf=[r for r in full if sock(r[5]['this'])!=sock(r[5]['prev'])]
print('full cross-llc',len(crossf),'ret in this llc',sum(1 for r in crossf if sock(r[5]['ret'])==sock(r[5]['this'])))
for name,idx in (('this_load',1),('current_load',2),('task_load',3),('prev_load',4)):
    v=[r[idx] for r in full]
    print(name,'mean',round(st.mean(v)),'median',st.median(v),'p10',sorted(v)[len(v)//10],'p90',sorted(v)[9*len(v)//10])
# predicted decision with imbalance 125 (cross socket) 
pred=0
for r in crossf:
    _,tl,cl,pl,prl,d=r
    te=(tl-cl+pl)*100; pe=(prl-pl)*112+1
    pred+= te<pe
print('predicted yes (cross socket, pct 125)',pred,'of',len(crossf))
# delta distribution: (this-cur+p) - (prev-p)
diff=[ (r[1]-r[2]+r[3]) - (r[4]-r[3]) for r in full]
print('this_eff - prev_eff (unscaled) median',st.median(diff),'p10',sorted(diff)[len(diff)//10],'p90',sorted(diff)[9*len(diff)//10])
for bias in (105,108,112):
    pred=0; agree=0
    for r in crossf:
        _,tl,cl,pl,prl,d=r
        te=(tl-cl+pl)*100; pe=(prl-pl)*bias+1
        y= te<pe
        pred+=y
        agree+= y==(sock(d['ret'])==sock(d['this']))
    print('bias',bias,'pred yes',pred,'agree',agree,'of',len(crossf))
# same-socket weight decisions: which domain
same=[r for r in full if sock(r[5]['this'])==sock(r[5]['prev'])]
print('same-socket weight',len(same))
def pctof(a,b):
    if a//2==b//2: return 110
    if sock(a)==sock(b): return 117
    return 117
yes=0
for r in full:
    _,tl,cl,pl,prl,d=r
    b=100+(pctof(d['this'],d['prev'])-100)//2
    yes+= (tl-cl+pl)*100 < (prl-pl)*b+1
print('linux weight tests',len(full),'yes',yes, 'of wakeups',c['ttwu'])
# wakeups where this and prev on different sockets
xs=sum(1 for d in dec if d['wf']&8 and sock(d['this'])!=sock(d['prev']))
print('wakeups with prev on other socket',xs,'of',c['ttwu'])
xm=sum(1 for d in dec if d['wf']&8 and sock(d['ret'])!=sock(d['prev']))
print('cross-socket wakeup migrations',xm)
nw=[d for d in dec if d['wf']&8 and d['this']!=d['prev'] and not d['thl']]
print('no-weight this!=prev',len(nw),'ret==prev',sum(d['ret']==d['prev'] for d in nw),'ret==this',sum(d['ret']==d['this'] for d in nw),
 'ret in prev llc (other)',sum(d['ret'] not in (d['prev'],d['this']) and sock(d['ret'])==sock(d['prev']) for d in nw),
 'ret in this llc (other)',sum(d['ret'] not in (d['prev'],d['this']) and sock(d['ret'])==sock(d['this']) and sock(d['this'])!=sock(d['prev']) for d in nw))
