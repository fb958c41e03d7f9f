#!/usr/bin/env python3
"""Sorts a CPU profile's samples into where the CPU went, for BENCHMARKS.md's profile comparison.

Usage:
    go tool pprof -traces webhooks.test cpu.out > traces.txt
    python3 docs/tools/profile_classes.py traces.txt CALLS

Each sample goes to the first class its stack matches, in this order: GC marking (a background mark
worker), allocation (mallocgc or a GC assist anywhere in the stack), the test's receiver (net/http's
server), the HTTP client (net/http's client), the Redis client (go-redis), the library's own code, the
scheduler, other runtime work. CALLS divides each class's seconds into microseconds per call.
"""
import sys, re, collections
def unit(v):
    m = re.match(r'([\d.]+)(ns|us|µs|ms|s)$', v)
    n, u = float(m.group(1)), m.group(2)
    return n * {'ns':1e-9,'us':1e-6,'µs':1e-6,'ms':1e-3,'s':1}[u]
def classify(frames):
    s = '\n'.join(frames)
    if 'runtime.gcBgMarkWorker' in s: return 'GC marking (background)'
    if 'runtime.mallocgc' in s or 'runtime.gcAssist' in s: return 'allocation (mallocgc, GC assist)'
    if 'net/http.(*conn).serve' in s: return 'receiver (test HTTP server)'
    if re.search(r'net/http\.\(\*(persistConn|Transport|Client)\)|net/http\.send|persistConnWriter', s): return 'HTTP client (net/http)'
    if 'redis/go-redis' in s: return 'Redis client (go-redis)'
    if 'smartdrop/webhooks' in s: return 'library code'
    if re.search(r'runtime\.(schedule|findRunnable|park_m|mcall|goexit|netpoll|sysmon|mstart|wakep|stopm)', s): return 'scheduler, netpoll, idle'
    return 'other runtime'
tot = collections.Counter()
frames, val = [], None
def flush():
    global frames, val
    if val is not None and frames: tot[classify(frames)] += val
    frames, val = [], None
for line in open(sys.argv[1]):
    line = line.rstrip('\n')
    if line.startswith('-----------'):
        flush(); continue
    m = re.match(r'^\s+([\d.]+(?:ns|us|µs|ms|s))\s+(\S.*)$', line)
    if m and val is None:
        val = unit(m.group(1)); frames.append(m.group(2)); continue
    if val is not None and line.strip():
        frames.append(line.strip())
flush()
calls = float(sys.argv[2]) if len(sys.argv) > 2 else 1
all_ = sum(tot.values())
for k, v in tot.most_common():
    print(f'{k:40s} {v:7.2f}s {100*v/all_:5.1f}%  {1e6*v/calls:7.1f} µs/call')
print(f'{"total":40s} {all_:7.2f}s        {1e6*all_/calls:7.1f} µs/call')
