#!/usr/bin/env bash
# A registration slurmctld applies must never make it forget what running jobs hold. From Slurm
# 23.11 slurmctld applies a node's registration report while the node has a zero-count type (left
# by a split change that dropped a profile) and deletes the types the report lacks, allocations
# included; measured on 26.05 with a report read when slurmd started, a second job was then given
# the instance the first one held. The plugin keeps slurmd's report equal to the advertisement, so
# after a profile is dropped and a periodic registration runs, the split and the holding job's
# allocation are intact and a job asking for more than is free pends.
set -u
export VC_SLURMD_TIMEOUT=${VC_SLURMD_TIMEOUT:-6}   # periodic re-registration every ~40 s
. "$(dirname "$0")/../lib.sh"
trap 'vc_finish $?' EXIT

vc_init
vc_write_advertisement n1 1 "1g.10gb=2 3g.40gb=1"
vc_start
vc_assert_gres n1 "1g.10gb=2 3g.40gb=1" 10
used_1g() { scontrol -d show node n1 | grep -oE 'GresUsed=[^ ]*' | tr ',' '\n' | sed -n 's/^.*vgpu:1g.10gb:\([0-9]*\).*/\1/p'; }

hold=$(vc_sbatch -w n1 --gres=vgpu:1g.10gb:1 --wrap 'sleep 600') || vc_fail "sbatch refused"
vc_wait_job "$hold" RUNNING 20 || vc_fail "holding job did not start"
[ "$(used_1g)" = 1 ] || vc_fail "slurmctld counts $(used_1g) 1g.10gb in use, not 1"

split="1g.10gb=1 2g.20gb=2"   # 3g.40gb dropped: a zero-count type from 23.11
vc_advertise n1 2 "$split" || vc_fail "new split not adopted"
vc_wait_periodic_registration 120 || vc_fail "no periodic re-registration seen"
vc_assert_gres n1 "$split" 5
[ "$(used_1g)" = 1 ] || vc_fail "after a registration slurmctld counts $(used_1g) 1g.10gb in use, not 1"

over=$(vc_sbatch -w n1 --gres=vgpu:1g.10gb:1 --wrap 'true') || vc_fail "sbatch refused"
sleep 3
state=$(vc_job_state "$over")
[ "$state" = PENDING ] || vc_fail "job $over asking for a 1g.10gb that job $hold holds is $state, not PENDING"
scancel "$over"
[ "$(vc_job_state "$hold")" = RUNNING ] || vc_fail "holding job $hold is $(vc_job_state "$hold")"
vc_assert_no_bad_nodes
echo PASS
