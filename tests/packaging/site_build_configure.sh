#!/usr/bin/env bash
# A site build (docs/build-options.md) configured, not built: it must not look for libvirt or fuse3
# (a site need not install them) and must have no target of viz, the fakes or, with VGPU_SCRUB=OFF,
# vgpu-scrub; its package list and node description must say so. Prints PASS: or FAIL: lines.
#   site_build_configure.sh <source dir> <cmake> <ninja> <C compiler> <C++ compiler>
# VGPU_SCRUB=OFF rather than the site's ON: the test then needs no CUDA toolkit and takes seconds
# (cmake/test/scrub_option_test.cmake covers ON and AUTO).
set -uo pipefail
src=$1 cmake=$2 ninja=$3 cc=$4 cxx=$5
dir=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-site-build.XXXXXX")
trap 'rm -rf "$dir"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

if ! "$cmake" -S "$src" -B "$dir" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release -DVGPU_BUILD_TESTS=OFF -DVGPU_BUILD_BENCHMARKS=OFF \
  -DVGPU_FAKES=OFF -DVGPU_VIZ=OFF -DVGPU_SCRUB=OFF >"$dir/configure.log" 2>&1; then
  cat "$dir/configure.log"
  echo "FAIL: the site build does not configure"
  exit 1
fi

# pkg_check_modules leaves <PREFIX>_*, pkgcfg_lib_<PREFIX>_* and __pkg_config_*_<PREFIX> behind.
looked=$(grep -E '^(LIBVIRT|FUSE3)_|^pkgcfg_lib_(LIBVIRT|FUSE3)_|^__pkg_config_[a-z]+_(LIBVIRT|FUSE3):' "$dir/CMakeCache.txt")
[ -z "$looked" ] || fail "the site build looked for libvirt or fuse3: $(echo "$looked" | head -3 | tr '\n' ' ')"

targets=$("$ninja" -C "$dir" -t targets all | sed 's/:.*//; s|.*/||' | sort -u)
grep -qx vgpu-planner <<<"$targets" || fail "no vgpu-planner target: the target list is not what this test reads"
for t in vgpu-viz vgpu_viz vgpu-fake-amdgpu vgpu_fake_amdgpu fakenvml fake-nvml-smi fake-nvml-load fake-cuda-probe \
  fake-nvidia-modprobe vgpu-scrub; do
  grep -qx -- "$t" <<<"$targets" && fail "the site build has a $t target"
done

grep -qE 'set\(CPACK_COMPONENTS_ALL "node;plugin"\)' "$dir/CPackConfig.cmake" ||
  fail "CPACK_COMPONENTS_ALL is not node;plugin: $(grep 'CPACK_COMPONENTS_ALL' "$dir/CPackConfig.cmake")"
# The description as cpack reads it (CPackConfig.cmake is CMake; a stray quote there splits it).
# shellcheck disable=SC2016  # CMake's ${...}, not the shell's
echo 'include(${CONFIG})
message("${CPACK_DEBIAN_NODE_DESCRIPTION}")' >"$dir/description.cmake"
description=$("$cmake" -DCONFIG="$dir/CPackConfig.cmake" -P "$dir/description.cmake" 2>&1 | tr '\n' ' ')
grep -q 'It lacks vgpu-scrub.* must set "scrub": "optional" in its policy' <<<"$description" ||
  fail "the node package's description does not say it lacks vgpu-scrub and needs \"scrub\": \"optional\""
grep -q 'vgpu-scrub: not built (VGPU_SCRUB=OFF)' "$dir/configure.log" || fail "configure did not say vgpu-scrub is not built"

[ "$failed" = 0 ] && echo "PASS: the site build configures without libvirt, fuse3, viz, the fakes or vgpu-scrub"
exit "$failed"
