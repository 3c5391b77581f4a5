#!/usr/bin/env bash
# MIG mode on demand on the real cluster (docs/policy.md, "mig_mode"), on the board where the
# choice of GPUs matters: four H200 NVL in two NVLink-bridged pairs (0-1, 2-3), all in MIG mode,
# with a driver that leaves device files alone (ModifyDeviceFiles: 0). Partition train says
# "on_demand" and offers whole.141gb beside MIG profiles. While an inference job holds a MIG
# instance on one pair, a training job for two whole GPUs takes the other pair out of MIG mode and
# gets both (one NVLink domain); then a MIG job for two 7g.141gb puts one of them back into MIG
# mode; then training again gets the bridged pair whole. Nothing drains, every job completes.
set -u
export VC_NODES=n1
VP_GPUS=4
VP_FIXTURE=h200-nvl-4gpu-bridged.json
VP_MODIFY_DEVICE_FILES=0
VP_INFER_PROFILES='["1g.18gb", "2g.35gb"]'
VP_IDLE_LAYOUT='["2g.35gb", "2g.35gb", "1g.18gb", "1g.18gb", "1g.18gb"]'
VP_TRAIN_PROFILES='["3g.71gb", "7g.141gb", "whole.141gb"]'
VP_TRAIN_MIG_MODE=on_demand
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
VC_PROFILES="$VC_PROFILES whole.141gb"
USER_A=nobody
# Not pinned with -w: slurmctld 22.05 finds a job pinned to a node whose split lacks its type "never
# runnable in partition" there, and no planner sees it wait for resources.
submit() { local id; id=$(vp_as_user "$USER_A" sbatch --parsable -o "$VC_RUN/out/%j.out" "$@" | cut -d';' -f1); echo "${id:-refused}"; }
mig_of() { ( . "$VC_RUN/etc/vgpu-env/n1.sh"; "$VP_BIN/fakenvml/fake-nvml-smi" ) | sed -n "s/^gpu $1: .*MIG \([a-z]*\).*/\1/p"; }
modes() { echo "$(mig_of 0) $(mig_of 1) $(mig_of 2) $(mig_of 3)"; }
whole_gpus_of() { # the probe prints a line per device, from the OWN line on
  vp_line_of "$1" OWN >/dev/null
  sed '/^AGAIN/q' "$VC_RUN/out/$1.out" | grep -o 'usable (whole GPU [0-9]' | grep -o '[0-9]$' | sort | paste -sd, -
}
trains_on_the_free_pair() { # $1 job: it got the two whole GPUs of the bridged pair the inference job leaves
  local got
  vp_wait_started "$1" 120 || vc_fail "training job $1 did not start: $(tail -5 "$VC_RUN/log/planner.n1.log")"
  got=$(whole_gpus_of "$1")
  [ "$got" = "$pair" ] || vc_fail "training job $1 got whole GPUs '$got', not the free bridged pair $pair"
  cat "$VC_RUN"/log/*.n1.log | grep -q "job $1: whole GPUs $pair: one NVLink domain" ||
    vc_fail "the prolog did not log job $1's NVLink domain"
}

vp_start
[ "$(modes)" = "enabled enabled enabled enabled" ] || vc_fail "every GPU should start in MIG mode: $(modes)"
scontrol show node n1 | grep -q 'vgpu:whole.141gb:[1-9]' && vc_fail "a whole GPU is offered before anyone asked"
vp_write_tenant_job

echo "--- inference on a MIG instance, then training on two whole GPUs"
i=$(vp_submit_on_n1 "$USER_A" -p infer --gres=vgpu:1g.18gb:1 "$VC_RUN/etc/tenant.sh" "$VC_RUN/out/release-i")
infer_gpu=$(vp_line_of "$i" OWN | sed -n 's/.*usable (gpu \([0-9]\) gi .*/\1/p')
[ -n "$infer_gpu" ] || vc_fail "the inference job cannot use its instance: $(vp_line_of "$i" OWN)"
pair=$([ "$infer_gpu" -le 1 ] && echo 2,3 || echo 0,1)
t1=$(submit -p train --gres=vgpu:whole.141gb:2 "$VC_RUN/etc/tenant.sh" "$VC_RUN/out/release-t1")
trains_on_the_free_pair "$t1"
for g in ${pair//,/ }; do
  [ "$(mig_of "$g")" = disabled ] || vc_fail "GPU $g serves whole but its MIG mode is $(mig_of "$g")"
  grep -q "GPU $g: MIG mode off, as pending demand asks (mig_mode on_demand): activated" "$VC_RUN/log/planner.n1.log" ||
    vc_fail "the planner did not say it turned MIG off on GPU $g for pending demand"
done
[ "$(mig_of "$infer_gpu")" = enabled ] || vc_fail "the inference job's GPU $infer_gpu left MIG mode"
touch "$VC_RUN/out/release-t1"
vp_wait_done "$t1" 60 || vc_fail "training job $t1 did not finish"

echo "--- two 7g.141gb: one empty MIG GPU is not enough, a whole GPU goes back into MIG mode"
m=$(submit -p train --gres=vgpu:7g.141gb:2 "$VC_RUN/etc/tenant.sh" "$VC_RUN/out/release-m")
vp_wait_started "$m" 120 || vc_fail "the 7g.141gb job did not start: $(tail -5 "$VC_RUN/log/planner.n1.log")"
vp_line_of "$m" OWN | grep -q 'CVD=MIG-.*,MIG-.*: usable (' || vc_fail "the 7g.141gb job cannot use its instances"
back=$(grep -o "GPU [0-9]: MIG mode on, as pending demand asks (mig_mode on_demand): activated" \
  "$VC_RUN/log/planner.n1.log" | head -1 | cut -d' ' -f2 | tr -d :)
[ -n "$back" ] && [[ ",$pair," == *",$back,"* ]] || vc_fail "no GPU of the pair $pair went back into MIG mode ('$back')"
touch "$VC_RUN/out/release-m"
vp_wait_done "$m" 60 || vc_fail "the 7g.141gb job did not finish"

echo "--- training again: the bridged pair, one GPU of it switched back"
t2=$(submit -p train --gres=vgpu:whole.141gb:2 "$VC_RUN/etc/tenant.sh" "$VC_RUN/out/release-t2")
trains_on_the_free_pair "$t2"
touch "$VC_RUN/out/release-t2" "$VC_RUN/out/release-i"
for j in "$t2" "$i"; do vp_wait_done "$j" 60 || vc_fail "job $j did not finish"; done
vp_assert_completed "$i" "$t1" "$m" "$t2"
vp_check || vc_fail "node state inconsistent"
echo "PASS: mig_on_demand"
