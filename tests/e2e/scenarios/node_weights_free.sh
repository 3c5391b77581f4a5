#!/usr/bin/env bash
# Node weights by free capacity (policy planner.node_weights {"base", "per_free_gpu"};
# docs/policy.md): each planner sets its node's Slurm weight to base + per_free_gpu x the GPUs its
# jobs leave free, so Slurm tries the fullest node first, where its own CPU best-fit would pick by
# CPUs alone. Two idle H100s: 100 + 2 x 700 = 1500; a 1g.10gb held: 1/7 less; a 3g.40gb: 3/7 less.
# The weights come back when the jobs end. No node drains.
set -u
VP_NODE_WEIGHTS='{"base": 100, "per_free_gpu": 700}'
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
vp_start
job=$(vp_job_script)

echo "--- idle nodes weigh base + 2 free GPUs"
vp_wait_node_weights "n1:1500 n2:1500 n3:1500" || vc_fail "the planners did not set the idle weight"

echo "--- a 1g.10gb on n2 and a 3g.40gb on n3: n3 is the fullest"
one=$(vp_sbatch -p infer -w n2 -n1 --gres=vgpu:1g.10gb:1 "$job" 300)
vp_wait_started "$one" 60 || vc_fail "job $one did not start"
# Not -w: Slurm refuses at submission a type the named node does not advertise yet.
three=$(vp_sbatch -p train -x n1,n2 -n1 --gres=vgpu:3g.40gb:1 "$job" 300)
vp_wait_started "$three" 120 || vc_fail "job $three did not start"
[ "$(squeue -h -j "$three" -o %N)" = n3 ] || vc_fail "job $three is not on n3"
vp_wait_node_weights "n1:1500 n2:1400 n3:1200" || vc_fail "weights do not follow what the jobs hold"

echo "--- the next small job goes to n3, where CPU best-fit's tie (n2 and n3 have one CPU free) takes n2"
small=$(vp_sbatch -p infer -n1 --gres=vgpu:1g.10gb:1 "$job" 2)
vp_wait_done "$small" 60 || vc_fail "job $small did not end"
grep -q 'NODE=n3$' "$VC_RUN/out/$small.out" ||
  vc_fail "job $small ran on $(grep -o 'NODE=.*' "$VC_RUN/out/$small.out"), not on n3, the fullest node"
grep -h "node weight" "$VC_RUN"/log/planner.n3.log | tail -3 || true

echo "--- the jobs end: every node weighs 1500 again"
for j in "$one" "$three"; do scancel "$j" 2>/dev/null; done
for j in "$one" "$three"; do vp_wait_done "$j" 60 || vc_fail "job $j did not end"; done
vp_wait_node_weights "n1:1500 n2:1500 n3:1500" || vc_fail "weights not back with nothing allocated"
vp_check || vc_fail "inconsistent at the end"
vc_log "PASS node_weights_free"
