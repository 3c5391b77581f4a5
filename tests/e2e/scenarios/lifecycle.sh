#!/usr/bin/env bash
# The rest of a job's life: a two-node job, a job array, scancel while pending and while running,
# a time limit, and slurmd / slurmctld restarts with jobs running. After each: nothing leaked, no
# drained node, every view consistent. Ours run beside a site's own Prolog and Epilog (a glob).
set -u
VP_SITE_HOOKS=1
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
vp_start
job=$(vp_job_script)
# Slurm ends a job over its limit only at minute granularity (a limit of 2 s is a minute, found by
# a check every 30 s): submitted first, so that wait runs beside the other parts; checked below.
late=$(vp_sbatch -p infer -t 0:02 --gres=vgpu:1g.20gb:1 --wrap 'sleep 600' )

echo "--- two-node job: each node creates and shows only its own instance"
cat > "$VC_RUN/etc/multi.sh" <<'JOB'
#!/bin/bash
srun -l bash -c 'echo "CVD=$CUDA_VISIBLE_DEVICES NODE=$SLURMD_NODENAME"'
sleep 2
JOB
chmod 755 "$VC_RUN/etc/multi.sh"
# A profile advertised on several nodes: at submission Slurm needs -N nodes that could hold it,
# and the harness has one FUTURE placeholder (docs/slurm.md: declare one per node a job may span).
multi=$(vp_sbatch -p infer -N2 --gres=vgpu:2g.20gb:1 "$VC_RUN/etc/multi.sh")
vp_wait_done "$multi" 90 || vc_fail "two-node job did not finish"
vp_assert_completed "$multi"
lines=$(grep -c 'CVD=MIG-' "$VC_RUN/out/$multi.out")
nodes=$(grep -o 'NODE=n[0-9]*' "$VC_RUN/out/$multi.out" | sort -u | wc -l)
[ "$lines" = 2 ] && [ "$nodes" = 2 ] || vc_fail "two-node job output: $(cat "$VC_RUN/out/$multi.out")"
[ "$(grep -o 'CVD=[^ ]*' "$VC_RUN/out/$multi.out" | sort -u | wc -l)" = 2 ] || vc_fail "both nodes saw the same instance"

echo "--- job array"
arr=$(vp_sbatch -p infer --array=1-6 --gres=vgpu:2g.20gb:1 "$job" 2)
vp_wait_done "$arr" 120 || vc_fail "array did not finish"
[ "$(grep -l '^CVD=MIG-' "$VC_RUN"/out/"${arr}"*.out 2>/dev/null | wc -l)" -ge 1 ] || true
for t in 1 2 3 4 5 6; do
  st=$(scontrol show job "${arr}_$t" 2>/dev/null | grep -o 'JobState=[A-Z]*' | head -1)
  [ "$st" = JobState=COMPLETED ] || vc_fail "array task $t: $st"
done

echo "--- scancel while pending (two 7g on one node, while every node runs something) and while running"
hold=()
for n in $VC_NODES; do hold+=("$(vp_sbatch -p infer -w "$n" --gres=vgpu:2g.20gb:1 "$job" 40)"); done
for j in "${hold[@]}"; do vp_wait_running "$j" 60 || vc_fail "filler $j did not start"; done
pend=$(vp_sbatch -p train --gres=vgpu:7g.80gb:2 "$job" 5)
sleep 3
[ "$(vc_job_state "$pend")" = PENDING ] || vc_fail "expected $pend to pend, it is $(vc_job_state "$pend")"
held=$(vp_sbatch -p train --hold --gres=vgpu:3g.40gb:1 "$job" 5)
scancel "$pend" "$held"
scancel "${hold[0]}"
vp_wait_done "$pend" 30 && vp_wait_done "$held" 30 && vp_wait_done "${hold[0]}" 60 || vc_fail "cancelled jobs did not leave"

echo "--- restarts with jobs running"
runner=$(vp_sbatch -p infer -w n1 --gres=vgpu:2g.20gb:2 "$job" 25)
vp_wait_running "$runner" 60 || vc_fail "runner did not start"
vp_assert_sees_own "$runner"
vc_slurmd_stop n1
vc_slurmd_start n1 || vc_fail "slurmd n1 did not restart"
vc_ctld_stop
vc_ctld_start || vc_fail "slurmctld did not restart"
vc_wait_idle 60 || vc_fail "nodes not back after restarts"
[ "$(vc_job_state "$runner")" = RUNNING ] || vc_fail "runner is $(vc_job_state "$runner") after the restarts"
vp_assert_sees_own "$runner"
vc_assert_no_bad_nodes
for j in "${hold[@]:1}" "$runner"; do scancel "$j"; vp_wait_done "$j" 60 || vc_fail "job $j did not leave"; done

echo "--- time limit (the job submitted first)"
vp_wait_done "$late" 150 || vc_fail "time-limited job was not ended"
[ "$(vc_job_state "$late")" = TIMEOUT ] || vc_fail "job $late ended $(vc_job_state "$late"), expected TIMEOUT"

echo "--- a job without vgpu on a vgpu node: its epilog ends before NVML, the policy and the ledger"
plain=$(vp_sbatch -p infer -w n2 --wrap 'true')
vp_wait_done "$plain" 60 || vc_fail "job $plain without vgpu did not finish"
vp_assert_completed "$plain"
vp_assert_site_hooks_ran "$runner" n1
vp_assert_site_hooks_ran "$plain" n2
grep -q "epilog: job $runner: " "$VGPU_STATE_DIR/n1/vgpu.log" || vc_fail "no epilog line for the vgpu job $runner"
! grep "epilog: job $plain: " "$VGPU_STATE_DIR/n2/vgpu.log" || vc_fail "the epilog of job $plain, which held no vgpu, ran in full"

# Each node's planner served its hooks (nodeagent/hook_socket/hook_socket.h): the runner's prolog ran in it, and so did
# its epilog unless a served epilog had been slow before (this machine under load): the planner then
# says so and leaves epilogs to themselves for 10 minutes (nodeagent/serving/epilog_serving.h).
# The prolog likewise, unless the planner was busy past the hook's one-second wait (a loaded
# 2-core host): the planner then says the hook stopped waiting, and the hook did the work itself.
log=$VGPU_STATE_DIR/n1/vgpu.log
grep -q "vgpu-planner\[[0-9]*\]: vgpu: prolog: job $runner[: ]" "$log" ||
  grep -q "vgpu-planner\[[0-9]*\]: vgpu: planner: prolog: job $runner: the hook stopped waiting before it was served" "$log" ||
  vc_fail "the prolog of job $runner was not served by n1's planner: $(grep "job $runner" "$log" | head -3)"
epilog_line=$(grep -n "vgpu: epilog: job $runner[: ]" "$log" | head -1)
pause_line=$(grep -n "a served epilog took .* epilogs run on their own" "$log" | head -1 | cut -d: -f1)
if [ -n "$pause_line" ] && [ "$pause_line" -lt "${epilog_line%%:*}" ]; then epilog_by=vgpu-epilog; else epilog_by=vgpu-planner; fi
[[ ${epilog_line#*:} == *" $epilog_by["* ]] ||
  vc_fail "the epilog of job $runner: expected from $epilog_by (pause noted at line ${pause_line:-none}): '${epilog_line:-no epilog line}'"

vp_assert_no_instances
vp_check || vc_fail "inconsistent at the end"
vc_log "PASS lifecycle"
