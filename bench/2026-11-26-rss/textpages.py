#!/usr/bin/env python3
# Resident pages of a Go binary's mappings, attributed to packages by symbol.
# usage: textpages.py PID BINARY NMFILE   (NMFILE: go tool nm -size -sort address BINARY)
import sys, struct, re, collections
pid, binary, nmfile = sys.argv[1], sys.argv[2], sys.argv[3]
PAGE = 4096
maps = []
for line in open(f'/proc/{pid}/maps'):
    f = line.split()
    if len(f) >= 6 and f[5] == binary:
        a, b = (int(x, 16) for x in f[0].split('-'))
        maps.append((a, b, f[1]))
present = set()
with open(f'/proc/{pid}/pagemap', 'rb') as pm:
    for a, b, perm in maps:
        pm.seek(a // PAGE * 8)
        data = pm.read((b - a) // PAGE * 8)
        for i in range((b - a) // PAGE):
            (e,) = struct.unpack_from('<Q', data, i * 8)
            if e >> 63 & 1:
                present.add(a // PAGE + i)
syms = []
for line in open(nmfile):
    f = line.split()
    if len(f) < 4: continue
    try: addr = int(f[0], 16); size = int(f[1])
    except ValueError: continue
    name = ' '.join(f[3:])
    syms.append((addr, size, f[2], name))
def pkg(name):
    n = name
    if n.startswith('go:') or n.startswith('type:') or n.startswith('runtime.'): 
        return n.split('.')[0] if not n.startswith('runtime.') else 'runtime'
    m = re.match(r'^([^(]*?/)?([^./]+)', n)
    base = n.split('(')[0]
    # package path = up to last '/' then first '.'
    i = base.rfind('/')
    j = base.find('.', i + 1)
    return base[:j] if j > 0 else base
bypkg = collections.Counter(); total = collections.Counter()
seen = set()
for addr, size, typ, name in syms:
    if size == 0: continue
    p0, p1 = addr // PAGE, (addr + size - 1) // PAGE
    for pg in range(p0, p1 + 1):
        if pg in seen: continue
        seen.add(pg)
        k = ('text' if typ in 'Tt' else 'data') + ' ' + pkg(name)
        total[k] += 1
        if pg in present: bypkg[k] += 1
allp = sum(bypkg.values())
print(f'resident pages attributed: {allp*4/1024:.1f} MiB of {len(present)*4/1024:.1f} MiB present')
for k, n in bypkg.most_common(30):
    print(f'{n*4/1024:7.2f} MiB resident of {total[k]*4/1024:7.2f} MiB  {k}')
