#!/usr/bin/env bash
# Slots prepared ahead of demand (policy planner.prepare_slots; issue 12, req. 5). With the fake
# NVML as slow as an H100 (seconds per create), every node's planner makes an instance for each
# planned slot before any job asks; jobs then run on those very instances (their prologs create
# nothing), a reshape for a 7g.80gb job destroys the prepared instances in its way and prepares
# the new slot, and a planner killed between a create and its record leaves nothing behind: the
# next round's reconcile destroys the unrecorded instance and prepares the slot again. No job is
# cancelled or requeued, no node drains, and at the end the hardware holds exactly the idle
# instances the ledgers list.
set -u
VP_PREPARE_SLOTS=true
VP_NVML_LATENCY=${VP_NVML_LATENCY:-h100}
VP_CRASH_POINTS=1
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
vp_start
mkdir -p "$VC_RUN/crash"
chmod 755 "$VC_RUN/crash"
job=$(vp_job_script)

hw_uuids() { ( . "$VC_RUN/etc/vgpu-env/$1.sh"; "$VP_BIN/fakenvml/fake-nvml-smi" ) | grep -o 'MIG-[0-9a-f-]*' | sort; }
echo "--- before any job: every planned slot has its instance"
vp_wait_prepared 120 || vc_fail "slots not prepared: hardware $(vp_hw_instances), idle in the ledgers $(vp_idle_instances)"
cat "$VGPU_STATE_DIR/n1/vgpu.log" "$VC_RUN/log/planner.n1.log" 2>/dev/null | grep -q "prepared [0-9]* slot(s) ahead of demand" ||
  vc_fail "the planner on n1 did not log what it prepared"
prepared=$(for n in $VC_NODES; do hw_uuids "$n"; done | sort)
echo "prepared: $(vp_hw_instances)"

echo "--- inference jobs run on the prepared instances"
ids=()
for _ in $(seq 4); do ids+=("$(vp_sbatch -p infer --gres=vgpu:1g.10gb:1 "$job" 4)"); done
for j in "${ids[@]}"; do
  vp_wait_started "$j" 60 || vc_fail "job $j did not start"
  vp_assert_sees_own "$j"
  uuid=$(grep -m1 -o 'CVD=MIG-[0-9a-f-]*' "$VC_RUN/out/$j.out" | cut -d= -f2)
  echo "$prepared" | grep -qx "$uuid" || vc_fail "job $j runs on $uuid, which was not prepared: its prolog created it"
done
for j in "${ids[@]}"; do vp_wait_done "$j" 90 || vc_fail "job $j did not end"; done
vp_assert_completed "${ids[@]}"

echo "--- a reshape: a 7g.80gb job makes the planner destroy prepared instances in its way"
train=$(vp_sbatch -p train --gres=vgpu:7g.80gb:1 "$job" 2)
vp_wait_started "$train" 120 || vc_fail "7g.80gb job $train did not start"
vp_assert_sees_own "$train"
vp_wait_done "$train" 90 || vc_fail "job $train did not end"
vp_assert_completed "$train"

echo "--- the planner on n1 dies between a create and its record"
echo "planner.after_prepare_create" > "$VC_RUN/crash/n1"
: > "$VC_RUN/crash/n1.hits"
# A job's end gives its slot back without an instance (no scrub here): the planner prepares it.
j=$(vp_sbatch -p infer -w n1 --gres=vgpu:1g.10gb:2 "$job" 1)
vp_wait_done "$j" 90 || vc_fail "job $j did not end"
vp_assert_completed "$j"
vp_wait_cleanups_done 60 || vc_fail "job $j's instances were never destroyed"
for _ in $(seq 150); do [ -s "$VC_RUN/crash/n1.hits" ] && break; sleep 0.2; done
[ -s "$VC_RUN/crash/n1.hits" ] || vc_fail "the planner on n1 never reached planner.after_prepare_create"
echo "crashed: $(cat "$VC_RUN/crash/n1.hits")"
for _ in $(seq 50); do proc_alive "$(cat "$VGPU_STATE_DIR/n1/planner.pid" 2>/dev/null)" || break; sleep 0.1; done
[ "$(hw_uuids n1 | grep -c .)" -gt "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["instances"]))' "$VGPU_STATE_DIR/n1/ledger.json")" ] ||
  vc_fail "after the crash the hardware should hold one instance the ledger does not"
rm -f "$VGPU_STATE_DIR/n1/planner.pid"
vp_planner_start n1
vp_wait_prepared 120 || vc_fail "after the planner's restart: hardware $(vp_hw_instances), idle in the ledgers $(vp_idle_instances)"
grep -q "leaked instance" "$VC_RUN/log/planner.n1.log" || vc_fail "the restarted planner did not clean up the unrecorded instance"

sinfo -h -o '%N %T' | grep -iE 'drain|down' && vc_fail "a node was drained or down"
for j in "${ids[@]}" "$train" "$j"; do  # every job ran at its first start: none requeued by a prolog
  restarts=$(scontrol show job "$j" | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
  [ "${restarts:-0}" = 0 ] || vc_fail "job $j was requeued $restarts time(s)"
done
vp_assert_no_instances
vp_check || vc_fail "inconsistent at the end"
vc_log "PASS prepared_slots"
