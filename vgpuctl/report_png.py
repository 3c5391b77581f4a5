#!/usr/bin/env python3
"""Draws `vgpuctl report --json` (on stdin) to the PNG named on the command line: each node's share
of compute slices held by jobs over time, and the instances held per profile, stacked.
Run by `vgpuctl report --png FILE`; needs python3-matplotlib."""
import json
import sys
from datetime import datetime, timezone

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: report_png.py OUT.png < report.json", file=sys.stderr)
        return 2
    r = json.load(sys.stdin)
    # Each bucket drawn at its middle, in UTC like the report's text.
    t = [datetime.fromtimestamp(s + r["bucket_seconds"] / 2, tz=timezone.utc) for s in r["bucket_starts"]]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7), sharex=True, constrained_layout=True)
    for node, series in sorted(r["node_utilisation"].items()):
        top.plot(t, [100 * v for v in series], label=f"{node} (mean {100 * r['node_mean'][node]:.0f}%)", linewidth=1.8)
    top.set_ylabel("compute slices held by jobs (%)")
    top.set_ylim(0, 105)
    top.grid(alpha=0.3)
    top.legend(loc="upper right", fontsize=8)
    top.set_title("GPU utilisation per node")
    profiles = sorted(r["profile_instances"], key=lambda p: (int(p.split("g")[0]) if p[0].isdigit() else 99, p))
    if profiles:
        bottom.stackplot(t, [r["profile_instances"][p] for p in profiles],
                         labels=[f"{p} ({r['profile_instance_hours'].get(p, 0):.2f} h)" for p in profiles], alpha=0.85)
        bottom.legend(loc="upper right", fontsize=8)
    bottom.set_ylabel("instances held (mean per bucket)")
    bottom.grid(alpha=0.3)
    bottom.set_title("Instances held per profile")
    bottom.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S", tz=timezone.utc))
    bottom.set_xlabel(f"time (UTC), {r['bucket_seconds']} s buckets")
    since = datetime.fromtimestamp(r["since"], tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    until = datetime.fromtimestamp(r["until"], tz=timezone.utc).strftime("%H:%M:%S")
    fig.suptitle(f"slurm-vgpu: {since} to {until} UTC")
    fig.savefig(sys.argv[1], dpi=100)
    return 0


if __name__ == "__main__":
    sys.exit(main())
