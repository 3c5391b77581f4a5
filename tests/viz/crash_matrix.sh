#!/bin/bash
# Crash-point matrix for viz session start, against real libvirtd + QEMU (TCG) and websockify.
# Registered with ctest (label viz, RESOURCE_LOCK libvirt). docs/reliability.md has the results.
#   crash_matrix.sh VGPU_VIZ_BINARY WORK_DIR
# A witness session runs throughout. For each viz crash point: arm it for vgpu-viz, start a
# session (the process dies there with SIGKILL), note what it left, then recover the way the
# node does (the planner's `vgpu-viz reap --live <jobs Slurm still runs>`), and check: no domain,
# token or record of the dead start is left, the witness still runs with its token, and a fresh
# start of the same job works afterwards (nothing in the way). Prints the matrix.
# Exit 0 = pass, 77 = skipped (not root), else fail.
set -uo pipefail
VIZ=${1:?usage: crash_matrix.sh VGPU_VIZ_BINARY WORK_DIR}
WORK=${2:?usage: crash_matrix.sh VGPU_VIZ_BINARY WORK_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
. "$HERE/lib.sh"
WITNESS=910001
PORT=6094
GUEST=${VGPU_VIZ_GUEST_DIR:-/var/cache/slurm-vgpu/guest}
[ "$(id -u)" = 0 ] || { echo "viz crash matrix: SKIP: needs root (starts libvirtd)"; exit 77; }

rm -rf "$WORK"; mkdir -p "$WORK"; chmod 700 "$WORK"
STATE="$WORK/state"
viz() { "$VIZ" --config "$WORK/viz.json" "$@"; }
domain_exists() { virsh -q -c qemu:///system list --all --name | grep -qx "vgpu-viz-$1"; }
domain_running() { virsh -q -c qemu:///system list --name | grep -qx "vgpu-viz-$1"; }

jobs_started=()
cleanup() {
  local j
  for j in "$WITNESS" "${jobs_started[@]}"; do viz stop --job "$j" >/dev/null 2>&1; done
  "$HERE/libvirt-down.sh" "$WORK/run"
}
trap cleanup EXIT

"$HERE/libvirt-up.sh" "$WORK/run" || { echo "viz crash matrix: FAIL: libvirt-up"; exit 1; }
"$SRC/vizfrontend/guest/build-guest.sh" "$GUEST" >/dev/null || { echo "viz crash matrix: FAIL: build-guest"; exit 1; }

OOD_PORTS=6300   # every session also gets its OnDemand websocket (viz.after_ood_proxy)
viz_test_config "$WORK/viz.json" "$STATE" "$PORT" "$GUEST" "$OOD_PORTS"

start() { viz start --job "$1" --pool viz-test --user crash --access-file "$WORK/access-$1.txt" >"$WORK/start-$1.out" 2>&1; }

start "$WITNESS" || { cat "$WORK/start-$WITNESS.out"; echo "viz crash matrix: FAIL: witness did not start"; exit 1; }
witness_intact() {
  domain_running "$WITNESS" || { echo "witness domain not running"; return 1; }
  [ -s "$STATE/tokens/vgpu-viz-$WITNESS" ] || { echo "witness token gone"; return 1; }
  [ -s "$STATE/sessions/$WITNESS.json" ] || { echo "witness record gone"; return 1; }
  (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null || { echo "websockify no longer listens"; return 1; }
  local ood_port
  ood_port=$(cut -d' ' -f2 "$STATE/ood/$WITNESS" 2>/dev/null)
  [ -n "$ood_port" ] && (exec 3<>/dev/tcp/127.0.0.1/"$ood_port") 2>/dev/null ||
    { echo "the witness's OnDemand websocket no longer listens"; return 1; }
}

# What a dead start of job $1 left: the pieces that exist.
leftovers() {
  local out=()
  [ -e "$STATE/sessions/$1.json" ] && out+=(record)
  domain_exists "$1" && { domain_running "$1" && out+=(running-domain) || out+=(defined-domain); }
  [ -e "$STATE/tokens/vgpu-viz-$1" ] && out+=(token)
  [ -e "$STATE/ood/$1" ] && out+=(ood-proxy)
  pgrep -f "[w]ebsockify .*--unix-target=.*vgpu-viz-$1/" >/dev/null && out+=(ood-websockify)
  echo "${out[*]:-nothing}"
}

rows=()
fails=0
job=910100
for point in viz.after_record viz.after_acquire viz.after_define viz.after_start viz.after_token viz.after_ood_proxy; do
  job=$((job + 1)); jobs_started+=("$job")
  problem=""
  echo "$point@vgpu-viz" > "$WORK/crash"
  : > "$WORK/crash.hits"
  VGPU_CRASH_POINT_FILE=$WORK/crash start "$job"
  rc=$?
  [ "$rc" = 137 ] || problem+="start exited $rc, not SIGKILL; "
  grep -q "^$point vgpu-viz " "$WORK/crash.hits" || problem+="crash point not reached; "
  left=$(leftovers "$job")
  # The node's recovery: the planner reaps with the jobs Slurm still runs (here: the witness).
  viz reap --live "$WITNESS" > "$WORK/reap-$job.out" 2>&1 || problem+="reap failed: $(tail -1 "$WORK/reap-$job.out"); "
  after=$(leftovers "$job")
  [ "$after" = nothing ] || problem+="left after reap: $after; "
  why=$(witness_intact) || problem+="$why; "
  # Nothing in the way of the job's own retry (the supervised prolog reruns a crashed start).
  if start "$job"; then
    domain_running "$job" || problem+="retry did not run the domain; "
    viz stop --job "$job" >/dev/null 2>&1 || problem+="stop after retry failed; "
  else
    problem+="retry failed: $(tail -1 "$WORK/start-$job.out"); "
  fi
  [ "$(leftovers "$job")" = nothing ] || problem+="left after stop: $(leftovers "$job"); "
  [ -n "$problem" ] && fails=$((fails + 1))
  rows+=("$(printf '%-20s|%-52s|%s' "$point" "$left" "${problem:-reaped, witness intact, retry ran}")")
  echo "viz crash matrix: $point: left '$left'; ${problem:-ok}"
done

viz stop --job "$WITNESS" >/dev/null 2>&1
[ "$(leftovers "$WITNESS")" = nothing ] || { echo "witness left: $(leftovers "$WITNESS")"; fails=$((fails + 1)); }
if (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then echo "websockify still listens after the last session"; fails=$((fails + 1)); fi

echo
echo "viz crash-point matrix (${#rows[@]} cases; recovery: vgpu-viz reap --live <witness>):"
printf '%-20s|%-52s|%s\n' "crash point" "left by the dead start" "outcome"
for r in "${rows[@]}"; do echo "$r"; done
if [ "$fails" = 0 ]; then echo "viz crash matrix: PASS"; else echo "viz crash matrix: FAIL: $fails case(s)"; fi
[ "$fails" = 0 ]
