#!/usr/bin/env bash
# A node total sized for whole instances and a share type that cuts one into many units
# (docs/slurm.md, "the node total"): one node with two simulated H100s, T = 14 (7 per GPU), the
# policy's "eighth" (1g.10gb in 8 shares). Three share jobs make the planner plan an eighth
# instance beside the idle layout's, 17 units against 14. The plugin would refuse such an
# advertisement whole (nothing placeable); the planner advertises it cut to the total instead,
# share units first, and says so in its log; the three jobs run, slurmctld's split sums to the
# total, the plugin never refused an advertisement and the node ends consistent.
set -u
VC_NODES=n1
VP_INFER_PROFILES='["1g.10gb", "2g.20gb", "eighth"]'
VP_SHARE_TYPES='{"eighth": {"instance": "1g.10gb", "shares": 8}}'
VP_UNITS_PER_GPU=7
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
VC_PROFILES="$VC_PROFILES eighth"
vp_start
vp_check || vc_fail "inconsistent right after start"
# vgpuctl slurm-check against this release's scontrol: the FUTURE node declares the share type, so
# the policy passes; the same policy with planner.node_features fails, naming the features this
# cluster's FUTURE node lacks (it has none), and exits 1.
out=$("$VP_VGPUCTL" slurm-check "$VC_RUN/etc/vgpu-policy.json" 2>&1) || vc_fail "slurm-check: $out"
echo "$out" | grep -q ": 2 partition(s) checked against Slurm [0-9.]*: 0 error(s)" || vc_fail "slurm-check: $out"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); p.setdefault("planner", {})["node_features"]=True
json.dump(p, open(sys.argv[2], "w"))' "$VC_RUN/etc/vgpu-policy.json" "$VC_RUN/etc/features-policy.json"
if out=$("$VP_VGPUCTL" slurm-check "$VC_RUN/etc/features-policy.json" 2>&1); then
  vc_fail "slurm-check passed a policy with node features on a cluster without them: $out"
fi
echo "$out" | grep -q "^error: partition infer: no FUTURE node of it has the feature(s) vgpu_in_use, vgpu_no_idle_gpu, vgpu_partly_used_gpu" ||
  vc_fail "slurm-check did not name the missing features: $out"

jobs=()
for _ in 1 2 3; do jobs+=("$(vp_sbatch -p infer --gres=vgpu:eighth:1 --wrap "sleep 4")")
done
for j in "${jobs[@]}"; do vp_wait_running "$j" 90 || vc_fail "share job $j did not start"; done
gres=$(scontrol show node n1 | grep -o 'Gres=[^ ]*')
sum=$(echo "${gres#Gres=}" | python3 -c 'import re,sys; print(sum(int(n) for n in re.findall(r"vgpu:[^:,]+:(\d+)", sys.stdin.read())))')
[ "$sum" = 14 ] || vc_fail "slurmctld's split of n1 sums to $sum, not the node's total 14: $gres"
grep -q "more vgpu units than the node's total of 14" "$VC_RUN/log/planner.n1.log" ||
  vc_fail "the planner did not say it cut the advertisement: $(tail -5 "$VC_RUN/log/planner.n1.log")"
for j in "${jobs[@]}"; do vp_wait_done "$j" 60 || vc_fail "share job $j did not finish"; done
vp_assert_completed "${jobs[@]}"
if grep -q "slurm.conf declares a total of" "$VC_RUN/log/slurmd.n1.log"; then
  vc_fail "the plugin refused an advertisement over the total: $(grep -m1 'declares a total of' "$VC_RUN/log/slurmd.n1.log")"
fi
vp_check || vc_fail "node state inconsistent after the shares ended"
vc_log "PASS node_total"
