#!/usr/bin/env bash
# The node's MPS adapter (vgpu-mps over nodeagent/adapters/mps_control.cpp, the code the prolog and
# epilog use for a shared instance) against the real nvidia-cuda-mps-control on a real GPU: it
# opens a daemon for the whole GPU 0 as one 7g.80gb instance of 4 shares, clients check what they
# get (benchmarks/mps/mps_probe.cu), a second Linux user tries the daemon, and the adapter closes it.
# Changes nothing on the GPU (no MIG mode, compute mode, clocks or persistence); the daemon lives in
# a private directory and is quit before the script ends.
#   bash benchmarks/mps/h100_mps_adapter.sh PATH_TO_vgpu-mps [OUTDIR]   # writes OUTDIR/mps_adapter.txt
set -u
here=$(cd "$(dirname "$0")" && pwd)
vgpu_mps=${1:?usage: h100_mps_adapter.sh PATH_TO_vgpu-mps [OUTDIR]}
out=${2:-${OUT:-/tmp/mps-adapter}}
mkdir -p "$out"
work=$(mktemp -d)
chmod 755 "$work"  # the second user's client must reach the pipe directory below it
root=$work/mps
nvcc -O2 -arch=sm_90 -o "$work/probe" "$here/mps_probe.cu" || exit 1
chmod 755 "$work/probe"
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i 0 | tr -d ' ')
pipe=$root/$uuid/pipe
ctl() { echo "$*" | CUDA_MPS_PIPE_DIRECTORY=$pipe timeout 10 nvidia-cuda-mps-control 2>&1; }
trap '"$vgpu_mps" --root "$root" close --device "$uuid" >/dev/null 2>&1; ctl quit >/dev/null 2>&1; rm -rf "$work"' EXIT
probe() { timeout 60 "$work/probe" "$@"; }
daemon_pid() { cat "$pipe/nvidia-cuda-mps-control.pid" 2>/dev/null; }
user=vgpushare
as_user() {
  if command -v setpriv >/dev/null; then setpriv --reuid="$user" --regid="$user" --clear-groups "$@"
  else runuser -u "$user" -- "$@"; fi
}

{
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,compute_mode,mig.mode.current --format=csv,noheader) $uuid"
  echo "# 1. open through the adapter: the whole GPU as one 7g.80gb instance of 4 shares"
  "$vgpu_mps" --root "$root" open --device "$uuid" --model H100-80GB --profile 7g.80gb --shares 4 || exit 1
  echo "daemon pid $(daemon_pid); defaults: $(ctl get_default_active_thread_percentage) %"
  echo "directories:"; ls -la "$root/$uuid" "$pipe" | sed 's/^/  /'
  echo "# A. a client with nothing of its own: 16 GiB fits its 20288 MiB share, 24 GiB must not"
  CUDA_MPS_PIPE_DIRECTORY=$pipe probe --label A-16g --alloc-gib 16
  CUDA_MPS_PIPE_DIRECTORY=$pipe probe --label A-24g --alloc-gib 24
  echo "# B. a client that asks for more through its environment"
  CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=70G \
    probe --label B-raise --alloc-gib 24
  echo "# C. a client without the pipe directory (the default /tmp/nvidia-mps has no daemon): no MPS"
  env -u CUDA_MPS_PIPE_DIRECTORY timeout 60 "$work/probe" --label C-unset --alloc-gib 24
  echo "servers: $(ctl get_server_list | tr '\n' ' ')"

  echo "# U. a second Linux user against the same daemon"
  if id "$user" >/dev/null 2>&1 || useradd -M -s /usr/sbin/nologin "$user" 2>/dev/null; then
    echo "uid $(id -u "$user"); /dev/nvidia0: $(stat -c '%A' /dev/nvidia0 2>/dev/null)"
    echo "control socket and pipes: $(cd "$pipe" && stat -c '%n %A %U' * | tr '\n' ';')"
    echo "U-client (root's server has no client left, so the daemon may replace it):"
    as_user env CUDA_MPS_PIPE_DIRECTORY="$pipe" timeout 60 "$work/probe" --label U-client --alloc-gib 24
    echo "servers: $(ctl get_server_list | tr '\n' ' ')"
    for command in get_server_list "set_default_active_thread_percentage 100" \
      "set_default_device_pinned_mem_limit 0 70G"; do
      reply=$(echo "$command" | as_user env CUDA_MPS_PIPE_DIRECTORY="$pipe" timeout 10 nvidia-cuda-mps-control 2>&1)
      echo "U-control \"$command\": exit $? reply \"$(tr '\n' ' ' <<<"$reply")\""
    done
    echo "after the user's commands, as root: default percentage $(ctl get_default_active_thread_percentage)"
    echo "U-client-2 (a new client of the user after those commands):"
    as_user env CUDA_MPS_PIPE_DIRECTORY="$pipe" timeout 60 "$work/probe" --label U-client-2 --alloc-gib 24
    reply=$(echo quit | as_user env CUDA_MPS_PIPE_DIRECTORY="$pipe" timeout 10 nvidia-cuda-mps-control 2>&1)
    echo "U-control \"quit\": exit $? reply \"$(tr '\n' ' ' <<<"$reply")\"; daemon $(daemon_pid) $(kill -0 "$(daemon_pid)" 2>/dev/null && echo runs || echo is gone)"
  else
    echo "no second user could be made here: skipped"
  fi

  echo "# 2. close through the adapter"
  "$vgpu_mps" --root "$root" close --device "$uuid"
  echo "left under the root: $(ls -A "$root" | tr '\n' ' ')"
  echo "MPS processes left: $(pgrep -a -f nvidia-cuda-mps | grep -v pgrep || echo none)"

  echo "# 3. open + close, 5 times (no client)"
  for i in 1 2 3 4 5; do
    "$vgpu_mps" --root "$root" open --device "$uuid" --model H100-80GB --profile 7g.80gb --shares 4 | head -1
    "$vgpu_mps" --root "$root" close --device "$uuid"
  done
  echo "MPS processes left: $(pgrep -a -f nvidia-cuda-mps | grep -v pgrep || echo none)"
} 2>&1 | tee "$out/mps_adapter.txt"
