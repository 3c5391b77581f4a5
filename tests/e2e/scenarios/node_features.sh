#!/usr/bin/env bash
# Node features steered by the planners with per-job preferences (policy planner.node_features;
# docs/policy.md): each node carries vgpu_in_use while Slurm has any of its vgpu allocated,
# vgpu_no_idle_gpu while every GPU holds a job's instance, and vgpu_partly_used_gpu while a GPU
# holds some and has room left; the submit filter has a job asking for parts of a GPU prefer nodes
# with a partly used GPU, any other vgpu job nodes in use and any other job nodes with no idle GPU,
# unless the job chose its own constraint. So a small GPU job goes to the partly used GPU where CPU
# best-fit, or a preference for nodes in use, would pick another node, the features come back after
# `scontrol reconfigure`, and they go when the jobs end. slurm.conf's FUTURE node holds every
# feature, so a preference is valid while no real node has it. No node drains.
set -u
VP_NODE_FEATURES=1
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
vp_start
# The admin's check of slurm.conf against the policy (vgpuctl slurm-check) reads this cluster's
# FUTURE node, its three features and every type it declares, as this release's scontrol prints them.
out=$("$VP_VGPUCTL" slurm-check "$VC_RUN/etc/vgpu-policy.json" 2>&1) ||
  vc_fail "slurm-check refused the harness's configuration: $out"
echo "$out" | grep -q ": 0 error(s), 0 warning(s)$" || vc_fail "slurm-check found something: $out"
job=$(vp_job_script)
# A node's ActiveFeatures; none is "" (slurm.conf's absent features print "(null)", cleared ones "").
features_of() { scontrol -o show node "$1" | grep -o 'ActiveFeatures=[^ ]*' | cut -d= -f2 | sed 's/^(null)$//'; }
wait_features() { # $1 node, $2 expected ActiveFeatures, [$3 seconds]
  local t=0 lim=$(( ${3:-30} * 5 ))
  until [ "$(features_of "$1")" = "$2" ]; do
    t=$((t + 1)); [ $t -ge $lim ] && { vc_log "$1 features $(features_of "$1"), expected $2"; return 1; }
    sleep 0.2
  done
}
node_of() { grep -o 'NODE=.*' "$VC_RUN/out/$1.out" | cut -d= -f2; }

echo "--- idle nodes carry no vgpu feature; a job prefers one all the same (the FUTURE node holds it)"
for n in $VC_NODES; do wait_features "$n" "" || vc_fail "$n has features while idle"; done

# Slurm 22.05 shows no job's preference (scontrol and squeue print Prefer=(null) even for
# sbatch --prefer), so the filter's preferences are checked by where the jobs go.
echo "--- a small GPU job on n3 tags it vgpu_in_use and vgpu_partly_used_gpu"
first=$(vp_sbatch -p infer -w n3 -n1 --gres=vgpu:1g.10gb:1 "$job" 300)
vp_wait_started "$first" 60 || vc_fail "job $first did not start"
wait_features n3 vgpu_in_use,vgpu_partly_used_gpu || vc_fail "n3 not tagged while job $first holds a 1g.10gb there"

echo "--- a CPU-only job on n1; a whole-GPU job on n2, which is in use but has no GPU partly used"
cpu=$(vp_sbatch -p infer -w n1 -n1 "$job" 300)
vp_wait_started "$cpu" 60 || vc_fail "CPU-only job $cpu did not start"
# Not -w: Slurm refuses at submission a type the named node does not advertise yet.
whole1=$(vp_sbatch -p train -x n1,n3 -n1 --gres=vgpu:7g.80gb:1 "$job" 300)
vp_wait_started "$whole1" 120 || vc_fail "job $whole1 did not start"
[ "$(squeue -h -j "$whole1" -o %N)" = n2 ] || vc_fail "job $whole1 is not on n2"
wait_features n2 vgpu_in_use || vc_fail "n2 not tagged vgpu_in_use alone with one whole GPU busy"

echo "--- a small GPU job prefers a partly used GPU: n3, where CPU best-fit's tie would take n1"
echo "    and a preference for nodes in use n2 (each node has one CPU free)"
small=$(vp_sbatch -p infer -n1 --gres=vgpu:1g.10gb:1 "$job" 2)
vp_wait_done "$small" 60 || vc_fail "job $small did not end"
[ "$(node_of "$small")" = n3 ] || vc_fail "job $small ran on $(node_of "$small"), not on n3, the partly used GPU"
scancel "$whole1"
vp_wait_done "$whole1" 60 || vc_fail "job $whole1 did not end"
wait_features n2 "" || vc_fail "n2 kept vgpu_in_use with nothing allocated"

echo "--- one job on both GPUs of a node other than n1: that node has no idle GPU"
scancel "$first"
vp_wait_done "$first" 60 || vc_fail "job $first did not end"
wait_features n3 "" || vc_fail "n3 kept vgpu_in_use with nothing allocated"
# Not -w: Slurm refuses at submission a 7g.80gb:2 that the named node does not advertise yet.
whole=$(vp_sbatch -p train -x n1 -n1 --gres=vgpu:7g.80gb:2 "$job" 300)
vp_wait_started "$whole" 120 || vc_fail "job $whole did not start"
busy=$(squeue -h -j "$whole" -o %N)
wait_features "$busy" vgpu_in_use,vgpu_no_idle_gpu || vc_fail "$busy not tagged vgpu_no_idle_gpu with both GPUs busy"

echo "--- a CPU-only job prefers nodes with no idle GPU: $busy, where CPU best-fit's tie would take n1"
cpu2=$(vp_sbatch -p infer -n1 "$job" 2)
vp_wait_done "$cpu2" 60 || vc_fail "CPU-only job $cpu2 did not end"
[ "$(node_of "$cpu2")" = "$busy" ] || vc_fail "CPU-only job $cpu2 ran on $(node_of "$cpu2"), not on $busy (no idle GPU)"

echo "--- a job's own constraint is its own"
own=$(vp_sbatch -p infer -n1 --constraint=vgpu_in_use "$job" 2)
vp_wait_done "$own" 60 || vc_fail "job $own did not end"
[ "$(node_of "$own")" = "$busy" ] || vc_fail "job $own's constraint vgpu_in_use put it on $(node_of "$own")"

echo "--- scontrol reconfigure restores slurm.conf's features; the planner sets its own again"
vc_reconfigure
wait_features "$busy" vgpu_in_use,vgpu_no_idle_gpu 60 || vc_fail "$busy's features not restored after reconfigure"
grep -h "node features" "$VC_RUN/log/planner.$busy.log" | tail -3 || true

echo "--- the jobs end: no node carries a vgpu feature"
for j in "$cpu" "$whole"; do scancel "$j" 2>/dev/null; done
for j in "$cpu" "$whole"; do vp_wait_done "$j" 60 || vc_fail "job $j did not end"; done
for n in $VC_NODES; do wait_features "$n" "" || vc_fail "$n kept its features with nothing allocated"; done
vp_check || vc_fail "inconsistent at the end"
vc_log "PASS node_features"
