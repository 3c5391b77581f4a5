#!/usr/bin/env bash
# A GPU whose MIG mode is off takes no MIG plan. The case a new user met: the real H100 capture
# (MIG disabled) through the fake NVML, the shipped examples/policy.json, node gpu17 of partition
# infer, no demand, one round. The planner advertised 1g.10gb:3 2g.20gb:2 and failed to prepare
# them (nvmlDeviceCreateGpuInstanceWithPlacement: Not Supported); Slurm would have started jobs
# whose prologs could create nothing.
#   planner_skips_gpus_with_mig_off.sh <vgpu-planner> <fake libnvidia-ml.so.1> <source dir>
set -u
planner=$1 fake=$2 src=$3
dir=$(mktemp -d /tmp/vgpu-migoff-XXXXXX)
trap 'rm -rf "$dir"' EXIT
: >"$dir/demand.txt"
install -m 0644 "$src/examples/policy.json" "$dir/policy.json"
chmod 0644 "$dir/demand.txt"
log=$(env VGPU_DEMAND_FILE="$dir/demand.txt" VGPU_NVML_LIBRARY="$fake" \
  VGPU_FAKE_NVML_FIXTURE="$src/fakenvml/fixtures/h100-80gb-capture.json" VGPU_FAKE_NVML_STATE="$dir/nvml.json" \
  VGPU_POLICY="$dir/policy.json" VGPU_NODENAME=gpu17 VGPU_STATE_DIR="$dir/state" "$planner" --once 2>&1)
rc=$?
echo "$log"
[ "$rc" = 0 ] || { echo "FAIL: vgpu-planner --once exited $rc"; exit 1; }
echo "$log" | grep -q "GPU 0 (H100-80GB): MIG mode disabled (pending disabled): no MIG instance is planned on it" ||
  { echo "FAIL: the round did not say why GPU 0 is not planned"; exit 1; }
echo "$log" | grep -q "advertised nothing" || { echo "FAIL: MIG instances advertised on a GPU with MIG off"; exit 1; }
if echo "$log" | grep -q "preparing"; then echo "FAIL: the round tried to prepare an instance"; exit 1; fi
echo "PASS: nothing planned, advertised or prepared on a GPU with MIG off"
