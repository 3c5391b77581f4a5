#!/usr/bin/env bash
# What a GPU node's NVML and driver answer, query only, in the files docs/hardware/<model>/ keeps:
# the probe's report (also a fake-NVML fixture), `nvidia-smi mig -lgip/-lgipp`, `nvidia-smi -q -x`,
# and the runtime the machine is (kernel, virtualisation, device-file owners and modes, MIG mode,
# topology). Changes nothing: no MIG mode, compute mode, clock, power or persistence setting, no
# instance, no reset. Mask the GPU's UUID and serial before committing the files.
#   tools/nvml-probe/capture-gpu.sh PROBE OUT_DIR     (docs/hardware/h200/README.md has a run)
set -uo pipefail
probe=${1:?usage: capture-gpu.sh PROBE OUT_DIR}
out=${2:?usage: capture-gpu.sh PROBE OUT_DIR}
mkdir -p "$out"
{
  echo "date: $(date -u +%FT%TZ)"; uname -a; cat /proc/version
  echo "--- virt"; systemd-detect-virt 2>&1 || true; dmesg 2>&1 | head -5
  echo "--- /proc/1/cgroup"; head -5 /proc/1/cgroup
  echo "--- os"; head -3 /etc/os-release
  echo "--- devices"; ls -la /dev/nvidia* 2>&1
  echo "--- tools"; command -v nvidia-cuda-mps-control nvidia-smi nvidia-modprobe 2>&1
  echo "--- users"; command -v useradd runuser setpriv 2>&1; id nobody 2>&1
  echo "--- mig mode"
  nvidia-smi --query-gpu=name,pci.bus_id,driver_version,mig.mode.current,mig.mode.pending,memory.total \
    --format=csv 2>&1
  echo "--- topo"; nvidia-smi topo -m 2>&1
  echo "--- nvlink"; nvidia-smi nvlink -s 2>&1 | head -30
} >"$out/runtime.txt" 2>&1
nvidia-smi mig -lgip >"$out/lgip.txt" 2>&1
nvidia-smi mig -lgipp >"$out/lgipp.txt" 2>&1
nvidia-smi -q -x >"$out/nvidia-smi-q.xml" 2>&1
"$probe" --gpm-seconds 1 -o "$out/probe.json"
echo "capture-gpu: probe rc=$?; files in $out"
