#!/usr/bin/env bash
# Slurm's other job transitions keep the guarantees: a running job requeued (scontrol requeue)
# gives its instances back through the epilog and gets fresh ones when it starts again; a
# suspended job keeps its instances (the GRES stay allocated to it) and finishes after resume; a
# job Slurm starts where the node has no room is requeued by its prolog, never cancelled; a job
# preempted (PreemptType=preempt/partition_prio) with PreemptMode=REQUEUE or CANCEL gives its
# instances back, and the preemptor gets its own.
# After each: the job sees exactly its own instances, nothing leaked, no drained node.
set -u
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
# Slurm holds a requeued job back for the credential lifetime (cred_expire, 120 s by default), and
# slurmd forgets the job's old credential after it. Shortened here so the test does not wait 2
# minutes. Not forced with StartTime=now: on 22.05 a job restarted on the same node before slurmd
# forgot the old credential starts without its prolog (docs/slurm.md, "Requeue").
export VC_CRED_EXPIRE=10
eval "_tr_vc_conf_write() $(declare -f vc_conf_write | tail -n +2)"
vc_conf_write() {
  _tr_vc_conf_write "$@"
  # Preemption by partition: jobs in `urgent` (PriorityTier 10) preempt those of infer (requeued;
  # cancelled once the test switches infer to PreemptMode=CANCEL). SUSPEND is left out on purpose: cons_tres takes only the cores of a
  # suspended job back and keeps its memory and GRES (job_test.c, JOB_RES_ACTION_RESUME), so a
  # preemptor never gets a suspended job's slices; docs/slurm.md.
  sed -i -e '1i PreemptType=preempt/partition_prio\nPreemptMode=REQUEUE' \
    -e 's/^PartitionName=infer .*/& PriorityTier=1 PreemptMode=REQUEUE/' "$SLURM_CONF"
  echo "PartitionName=urgent Nodes=$(_vp_nodelist) MaxTime=INFINITE State=UP PriorityTier=10 PreemptMode=OFF" >> "$SLURM_CONF"
}
# The policy serves `urgent` too (the job_submit filter's table is made from it after this).
eval "_tr_vp_policy_write() $(declare -f _vp_policy_write | tail -n +2)"
_vp_policy_write() {
  _tr_vp_policy_write
  python3 - "$VC_RUN/etc/vgpu-policy.json" <<'PY2' || vc_fail "could not add the urgent partition to the policy"
import json, sys
path = sys.argv[1]
d = json.load(open(path))
d["partitions"]["urgent"] = {k: v for k, v in d["partitions"]["infer"].items() if k != "idle_layout"}
json.dump(d, open(path, "w"), indent=1)
PY2
  "$VP_VGPUCTL" policy check "$VC_RUN/etc/vgpu-policy.json" >/dev/null || vc_fail "policy with urgent does not check"
}
vp_start
job=$(vp_job_script)

# The MIG uuids in the last line job $1 printed, sorted and comma-joined; and the node.
last_cvd() { grep '^CVD=' "$VC_RUN/out/$1.out" 2>/dev/null | tail -1 | sed 's/^CVD=\([^ ]*\).*/\1/' | tr ',' '\n' | sort | paste -sd, -; }
last_node() { grep '^CVD=' "$VC_RUN/out/$1.out" 2>/dev/null | tail -1 | sed 's/.*NODE=//'; }
cvd_lines() { local n; n=$(grep -c '^CVD=' "$VC_RUN/out/$1.out" 2>/dev/null); echo "${n:-0}"; }
wait_cvd_lines() { # $1 job $2 lines [$3 s]
  local t=0 lim=$(( ${3:-90} * 5 ))
  until [ "$(cvd_lines "$1")" -ge "$2" ]; do
    t=$((t + 1)); [ $t -ge $lim ] && return 1
    sleep 0.2
  done
}
assert_sees_own_now() { # $1 job: its latest output names exactly what the ledger gives it
  local node want got
  node=$(last_node "$1"); got=$(last_cvd "$1"); want=$(vp_ledger_uuids "$node" "$1")
  [ -n "$want" ] && [ "$want" = "$got" ] || vc_fail "job $1 on $node sees '$got'; its ledger instances are '$want'"
}

