"""Replays a forest's node split times through two ways of dealing the nodes
to P workers (docs/scaling/16-core.md, "A tree's nodes dealt as they are
numbered").

Usage: python3 frontier-sim.py LOG P

LOG has a line TREE before each tree, then one line per node: id, parent id
(-1 for the root), depth, split time in ns at one thread, instances, and S
for a node split alone with the crew's help (the root). A node left alone to
split is counted as perfectly shared by the P workers in every scheme.

  level         the nodes of a level dealt in id order, the next level after
                the last node of the level is split (xmc before 2026-11-28);
  graph-prefix  each node dealt once it is numbered: once its parent and
                every node of a smaller id are split (the frontier);
  graph         each node dealt once its parent is split (a bound);
  helped        graph-prefix, and the workers left without a node share
                the work of the nodes of 1,024 rows or more being split, as
                if perfectly (an upper bound on the idle builders' help).
"""

import heapq
import sys
from collections import defaultdict


def read_trees(path):
    """Returns per tree a dict id -> (parent, depth, seconds, alone, rows)."""
    trees = []
    for line in open(path):
        f = line.split()
        if f[0] == "TREE":
            trees.append({})
            continue
        trees[-1][int(f[0])] = (int(f[1]), int(f[2]), int(f[3]) / 1e9, len(f) > 5, int(f[4]))
    return trees


def by_level(tree, P):
    """Each level's nodes dealt in id order, a worker taking the next when free."""
    levels = defaultdict(list)
    for i, (_, depth, sec, _, _) in tree.items():
        levels[depth].append((i, sec))
    total = 0.0
    for depth in sorted(levels):
        nodes = sorted(levels[depth])
        if len(nodes) == 1:
            total += nodes[0][1] / P
            continue
        free = [0.0] * P
        end = 0.0
        for _, sec in nodes:
            e = heapq.heappop(free) + sec
            heapq.heappush(free, e)
            end = max(end, e)
        total += end
    return total


def as_graph(tree, P, in_id_order):
    """Nodes dealt as they become ready, the smallest id first. A node is
    ready once its parent is split, or, in_id_order, once its parent and
    every node of a smaller id are split (ids are breadth-first)."""
    children = defaultdict(list)
    for i, (parent, _, _, _, _) in tree.items():
        if parent >= 0:
            children[parent].append(i)
    ready, running, done = [0], [], set()
    now, idle, committed = 0.0, P, 0
    while ready or running:
        while ready and idle > 0:
            i = heapq.heappop(ready)
            sec, alone = tree[i][2], tree[i][3]
            if alone and not ready and idle == P:
                heapq.heappush(running, (now + sec / P, i))
                idle = 0
                break
            heapq.heappush(running, (now + sec, i))
            idle -= 1
        now, i = heapq.heappop(running)
        idle = P if idle == 0 and tree[i][3] and not running else idle + 1
        done.add(i)
        if not in_id_order:
            for c in children[i]:
                heapq.heappush(ready, c)
            continue
        while committed in done:
            for c in children[committed]:
                heapq.heappush(ready, c)
            committed += 1
    return now


def helped(tree, P, min_rows=1024):
    """As numbered, with the workers that have no node to split sharing out
    the remaining work of the large nodes being split (and of a node left
    alone), at perfect speed-up: an event replay whose rates change at each
    completion."""
    children = defaultdict(list)
    for i, (parent, _, _, _, _) in tree.items():
        if parent >= 0:
            children[parent].append(i)
    ready, left, done = [0], {}, set()
    now, committed = 0.0, 0
    while ready or left:
        while ready and len(left) < P:
            i = heapq.heappop(ready)
            left[i] = tree[i][2]
        large = [i for i in left if tree[i][4] >= min_rows or tree[i][3]]
        rate = {i: 1.0 for i in left}
        for i in large:
            rate[i] += (P - len(left)) / len(large)
        dt = min(left[i] / rate[i] for i in left)
        now += dt
        for i in list(left):
            left[i] -= dt * rate[i]
            if left[i] <= 1e-12:
                del left[i]
                done.add(i)
        while committed in done:
            for c in children[committed]:
                heapq.heappush(ready, c)
            committed += 1
    return now


def main():
    trees = read_trees(sys.argv[1])
    P = int(sys.argv[2])
    work = sum(n[2] for t in trees for n in t.values())
    for name, deal in (("level", by_level),
                       ("graph-prefix", lambda t, P: as_graph(t, P, True)),
                       ("graph", lambda t, P: as_graph(t, P, False)),
                       ("helped", helped)):
        T = sum(deal(t, P) for t in trees)
        print(f"{name} P={P} T={T:.3f} s efficiency={work / P / T:.3f}")


main()
