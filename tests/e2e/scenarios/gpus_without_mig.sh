#!/usr/bin/env bash
# A node of GPUs without MIG on the real cluster (docs/backends.md, "GPUs without MIG"): node n1
# has two simulated L40S (NVML answers NOT_SUPPORTED for MIG mode) and a driver that leaves device
# files alone. Partition train offers the whole GPU (whole.48gb), partition infer the share type
# "half" (whole.48gb through CUDA MPS in two, shared across users). User A's training job gets one
# L40S whole, its UUID in CUDA_VISIBLE_DEVICES and its device file alone; a half job of user B and
# one of user A share the other L40S through one MPS daemon, each capped at half its memory, both
# able to open that GPU (its file's ACL), and B is refused A's whole GPU; once all have ended the
# device files are root's again (no ACL) and the node is consistent.
set -u
export VC_NODES=n1
VP_FIXTURE=l40s-48gb-2gpu.json
VP_MODIFY_DEVICE_FILES=0
VP_TRAIN_PROFILES='["whole.48gb"]'
VP_INFER_PROFILES='["half"]'
VP_IDLE_LAYOUT='[]'
VP_SHARE_TYPES='{"half": {"instance": "whole.48gb", "shares": 2}}'
VP_SHARE_ACROSS_USERS=infer  # else a share job is --exclusive=user and waits for A's job to end
VP_UNITS_PER_GPU=2
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
VC_PROFILES="whole.48gb half"
USER_A=nobody
USER_B=$VP_USER_B
vp_second_user
owner_mode() { stat -c '%U %a' "$1"; }
opens_rw() { runuser -u "$1" -- bash -c 'exec 3<>"$1"' _ "$2" 2>/dev/null; }
has_acl() { python3 -c 'import os, sys; os.getxattr(sys.argv[1], "system.posix_acl_access")' "$1" 2>/dev/null; }

vp_start
for _ in $(seq 60); do scontrol show node n1 | grep -q 'vgpu:whole.48gb:2' && break; sleep 1; done
scontrol show node n1 | grep -q 'vgpu:whole.48gb:2' ||
  vc_fail "n1 does not offer its two L40S whole: $(scontrol show node n1 | grep -o 'Gres=[^ ]*')"
grep -q "GPU 1 (L40S-48GB): a GPU without MIG: planned whole, as whole.48gb" "$VC_RUN/log/planner.n1.log" ||
  vc_fail "the planner did not say GPU 1 is a GPU without MIG, planned whole"
grep -q "Not Supported" "$VC_RUN/log/planner.n1.log" && vc_fail "the planner asked the L40S for MIG: $(grep -m1 'Not Supported' "$VC_RUN/log/planner.n1.log")"

vp_write_tenant_job
cat > "$VC_RUN/etc/share-job.sh" <<JOB
#!/bin/bash
echo "CVD=\${CUDA_VISIBLE_DEVICES-<unset>} PIPE=\${CUDA_MPS_PIPE_DIRECTORY-<unset>} MEMORY=\${VGPU_MEMORY_MIB-<unset>}"
"$VP_SRC/fakemps/fake-mps-client" --alloc-mib 4096 --hold-s 1
"$VP_SRC/fakemps/fake-mps-client" --alloc-mib 30000
. "$VC_RUN/etc/vgpu-env/\$SLURMD_NODENAME.sh"
while IFS= read -r cmd; do
  [ -n "\$cmd" ] && echo "TRY \$(bash -c "\$cmd" 2>&1 | tr '\n' ' ')"
done < "\${2:-/dev/null}"
for _ in \$(seq 600); do [ -e "\$1" ] && break; sleep 0.2; done
JOB
chmod 755 "$VC_RUN/etc/share-job.sh"

gpu_minor_of() { # the device minor of the GPU whose UUID is $1
  python3 -c 'import json,sys; print([g["minor_number"] for g in json.load(open(sys.argv[1]))["gpus"] if g["uuid"] == sys.argv[2]][0])' \
    "$VC_RUN/etc/vgpu-env/n1.fixture.json" "$1"
}
# By partition, not -w: a node offers "half" only once a job asks for it (docs/users.md).
submit_half() { vp_as_user "$1" sbatch --parsable -o "$VC_RUN/out/%j.out" -p infer --gres=vgpu:half:1 "${@:2}" | cut -d';' -f1; }
# Two jobs at a time: the test nodes have two CPUs.

echo "--- user A ($USER_A) trains on a whole L40S"
a=$(vp_submit_on_n1 "$USER_A" -p train --gres=vgpu:whole.48gb:1 "$VC_RUN/etc/tenant.sh" "$VC_RUN/out/release-a")
own=$(vp_line_of "$a" OWN)
echo "$own" | grep -q ': usable (whole GPU [01]: ' || vc_fail "A cannot use its whole GPU: $own"
a_uuid=$(echo "$own" | sed -n 's/.*CVD=\([^ ]*\).*/\1/p')
case $a_uuid in GPU-*) ;; *) vc_fail "A's CUDA_VISIBLE_DEVICES is '$a_uuid', not a GPU UUID" ;; esac
[ "$a_uuid" = "$(vp_ledger_uuids n1 "$a")" ] || vc_fail "A's GPU $a_uuid is not its ledger instance"
A_FILE=$VC_RUN/devroot/n1/dev/nvidia$(gpu_minor_of "$a_uuid")
[ "$(owner_mode "$A_FILE")" = "$USER_A 600" ] || vc_fail "$A_FILE is '$(owner_mode "$A_FILE")', not '$USER_A 600'"

