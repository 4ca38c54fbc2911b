#!/usr/bin/env python3
"""tail-sim.py TIMES W: a forest's trees grown alone by W workers, each taking
the next tree of the queue when free, from the one-thread time of each tree
(lines "TREETIME tree microseconds", as a timing build printed them). Prints,
for the first W trees and for all of them, the loop efficiency (the trees'
time over W x the makespan) without help, and the share of the workers' time
that they idle at the end: what workers helping the last trees can win back
at most (grower.Help)."""
import heapq
import sys

times = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 3 and f[0] == "TREETIME":
        times[int(f[1])] = int(f[2]) / 1e6
W = int(sys.argv[2])
trees = [times[t] for t in sorted(times)]


def alone(ts, w):
    free = [0.0] * w  # when each worker is next free
    heapq.heapify(free)
    for t in ts:
        heapq.heappush(free, heapq.heappop(free) + t)
    return max(free)


for n in sorted({W, len(trees)}):
    ts = trees[:n]
    span = alone(ts, W)
    eff = sum(ts) / (W * span)
    print(f"{n} trees on {W} workers: trees {min(ts):.2f}-{max(ts):.2f} s, makespan {span:.2f} s, "
          f"even {sum(ts) / W:.2f} s, loop efficiency {eff:.3f}, idle at the end {1 - eff:.3f}")
