#!/usr/bin/env python3
"""Print the README table's row for each run directory given.

    python3 rows.py run-19 run-20

Mixed obj/s is the sum of the four operations' ops/s in mixed/report.md
(each the median of its per-second windows), p99 per operation from the
same report, the 10 MiB rows' MiB/s from cases/report.md, peak RSS the
largest VmHWM in mixed/rss.txt and cases/rss.txt in kB / 1000, and the
load averages from load.txt.
"""
import json,re,sys,os
def p99(report, op):
    txt=open(report).read()
    sec=txt.split('## '+op+'\n',1)[1]
    r={}
    for line in sec.splitlines():
        m=re.match(r'\| \d+ \| (\w+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+ \w+) \| ([\d.]+) (\w+) \|',line)
        if m:
            v=float(m.group(5)); v = v/1000 if m.group(6)=='µs' else v
            r[m.group(1)]=(v,float(m.group(3)),float(m.group(2)))
        if line.startswith('## ') : break
    return r
for run in sys.argv[1:]:
    d=json.load(open(run+'/mixed/results.json'))
    tot={n:sum(p99(run+'/mixed/report.md',op)[n][2] for op in ('GET','PUT','DELETE','STAT')) for n in ('coffer','minio')}
    g=p99(run+'/mixed/report.md','GET'); p=p99(run+'/mixed/report.md','PUT')
    gc=p99(run+'/cases/report.md','get-10MiB'); pc=p99(run+'/cases/report.md','put-10MiB')
    rss=max(int(re.search(r'VmHWM:\s+(\d+)',l).group(1)) for f in ('mixed','cases') for l in open(f'{run}/{f}/rss.txt') if l.startswith('coffer'))
    mrss=max(int(re.search(r'VmHWM:\s+(\d+)',l).group(1)) for f in ('mixed','cases') for l in open(f'{run}/{f}/rss.txt') if l.startswith('minio'))
    load=[l.split('load average:')[1].split(',')[0].strip() for l in open(run+'/load.txt')]
    c,m='coffer','minio'
    print(f"| {os.path.basename(run)} | {'–'.join(load)} | {tot[c]:,.0f} / {tot[m]:,.0f} | {tot[c]/tot[m]:.2f}× | {g[c][0]:.1f} / {g[m][0]:.1f} ms | {g[c][0]/g[m][0]:.2f}× | {p[c][0]:.1f} / {p[m][0]:.1f} ms | {p[c][0]/p[m][0]:.2f}× | {gc[c][1]:,.0f} / {gc[m][1]:,.0f} | {gc[c][1]/gc[m][1]:.2f}× | {pc[c][1]:,.0f} / {pc[m][1]:,.0f} | {pc[c][1]/pc[m][1]:.2f}× | {round(rss/1000)} / {round(mrss/1000)} MiB |")
