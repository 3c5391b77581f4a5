#!/usr/bin/env bash
# slurmd starts the hook front end (nodeagent/hook_socket/front_end.h) for every job: it must need no shared
# C++ runtime or fmt, which cost a process about 1 ms to load (docs/benchmarks.md).
#   front_end_loads_no_cxx_runtime.sh <vgpu-prolog or vgpu-epilog>
set -u
needed=$(readelf -d "$1" | grep NEEDED) || { echo "FAIL: readelf -d $1 lists no NEEDED library"; exit 1; }
echo "$needed"
if echo "$needed" | grep -E 'libstdc\+\+|libgcc_s|libfmt'; then
  echo "FAIL: $1 needs the shared C++ runtime or fmt"
  exit 1
fi
echo "PASS: $1 needs no shared C++ runtime"
