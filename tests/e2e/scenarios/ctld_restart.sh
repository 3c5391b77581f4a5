#!/usr/bin/env bash
# A restarted slurmctld forgets running jobs' typed vgpu allocations (docs/reliability-soak.md,
# finding 1): GresUsed no longer counts them, and Slurm would start a second job on instances the
# first one holds, which that job's prolog must cancel. The planner now leaves such instances out
# of the advertisement until their job ends. This checks it: after the restart, a job asking for
# more 2g.20gb than n1 really has free must pend (or be refused at submission while n1 offers
# less than it asks), never start and be cancelled; the first job keeps running on its instances.
# Then `scontrol reconfigure` with the first job still running (from Slurm 23.11 it restarts every
# daemon): the job keeps its instances, no node drains, and a job that fits still runs.
#   VP_BIN=<build> bash tests/e2e/scenarios/ctld_restart.sh     (about 1 minute)
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
# RUNNING comes while the prolog still works: wait until the ledger gives the job its two.
for _ in $(seq 150); do [ "$(vp_ledger_uuids n1 "$j1" | tr ',' '\n' | grep -c MIG-)" = 2 ] && break; sleep 0.2; done
sleep 1
before=$(used_2g)
vc_ctld_stop
vc_ctld_start || vc_fail "slurmctld did not restart"
vc_wait_idle 60 || true
sleep 3
after=$(used_2g)
echo "2g.20gb used/configured on n1: before the slurmctld restart $before, after $after"
# Four more 2g.20gb on n1 cannot fit while j1 holds two: the job must not start. The planner
# needs two rounds to believe what slurmctld reports; wait for its note.
for _ in $(seq 60); do grep -q "slurmctld does not count instances jobs here hold" "$VGPU_STATE_DIR/n1/vgpu.log" && break; sleep 0.5; done
now=$(used_2g)
echo "2g.20gb used/configured on n1 once the planner saw it: $now"
j2=$(vp_sbatch -p infer -w n1 --gres=vgpu:2g.20gb:4 --wrap 'sleep 5')
sleep 8
st=refused
[ "$j2" != refused ] && st=$(vc_job_state "$j2")
echo "job $j2 (2g.20gb:4 on n1 while job $j1 holds 2g.20gb:2): $st $( [ "$j2" != refused ] && scontrol show job "$j2" | grep -oE 'Reason=[^ ]*')"
grep -h "job $j2:" "$VGPU_STATE_DIR/n1/vgpu.log" || true
j1_state=$(vc_job_state "$j1")
j1_uuids=$(vp_ledger_uuids n1 "$j1")
[ "$j2" != refused ] && scancel "$j2"
problems=""
scontrol reconfigure || problems+=" scontrol reconfigure failed;"
sleep 3
vc_wait_idle 60 || problems+=" nodes not back after reconfigure;"
vc_assert_no_bad_nodes
[ "$(vc_job_state "$j1")" = RUNNING ] || problems+=" job $j1 was $(vc_job_state "$j1") after reconfigure;"
[ "$(vp_ledger_uuids n1 "$j1")" = "$j1_uuids" ] || problems+=" job $j1's instances changed across reconfigure;"
j3=$(vp_sbatch -p infer --gres=vgpu:1g.10gb:1 --wrap 'true')
vp_wait_done "$j3" 60 || problems+=" job $j3 after reconfigure did not finish;"
[ "$(vc_job_state "$j3")" = COMPLETED ] || problems+=" job $j3 after reconfigure was $(vc_job_state "$j3");"
echo "after scontrol reconfigure: job $j1 $(vc_job_state "$j1"), job $j3 $(vc_job_state "$j3")"
scancel "$j1"; vp_wait_done "$j1" 60
[ "$j2" != refused ] && vp_wait_done "$j2" 60
case $st in PENDING|refused) ;; *) problems+=" job $j2 was $st;" ;; esac
[ "$j1_state" = RUNNING ] || problems+=" job $j1 was $j1_state;"
[ "$(echo "$j1_uuids" | tr ',' '\n' | grep -c MIG-)" = 2 ] || problems+=" job $j1 held '$j1_uuids';"
vp_check || problems+=" node state inconsistent;"
if [ -z "$problems" ]; then
  vc_log "PASS: after the slurmctld restart ($before -> $after -> $now used/configured) job $j2 did not start on job $j1's instances"
  exit 0
fi
echo "FAIL:$problems (2g.20gb used/configured $before -> $after -> $now)" >&2
exit 1
}
