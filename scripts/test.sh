#!/usr/bin/env bash
# The README's test command (CI runs exactly this through .ci/run).
# Installs every dependency, builds the whole tree with ASan+UBSan and -Werror, and runs every
# test: unit, property, exhaustive, fake-NVML, and the real Slurm / libvirt integration suites.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
build=${VGPU_TEST_BUILD_DIR:-build/asan}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DVGPU_SANITIZE=ON -DVGPU_WERROR=ON -DVGPU_BUILD_SLURM_PLUGIN=ON ${VGPU_CMAKE_ARGS:-}
cmake --build "$build" -j "$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" ${VGPU_CTEST_ARGS:-}
bash scripts/fuzz.sh --short  # libFuzzer: own clang build (build/fuzz), replay + 15 s per target
bash scripts/test-tsan.sh  # ThreadSanitizer over the concurrent parts (docs/security.md)
