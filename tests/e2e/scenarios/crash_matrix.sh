#!/usr/bin/env bash
# Crash-point matrix (docs/reliability.md): SIGKILL a product process at each named step of the
# prolog, epilog, release work, planner round, ledger store and NVML backend (vgpu/crash_point.h),
# then recover: rerun the epilog, restart slurmd, restart slurmctld, or "reboot" the node's agents
# (SIGKILL slurmd and planner, keep the fake GPU state, start both again). The planner daemon is
# restarted whenever it died, as systemd's Restart=always does. After each case:
#   - the crashed job ran with exactly its own instances, or was cancelled with a vgpu: reason;
#   - a witness job on the same node kept its instance the whole time (never destroyed under it);
#   - nothing leaked once the case's job is gone; ledger == hardware == advertisement == Slurm;
#   - no node drained, no sanitizer report.
# The cases cycle through the recoveries; the matrix (point x recovery -> outcome) is printed at
# the end. By default a CI subset of the cases runs (ci_cases below); VP_CRASH_ALL=1 runs all of
# them, VP_CRASH_ONLY="regex" the matching ones.
# VP_CRASH_SHARES=1 (ctest e2e.crash_matrix_shares) runs the shared-instance cases instead
# (docs/shared-instances.md): the policy offers "quarter" (3g.40gb in 4) in infer, each node runs
# the fake MPS, and a case's job is one share; every one of those cases runs.
set -u
VP_CRASH_SHARES=${VP_CRASH_SHARES:-0}
if [ "$VP_CRASH_SHARES" = 1 ]; then
  VP_INFER_PROFILES='["1g.10gb", "1g.20gb", "2g.20gb", "quarter"]'
  VP_SHARE_TYPES='{"quarter": {"instance": "3g.40gb", "shares": 4}}'
  VP_UNITS_PER_GPU=9  # as in shared_instances.sh: docs/slurm.md's total with share types
fi
# The checks call python3 hundreds of times; a version manager's shim in front of it costs seconds
# per call on a loaded machine. The system interpreter is enough (json, sys).
[ -x /usr/bin/python3 ] && PATH=/usr/bin:$PATH
. "$(dirname "$0")/../lib.sh"
[ "$VP_CRASH_SHARES" = 1 ] && VC_PROFILES="$VC_PROFILES quarter"
VP_CRASH_POINTS=1
# A slurmd started by a recovery can outlive vp_stop (its pid file is not always rewritten after
# a kill -9): stop every slurmd of this run's config too, by pid.
_cm_slurmd_pids() { pgrep -f -- "slurmd -f ${SLURM_CONF:-/nonexistent} -N ${1:-}"; }
_cm_stop_strays() {
  local p t
  for p in $(_cm_slurmd_pids); do kill "$p"; done
  for t in $(seq 100); do [ -z "$(_cm_slurmd_pids)" ] && return; sleep 0.1; done
  for p in $(_cm_slurmd_pids); do kill -9 "$p"; done
}
trap 'rc=$?; vp_stop >/dev/null 2>&1; _cm_stop_strays; vp_finish $rc' EXIT
vp_start
mkdir -p "$VC_RUN/crash"
chmod 755 "$VC_RUN/crash"
started=$(date +%s)

