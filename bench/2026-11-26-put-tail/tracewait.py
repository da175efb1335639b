#!/usr/bin/env python3
"""Where the requests of a runtime trace spend their time.

Reads the text form of a trace captured from coffer serve --pprof
(docs/performance.md, "Catching a slow request"):

    curl -o slow.trace 'http://127.0.0.1:6060/debug/pprof/slow?threshold=15ms&timeout=40s'
    go tool trace -d=parsed slow.trace > slow.txt
    python3 tracewait.py slow.txt 10 "s3 PUT"

prints, for the tasks of that type (the server opens one task per request,
named "s3 <method>") that took at least the given milliseconds, the mean
time per task in each goroutine state: Running, Runnable (waiting for a
P), Syscall and Waiting, the last two by the call site (the innermost
frame and the innermost Coffer or Pebble frame of the stack). Then, over
the whole trace, every system call site with its count and duration
percentiles. Only the goroutine that runs the request is followed: time a
request spends waiting for another goroutine (Pebble's WAL syncer) shows
as Waiting at the site where it waits.
"""
import collections
import re
import sys

TRANSITION = re.compile(r'Time=(\d+) GoID=(\d+) (\w+)->(\w+) Reason="([^"]*)"')
TASK = re.compile(r'G=(\d+) (TaskBegin|TaskEnd) Time=(\d+) ID=(\d+).*Type="([^"]+)"')


def site(stack):
    frames = [s.split(' @')[0] for s in stack]
    own = [f for f in frames if 'coffer-s3/coffer' in f or 'pebble' in f]
    first = frames[0] if frames else '?'
    return first.rsplit('/', 1)[-1] + ' <- ' + (own[0].rsplit('/', 1)[-1] if own else '?')


def events(path):
    """Yields (time, goid, from, to, reason, stack) for every transition."""
    pending, stack = None, []
    with open(path) as f:
        for line in f:
            if line.startswith('M='):
                if pending:
                    yield pending + (stack,)
                pending, stack = None, []
                if 'StateTransition' in line:
                    m = TRANSITION.search(line)
                    if m:
                        t, g, a, b, r = m.groups()
                        pending = (int(t), g, a, b, r)
            elif line.startswith('\t') and not line.startswith('\t\t'):
                stack.append(line.strip())
    if pending:
        yield pending + (stack,)


def slow_tasks(path, min_ms, kind):
    begun, slow = {}, []
    with open(path) as f:
        for line in f:
            if 'Task' not in line:
                continue
            m = TASK.search(line)
            if not m:
                continue
            g, what, t, tid, typ = m.groups()
            if what == 'TaskBegin':
                begun[tid] = (g, int(t), typ)
            elif tid in begun:
                g, start, typ = begun.pop(tid)
                if typ == kind and (int(t) - start) / 1e6 >= min_ms:
                    slow.append((g, start, int(t)))
    return slow


def main():
    path, min_ms, kind = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    tasks = slow_tasks(path, min_ms, kind)
    spans = collections.defaultdict(list)
    for g, start, end in tasks:
        spans[g].append((start, end))
    state = {}  # goid -> (label, since)
    per_state = collections.Counter()
    calls = {}  # goid -> (since, site) of the system call it is in
    durations = collections.defaultdict(list)
    for t, g, a, b, r, stack in events(path):
        if g in spans and g in state:
            label, since = state[g]
            for start, end in spans[g]:
                lo, hi = max(since, start), min(t, end)
                if hi > lo:
                    per_state[label] += (hi - lo) / 1e6
        if g in spans:
            state[g] = (b + '/' + r + ' ' + site(stack) if b in ('Syscall', 'Waiting') else b, t)
        if b == 'Syscall':
            calls[g] = (t, site(stack))
        elif a == 'Syscall' and g in calls:
            since, where = calls.pop(g)
            durations[where].append((t - since) / 1e3)
    print(f'{len(tasks)} tasks "{kind}" of {min_ms:g} ms or more; mean ms per task by state:')
    for label, ms in per_state.most_common(14):
        print(f'  {ms / max(len(tasks), 1):7.2f}  {label}')
    print('\nsystem calls of the whole trace (µs):')
    for where, d in sorted(durations.items(), key=lambda kv: -sum(kv[1]))[:14]:
        d.sort()
        n = len(d)
        print(f'  {n:6d}  mean {sum(d) / n:6.0f}  p50 {d[n // 2]:6.0f}  p90 {d[int(n * .9)]:6.0f}  '
              f'p99 {d[int(n * .99)]:6.0f}  max {d[-1]:6.0f}  {where}')


if __name__ == '__main__':
    main()
