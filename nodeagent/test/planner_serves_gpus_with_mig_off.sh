#!/usr/bin/env bash
# A GPU whose MIG mode is off takes no MIG plan and is served whole where a partition offers it.
# The case a new user met: the real H100 capture (MIG disabled) through the fake NVML, the
# shipped examples/policy.json, node gpu17 of partition infer, no demand, one round. The planner advertised 1g.10gb:3 2g.20gb:2 and failed to prepare
# them (nvmlDeviceCreateGpuInstanceWithPlacement: Not Supported); Slurm would have started jobs
# whose prologs could create nothing.
# Then the same GPU where the partition says "mig_mode": "partitioned": the round turns MIG on
# (the fake applies the driver's rules, fakenvml/src/mig_mode.h) and plans the idle layout.
# Then, MIG left off, a partition that offers whole.80gb: the GPU is offered whole and its device
# file is locked to root until a job holds it, on a driver that leaves device files alone
# (ModifyDeviceFiles: 0); on one that resets them (1, the driver's default) none is offered.
#   planner_serves_gpus_with_mig_off.sh <vgpu-planner> <fake libnvidia-ml.so.1> <source dir>
set -u
planner=$1 fake=$2 src=$3
dir=$(mktemp -d /tmp/vgpu-migoff-XXXXXX)
trap 'rm -rf "$dir"' EXIT
: >"$dir/demand.txt"
install -m 0644 "$src/examples/policy.json" "$dir/policy.json"
chmod 0644 "$dir/demand.txt"
one_round() {  # <state-suffix>
  env VGPU_DEMAND_FILE="$dir/demand.txt" VGPU_NVML_LIBRARY="$fake" \
    VGPU_FAKE_NVML_FIXTURE="$src/fakenvml/fixtures/h100-80gb-capture.json" VGPU_FAKE_NVML_STATE="$dir/nvml$1.json" \
    VGPU_POLICY="$dir/policy.json" VGPU_NODENAME=gpu17 VGPU_CLUSTER_VIEW=slurmctld VGPU_STATE_DIR="$dir/state$1" "$planner" --once 2>&1
}
round() {  # <state-suffix> <what>: one round into $log, which is printed; a failed round fails the test
  log=$(one_round "$1")
  local rc=$?
  echo "$log"
  [ "$rc" = 0 ] || { echo "FAIL: vgpu-planner --once exited $rc$2"; exit 1; }
}
round "" ""
echo "$log" | grep -q "GPU 0 (H100-80GB): MIG mode disabled (pending disabled): planned whole, as whole.80gb, where" ||
  { echo "FAIL: the round did not say why GPU 0 is not planned as MIG"; exit 1; }
echo "$log" | grep -q "advertised nothing" || { echo "FAIL: MIG instances advertised on a GPU with MIG off"; exit 1; }
if echo "$log" | grep -q "preparing"; then echo "FAIL: the round tried to prepare an instance"; exit 1; fi
if echo "$log" | grep -q "MIG mode on"; then echo "FAIL: mig_mode as_found switched a GPU"; exit 1; fi

python3 - "$dir/policy.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["partitions"]["infer"]["mig_mode"] = "partitioned"
json.dump(doc, open(sys.argv[1], "w"), indent=2)
PY
round "-partitioned" " with mig_mode partitioned"
echo "$log" | grep -q "GPU 0: MIG mode on, as the policy's mig_mode partitioned asks: activated" ||
  { echo "FAIL: the round did not turn MIG on for GPU 0"; exit 1; }
echo "$log" | grep -q "MIG mode disabled" && { echo "FAIL: GPU 0 still seen with MIG off after the switch"; exit 1; }
echo "$log" | grep -q "advertised 1g.10gb:3 2g.20gb:2" ||
  { echo "FAIL: the idle layout was not advertised once MIG was on"; exit 1; }

# Whole: a private driver tree, its params as the driver prints them (DeviceFileMode in decimal).
devroot="$dir/devroot"
mkdir -p "$devroot/proc/driver/nvidia" "$devroot/proc/driver/nvidia-caps" "$devroot/dev"
cp "$src/fakenvml/fixtures/mig-minors-8gpu.txt" "$devroot/proc/driver/nvidia-caps/mig-minors"
params() { printf 'ModifyDeviceFiles: %s\nDeviceFileUID: 0\nDeviceFileGID: 0\nDeviceFileMode: 438\n' "$1" \
  >"$devroot/proc/driver/nvidia/params"; }
python3 - "$dir/policy.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
infer = doc["partitions"]["infer"]
infer["mig_mode"] = "as_found"
infer["profiles"].append("whole.80gb")
json.dump(doc, open(sys.argv[1], "w"), indent=2)
PY
whole_round() {  # <state-suffix> <what>
  export VGPU_DEVICE_ROOT="$devroot" VGPU_FAKE_NVML_DEVICE_ROOT="$devroot"
  round "$1" "$2"
  unset VGPU_DEVICE_ROOT VGPU_FAKE_NVML_DEVICE_ROOT
}
params 0
whole_round "-whole" " offering whole.80gb"
echo "$log" | grep -q "planned whole, as whole.80gb" || { echo "FAIL: the round did not plan GPU 0 whole"; exit 1; }
echo "$log" | grep -q "advertised whole.80gb:1" || { echo "FAIL: the whole GPU was not advertised"; exit 1; }
[ "$(stat -c '%u %a' "$devroot/dev/nvidia0")" = "0 600" ] ||
  { echo "FAIL: the unheld whole GPU's device file is $(stat -c '%u %a' "$devroot/dev/nvidia0"), not root 600"; exit 1; }
params 1
whole_round "-whole-modify" " on a driver that resets device files"
echo "$log" | grep -q "no whole GPU is offered: .*ModifyDeviceFiles: 1" ||
  { echo "FAIL: the round did not say why no whole GPU is offered"; exit 1; }
echo "$log" | grep -q "advertised nothing" || { echo "FAIL: a whole GPU advertised that cannot be confined"; exit 1; }
echo "PASS: nothing planned on a GPU with MIG off; with mig_mode partitioned it is switched and planned;"
echo "      offered whole where the partition allows it and the driver leaves its device file alone"
