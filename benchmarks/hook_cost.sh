#!/usr/bin/env bash
# What one prolog and one epilog cost on an idle node, without Slurm around them: the hooks' own
# wall time and CPU time (user + system, the hook and every process it waits for) for ROUNDS
# zero-length jobs of vgpu:1g.10gb:1, one after another, on a node of two simulated H100-80GB
# through the fake NVML (idle layout 7 x 1g.10gb per GPU, as benchmarks/slurm_overhead.sh). Each
# round is what slurmd runs per job: vgpu-prolog (claim a slot, create the instance, record it,
# write the job record), then vgpu-epilog (release, scrub, destroy, remove). The cluster benchmark
# measures the same hooks inside a 200-job burst, where their wall time is mostly waiting for a
# CPU; this one says what a hook itself costs.
#   VP_BIN=<build dir> benchmarks/hook_cost.sh [ROUNDS=200] [--nvml-latency SPEC] [--json FILE]
# --nvml-latency sets the fake NVML's MIG change latencies (VGPU_FAKE_NVML_LATENCY_MS, e.g. `h100`;
# docs/backends.md); without it changes take no time, the issue's "fake NVML at zero latency".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${VP_BIN:-$here/../build/release}
json_out="" latency="" rounds=200
while [ $# -gt 0 ]; do
  case $1 in
    --json) json_out=$2; shift 2 ;;
    --nvml-latency) latency=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) rounds=$1; shift ;;
  esac
done
for f in prolog/vgpu-prolog epilog/vgpu-epilog nodeagent/vgpu-planner fakenvml/libnvidia-ml.so.1; do
  [ -x "$bin/$f" ] || [ -f "$bin/$f" ] || { echo "hook_cost: $bin/$f missing (build it, or set VP_BIN)" >&2; exit 2; }
done

run=$(mktemp -d /tmp/vgpu-hookcost.XXXXXX)
trap 'rm -rf "$run"' EXIT
mkdir -m 700 "$run/state"
cat > "$run/policy.json" <<'JSON'
{"version": 1, "planner": {"period_s": 5, "starvation_s": 600},
 "partitions": {"infer": {"profiles": {"H100-80GB": ["1g.10gb", "1g.20gb", "2g.20gb"]},
   "max_instances_per_job": 7, "max_instances_per_user": 64, "nodes": ["n1"], "scrub": "optional",
   "idle_layout": ["1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"]}}}
JSON
export VGPU_NODENAME=n1 SLURMD_NODENAME=n1 VGPU_STATE_DIR=$run/state VGPU_POLICY=$run/policy.json
export VGPU_NVML_LIBRARY=$bin/fakenvml/libnvidia-ml.so.1
export VGPU_FAKE_NVML_FIXTURE=$here/../fakenvml/fixtures/h100-80gb-2gpu.json
export VGPU_FAKE_NVML_STATE=$run/state/n1.fake-nvml-state.json
# Each job's instances confined to its user (capability files), as on a node by default.
export VGPU_DEVICE_ROOT=$run/devroot VGPU_FAKE_NVML_DEVICE_ROOT=$run/devroot SLURM_JOB_UID=65534
mkdir -p "$run/devroot/proc/driver/nvidia-caps" "$run/devroot/dev/nvidia-caps"
cp "$here/../fakenvml/fixtures/mig-minors-8gpu.txt" "$run/devroot/proc/driver/nvidia-caps/mig-minors"
# No slurmd to SIGHUP, no Slurm commands, no planner to poke, no CUDA for the scrub (the "scrub
# unavailable, optional" path, as in the cluster benchmark).
export VGPU_SLURMD_PIDFILE=$run/no-slurmd.pid VGPU_SLURM_BIN=$run/no-slurm VGPU_SCRUB=$run/no-vgpu-scrub VGPU_CLUSTER_VIEW=slurmctld
export VGPU_DEMAND_FILE=$run/demand.txt SLURM_JOB_USER=bench SLURM_JOB_PARTITION=infer
: > "$VGPU_DEMAND_FILE"
[ -n "$latency" ] && export VGPU_FAKE_NVML_LATENCY_MS=$latency
"$bin/nodeagent/vgpu-planner" --once > "$run/planner.log" 2>&1 ||
  { echo "hook_cost: the planner's first round failed:" >&2; cat "$run/planner.log" >&2; exit 1; }

