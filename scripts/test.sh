#!/usr/bin/env bash
# The README's test command (CI runs exactly this through .ci/run).
# Installs every dependency, builds the whole tree with ASan+UBSan and -Werror and runs every
# test: unit, property, exhaustive, fake-NVML, and the real Slurm / libvirt integration suites.
# Slurm releases: Debian 12's 22.05 in full; Debian 13's 24.11 built from its Debian source, and,
# with ../shared/slurm present, 25.11 and 26.05 built from theirs (each cached outside the clone,
# built once), each running the cluster suite and an e2e smoke against its own daemons; the newest
# two also a mixed-version upgrade. What is skipped is said, with why.
# scripts/test-releases.sh runs 24.11, 25.11 and 26.05 in depth (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's python3, which install-deps.sh installs the modules for, before any other on PATH (a
# pyenv shim costs 0.5-1 s a start, and the integration tests start python3 hundreds of times).
export PATH=/usr/bin:$PATH
# Files the harness writes (policies, viz configurations) are read as a node reads them, refused
# when group or others may write them (contract/guarded_read.h): whatever the caller's umask.
umask 022
t0=$(date +%s)
step() { echo "test: $* ($(( $(date +%s) - t0 )) s so far)"; }

bash scripts/install-deps.sh
step "dependencies installed"

# Every compile goes through ccache, its cache outside the clone as the Slurm builds' is, so a
# repeated run from a clone at the same path rebuilds only what changed, even after the build
# directory is gone. Not across paths: tests find the tree through absolute paths compiled in
# (VGPU_SOURCE_DIR and the like), which ccache's base_dir would turn into relative ones.
# CMake takes the launchers from the environment for every build below.
export CCACHE_DIR=${CCACHE_DIR:-/var/cache/slurm-vgpu/ccache}
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
mkdir -p "$CCACHE_DIR"
ccache --max-size=8G >/dev/null
ccache --zero-stats >/dev/null

releases=()
if d=$(bash scripts/build-slurm.sh debian:trixie); then
  releases+=("$d")
else
  echo "test: SKIPPED Slurm 24.11 (Debian 13: its daemons, gres_vgpu.so, the cluster suite and the e2e" \
       "smoke): its source could not be fetched from the Debian mirror"
fi
shared=../shared/slurm
latest() { ls "$shared"/slurm-"$1".*.tar.gz 2>/dev/null | sort -V | tail -1; }
for release in 25.11 26.05; do
  if [ -n "$(latest $release)" ]; then
    releases+=("$(bash scripts/build-slurm.sh "$(latest $release)")")
  else
    echo "test: SKIPPED Slurm $release (its daemons, gres_vgpu.so, the cluster suite and the e2e smoke):" \
         "no slurm-$release.*.tar.gz in ../shared/slurm beside this clone. Debian's 22.05 is tested in full."
  fi
done
step "Slurm releases prepared: $(for r in "${releases[@]}"; do printf '%s ' "$(cat "$r/VERSION")"; done)"

build=${VGPU_TEST_BUILD_DIR:-build/asan}
# VGPU_SCRUB=AUTO: vgpu-scrub (and scrub_on_gpu) where nvcc is, a warning where it is not (a fresh
# Debian 12 has none); the tests run their partitions with "scrub": "optional" (docs/build-options.md).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVGPU_SCRUB=AUTO \
  -DVGPU_SANITIZE=ON -DVGPU_WERROR=ON -DVGPU_BUILD_SLURM_PLUGIN=ON -DCMAKE_INSTALL_PREFIX=/usr \
  -DVGPU_RELEASE_E2E=smoke "-DVGPU_SLURM_RELEASES=$(IFS=';'; echo "${releases[*]}")" ${VGPU_CMAKE_ARGS:-}
cmake --build "$build" -j "$(nproc)"
step "built ($(ccache --print-stats 2>/dev/null | awk -F'\t' '$1=="direct_cache_hit"||$1=="preprocessed_cache_hit"{h+=$2} $1=="cache_miss"{m=$2} END{printf "ccache: %d hits, %d misses", h, m}'))"
bash scripts/check-style.sh "$build"  # .clang-format over the tree, .clang-tidy over the node side
step "style checked"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if ! bash vizfrontend/guest/desktop/build-desktop-image.sh --status >/dev/null; then
  echo "test: SKIPPED the desktop viz image end to end (Xfce and PyMOL in Chromium): its package layer" \
       "is not cached here, and building it takes about 5 minutes and 2.8 GB. Build it once with" \
       "vizfrontend/guest/desktop/build-desktop-image.sh, or set VGPU_VIZ_BUILD_DESKTOP=1."
fi
# One test more than cores: two test clusters at most run side by side (their lanes,
# cmake/Testing.cmake), and they leave a core's worth of waiting that a unit test fills.
ctest --test-dir "$build" --output-on-failure -j "$(( $(nproc) + 1 ))" ${VGPU_CTEST_ARGS:-}
step "ctest passed"
bash scripts/fuzz.sh --short  # libFuzzer: own clang build (build/fuzz), replay + 8 s per target
step "fuzz replay passed"
bash scripts/test-tsan.sh  # ThreadSanitizer over the concurrent parts (docs/security.md)
step "TSan tests passed; all done"
