#!/usr/bin/env bash
# Node weights steered by the planners (policy planner.node_weights; docs/policy.md): each node is
# heavy while idle and light while Slurm has any of its vgpu allocated, so Slurm puts a small GPU
# job on a node already in use rather than breaking an idle one, even where its own CPU best-fit
# would pick the idle node. The weight comes back after `scontrol reconfigure` restores
# slurm.conf's, and goes back to idle when the last job ends. No node drains.
set -u
VP_NODE_WEIGHTS='{"in_use": 10, "idle": 20}'
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
vp_start
job=$(vp_job_script)

echo "--- idle nodes get the idle weight"
vp_wait_node_weights "n1:20 n2:20 n3:20" || vc_fail "the planners did not set the idle weight"

echo "--- a GPU job on n3 makes it light"
first=$(vp_sbatch -p infer -w n3 --gres=vgpu:1g.10gb:1 "$job" 300)
vp_wait_started "$first" 60 || vc_fail "job $first did not start"
vp_wait_node_weights "n1:20 n2:20 n3:10" || vc_fail "n3 did not become light while job $first holds vgpu there"

echo "--- a CPU-only job makes n1 the tighter node by CPUs; the next GPU job still goes to n3"
cpu=$(vp_sbatch -p infer -w n1 -n1 "$job" 300)
vp_wait_started "$cpu" 60 || vc_fail "CPU-only job $cpu did not start"
# Both n1 and n3 now have 1 of 2 CPUs free: Slurm's best-fit alone ties and takes the first, n1.
small=$(vp_sbatch -p infer -n1 --gres=vgpu:1g.10gb:1 "$job" 2)
vp_wait_started "$small" 60 || vc_fail "job $small did not start"
grep -q 'NODE=n3$' "$VC_RUN/out/$small.out" ||
  vc_fail "job $small ran on $(grep -o 'NODE=.*' "$VC_RUN/out/$small.out"), not on n3, the node in use"

echo "--- scontrol reconfigure restores slurm.conf's weight; the planners set theirs again"
vc_reconfigure
vp_wait_node_weights "n1:20 n2:20 n3:10" 60 || vc_fail "weights not restored after reconfigure"
grep -h "node weight" "$VC_RUN"/log/planner.n3.log | tail -3 || true

echo "--- the last job ends: n3 is heavy again"
for j in "$first" "$cpu" "$small"; do scancel "$j" 2>/dev/null; done
for j in "$first" "$cpu" "$small"; do vp_wait_done "$j" 60 || vc_fail "job $j did not end"; done
vp_wait_node_weights "n1:20 n2:20 n3:20" || vc_fail "n3 kept the in-use weight with nothing allocated"
vp_check || vc_fail "inconsistent at the end"
vc_log "PASS node_weights"
