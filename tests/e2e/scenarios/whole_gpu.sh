#!/usr/bin/env bash
# A GPU found with MIG mode off is served whole on the real cluster (docs/backends.md, "MIG mode";
# docs/security.md, "Whole GPUs"). Node n1 has two simulated H100s, GPU 1 with MIG off, and a
# driver that leaves device files alone (ModifyDeviceFiles: 0). Partition train allows
# whole.80gb: the planner advertises it beside GPU 0's MIG layout, user A's training job gets
# CUDA_VISIBLE_DEVICES=GPU-<uuid> of GPU 1 and its device file /dev/nvidia1 alone, user B's job
# on a MIG instance of GPU 0 is refused A's GPU, nvidia-modprobe (as any CUDA program runs it)
# does not undo that, and once A's job ends the file is root's again and the node is consistent.
set -u
export VC_NODES=n1
VP_MIG_OFF_GPUS=1
VP_MODIFY_DEVICE_FILES=0
VP_TRAIN_PROFILES='["3g.40gb", "4g.40gb", "7g.80gb", "whole.80gb"]'
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
VC_PROFILES="$VC_PROFILES whole.80gb"
USER_A=nobody
USER_B=$VP_USER_B
vp_second_user
PROBE=$VP_BIN/fakenvml/fake-cuda-probe
owner_mode() { stat -c '%U %a' "$1"; }

vp_start
GPU_FILE=$VC_RUN/devroot/n1/dev/nvidia1

for _ in $(seq 60); do scontrol show node n1 | grep -q 'vgpu:whole.80gb:1' && break; sleep 1; done
scontrol show node n1 | grep -q 'vgpu:whole.80gb:1' ||
  vc_fail "n1 does not offer whole.80gb:1: $(scontrol show node n1 | grep -o 'Gres=[^ ]*')"
grep -q "GPU 1 (H100-80GB): MIG mode disabled (pending disabled): planned whole" "$VC_RUN/log/planner.n1.log" ||
  vc_fail "the planner did not say GPU 1 is planned whole"
[ "$(owner_mode "$GPU_FILE")" = "root 600" ] || vc_fail "unheld $GPU_FILE is '$(owner_mode "$GPU_FILE")', not 'root 600'"

vp_write_tenant_job

echo "--- user A ($USER_A) trains on the whole GPU 1"
a=$(vp_submit_on_n1 "$USER_A" -p train --gres=vgpu:whole.80gb:1 "$VC_RUN/etc/tenant.sh" "$VC_RUN/out/release-a")
own=$(vp_line_of "$a" OWN)
echo "$own" | grep -q ': usable (whole GPU 1: ' || vc_fail "A cannot use its whole GPU: $own"
a_uuid=$(echo "$own" | sed -n 's/.*CVD=\([^ ]*\).*/\1/p')
gpu1_uuid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpus"][1]["uuid"])' \
  "$VC_RUN/etc/vgpu-env/n1.fixture.json")
[ "$a_uuid" = "$gpu1_uuid" ] || vc_fail "A's CUDA_VISIBLE_DEVICES '$a_uuid' is not GPU 1's UUID $gpu1_uuid"
[ "$a_uuid" = "$(vp_ledger_uuids n1 "$a")" ] || vc_fail "A's GPU $a_uuid is not its ledger instance"
[ "$(owner_mode "$GPU_FILE")" = "$USER_A 600" ] || vc_fail "$GPU_FILE is '$(owner_mode "$GPU_FILE")', not '$USER_A 600'"
( . "$VC_RUN/etc/vgpu-env/n1.sh"; "$VP_BIN/fakenvml/fake-nvidia-modprobe" ) >&2 || vc_fail "fake-nvidia-modprobe failed"
[ "$(owner_mode "$GPU_FILE")" = "$USER_A 600" ] || vc_fail "after nvidia-modprobe $GPU_FILE is '$(owner_mode "$GPU_FILE")'"

echo "--- user B ($USER_B), on a MIG instance of GPU 0, points CUDA at A's GPU: refused"
echo "CUDA_VISIBLE_DEVICES=$a_uuid $PROBE" > "$VC_RUN/etc/hostile.txt"
b=$(vp_submit_on_n1 "$USER_B" -p infer --gres=vgpu:1g.10gb:1 "$VC_RUN/etc/tenant.sh" "$VC_RUN/out/release-b" "$VC_RUN/etc/hostile.txt")
own_b=$(vp_line_of "$b" OWN)
echo "$own_b" | grep -q 'CVD=MIG-.*: usable (' || vc_fail "B cannot use its MIG instance: $own_b"
steal=$(vp_line_of "$b" "TRY")
echo "$steal" | grep -q "^TRY rc=1 .*$a_uuid: refused: open $GPU_FILE: Permission denied" || vc_fail "B used A's GPU: $steal"
touch "$VC_RUN/out/release-b" "$VC_RUN/out/release-a"
for j in "$a" "$b"; do vp_wait_done "$j" 60 || vc_fail "job $j did not finish"; done
vp_assert_completed "$a" "$b"
vp_line_of "$a" AGAIN | grep -q "$a_uuid: usable" || vc_fail "A lost its GPU during B's attempt: $(vp_line_of "$a" AGAIN)"

echo "--- released: the GPU file is root's again, offered again, the node consistent"
for _ in $(seq 30); do [ "$(owner_mode "$GPU_FILE")" = "root 600" ] && break; sleep 1; done
[ "$(owner_mode "$GPU_FILE")" = "root 600" ] || vc_fail "after the job $GPU_FILE is '$(owner_mode "$GPU_FILE")'"
for _ in $(seq 30); do scontrol show node n1 | grep -q 'vgpu:whole.80gb:1' && break; sleep 1; done
scontrol show node n1 | grep -q 'vgpu:whole.80gb:1' || vc_fail "the whole GPU is not offered again"
vp_check || vc_fail "node state inconsistent"
echo "PASS: whole_gpu"
