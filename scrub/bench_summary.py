#!/usr/bin/env python3
"""Tabulates h100-bench.sh's runs: stdin lines 'LABEL<TAB>EXIT<TAB>JSON' from vgpu-scrub."""
import json
import sys


def num(v, width, places=1):
    return f"{v:>{width}.{places}f}" if isinstance(v, (int, float)) else "-".rjust(width)


def main():
    cols = [("run", 16), ("exit", 5), ("method", 8), ("scrubbed GB", 13), ("frac", 7), ("scrub s", 9),
            ("scrub GB/s", 12), ("memset med", 12), ("kernel med", 12), ("copy med", 10),
            ("vs memset%", 11), ("vs copy%", 9), ("samples", 9)]
    print()
    print(cols[0][0].ljust(cols[0][1]) + "".join(name.rjust(w) for name, w in cols[1:]))
    for row in sys.stdin:
        label, rc, line = row.rstrip("\n").split("\t", 2)
        try:
            j = json.loads(line)
        except ValueError:
            print(f"{label:<16}{rc:>5}  (no JSON line: {line[:70]})")
            continue
        b = j.get("bench") or {}

        def med(key):
            return (b.get(key) or {}).get("median_gbps")

        print(f"{label:<16}{rc:>5}{j.get('method', ''):>8}{num(j['scrubbed_bytes'] / 1e9, 13, 2)}"
              f"{num(j.get('fraction'), 7, 3)}{num(j.get('seconds'), 9, 4)}{num(j.get('gbps'), 12)}"
              f"{num(med('memset'), 12)}{num(med('kernel'), 12)}{num(med('copy'), 10)}"
              f"{num(b.get('scrub_vs_memset_pct'), 11)}{num(b.get('scrub_vs_copy_pct'), 9)}"
              f"{j.get('verified_samples', 0):>9}")
        if not j.get("ok"):
            print(f"{'':<16}  {j.get('status')}: {j.get('error')}")
    print("GB = 1e9 bytes. copy counts bytes read + written. 'vs' columns compare the scrub pass with the")
    print("median of the benchmark on the largest chunk. Target: scrub >= 90% of memset bandwidth.")


if __name__ == "__main__":
    main()
