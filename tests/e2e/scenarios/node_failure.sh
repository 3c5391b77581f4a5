#!/usr/bin/env bash
# One node of a two-node job fails: n2's prolog cannot reach NVML, so it cannot create its
# instance. The job is cancelled with a reason the user sees, the other node's instance is
# released by its epilog, nothing leaks, and no node drains.
set -u
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
vp_start
# From now on product processes started on n2 (prolog, epilog) find no NVML library, and do their
# own work: the planner, started with NVML, would otherwise serve them (nodeagent/hook_socket/hook_socket.h).
echo "[ -e $VC_RUN/out/break-n2 ] && export VGPU_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 VGPU_HOOK_SERVICE=off" >> "$VC_RUN/etc/vgpu-env/n2.sh"
touch "$VC_RUN/out/break-n2"

j=$(vp_sbatch -p infer -N2 -w n1,n2 --gres=vgpu:2g.20gb:1 --wrap 'srun sleep 30')
vp_wait_done "$j" 90 || vc_fail "job $j was not ended"
st=$(vc_job_state "$j")
comment=$(scontrol show job "$j" | grep -o 'Comment=.*' | head -1)
echo "job $j: $st $comment"
[[ $st =~ CANCELLED|FAILED|NODE_FAIL ]] || vc_fail "job $j ended $st although n2 could not create its instance"
[[ $comment == *vgpu:* ]] || vc_fail "no vgpu reason in the job's Comment: '$comment'"
rm -f "$VC_RUN/out/break-n2"

vp_assert_no_instances
vp_check || vc_fail "inconsistent after the failed node"
# The cluster keeps working: the same request now runs on the same nodes.
j2=$(vp_sbatch -p infer -N2 -w n1,n2 --gres=vgpu:2g.20gb:1 --wrap 'srun true')
vp_wait_done "$j2" 90 || vc_fail "follow-up job did not finish"
vp_assert_completed "$j2"
vp_assert_no_instances
vp_check || vc_fail "inconsistent at the end"
vc_log "PASS node_failure"
