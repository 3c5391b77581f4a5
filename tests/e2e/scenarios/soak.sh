#!/usr/bin/env bash
# Soak: a seeded stream of jobs with random profiles, node counts, durations, arrays, cancels
# (pending and running) and time limits, with slurmd, slurmctld and planner (kill -9) restarts at
# seeded points. At the end: every job left the queue in the state it should (COMPLETED, CANCELLED
# only if we cancelled it, TIMEOUT only if it was meant to), no node drained at any sample, every
# instance any prolog created was released in the node's history.jsonl, every GPU is back to the
# policy's idle layout with nothing left on the (fake) hardware but the idle instances the ledgers
# list (VP_PREPARE_SLOTS=true: one per planned slot), and vp_check agrees.
#
#   VP_SOAK_JOBS=60      submissions (array jobs count once)
#   VP_SOAK_SEED=20261122 replay a run: the plan (jobs, cancels, restart points) depends only on it
#   VP_SOAK_MAXDUR=4     longest job, seconds (a quarter of the jobs last 0 s)
#   VP_SOAK_QUEUE=10     submit while fewer of our jobs than this are in the queue
#   VP_SOAK_IDLE_LAYOUT=1 require every GPU back to the policy's idle layout (0: report only)
#   VP_SOAK_ALLOW_OVERALLOC=0 1: a job the prolog cancels because Slurm allocated more than the
#                         node's plan holds ("k of n instance(s) fit") is reported, not a failure
# Helper: tests/e2e/soak/soak.py (plan + accounting). docs/reliability-soak.md has the 1,000-job run.
set -u
# The whole script is one brace group: bash parses it before running any of it, so editing this
# file while a long soak runs cannot change the running one.
{
. "$(dirname "$0")/../lib.sh"
SOAK_PY=$VP_SRC/tests/e2e/soak/soak.py
JOBS=${VP_SOAK_JOBS:-60}
SEED=${VP_SOAK_SEED:-20261122}
MAXDUR=${VP_SOAK_MAXDUR:-4}
QUEUE=${VP_SOAK_QUEUE:-10}
IDLE_LAYOUT=${VP_SOAK_IDLE_LAYOUT:-1}
ALLOW_OVERALLOC=${VP_SOAK_ALLOW_OVERALLOC:-0}
trap 'vp_finish $?' EXIT
echo "soak: VP_SOAK_JOBS=$JOBS VP_SOAK_SEED=$SEED VP_SOAK_MAXDUR=$MAXDUR VP_SOAK_QUEUE=$QUEUE VP_SOAK_IDLE_LAYOUT=$IDLE_LAYOUT VP_SOAK_ALLOW_OVERALLOC=$ALLOW_OVERALLOC"

# Two-node jobs need two FUTURE placeholders (docs/design.md: one per node a job may span), or a
# pending -N2 job is refused, or failed with BadConstraints, whenever fewer than two real nodes
# happen to advertise its profile. The harness declares one; the soak adds a second.
eval "_soak_vc_conf_write() $(declare -f vc_conf_write | tail -n +2)"
vc_conf_write() {
  _soak_vc_conf_write "$@"
  [ -n "${VC_PORT[future2]:-}" ] || VC_PORT[future2]=$(_vc_free_port)
  sed -i -E 's/^(PartitionName=(infer|train) Nodes=[^ ]*,future)( |$)/\1,future2\3/' "$SLURM_CONF"
  echo "NodeName=future2 NodeHostname=localhost Port=${VC_PORT[future2]} CPUs=2 RealMemory=1000 State=FUTURE Gres=$(_vc_gres_line future)" >> "$SLURM_CONF"
  # A job a prolog requeues (no room after all) waits out the credential lifetime before it may
  # start again: 10 s here instead of 120 s (as in transitions.sh).
  if grep -q '^AuthInfo=' "$SLURM_CONF"; then
    sed -i 's/^AuthInfo=.*/&,cred_expire=10/' "$SLURM_CONF"
  else
    echo "AuthInfo=cred_expire=10" >> "$SLURM_CONF"
  fi
}
t0=$(date +%s)
vp_start
cat > "$VC_RUN/etc/soak-job.sh" <<'JOB'
#!/bin/bash
echo "CVD=${CUDA_VISIBLE_DEVICES-<unset>} NODE=${SLURMD_NODENAME}"
[ "${SLURM_JOB_NUM_NODES:-1}" -gt 1 ] && srun true
sleep "$1"
JOB
chmod 755 "$VC_RUN/etc/soak-job.sh"
PLAN=$VC_RUN/out/soak-plan.txt
TABLE=$VC_RUN/out/soak-jobs.txt
python3 "$SOAK_PY" plan "$SEED" "$JOBS" "$MAXDUR" > "$PLAN" || vc_fail "no plan"

declare -a P_PART P_PROF P_CNT P_N P_TASKS P_DUR P_CANCEL P_HOLD P_TIMEOUT EV_AT EV_KIND EV_NODE
while read -r kind a b c d e f g h i j; do
  if [ "$kind" = job ]; then
    P_PART[a]=$b P_PROF[a]=$c P_CNT[a]=$d P_N[a]=$e P_TASKS[a]=$f P_DUR[a]=$g P_CANCEL[a]=$h P_HOLD[a]=$i P_TIMEOUT[a]=$j
  else
    EV_AT+=("$a") EV_KIND+=("$b") EV_NODE+=("$c")
  fi
done < "$PLAN"

declare -A ST=() IDX=() RAN=() CANCELLED_AT=()   # by Slurm job id (array tasks: their own id)
declare -A BASE_IDX=()                           # sbatch's id -> plan index
declare -A CANCEL_DUE=()                         # sbatch's id -> epoch ms
REFUSED=()
max_queue=0 max_pending=0 node_samples=0 restarts_slurmd=0 restarts_ctld=0 restarts_planner=0
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# One look at the queue: the latest state of every job, how many are still ours to wait for.
ACTIVE=0
poll() {
  local out id base st pending=0 active=0
  out=$(squeue -h -r -t all -o '%A %F %T' 2>/dev/null) || return 0   # slurmctld restarting
  while read -r id base st; do
    [ -n "$base" ] && [ -n "${BASE_IDX[$base]:-}" ] || continue
    IDX[$id]=${BASE_IDX[$base]}
    ST[$id]=$st
    [ "$st" = RUNNING ] && RAN[$id]=1
    case $st in
      PENDING) pending=$((pending + 1)); active=$((active + 1)) ;;
      RUNNING|CONFIGURING|COMPLETING|SUSPENDED|REQUEUED|RESIZING|SIGNALING|STAGE_OUT) active=$((active + 1)) ;;
    esac
  done <<< "$out"
  ACTIVE=$active
  [ $active -gt $max_queue ] && max_queue=$active
  [ $pending -gt $max_pending ] && max_pending=$pending
  return 0
}

