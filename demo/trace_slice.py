#!/usr/bin/env python3
"""Turns a slice of an Alibaba openb trace into a time-compressed slurm-vgpu workload.

Each GPU task becomes one job: gpu_milli maps to the smallest H100-80GB profile whose compute
fraction covers it (the mapping of benchmarks/ and docs/benchmarks.md), a whole-GPU task to one
7g.80gb, a multi-GPU task to two whole GPUs (whole.80gb:2, MIG off: the NVLink path a MIG instance
lacks; a demo node has two H100s), as the trace twin's MIG-on-demand policy gives them. With --amd-every N, every Nth task asks instead for the AMD MI300X
compute partition of the same share (1/7 -> cpx.24gb, 2/7 -> qpx.48gb, 3/7 and 4/7 -> dpx.96gb, a
whole GPU -> spx.192gb), so a mixed cluster serves both vendors from one trace. Profiles of 3 or
more compute slices (DPX, SPX) go to partition "train", the rest to "infer". Arrival offsets and durations are squeezed into a few minutes, keeping their order and
relative sizes. Tasks are a seeded random sample. Prints TSV: offset_s partition gres duration_s task_name."""
import argparse
import csv
import random
import sys

# compute slices of 7 -> profile, for gpu_milli thresholds (milli <= 1000*slices/7)
PROFILES = [(1, "1g.10gb"), (2, "2g.20gb"), (3, "3g.40gb"), (4, "4g.40gb"), (7, "7g.80gb")]
# The MI300X partition with (at least) the same share of the GPU, and whether it is "training".
AMD = {"1g.10gb": ("cpx.24gb", False), "2g.20gb": ("qpx.48gb", False), "3g.40gb": ("dpx.96gb", True),
       "4g.40gb": ("dpx.96gb", True), "7g.80gb": ("spx.192gb", True)}


def profile_for(num_gpu: int, gpu_milli: int) -> str:
    if num_gpu != 1 or gpu_milli <= 0 or gpu_milli >= 1000:
        return "7g.80gb"
    for slices, name in PROFILES:
        if gpu_milli * 7 <= slices * 1000:
            return name
    return "7g.80gb"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("trace")
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--span", type=float, default=90.0, help="seconds over which jobs arrive")
    ap.add_argument("--min-duration", type=float, default=4.0)
    ap.add_argument("--max-duration", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--amd-every", type=int, default=0,
                    help="every Nth task asks for the MI300X partition of the same share (0: none)")
    ap.add_argument("--inference", type=int, default=0,
                    help="also emit this many synthetic inference jobs (x2-4 of --inference-type), name 'synthetic-inference-N'")
    ap.add_argument("--training", type=int, default=0,
                    help="also emit this many synthetic training jobs of two whole H100s (whole.80gb:2)")
    ap.add_argument("--inference-type", default="1g.10gb",
                    help="the vgpu type they ask for: a profile, or a class any vendor's GPU can serve")
    args = ap.parse_args()

    tasks = []
    with open(args.trace, newline="") as f:
        for row in csv.DictReader(f):
            try:
                num_gpu, milli = int(row["num_gpu"]), int(row["gpu_milli"] or 0)
                created, deleted = float(row["creation_time"]), float(row["deletion_time"])
            except (KeyError, ValueError):
                continue
            if num_gpu < 1 or deleted <= created or not row.get("scheduled_time"):
                continue
            profile = "whole.80gb" if num_gpu > 1 else profile_for(num_gpu, milli)
            tasks.append((created, deleted - created, profile, row["name"]))
    if not tasks:
        print(f"{args.trace}: no GPU tasks with times", file=sys.stderr)
        return 1
    # A random sample keeps the trace's profile mix; a contiguous window is often one burst of a
    # single kind. Sorted by creation time, arrivals keep the trace's order.
    window = sorted(random.Random(args.seed).sample(tasks, min(args.jobs, len(tasks))))
    t0, t1 = window[0][0], window[-1][0]
    durations = sorted(d for _, d, _, _ in window)
    for i, (created, duration, profile, name) in enumerate(window):
        offset = 0.0 if t1 == t0 else (created - t0) / (t1 - t0) * args.span
        rank = durations.index(duration) / max(1, len(durations) - 1)
        seconds = args.min_duration + rank * (args.max_duration - args.min_duration)
        count = 2 if profile == "whole.80gb" else 1
        slices = next((s for s, p in PROFILES if p == profile), 7)
        partition = "train" if slices >= 3 else "infer"
        if args.amd_every and i % args.amd_every == args.amd_every - 1:
            profile, training = AMD["7g.80gb" if count > 1 else profile]
            partition, count = ("train" if training else "infer"), 1
        print(f"{offset:.1f}\t{partition}\tvgpu:{profile}:{count}\t{seconds:.0f}\t{name}")
    # Multi-GPU training is rare in openb (under 1 % of its GPU tasks): a few synthetic ones (two whole
    # GPUs each, named as synthetic) show a GPU leaving MIG mode for them and coming back.
    for i in range(args.training):
        offset = (i + 1) * args.span / (args.training + 1)
        print(f"{offset:.1f}\ttrain\tvgpu:whole.80gb:2\t{args.max_duration / 2:.0f}\tsynthetic-training-{i}")
    # The openb sharing tasks mostly ask for half a GPU or more; a serving tier of small instances
    # is added explicitly (and named as synthetic) so the demo shows both ends of the range.
    rng = random.Random(args.seed + 1)
    for i in range(args.inference):
        offset = rng.uniform(0, args.span)
        print(f"{offset:.1f}\tinfer\tvgpu:{args.inference_type}:{rng.randint(2, 4)}\t{rng.randint(5, 12)}\tsynthetic-inference-{i}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
