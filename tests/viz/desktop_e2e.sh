#!/bin/bash
# The desktop guest end to end, for real: the image vizfrontend/guest/desktop builds (Debian 12,
# Xfce, PyMOL, ParaView) boots under libvirt (TCG), and headless Chromium, through our page and
# noVNC, must show Xfce and PyMOL's demo structure (desktop_check.py's rule); the guest must say
# on its serial console that PyMOL loaded it. Registered with ctest (label viz).
#   desktop_e2e.sh VGPU_VIZ_BINARY WORK_DIR
# The image's base layer (packages, ~5 min cold here) is built only when VGPU_VIZ_BUILD_DESKTOP=1;
# otherwise a missing base skips the test (77) with the command that builds it. Screenshots stay in
# WORK_DIR. Prints "desktop_e2e: TIME" lines: start -> URL, -> Xfce in the browser, -> PyMOL's
# structure in the browser (benchmarks/viz_desktop_latency.sh takes the median of several runs).
set -uo pipefail
VIZ=${1:?usage: desktop_e2e.sh VGPU_VIZ_BINARY WORK_DIR}
WORK=${2:?usage: desktop_e2e.sh VGPU_VIZ_BINARY WORK_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
JOB=${VGPU_VIZ_E2E_JOB:-900070}
PORT=6095
GEOMETRY=1280x800
[ "$(id -u)" = 0 ] || { echo "desktop_e2e: SKIP: needs root (starts libvirtd, builds the image)"; exit 77; }

rm -rf "$WORK"; mkdir -p "$WORK"; chmod 700 "$WORK"
FAILS=0
now() { date +%s.%N; }
secs() { printf '%.1f' "$(echo "$2 - $1" | bc)"; }
pass() { echo "desktop_e2e: PASS: $*"; }
failed() { echo "desktop_e2e: FAIL: $*"; FAILS=$((FAILS + 1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else failed "$what"; fi; }

build_args=(--no-base-build)
[ "${VGPU_VIZ_BUILD_DESKTOP:-0}" = 1 ] && build_args=()
IMAGE=$("$SRC/vizfrontend/guest/desktop/build-desktop-image.sh" "${build_args[@]}")
rc=$?
if [ "$rc" = 3 ]; then
  echo "desktop_e2e: SKIP: the desktop image's package layer is not cached on this machine. Build it once"
  echo "desktop_e2e:   (about 5 minutes on a 2-core VM, 2.8 GB) with: sudo $SRC/vizfrontend/guest/desktop/build-desktop-image.sh"
  echo "desktop_e2e:   or run the tests with VGPU_VIZ_BUILD_DESKTOP=1"
  exit 77
fi
[ "$rc" = 0 ] && [ -s "$IMAGE/image.json" ] || { echo "desktop_e2e: FAIL: build-desktop-image ($rc)"; exit 1; }

cleanup() {
  "$VIZ" --config "$WORK/viz.json" stop --job "$JOB" >/dev/null 2>&1
  "$HERE/libvirt-down.sh" "$WORK/run"
}
trap cleanup EXIT
"$HERE/libvirt-up.sh" "$WORK/run" || { echo "desktop_e2e: FAIL: libvirt-up"; exit 1; }
virsh -q -c qemu:///system destroy "vgpu-viz-$JOB" >/dev/null 2>&1
virsh -q -c qemu:///system undefine "vgpu-viz-$JOB" >/dev/null 2>&1

cat > "$WORK/viz.json" <<JSON
{
  "version": 1,
  "libvirt_uri": "qemu:///system",
  "accelerator": "tcg",
  "listen_address": "127.0.0.1",
  "proxy_port": $PORT,
  "public_host": "127.0.0.1",
  "ssh_host": "testnode",
  "state_dir": "$WORK/state",
  "pools": [
    {"name": "viz-desktop", "attach": "none", "memory_mib": 2048, "vcpus": 2, "display": "vnc",
     "max_geometry": "1920x1200", "image": $(cat "$IMAGE/image.json")}
  ]
}
JSON
DISK_BEFORE=$(stat -c '%s %Y' "$IMAGE/disk.qcow2")

T0=$(now)
"$VIZ" --config "$WORK/viz.json" start --job "$JOB" --pool viz-desktop --geometry "$GEOMETRY" --user e2e \
  --job-name desktop-e2e --access-file "$WORK/access.txt" || { failed "vgpu-viz start"; exit 1; }
T_URL=$(now)
URL=$(sed -n 's/^  2\. open: *//p' "$WORK/access.txt")
SERIAL="$WORK/state/guest/$JOB.serial.log"

if timeout 600 /usr/bin/python3 "$HERE/cdp_novnc.py" "$URL" --expect desktop --screenshot "$WORK/desktop-pymol.png" \
     --timeout 540 | tee "$WORK/cdp.txt"; then
  T_PYMOL=$(now)
  pass "Xfce and PyMOL's structure on screen in the browser"
else
  failed "Xfce and PyMOL's structure on screen in the browser"
fi
echo "desktop_e2e: screenshot: $WORK/desktop-pymol.png"
check "the kept screenshot passes the desktop rule" /usr/bin/python3 "$HERE/desktop_check.py" "$WORK/desktop-pymol.png"
"$VIZ" --config "$WORK/viz.json" screenshot --job "$JOB" --out "$WORK/guest-framebuffer.png" >/dev/null &&
  echo "desktop_e2e: guest framebuffer: $WORK/guest-framebuffer.png"

# What the guest itself says (vgpu-viz-desktop's reporter on the serial console).
for _ in $(seq 1 100); do grep -q 'VIZDESKTOP pymol loaded' "$SERIAL" 2>/dev/null && break; sleep 0.2; done
check "guest: Xfce's panel and desktop windows are up" grep -Eq 'VIZDESKTOP windows .*Desktop.*xfce4-panel' "$SERIAL"
check "guest: a PyMOL window is open" grep -Eq 'VIZDESKTOP windows .*\|PyMOL\|' "$SERIAL"
check "guest: PyMOL loaded the demo structure (464 atoms)" grep -q 'VIZDESKTOP pymol loaded demo atoms 464' "$SERIAL"
check "guest: the screen has the asked geometry" grep -q "VIZDESKTOP screen $GEOMETRY" "$SERIAL"
grep -E 'VIZDESKTOP (service|X up|windows|pymol|boot|session log)' "$SERIAL" | sed 's/^/desktop_e2e: guest: /'

cp "$SERIAL" "$WORK/guest-serial.log" 2>/dev/null   # the stop removes it; keep it with the screenshots
"$VIZ" --config "$WORK/viz.json" stop --job "$JOB" >/dev/null
check "domain gone after stop" bash -c "! virsh -q -c qemu:///system list --all --name | grep -qx vgpu-viz-$JOB"
check "the session's disk overlay is gone" bash -c "! ls '$IMAGE'/*TRANSIENT* 2>/dev/null | grep -q ."
check "the cached image is untouched" test "$(stat -c '%s %Y' "$IMAGE/disk.qcow2")" = "$DISK_BEFORE"

echo "desktop_e2e: TIME start -> URL: $(secs "$T0" "$T_URL") s"
if [ -n "${T_PYMOL:-}" ]; then
  xfce=$(sed -n 's/.*Xfce desktop \([0-9.]*\)s.*/\1/p' "$WORK/cdp.txt")
  [ -n "$xfce" ] && echo "desktop_e2e: TIME start -> Xfce desktop in the browser: $(printf '%.1f' "$(echo "$T_URL - $T0 + $xfce" | bc)") s"
  echo "desktop_e2e: TIME start -> PyMOL's structure in the browser: $(secs "$T0" "$T_PYMOL") s"
fi
echo "desktop_e2e: $FAILS failure(s)"
[ "$FAILS" = 0 ]
