#!/usr/bin/env bash
# A GPU whose MIG mode is off takes no MIG plan. The case a new user met: the real H100 capture
# (MIG disabled) through the fake NVML, the shipped examples/policy.json, node gpu17 of partition
# infer, no demand, one round. The planner advertised 1g.10gb:3 2g.20gb:2 and failed to prepare
# them (nvmlDeviceCreateGpuInstanceWithPlacement: Not Supported); Slurm would have started jobs
# whose prologs could create nothing.
# Then the same GPU where the partition says "mig_mode": "partitioned": the round turns MIG on
# (the fake applies the driver's rules, fakenvml/src/mig_mode.h) and plans the idle layout.
#   planner_skips_gpus_with_mig_off.sh <vgpu-planner> <fake libnvidia-ml.so.1> <source dir>
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
    VGPU_POLICY="$dir/policy.json" VGPU_NODENAME=gpu17 VGPU_STATE_DIR="$dir/state$1" "$planner" --once 2>&1
}
round() {  # <state-suffix> <what>: one round into $log, which is printed; a failed round fails the test
  log=$(one_round "$1")
  local rc=$?
  echo "$log"
  [ "$rc" = 0 ] || { echo "FAIL: vgpu-planner --once exited $rc$2"; exit 1; }
}
round "" ""
echo "$log" | grep -q "GPU 0 (H100-80GB): MIG mode disabled (pending disabled): no MIG instance is planned on it" ||
  { echo "FAIL: the round did not say why GPU 0 is not planned"; exit 1; }
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
echo "$log" | grep -q "no MIG instance is planned on it" && { echo "FAIL: GPU 0 still left out after the switch"; exit 1; }
echo "$log" | grep -q "advertised 1g.10gb:3 2g.20gb:2" ||
  { echo "FAIL: the idle layout was not advertised once MIG was on"; exit 1; }
echo "PASS: nothing planned on a GPU with MIG off; with mig_mode partitioned it is switched and planned"