cat > "$VC_RUN/etc/crash-job.sh" <<'JOB'
#!/bin/bash
# What the job sees, and what its node's job record names for it.
rec=$VGPU_STATE_DIR/$SLURMD_NODENAME/jobs/$SLURM_JOB_ID.json
uuids=$(python3 -c 'import json,sys
try: print(",".join(sorted(i.get("device_uuid", i.get("mig_uuid")) for i in json.load(open(sys.argv[1]))["instances"])))
except Exception: print("<none>")' "$rec")
echo "CVD=${CUDA_VISIBLE_DEVICES-<unset>} RECORD=$uuids NODE=$SLURMD_NODENAME PIPE=${CUDA_MPS_PIPE_DIRECTORY-<unset>}"
sleep "${1:-2}"
JOB
chmod 755 "$VC_RUN/etc/crash-job.sh"
job=$VC_RUN/etc/crash-job.sh
node=n1

planner_alive() { local f=$VGPU_STATE_DIR/$1/planner.pid; [ -s "$f" ] && proc_alive "$(cat "$f")"; }
planner_ensure() { planner_alive "$1" || { rm -f "$VGPU_STATE_DIR/$1/planner.pid"; vp_planner_start "$1"; }; }

# MIG uuids the (fake) driver reports for node $1, one per line, read through NVML itself.
hw_uuids() { ( . "$VC_RUN/etc/vgpu-env/$1.sh"; "$VP_BIN/fakenvml/fake-nvml-smi" ) | grep -o 'MIG-[0-9a-f-]*' | sort; }

echo "--- witness: a long job on $node whose instance must survive every crash and recovery"
witness=$(vp_sbatch -p infer -w "$node" --gres=vgpu:2g.20gb:1 "$job" 100000)
vp_wait_started "$witness" 60 || vc_fail "witness $witness did not start"
witness_uuid=$(vp_ledger_uuids "$node" "$witness")
[ -n "$witness_uuid" ] || vc_fail "witness $witness has no instance in the ledger"
hw_uuids "$node" | grep -qx "$witness_uuid" || vc_fail "witness instance $witness_uuid not on the hardware"

witness_intact() {
  [ "$(vc_job_state "$witness")" = RUNNING ] || { echo "witness $witness is $(vc_job_state "$witness")"; return 1; }
  [ "$(vp_ledger_uuids "$node" "$witness")" = "$witness_uuid" ] || { echo "witness lost its ledger instance"; return 1; }
  hw_uuids "$node" | grep -qx "$witness_uuid" || { echo "witness instance $witness_uuid destroyed on the hardware"; return 1; }
}

# Until node $node holds only the witness's instance and the other nodes none. GPU instances are
# counted from the fake state (a GI without compute instance has no MIG uuid), uuids through NVML.
# The planner's ended-job backstop asks Slurm at most once a minute and needs two misses in a
# row, so what only it releases can take up to two minutes: wait that long, no longer.
only_witness_left() {
  local hw gis end=$((SECONDS + 150))
  while [ $SECONDS -lt $end ]; do
    hw=$(hw_uuids "$node" | paste -sd, -)
    gis=$(vp_hw_instances)
    [ "$hw" = "$witness_uuid" ] && [ "$gis" = "n1:1 n2:0 n3:0" ] && return 0
    sleep 0.5
  done
  echo "left on the hardware: $node: MIG $hw; GPU instances $gis"
  return 1
}

# A share's instance has an MPS daemon only while a share of it is held: none once the case's job
# is gone (the epilog quits it, or the planner's sweep does after a crash).
no_mps_daemon_left() {
  local root end=$((SECONDS + 150))
  root=$( . "$VC_RUN/etc/vgpu-env/$node.sh"; echo "${VGPU_MPS_ROOT:-}")
  [ -n "$root" ] || return 0
  while [ $SECONDS -lt $end ]; do
    [ -z "$(ls "$root" 2>/dev/null)" ] && return 0
    sleep 0.5
  done
  echo "MPS daemon(s) left: $(ls "$root" | paste -sd, -)"
  return 1
}

recover() { # $1 recovery, $2 job (may be empty)
  local t
  case $1 in
    rerun-epilog)
      planner_ensure "$node"
      [ -n "$2" ] && { vp_wait_done "$2" 90 || return 1
        SLURMD_NODENAME=$node SLURM_JOB_ID=$2 "$VC_RUN/etc/hooks/epilog.sh"; } ;;
    restart-slurmd)
      vc_slurmd_stop "$node"
      for t in $(seq 100); do [ -z "$(_cm_slurmd_pids "$node")" ] && break; sleep 0.1; done
      vc_slurmd_start "$node" || return 1 ;;
    restart-slurmctld)
      vc_ctld_stop; vc_ctld_start || return 1 ;;
    reboot)
      # After the case's job (a node lost under a launching job costs Slurm minutes to notice, and
      # requeues it): the node's agents vanish at once; jobs' slurmstepd and the fake GPU state survive.
      planner_ensure "$node"
      [ -n "$2" ] && { vp_wait_done "$2" 90 || return 1; }
      kill -9 "$(cat "$VGPU_STATE_DIR/$node/planner.pid" 2>/dev/null)" 2>/dev/null
      kill -9 $(_cm_slurmd_pids "$node") 2>/dev/null
      sleep 0.5
      rm -f "$VC_RUN/run/slurmd.$node.pid" "$VGPU_STATE_DIR/$node/planner.pid"
      vc_slurmd_start "$node" || return 1 ;;
  esac
  planner_ensure "$node"
  vc_wait_idle 60
}

