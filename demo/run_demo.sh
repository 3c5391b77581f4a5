#!/usr/bin/env bash
# The demo: a local Slurm cluster of two vendors (slurmctld + 3 slurmd: n1 and n2 with two
# simulated H100-80GB each behind the fake NVML, n3 with two AMD MI300X behind the fake amdgpu
# driver; the real gres/vgpu plugin, prolog, epilog and planners) replays a time-compressed slice
# of the openb trace (every third task asking for the MI300X partition of the same share) plus an
# inference tier that asks by need (class "small": 1g.10gb on an H100, cpx.24gb on an MI300X) and a
# few training jobs on two whole H100s (an H100 leaves MIG mode for them and comes back), draws the
# GPU layouts as they change (MIG instances or whole GPUs on n1/n2, compute-partition modes on n3),
# and summarizes: text and a utilisation picture in DEMO_OUT (default demo-out/ in
# the clone: summary.txt, utilisation.png).
#   VP_BIN=<build dir> demo/run_demo.sh [trace.csv]
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/e2e/lib.sh"
trap 'vp_finish $?' EXIT
trace=${1:-$here/../data/openb/openb_pod_list_gpushare40.csv}
[ -f "$trace" ] || vc_fail "no trace at $trace (pass one: any openb pod-list CSV)"
VP_STARVATION=${VP_STARVATION:-20}
VC_NODES=${VC_NODES:-"n1 n2 n3"}
export VP_KIND_n3=${VP_KIND_n3:-mi300x}
# MIG profiles for the H100s, compute partitions for the MI300Xs; an idle MI300X offers CPX. The
# inference tier asks by need (class "small"), so either vendor's GPUs serve it.
VP_CLASSES='{"small": {"min_memory_gb": 10, "min_compute_fraction": 0.125}}'
VP_INFER_PROFILES='{"H100-80GB": ["1g.10gb", "1g.20gb", "2g.20gb", "small"], "MI300X-192GB": ["cpx.24gb", "qpx.48gb", "small"]}'
VC_PROFILES="$VC_PROFILES small"
VP_TRAIN_PROFILES='{"H100-80GB": ["3g.40gb", "4g.40gb", "7g.80gb", "whole.80gb"], "MI300X-192GB": ["dpx.96gb", "spx.192gb"]}'
# Training on whole GPUs where it asks for them: an H100 leaves MIG mode for a pending whole-GPU job
# and goes back for MIG jobs (docs/policy.md, mig_mode "on_demand"). The nodes' driver leaves
# device files alone (NVreg_ModifyDeviceFiles=0), so a whole GPU can be kept to its job's user.
VP_TRAIN_MIG_MODE=on_demand
VP_MODIFY_DEVICE_FILES=0
VC_PROFILES="$VC_PROFILES whole.80gb"
VP_IDLE_LAYOUT='["2g.20gb", "2g.20gb", "1g.10gb", "1g.10gb", "1g.10gb", "cpx.24gb", "cpx.24gb", "cpx.24gb", "cpx.24gb"]'
# As a large site would run it: one publisher on the controller asks slurmctld for the whole
# cluster once per period, and every node's planner fetches its signed view (docs/admin.md).
VP_CLUSTER_VIEW=${VP_CLUSTER_VIEW:-tcp}
vp_start 2>/dev/null
echo "== the admin's check of this cluster's slurm.conf against the policy (vgpuctl slurm-check)"
"$VP_VGPUCTL" slurm-check "$VC_RUN/etc/vgpu-policy.json" | sed 's/^/   /'
[ "${PIPESTATUS[0]}" = 0 ] || vc_fail "vgpuctl slurm-check found errors in the demo's configuration"

amd_every=$([ "$(vp_kind_of n3)" = mi300x ] && echo 3 || echo 0)
python3 "$here/trace_slice.py" "$trace" --jobs "${DEMO_JOBS:-30}" --inference "${DEMO_INFERENCE:-12}" --amd-every "$amd_every" \
  --training "${DEMO_TRAINING:-2}" \
  --inference-type "$([ "$amd_every" = 0 ] && echo 1g.10gb || echo small)" \
  --span "${DEMO_SPAN:-60}" | sort -n > "$VC_RUN/out/workload.tsv" || vc_fail "could not cut the trace"
echo "== workload: $(wc -l < "$VC_RUN/out/workload.tsv") jobs from $(basename "$trace") (time-compressed) + synthetic inference"
cut -f2,3 "$VC_RUN/out/workload.tsv" | sort | uniq -c | sed 's/^/   /'

