#!/usr/bin/env python3
"""The parents of each aten::copy_ in the last ProfilerStep of a Kineto trace
(ladder run --profile W,WU,A: <run>/<rung>/traces/rank0_step<s>.json), summed
by the chain of their three innermost enclosing operators: where a step's
memcpy band comes from. Usage: copies.py TRACE.json"""
import json,sys,collections
t=json.load(open(sys.argv[1]))
ev=[e for e in t['traceEvents'] if e.get('ph')=='X' and e.get('cat') in ('cpu_op','user_annotation')]
steps=[e for e in ev if e['name'].startswith('ProfilerStep#')]
s=steps[-1]; tid=s['tid']
ev=[e for e in ev if e['tid']==tid and e['ts']>=s['ts'] and e['ts']+e['dur']<=s['ts']+s['dur']]
ev.sort(key=lambda e:(e['ts'],-e['dur']))
stack=[];agg=collections.Counter();cnt=collections.Counter()
for e in ev:
    while stack and stack[-1]['ts']+stack[-1]['dur']<=e['ts']: stack.pop()
    if e['name'] in ('aten::copy_',):
        chain=[p['name'] for p in stack if p['name'] not in ('aten::to','aten::_to_copy','aten::copy_','aten::contiguous','aten::clone')]
        key=' < '.join(chain[-3:])
        agg[key]+=e['dur']/1000; cnt[key]+=1
    stack.append(e)
for k,v in agg.most_common(15): print(f'{v:8.2f} ms {cnt[k]:4d}  {k[:200]}')
