#!/usr/bin/env bash
# Controller load as the cluster grows: N emulated nodes on one real slurmctld (several slurmd on
# this host, as the e2e harness runs them), each with its vgpu-planner daemon, its prolog and epilog
# and 8 simulated H100-80GB (fake NVML), driven by a slice of the openb trace. For each size and each
# way the planners learn slurmctld's view (`squeue`: every planner asks slurmctld each period, as
# without a publisher; `view`: one `vgpu-planner --serve-view` on the controller makes two queries
# per period for the whole cluster and the planners fetch its signed view over TCP; `none`: the
# same cluster without planners or publisher, idle only, what slurmctld costs by itself; `count`:
# the same cluster and jobs as a site without slurm-vgpu runs them, a count-only GRES of 8 per node
# (`countgpu`) and `--gres=countgpu:<n>` per job, no prolog, epilog, planner or publisher: the busy
# baseline),
# it reports:
#   - slurmctld's RPC load from `sdiag`, in two phases: *idle* (IDLE_S seconds with no job: what the
#     product costs the controller by itself) and *busy* (from the first submission until the last
#     job left the queue; this includes the driver's own sbatch calls and its squeue poll every 5 s,
#     counted and shown): RPCs per second and the message types that dominate;
#     and *settle* (from the empty queue until every node is back to its idle layout: the policy's
#     idle_return_s, VP_IDLE_RETURN, plus three periods): the moves back that the jobs caused, which
#     a per-job cost must count;
#   - slurmctld's own CPU, and the planners' CPU per node (from /proc, utime + stime), per phase;
#   - submit -> start of the jobs (Slurm's 1 s resolution), and how many ran;
#   - that every node ended consistent (vp_check: ledger == hardware == Slurm, no drain).
#
#   VP_BIN=<build dir> benchmarks/scale.sh [--nodes "8 16 32 64"] [--jobs-per-node 3] \
#       [--modes "squeue view"] [--period 5] [--publish-period S] [--json FILE] [--check-idle-rpcs] [--restart]
# Another Slurm release (23.11 and later hand splits over with `scontrol update`, not slurmd's
# re-registration): VC_SLURM_PREFIX=<scripts/build-slurm.sh's dir>/prefix and
# VC_PLUGIN_DIR=<build>/gres_plugin/slurm-<version> (a build configured with
# -DVGPU_SLURM_RELEASES=<that dir>); the machine line names the release.
# --publish-period: the publisher's own period (default: the planners'); it costs slurmctld two
# queries per period whatever the number of nodes, and a fresher view means fewer slots offered
# to jobs that already started.
# --restart: once the jobs are in, restart slurmctld and run `scontrol reconfigure` while they run,
# then check that no node drained, every job completed (requeues are counted: a prolog requeues a
# job slurmctld placed where the node had no room after all), and the view is fresh again within
# two periods. slurmctld's busy CPU then counts from the restart.
# --check-idle-rpcs (the test command's smoke): FAIL when, idle with the view, slurmctld answered
# more node, job or partition queries than the publisher's periods account for (two each at most,
# plus one): what per-node polling would multiply by the nodes.
#
# The slice: the first GPU tasks of data/openb/openb_pod_list_default.csv that ran, in trace order,
# as many as jobs-per-node x N. A sharing task asks for the smallest H100 profile covering its
# gpu_milli (docs/benchmarks.md's table), a whole-GPU task for 7g.80gb per GPU (at most 2: the e2e
# policy's per-job limit). Time is compressed: tasks arrive spread over ARRIVAL_S seconds (60) in
# the trace's order and gaps, and run for their trace duration / 3,600, clamped to 2-20 s.
# A real cluster has one slurmd per host; here N slurmd and N planners share this machine's cores,
# so submit -> start at large N also measures this host's contention, not only slurmctld's.
set -u
here=$(cd "$(dirname "$0")" && pwd)
sizes="8 16 32 64" jobs_per_node=3 modes="squeue view" period=5 json_out="" check_idle=0 restart=0
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) sizes=$2; shift 2 ;;
    --jobs-per-node) jobs_per_node=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --period) period=$2; shift 2 ;;
    --publish-period) export VP_PUBLISH_PERIOD=$2; shift 2 ;;
    --json) json_out=$2; shift 2 ;;
    --check-idle-rpcs) check_idle=1; shift ;;
    --restart) restart=1; shift ;;
    *) echo "scale.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