echo "--- user B ($USER_B): half of the other L40S through MPS; refused A's whole GPU"
echo "CUDA_VISIBLE_DEVICES=$a_uuid $VP_BIN/fakenvml/fake-cuda-probe" > "$VC_RUN/etc/hostile.txt"
b1=$(submit_half "$USER_B" "$VC_RUN/etc/share-job.sh" "$VC_RUN/out/release-b" "$VC_RUN/etc/hostile.txt")
line=$(vp_line_of "$b1" CVD=)
echo "$line" | grep -q '^CVD=GPU-.* PIPE=/.*/pipe MEMORY=23034$' || vc_fail "B's share job's environment: $line"
b_uuid=$(echo "$line" | sed -n 's/^CVD=\([^ ]*\).*/\1/p')
[ "$b_uuid" != "$a_uuid" ] || vc_fail "B's half was given A's whole GPU: $line"
B_FILE=$VC_RUN/devroot/n1/dev/nvidia$(gpu_minor_of "$b_uuid")
[ "$(owner_mode "$B_FILE")" = "$USER_B 600" ] || vc_fail "$B_FILE is '$(owner_mode "$B_FILE")', not '$USER_B 600'"
steal=$(vp_line_of "$b1" TRY)
echo "$steal" | grep -q "$a_uuid: refused: open $A_FILE: Permission denied" || vc_fail "B used A's GPU: $steal"
touch "$VC_RUN/out/release-a"
vp_wait_done "$a" 60 || vc_fail "A's training job did not finish"
vp_line_of "$a" AGAIN | grep -q "$a_uuid: usable" || vc_fail "A lost its GPU during B's job: $(vp_line_of "$a" AGAIN)"

echo "--- user A's half joins B's L40S (share_across_users): both open it, nobody else"
b2=$(submit_half "$USER_A" "$VC_RUN/etc/share-job.sh" "$VC_RUN/out/release-b")
line=$(vp_line_of "$b2" CVD=)
[ "$line" = "CVD=$b_uuid PIPE=$(vp_line_of "$b1" CVD= | sed -n 's/.* PIPE=\([^ ]*\).*/\1/p') MEMORY=23034" ] ||
  vc_fail "A's half is not in B's instance with the same MPS daemon: $line"
for u in "$USER_A" "$USER_B"; do opens_rw "$u" "$B_FILE" || vc_fail "holder $u cannot open the shared $B_FILE"; done
opens_rw daemon "$B_FILE" && vc_fail "user daemon, holding nothing, can open the shared $B_FILE"
. "$VC_RUN/etc/vgpu-env/n1.sh"
[ "$(ls "$VGPU_MPS_ROOT" 2>/dev/null | grep -c '^GPU-')" = 1 ] ||
  vc_fail "expected one MPS daemon on a whole GPU, found: $(ls "$VGPU_MPS_ROOT" 2>&1)"

touch "$VC_RUN/out/release-b"
for j in "$b1" "$b2"; do vp_wait_done "$j" 60 || vc_fail "job $j did not finish"; done
vp_assert_completed "$a" "$b1" "$b2"
for j in "$b1" "$b2"; do
  o=$VC_RUN/out/$j.out
  grep -q '"mps": true.*"thread_percentage": 50.0.*"memory_limit_mib": 23034.*"alloc": "ok"' "$o" ||
    vc_fail "job $j did not get half the L40S through MPS: $(cat "$o")"
  grep -q '"memory_limit_mib": 23034.*"alloc": "out of memory"' "$o" || vc_fail "job $j allocated past its cap: $(cat "$o")"
done

echo "--- released: both device files root's again, the GPUs offered whole again, the node consistent"
for f in "$VC_RUN"/devroot/n1/dev/nvidia[01]; do
  for _ in $(seq 30); do [ "$(owner_mode "$f")" = "root 600" ] && break; sleep 1; done
  [ "$(owner_mode "$f")" = "root 600" ] || vc_fail "after the jobs $f is '$(owner_mode "$f")'"
  has_acl "$f" && vc_fail "after the jobs $f keeps an access ACL"
done
for _ in $(seq 30); do [ -z "$(ls "$VGPU_MPS_ROOT" 2>/dev/null)" ] && break; sleep 1; done
[ -z "$(ls "$VGPU_MPS_ROOT" 2>/dev/null)" ] || vc_fail "the MPS daemon outlived the last share: $(ls "$VGPU_MPS_ROOT")"
for _ in $(seq 30); do scontrol show node n1 | grep -q 'vgpu:whole.48gb:2' && break; sleep 1; done
scontrol show node n1 | grep -q 'vgpu:whole.48gb:2' || vc_fail "the L40S are not offered whole again"
vp_check || vc_fail "node state inconsistent"
echo "PASS: gpus_without_mig"
