#!/usr/bin/env bash
# The whole-GPU placement on a real multi-GPU node, query only: the probe's capture with its
# topology, the placement's choice for 2 and (with 4 or more GPUs) 4 whole GPUs checked against
# that capture, then NCCL all-reduce on the chosen GPUs with peer to peer on and with
# NCCL_P2P_DISABLE=1 (what a job gets on MIG instances, which have no P2P). Changes nothing: no MIG
# mode, compute mode, clock, power or persistence setting, no instance, no reset. NVLink multicast
# stays off in every process (NVLS, symmetric memory, NVSHMEM).
#   tools/multi-gpu/multi-gpu-check.sh PROBE OUT_DIR     (docs/hardware/ keeps the runs)
set -uo pipefail
probe=${1:?usage: multi-gpu-check.sh PROBE OUT_DIR}
out=${2:?usage: multi-gpu-check.sh PROBE OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
n=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
counts=2
[ "$n" -ge 4 ] && counts="2 4"
nvidia-smi topo -m >"$out/topo-m.txt" 2>&1
"$probe" --gpm-seconds 0 --choose-whole $counts -o "$out/probe.json" || echo "multi-gpu-check: probe failed"
# The choice must be one NVLink domain whenever the capture has such a set of that size.
python3 - "$out/probe.json" >"$out/placement-check.txt" <<'PY'
import itertools, json, sys
d = json.load(open(sys.argv[1]))
n = len(d["gpus"])
ok = {tuple(p["gpus"]) for p in d["topology"]["pairs"] if p["p2p_nvlink"] == "NVML_P2P_STATUS_OK"}
for c in d.get("whole_gpu_choices", []):
    k, got = c["count"], c["gpus"]
    exists = any(all(p in ok for p in itertools.combinations(s, 2)) for s in itertools.combinations(range(n), k))
    if got is None:
        print(f"count {k}: no choice ({n} GPUs): {'PASS' if k > n else 'FAIL'}")
        continue
    linked = all(p in ok for p in itertools.combinations(got, 2))
    verdict = "PASS" if linked or not exists else "FAIL"
    print(f"count {k}: chose {got}, one NVLink domain {linked}, such a set exists {exists}: {verdict}")
PY
cat "$out/placement-check.txt"
chosen=$(python3 -c "import json,sys; c=[x for x in json.load(open(sys.argv[1])).get('whole_gpu_choices',[]) if x['gpus']]; print(','.join(map(str,c[-1]['gpus'])) if c else '0')" "$out/probe.json" 2>/dev/null || echo 0)
echo "multi-gpu-check: all-reduce on GPUs $chosen"
for p2p in 0 1; do
  CUDA_VISIBLE_DEVICES=$chosen NCCL_P2P_DISABLE=$p2p python3 "$here/allreduce_bench.py" 2>"$out/allreduce-nccl-p2p-disable-$p2p.err" |
    tee -a "$out/allreduce.jsonl"
done
echo "multi-gpu-check: done; files in $out"