# Without VP_CRASH_ALL=1 (or VP_CRASH_ONLY) only these cases run, to fit the CI budget: every
# component (prolog, NVML, ledger store, epilog, release, planner) and every recovery, the chained
# release-and-cancel case, the planner killed while serving a hook and the cleanup process of
# scrubs after the epilog (started by a hook and by the planner) among them; the
# epilog-dies-three-times cases wait for the planner's once-a-minute ended-job backstop, so they
# run with VP_CRASH_ALL=1 only. 10-30 s a case.
ci_cases="|prolog.after_create|nvml.after_gi_create@prolog|ledger.after_temp_write@prolog\
|prolog.after_create x2 +planner.after_reconcile_destroy|release.after_destroy@epilog\
|release.after_ledger_remove@epilog|planner.after_shrink_confirmed\
|prolog.after_create@served|epilog.after_retire@served|release.after_scrub@cleanup\
|release.after_destroy@cleanup+served|"

# One case: arm, drive the workload, wait for the crash, recover, check.
rows=()
fails=0
recoveries=(rerun-epilog restart-slurmd restart-slurmctld reboot)
case_no=0
run_case() { # $1 point label, $2 arming text (lines separated by ';'), $3 workload: job | train | infer7,
              # $4 expected end of the job: ran (default) | cancelled, $5 a recovery instead of the next in turn
  local label=$1 arm=$2 work=$3 expect=${4:-ran} recovery j="" t st outcome="" problem="" who armed hits
  if [ -n "${VP_CRASH_ONLY:-}" ]; then [[ $label =~ $VP_CRASH_ONLY ]] || return 0
  elif [ "${VP_CRASH_ALL:-0}" != 1 ]; then [[ $ci_cases == *"|$label|"* ]] || return 0; fi
  recovery=${5:-${recoveries[$((case_no % ${#recoveries[@]}))]}}
  case_no=$((case_no + 1))
  echo "--- $label, then $recovery"
  local t0=$SECONDS
  : > "$VC_RUN/crash/$node.hits"
  echo "$arm" | tr ';' '\n' > "$VC_RUN/crash/$node.tmp" && mv "$VC_RUN/crash/$node.tmp" "$VC_RUN/crash/$node"
  case $work in
    job) j=$(vp_sbatch -p infer -x n2,n3 --gres=vgpu:1g.10gb:1 "$job" 2) ;;
    train) j=$(vp_sbatch -p train -x n2,n3 --gres=vgpu:7g.80gb:1 "$job" 2) ;;
    infer7) j=$(vp_sbatch -p infer -x n2,n3 --gres=vgpu:1g.10gb:7 "$job" 2) ;;
    share) j=$(vp_sbatch -p infer -x n2,n3 --gres=vgpu:quarter:1 "$job" 2) ;;
  esac
  for t in $(seq 450); do [ -e "$VC_RUN/crash/$node" ] || break; sleep 0.2; done
  if [ -e "$VC_RUN/crash/$node" ]; then
    problem="not reached ($(head -1 "$VC_RUN/crash/$node") still armed)"
    rm -f "$VC_RUN/crash/$node"
  fi
  armed=$(echo "$arm" | tr ';' '\n' | grep -c .)
  # A process takes its line, records the hit, then dies: recover only once every hit process is
  # gone (else a recovery could find the planner "alive" a moment before its SIGKILL lands).
  for t in $(seq 50); do [ "$(grep -c . "$VC_RUN/crash/$node.hits")" -ge "$armed" ] && break; sleep 0.1; done
  local pid
  for pid in $(awk '{print $3}' "$VC_RUN/crash/$node.hits"); do
    for t in $(seq 50); do proc_alive "$pid" || break; sleep 0.1; done
  done
  hits=$(grep -c . "$VC_RUN/crash/$node.hits")
  [ "$hits" = "$armed" ] || problem+="${problem:+; }$hits of $armed armed crash(es) happened"
  who=$(awk '{print $2}' "$VC_RUN/crash/$node.hits" | sort | uniq -c | awk '{printf "%s%s x%s", (NR>1?", ":""), $2, $1}')
  recover "$recovery" "$j" || problem+="${problem:+; }recovery $recovery failed"
  if [ -n "$j" ] && ! vp_wait_done "$j" 120; then problem+="${problem:+; }job $j never ended"; fi
  st=$(vc_job_state "$j")
  case $st in
    COMPLETED)
      local line cvd rec
      line=$(grep -m1 '^CVD=' "$VC_RUN/out/$j.out" 2>/dev/null)
      cvd=$(echo "$line" | sed 's/^CVD=\([^ ]*\).*/\1/' | tr ',' '\n' | sort | paste -sd, -)
      rec=$(echo "$line" | sed 's/.*RECORD=\([^ ]*\).*/\1/')
      if [[ $cvd == MIG-* ]] && [ "$cvd" = "$rec" ] && [[ ,$cvd, != *,$witness_uuid,* ]]; then outcome="ran with its own instance(s)"
      else problem+="${problem:+; }job ran with CVD '$cvd', record '$rec'"; fi
      if [ "$work" = share ]; then
        if [[ $line == *" PIPE=/"* ]]; then outcome="ran with its share through MPS"
        else problem+="${problem:+; }share job ran without an MPS pipe directory ($line)"; fi
      fi
      [ "$expect" = ran ] || problem+="${problem:+; }expected the job cancelled, it ran" ;;
    CANCELLED|FAILED)
      local comment
      comment=$(scontrol show job "$j" | grep -o 'Comment=.*' | head -1)
      if [[ $comment == *vgpu:* ]]; then outcome="cancelled: ${comment#Comment=}"
      else problem+="${problem:+; }job $st without a vgpu reason"; fi
      [ "$expect" = cancelled ] || problem+="${problem:+; }expected the job to run, it was $st (${comment:-no comment})" ;;
    *) problem+="${problem:+; }job ended $st" ;;
  esac
  local why
  why=$(witness_intact) || problem+="${problem:+; }$why"
  why=$(only_witness_left) || problem+="${problem:+; }$why"
  why=$(no_mps_daemon_left) || problem+="${problem:+; }$why"
  # Same bound for the node's own consistency (a job record the backstop drops); say when it took long.
  local settle=$SECONDS
  while ! vp_verify_node "$node" >/dev/null 2>&1 && [ $((SECONDS - settle)) -lt 150 ]; do sleep 1; done
  [ $((SECONDS - settle)) -gt 5 ] && outcome+="; node consistent after $((SECONDS - settle)) s"
  vp_check 2>"$VC_RUN/out/check.txt" || problem+="${problem:+; }inconsistent: $(grep -v '^\[' "$VC_RUN/out/check.txt" | head -3 | tr '\n' ' ')"
  [ -n "$problem" ] && fails=$((fails + 1))
  rows+=("$(printf '%-34s|%-18s|%-26s|%4s s|%s' "$label" "$recovery" "${who:-none}" "$((SECONDS - t0))" "${problem:+FAIL: $problem}${problem:+ / }$outcome")")
  vc_log "$label / $recovery: crashed ${who:-none}; ${problem:-ok}; $outcome"
}