# No node drained (or down, failed, invalid) at any sample.
sample_nodes() {
  local bad
  node_samples=$((node_samples + 1))
  bad=$(sinfo -h -N -n "$(_vp_nodelist)" -o '%N %t' 2>/dev/null | sort -u | grep -E ' (drain|drng|down|fail|inval)') || return 0
  vc_fail "node(s) drained/down during the soak: $bad; $(scontrol show node "$(_vp_nodelist)" | grep -o 'Reason=.*' | sort -u | tr '\n' ' ')"
}

submit() { # $1 plan index
  local i=$1 args=(-p "${P_PART[$1]}" --gres="vgpu:${P_PROF[$1]}:${P_CNT[$1]}" -N "${P_N[$1]}") id
  [ "${P_TASKS[i]}" -gt 1 ] && args+=(--array="1-${P_TASKS[i]}")
  [ "${P_HOLD[i]}" = 1 ] && args+=(--hold)
  [ "${P_TIMEOUT[i]}" = 1 ] && args+=(-t 1)
  id=$(vp_sbatch "${args[@]}" "$VC_RUN/etc/soak-job.sh" "${P_DUR[i]}" 2>> "$VC_RUN/out/sbatch.err")
  if [ "$id" = refused ] || ! [[ $id =~ ^[0-9]+$ ]]; then
    REFUSED+=("$i"); vc_log "plan #$i: sbatch ${args[*]} refused: $(tail -1 "$VC_RUN/out/sbatch.err")"; return
  fi
  BASE_IDX[$id]=$i
  [ "${P_CANCEL[i]}" -ge 0 ] && CANCEL_DUE[$id]=$(( $(now_ms) + P_CANCEL[i] ))
}

cancel_due() {
  local id t now st
  now=$(now_ms)
  for id in "${!CANCEL_DUE[@]}"; do
    t=${CANCEL_DUE[$id]}
    [ "$now" -ge "$t" ] || continue
    st=$(vc_job_state "$id"); st=${st:-GONE}
    scancel "$id" 2>/dev/null || st="$st(scancel-failed)"
    CANCELLED_AT[$id]=$st
    unset "CANCEL_DUE[$id]"
  done
}

