#!/usr/bin/env bash
# What it costs a Slurm daemon to load gres_vgpu.so: slurmstepd loads it for every job step, so this
# is paid per job on every node. A process holding the plugin's libslurmfull forks LOADS times per
# repetition and each child dlopen()s the plugin (plugin_load/plugin_load.c); an empty plugin loaded
# the same way, in turn with it, is the fork and the loader's fixed cost, and is subtracted. Prints
# CPU (user + system) and wall milliseconds per load above the empty plugin: median and range over
# REPS repetitions, with the machine and the command. --compare adds another build of the plugin
# (e.g. an older commit's) to the same rotation.
#   VP_BIN=<build dir> benchmarks/plugin_load.sh [LOADS=500] [REPS=5] [--plugin SO] [--compare SO]
#                                                [--json FILE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${VP_BIN:-$here/../build/release}
loads=500 reps=5 plugin="" compare="" json_out="" positional=0
while [ $# -gt 0 ]; do
  case $1 in
    --plugin) plugin=$2; shift 2 ;;
    --compare) compare=$2; shift 2 ;;
    --json) json_out=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) if [ $positional = 0 ]; then loads=$1; else reps=$1; fi; positional=$((positional + 1)); shift ;;
  esac
done
plugin=${plugin:-$bin/gres_plugin/gres_vgpu.so}
driver=$bin/benchmarks/vgpu-bench-plugin-load
empty=$bin/benchmarks/libvgpu_bench_empty_plugin.so
for f in "$plugin" "$driver" "$empty" ${compare:+"$compare"}; do
  [ -f "$f" ] || { echo "plugin_load: $f missing (build it, or set VP_BIN)" >&2; exit 2; }
done
# The libslurmfull the plugin was linked against: its run path names the release's library directory.
libdir=$(readelf -d "$plugin" | sed -n 's/.*(RUNPATH).*\[\(.*\)\].*/\1/p; s/.*(RPATH).*\[\(.*\)\].*/\1/p' | head -1)
libslurmfull=${libdir%%:*}/libslurmfull.so
[ -f "$libslurmfull" ] || { echo "plugin_load: $plugin names no library directory with libslurmfull.so (run path '$libdir')" >&2; exit 2; }

abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
plugins=("$(abs "$empty")" "$(abs "$plugin")")
[ -z "$compare" ] || plugins+=("$(abs "$compare")")
out=$(mktemp /tmp/vgpu-plugin-load.XXXXXX)
trap 'rm -f "$out"' EXIT
for rep in $(seq "$reps"); do
  "$driver" --libslurmfull "$libslurmfull" --loads "$loads" "${plugins[@]}" | sed "s/^/$rep /" >> "$out"
done

command="VP_BIN=$bin benchmarks/plugin_load.sh $loads $reps${compare:+ --compare $compare}"
/usr/bin/python3 - "$out" "$json_out" "$command" "${plugins[@]}" <<'PY'
import json, os, platform, statistics, sys
path, json_out, command, empty, *plugins = sys.argv[1:]
rows = {}  # plugin -> rep -> (cpu, wall)
for line in open(path):
    rep, name, _, cpu, _, wall = line.split()
    rows.setdefault(name, {})[rep] = (float(cpu), float(wall))
model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"machine: {model}, {os.cpu_count()} CPUs, {platform.release()}")
print(f"command: {command}")
e = rows[empty]
print(f"empty plugin (fork + loader), per load: CPU {statistics.median(v[0] for v in e.values()):.3f} ms")
result = {"command": command, "machine": f"{model}, {os.cpu_count()} CPUs",
          "empty_cpu_ms_p50": round(statistics.median(v[0] for v in e.values()), 4), "plugins": []}
for p in plugins:
    cpu = [rows[p][r][0] - e[r][0] for r in rows[p]]
    wall = [rows[p][r][1] - e[r][1] for r in rows[p]]
    print(f"{p}: above the empty plugin, per load: CPU {statistics.median(cpu):.3f} ms "
          f"({min(cpu):.3f}-{max(cpu):.3f}), wall {statistics.median(wall):.3f} ms "
          f"({min(wall):.3f}-{max(wall):.3f}) over {len(cpu)} repetitions")
    result["plugins"].append({"path": p, "cpu_ms_p50": round(statistics.median(cpu), 4),
                              "cpu_ms_min": round(min(cpu), 4), "cpu_ms_max": round(max(cpu), 4),
                              "wall_ms_p50": round(statistics.median(wall), 4), "repetitions": len(cpu)})
if json_out:
    json.dump(result, open(json_out, "w"), indent=1)
    print(f"json: {json_out}")
PY
