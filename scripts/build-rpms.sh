#!/usr/bin/env bash
# Builds the RPMs on this Debian machine the way a RHEL-family site builds them: `rpmbuild -ta` on
# the source tarball (scripts/source-tarball.sh), a Release build of the site's parts, with the
# plugin for the Slurm whose source tree is given. Then rpmlint. Debian's rpm has an empty package
# database (the build dependencies come from apt: --nodeps) and lacks EL9's path and systemd
# macros (packaging/rpm/debian-check.macros stands in). This proves the spec, its build and its
# file lists; it is not an install on EL9 (docs/admin.md, "Rocky and Alma Linux 9").
# About 15 minutes on 2 cores with a cold compiler cache. Prints the RPM files on stdout.
#   scripts/build-rpms.sh [SLURM_SRC SLURM_LIBDIR]
#     default: the source of the Debian slurmd installed here (scripts/fetch-slurm-source.sh)
# Environment: OUT (default build/rpm), RPM_OPTIONS (more rpmbuild options, e.g. "--without viz").
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mkdir -p "${OUT:-build/rpm}" && cd "${OUT:-build/rpm}" && pwd)
if [ $# -ge 2 ]; then
  slurm_src=$1 slurm_libdir=$2
else
  slurm_src=$(bash scripts/fetch-slurm-source.sh | tail -1)/src slurm_libdir=/usr/lib/x86_64-linux-gnu/slurm-wlm
fi
tarball=$(bash scripts/source-tarball.sh "$out")
launcher=()
command -v ccache >/dev/null && launcher=(--define "vgpu_cmake_args -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
scrub=()
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || scrub=(--without scrub)
# shellcheck disable=SC2086
rpmbuild -ta --nodeps --load packaging/rpm/debian-check.macros --define "_topdir $out/topdir" \
  --define "slurm_src $slurm_src" --define "slurm_libdir $slurm_libdir" --define "slurm_plugindir $slurm_libdir" \
  "${launcher[@]}" "${scrub[@]}" ${RPM_OPTIONS:-} "$tarball" >&2
mapfile -t rpms < <(find "$out/topdir/RPMS" -name '*.rpm' | sort)
rpmlint -c packaging/rpm/rpmlint.toml "${rpms[@]}" >&2
printf '%s\n' "${rpms[@]}"