machine="$(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(. /etc/os-release; echo "$PRETTY_NAME")"
build_type=$(grep -m1 '^CMAKE_BUILD_TYPE:' "$bin/CMakeCache.txt" 2>/dev/null | cut -d= -f2)
sanitize=$(grep -m1 '^VGPU_SANITIZE:' "$bin/CMakeCache.txt" 2>/dev/null | cut -d= -f2)
python3 - "$bin" "$rounds" "$run" "$machine, build ${build_type:-?} sanitizers ${sanitize:-none}" \
  "${latency:-none}" "$json_out" "$0 $rounds${latency:+ --nvml-latency $latency}" <<'PY'
import json, os, resource, statistics, sys, time
bin_dir, rounds, run, machine, latency, json_out, command = sys.argv[1:8]
rounds = int(rounds)
hooks = {"prolog": f"{bin_dir}/prolog/vgpu-prolog", "epilog": f"{bin_dir}/epilog/vgpu-epilog"}
wall = {k: [] for k in hooks}
cpu = {k: [] for k in hooks}
log = open(f"{run}/hooks.log", "ab")

def run_hook(kind, job):
    env = dict(os.environ, SLURM_JOB_ID=str(job), VGPU_ALLOC="1g.10gb:1")
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(hooks[kind], [hooks[kind]], env,
                         file_actions=[(os.POSIX_SPAWN_DUP2, log.fileno(), 1), (os.POSIX_SPAWN_DUP2, log.fileno(), 2)])
    _, status, ru = os.wait4(pid, 0)
    t1 = time.perf_counter_ns()
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        sys.exit(f"hook_cost: {kind} of job {job} ended with status {status}; see {run}/hooks.log")
    wall[kind].append((t1 - t0) / 1e6)
    cpu[kind].append((ru.ru_utime + ru.ru_stime) * 1e3)

for i in range(rounds):
    job = 1000 + i
    run_hook("prolog", job)
    record = f"{run}/state/n1/jobs/{job}.json"
    if not os.path.exists(record):
        sys.exit(f"hook_cost: prolog of job {job} wrote no job record; the node log says:\n"
                 + open(f"{run}/state/n1/vgpu.log").read()[-2000:])
    run_hook("epilog", job)
    if os.path.exists(record):
        sys.exit(f"hook_cost: epilog of job {job} left its job record")

def pct(v, q):
    v = sorted(v)
    return v[round(q * (len(v) - 1))]

print(f"machine: {machine}")
print(f"command: {command}")
print(f"fake NVML latency: {latency}; {rounds} rounds, one job at a time")
out = {"rounds": rounds, "machine": machine, "command": command, "nvml_latency": latency}
print(f"{'':8s}{'wall p50':>10s}{'p95':>8s}{'min':>8s}{'max':>8s}{'cpu p50':>10s}{'p95':>8s}   (ms)")
for k in hooks:
    w, c = wall[k], cpu[k]
    print(f"{k:8s}{statistics.median(w):10.1f}{pct(w, .95):8.1f}{min(w):8.1f}{max(w):8.1f}"
          f"{statistics.median(c):10.1f}{pct(c, .95):8.1f}")
    out.update({f"{k}_ms_p50": round(statistics.median(w), 2), f"{k}_ms_p95": round(pct(w, .95), 2),
                f"{k}_ms_min": round(min(w), 2), f"{k}_ms_max": round(max(w), 2),
                f"{k}_cpu_ms_p50": round(statistics.median(c), 2), f"{k}_cpu_ms_p95": round(pct(c, .95), 2)})
if json_out:
    with open(json_out, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(f"json: {json_out}")
PY