if [ "$VP_CRASH_SHARES" = 1 ]; then
  VP_CRASH_ALL=1
  run_case prolog.after_share_claim         "prolog.after_share_claim"           share
  run_case prolog.after_share_create        "prolog.after_share_create"          share
  run_case prolog.after_share_record_instance "prolog.after_share_record_instance" share
  run_case prolog.after_mps_open            "prolog.after_mps_open"              share
  run_case nvml.after_ci_create@share       "nvml.after_ci_create@vgpu-prolog"   share
  # Both prolog attempts die with the daemon up: the third releases the share and the last
  # share's release quits the daemon before the instance is scrubbed; the job is cancelled.
  run_case "prolog.after_mps_open x2"       "prolog.after_mps_open;prolog.after_mps_open" share cancelled
  run_case epilog.after_retire@share        "epilog.after_retire"                share
  run_case release.after_destroy@share      "release.after_destroy@vgpu-epilog"  share
  run_case "epilog.after_retire x3@share" \
    "epilog.after_retire;epilog.after_retire;epilog.after_retire" share
else
run_case prolog.after_claim                 "prolog.after_claim"                 job
run_case prolog.after_create                "prolog.after_create"                job
run_case prolog.after_record_instance       "prolog.after_record_instance"       job
run_case prolog.after_job_record            "prolog.after_job_record"            job
run_case ledger.after_temp_write@prolog     "ledger.after_temp_write@vgpu-prolog" job
run_case nvml.after_gi_create@prolog        "nvml.after_gi_create@vgpu-prolog"   job
run_case nvml.after_ci_create@prolog        "nvml.after_ci_create@vgpu-prolog"   job
run_case "prolog.after_create x2 +planner.after_reconcile_destroy" \
  "prolog.after_create;prolog.after_create;planner.after_reconcile_destroy" job cancelled
