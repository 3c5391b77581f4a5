#!/usr/bin/env bash
# Controller load as the cluster grows: N emulated nodes on one real slurmctld (several slurmd on
# this host, as the e2e harness runs them), each with its vgpu-planner daemon, its prolog and epilog
# and 8 simulated H100-80GB (fake NVML), driven by a slice of the openb trace. For each size and each
# way the planners learn the demand (`squeue`: every planner asks slurmctld each period, the
# default; `publish`: one `vgpu-planner --publish-demand` on the controller writes it to a file the
# planners read), it reports:
#   - slurmctld's RPC load from `sdiag`, in two phases: *idle* (IDLE_S seconds with no job: what the
#     product costs the controller by itself) and *busy* (from the first submission until the last
#     job left the queue; this includes the driver's own sbatch calls and its squeue poll every 5 s,
#     counted and shown): RPCs per second and the message types that dominate;
#   - slurmctld's own CPU, and the planners' CPU per node (from /proc, utime + stime), per phase;
#   - submit -> start of the jobs (Slurm's 1 s resolution), and how many ran;
#   - that every node ended consistent (vp_check: ledger == hardware == Slurm, no drain).
#
#   VP_BIN=<build dir> benchmarks/scale.sh [--nodes "8 16 32 64"] [--jobs-per-node 3] \
#       [--modes "squeue publish"] [--period 5] [--publish-period S] [--json FILE]
# --publish-period: the demand publisher's own period (default: the planners'); it costs slurmctld
# one squeue per period whatever the number of nodes, and fresher demand means fewer slots offered
# to jobs that already started.
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
sizes="8 16 32 64" jobs_per_node=3 modes="squeue publish" period=5 json_out=""
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) sizes=$2; shift 2 ;;
    --jobs-per-node) jobs_per_node=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --period) period=$2; shift 2 ;;
    --publish-period) export VP_PUBLISH_PERIOD=$2; shift 2 ;;
    --json) json_out=$2; shift 2 ;;
    *) echo "scale.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
ARRIVAL_S=${ARRIVAL_S:-60}
IDLE_S=${IDLE_S:-30}
export VP_GPUS=8 VP_PERIOD=$period VP_STARVATION=120
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

run_size() { # $1 nodes $2 mode
  local nodes=$1 mode=$2 jobs=$(($1 * jobs_per_node)) i ids=() t0 t1 ctld pub=""
  local -A p0
  VC_NODES=$(for i in $(seq "$nodes"); do printf 'n%d ' "$i"; done)
  VC_NODES=${VC_NODES% }
  export VC_NODES
  [ "$mode" = publish ] && export VP_PUBLISH_DEMAND=1 || export VP_PUBLISH_DEMAND=0
  unset VC_INITIALIZED VC_CTLD_PORT
  VC_RUN=$(mktemp -d /tmp/vgpu-cluster.XXXXXX)
  export VC_RUN
  echo "== $nodes nodes x 8 H100-80GB, demand by $mode, $jobs jobs"
  ( . "$here/../tests/e2e/lib.sh"
    vp_start
    ctld=$(cat "$VC_RUN/run/slurmctld.pid")
    [ "$mode" = publish ] && pub=$(cat "$VC_RUN/run/publisher.pid")
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
      echo "$nodes $mode $1 ${#ids[@]} $wall $((c1 - c0)) $planner_ticks $((pc1 - pc0)) $(getconf CLK_TCK) $polls" >> "$results/runs.txt"
    }
    measure_begin
    sleep "$IDLE_S"
    measure_end idle
    measure_begin
    local start=$EPOCHREALTIME delay part gres run id
    while read -r delay part gres run; do
      [ ${#ids[@]} -ge "$jobs" ] && break
      # Wait for the job's place in the compressed trace.
      local wait_s
      wait_s=$(echo "$start + $delay - $EPOCHREALTIME" | bc)
      [ "${wait_s:0:1}" != "-" ] && sleep "$wait_s"
      id=$(sbatch --parsable -p "$part" --gres="$gres" -o /dev/null --wrap "sleep $run") || id=""
      [ -n "$id" ] && ids+=("$id")
    done < "$results/slice.txt"
    local lim=$((SECONDS + 900)) left
    while :; do  # one squeue every 5 s: the driver's own load stays small and counted
      polls=$((polls + 1))
      left=$(squeue -h -o %A 2>/dev/null | wc -l)
      [ "$left" -eq 0 ] && break
      [ $SECONDS -ge $lim ] && { echo "WARNING: $left job(s) still queued after 15 minutes"; break; }
      sleep 5
    done
    measure_end busy
    for id in "${ids[@]}"; do scontrol show job -o "$id"; done > "$results/jobs.$nodes.$mode.txt"
    vp_check >/dev/null 2>&1 || echo "WARNING: $nodes nodes ($mode): a node ended inconsistent"
    vp_stop >/dev/null 2>&1
  )
  rm -rf "$VC_RUN"
}

for n in $sizes; do
  for m in $modes; do run_size "$n" "$m"; done
done

machine="$(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), build $(grep -m1 '^CMAKE_BUILD_TYPE:' "$VP_BIN/CMakeCache.txt" | cut -d= -f2) sanitizers $(grep -m1 '^VGPU_SANITIZE:' "$VP_BIN/CMakeCache.txt" | cut -d= -f2)"
python3 - "$results" "$machine" "$json_out" "$0 --nodes \"$sizes\" --jobs-per-node $jobs_per_node --modes \"$modes\" --period $period${VP_PUBLISH_PERIOD:+ --publish-period $VP_PUBLISH_PERIOD}" <<'PY'
import json, re, statistics, sys
from datetime import datetime
d, machine, json_out, command = sys.argv[1:]
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
    nodes, mode, phase, jobs, wall, ctld, planners, pub, hz, polls = line.split()
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
                "publisher_cpu_pct": round(100 * int(pub) / hz / wall, 3)}
