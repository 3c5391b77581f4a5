#!/usr/bin/env bash
# The README's main command: installs everything, builds, and runs the demo on the embedded
# default: a local Slurm cluster with simulated H100s and AMD MI300Xs replaying a mixed
# training/inference workload while the GPU layouts change (demo/run_demo.sh). Needs root (it
# starts slurmd and mounts the fake amdgpu driver's FUSE filesystem).
set -euo pipefail
cd "$(dirname "$0")/.."
# Its policy and viz files are read as a node reads them: not writable by group or others.
umask 022

bash scripts/install-deps.sh
build=${VGPU_DEMO_BUILD_DIR:-build/release}
# VGPU_SCRUB=AUTO: the demo's partitions do not require a scrub (its GPUs are fakes), so it runs
# with or without nvcc (docs/build-options.md).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVGPU_BUILD_TESTS=OFF \
  -DVGPU_BUILD_BENCHMARKS=OFF -DVGPU_BUILD_SLURM_PLUGIN=ON -DVGPU_SCRUB=AUTO >/dev/null
cmake --build "$build" -j "$(nproc)" --target gres_vgpu vgpuctl vgpu-prolog vgpu-epilog vgpu-planner fakenvml \
  vgpu-fake-amdgpu
VP_BIN=$PWD/$build exec bash demo/run_demo.sh "$@"
