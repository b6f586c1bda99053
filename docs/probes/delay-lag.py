#!/usr/bin/env python3
"""The @@L lines of a delay-lag.sh rig log as schedlab's `block_lag` histograms.

Usage: delay-lag.py LOG. Each @@L line is one sleeping block that shared its queue in
Linux 6.12: its lag V - v_i (virtual ns) and 1 when dequeue_task_fair returned false
(delayed). Prints, for the eligible (lag >= 0) and the delayed (lag < 0, as -lag) blocks,
count, mean, p50, p90, p99 and max the way schedlab's Log2Histogram reports them (a
percentile is the upper bound of its log2 bucket, clamped to the maximum), the log2
buckets, and the blocks whose sign disagrees with the return (must be 0).
"""
import sys


def summary(values):
    buckets = {}
    for v in values:
        b = v.bit_length()
        buckets[b] = buckets.get(b, 0) + 1
    n = len(values)
    out = {"count": n, "mean": sum(values) // n if n else 0}
    top = max(values, default=0)
    for p in (50, 90, 99):
        rank, seen, val = -(-n * p // 100), 0, 0
        for b in sorted(buckets):
            seen += buckets[b]
            if seen >= rank:
                val = min((1 << b) - 1 if b else 0, top)
                break
        out[f"p{p}"] = val
    out["max"] = top
    out["log2_buckets"] = dict(sorted(buckets.items()))
    return out


def main():
    eligible, delayed, mismatch = [], [], 0
    with open(sys.argv[1], errors="replace") as f:
        for line in f:
            i = line.find("@@L ")
            if i < 0:
                continue
            lag, ret = (int(x) for x in line[i + 4 :].split()[:2])
            (eligible if lag >= 0 else delayed).append(abs(lag))
            mismatch += (lag < 0) != (ret == 1)
    for name, vals in (("eligible", eligible), ("delayed", delayed)):
        print(name, summary(vals))
    print("mismatch", mismatch)


if __name__ == "__main__":
    main()
