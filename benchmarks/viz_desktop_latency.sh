#!/usr/bin/env bash
# How long a user waits for a viz desktop, through Slurm, on this machine. RUNS sessions, one after
# another, on the local test cluster (tests/e2e/lib.sh with VP_VIZ=1) whose viz pool boots the
# desktop image (vizfrontend/guest/desktop: Debian 12, Xfce, PyMOL; built first if missing), each
#   srun -p viz --gres=vgpu:viz-small:1 vgpu-viz        (as an ordinary user)
# opened in headless Chromium through our page and noVNC (tests/viz/cdp_novnc.py --expect desktop,
# desktop_check.py's rule, screenshots every 2 s), then scancel. Prints per run and as median
# [min-max]: srun -> URL printed, srun -> Xfce in the browser, srun -> PyMOL's structure in the
# browser. Run it on an idle machine: the guest is emulated (QEMU TCG), so every busy core shows.
#   VP_BIN=<build dir, default build/asan> benchmarks/viz_desktop_latency.sh [RUNS=5] [--json FILE]
set -u
here=$(cd "$(dirname "$0")" && pwd)
runs=5 json_out=""
while [ $# -gt 0 ]; do
  case $1 in
    --json) json_out=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) runs=$1; shift ;;
  esac
done
export VP_BIN=${VP_BIN:-$here/../build/asan}
[ -x "$VP_BIN/vizfrontend/vgpu-viz" ] || { echo "viz_desktop_latency: no $VP_BIN/vizfrontend/vgpu-viz (set VP_BIN)" >&2; exit 2; }
VP_VIZ_DESKTOP_IMAGE=$("$here/../vizfrontend/guest/desktop/build-desktop-image.sh") || exit 1
export VP_VIZ=1 VP_VIZ_DESKTOP_IMAGE
. "$here/../tests/e2e/lib.sh"
trap 'vp_finish $?' EXIT
CDP=$VP_SRC/tests/viz/cdp_novnc.py
USER_NAME=nobody
now() { date +%s.%N; }
as_user() { runuser -u "$USER_NAME" -- env SLURM_CONF="$SLURM_CONF" VGPU_VIZ_CONFIG="$VC_RUN/etc/viz.json" "$@"; }
domains() { virsh -q -c qemu:///system list --all --name | grep -c "^vgpu-viz-$1\$"; }

vp_start
results=$VC_RUN/out/latency.tsv
: > "$results"
for i in $(seq 1 "$runs"); do
  out=$VC_RUN/out/viz-$i.out
  T0=$(now)
  as_user srun -p viz --gres=vgpu:viz-small:1 "$VP_VIZ_BIN" > "$out" 2>&1 < /dev/null &
  STEP=$!
  for _ in $(seq 1500); do grep -q '^  password:' "$out" && break; kill -0 $STEP 2>/dev/null || break; sleep 0.2; done
  grep -q '^  password:' "$out" || vc_fail "run $i: no access text: $(cat "$out")"
  T_URL=$(now)
  job=$(squeue -h -u "$USER_NAME" -o %A | head -1)
  url=$(sed -n 's/^  2\. open: *//p' "$out" | tail -1)
  timeout 600 /usr/bin/python3 "$CDP" "$url" --expect desktop --timeout 540 --screenshot "$VC_RUN/out/desktop-$i.png" \
    > "$VC_RUN/out/cdp-$i.txt" 2>&1 || vc_fail "run $i: no desktop with PyMOL: $(cat "$VC_RUN/out/cdp-$i.txt")"
  T_PYMOL=$(now)
  xfce=$(sed -n 's/.*Xfce desktop \([0-9.]*\)s.*/\1/p' "$VC_RUN/out/cdp-$i.txt")
  printf '%s\t%.2f\t%.2f\t%.2f\n' "$i" "$(echo "$T_URL - $T0" | bc)" "$(echo "$T_URL - $T0 + $xfce" | bc)" \
    "$(echo "$T_PYMOL - $T0" | bc)" | tee -a "$results"
  scancel "$job"
  wait $STEP
  vp_wait_done "$job" 120 || vc_fail "run $i: job $job did not end"
  for _ in $(seq 150); do [ "$(domains "$job")" = 0 ] && break; sleep 0.2; done
done

python3 - "$results" "$runs" "$VP_BIN" "${json_out}" <<'PY'
import json, os, platform, statistics, sys
path, runs, vp_bin, json_out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = [list(map(float, line.split("\t")[1:])) for line in open(path) if line.strip()]
names = ["srun -> URL printed", "srun -> Xfce desktop in the browser", "srun -> PyMOL's structure in the browser"]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"viz desktop latency, {len(rows)} runs, {os.cpu_count()} cores ({cpu}), {platform.node()}, build {vp_bin},")
print("guest under QEMU TCG (no KVM), 2 vCPUs, 2 GiB; Chromium polls a screenshot every 2 s")
summary = {}
for k, name in enumerate(names):
    vals = [r[k] for r in rows]
    summary[name] = {"median_s": statistics.median(vals), "min_s": min(vals), "max_s": max(vals), "runs": vals}
    print(f"  {name:42s} median {statistics.median(vals):6.1f} s   [{min(vals):.1f} - {max(vals):.1f}]")
if json_out:
    json.dump({"cores": os.cpu_count(), "cpu": cpu, "build": vp_bin, "metrics": summary}, open(json_out, "w"), indent=2)
PY
