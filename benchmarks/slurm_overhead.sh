#!/usr/bin/env bash
# Per-job overhead of slurm-vgpu on the real local Slurm cluster (three slurmd, two simulated
# H100s each): the same burst of short jobs runs twice, once with vgpu (gres_vgpu.so, prolog,
# epilog, planners, fake NVML) and once on the same cluster with a plain count-only GRES (no
# plugin, no prolog/epilog), and the script prints jobs/minute for both, their ratio, the
# submit->start latency and the prolog/epilog time per job.
#   VP_BIN=<build dir> benchmarks/slurm_overhead.sh [jobs]
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/e2e/lib.sh"
JOBS=${1:-${OVERHEAD_JOBS:-42}}
results=$(mktemp -d /tmp/vgpu-overhead.XXXXXX)

burst() { # $1 label; submits $JOBS 1g.10gb jobs at once, waits, records timings
  local label=$1 ids=() t0 t1 j
  t0=$(date +%s.%N)
  for _ in $(seq "$JOBS"); do
    ids+=("$(sbatch --parsable -p "$2" --gres=vgpu:1g.10gb:1 -o /dev/null --wrap true)")
  done
  for j in "${ids[@]}"; do
    while squeue -h -j "$j" 2>/dev/null | grep -q .; do sleep 0.1; done
  done
  t1=$(date +%s.%N)
  for j in "${ids[@]}"; do scontrol show job -o "$j"; done > "$results/$label.jobs"
  echo "$label $(echo "$t1 - $t0" | bc)" >> "$results/walls.txt"
  grep -c 'JobState=COMPLETED' "$results/$label.jobs" | sed "s/^/$label completed: /"
}

echo "== with vgpu ($JOBS jobs of vgpu:1g.10gb:1)"
VC_RUN=$(mktemp -d /tmp/vgpu-cluster.XXXXXX)
vp_start 2>/dev/null
burst vgpu infer
cp "$VC_RUN/log/hook-ms.txt" "$results/hooks.txt" 2>/dev/null
vp_check 2>/dev/null || echo "WARNING: vgpu run ended inconsistent"
vp_stop >/dev/null 2>&1
rm -rf "$VC_RUN"

echo "== plain count-only GRES (no plugin, no prolog/epilog)"
unset VC_INITIALIZED VC_CTLD_PORT VC_PROLOG VC_EPILOG
VC_RUN=$(mktemp -d /tmp/vgpu-cluster.XXXXXX)
vc_init
_vc_munge_start || vc_fail "munged"
vc_conf_write "PartitionName=infer Nodes=$(_vp_nodelist) MaxTime=INFINITE State=UP"
# Same nodes, no gres_vgpu.so on the plugin path: Slurm only tracks the count.
sed -i -E "s|^PluginDir=.*|PluginDir=$VC_SLURM_LIBDIR|; s|Gres=[^ ]*|Gres=vgpu:1g.10gb:$VC_TOTAL|; /^JobSubmitPlugins/d" "$SLURM_CONF"
vc_ctld_start -c -i || vc_fail "slurmctld"
for n in $VC_NODES; do vc_slurmd_start "$n" || vc_fail "slurmd $n"; done
vc_wait_idle 60 || vc_fail "nodes not idle"
burst plain infer
vc_stop >/dev/null 2>&1
rm -rf "$VC_RUN"

python3 - "$results" "$JOBS" <<'PY'
import re, statistics, sys
from datetime import datetime
d, n = sys.argv[1], int(sys.argv[2])
walls = dict(l.split() for l in open(f"{d}/walls.txt"))
def lat(label):
    out = []
    for l in open(f"{d}/{label}.jobs"):
        f = dict(re.findall(r'(\w+)=(\S*)', l))
        t = lambda s: datetime.strptime(s, "%Y-%m-%dT%H:%M:%S")
        out.append((t(f["StartTime"]) - t(f["SubmitTime"])).total_seconds())
    return out
print(f"{'':24s}{'vgpu':>10s}{'plain':>10s}")
jpm = {k: 60 * n / float(v) for k, v in walls.items()}
print(f"{'jobs/minute':24s}{jpm['vgpu']:10.1f}{jpm['plain']:10.1f}   ratio vgpu/plain {jpm['vgpu'] / jpm['plain']:.2f}")
for k in ("vgpu", "plain"):
    l = lat(k)
    print(f"submit->start {k:10s} mean {statistics.mean(l):.1f} s, max {max(l):.0f} s (1 s resolution)")
try:
    hooks = {}
    for l in open(f"{d}/hooks.txt"):
        kind, job, ms = l.split(); hooks.setdefault(kind, []).append(int(ms))
    for kind, v in sorted(hooks.items()):
        v.sort()
        print(f"{kind:8s} per job: median {statistics.median(v):.0f} ms, p95 {v[int(0.95 * (len(v) - 1))]} ms over {len(v)} runs")
except FileNotFoundError:
    print("no hook timings")
PY
rm -rf "$results"
