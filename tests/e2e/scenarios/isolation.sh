#!/usr/bin/env bash
# Tenant isolation on the real cluster, two unprivileged users (docs/security.md, "Device
# confinement"). User A's job holds a MIG instance. User B's job, on the same node with its own
# instance, sets CUDA_VISIBLE_DEVICES to A's instance, opens A's capability files and runs a step
# in A's job: each refused, and A's job keeps working. A second job of user A can use the first
# one's instance: confinement is per user, and this test pins that as well. Jobs reach their
# instances through fake-cuda-probe, which opens the capability files as the CUDA driver does;
# fake-nvidia-modprobe does what nvidia-modprobe (setuid root) does when any CUDA program starts.
set -u
export VC_NODES=${VC_NODES:-n1}
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
USER_A=nobody
USER_B=$VP_USER_B
vp_second_user
PROBE=$VP_BIN/fakenvml/fake-cuda-probe
owner_mode() { stat -c '%U %a' "$1"; }

vp_start

vp_write_tenant_job

echo "--- user A ($USER_A) holds an instance only A can open"
a=$(vp_submit_on_n1 "$USER_A" -p infer --gres=vgpu:1g.10gb:1 "$VC_RUN/etc/tenant.sh" "$VC_RUN/out/release-a")
own=$(vp_line_of "$a" OWN)
echo "$own" | grep -q ': usable (' || vc_fail "A cannot use its own instance: $own"
a_uuid=$(echo "$own" | sed -n 's/.*CVD=\([^ ]*\).*/\1/p')
read -r a_gi_cap a_ci_cap < <(echo "$own" | sed -n 's/.*usable (gpu [0-9]* gi [0-9]* ci [0-9]*: \([^ ]*\) \([^)]*\)).*/\1 \2/p')
[ -n "$a_uuid" ] && [ -n "$a_gi_cap" ] && [ -n "$a_ci_cap" ] || vc_fail "cannot read A's instance from: $own"
[ "$a_uuid" = "$(vp_ledger_uuids n1 "$a")" ] || vc_fail "A's CUDA_VISIBLE_DEVICES $a_uuid is not its ledger instance"
for f in "$a_gi_cap" "$a_ci_cap"; do
  [ "$(owner_mode "$f")" = "$USER_A 400" ] || vc_fail "$f is '$(owner_mode "$f")', expected '$USER_A 400'"
done
vc_log "job $a ($USER_A): $a_uuid; capability files $(basename "$a_gi_cap") $(basename "$a_ci_cap") are $USER_A 0400"

echo "--- nvidia-modprobe, as any user's CUDA program runs it, leaves A's files alone"
# The driver's own setting for each of A's capabilities says so; other capabilities it resets.
( . "$VC_RUN/etc/vgpu-env/n1.sh"; "$VP_BIN/fakenvml/fake-nvidia-modprobe" ) >&2 || vc_fail "fake-nvidia-modprobe failed"
for f in "$a_gi_cap" "$a_ci_cap"; do
  [ "$(owner_mode "$f")" = "$USER_A 400" ] || vc_fail "after nvidia-modprobe $f is '$(owner_mode "$f")'"
done
[ "$(grep -rlx 'DeviceFileModify: 0' "$VC_RUN/devroot/n1/proc/driver/nvidia/capabilities" | wc -l)" = 2 ] ||
  vc_fail "not exactly A's two capabilities say DeviceFileModify: 0"

echo "--- user B ($USER_B) points its job at A's instance, A's files and A's job: each refused"
cat > "$VC_RUN/etc/hostile.txt" <<TRY
CUDA_VISIBLE_DEVICES=$a_uuid $PROBE
cat $a_gi_cap
cat $a_ci_cap
srun --jobid=$a --overlap true
TRY
b=$(vp_submit_on_n1 "$USER_B" -p infer --gres=vgpu:1g.10gb:1 "$VC_RUN/etc/tenant.sh" "$VC_RUN/out/release-b" "$VC_RUN/etc/hostile.txt")
own_b=$(vp_line_of "$b" OWN)
echo "$own_b" | grep -q ': usable (' || vc_fail "B cannot use its own instance: $own_b"
echo "$own_b" | grep -qF "$a_uuid" && vc_fail "B was given A's instance: $own_b"
vp_line_of "$b" "TRY rc=[0-9]* srun" >/dev/null
grep '^TRY' "$VC_RUN/out/$b.out" >&2
steal=$(grep -m1 "^TRY .*CUDA_VISIBLE_DEVICES=" "$VC_RUN/out/$b.out")
echo "$steal" | grep -q "^TRY rc=1 .*$a_uuid: refused: open $a_gi_cap: Permission denied" ||
  vc_fail "B used A's instance: $steal"
for f in "$a_gi_cap" "$a_ci_cap"; do
  t=$(grep -m1 "^TRY .* cat $f " "$VC_RUN/out/$b.out")
  echo "$t" | grep -q "^TRY rc=1 .*Permission denied" || vc_fail "B opened A's capability file: $t"
done
t=$(grep -m1 "^TRY .* srun --jobid=$a " "$VC_RUN/out/$b.out")
echo "$t" | grep -q "^TRY rc=0 " && vc_fail "B ran a step in A's job: $t"

touch "$VC_RUN/out/release-b"  # its CPU for A's second job (two per node)
vp_wait_done "$b" 60 || vc_fail "job $b did not finish"

echo "--- a second job of user A can use the first one's instance (confinement is per user)"
echo "CUDA_VISIBLE_DEVICES=$a_uuid $PROBE" > "$VC_RUN/etc/same-user.txt"
a2=$(vp_submit_on_n1 "$USER_A" -p infer --gres=vgpu:1g.10gb:1 "$VC_RUN/etc/tenant.sh" "$VC_RUN/out/release-a2" "$VC_RUN/etc/same-user.txt")
t=$(vp_line_of "$a2" "TRY")
echo "$t" | grep -q "^TRY rc=0 .*$a_uuid: usable" || vc_fail "A's second job could not use A's instance: $t"

echo "--- A's job is unaffected; when jobs end their instances go back to root"
touch "$VC_RUN/out/release-a" "$VC_RUN/out/release-a2"
for j in "$a" "$b" "$a2"; do vp_wait_done "$j" 60 || vc_fail "job $j did not finish"; done
vp_assert_completed "$a" "$b" "$a2"
again=$(vp_line_of "$a" AGAIN)
echo "$again" | grep -q "$a_uuid: usable" || vc_fail "A lost its instance during B's attempts: $again"
for f in "$a_gi_cap" "$a_ci_cap"; do
  [ "$(owner_mode "$f")" = "root 400" ] || vc_fail "after the job $f is '$(owner_mode "$f")', expected 'root 400'"
done
if [ "$(find "$VC_RUN/devroot" -path '*/dev/nvidia-caps/*' ! -user root | wc -l)" != 0 ]; then
  vc_fail "capability files still owned by a user: $(find "$VC_RUN/devroot" -path '*/dev/nvidia-caps/*' ! -user root)"
fi
vp_check || vc_fail "node state inconsistent"
echo "PASS: isolation"
