#!/usr/bin/env bash
# The split changes (the planner rewrites advertisement.json and hands it to slurmctld: SIGHUP
# before Slurm 23.11, scontrol update after) while a job holds vgpu, and survives slurmd restart,
# slurmctld restart, scontrol reconfigure and a periodic re-registration, without any node ever
# draining or going INVAL.
set -u
export VC_SLURMD_TIMEOUT=${VC_SLURMD_TIMEOUT:-6}   # periodic re-registration every ~40 s
. "$(dirname "$0")/../lib.sh"
trap 'vc_finish $?' EXIT

vc_init
vc_write_advertisement n1 1 "1g.10gb=2 3g.40gb=1"
vc_start
vc_assert_gres n1 "1g.10gb=2 3g.40gb=1" 10

hold=$(vc_sbatch -w n1 --gres=vgpu:1g.10gb:1 --wrap 'sleep 600') || vc_fail "sbatch refused"
vc_wait_job "$hold" RUNNING 20 || vc_fail "holding job did not start"

step() { vc_log "$*"; }
step "split change while job $hold holds 1g.10gb:1"
# Counts include instances in use: Slurm subtracts its own allocations.
split="1g.10gb=1 2g.20gb=2 3g.40gb=1"
vc_advertise n1 2 "$split" || vc_fail "new split not adopted"
vc_assert_no_bad_nodes
j=$(vc_sbatch -w n1 --gres=vgpu:2g.20gb:2 --wrap true) || vc_fail "sbatch 2g.20gb refused"
vc_wait_job "$j" COMPLETED 30 || vc_fail "job on a newly advertised type did not run"

step "slurmd restart, 2g.20gb dropped while it was down"
vc_slurmd_stop n1
split="1g.10gb=1 3g.40gb=1 4g.40gb=1"
vc_write_advertisement n1 3 "$split"
vc_slurmd_start n1 || vc_fail "slurmd n1 did not restart"
vc_wait_idle 30 || vc_fail "n1 not back after restart"
# From 23.11 slurmctld ignores a same-total split at registration (unless the node has a
# zero-count type): the planner, seeing Slurm's split differ from the file, hands it over again
# (libvgpu/node/planner_round/planner_round.cpp, resync_slurm_split).
if [ "$VC_SLURM_RELEASE" -ge 2311 ]; then vc_publish_split n1 "$split" || vc_fail "scontrol update refused"; fi
vc_assert_gres n1 "$split" 15
vc_assert_no_bad_nodes

step "slurmctld restart"
vc_ctld_stop
vc_ctld_start || vc_fail "slurmctld did not restart"
vc_wait_idle 30 || vc_fail "nodes not back after slurmctld restart"
vc_assert_gres n1 "$split" 30
vc_assert_no_bad_nodes

step "scontrol reconfigure"
vc_reconfigure || vc_fail "reconfigure failed"
sleep 2
vc_wait_idle 30 || vc_fail "nodes not back after reconfigure"
vc_assert_gres n1 "$split" 30
vc_assert_no_bad_nodes

step "split change, then a periodic re-registration"
split="1g.10gb=3 7g.80gb=1"
vc_advertise n1 4 "$split" || vc_fail "split after reconfigure not adopted"
vc_wait_periodic_registration 120 || vc_fail "no periodic re-registration seen"
vc_assert_gres n1 "$split" 5
vc_assert_no_bad_nodes

[ "$(vc_job_state "$hold")" = RUNNING ] || vc_fail "holding job $hold is $(vc_job_state "$hold")"
grep -E 'count changed|INVAL|drain' "$VC_RUN/log/slurmctld.log" | grep -v 'debug' | grep -q . \
  && vc_fail "slurmctld logged a GRES inconsistency: $(grep -E 'count changed|INVAL|drain' "$VC_RUN/log/slurmctld.log" | head -3)"
echo PASS