out = {"machine": machine, "command": command, "runs": []}
print(f"machine: {machine}\ncommand: {command}")
print(f"{'nodes':>5} {'demand':>7} | {'idle RPC/s':>10} {'planner CPU %/node':>18} | {'busy RPC/s':>10} "
      f"{'ctld CPU %':>10} {'planner CPU %/node':>18} | {'ran':>7} {'submit->start p50/p95/max s':>27} | top idle RPCs")
for (nodes, mode), r in sorted(runs.items()):
    waits, ran = [], 0
    for l in open(f"{d}/jobs.{nodes}.{mode}.txt"):
        f = dict(re.findall(r"(\w+)=(\S*)", l))
        if f.get("StartTime", "Unknown") in ("Unknown", "None"):
            continue
        t = lambda s: datetime.strptime(s, "%Y-%m-%dT%H:%M:%S")
        ran += 1
        waits.append((t(f["StartTime"]) - t(f["SubmitTime"])).total_seconds())
    r["ran"] = ran
    r["submit_to_start_s_p50"] = pct(waits, 0.5)
    r["submit_to_start_s_p95"] = pct(waits, 0.95)
    r["submit_to_start_s_max"] = max(waits) if waits else None
    out["runs"].append(r)
    idle, busy = r["idle"], r["busy"]
    top = sorted(idle["rpc_by_type"].items(), key=lambda kv: -kv[1])[:3]
    print(f"{nodes:>5} {mode:>7} | {idle['rpc_per_s']:>10.2f} {idle['planner_cpu_pct_per_node']:>18.3f} | "
          f"{busy['rpc_per_s']:>10.2f} {busy['ctld_cpu_pct']:>10.2f} {busy['planner_cpu_pct_per_node']:>18.3f} | "
          f"{ran:>3}/{r['jobs']:<3} {r['submit_to_start_s_p50']:>9.0f}/{r['submit_to_start_s_p95']:.0f}/"
          f"{r['submit_to_start_s_max'] or 0:.0f}{'':>12} | " + ", ".join(f"{k} {v}" for k, v in top))
    if ran < r["jobs"]:
        print(f"WARNING: {nodes} nodes ({mode}): {r['jobs'] - ran} job(s) never started")
if json_out:
    with open(json_out, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(f"json: {json_out}")
PY
rm -rf "$results"
