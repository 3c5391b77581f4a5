#!/usr/bin/env bash
# Runs vgpu-scrub's bandwidth benchmark on the GPU in CUDA_VISIBLE_DEVICES (default: device 0) and
# prints the JSON lines plus a summary. Query-only: reads nvidia-smi, changes no clock, power,
# MIG or compute-mode setting; vgpu-scrub uses plain cudaMalloc (never managed memory).
#
#   scrub/h100-bench.sh [BUILD_DIR | PATH_TO_vgpu-scrub]     (default: build/asan)
#   VGPU_BENCH_RUNS=3 VGPU_BENCH_REPS=7 scrub/h100-bench.sh build-locality
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=${1:-$here/../build/asan}
if [[ -x $target && ! -d $target ]]; then scrub=$target; else scrub=$target/scrub/vgpu-scrub; fi
[[ -x $scrub ]] || { echo "h100-bench: no vgpu-scrub at $scrub (build the tree with a CUDA toolkit first)" >&2; exit 2; }
runs=${VGPU_BENCH_RUNS:-3}
reps=${VGPU_BENCH_REPS:-7}

if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version,mig.mode.current,clocks.mem,clocks.max.mem \
    --format=csv 2>/dev/null || true
fi
echo "vgpu-scrub: $scrub  CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>}  runs=$runs reps=$reps"

lines=()
run() {  # run LABEL ARGS...: one vgpu-scrub run; a failure is reported, not fatal to the others
  local label=$1; shift
  local out rc=0
  out=$("$scrub" "$@") || rc=$?
  echo "[$label] exit=$rc $out"
  lines+=("$label	$rc	$out")
}
for ((i = 1; i <= runs; i++)); do run "auto+bench#$i" --bench --reps "$reps"; done
run "method=kernel" --method kernel
run "method=memset" --method memset

status=0
for row in "${lines[@]}"; do rc=$(cut -f2 <<<"$row"); [[ $rc == 0 ]] || status=$rc; done
if command -v python3 >/dev/null; then printf '%s\n' "${lines[@]}" | python3 "$here/bench_summary.py"; fi
exit "$status"
