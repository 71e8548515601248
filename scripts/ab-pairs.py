#!/usr/bin/env python3
"""Summarise the output of scripts/slowloris-ab.sh: per pair (one A run and
one B run, in either order) the ratio B/A of the normal clients' p99, p999
and count of server turns of 256 us or more; then per figure the median of
the ratios, its distribution-free 90% interval (order statistics of a
binomial(n, 1/2), as evdispatch_harness::median_interval) and in how many
pairs B was lower, with the one-sided sign-test p of that count. With
--unstolen, pairs where either window had more than 0.5% of a CPU stolen
(the `steal` figure of the runs) are left out and counted.

    python3 scripts/ab-pairs.py [--unstolen] OUTPUT.txt
"""
import math
import re
import sys


def runs(path):
    out = []
    for line in open(path):
        if re.match(r"^[AB] p99 ", line):
            f = line.split()
            m = re.search(r" steal ([0-9.]+)%", line)
            steal = float(m.group(1)) if m else 0.0
            out.append((f[0], int(f[2]), int(f[5]), int(f[8]), steal))
    return out


def pairs(rs):
    ps = []
    for i in range(0, len(rs) - 1, 2):
        two = {r[0]: r for r in rs[i:i + 2]}
        if set(two) == {"A", "B"}:
            ps.append((two["A"], two["B"]))
    return ps


def median_interval(xs, miss=0.05):
    xs = sorted(xs)
    n = len(xs)
    med = (xs[(n - 1) // 2] + xs[n // 2]) / 2
    # The largest k with P(Binomial(n, 1/2) < k) <= miss on each side.
    k, below = 0, 0.0
    for j in range(n + 1):
        p = math.comb(n, j) / 2**n
        if below + p > miss:
            break
        below += p
        k = j + 1
    if k == 0:
        # Too few pairs for 90%: the whole range, as the Rust twin does.
        return med, xs[0], xs[-1]
    return med, xs[k - 1], xs[n - k]


def sign_p(lower, n):
    """P(at least `lower` of n pairs lower) when lower and higher are even."""
    return sum(math.comb(n, j) for j in range(lower, n + 1)) / 2**n


STEAL_LIMIT_PCT = 0.5


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if args else 2)
    unstolen = "--unstolen" in args
    args = [a for a in args if a != "--unstolen"]
    ps = pairs(runs(args[0]))
    if unstolen:
        kept = [(a, b) for a, b in ps if max(a[4], b[4]) <= STEAL_LIMIT_PCT]
        print("left out %d of %d pairs with steal above %.1f%%"
              % (len(ps) - len(kept), len(ps), STEAL_LIMIT_PCT))
        ps = kept
    if not ps:
        sys.exit("no A/B pairs found")
    for name, ix in (("p99", 1), ("p999", 2), ("turns >= 256 us", 3)):
        r = [b[ix] / a[ix] if a[ix] else float("inf") for a, b in ps]
        lower = sum(1 for x in r if x < 1)
        med, lo, hi = median_interval(r)
        span = "%.2f-%.2f" % (lo, hi)
        print("%s B/A per pair: %s" % (name, " ".join("%.2f" % x for x in r)))
        print("    median %.2f, 90%% interval %s, B lower in %d of %d (sign test p %.3f)"
              % (med, span, lower, len(r), sign_p(lower, len(r))))
    print("A p99 us:", sorted(a[1] for a, _ in ps))
    print("B p99 us:", sorted(b[1] for _, b in ps))


if __name__ == "__main__":
    main()
