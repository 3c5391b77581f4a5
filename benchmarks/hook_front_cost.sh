#!/usr/bin/env bash
# What a served hook costs its own process. slurmd starts vgpu-prolog and vgpu-epilog for every job;
# when the node's planner serves them (nodeagent/hook_socket/hook_socket.h), that process only hands the job
# over and waits. A stand-in planner, a socket that answers "serving" and "done" at once, serves
# every run here, so the numbers are the hook process alone: CPU (user + system, from wait4) and
# wall per run, with /bin/true started in turn with them as the floor any hook pays. Every run must
# reach the stand-in (counted), or the benchmark fails. --compare runs another build's hooks (an
# older commit's) in the same rotation.
#   VP_BIN=<build dir> benchmarks/hook_front_cost.sh [RUNS=200] [REPS=10] [--compare BUILD_DIR]
#                                                    [--json FILE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${VP_BIN:-$here/../build/release}
runs=200 reps=10 compare="" json_out="" positional=0
while [ $# -gt 0 ]; do
  case $1 in
    --compare) compare=$2; shift 2 ;;
    --json) json_out=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) if [ $positional = 0 ]; then runs=$1; else reps=$1; fi; positional=$((positional + 1)); shift ;;
  esac
done
programs=(/bin/true "$bin/prolog/vgpu-prolog" "$bin/epilog/vgpu-epilog")
[ -z "$compare" ] || programs+=("$compare/prolog/vgpu-prolog" "$compare/epilog/vgpu-epilog")
for p in "${programs[@]}"; do [ -x "$p" ] || { echo "hook_front_cost: $p missing (build it, or set VP_BIN)" >&2; exit 2; }; done

run=$(mktemp -d /tmp/vgpu-hookfront.XXXXXX)
server=""
trap '[ -z "$server" ] || kill "$server" 2>/dev/null; rm -rf "$run"' EXIT
mkdir -p "$run/state/n1/jobs"
echo '{}' > "$run/state/n1/jobs/42.json"  # the epilog hands over only a job with a record here
/usr/bin/python3 - "$run/state/n1/hook.sock" "$run/served" <<'PY' &
import os, signal, socket, sys
path, count_file = sys.argv[1:3]
served = 0
def stop(*_):
    open(count_file, "w").write(f"{served}\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(64)
open(count_file, "w").write("listening\n")
while True:
    c, _ = s.accept()
    line = c.makefile("rb").readline()
    if line.startswith(b"vgpu-hook/1 "):
        c.sendall(b"vgpu-hook/1 serving\nvgpu-hook/1 done 0\n")
        served += 1
    c.close()
PY
server=$!
for _ in $(seq 50); do [ -s "$run/served" ] && break; sleep 0.1; done
[ -s "$run/served" ] || { echo "hook_front_cost: the stand-in planner did not start" >&2; exit 1; }

export SLURM_JOB_ID=42 SLURMD_NODENAME=n1 VGPU_STATE_DIR=$run/state VGPU_ALLOC=1g.10gb:1 SLURM_JOB_USER=bench \
  SLURM_JOB_UID=65534 SLURM_JOB_PARTITION=infer VGPU_POLICY=$run/policy.json
command="VP_BIN=$bin benchmarks/hook_front_cost.sh $runs $reps${compare:+ --compare $compare}"
/usr/bin/python3 - "$runs" "$reps" "$json_out" "$command" "${programs[@]}" > "$run/report.txt" <<'PY'
import json, os, platform, statistics, sys, time
runs, reps, json_out, command, *programs = sys.argv[1:]
runs, reps = int(runs), int(reps)
cpu = {p: [] for p in programs}
wall = {p: [] for p in programs}
for _ in range(reps):
    for p in programs:
        c = w = 0.0
        for _ in range(runs):
            t0 = time.perf_counter_ns()
            pid = os.posix_spawn(p, [p], os.environ)
            _, status, ru = os.wait4(pid, 0)
            w += (time.perf_counter_ns() - t0) / 1e6
            if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
                sys.exit(f"hook_front_cost: {p} ended with status {status}")
            c += (ru.ru_utime + ru.ru_stime) * 1e3
        cpu[p].append(c / runs)
        wall[p].append(w / runs)
model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"machine: {model}, {os.cpu_count()} CPUs, {platform.release()}")
print(f"command: {command}")
print(f"per run, median (range) over {reps} repetitions of {runs} runs, every hook served by the stand-in:")
out = {"command": command, "machine": f"{model}, {os.cpu_count()} CPUs", "runs": runs, "repetitions": reps,
       "programs": []}
floor = statistics.median(cpu["/bin/true"])
for p in programs:
    c, w = cpu[p], wall[p]
    print(f"  {p}: CPU {statistics.median(c):.2f} ms ({min(c):.2f}-{max(c):.2f}), "
          f"{statistics.median(c) - floor:+.2f} against /bin/true; wall {statistics.median(w):.2f} ms")
    out["programs"].append({"path": p, "cpu_ms_p50": round(statistics.median(c), 3), "cpu_ms_min": round(min(c), 3),
                            "cpu_ms_max": round(max(c), 3), "wall_ms_p50": round(statistics.median(w), 3)})
if json_out:
    json.dump(out, open(json_out, "w"), indent=1)
    print(f"json: {json_out}")
PY
kill "$server"; wait "$server" 2>/dev/null || true; server=""
hooks=$(( (${#programs[@]} - 1) * runs * reps ))
served=$(cat "$run/served")
cat "$run/report.txt"
[ "$served" = "$hooks" ] || { echo "hook_front_cost: FAIL: the stand-in served $served of $hooks hook runs"; exit 1; }
echo "served: $served of $hooks hook runs"
