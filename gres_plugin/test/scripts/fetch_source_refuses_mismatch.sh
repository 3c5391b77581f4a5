#!/usr/bin/env bash
# scripts/fetch-slurm-source.sh must refuse to prepare headers when the slurmd that runs is not
# the release dpkg says is installed (a plugin built from the wrong source is silently ignored).
set -u
root=$(cd "$(dirname "$0")/../../.." && pwd)
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
installed=$(slurmd -V | awk '{print $2}')
printf '#!/bin/sh\necho "slurm-wlm 21.08.99"\n' > "$fake/slurmd"
chmod +x "$fake/slurmd"
out=$(PATH="$fake:$PATH" XDG_CACHE_HOME="$fake/cache" bash "$root/scripts/fetch-slurm-source.sh" 2>&1)
rc=$?
[ "$rc" != 0 ] || { echo "FAIL: mismatch accepted: $out"; exit 1; }
echo "$out" | grep -q "slurmd -V says '21.08.99'.*$installed" || { echo "FAIL: unclear refusal: $out"; exit 1; }
[ ! -e "$fake/cache/slurm-vgpu" ] || { echo "FAIL: prepared a cache despite the mismatch"; exit 1; }
echo "PASS: $out"
