#!/usr/bin/env bash
# Reproducer for a soak finding (docs/reliability-soak.md, finding 1): after a slurmctld restart,
# a running job's typed vgpu allocation is missing from the node's GresUsed, so Slurm starts a
# second job on instances the first one holds. The prolog then cancels that job ("0 of 4
# instance(s) fit"). Exit 0: the allocation survived the restart and the second job pends.
# Exit 1: the bug reproduced.
#   VP_BIN=<build> bash tests/e2e/soak/ctld_restart_overalloc.sh     (about 1 minute)
set -u
{
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
vp_start
used_2g() { # "used/configured" 2g.20gb on n1, as slurmctld sees it
  local u c
  u=$(scontrol -d show node n1 | grep -oE 'GresUsed=[^ ]*' | tr ',' '\n' | sed -n 's/^vgpu:2g.20gb:\([0-9]*\).*/\1/p')
  c=$(scontrol show node n1 | grep -oE ' Gres=[^ ]*' | tr ',' '\n' | sed -n 's/^vgpu:2g.20gb:\([0-9]*\).*/\1/p')
  echo "${u:-0}/${c:-0}"
}
# n1 starts with the idle layout: 2g.20gb x4 over its two GPUs. j1 holds two of them.
j1=$(vp_sbatch -p infer -w n1 --gres=vgpu:2g.20gb:2 --wrap 'sleep 120')
vp_wait_running "$j1" 60 || vc_fail "job $j1 did not start"
sleep 2
before=$(used_2g)
vc_ctld_stop
vc_ctld_start || vc_fail "slurmctld did not restart"
vc_wait_idle 60 || true
sleep 3
after=$(used_2g)
echo "2g.20gb used/configured on n1: before the slurmctld restart $before, after $after"
# Four more 2g.20gb on n1 cannot fit while j1 holds two: the job must pend.
j2=$(vp_sbatch -p infer -w n1 --gres=vgpu:2g.20gb:4 --wrap 'sleep 5')
sleep 8
st=$(vc_job_state "$j2")
echo "job $j2 (2g.20gb:4 on n1 while job $j1 holds 2g.20gb:2): $st $(scontrol show job "$j2" | grep -oE 'Reason=[^ ]*')"
grep -h "job $j2:" "$VGPU_STATE_DIR/n1/vgpu.log" || true
scancel "$j1" "$j2"; vp_wait_done "$j1" 60; vp_wait_done "$j2" 60
if [ "$st" = PENDING ] && [ "${after%/*}" = "${before%/*}" ]; then
  vc_log "PASS: the allocation survived the slurmctld restart"
  exit 0
fi
echo "FAIL: slurmctld lost job $j1's typed allocation across its restart (used/configured $before -> $after) and started job $j2 ($st)" >&2
exit 1
}
