#!/usr/bin/env python3
"""fit.py PROJECTION DATA [PARTS]

Sets estimates of a one-vs-all label's cost against the strata of an xmc-bench project run:
PROJECTION is its projection.txt, DATA the training file it projected (text, gzipped or not), whose
label counts give each sampled label's positives. For each estimate it prints the error of the
strata's rates against the estimate (the root mean square of the logarithm of their ratio, the
estimate averaged over each stratum's sampled labels, its scale fitted), and the balance of PARTS
label ranges of equal estimated cost (--label-range K/PARTS, default 16) with the strata's rates
taken smooth in the logarithm of the positives: the largest and smallest part against the mean.
Then the least-squares fit of a stratum's rate to its labels' index entries scanned and active rows
times passes (the trainer_stats of the projection's table).

Used in docs/scaling/amazon-670k.md ("What a refit would take").
"""
import gzip
import math
import re
import sys

ESTIMATES = {
    "1 (EqualCost, DiSMEC's)": lambda p: 1,
    "1 + p^0.6 (LabelCost, PPDSparse's)": lambda p: 1 + p ** 0.6,
    "1 + ln(1 + p)^1.5": lambda p: 1 + math.log(1 + p) ** 1.5,
}


def label_counts(path):
    """Positives of every label with one, most frequent first (ties by label id), as xmc orders them."""
    counts = {}
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        next(f)  # header
        for line in f:
            field = line.split(" ", 1)[0]
            for l in field.split(","):
                if l.strip():
                    counts[int(l)] = counts.get(int(l), 0) + 1
    return [c for _, c in sorted(((-c, l), c) for l, c in counts.items())]


def strata(projection, counts):
    """(from, to, core-s a label, positives of the sampled labels, stats) per stratum."""
    text = open(projection).read().split("\n")
    rows, stats = [], {}
    for line in text:
        m = re.match(r"\s*(\d+):(\d+)\s+((?:\d+:\d+\s*)+)\s+([0-9.e+-]+)\s+[0-9.e+-]+\s+[0-9.]+%$", line)
        if m:
            pieces = [tuple(map(int, s.split(":"))) for s in m[3].split()]
            rows.append([int(m[1]), int(m[2]), float(m[4]), [c for a, b in pieces for c in counts[a:b]]])
        m = re.match(r"\s*(\d+):(\d+)\s+([0-9.e+\s-]+)$", line)
        if m and len(m[3].split()) >= 6:
            stats[(int(m[1]), int(m[2]))] = list(map(float, m[3].split()))
    header = next((l.split() for l in text if l.strip().startswith("labels") and "index_entries_scanned" in l), None)
    for r in rows:
        r.append(dict(zip(header[1:], stats.get((r[0], r[1]), []))) if header else {})
    return rows


def error(rows, estimate):
    logs = [math.log(rate / (sum(estimate(p) for p in pos) / len(pos))) for _, _, rate, pos, _ in rows]
    mean = sum(logs) / len(logs)
    return math.sqrt(sum((x - mean) ** 2 for x in logs) / len(logs))


def smooth_rates(rows, counts):
    """Each label's rate, interpolated in log(positives) between the strata's mean positives."""
    points = sorted((math.log(sum(pos) / len(pos)), rate) for _, _, rate, pos, _ in rows)

    def rate(p):
        x = math.log(p)
        if x <= points[0][0]:
            return points[0][1]
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            if x <= x1:
                return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        return points[-1][1]

    return [rate(p) for p in counts]


def balance(counts, rates, estimate, parts):
    """Largest and smallest part's cost over the mean, the parts cut as --label-range K/PARTS cuts them."""
    cost = [estimate(p) for p in counts]
    total, bounds, acc = sum(cost), [0], 0.0
    for i, c in enumerate(cost):
        if len(bounds) < parts and parts * acc >= len(bounds) * total:
            bounds.append(i)
        acc += c
    bounds.append(len(counts))
    spent = [sum(rates[a:b]) for a, b in zip(bounds, bounds[1:])]
    mean = sum(spent) / len(spent)
    return max(spent) / mean, min(spent) / mean


def least_squares(xs, ys):
    """Coefficients of ys ~ xs (rows of features), each point weighted by 1/y² (relative errors)."""
    n = len(xs[0])
    a = [[sum(x[i] * x[j] / y ** 2 for x, y in zip(xs, ys)) for j in range(n)] + [sum(x[i] / y for x, y in zip(xs, ys))] for i in range(n)]
    for i in range(n):
        a[i] = [v / a[i][i] for v in a[i]]
        for k in range(n):
            if k != i:
                a[k] = [vk - a[k][i] * vi for vk, vi in zip(a[k], a[i])]
    return [row[n] for row in a]


def main():
    projection, data = sys.argv[1], sys.argv[2]
    parts = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    counts = label_counts(data)
    rows = strata(projection, counts)
    rates = smooth_rates(rows, counts)
    for name, estimate in ESTIMATES.items():
        hi, lo = balance(counts, rates, estimate, parts)
        print(f"{name}: error {error(rows, estimate):.3f}; {parts} parts {lo:.2f} to {hi:.2f} of an even share")
    if all("index_entries_scanned" in r[4] for r in rows):
        xs = [(r[4]["index_entries_scanned"], r[4]["active_rows"] * r[4]["cd_passes"]) for r in rows]
        ys = [r[2] for r in rows]
        scan, row = least_squares(xs, ys)
        fit = [scan * x[0] + row * x[1] for x in xs]
        print(f"a label's core-s = {scan * 1e9:.2f} ns an index entry scanned + {row * 1e6:.2f} µs an active row and pass;"
              " strata's rate / fit: " + " ".join(f"{y / f:.2f}" for y, f in zip(ys, fit)))


if __name__ == "__main__":
    main()
