#!/usr/bin/env bash
# A visualization session through Slurm, for real: an ordinary user runs
#   srun -p viz --gres=vgpu:viz-small:1 vgpu-viz
# on the local cluster; the prolog starts a libvirt VM (QEMU TCG) and its noVNC access, the step
# prints the URL, headless Chromium sees the guest's desktop pixels, a wrong secret is refused,
# the first login rotates the password, another local user can reach neither the VNC server (a
# UNIX socket, no TCP port) nor the access file, and scancel removes the domain, token and access
# file.
# Then: a refused request, and a VM whose epilog could not stop it is reaped by the planner.
set -u
export VP_VIZ=1
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
CDP=$VP_SRC/tests/viz/cdp_novnc.py
USER_NAME=nobody
now() { date +%s.%N; }
secs() { printf '%.1f' "$(echo "$2 - $1" | bc)"; }
field() { sed -n "s/^  $1: *//p" "$2" | tail -1; }   # the last "  2. open: ..." style line
domains() { virsh -q -c qemu:///system list --all --name | grep -c "^vgpu-viz-$1\$"; }
ledger_vms() { # jobs with a VM record in n1's ledger
  "$VP_BIN/vgpuctl/vgpuctl" status --state-dir "$VGPU_STATE_DIR" --node n1 --json |
    python3 -c 'import json,sys; print(" ".join(str(v["job"]) for n in json.load(sys.stdin) for v in n.get("viz_vms", [])))'
}
as_user() { runuser -u "$USER_NAME" -- env SLURM_CONF="$SLURM_CONF" VGPU_VIZ_CONFIG="$VC_RUN/etc/viz.json" "$@"; }

vp_start
VIZ=$VP_BIN/vizfrontend/vgpu-viz
SHOTS=${VP_VIZ_ARTIFACTS:-$VP_BIN/tests/e2e-artifacts}
mkdir -p "$SHOTS"

echo "--- Slurm advertises the viz pool on n1 only"
vc_node_gres n1 | grep -q 'viz-small:2' || vc_fail "n1 does not offer viz-small:2: $(vc_node_gres n1)"
vc_node_gres n2 | grep -q 'viz-small' && vc_fail "n2 offers viz-small"

echo "--- srun as $USER_NAME: URL and secret within seconds"
out=$VC_RUN/out/viz-step.out
T0=$(now)
as_user srun -p viz --gres=vgpu:viz-small:1 -J 'viz <"&$(id)>' "$VIZ" > "$out" 2>&1 < /dev/null &
STEP=$!
for _ in $(seq 600); do grep -q '^  password:' "$out" && break; kill -0 $STEP 2>/dev/null || break; sleep 0.2; done
grep -q '^  password:' "$out" || vc_fail "no access text from the step: $(cat "$out"; tail -5 "$VC_RUN"/log/prolog.n1.log)"
T_URL=$(now)
job=$(squeue -h -u "$USER_NAME" -o %A | head -1)
URL=$(field "2\\. open" "$out")
SECRET=$(field password "$out")
echo "vgpu-viz: job $job: URL printed $(secs "$T0" "$T_URL") s after srun"
grep -q "ssh -N -L $VP_VIZ_PORT:127.0.0.1:$VP_VIZ_PORT n1" "$out" || vc_fail "no ssh -L line: $(cat "$out")"
[[ "${URL%%#*}" != *"$SECRET"* ]] || vc_fail "the secret is outside the URL fragment"

echo "--- the session belongs to the job and its user"
access=$VC_RUN/viz/access/$job
[ "$(stat -c '%U %a' "$access")" = "$USER_NAME 600" ] || vc_fail "access file: $(stat -c '%U %a' "$access")"
[ "$(stat -c '%a' "$VC_RUN/viz/access")" = 711 ] || vc_fail "access dir mode $(stat -c %a "$VC_RUN/viz/access")"
[ "$(domains "$job")" = 1 ] || vc_fail "no domain vgpu-viz-$job"
[ "$(ledger_vms)" = "$job" ] || vc_fail "ledger VM records: '$(ledger_vms)', expected $job"
vp_status | grep -q "viz VM vgpu-viz-$job for job $job" || vc_fail "vgpuctl status does not show the VM: $(vp_status)"
vp_check || vc_fail "node state inconsistent while the session runs"

echo "--- another local user reaches neither the session's VNC server nor its secret"
vp_second_user
sock=$(virsh -q -c qemu:///system dumpxml "vgpu-viz-$job" | sed -n "s/.*<listen type='socket' socket='\([^']*\)'.*/\1/p" | head -1)
[ -S "$sock" ] || vc_fail "the session's VNC server has no UNIX socket: '$sock'"
for p in $(seq 5900 5999); do
  (exec 3<>/dev/tcp/127.0.0.1/"$p") 2>/dev/null && vc_fail "a VNC port is open on 127.0.0.1:$p"
done
runuser -u "$VP_USER_B" -- python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except PermissionError:
    sys.exit(0)
sys.exit(1)' "$sock" || vc_fail "$VP_USER_B could connect to the VNC socket $sock"
runuser -u "$VP_USER_B" -- cat "$access" >/dev/null 2>&1 && vc_fail "$VP_USER_B could read the access file"
vc_log "$VP_USER_B: VNC socket $sock refused, access file unreadable, no VNC TCP port"

echo "--- the guest's desktop in the browser (headless Chromium, noVNC)"
if timeout 240 python3 "$CDP" "$URL" --expect banner --screenshot "$SHOTS/viz-session-novnc.png" --timeout 180; then
  T_PIX=$(now)
  echo "vgpu-viz: TIME srun -> desktop pixels in the browser: $(secs "$T0" "$T_PIX") s (URL after $(secs "$T0" "$T_URL") s)"
  echo "vgpu-viz: screenshot: $SHOTS/viz-session-novnc.png"
else
  vc_fail "guest banner not visible in noVNC"
fi

echo "--- the first login rotated the password: the printed one is dead, the new one works"
for _ in $(seq 100); do grep -q 'display password changed' "$out" && break; sleep 0.2; done
SECRET2=$(field password "$out")
URL2=$(field "2\\. open" "$out")
[ -n "$SECRET2" ] && [ "$SECRET2" != "$SECRET" ] || vc_fail "password not rotated after the first login: $(cat "$out")"
timeout 120 python3 "$CDP" "$URL" --expect bad-password --timeout 60 ||
  vc_fail "the first (used) password still works, or the page does not say it was used"
timeout 120 python3 "$CDP" "${URL2%%#*}#&password=WrongPw1" --expect bad-password --timeout 60 ||
  vc_fail "wrong password accepted, or the page does not say it is wrong"
WRONG_TOKEN=$(echo "$URL2" | sed -E 's/token%3D[0-9a-f]{32}/token%3D00000000000000000000000000000000/')
timeout 120 python3 "$CDP" "$WRONG_TOKEN" --expect no-session --timeout 60 ||
  vc_fail "wrong token accepted, or the page does not say there is no session behind it"
timeout 180 python3 "$CDP" "$URL2" --expect banner --timeout 120 || vc_fail "the rotated password does not work"

echo "--- a second step asks for another display size: the node restarts the VM with it"
out2=$VC_RUN/out/viz-step2.out
as_user srun --jobid="$job" --overlap "$VIZ" --geometry 800x600 > "$out2" 2>&1 < /dev/null &
STEP2=$!
for _ in $(seq 600); do grep -q '^  password:' "$out2" && break; kill -0 $STEP2 2>/dev/null || break; sleep 0.2; done
grep -q 'restarting your session with geometry=800x600' "$out2" || vc_fail "second step: $(cat "$out2")"
SECRET3=$(field password "$out2")
[ -n "$SECRET3" ] && [ "$SECRET3" != "$SECRET2" ] || vc_fail "no fresh access after the restart: $(cat "$out2")"
virsh -c qemu:///system dumpxml "vgpu-viz-$job" | grep -q 'vgpu_viz.geometry=800x600' ||
  vc_fail "the restarted domain does not carry the asked geometry"
[ "$(stat -c '%U %a' "$access")" = "$USER_NAME 600" ] || vc_fail "access file after restart: $(stat -c '%U %a' "$access")"
grep -q 'session is up' "$out" || vc_fail "the first step did not follow the restart"
kill $STEP2 2>/dev/null; wait $STEP2 2>/dev/null

echo "--- scancel while the browser shows the session: the page says the session ended"
URL3=$(field "2\\. open" "$out2")
timeout 240 python3 "$CDP" "$URL3" --expect connected --then ended --screenshot "$SHOTS/viz-session-ended.png" \
  --timeout 200 > "$VC_RUN/out/cdp-ended.txt" 2>&1 &
WATCH=$!
for _ in $(seq 600); do grep -q '^cdp_novnc: connected' "$VC_RUN/out/cdp-ended.txt" && break; kill -0 $WATCH 2>/dev/null || break; sleep 0.2; done
grep -q '^cdp_novnc: connected' "$VC_RUN/out/cdp-ended.txt" || vc_fail "the restarted session did not accept its password: $(cat "$VC_RUN/out/cdp-ended.txt")"

echo "--- scancel: VM, token, access file and ledger record are gone"
scancel "$job"
wait $STEP
wait $WATCH || vc_fail "the open page did not say the session ended: $(cat "$VC_RUN/out/cdp-ended.txt")"
cat "$VC_RUN/out/cdp-ended.txt"
vp_wait_done "$job" 90 || vc_fail "job $job did not end"
for _ in $(seq 100); do [ "$(domains "$job")" = 0 ] && break; sleep 0.2; done
[ "$(domains "$job")" = 0 ] || vc_fail "domain vgpu-viz-$job outlived its job"
[ ! -e "$access" ] && [ ! -e "$access.request" ] || vc_fail "access files left: $(ls "$VC_RUN/viz/access")"
[ ! -e "$VC_RUN/viz/state/tokens/vgpu-viz-$job" ] || vc_fail "websockify token left"
[ -z "$(ledger_vms)" ] || vc_fail "ledger still records VMs: $(ledger_vms)"

echo "--- no secret in any log"
for s in "$SECRET" "$SECRET2" "$SECRET3"; do
  if grep -rlF -- "$s" "$VC_RUN/log" "$VC_RUN/viz/state" "$VGPU_STATE_DIR" /var/log/libvirt/qemu/vgpu-viz-"$job".log 2>/dev/null; then
    vc_fail "a session password is in the logs above"
  fi
done

echo "--- refused: two sessions in one job; a viz pool on a partition that does not offer it"
two=$(vp_sbatch -p viz --gres=vgpu:viz-small:2 --wrap 'sleep 5')
vp_wait_done "$two" 90 || vc_fail "job $two did not end"
scontrol show job "$two" | grep -q 'Comment=vgpu: viz pool viz-small: a job gets one session per node' ||
  vc_fail "job $two: $(scontrol show job "$two" | grep -E 'JobState|Comment')"
[ "$(domains "$two")" = 0 ] || vc_fail "refused job $two got a VM"
sbatch -p infer --gres=vgpu:viz-small:1 --wrap true > "$VC_RUN/out/refused.txt" 2>&1 &&
  vc_fail "partition infer accepted a viz pool"
grep -q "unknown profile 'viz-small'" "$VC_RUN/out/refused.txt" || vc_fail "refusal: $(cat "$VC_RUN/out/refused.txt")"

echo "--- an epilog that cannot stop the VM: the planner's reconcile removes it"
keep=$(vp_sbatch -p viz --gres=vgpu:viz-small:1 --wrap 'sleep 300')
vp_wait_running "$keep" 120 || vc_fail "job $keep did not start"
# RUNNING already while the prolog works (PrologFlags=Alloc): wait for the VM, then its record.
for _ in $(seq 450); do [ "$(domains "$keep")" = 1 ] && [ "$(ledger_vms)" = "$keep" ] && break; sleep 0.2; done
[ "$(domains "$keep")" = 1 ] || vc_fail "job $keep has no VM"
cp "$VC_RUN/etc/vgpu-env/n1.sh" "$VC_RUN/etc/n1.env.saved"
echo "export VGPU_VIZ=/nonexistent/vgpu-viz VGPU_HOOK_SERVICE=off" >> "$VC_RUN/etc/vgpu-env/n1.sh"   # hooks only (working alone); the planner keeps its env
scancel "$keep"
vp_wait_done "$keep" 90 || vc_fail "job $keep did not end"
cp "$VC_RUN/etc/n1.env.saved" "$VC_RUN/etc/vgpu-env/n1.sh"
grep -q "viz VM of job $keep" "$VC_RUN/log/epilog.n1.log" || vc_fail "the epilog did not report its failure"
for _ in $(seq 150); do [ "$(domains "$keep")" = 0 ] && [ -z "$(ledger_vms)" ] && break; sleep 0.2; done
[ "$(domains "$keep")" = 0 ] || vc_fail "the planner did not reap vgpu-viz-$keep"
[ -z "$(ledger_vms)" ] || vc_fail "ledger VM record of $keep not removed"
grep -q "job $keep is no longer running here" "$VC_RUN/log/planner.n1.log" || vc_fail "planner log has no release line"

vp_check || vc_fail "final state inconsistent"
if ls "$VGPU_STATE_DIR"/*/ledger.json.corrupt-* 2>/dev/null; then vc_fail "a ledger was set aside as corrupt"; fi
echo "viz session scenario: PASS"
