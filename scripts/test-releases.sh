#!/usr/bin/env bash
# The release matrix: the cluster suite and the e2e subset (tests/CMakeLists.txt, vgpu_release_e2e,
# here with train_and_infer and demand_shift too) against real daemons of every Slurm release we
# support beyond Debian 12's 22.05, which the test command runs in full. The test command itself
# runs 26.05's subset and compiles against 24.11 and 25.11; this script is where 24.11 and 25.11
# run (docs/testing.md, "Slurm releases and time", says what ran where and how long it took).
#
# Usage: scripts/test-releases.sh [RELEASE...]      RELEASE: 24.11, 25.11 or 26.05 (default: all three)
#   24.11 is Debian 13's slurm-wlm (its source from Debian's archive, scripts/build-slurm.sh
#   debian:trixie); 25.11 and 26.05 the newest tarballs of ../shared/slurm, skipped with a plain
#   message where ../shared is not beside the clone. Each release's daemons
#   are built once (about 8 minutes on two cores) and cached in /var/cache/slurm-vgpu.
# Reuses the test command's build directory (VGPU_TEST_BUILD_DIR, default build/asan), adding the
# releases to its configuration; run scripts/test.sh first, or expect a full build.
# Prints one line per release: tests run, failed, minutes. Exit status: 0 when all passed.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/bin:$PATH
umask 022

wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=(24.11 25.11 26.05)
shared=../shared/slurm
latest() { ls "$shared"/slurm-"$1".*.tar.gz 2>/dev/null | sort -V | tail -1 || true; }

# Prints where a release's source comes from, or nothing when it is not here: 25.11 and 26.05
# come only from ../shared/slurm, an optional extra beside the clone.
source_of() {
  case $1 in
    24.11) echo debian:trixie ;;
    25.11 | 26.05) latest "$1" ;;
    *) echo "test-releases: release '$1': expected 24.11, 25.11 or 26.05" >&2; exit 2 ;;
  esac
}

export CCACHE_DIR=${CCACHE_DIR:-/var/cache/slurm-vgpu/ccache}
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
releases=()
ran=()
for r in "${wanted[@]}"; do
  src=$(source_of "$r")
  if [ -z "$src" ]; then
    echo "test-releases: SKIPPED Slurm $r: no slurm-$r.*.tar.gz in $shared (it is not beside this clone)"
    continue
  fi
  releases+=("$(bash scripts/build-slurm.sh "$src")")
  ran+=("$r")
done
if [ ${#ran[@]} -eq 0 ]; then
  echo "test-releases: nothing to run"
  exit 0
fi

build=${VGPU_TEST_BUILD_DIR:-build/asan}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVGPU_SCRUB=AUTO \
  -DVGPU_SANITIZE=ON -DVGPU_WERROR=ON -DVGPU_BUILD_SLURM_PLUGIN=ON -DCMAKE_INSTALL_PREFIX=/usr \
  -DVGPU_RELEASE_E2E=full "-DVGPU_SLURM_RELEASES=$(IFS=';'; echo "${releases[*]}")" >/dev/null
cmake --build "$build" -j "$(nproc)"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
summary=()
rc=0
for r in "${ran[@]}"; do
  start=$(date +%s)
  log=$build/test-releases-$r.log
  if ctest --test-dir "$build" -L "^slurm-$r\$" --output-on-failure -j "$(nproc)" > "$log" 2>&1; then status=passed; else
    status=FAILED
    rc=1
  fi
  ran=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\2 run, \1 failed/p' "$log")
  summary+=("Slurm $r: $status (${ran:-no tests ran}) in $(( ($(date +%s) - start + 30) / 60 )) min; log $log")
done
printf 'test-releases: %s\n' "${summary[@]}"
exit $rc