frame() {
  printf '\n========== t=%3ss  running %s  pending %s  ==========\n' "$(( $(date +%s) - t0 ))" \
    "$(squeue -h -t R | wc -l)" "$(squeue -h -t PD | wc -l)"
  vp_status 2>/dev/null | grep -v '^  slice'
  # compute-slice utilisation of this frame, for the summary
  vp_status 2>/dev/null | sed -n 's/.*compute \([0-9]*\)\/\([0-9]*\) used.*/\1 \2/p' |
    awk '{u+=$1; t+=$2} END {if (t) print u/t}' >> "$VC_RUN/out/utilisation.txt"
}

t0=$(date +%s)
next_frame=0
while IFS=$'\t' read -r offset partition gres duration name; do
  while [ "$(echo "$(date +%s.%N) - $t0 < $offset" | bc)" = 1 ]; do
    [ "$(( $(date +%s) - t0 ))" -ge $next_frame ] && { frame; next_frame=$((next_frame + 8)); }
    sleep 0.2
  done
  sbatch --parsable -p "$partition" --gres="$gres" -J "$name" -o /dev/null --wrap "sleep $duration" >> "$VC_RUN/out/jobs.txt" ||
    vc_fail "submission of $name ($gres) refused"
done < "$VC_RUN/out/workload.tsv"
while squeue -h | grep -q .; do
  [ "$(( $(date +%s) - t0 ))" -ge $next_frame ] && { frame; next_frame=$((next_frame + 8)); }
  [ "$(( $(date +%s) - t0 ))" -gt 900 ] && vc_fail "workload did not finish in 15 minutes"
  sleep 0.5
done
frame
elapsed=$(( $(date +%s) - t0 ))

out=$(realpath -m "${DEMO_OUT:-$here/../demo-out}")
mkdir -p "$out" || vc_fail "cannot create $out"
{
echo
echo "========== summary =========="
for j in $(cut -d';' -f1 "$VC_RUN/out/jobs.txt"); do scontrol show job -o "$j"; done > "$VC_RUN/out/jobs.show"
python3 - "$VC_RUN/out/jobs.show" "$VC_RUN/out/utilisation.txt" "$elapsed" <<'PY'
import re, sys, statistics
from datetime import datetime
jobs = [dict(re.findall(r'(\w+)=(\S*)', l)) for l in open(sys.argv[1]) if l.strip()]
def t(s): return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S")
states = {}
for j in jobs: states[j.get("JobState")] = states.get(j.get("JobState"), 0) + 1
waits = {}
for j in jobs:
    if j.get("StartTime", "Unknown") not in ("Unknown", "None"):
        kind = "train" if j.get("Partition") == "train" else "infer"
        waits.setdefault(kind, []).append((t(j["StartTime"]) - t(j["SubmitTime"])).total_seconds())
util = [float(x) for x in open(sys.argv[2]) if x.strip()]
elapsed = int(sys.argv[3])
print(f"jobs: {len(jobs)}  " + "  ".join(f"{k}: {v}" for k, v in sorted(states.items())))
print(f"wall time: {elapsed} s   throughput: {60 * len(jobs) / max(1, elapsed):.1f} jobs/min")
for kind, w in sorted(waits.items()):
    print(f"{kind:5s} wait (submit->start): mean {statistics.mean(w):.1f} s  max {max(w):.0f} s  over {len(w)} jobs")
if util:
    print(f"compute-slice utilisation: mean {100 * statistics.mean(util):.0f}%  peak {100 * max(util):.0f}%  ({len(util)} frames)")
PY
gens=""
for n in $VC_NODES; do gens+=" $n:$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["generation"])' "$VGPU_STATE_DIR/$n/advertisement.json")"; done
echo "layout changes (plan generations):$gens"
switches=""
for n in $VC_NODES; do
  switches+=" $n: $(grep -c 'MIG mode o[nf]*, as pending demand asks' "$VC_RUN/log/planner.$n.log" 2>/dev/null)"
done
echo "MIG-mode switches for pending jobs (whole GPUs for training, MIG for the rest):$switches"
echo "slurmctld load from vgpu: one squeue and one scontrol show node per ${VP_PERIOD}s period for the whole cluster (the signed cluster view every planner fetches), and shrink confirmations per layout change (docs/benchmarks.md)"
# Utilisation over the run per node and per profile, from the nodes' ledger history.
"$VP_VGPUCTL" report --state-dir "$VGPU_STATE_DIR" --since "$t0" --buckets 40 --png "$out/utilisation.png" ||
  echo "FAIL: vgpuctl report could not draw $out/utilisation.png"
} | tee "$out/summary.txt"
grep -q '^FAIL:' "$out/summary.txt" && vc_fail "the summary is incomplete"
echo "summary and picture: $out/summary.txt, $out/utilisation.png"
vp_assert_no_instances
vp_check 2>/dev/null && echo "end state: every GPU released, no node drained, ledger == hardware == Slurm on every node"
