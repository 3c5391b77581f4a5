#!/usr/bin/env bash
# MIG mode on demand on the real cluster (docs/policy.md, "mig_mode"): partition train says
# "on_demand" and offers whole.80gb beside MIG profiles. Node n1 has two simulated H100s, both in
# MIG mode, and a driver that leaves device files alone (ModifyDeviceFiles: 0). A training job
# asking for a whole GPU takes GPU 1 out of MIG mode (its idle instances handed back through Slurm
# first) and gets GPU-<uuid>; an inference job meanwhile keeps running on GPU 0. Once the whole
# GPU is free again and a 7g.80gb job finds no room on GPU 0 (the inference job holds a slice), GPU
# 1 goes back into MIG mode for it. Nothing drains, every job completes, the node ends consistent.
set -u
export VC_NODES=n1
VP_MODIFY_DEVICE_FILES=0
VP_TRAIN_PROFILES='["3g.40gb", "7g.80gb", "whole.80gb"]'
VP_TRAIN_MIG_MODE=on_demand
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
VC_PROFILES="$VC_PROFILES whole.80gb"
USER_A=nobody
# Not pinned with -w: slurmctld 22.05 finds a job pinned to a node whose split lacks its type "never
# runnable in partition" there, and no planner sees it wait for resources.
submit() { local id; id=$(vp_as_user "$USER_A" sbatch --parsable -o "$VC_RUN/out/%j.out" "$@" | cut -d';' -f1); echo "${id:-refused}"; }
mig_of() { ( . "$VC_RUN/etc/vgpu-env/n1.sh"; "$VP_BIN/fakenvml/fake-nvml-smi" ) | sed -n "s/^gpu $1: .*MIG \([a-z]*\).*/\1/p"; }
planner_said() { grep -q "$1" "$VC_RUN/log/planner.n1.log"; }

vp_start
[ "$(mig_of 0) $(mig_of 1)" = "enabled enabled" ] || vc_fail "both GPUs should start in MIG mode: $(mig_of 0) $(mig_of 1)"
scontrol show node n1 | grep -q 'vgpu:whole.80gb:[1-9]' && vc_fail "a whole GPU is offered before anyone asked for one"
vp_write_tenant_job

echo "--- an inference job on a MIG instance, then a training job asking for a whole GPU"
i=$(vp_submit_on_n1 "$USER_A" -p infer --gres=vgpu:1g.10gb:1 "$VC_RUN/etc/tenant.sh" "$VC_RUN/out/release-i")
vp_line_of "$i" OWN | grep -q 'CVD=MIG-.*: usable (' || vc_fail "the inference job cannot use its instance"
infer_gpu=$(vp_line_of "$i" OWN | sed -n 's/.*usable (gpu \([0-9]\) gi .*/\1/p')
w=$(submit -p train --gres=vgpu:whole.80gb:1 "$VC_RUN/etc/tenant.sh" "$VC_RUN/out/release-w")
vp_wait_started "$w" 120 || vc_fail "the training job did not start: $(tail -5 "$VC_RUN/log/planner.n1.log")"
own=$(vp_line_of "$w" OWN)
echo "$own" | grep -q ': usable (whole GPU [01]: ' || vc_fail "the training job did not get a whole GPU: $own"
whole_gpu=$(echo "$own" | sed -n 's/.*usable (whole GPU \([01]\): .*/\1/p')
[ "$(mig_of "$whole_gpu")" = disabled ] || vc_fail "GPU $whole_gpu serves whole but its MIG mode is $(mig_of "$whole_gpu")"
planner_said "GPU $whole_gpu: MIG mode off, as pending demand asks (mig_mode on_demand): activated" ||
  vc_fail "the planner did not say it turned MIG off for pending demand"
[ -n "$infer_gpu" ] && [ "$infer_gpu" != "$whole_gpu" ] || vc_fail "the whole GPU $whole_gpu is the inference job's ('$infer_gpu')"
touch "$VC_RUN/out/release-w"
vp_wait_done "$w" 60 || vc_fail "the training job did not finish"

echo "--- the whole GPU is free; a 7g.80gb job finds no room beside the inference job: MIG back on"
for _ in $(seq 30); do scontrol show node n1 | grep -q 'vgpu:whole.80gb:1' && break; sleep 1; done
scontrol show node n1 | grep -q 'vgpu:whole.80gb:1' || vc_fail "the free whole GPU is not offered: nothing pending asked it back"
big=$(submit -p train --gres=vgpu:7g.80gb:1 "$VC_RUN/etc/tenant.sh" "$VC_RUN/out/release-big")
vp_wait_started "$big" 120 || vc_fail "the 7g.80gb job did not start: $(tail -5 "$VC_RUN/log/planner.n1.log")"
vp_line_of "$big" OWN | grep -q 'CVD=MIG-.*: usable (' || vc_fail "the 7g.80gb job cannot use its instance"
[ "$(mig_of "$whole_gpu")" = enabled ] || vc_fail "GPU $whole_gpu did not go back into MIG mode"
planner_said "GPU $whole_gpu: MIG mode on, as pending demand asks (mig_mode on_demand): activated" ||
  vc_fail "the planner did not say it turned MIG on for pending demand"
touch "$VC_RUN/out/release-big" "$VC_RUN/out/release-i"
for j in "$big" "$i"; do vp_wait_done "$j" 60 || vc_fail "job $j did not finish"; done
vp_assert_completed "$i" "$w" "$big"
vp_check || vc_fail "node state inconsistent"
echo "PASS: mig_on_demand"