echo "--- requeue of a running job"
j=$(vp_sbatch -p infer --requeue --open-mode=append --gres=vgpu:1g.10gb:2 "$job" 15 5)
wait_cvd_lines "$j" 1 60 || vc_fail "job $j did not start"
assert_sees_own_now "$j"
first=$(last_cvd "$j"); node=$(last_node "$j")
vc_log "job $j runs on $node with $first; requeueing it"
scontrol requeue "$j" || vc_fail "scontrol requeue $j refused"
# The epilog of the first run releases its instances before the job can start again.
t=0
while [ -n "$(vp_ledger_uuids "$node" "$j")" ] && [ "$(cvd_lines "$j")" -lt 2 ]; do
  t=$((t + 1)); [ $t -ge 300 ] && vc_fail "job $j still holds $first on $node 60 s after the requeue"
  sleep 0.2
done
wait_cvd_lines "$j" 2 90 || vc_fail "requeued job $j did not start again: $(squeue -h -j "$j" -o '%T %r')"
assert_sees_own_now "$j"
vc_log "job $j started again on $(last_node "$j") with $(last_cvd "$j")"
vp_wait_done "$j" 60 || vc_fail "requeued job $j did not finish"
vp_assert_completed "$j"
[ "$(scontrol show job "$j" | grep -o 'Restarts=[0-9]*')" = Restarts=1 ] || vc_fail "job $j: $(scontrol show job "$j" | grep -o 'Restarts=[0-9]*')"
vp_assert_no_instances
vp_check || vc_fail "inconsistent after the requeue"

echo "--- suspend and resume"
s=$(vp_sbatch -p infer --gres=vgpu:2g.20gb:1 "$job" 8)
wait_cvd_lines "$s" 1 60 || vc_fail "job $s did not start"
assert_sees_own_now "$s"
held=$(last_cvd "$s"); node=$(last_node "$s")
scontrol suspend "$s" || vc_fail "scontrol suspend $s refused"
vc_wait_job "$s" SUSPENDED 10 || vc_fail "job $s not suspended"
sleep 3
[ "$(vp_ledger_uuids "$node" "$s")" = "$held" ] || vc_fail "suspended job $s lost its instance $held on $node"
vc_assert_no_bad_nodes || vc_fail "a node drained while $s was suspended"
scontrol resume "$s" || vc_fail "scontrol resume $s refused"
vp_wait_done "$s" 60 || vc_fail "resumed job $s did not finish"
vp_assert_completed "$s"
vp_assert_no_instances
vp_check || vc_fail "inconsistent after suspend/resume"

