#!/usr/bin/env bash
# The whole-GPU GPM path on a real Hopper GPU, query only: vgpu-nvml-probe samples GPM over
# --gpm-seconds while the GPU is idle, then while a bf16 matrix-multiply loop (PyTorch) keeps it
# busy, with nvidia-smi's utilisation beside it for comparison. Changes nothing on the GPU: no MIG
# mode, compute mode, clock, power or persistence setting; no instance is created.
#   tools/nvml-probe/h100-gpm-check.sh PROBE OUT_DIR     (docs/hardware/h100/README.md has a run)
set -uo pipefail
probe=${1:?usage: h100-gpm-check.sh PROBE OUT_DIR}
out=${2:?usage: h100-gpm-check.sh PROBE OUT_DIR}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,mig.mode.current,compute_mode,utilization.gpu,memory.used \
  --format=csv | tee "$out/nvidia-smi-before.csv"
summary() { # $1 label, $2 probe JSON
  python3 - "$1" "$2" <<'PY'
import json, sys
label, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
for g in d["gpus"]:
    gpm = g.get("gpm", {})
    for r in gpm.get("readings", []):
        print(f"{label}: gpu {g['index']} {g['name']} MIG {g['mig_mode']['current']}: over {gpm['interval_s']:.2f} s "
              f"sm_utilization={r['sm_utilization']} dram_bandwidth_utilization={r['dram_bandwidth_utilization']} "
              f"memory {r['memory_used_mib']}/{r['memory_total_mib']} MiB")
print(f"{label}: probe errors {d['probe']['errors']}")
PY
}
"$probe" --gpm-seconds 2 -o "$out/probe-idle.json" && summary idle "$out/probe-idle.json"

python3 - > "$out/load.log" 2>&1 <<'PY' &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn_like(a)
end = time.time() + 14
n = 0
while time.time() < end:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
    n += 20
print(f"load: {n} bf16 8192^3 products in 14 s")
PY
load=$!
sleep 5  # past the load's start-up (CUDA context, first kernels)
"$probe" --gpm-seconds 3 -o "$out/probe-busy.json" && summary busy "$out/probe-busy.json"
nvidia-smi --query-gpu=utilization.gpu,utilization.memory,memory.used --format=csv | tee "$out/nvidia-smi-busy.csv"
wait "$load"; cat "$out/load.log"
