#!/usr/bin/env bash
# What CUDA MPS enforces on a real GPU, and what a client can get around: the facts the shared
# instances' design rests on (docs/shared-instances.md). Runs one private MPS control daemon
# (its own pipe and log directories) on GPU 0, quits it before it exits, and changes nothing else
# (no MIG mode, compute mode, clocks or persistence). Needs nvcc and the driver's MPS binaries.
#   bash benchmarks/mps/h100_mps_limits.sh [OUTDIR]     # writes OUTDIR/mps_facts.txt
# Each probe line is one client (benchmarks/mps/mps_probe.cu): SMs and memory its context reports,
# whether a 5 GiB (or 3 GiB) allocation succeeded, and for the fault case what a second client of
# the same server saw.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${OUT:-/tmp/mps-limits}}
mkdir -p "$out"
work=$(mktemp -d)
nvcc -O2 -arch=sm_90 -o "$work/probe" "$here/mps_probe.cu" || exit 1
export CUDA_MPS_PIPE_DIRECTORY=$work/pipe CUDA_MPS_LOG_DIRECTORY=$work/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY" "$work/elsewhere"
ctl() { echo "$*" | nvidia-cuda-mps-control; }
trap 'ctl quit >/dev/null 2>&1; sleep 1; rm -rf "$work"' EXIT
probe() { "$work/probe" "$@"; }
now() { date +%s.%N; }

{
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,compute_mode,mig.mode.current --format=csv,noheader)"
  echo "# 0. no MPS (no daemon at the client's pipe directory)"
  CUDA_MPS_PIPE_DIRECTORY=$work/elsewhere probe --label no-mps --alloc-gib 5

  echo "# 1. a private control daemon with server-side defaults set before any client"
  t0=$(now); nvidia-cuda-mps-control -d; echo "daemon started in $(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.3f", a - b }') s"
  echo "set_default_active_thread_percentage 25 -> $(ctl set_default_active_thread_percentage 25)"
  echo "set_default_device_pinned_mem_limit 0 4G -> $(ctl set_default_device_pinned_mem_limit 0 4G)"
  echo "# A. a client with no MPS variables of its own"
  probe --label A-defaults --alloc-gib 5
  probe --label A-defaults-3g --alloc-gib 3
  echo "servers: $(ctl get_server_list | tr '\n' ' ')"
  echo "# B. a client that asks for more through its environment"
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=70G probe --label B-env-raise --alloc-gib 5
  echo "# B2. a client that asks for less"
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=10 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2G probe --label B-env-lower --alloc-gib 3
  echo "# F. two clients at once, 3 GiB each under the 4G default: is the cap per client or per server?"
  probe --label F-first --alloc-gib 3 --spin-s 3 &
  first=$!
  sleep 1
  probe --label F-second --alloc-gib 3
  wait $first
  echo "# C. a client pointed at another pipe directory while the server runs (no MPS for it)"
  CUDA_MPS_PIPE_DIRECTORY=$work/elsewhere probe --label C-other-pipe --alloc-gib 5
  echo "# E. the running server's own limit changed through the control daemon"
  server=$(ctl get_server_list | head -1)
  echo "set_active_thread_percentage $server 50 -> $(ctl set_active_thread_percentage "$server" 50)"
  probe --label E-server-50
  echo "# D. a fatal fault in one client while another client of the same server runs kernels"
  probe --label D-victim --spin-s 6 &
  victim=$!
  sleep 1
  probe --label D-attacker --fault-after-s 1
  wait $victim
  echo "servers after the fault: $(ctl get_server_list | tr '\n' ' ')"
  probe --label D-after --alloc-gib 1
  echo "# quit"
  t0=$(now); ctl quit; echo "quit in $(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.3f", a - b }') s"
  sleep 1
  echo "log (control.log, last lines):"; tail -15 "$CUDA_MPS_LOG_DIRECTORY/control.log" 2>/dev/null
  echo "log (server.log, last lines):"; tail -15 "$CUDA_MPS_LOG_DIRECTORY/server.log" 2>/dev/null
} 2>&1 | tee "$out/mps_facts.txt"
