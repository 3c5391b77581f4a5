#!/usr/bin/env bash
# How several scrubs' CUDA start-ups behave when they start at the same moment on one GPU, as the
# epilogs of different jobs now scrub side by side (docs/benchmarks.md, "Scrubs of different jobs
# side by side"). Query-only on the GPU: no MIG, clock, power or compute-mode change; each probe
# allocates GIB GiB with plain cudaMalloc and frees it.
#   benchmarks/cuda_contexts/run.sh [PROBE=build dir's context_probe] [GIB=1] [REPS=5] [COUNTS="1 2 4 7"]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
probe=${1:-$here/context_probe}
gib=${2:-1}
reps=${3:-5}
counts=${4:-1 2 4 7}
[[ -x $probe ]] || { echo "cuda_contexts: no probe at $probe (nvcc -O2 -o $here/context_probe $here/context_probe.cu)" >&2; exit 2; }
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,mig.mode.current --format=csv,noheader || true
fi
echo "machine: $(nproc) CPUs; probe $probe; ${gib} GiB zeroed per process; $reps reps per count"
out=$(mktemp -d)
for n in $counts; do
  for ((r = 1; r <= reps; r++)); do
    start=$(( $(date +%s%3N) + 500 ))
    for ((i = 0; i < n; i++)); do "$probe" "$start" "$gib" > "$out/$n-$r-$i.json" & done
    wait
  done
done
python3 - "$out" "$counts" "$reps" <<'PY'
import json, os, statistics, sys
out, counts, reps = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
print("processes | context ready ms, median (min-max) | zeroed ms, median (min-max) | slowest process's zeroed ms, median of reps | errors")
for n in counts:
    rows = []
    slowest = []
    for r in range(1, reps + 1):
        rep = [json.load(open(os.path.join(out, f"{n}-{r}-{i}.json"))) for i in range(int(n))]
        rows += rep
        slowest.append(max(x["zeroed_ms"] for x in rep))
    ctx = [x["context_ms"] for x in rows]; zer = [x["zeroed_ms"] for x in rows]
    errs = sum(1 for x in rows if x["error"])
    print(f"{n} | {statistics.median(ctx):.0f} ({min(ctx):.0f}-{max(ctx):.0f}) | {statistics.median(zer):.0f} ({min(zer):.0f}-{max(zer):.0f}) | {statistics.median(slowest):.0f} | {errs}")
PY
rm -rf "$out"