run_case epilog.after_retire                "epilog.after_retire"                job
run_case epilog.after_release               "epilog.after_release"               job
run_case release.after_scrub@epilog         "release.after_scrub@vgpu-epilog"    job
run_case release.after_destroy@epilog       "release.after_destroy@vgpu-epilog"  job
run_case release.after_ledger_remove@epilog "release.after_ledger_remove@vgpu-epilog" job
run_case ledger.after_rename@epilog         "ledger.after_rename@vgpu-epilog"    job
run_case nvml.after_ci_destroy@epilog       "nvml.after_ci_destroy@vgpu-epilog"  job
# Every epilog attempt dies: the planner's rounds finish the release (only_witness_left sees it).
run_case "epilog.after_retire x3 (planner finishes)" \
  "epilog.after_retire;epilog.after_retire;epilog.after_retire" job
# Every epilog attempt dies before its first ledger change: the job still owns its instances
# and only the planner's ended-job backstop (Slurm no longer runs it here) releases them.
run_case "ledger.after_temp_write@epilog x3 (planner releases)" \
  "ledger.after_temp_write@vgpu-epilog;ledger.after_temp_write@vgpu-epilog;ledger.after_temp_write@vgpu-epilog" job ran restart-slurmd
# The planner starts finishing retired instances while the epilog is rerun: whichever of the two
# destroys first dies there (the killed-process column says which), the other finishes.
run_case "epilog.after_retire +release.after_destroy" "epilog.after_retire;release.after_destroy" job
run_case ledger.after_rename@planner        "ledger.after_rename@vgpu-planner"   job
# The plan is sticky: each of these re-plans only because the previous case left the other shape
# (idle layout -> a whole GPU for 7g.80gb -> seven 1g.10gb -> 7g.80gb ...).
# The restarted planner signals slurmd once at start, so a split written but never signalled is
# read (this was a known gap until the planner did that).
run_case planner.before_notify_slurmd     "planner.before_notify_slurmd"       train
run_case planner.after_shrink_published     "planner.after_shrink_published"     infer7
run_case planner.after_shrink_confirmed     "planner.after_shrink_confirmed"     train
run_case planner.after_grow_commit          "planner.after_grow_commit"          infer7
run_case planner.after_plan_commit          "planner.after_plan_commit"          job
# Served hooks (nodeagent/hook_socket/hook_socket.h): the planner does the hook's work, so these kill the
# planner in the middle of a job's prolog or epilog; the hook sees the socket end and does the work
# itself, and the planner is restarted. The other cases turn serving off (lib.sh) to kill hooks.
served() { # $1 on | off, for node $node's hooks from their next run
  sed -i '/^export VGPU_HOOK_SERVICE=off$/d' "$VC_RUN/etc/vgpu-env/$node.sh"
  [ "$1" = on ] || echo "export VGPU_HOOK_SERVICE=off" >> "$VC_RUN/etc/vgpu-env/$node.sh"
}
served on
run_case "prolog.after_create@served" "prolog.after_create@vgpu-planner" job
run_case "epilog.after_retire@served" "epilog.after_retire@vgpu-planner" job
served off
# Scrubs after the epilog (VGPU_SCRUB_AFTER_EPILOG=on): the epilog hands its job's released
# instance, with its cleanup lock, to a detached vgpu-cleanup process and returns; these kill that
# process in the middle. The instance stays released and the next pass (a planner round, or a
# prolog that claims its slot) finishes it. The second case's epilog is served, so the planner
# starts the cleanup process.
after_epilog() { # $1 on | off, for node $node's hooks and its planner (restarted: it serves epilogs)
  sed -i '/^export VGPU_SCRUB_AFTER_EPILOG=on$/d' "$VC_RUN/etc/vgpu-env/$node.sh"
  [ "$1" = off ] || echo "export VGPU_SCRUB_AFTER_EPILOG=on" >> "$VC_RUN/etc/vgpu-env/$node.sh"
  vp_planner_stop "$node"
  planner_ensure "$node"
}
after_epilog on
run_case "release.after_scrub@cleanup" "release.after_scrub@vgpu-cleanup" job
served on
run_case "release.after_destroy@cleanup+served" "release.after_destroy@vgpu-cleanup" job
served off
after_epilog off
fi

scancel "$witness"
vp_wait_done "$witness" 60 || vc_fail "witness did not leave"
vp_assert_no_instances
vp_check || vc_fail "inconsistent at the end"

echo
echo "crash-point matrix ($((${#rows[@]})) cases, $(( $(date +%s) - started )) s; crash on node $node, witness job $witness):"
printf '%-34s|%-18s|%-26s|%6s|%s\n' "crash point (@process)" "recovery" "process(es) killed" "time" "outcome"
printf '%s\n' "${rows[@]}"
[ "$fails" = 0 ] || vc_fail "$fails of ${#rows[@]} crash cases failed"
vc_log "PASS crash_matrix"
