#!/usr/bin/env bash
# NVML's cost to a hook on a real node: nvml_init_cost.c (load libnvidia-ml, nvmlInit_v2, read the
# GPUs, nvmlShutdown) in RUNS fresh processes, one after another, as slurmd runs one prolog or
# epilog per job. Prints each phase's median, p95 and range in milliseconds (cpu: the process's
# user + system time; handle .. mig_mode: the read phase's calls, summed over the GPUs), the GPU, its driver
# and whether persistence mode is on (read, never changed: without it the driver tears the GPU's
# state down when the last client leaves, and each nvmlInit_v2 pays for setting it up again).
# Read-only: changes nothing on the GPU.
#   bash benchmarks/nvml/nvml_init_cost.sh [RUNS=50] [OUTDIR]   # also writes OUTDIR/nvml_init_cost.txt
set -eu
here=$(cd "$(dirname "$0")" && pwd)
runs=${1:-50}
out=${2:-${OUT:-/tmp/nvml-init-cost}}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# NVML_COST_CFLAGS: the smoke test builds it with the sanitizers of the fake NVML it loads.
cc -O2 ${NVML_COST_CFLAGS:-} -o "$work/nvml_init_cost" "$here/nvml_init_cost.c" -ldl
{
  echo "command: benchmarks/nvml/nvml_init_cost.sh $runs"
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,persistence_mode,mig.mode.current --format=csv,noheader -i 0)" \
       "(name, driver, persistence mode, MIG mode)"
  echo "cpu: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
  for _ in $(seq "$runs"); do "$work/nvml_init_cost"; done > "$work/runs.txt"
  python3 - "$work/runs.txt" <<'PY'
import statistics, sys
rows = [dict(zip(l.split()[0::2], map(float, l.split()[1::2]))) for l in open(sys.argv[1]) if l.strip()]
print(f"{len(rows)} fresh processes; failures {sum(r['failures'] for r in rows):.0f}; GPUs seen {rows[0]['gpus']:.0f}")
print(f"{'phase':<12} {'median':>9} {'p95':>9} {'min':>9} {'max':>9}  (ms)")
for k in ("load_us", "init_us", "read_us", "shutdown_us", "total_us", "cpu_us",
          "handle_us", "name_us", "uuid_us", "memory_us", "mig_mode_us"):
    v = sorted(r[k] / 1000 for r in rows)
    p95 = v[min(len(v) - 1, int(round(0.95 * (len(v) - 1))))]
    print(f"{k[:-3]:<12} {statistics.median(v):>9.2f} {p95:>9.2f} {v[0]:>9.2f} {v[-1]:>9.2f}")
PY
} | tee "$out/nvml_init_cost.txt"
