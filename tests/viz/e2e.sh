#!/bin/bash
# End-to-end viz session on this machine, for real: libvirtd + a TCG guest + websockify + noVNC
# in headless Chromium. Registered with ctest (label viz, RESOURCE_LOCK libvirt).
#   e2e.sh VGPU_VIZ_BINARY WORK_DIR
# Steps: libvirt up -> build guest -> `vgpu-viz start` (pool attach=none) -> VNC on a UNIX socket
# another user cannot reach -> banner pixels in the browser -> wrong password, wrong token refused
# -> rotate: old password refused, new accepted ->
# no secret in any log -> `vgpu-viz stop` -> domain, token, record and proxy gone -> libvirt down.
# Exit 0 = pass, 77 = skipped (not root), else fail. The screenshot path is printed.
set -uo pipefail
VIZ=${1:?usage: e2e.sh VGPU_VIZ_BINARY WORK_DIR}
WORK=${2:?usage: e2e.sh VGPU_VIZ_BINARY WORK_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
. "$HERE/lib.sh"
JOB=900042
PORT=6093
GUEST=${VGPU_VIZ_GUEST_DIR:-/var/cache/slurm-vgpu/guest}
[ "$(id -u)" = 0 ] || { echo "e2e: SKIP: needs root (starts libvirtd)"; exit 77; }

rm -rf "$WORK"; mkdir -p "$WORK"; chmod 700 "$WORK"
STATE="$WORK/state"
FAILS=0
now() { date +%s.%N; }
pass() { echo "e2e: PASS: $*"; }
failed() { echo "e2e: FAIL: $*"; FAILS=$((FAILS + 1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else failed "$what"; fi; }

cleanup() {
  [ -n "${STEP:-}" ] && kill -TERM "$STEP" 2>/dev/null && wait "$STEP"
  "$VIZ" --config "$WORK/viz.json" stop --job "$JOB" >/dev/null 2>&1
  "$VIZ" --config "$WORK/viz.json" stop --job "$((JOB + 1))" >/dev/null 2>&1
  "$HERE/libvirt-down.sh" "$WORK/run"
}
trap cleanup EXIT

T_ALL=$(now)
"$HERE/libvirt-up.sh" "$WORK/run" || { echo "e2e: FAIL: libvirt-up"; exit 1; }
"$SRC/vizfrontend/guest/build-guest.sh" "$GUEST" || { echo "e2e: FAIL: build-guest"; exit 1; }
virsh -q -c qemu:///system destroy "vgpu-viz-$JOB" >/dev/null 2>&1
virsh -q -c qemu:///system undefine "vgpu-viz-$JOB" >/dev/null 2>&1

OOD_PORTS=6200   # sessions also get an OnDemand websocket on 127.0.0.1:6200-6209
viz_test_config "$WORK/viz.json" "$STATE" "$PORT" "$GUEST" "$OOD_PORTS"

# --- start
T0=$(now)
if ! "$VIZ" --config "$WORK/viz.json" start --job "$JOB" --pool viz-test --geometry 1024x768 \
     --user e2e --job-name "e2e <'\"&> test" --cpuset 0 --access-file "$WORK/access.txt" 2> "$WORK/start.err"; then
  cat "$WORK/start.err"; failed "vgpu-viz start"; exit 1
fi
T_START=$(now)
cat "$WORK/start.err"
check "the log says what runs the guest: TCG, as this test's config asks" \
  grep -q "guest under TCG (the guest is emulated, far slower): KVM is not offered here: the node's viz config says" \
  "$WORK/start.err"
pass "vgpu-viz start returned after $(printf '%.2f' "$(echo "$T_START - $T0" | bc)")s"
check "access file is private (0600)" test "$(stat -c %a "$WORK/access.txt")" = 600
URL=$(sed -n 's/^  2\. open: *//p' "$WORK/access.txt")
SECRET=$(sed -n 's/^  password: *//p' "$WORK/access.txt")
url_ok() {
  case "$URL" in
    "http://127.0.0.1:$PORT/vgpu-viz.html?"*"#&password=$SECRET") [[ "${URL%%#*}" != *"$SECRET"* ]] ;;
    *) return 1 ;;
  esac
}
check "URL names the proxy and carries the password only in the fragment" url_ok
check "ssh line printed" grep -q "ssh -N -L $PORT:127.0.0.1:$PORT testnode" "$WORK/access.txt"
check "token file is 0600" test "$(stat -c %a "$STATE/tokens/vgpu-viz-$JOB")" = 600
OOD_PORT=$(sed -n 's/^  OnDemand websocket: *testnode:\([0-9]*\)$/\1/p' "$WORK/access.txt")
check "the access names the session's OnDemand websocket" test -n "$OOD_PORT"
check "the OnDemand websocket listens (127.0.0.1:$OOD_PORT)" bash -c "(exec 3<>/dev/tcp/127.0.0.1/$OOD_PORT) 2>/dev/null"
"$VIZ" --config "$WORK/viz.json" list | tee "$WORK/list.txt"
check "list shows the session running" grep -Eq "^$JOB +vgpu-viz-$JOB +viz-test +e2e +none .*running$" "$WORK/list.txt"
check "vCPU pinned to the cpuset" bash -c "virsh -c qemu:///system vcpupin vgpu-viz-$JOB | grep -Eq '^ *0 +0 *$'"

# --- the VNC server is reachable by root alone: a UNIX socket in the domain's private directory,
# no TCP port another local user could try passwords on; websockify finds it by the token.
VNC_SOCK=$(virsh -q -c qemu:///system dumpxml "vgpu-viz-$JOB" | sed -n "s/.*<listen type='socket' socket='\([^']*\)'.*/\1/p" | head -1)
TOKEN=$(echo "$URL" | sed -nE 's/.*token%3D([0-9a-f]{32}).*/\1/p')
QEMU_PID=$(cat "/run/libvirt/qemu/vgpu-viz-$JOB.pid" 2>/dev/null)
check "VNC listens on a UNIX socket ($VNC_SOCK)" test -S "$VNC_SOCK"
check "no VNC port on 127.0.0.1 (5900-5999)" bash -c 'for p in $(seq 5900 5999); do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && { echo "port $p open"; exit 1; }; done; exit 0'
check "another local user cannot connect to the VNC socket" bash -c "runuser -u nobody -- /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except PermissionError:
    sys.exit(0)
sys.exit(1)' '$VNC_SOCK'"
check "websockify's token sends the session to that socket" grep -qx "$TOKEN: unix_socket:$VNC_SOCK" "$STATE/tokens/vgpu-viz-$JOB"
check "the token is not on QEMU's command line" bash -c "test -n '$QEMU_PID' && test -n '$TOKEN' && ! tr '\\0' ' ' < /proc/$QEMU_PID/cmdline | grep -q '$TOKEN'"

LOGS=("$STATE/websockify.log" "/var/log/libvirt/qemu/vgpu-viz-$JOB.log" "/var/log/libvirt/qemu/vgpu-viz-$((JOB + 1)).log"
      "$WORK/list.txt" "$WORK/cdp-banner.txt")
SECRETS=()

# --- the guest banner in the browser
SHOT="$WORK/novnc-banner.png"
if timeout 180 /usr/bin/python3 "$HERE/cdp_novnc.py" "$URL" --expect banner --screenshot "$SHOT" --timeout 120 \
     | tee "$WORK/cdp-banner.txt"; then
  T_BANNER=$(now)
  pass "guest banner visible in noVNC"
  printf 'e2e: TIME start -> banner pixels in the browser: %.2fs\n' "$(echo "$T_BANNER - $T0" | bc)"
else
  failed "guest banner visible in noVNC"
fi
echo "e2e: screenshot: $SHOT"
"$VIZ" --config "$WORK/viz.json" screenshot --job "$JOB" --out "$WORK/libvirt-screenshot.png" >/dev/null &&
  echo "e2e: libvirt screenshot: $WORK/libvirt-screenshot.png"

# --- wrong secrets are refused, and the page says why
WRONG_PW="${URL%%#*}#&password=WrongPw1"
check "wrong password refused; the page says wrong or used password" timeout 120 /usr/bin/python3 \
  "$HERE/cdp_novnc.py" "$WRONG_PW" --expect bad-password --screenshot "$WORK/novnc-wrong-password.png" --timeout 60
WRONG_TOKEN=$(echo "$URL" | sed -E 's/token%3D[0-9a-f]{32}/token%3D00000000000000000000000000000000/')
check "wrong token refused; the page says no session behind the link" timeout 120 /usr/bin/python3 \
  "$HERE/cdp_novnc.py" "$WRONG_TOKEN" --expect no-session --screenshot "$WORK/novnc-no-session.png" --timeout 60
check "a link without its password asks for it" timeout 120 /usr/bin/python3 "$HERE/cdp_novnc.py" "${URL%%#*}" \
  --expect password-needed --timeout 60

# --- rotation: the old secret stops working, the new one works
"$VIZ" --config "$WORK/viz.json" rotate --job "$JOB" --access-file "$WORK/access2.txt" >/dev/null
NEW_URL=$(sed -n 's/^  2\. open: *//p' "$WORK/access2.txt")
NEW_SECRET=$(sed -n 's/^  password: *//p' "$WORK/access2.txt")
check "rotate gives a different password" test -n "$NEW_SECRET" -a "$NEW_SECRET" != "$SECRET"
check "old password refused after rotation; the page says so" timeout 120 /usr/bin/python3 "$HERE/cdp_novnc.py" \
  "$URL" --expect bad-password --timeout 60
check "new password accepted after rotation" timeout 120 /usr/bin/python3 "$HERE/cdp_novnc.py" "$NEW_URL" \
  --expect banner --timeout 60

# --- Slurm-step mode: no subcommand, job id from SLURM_JOB_ID. The first login rotates the
# password; SIGTERM (what Slurm sends at the end of a step) tears the session down.
JOB2=$((JOB + 1))
mkdir -p "$WORK/ood"
SLURM_JOB_ID=$JOB2 VGPU_VIZ_POOL=viz-test "$VIZ" --config "$WORK/viz.json" --access-file "$WORK/step-access.txt" \
  --ood-connection "$WORK/ood/connection.yml" > "$WORK/step.out" 2>&1 < /dev/null &
STEP=$!
for _ in $(seq 1 600); do [ -s "$WORK/step-access.txt" ] && break; kill -0 $STEP 2>/dev/null || break; sleep 0.1; done
STEP_URL=$(sed -n 's/^  2\. open: *//p' "$WORK/step-access.txt" 2>/dev/null)
STEP_SECRET=$(sed -n 's/^  password: *//p' "$WORK/step-access.txt" 2>/dev/null)
check "step mode started a session from SLURM_JOB_ID" test -n "$STEP_SECRET"
check "step mode: first login shows the banner" timeout 180 /usr/bin/python3 "$HERE/cdp_novnc.py" "$STEP_URL" \
  --expect banner --timeout 120
for _ in $(seq 1 100); do grep -q "display password changed" "$WORK/step-access.txt" && break; sleep 0.1; done
STEP_SECRET2=$(sed -n 's/^  password: *//p' "$WORK/step-access.txt")
STEP_URL2=$(sed -n 's/^  2\. open: *//p' "$WORK/step-access.txt")
check "step mode: password rotated after the first login" test -n "$STEP_SECRET2" -a "$STEP_SECRET2" != "$STEP_SECRET"
check "step mode: the printed (first) password no longer works" timeout 120 /usr/bin/python3 "$HERE/cdp_novnc.py" \
  "$STEP_URL" --expect bad-password --timeout 60
check "step mode: the rotated password works" timeout 120 /usr/bin/python3 "$HERE/cdp_novnc.py" "$STEP_URL2" \
  --expect banner --timeout 60

# --- Open OnDemand: its connection file follows the rotation, and its proxy's path (rnode/<host>/
# <websocket>/websockify, here the websocket port itself) reaches the session with that password
check "OnDemand: connection.yml has ood_core's VNC keys" /usr/bin/python3 "$HERE/ood_app_check.py" \
  --connection "$WORK/ood/connection.yml"
OOD2=$(sed -n 's/^websocket: //p' "$WORK/ood/connection.yml")
OOD_PW=$(sed -n 's/^password: //p' "$WORK/ood/connection.yml")
check "OnDemand: connection.yml carries the rotated password" test "$OOD_PW" = "$STEP_SECRET2"
OOD_URL="http://127.0.0.1:$OOD2/vgpu-viz.html?path=websockify#&password=$OOD_PW"
check "OnDemand: its websocket shows the session with that password" timeout 120 /usr/bin/python3 \
  "$HERE/cdp_novnc.py" "$OOD_URL" --expect banner --screenshot "$WORK/ondemand-banner.png" --timeout 60
check "OnDemand: the used first password is refused there too" timeout 120 /usr/bin/python3 "$HERE/cdp_novnc.py" \
  "${OOD_URL%%#*}#&password=$STEP_SECRET" --expect bad-password --timeout 60
kill -TERM $STEP 2>/dev/null
wait $STEP
check "step mode: exits 0 on SIGTERM" test $? = 0
check "step mode: domain gone after SIGTERM" bash -c "! virsh -q -c qemu:///system list --all --name | grep -qx vgpu-viz-$JOB2"
check "step mode: token and record gone" test ! -e "$STATE/tokens/vgpu-viz-$JOB2" -a ! -e "$STATE/sessions/$JOB2.json"
check "step mode: the OnDemand websocket is gone" bash -c "test ! -e '$STATE/ood/$JOB2' && ! (exec 3<>/dev/tcp/127.0.0.1/$OOD2) 2>/dev/null"
LOGS+=("$WORK/step.out")
SECRETS+=("$STEP_SECRET" "$STEP_SECRET2")

# --- no secret in any log this test can see
leak=0
SECRETS+=("$SECRET" "$NEW_SECRET")
for s in "${SECRETS[@]}"; do
  [ -n "$s" ] || continue
  grep -l -F -- "$s" "${LOGS[@]}" 2>/dev/null && leak=1
done
check "no password in websockify, QEMU or test logs" test "$leak" = 0
check "no password in the session record" bash -c "! grep -q -F -- '$SECRET' '$STATE/sessions/$JOB.json'"

# --- stop while the browser shows the session: the page says the session ended
timeout 240 /usr/bin/python3 "$HERE/cdp_novnc.py" "$NEW_URL" --expect connected --then ended \
  --screenshot "$WORK/novnc-ended.png" --timeout 200 > "$WORK/cdp-ended.txt" 2>&1 &
WATCH=$!
for _ in $(seq 1 600); do grep -q '^cdp_novnc: connected' "$WORK/cdp-ended.txt" && break; kill -0 $WATCH 2>/dev/null || break; sleep 0.2; done
check "the browser is connected before the stop" grep -q '^cdp_novnc: connected' "$WORK/cdp-ended.txt"

# --- stop: everything gone
"$VIZ" --config "$WORK/viz.json" stop --job "$JOB"
wait $WATCH
check "the open page says the session ended" test $? = 0
cat "$WORK/cdp-ended.txt"
check "domain gone" bash -c "! virsh -q -c qemu:///system list --all --name | grep -qx vgpu-viz-$JOB"
check "token gone" test ! -e "$STATE/tokens/vgpu-viz-$JOB"
check "session record gone" test ! -e "$STATE/sessions/$JOB.json"
check "proxy stopped (port closed)" bash -c "! (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null"
check "no websockify pid file" test ! -e "$STATE/websockify.pid"
check "no websockify process left (per-connection handlers included)" bash -c "! pgrep -f '[w]ebsockify .*:$PORT' >/dev/null"
check "the proxy served our session page (web root: page + noVNC modules)" \
  test -s "$STATE/web/vgpu-viz.html" -a -e "$STATE/web/core/rfb.js"
check "the OnDemand websocket is gone" bash -c "test ! -e '$STATE/ood/$JOB' && ! (exec 3<>/dev/tcp/127.0.0.1/$OOD_PORT) 2>/dev/null"
check "device gone (attach none: nothing was made; no mdev of this job)" \
  bash -c "! ls /sys/bus/mdev/devices 2>/dev/null | grep -q '$(printf '%012x' $JOB)\$'"

printf 'e2e: total %.1fs, %d failure(s)\n' "$(echo "$(now) - $T_ALL" | bc)" "$FAILS"
[ "$FAILS" = 0 ]
