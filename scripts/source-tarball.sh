#!/usr/bin/env bash
# The source tarball a release is built from: the tree git tracks (committed, plus any uncommitted
# change to a tracked file, so a check of a working tree sees that tree), under
# slurm-vgpu-<version>/, with the RPM spec made from its template, so `rpmbuild -ta` finds it.
# The version is CMakeLists.txt's project() version. Prints the tarball's path.
#   scripts/source-tarball.sh [OUT_DIR]        (default build/dist)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/dist}
version=$(sed -n 's/^project(slurm_vgpu VERSION \([0-9.]*\) .*/\1/p' CMakeLists.txt)
[ -n "$version" ] || { echo "source-tarball: no version in CMakeLists.txt's project()" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
spec_dir=$(mktemp -d)
trap 'rm -rf "$spec_dir"' EXIT
sed "s/@VERSION@/$version/g" packaging/rpm/slurm-vgpu.spec.in > "$spec_dir/slurm-vgpu.spec"
tree=$(git stash create)
git archive --format=tar.gz --prefix="slurm-vgpu-$version/" --add-file="$spec_dir/slurm-vgpu.spec" \
  -o "$out/slurm-vgpu-$version.tar.gz" "${tree:-HEAD}"
echo "$out/slurm-vgpu-$version.tar.gz"
