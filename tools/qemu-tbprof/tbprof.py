#!/usr/bin/env python3
"""Attribute a tbprof.so profile to the kernel's functions.

usage: tbprof.py KERNEL_ELF PROFILE [BASELINE] [--offset HEX] [--top N] [--lines NAME]

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


def by_line(a, addrs, names, off):
    blocks = Counter()
    for path, sign in ((a.profile, 1), (a.baseline, -1)):
        if not path:
            continue
        for line in open(path):
            va, insns, runs = line.split()
            addr = int(va, 16) - off
            i = bisect.bisect_right(addrs, addr) - 1
            if i >= 0 and a.lines in names[i]:
                blocks[addr] += sign * int(insns) * int(runs)
    blocks = {k: v for k, v in blocks.items() if v}
    if not blocks:
        print("no blocks in functions matching", a.lines)
        return
    keys = sorted(blocks)
    out = subprocess.run(["addr2line", "-e", a.elf] + [hex(k) for k in keys],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    per = Counter()
    for k, loc in zip(keys, out):
        per[loc.replace("/work/main/", "")] += blocks[k]
    total = sum(per.values())
    print(f"{total:>14,} instructions in functions matching {a.lines!r}")
    for loc, n in sorted(per.items(), key=lambda kv: -kv[1])[: a.top]:
        print(f"{n:>14,} {100 * n / max(total, 1):5.1f}%  {loc}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("elf")
    ap.add_argument("profile")
    ap.add_argument("baseline", nargs="?")
    ap.add_argument("--offset", default="8000000000")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--lines", metavar="FUNCTION",
                    help="break the functions whose name contains FUNCTION down by "
                         "source line (of each block's first instruction, inlined "
                         "frames resolved to the innermost)")
    a = ap.parse_args()
    addrs, names = symbols(a.elf)
    off = int(a.offset, 16)
    if a.lines:
        by_line(a, addrs, names, off)
        return
    per = profile(a.profile, addrs, names, off)
    if a.baseline:
        per.subtract(profile(a.baseline, addrs, names, off))
    total = sum(per.values())
    print(f"{total:>14,} instructions in all")
    for name, n in sorted(per.items(), key=lambda kv: -kv[1])[: a.top]:
        print(f"{n:>14,} {100 * n / max(total, 1):5.1f}%  {name[:150]}")


if __name__ == "__main__":
    main()