echo "--- preemption: REQUEUE, then CANCEL"
# The low job takes both CPUs of n1, so the urgent job (one CPU) can start there only by preempting
# it. Each holds slices; the preemptor must get fresh instances of its own once the low job's
# epilog has released the low job's.
# (A low job in train would need a profile n1 advertises right now: pinned with -w, Slurm refuses
# at submission a type the node does not list.)
preempt() { # $1 low gres: sets $low, the preempted job, once the urgent one ran
  local urgent
  low=$(vp_sbatch -p infer -w n1 -c 2 --requeue --open-mode=append --gres="$1" "$job" 60)
  wait_cvd_lines "$low" 1 60 || vc_fail "low job $low did not start"
  assert_sees_own_now "$low"
  urgent=$(vp_sbatch -p urgent -w n1 -c 1 --gres=vgpu:1g.10gb:1 "$job" 3)
  wait_cvd_lines "$urgent" 1 90 || vc_fail "urgent job $urgent did not start: $(squeue -h -j "$urgent" -o '%T %r')"
  assert_sees_own_now "$urgent"
  [ -z "$(vp_ledger_uuids n1 "$low")" ] || vc_fail "preempted job $low still holds $(vp_ledger_uuids n1 "$low") on n1"
  vp_wait_done "$urgent" 60 || vc_fail "urgent job $urgent did not finish"
  vp_assert_completed "$urgent"
  vc_assert_no_bad_nodes || vc_fail "a node drained around the preemption of $low"
}
preempt vgpu:1g.10gb:2
vc_log "job $low preempted (REQUEUE): $(scontrol show job "$low" | grep -oE 'JobState=[A-Z]+|Restarts=[0-9]+' | tr '\n' ' ')"
wait_cvd_lines "$low" 2 120 || vc_fail "preempted job $low did not start again: $(squeue -h -j "$low" -o '%T %r')"
assert_sees_own_now "$low"
scancel "$low"
vp_wait_done "$low" 60 || vc_fail "job $low did not leave the queue"
[ "$(scontrol show job "$low" | grep -o 'Restarts=[0-9]*')" = Restarts=1 ] || vc_fail "job $low: $(scontrol show job "$low" | grep -o 'Restarts=[0-9]*')"
vp_assert_no_instances
vp_check || vc_fail "inconsistent after preemption with requeue"
scontrol update PartitionName=infer PreemptMode=CANCEL || vc_fail "could not set PreemptMode=CANCEL on infer"
preempt vgpu:2g.20gb:1
vc_wait_job "$low" PREEMPTED 30 || vc_fail "job $low was not cancelled by preemption"
[ "$(cvd_lines "$low")" = 1 ] || vc_fail "job $low ran again after PreemptMode=CANCEL"
vp_assert_no_instances
vp_check || vc_fail "inconsistent after preemption with cancel"

echo "--- a job Slurm starts where the node has no room goes back to the queue"
# slurmctld's split can lag the node's plan (right after a slurmctld restart it forgets what
# running jobs hold). Made here by hand: n1's planner stopped, a split offering a 7g.80gb that
# n1's plan has no room for (its idle layout fills both GPUs).
vp_planner_stop n1
vc_advertise n1 1 "7g.80gb=1" || vc_fail "slurmctld did not take the stale split on n1"
# No -w n1: pinned to n1, 26.05 marks the requeued job BadConstraints once n1 offers no 7g.80gb,
# and it never runs; free to go anywhere it pends on Resources, which the planners serve.
r=$(vp_sbatch -p train --gres=vgpu:7g.80gb:1 "$job" 1)
t=0
until grep -q "prolog: job $r: vgpu: requeued: " "$VGPU_STATE_DIR/n1/vgpu.log" 2>/dev/null; do
  t=$((t + 1)); [ $t -ge 300 ] && vc_fail "job $r was not requeued by its prolog: $(squeue -h -j "$r" -o '%T %r')"
  sleep 0.2
done
comment=$(scontrol show job "$r" | grep -o 'Comment=.*' | head -1)
[[ $comment == *"vgpu: requeued: node n1: profile 7g.80gb: 0 of 1 instance(s) fit"* ]] ||
  vc_fail "job $r: no requeue reason in its Comment: '$comment'"
vc_assert_no_bad_nodes || vc_fail "a node drained when job $r was requeued"
vc_log "job $r requeued: ${comment#Comment=}"
# The planner comes back, sets the split right, and makes room for the pending 7g job.
vp_planner_start n1
vp_wait_done "$r" 120 || vc_fail "requeued job $r never ran: $(squeue -h -j "$r" -o '%T %r')"
vp_assert_completed "$r"
[ "$(scontrol show job "$r" | grep -o 'Restarts=[0-9]*')" = Restarts=1 ] || vc_fail "job $r: $(scontrol show job "$r" | grep -o 'Restarts=[0-9]*')"
[[ $(last_cvd "$r") == MIG-* ]] || vc_fail "requeued job $r ran without its instance (CVD '$(last_cvd "$r")')"
vp_assert_no_instances
vp_check || vc_fail "inconsistent after the requeue by the prolog"
vc_log "PASS transitions"
