#!/bin/bash
# One command for the trace benchmark report: builds the simulator and core benchmarks (Release),
# runs them on every openb trace, and writes benchmarks/results/{REPORT.md,*.json,*.png}.
#   benchmarks/run-trace-report.sh            # full run (10 seeds, 6,212 GPUs)
#   SEEDS=2 benchmarks/run-trace-report.sh    # quicker
# Environment: BUILD_DIR (default build-bench/release), TRACESIM / BENCH_CORE (use these binaries
# instead of building), SEEDS (10), REPLAY_GPUS (cluster size for the queueing replay, 48),
# SWEEP_GPUS (cluster sizes of the replay sweep, 40..58), REPLAY_SEEDS (jittered replays per size, 5),
# START_LATENCY_S (the planners' start latency of the latency sweep, 8).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
traces=$repo/data/openb
out="$repo/benchmarks/results"
build=${BUILD_DIR:-$repo/build-bench/release}
seeds=${SEEDS:-10}
replay_gpus=${REPLAY_GPUS:-48}
sweep_gpus=${SWEEP_GPUS:-"40 42 44 46 48 50 52 54 56 58"}
replay_seeds=${REPLAY_SEEDS:-5}
mkdir -p "$out"

if [[ -z "${TRACESIM:-}" ]]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVGPU_SCRUB=AUTO >/dev/null
  cmake --build "$build" --target vgpu-tracesim vgpu_bench_core -j2 >/dev/null
  TRACESIM=$build/benchmarks/vgpu-tracesim
  BENCH_CORE=$build/benchmarks/vgpu_bench_core
fi

commands=()
run() {  # run <output.json> <args...>: records the exact command for the report
  local dest=$1
  shift
  commands+=("vgpu-tracesim $* --json > results/$(basename "$dest")")
  "$TRACESIM" "$@" --json >"$dest"
}
# FGD's experiment: the real 1,213 nodes (each GPU an H100-80GB), host CPU and memory, 1.3x tuning;
# FGD's and BestFit's own choices run in this twin first, to check it against their published numbers;
# then FGD's choice with dedicated instances, what a per-job choice would be worth for those.
arrival_policies=fgd-twin,bestfit-twin,fgd-mig,whole,static,firstfit,planner,shared,planner+weights,shared+weights
arrival_policies+=,planner+prefer,shared+prefer,planner+fill,shared+fill,planner+prefer+fill,shared+prefer+fill
for t in default gpushare40 multigpu20; do
  run "$out/$t.json" --trace "$traces/openb_pod_list_$t.csv" --nodes "$traces/openb_node_list_gpu_node.csv" \
    --published "$traces/fgd_published.csv" --seeds "$seeds" --policy "$arrival_policies"
done
# The openb tasks are short and sparse next to 6,212 GPUs, so nothing queues there; a small uniform
# cluster replays the same arrivals under contention to compare waiting.
run "$out/replay-$replay_gpus.json" --trace "$traces/openb_pod_list_default.csv" --seeds "$seeds" \
  --gpus "$replay_gpus"
# One cluster size flatters whichever policy happens to fit it: the replay over a sweep of sizes,
# each with jittered arrivals (waits with spread over seeds).
for g in $sweep_gpus; do
  run "$out/sweep-$g.json" --trace "$traces/openb_pod_list_default.csv" --seeds 1 --gpus "$g" \
    --replay-seeds "$replay_seeds" --util-buckets 1
done
# The same sweep with reservations for wide tasks, after the publisher's default wait.
for g in $sweep_gpus; do
  run "$out/sweep-reserved-$g.json" --trace "$traces/openb_pod_list_default.csv" --seeds 1 --gpus "$g" \
    --replay-seeds "$replay_seeds" --util-buckets 1 --reserve-after-s 600
done
# The same sweep with each start of a policy that reshapes nodes coming START_LATENCY_S (8) after
# its placement (a planner period of 5 s, Slurm taking the split, the instance's creation: 1.5 s
# on an H100), unless a slot an ended task left (the sticky plan) or an empty GPU's whole-GPU
# instance serves it. Other idle layouts and prepared slots are not modelled, so this charges more
# than production: an upper bound, beside the sweep above as the lower one.
start_latency_s=${START_LATENCY_S:-8}
for g in $sweep_gpus; do
  run "$out/sweep-latency-$g.json" --trace "$traces/openb_pod_list_default.csv" --seeds 1 --gpus "$g" \
    --replay-seeds "$replay_seeds" --util-buckets 1 --start-latency-s "$start_latency_s" \
    --latency-only-for-new-slots
done

if [[ -n "${BENCH_CORE:-}" && -x "${BENCH_CORE}" ]]; then
  "$BENCH_CORE" --benchmark_min_time=0.2 >"$out/bench_core.txt" 2>/dev/null
  commands+=("vgpu_bench_core --benchmark_min_time=0.2 > results/bench_core.txt")
fi

{
  echo "host: $(hostname)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') x $(nproc)"
  echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "os: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
  echo "compiler: $(c++ --version | head -1)"
  echo "commit: $(git -C "$repo" rev-parse --short HEAD)"
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
} >"$out/machine.txt"
printf '%s\n' "${commands[@]}" >"$out/commands.txt"

/usr/bin/python3 "$repo/benchmarks/plot_trace_report.py" "$out" "$replay_gpus" "$sweep_gpus"
echo "wrote $out/REPORT.md"