restart() { # $1 kind $2 node
  case $1 in
    slurmd)
      vc_log "restart: slurmd $2"
      vc_slurmd_stop "$2"
      vc_slurmd_start "$2" || vc_fail "slurmd $2 did not restart"
      restarts_slurmd=$((restarts_slurmd + 1)) ;;
    slurmctld)
      vc_log "restart: slurmctld"
      vc_ctld_stop
      vc_ctld_start || vc_fail "slurmctld did not restart"
      restarts_ctld=$((restarts_ctld + 1)) ;;
    planner)
      local f=$VGPU_STATE_DIR/$2/planner.pid pid
      pid=$(cat "$f" 2>/dev/null) || vc_fail "planner on $2 has no pid file"
      vc_log "restart: kill -9 planner $2 (pid $pid)"
      kill -9 "$pid" || vc_fail "planner $2 (pid $pid) was not running"
      while proc_alive "$pid"; do sleep 0.05; done
      rm -f "$f"
      vp_planner_start "$2"
      restarts_planner=$((restarts_planner + 1)) ;;
  esac
}

next=0 ev=0
while [ $next -lt "$JOBS" ]; do
  poll
  sample_nodes
  cancel_due
  while [ $next -lt "$JOBS" ] && [ "$ACTIVE" -lt "$QUEUE" ]; do
    while [ $ev -lt ${#EV_AT[@]} ] && [ "${EV_AT[ev]}" -le $next ]; do restart "${EV_KIND[ev]}" "${EV_NODE[ev]}"; ev=$((ev + 1)); done
    submit $next
    next=$((next + 1)); ACTIVE=$((ACTIVE + 1))
    [ $((next % 50)) = 0 ] && vc_log "soak: $next/$JOBS submitted, queue $ACTIVE"
  done
  sleep 0.5
done
vc_log "soak: all $JOBS submitted; waiting for the queue to drain"
# The last submissions may include a 7g.80gb:2 -N2 that needs two whole nodes: generous bound.
deadline=$(( $(date +%s) + 300 + 2 * MAXDUR ))
while :; do
  poll; sample_nodes; cancel_due
  [ "$ACTIVE" = 0 ] && [ ${#CANCEL_DUE[@]} = 0 ] && break
  [ "$(date +%s)" -lt $deadline ] || vc_fail "queue did not drain: $(squeue -h -o '%A %T %r %b' | head -20 | tr '\n' ';')"
  sleep 0.5
done
poll
t_jobs=$(date +%s)

{
  for id in "${!ST[@]}"; do echo "$id ${IDX[$id]} ${ST[$id]} ${RAN[$id]:-0} ${CANCELLED_AT[$id]:--}"; done
  for i in "${REFUSED[@]}"; do echo "refused $i"; done
} > "$TABLE"

# The end state: the planners return every GPU to the idle layout once nothing is pending.
vp_wait_settled 60 || vc_fail "advertisements did not settle after the soak"
# With prepare_slots the planners then make an instance for every slot: wait for that too, so the
# hardware and the ledgers are read at rest.
if [ "$VP_PREPARE_SLOTS" = true ]; then
  vp_wait_prepared 180 || vc_log "slots not all prepared after the soak (the accounting below says where)"
fi
layout_ok=0
for _ in $(seq 30); do
  "$VP_BIN/vgpuctl/vgpuctl" status --state-dir "$VGPU_STATE_DIR" --json > "$VC_RUN/out/status-end.json" || vc_fail "vgpuctl status failed"
  python3 "$SOAK_PY" idle "$VC_RUN/out/status-end.json" "$VC_RUN/etc/vgpu-policy.json" && { layout_ok=1; break; }
  [ "$IDLE_LAYOUT" = 1 ] || break
  sleep 1
done
[ $layout_ok = 1 ] || vc_log "the GPUs are not back to the idle layout (the accounting below says where)"
vp_status
vp_wait_settled 30
sample_nodes

echo "restarts: slurmd $restarts_slurmd, slurmctld $restarts_ctld, planner (kill -9) $restarts_planner"
echo "queue: max $max_queue of our jobs in the queue, max $max_pending pending"
echo "wall: $((t_jobs - t0)) s start to last job out ($JOBS submissions, seed $SEED)"
echo "nodes: no drained/down node in $node_samples samples of sinfo"
rc=0
VP_SOAK_IDLE_LAYOUT=$IDLE_LAYOUT VP_SOAK_ALLOW_OVERALLOC=$ALLOW_OVERALLOC python3 "$SOAK_PY" check "$VC_RUN" "$PLAN" "$TABLE" || rc=1
vp_assert_no_instances
vp_check || { vc_log "vp_check: inconsistent at the end"; rc=1; }
[ $rc = 0 ] || vc_fail "soak end state is wrong (seed $SEED; see above)"
echo "wall: $(( $(date +%s) - t0 )) s in all"
vc_log "PASS soak"
exit 0
}
