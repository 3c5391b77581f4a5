#!/usr/bin/env bash
# Builds the Debian packages a site installs (docs/admin.md): a Release build of the whole tree
# with the plugin for one Slurm release, then cpack. Prints the .deb files on stdout.
#   scripts/package.sh                                        # for the Slurm installed from Debian
#   VGPU_SLURM_SRC=<src> VGPU_SLURM_LIBDIR=<libdir> VGPU_DEB_SLURM_PACKAGE= scripts/package.sh
#                                                             # for a Slurm built from source
#   VGPU_CMAKE_ARGS="-DVGPU_SCRUB=OFF" scripts/package.sh     # a node package without vgpu-scrub
#                                                             # (no CUDA here; its partitions then
#                                                             # need "scrub": "optional")
# A site build (docs/build-options.md): no tests, benchmarks or fake GPUs. vgpu-scrub is built as
# a plain cmake builds it (VGPU_SCRUB=ON): without a CUDA toolkit the configure fails and says how
# to go on, rather than making a package whose nodes quarantine every instance they release.
# Environment: BUILD_DIR (default build/package), OUT (default build/package/debs),
# VGPU_CMAKE_ARGS (more cmake options, e.g. -DVGPU_SCRUB=OFF or -DVGPU_VIZ=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build/package}
out=${OUT:-$build/debs}
args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DVGPU_BUILD_SLURM_PLUGIN=ON
      -DVGPU_BUILD_TESTS=OFF -DVGPU_BUILD_BENCHMARKS=OFF -DVGPU_FAKES=OFF)
[ -n "${VGPU_SLURM_SRC:-}" ] && args+=("-DVGPU_SLURM_SRC=$VGPU_SLURM_SRC" "-DVGPU_SLURM_LIBDIR=${VGPU_SLURM_LIBDIR:?set with VGPU_SLURM_SRC}")
[ -n "${VGPU_DEB_SLURM_PACKAGE+set}" ] && args+=("-DVGPU_DEB_SLURM_PACKAGE=$VGPU_DEB_SLURM_PACKAGE")
# shellcheck disable=SC2206  # VGPU_CMAKE_ARGS is a list of words, as in scripts/test.sh
args+=(${VGPU_CMAKE_ARGS:-})
cmake -S . -B "$build" -G Ninja "${args[@]}" >&2
cmake --build "$build" -j "$(nproc)" >&2
mkdir -p "$out"
out=$(cd "$out" && pwd)
(cd "$build" && cpack -G DEB -B "$out" >&2)
ls "$out"/*.deb
