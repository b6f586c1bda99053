#!/usr/bin/env python3
"""Attribute a tbprof.so profile to the kernel's functions.

usage: tbprof.py KERNEL_ELF PROFILE [BASELINE] [--offset HEX] [--top N]

PROFILE (and BASELINE, subtracted function by function, e.g. the same boot
with the experiment made trivial) are the plugin's `vaddr insns runs` lines.
The kernel is linked position-independent and loaded at the `boot` record's
`kernel_image_offset` (0x8000000000 by default). Prints guest instructions
per function, most first; code outside the kernel image (firmware,
bootloader) is one line.
"""
import argparse
import bisect
import subprocess
from collections import Counter


def symbols(elf):
    out = subprocess.run(["nm", "-n", "-C", "--defined-only", elf],
                         capture_output=True, text=True, check=True).stdout
    addrs, names = [], []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in "tTwW":
            addrs.append(int(parts[0], 16))
            names.append(parts[2])
    return addrs, names


def profile(path, addrs, names, offset):
    per = Counter()
    lo, hi = addrs[0], addrs[-1] + (1 << 20)
    for line in open(path):
        va, insns, runs = line.split()
        a = int(va, 16) - offset
        n = int(insns) * int(runs)
        if lo <= a < hi:
            per[names[bisect.bisect_right(addrs, a) - 1]] += n
        else:
            per["(outside the kernel image)"] += n
    return per


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("elf")
    ap.add_argument("profile")
    ap.add_argument("baseline", nargs="?")
    ap.add_argument("--offset", default="8000000000")
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    addrs, names = symbols(a.elf)
    off = int(a.offset, 16)
    per = profile(a.profile, addrs, names, off)
    if a.baseline:
        per.subtract(profile(a.baseline, addrs, names, off))
    total = sum(per.values())
    print(f"{total:>14,} instructions in all")
    for name, n in sorted(per.items(), key=lambda kv: -kv[1])[: a.top]:
        print(f"{n:>14,} {100 * n / max(total, 1):5.1f}%  {name[:150]}")


if __name__ == "__main__":
    main()
