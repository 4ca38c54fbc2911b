#!/usr/bin/env python3
"""Replays PD-Sparse's rounds of a rank alone, timed at one thread, through
W workers: the rows' search (each row solved and its step taken where it is
searched) then the steps' additions by feature shard, in two loops (the
build before 2026-11-28, ninth entry of the journal) or in one
(numa.Team.ForThen: a worker with no row left to search applies shards,
each shard once every row with features in it has taken its step).

The input is the log of a timing build (apply-timing.patch, run at one
thread with SIM_WORKERS=W, the shards of W workers): per round each row's
search time in the order the rows are dealt, each shard's apply time, and
each row's additions per shard.

Rows are dealt one at a time to the first free worker, in the logged order;
shards by numa.Team.Spread's rule (each worker its own group of shards
first, then the others' groups in turn). Each item costs DEAL_NS more (the
dealing), and the second of two loops starts HANDOFF_NS after the first
ends. The times are one thread's: a core that works beside 15 others is
slower (docs/scaling/16-core.md, the node's ceiling), in both ways alike.

Usage: apply-sim.py LOG WORKERS [DEAL_NS] [HANDOFF_NS]
"""
import sys


def rounds(path):
    r = None
    for line in open(path):
        f = line.split()
        if not f:
            continue
        if f[0] == 'R':
            if r and r['A'] is not None:
                yield r
            r = {'S': [], 'A': None, 'N': {}}
        elif f[0] == 'S':
            r['S'] = [tuple(int(v) for v in x.split(':')) for x in f[1:]]
        elif f[0] == 'A':
            r['A'] = [int(v) for v in f[1:]]
        elif f[0] == 'N':
            r['N'][int(f[1])] = [int(v) for v in f[2:]]
    if r and r['A'] is not None:
        yield r


def search(r, W, deal):
    """Deals the rows: returns each row's end and each worker's free time."""
    free = [0.0] * W
    ends = {}
    for q, t in r['S']:
        w = min(range(W), key=lambda i: free[i])
        free[w] += deal + t
        ends[q] = free[w]
    return ends, free


def spread(n, W, free, shard_end):
    """Deals shards 0..n-1 by Spread's rule to workers free at the given
    times; shard_end(s, start) gives a shard's end. Returns the last end."""
    nxt = [g * n // W for g in range(W)]
    end = [(g + 1) * n // W for g in range(W)]
    free = list(free)
    last = max(free)
    while True:
        w = min(range(W), key=lambda i: free[i])
        s = None
        for k in range(W):
            g = (w + k) % W
            if nxt[g] < end[g]:
                s = nxt[g]
                nxt[g] += 1
                break
        if s is None:
            return last
        free[w] = shard_end(s, free[w])
        last = max(last, free[w])


def main():
    path, W = sys.argv[1], int(sys.argv[2])
    deal = float(sys.argv[3]) if len(sys.argv) > 3 else 100.0
    hand = float(sys.argv[4]) if len(sys.argv) > 4 else 1000.0
    work = two = one = s_two = n = 0.0
    for r in rounds(path):
        A, N = r['A'], r['N']
        ends, free = search(r, W, deal)
        t_search = max(free)
        t_two = spread(len(A), W, [t_search + hand] * W, lambda s, st: st + deal + A[s])

        def after_rows(s, st):
            need = max([ends[q] for q, adds in N.items() if adds[s] > 0] or [0.0])
            return max(st + deal, need) + A[s]

        t_one = spread(len(A), W, free, after_rows)
        work += sum(A) + sum(t for _, t in r['S'])
        two += t_two
        one += t_one
        s_two += t_search
        n += 1
    even = work / W
    print(f"{W} workers, {n:.0f} rounds, {deal:.0f} ns an item, {hand:.0f} ns between loops")
    print(f"  one thread {work / n / 1e3:.1f} us a round; even over {W} workers {even / n / 1e3:.2f} us")
    print(f"  two loops  {two / n / 1e3:.2f} us a round (search {s_two / n / 1e3:.2f}), {even / two:.3f} of even")
    print(f"  one loop   {one / n / 1e3:.2f} us a round, {even / one:.3f} of even")


main()