ARRIVAL_S=${ARRIVAL_S:-60}
IDLE_S=${IDLE_S:-30}
# The product's planner.idle_return_s, 60 s: a node keeps the layout it made for demand that long.
export VP_GPUS=8 VP_PERIOD=$period VP_STARVATION=120 VP_IDLE_RETURN=${VP_IDLE_RETURN:-60}
# Ended jobs stay in slurmctld for the whole run, so that each job's end state is read at the end
# (with the default 300 s, a long busy phase read its first jobs back as "Invalid job id").
export VC_MIN_JOB_AGE=3600
results=$(mktemp -d /tmp/vgpu-scale.XXXXXX)

# The slice as "delay_s partition gres run_s" lines, for the largest size (smaller sizes take a prefix).
max_jobs=0
for n in $sizes; do [ $((n * jobs_per_node)) -gt $max_jobs ] && max_jobs=$((n * jobs_per_node)); done
python3 - "$here/../data/openb/openb_pod_list_default.csv" "$max_jobs" "$ARRIVAL_S" > "$results/slice.txt" <<'PY' || {
import csv, sys
path, want, arrival_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
PROFILES = [(142, "1g.10gb", "infer"), (285, "2g.20gb", "infer"), (428, "3g.40gb", "train"),
            (571, "4g.40gb", "train"), (1000, "7g.80gb", "train")]
rows = []
for r in csv.DictReader(open(path)):
    if r["num_gpu"] == "0" or not r["scheduled_time"]:
        continue
    gpus, milli = int(r["num_gpu"]), int(r["gpu_milli"])
    if gpus == 1 and milli < 1000:
        profile, part = next((p, q) for top, p, q in PROFILES if milli <= top)
        count = 1
    else:
        profile, part, count = "7g.80gb", "train", min(gpus, 2)
    run = int(r["deletion_time"]) - int(r["scheduled_time"])
    rows.append((int(r["creation_time"]), part, f"vgpu:{profile}:{count}", min(20, max(2, run // 3600))))
    if len(rows) == want:
        break
if len(rows) < want:
    sys.exit(f"scale.sh: the trace has only {len(rows)} GPU tasks that ran, {want} wanted")
t0, span = rows[0][0], max(1, rows[-1][0] - rows[0][0])
for created, part, gres, run in rows:
    print(f"{(created - t0) / span * arrival_s:.3f} {part} {gres} {run}")
PY
  echo "FAIL: could not build the trace slice"; exit 1; }

cpu_ticks() { # utime + stime of a pid, in clock ticks (0 when it is gone)
  awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0
}
planner_pids() { for n in $VC_NODES; do cat "$VGPU_STATE_DIR/$n/planner.pid" 2>/dev/null; done; }
slurmd_pids() { for n in $VC_NODES; do cat "$VC_RUN/run/slurmd.$n.pid" 2>/dev/null; done; }
view_answer_bytes() { # $1 the request line ("" for none: the whole view, as for a planner of the release before)
  ( exec 3<>"/dev/tcp/127.0.0.1/$VP_VIEW_PORT" || exit 1
    [ -n "$1" ] && printf '%s\n' "$1" >&3
    wc -c <&3 )
}
rss_kib() { # resident memory of the pids given, summed, in KiB
  local p sum=0 kib
  for p in "$@"; do kib=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null); sum=$((sum + ${kib:-0})); done
  echo "$sum"
}
# slurmctld restarted and reconfigured while jobs run: nothing drains, the view is fresh again.
restart_check() {
  local running taken0 taken1 lim drained
  running=$(squeue -h -t R -o %A | wc -l)
  taken0=$(sed -n 's/^taken_at //p' "$VGPU_STATE_DIR/cluster-view" 2>/dev/null)
  local stop0=$SECONDS
  vc_ctld_stop 90
  echo "restart check: slurmctld took $((SECONDS - stop0)) s to stop"
  vc_ctld_start || { echo "FAIL: restart check: slurmctld did not start again"; return; }
  vc_wait_idle 120 || echo "WARNING: restart check: nodes not back within 120 s of the restart"
  scontrol reconfigure || echo "FAIL: restart check: scontrol reconfigure failed"
  sleep 3
  vc_wait_idle 120 || echo "WARNING: restart check: nodes not back within 120 s of the reconfigure"
  lim=$((SECONDS + 2 * period + 5))
  while :; do
    taken1=$(sed -n 's/^taken_at //p' "$VGPU_STATE_DIR/cluster-view" 2>/dev/null)
    [ "${taken1:-0}" -ge $(($(date +%s) - 2 * period)) ] && break
    [ $SECONDS -ge $lim ] && { echo "FAIL: restart check: the view is not fresh again (taken_at $taken0 -> $taken1)"; break; }
    sleep 1
  done
  drained=$(sinfo -h -N -t drain,drng,fail,down -o %N | sort -u | wc -l)
  [ "$drained" = 0 ] || { echo "FAIL: restart check: $drained node(s) drained or down: $(sinfo -h -N -t drain,drng,fail,down -o '%N %E' | sort -u | head -3)"; restart_failed=1; }
  echo "restart check: slurmctld restarted and reconfigured with $running job(s) running: $drained node(s) drained, view fresh again"
}

run_size() { # $1 nodes $2 mode
  local nodes=$1 mode=$2 jobs=$(($1 * jobs_per_node)) i ids=() t0 t1 ctld pub="" restart_failed=0
  local -A p0
  VC_NODES=$(for i in $(seq "$nodes"); do printf 'n%d ' "$i"; done)
  VC_NODES=${VC_NODES% }
  export VC_NODES
  case $mode in
    squeue) export VP_CLUSTER_VIEW=0 VP_NO_PLANNERS=0 VP_COUNT_GRES= ;;
    view) export VP_CLUSTER_VIEW=tcp VP_NO_PLANNERS=0 VP_COUNT_GRES= ;;
    none) export VP_CLUSTER_VIEW=0 VP_NO_PLANNERS=1 VP_COUNT_GRES= ;;
    # gres/gpu drops a GPU without File= ("Removing file-less GPU"), and this host has no GPU
    # device files to give it: a GRES of another name is the count-only GRES Slurm keeps.
    count) export VP_CLUSTER_VIEW=0 VP_NO_PLANNERS=1 VP_COUNT_GRES=countgpu:8 ;;
    *) echo "FAIL: scale.sh: mode '$mode': expected squeue, view, none or count"; exit 2 ;;
  esac
  # Every planner's first round, and the check of every node, on this host's few cores.
  export VP_SETTLE_S=$((30 + nodes))
  unset VC_INITIALIZED VC_CTLD_PORT
  VC_RUN=$(mktemp -d /tmp/vgpu-cluster.XXXXXX)
  export VC_RUN
  echo "== $nodes nodes x 8 H100-80GB, slurmctld's view by $mode, $jobs jobs"
  ( . "$here/../tests/e2e/lib.sh"
    vp_start
    ctld=$(cat "$VC_RUN/run/slurmctld.pid")
    [ "$mode" = view ] && pub=$(cat "$VC_RUN/run/publisher.pid")
    sleep "$((2 * period))"  # the planners' first rounds are start-up, not load
    local phase c0 pc0 t0 t1 wall planner_ticks polls=0
    measure_begin() {
      for p in $(planner_pids); do p0[$p]=$(cpu_ticks "$p"); done
      c0=$(cpu_ticks "$ctld") pc0=0
      [ -n "$pub" ] && pc0=$(cpu_ticks "$pub")
      sdiag -r >/dev/null 2>&1 || echo "WARNING: sdiag -r failed"
      t0=$(date +%s.%N)
    }
    measure_end() { # $1 phase
      t1=$(date +%s.%N)
      wall=$(echo "$t1 - $t0" | bc)
      planner_ticks=0
      for p in $(planner_pids); do planner_ticks=$((planner_ticks + $(cpu_ticks "$p") - ${p0[$p]:-0})); done
      local c1 pc1=0
      c1=$(cpu_ticks "$ctld")
      [ -n "$pub" ] && pc1=$(cpu_ticks "$pub")
      sdiag > "$results/sdiag.$nodes.$mode.$1.txt" 2>&1
      local rss_nodes rss_ctld
      rss_nodes=$(rss_kib $(planner_pids) $(slurmd_pids)) rss_ctld=$(rss_kib "$ctld")
      echo "$nodes $mode $1 ${#ids[@]} $wall $((c1 - c0)) $planner_ticks $((pc1 - pc0)) $(getconf CLK_TCK) $polls $rss_nodes $rss_ctld" >> "$results/runs.txt"
    }
    measure_begin
    sleep "$IDLE_S"
    measure_end idle
    # What one planner's fetch costs the publisher's link, against the whole view it once was.
    [ "$mode" = view ] && echo "$nodes $(view_answer_bytes "node n1") $(view_answer_bytes "")" >> "$results/view-bytes.txt"
    if [ "$mode" = none ]; then  # nothing serves vgpu jobs here: no busy phase
      vp_stop >/dev/null 2>&1
      exit 0
    fi
    measure_begin
    local start=$EPOCHREALTIME delay part gres run id
    while read -r delay part gres run; do
      [ ${#ids[@]} -ge "$jobs" ] && break
      # Wait for the job's place in the compressed trace.
      local wait_s
      wait_s=$(echo "$start + $delay - $EPOCHREALTIME" | bc)
      [ "${wait_s:0:1}" != "-" ] && sleep "$wait_s"
      # The count-only baseline runs the same jobs on whole GPUs: vgpu:<profile>:<n> -> countgpu:<n>.
      [ "$mode" = count ] && gres=countgpu:${gres##*:}
      id=$(sbatch --parsable -p "$part" --gres="$gres" -o /dev/null --wrap "sleep $run") || id=""
      [ -n "$id" ] && ids+=("$id")
    done < "$results/slice.txt"
    if [ "$restart" = 1 ] && [ "$mode" = view ]; then  # what comes back is the view and the planners
      restart_check
      ctld=$(cat "$VC_RUN/run/slurmctld.pid") c0=0  # slurmctld's busy CPU counts from its restart
    fi
    local lim=$((SECONDS + 900)) left
    while :; do  # one squeue every 5 s: the driver's own load stays small and counted
      polls=$((polls + 1))
      local q0=$EPOCHREALTIME
      left=$(squeue -h -o %A 2>/dev/null | wc -l)
      echo "$q0 $EPOCHREALTIME" >> "$results/squeue-latency.$nodes.$mode.txt"
      [ "$left" -eq 0 ] && break
      [ $SECONDS -ge $lim ] && { echo "WARNING: $left job(s) still queued after 15 minutes"; break; }
      sleep 5
    done
    measure_end busy
    for id in "${ids[@]}"; do scontrol show job -o "$id"; done > "$results/jobs.$nodes.$mode.txt"
    if [ "$mode" != count ]; then  # what the jobs still cost once the queue is empty
      measure_begin
      sleep "$((VP_IDLE_RETURN + 3 * period))"
      measure_end settle
    fi
    # In a subshell: vp_check ends its shell on a drained node (vc_fail), which would leave this
    # cluster running beside the next size's.
    if [ "$mode" != count ] && ! ( vp_check ) > "$results/check.$nodes.$mode.txt" 2>&1; then
      echo "WARNING: $nodes nodes ($mode): a node ended inconsistent or drained: $(grep -m3 FAIL "$results/check.$nodes.$mode.txt")"
      restart_failed=1
    fi
    if [ "$restart_failed" = 1 ]; then  # what the cluster logged, kept for the reader
      local kept
      kept=$(mktemp -d /tmp/vgpu-scale-logs.XXXXXX)
      cp -r "$VC_RUN/log" "$kept/" 2>/dev/null
      for n in $VC_NODES; do cp "$VGPU_STATE_DIR/$n/vgpu.log" "$kept/log/vgpu.$n.log" 2>/dev/null; done
      echo "logs of the $nodes-node cluster kept in $kept"
    fi
    vp_stop >/dev/null 2>&1
  )
  rm -rf "$VC_RUN"
}

for n in $sizes; do
  for m in $modes; do run_size "$n" "$m"; done
done

machine="$(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), build $(grep -m1 '^CMAKE_BUILD_TYPE:' "$VP_BIN/CMakeCache.txt" | cut -d= -f2) sanitizers $(grep -m1 '^VGPU_SANITIZE:' "$VP_BIN/CMakeCache.txt" | cut -d= -f2), Slurm $("${VC_SLURM_PREFIX:-/usr}/sbin/slurmctld" -V | awk '{print $NF}')"
python3 - "$results" "$machine" "$json_out" "$0 --nodes \"$sizes\" --jobs-per-node $jobs_per_node --modes \"$modes\" --period $period${VP_PUBLISH_PERIOD:+ --publish-period $VP_PUBLISH_PERIOD}$([ "$restart" = 1 ] && echo " --restart")$([ "$check_idle" = 1 ] && echo " --check-idle-rpcs") (IDLE_S=$IDLE_S ARRIVAL_S=$ARRIVAL_S)" "$check_idle" "${VP_PUBLISH_PERIOD:-$period}" <<'PY'
import json, re, statistics, sys
from datetime import datetime
d, machine, json_out, command, check_idle, publish_period = sys.argv[1:]
check_idle, publish_period = check_idle == "1", float(publish_period)
def pct(v, q):
    v = sorted(v)
    return v[round(q * (len(v) - 1))] if v else 0
def rpc_types(path):
    text = open(path).read()
    section = text.split("Remote Procedure Call statistics by message type")[-1]
    section = section.split("Remote Procedure Call statistics by user")[0]
    return {name: int(count) for name, count in
            re.findall(r"^\s*(\w+)\s+\(\s*\d+\)\s+count:(\d+)", section, re.M)}
runs = {}
for line in open(f"{d}/runs.txt"):
    nodes, mode, phase, jobs, wall, ctld, planners, pub, hz, polls, rss_nodes, rss_ctld = line.split()
    nodes, jobs, wall, hz, polls = int(nodes), int(jobs), float(wall), int(hz), int(polls)
    types = rpc_types(f"{d}/sdiag.{nodes}.{mode}.{phase}.txt")
    total = sum(types.values())
    r = runs.setdefault((nodes, mode), {"nodes": nodes, "demand": mode, "jobs": 0})
    r["jobs"] = max(r["jobs"], jobs)
    r[phase] = {"wall_s": round(wall, 1), "rpc_total": total, "rpc_per_s": round(total / wall, 2),
                "rpc_by_type": types, "driver_sbatch": jobs if phase == "busy" else 0,
                "driver_squeue_polls": polls if phase == "busy" else 0,
                "ctld_cpu_pct": round(100 * int(ctld) / hz / wall, 2),
                "planner_cpu_pct_per_node": round(100 * int(planners) / hz / wall / nodes, 3),
                "publisher_cpu_pct": round(100 * int(pub) / hz / wall, 3),
                "rss_mib_per_node": round(int(rss_nodes) / 1024 / nodes, 1),
                "ctld_rss_mib": round(int(rss_ctld) / 1024, 1)}
try:
    view_bytes = {int(n): (int(own), int(whole)) for n, own, whole in (l.split() for l in open(f"{d}/view-bytes.txt"))}
except FileNotFoundError:
    view_bytes = {}
for (nodes, mode), r in runs.items():
    if mode == "view" and nodes in view_bytes:
        own, whole = view_bytes[nodes]
        # Every planner fetches its own view about once per round.
        r["view_answer_bytes"], r["whole_view_bytes"] = own, whole
        r["publisher_bytes_per_s"] = round(own * nodes / publish_period)
        print(f"{nodes} nodes: a node's view {own} bytes, the whole view {whole}: the publisher sends about "
              f"{own * nodes / publish_period / 1e6:.2f} MB/s (the whole view to every node: {whole * nodes / publish_period / 1e6:.2f})")
out = {"machine": machine, "command": command, "runs": []}
print(f"machine: {machine}\ncommand: {command}")
print(f"{'nodes':>5} {'view by':>7} | {'idle RPC/s':>10} {'ctld CPU %':>10} {'planner CPU %/node':>18} | {'busy RPC/s':>10} "
      f"{'ctld CPU %':>10} {'planner CPU %/node':>18} | {'ran':>7} {'submit->start p50/p95/max s':>27} | top idle RPCs")
top_of = lambda phase: ", ".join(f"{k} {v}" for k, v in sorted(phase["rpc_by_type"].items(), key=lambda kv: -kv[1])[:3])
for (nodes, mode), r in sorted(runs.items()):
    if "busy" not in r:  # the baseline without slurm-vgpu: idle only
        out["runs"].append(r)
        idle = r["idle"]
        print(f"{nodes:>5} {mode:>7} | {idle['rpc_per_s']:>10.2f} {idle['ctld_cpu_pct']:>10.2f} {'-':>18} | "
              f"{'(idle only)':>73} | {top_of(idle)}")
        continue
    waits, ran, failed, requeued = [], 0, 0, 0
    for l in open(f"{d}/jobs.{nodes}.{mode}.txt"):
        f = dict(re.findall(r"(\w+)=(\S*)", l))
        failed += f.get("JobState") != "COMPLETED"
        requeued += f.get("Restarts", "0") != "0"
        if f.get("StartTime", "Unknown") in ("Unknown", "None"):
            continue
        t = lambda s: datetime.strptime(s, "%Y-%m-%dT%H:%M:%S")
        ran += 1
        waits.append((t(f["StartTime"]) - t(f["SubmitTime"])).total_seconds())
    r["ran"] = ran
    r["not_completed"], r["requeued"] = failed, requeued
    lat = [1000 * (float(b) - float(a)) for a, b in (l.split() for l in open(f"{d}/squeue-latency.{nodes}.{mode}.txt"))]
    r["user_squeue_ms_p50"], r["user_squeue_ms_p95"] = round(pct(lat, 0.5), 1), round(pct(lat, 0.95), 1)
    if failed:
        print(f"FAIL: {nodes} nodes ({mode}): {failed} job(s) did not complete (failed or cancelled)")
    r["submit_to_start_s_p50"] = pct(waits, 0.5)
    r["submit_to_start_s_p95"] = pct(waits, 0.95)
    r["submit_to_start_s_max"] = max(waits) if waits else None
    out["runs"].append(r)
    idle, busy = r["idle"], r["busy"]
    top = sorted(idle["rpc_by_type"].items(), key=lambda kv: -kv[1])[:3]
    print(f"{nodes:>5} {mode:>7} | {idle['rpc_per_s']:>10.2f} {idle['ctld_cpu_pct']:>10.2f} {idle['planner_cpu_pct_per_node']:>18.3f} | "
          f"{busy['rpc_per_s']:>10.2f} {busy['ctld_cpu_pct']:>10.2f} {busy['planner_cpu_pct_per_node']:>18.3f} | "
          f"{ran:>3}/{r['jobs']:<3} {r['submit_to_start_s_p50']:>9.0f}/{r['submit_to_start_s_p95']:.0f}/"
          f"{r['submit_to_start_s_max'] or 0:.0f}{'':>12} | " + ", ".join(f"{k} {v}" for k, v in top))
    if "settle" in r:
        # What slurm-vgpu adds per job: every RPC from the first submission until the layouts are
        # back, less the driver's sbatch and squeue and the publisher's four per period (none
        # without it); Slurm's own per-job messages stay in (2, 3 with an Epilog).
        settle = r["settle"]
        wall = busy["wall_s"] + settle["wall_s"]
        types = {k: busy["rpc_by_type"].get(k, 0) + settle["rpc_by_type"].get(k, 0)
                 for k in set(busy["rpc_by_type"]) | set(settle["rpc_by_type"])}
        publisher = 4 * wall / publish_period if mode == "view" else 0
        added = sum(types.values()) - busy["driver_sbatch"] - busy["driver_squeue_polls"] - publisher
        r["rpcs_per_job"] = round(added / r["jobs"], 1)
        r["registrations_per_job"] = round(types.get("MESSAGE_NODE_REGISTRATION_STATUS", 0) / r["jobs"], 1)
        print(f"{nodes} nodes ({mode}): {r['rpcs_per_job']} RPCs per job, Slurm's own included, "
              f"{r['registrations_per_job']} of them registrations; settle {settle['wall_s']} s: "
              + ", ".join(f"{k} {v}" for k, v in sorted(settle["rpc_by_type"].items(), key=lambda kv: -kv[1])[:4]))
    if check_idle and mode == "view":
        # The publisher's squeue is a REQUEST_JOB_INFO, its scontrol a REQUEST_NODE_INFO and a
        # REQUEST_PARTITION_INFO; each planner asking for itself would add one per node per period.
        periods = idle["wall_s"] / publish_period
        allowed = 2 * periods + 1
        for kind in ("REQUEST_NODE_INFO", "REQUEST_JOB_INFO", "REQUEST_PARTITION_INFO"):
            got = idle["rpc_by_type"].get(kind, 0)
            verdict = "ok" if got <= allowed else "FAIL:"
            print(f"idle check: {nodes} nodes: {kind} {got} in {idle['wall_s']} s, at most {allowed:.0f} "
                  f"for {periods:.1f} publisher periods: {verdict}")
    if ran < r["jobs"]:
        print(f"WARNING: {nodes} nodes ({mode}): {r['jobs'] - ran} job(s) never started")
if json_out:
    with open(json_out, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(f"json: {json_out}")
PY
rm -rf "$results"
