#!/usr/bin/env bash
# Per-job overhead of slurm-vgpu on the real local Slurm cluster (three slurmd, two simulated
# H100s each). The same burst of zero-length jobs runs on two clusters with the same slots from
# the start: with vgpu (gres_vgpu.so, prolog, epilog, planners, fake NVML; the idle layout is
# 7 x 1g.10gb per GPU, so 14 1g.10gb slots per node before the first job) and with a plain
# count-only GRES (Gres=vgpu:1g.10gb:14 per node, no plugin) whose Prolog and Epilog are /bin/true
# under the same PrologFlags=Alloc. The no-op hooks are the baseline's advantage, not a handicap:
# with no Epilog at all slurmd answers a job's termination with ALREADY_COMPLETE
# (slurmd/req.c:_rpc_terminate_job) and this cluster then runs 340-640 zero-length jobs a minute
# instead of 1,600-1,900; so the comparison is between hooks that do nothing and ours. Each side runs
# REPS bursts of JOBS jobs on one cluster; the script prints jobs/minute (median and range), their
# ratio, submit -> the job's first command (each job runs `date`; measured from the submitting
# client's clock to the job's), and the prolog's and epilog's own wall and CPU time per job
# (measured around the hook by vgpu-bench-hook-runner, which slurmd runs as Prolog and Epilog: it
# loads the node's environment and runs the product's hook without a shell, whose cost would be
# charged to vgpu; with PrologFlags=Alloc, Slurm's StartTime comes before the prolog ends, so
# start times alone would hide the prolog).
#   VP_BIN=<build dir> benchmarks/slurm_overhead.sh [JOBS=200] [REPS=5] [--nvml-latency SPEC] [--json FILE]
# --nvml-latency makes the fake NVML's MIG changes take time on the vgpu side (`h100`: the
# latencies docs/backends.md assumes for a real H100); without it they take none.
# --scrub-seconds S puts a stand-in for vgpu-scrub (which needs CUDA and a GPU) in the epilog: it
# reports success after S seconds (0.7 is what vgpu-scrub takes on a full H100, CUDA context
# included: docs/scrub.md). It scrubs nothing; it models the time. Without it the epilog takes the
# "scrub unavailable, optional" path, which costs nothing and destroys every instance.
# --hook-service off: the hooks do their own work instead of handing it to the node's planner
# (nodeagent/hook_socket/hook_socket.h). With it on (the default, as installed), a hook's own CPU leaves out
# the work its planner did for it: that is in the planners' CPU per job and the machine's.
# --scrub-after-epilog: epilogs hand their scrubs to a detached cleanup process and return
# (VGPU_SCRUB_AFTER_EPILOG=on); a burst then ends only once every node has finished its scrubs, so
# that work still counts in the burst's time.
# --prepare-slots turns on the policy's planner.prepare_slots: the planners make an instance for
# every planned slot ahead of demand (each burst starts once they have), so prologs only claim.
set -u
here=$(cd "$(dirname "$0")" && pwd)
json_out="" scrub_seconds="" prepare=""
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --json) json_out=$2; shift 2 ;;
    --nvml-latency) export VP_NVML_LATENCY=$2; shift 2 ;;
    --scrub-seconds) scrub_seconds=$2; shift 2 ;;
    --hook-service) export VP_HOOK_SERVICE=$2; shift 2 ;;
    --prepare-slots) prepare=1; export VP_PREPARE_SLOTS=true; shift ;;
    --scrub-after-epilog) export VP_SCRUB_AFTER_EPILOG=on; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
JOBS=${args[0]:-${OVERHEAD_JOBS:-200}}
REPS=${args[1]:-${OVERHEAD_REPS:-5}}
export VP_IDLE_LAYOUT='["1g.10gb","1g.10gb","1g.10gb","1g.10gb","1g.10gb","1g.10gb","1g.10gb"]'
# Seven 1g.10gb fit an H100-80GB, not every model that has the profile (an A100-40GB holds four),
# and the policy checks the idle layout on every model the partition uses.
export VP_INFER_PROFILES='{"H100-80GB": ["1g.10gb", "1g.20gb", "2g.20gb"]}'
. "$here/../tests/e2e/lib.sh"
export VP_HOOK_RUNNER=${VP_HOOK_RUNNER:-$VP_BIN/benchmarks/vgpu-bench-hook-runner}
[ -x "$VP_HOOK_RUNNER" ] || vc_fail "no $VP_HOOK_RUNNER: build the vgpu-bench-hook-runner target"
results=$(mktemp -d /tmp/vgpu-overhead.XXXXXX)
if [ -n "$scrub_seconds" ]; then
  printf '#!/bin/sh\n# stand-in for vgpu-scrub (benchmarks/slurm_overhead.sh --scrub-seconds): scrubs nothing\nsleep %s\necho "stand-in: $CUDA_VISIBLE_DEVICES not scrubbed"\n' \
    "$scrub_seconds" > "$results/scrub-stand-in"
  chmod 755 "$results/scrub-stand-in"
  export VP_SCRUB_PROGRAM=$results/scrub-stand-in
fi

# Where a burst's CPU goes: the machine's busy CPU time (/proc/stat: user, nice, system, irq,
# softirq, steal) and each daemon's own plus its waited-for children's (/proc/<pid>/stat utime,
# stime, and apart from them cutime, cstime: slurmd's children are the prolog and epilog it runs, a
# planner's the squeue and scontrol it runs), in clock ticks. What no daemon accounts for is slurmstepd (double-forked away
# from slurmd), the harness's sbatch and squeue, and everything else on the machine.
cpu_sample() { # $1 label $2 rep $3 before|after
  local f pid name
  {
    echo "$1 $2 $3 machine $(awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat)"
    for f in "$VC_RUN"/run/slurmctld.pid "$VC_RUN"/run/slurmd.*.pid "$VGPU_STATE_DIR"/*/planner.pid; do
      [ -s "$f" ] || continue
      pid=$(cat "$f")
      case $f in
        */planner.pid) name=planner ;;
        *) name=$(basename "$f" .pid); name=${name%%.*} ;;
      esac
      # Fields after the parenthesised command name: utime is the 12th of them (14th of the line).
      # A daemon's own CPU and its waited-for children's apart: slurmd's children are the hooks it
      # runs, a planner's the Slurm commands (and scrubs) it runs.
      sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null |
        awk -v p="$1 $2 $3" -v n="$name" '{print p, n, $12 + $13; print p, n "_children", $14 + $15}'
    done
  } >> "$results/cpu.txt"
}

burst() { # $1 label $2 rep: submits $JOBS 1g.10gb jobs at once, waits, records timings
  local label=$1 rep=$2 ids=() t0 t1 j id submitted
  mkdir -p "$results/first/$label"  # both clusters count job ids from 1
  cpu_sample "$label" "$rep" before
  t0=$(date +%s.%N)
  for _ in $(seq "$JOBS"); do
    submitted=$EPOCHREALTIME
    id=$(sbatch --parsable -p infer --gres=vgpu:1g.10gb:1 -o "$results/first/$label/%j" --wrap 'date +%s.%N')
    ids+=("$id")
    echo "$label $id $submitted" >> "$results/submitted.txt"
  done
  for j in "${ids[@]}"; do
    while squeue -h -j "$j" 2>/dev/null | grep -q .; do sleep 0.1; done
  done
  # Scrubs handed off by epilogs are still the burst's work: wait until no ledger has one left.
  if [ "$label" = vgpu ] && [ "${VP_SCRUB_AFTER_EPILOG:-off}" = on ]; then
    vp_wait_cleanups_done 120 || echo "WARNING: burst $rep: scrubs still running 120 s after its last job"
  fi
  t1=$(date +%s.%N)
  cpu_sample "$label" "$rep" after
  for j in "${ids[@]}"; do scontrol show job -o "$j"; done >> "$results/$label.jobs"
  echo "$label $rep $(echo "$t1 - $t0" | bc)" >> "$results/walls.txt"
  echo "$label burst $rep: $(grep -c 'JobState=COMPLETED' <(for j in "${ids[@]}"; do scontrol show job -o "$j"; done)) of $JOBS completed"
}

echo "== with vgpu: $REPS x $JOBS jobs of vgpu:1g.10gb:1, 14 1g.10gb slots per node from the start"
VC_RUN=$(mktemp -d /tmp/vgpu-cluster.XXXXXX)
vp_start  # a failure prints FAIL: and exits
for rep in $(seq "$REPS"); do
  vp_wait_settled 60 || echo "WARNING: advertisements not settled before burst $rep"
  if [ -n "$prepare" ]; then vp_wait_prepared 300 || echo "WARNING: slots not prepared before burst $rep"; fi
  burst vgpu "$rep"
done
cp "$VC_RUN/log/hook-times.txt" "$results/hooks.txt" 2>/dev/null
vp_check 2>/dev/null || echo "WARNING: vgpu run ended inconsistent"
# Epilogs log "<n> instance(s) released, <k> kept idle, ...": with a scrub that succeeds, every
# released instance whose place is still planned is kept for the next job of its profile.
kept=$(cat "$VGPU_STATE_DIR"/*/vgpu.log 2>/dev/null | sed -n 's/.*instance(s) \(released,\|handed over by an epilog:\) \([0-9]*\) kept idle.*/\2/p' |
  awk '{k += $1} END {print k + 0}')
echo "instances kept idle by epilogs: $kept"
if [ "${VP_SCRUB_AFTER_EPILOG:-off}" = on ]; then
  echo "epilogs that handed their scrubs to a cleanup process: $(cat "$VGPU_STATE_DIR"/*/vgpu.log 2>/dev/null | grep -c 'handed to a cleanup process')"
fi
# Hooks that asked their planner and then did the work themselves say why ("...; doing the work
# here"): how often serving fell back, and the first reason.
fallback=$(cat "$VC_RUN"/log/prolog.*.log "$VC_RUN"/log/epilog.*.log 2>/dev/null | grep 'doing the work here')
echo "hooks the planner did not serve: $(printf '%s' "$fallback" | grep -c .)${fallback:+ (first: $(printf '%s\n' "$fallback" | head -1))}"
if [ -n "$scrub_seconds" ] && [ "$kept" -eq 0 ]; then
  echo "WARNING: the scrub stand-in succeeded but no epilog kept an instance idle"
fi
vp_stop >/dev/null 2>&1
rm -rf "$VC_RUN"

echo "== plain count-only GRES: the same $REPS x $JOBS jobs, Gres=vgpu:1g.10gb:$VC_TOTAL per node (no plugin; Prolog and Epilog /bin/true, through the same runner)"
unset VC_INITIALIZED VC_CTLD_PORT VC_PROLOG VC_EPILOG
VC_RUN=$(mktemp -d /tmp/vgpu-cluster.XXXXXX)
vc_init
_vc_munge_start || vc_fail "munged"
# The same runner as the vgpu side, running /bin/true: each side pays once for the harness's
# runner (an exec a production slurmd does not make, running the hook directly), so what differs
# is the product's hook against a no-op.
mkdir -p "$VC_RUN/etc/hooks" "$VC_RUN/etc/plain-env" "$VC_RUN/log"
for n in $VC_NODES; do : > "$VC_RUN/etc/plain-env/$n.sh"; done
for kind in prolog epilog; do
  cp "$VP_HOOK_RUNNER" "$VC_RUN/etc/hooks/$kind" || vc_fail "cannot copy $VP_HOOK_RUNNER"
  printf 'kind=%s\nprogram=/bin/true\nenv_dir=%s\nlog_dir=%s\ntimes=%s\n' "$kind" "$VC_RUN/etc/plain-env" \
    "$VC_RUN/log" "$results/plain-hooks.txt" > "$VC_RUN/etc/hooks/$kind.conf"
done
VC_PROLOG=$VC_RUN/etc/hooks/prolog VC_EPILOG=$VC_RUN/etc/hooks/epilog
vc_conf_write "PrologFlags=Alloc
PartitionName=infer Nodes=$(_vp_nodelist) MaxTime=INFINITE State=UP"
# Same nodes, no gres_vgpu.so on the plugin path: Slurm only tracks the count.
sed -i -E "s|^PluginDir=.*|PluginDir=$VC_SLURM_LIBDIR|; s|Gres=[^ ]*|Gres=vgpu:1g.10gb:$VC_TOTAL|; /^JobSubmitPlugins/d" "$SLURM_CONF"
vc_ctld_start -c -i || vc_fail "slurmctld"
for n in $VC_NODES; do vc_slurmd_start "$n" || vc_fail "slurmd $n"; done
vc_wait_idle 60 || vc_fail "nodes not idle"
for rep in $(seq "$REPS"); do burst plain "$rep"; done
vc_stop >/dev/null 2>&1
rm -rf "$VC_RUN"

build_type=$(grep -m1 '^CMAKE_BUILD_TYPE:' "${VP_BIN:-build}/CMakeCache.txt" 2>/dev/null | cut -d= -f2)
sanitized=$(grep -m1 '^VGPU_SANITIZE:' "${VP_BIN:-build}/CMakeCache.txt" 2>/dev/null | cut -d= -f2)
machine="$(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), build ${build_type:-?} sanitizers ${sanitized:-?}"
python3 - "$results" "$JOBS" "$REPS" "$machine" "$json_out" "$0 $JOBS $REPS${VP_NVML_LATENCY:+ --nvml-latency $VP_NVML_LATENCY}${scrub_seconds:+ --scrub-seconds $scrub_seconds}${prepare:+ --prepare-slots}${VP_HOOK_SERVICE:+ --hook-service $VP_HOOK_SERVICE}${VP_SCRUB_AFTER_EPILOG:+ --scrub-after-epilog}" <<'PY'
import json, os, re, statistics, sys
from datetime import datetime
d, n, reps, machine, json_out, command = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
jpm = {"vgpu": [], "plain": []}
for line in open(f"{d}/walls.txt"):
    label, _, wall = line.split()
    jpm[label].append(60 * n / float(wall))
def lat(label):
    out = []
    for l in open(f"{d}/{label}.jobs"):
        f = dict(re.findall(r'(\w+)=(\S*)', l))
        t = lambda s: datetime.strptime(s, "%Y-%m-%dT%H:%M:%S")
        out.append((t(f["StartTime"]) - t(f["SubmitTime"])).total_seconds())
    return out
def pct(v, q):
    v = sorted(v)
    return v[round(q * (len(v) - 1))]
med = {k: statistics.median(v) for k, v in jpm.items()}
ratio = med["vgpu"] / med["plain"]
print(f"machine: {machine}")
print(f"command: {command}")
print(f"{'':26s}{'vgpu':>22s}{'plain':>22s}")
rng = lambda v: f"{statistics.median(v):7.1f} ({min(v):.0f}-{max(v):.0f})"
print(f"{'jobs/minute median (range)':26s}{rng(jpm['vgpu']):>22s}{rng(jpm['plain']):>22s}   ratio of medians {ratio:.2f}")
for k in ("vgpu", "plain"):
    l = lat(k)
    print(f"submit->start {k:6s} median {statistics.median(l):.0f} s, p95 {pct(l, 0.95):.0f} s, max {max(l):.0f} s (Slurm's 1 s resolution)")
# submit -> first command: the client's clock before sbatch, the job's `date` (same host).
first = {"vgpu": [], "plain": []}
missing = {"vgpu": 0, "plain": 0}
for line in open(f"{d}/submitted.txt"):
    label, job, submitted = line.split()
    try:
        first[label].append(float(open(f"{d}/first/{label}/{job}").read().split()[0]) - float(submitted))
    except (OSError, IndexError, ValueError):
        missing[label] += 1
for k in ("vgpu", "plain"):
    v = first[k]
    if v:
        print(f"submit->first command {k:6s} median {statistics.median(v):.2f} s, p95 {pct(v, 0.95):.2f} s, "
              f"max {max(v):.2f} s over {len(v)} jobs")
    if missing[k]:
        print(f"WARNING: {missing[k]} {k} job(s) left no first-command time in {d}/first/{k}")
out = {"jobs": n, "reps": reps, "machine": machine, "command": command,
       "jobs_per_min_vgpu": round(med["vgpu"], 1), "jobs_per_min_plain": round(med["plain"], 1),
       "jobs_per_min_vgpu_reps": [round(x, 1) for x in jpm["vgpu"]],
       "jobs_per_min_plain_reps": [round(x, 1) for x in jpm["plain"]], "ratio": round(ratio, 3)}
for k in ("vgpu", "plain"):
    if first[k]:
        out[f"first_command_s_p50_{k}"] = round(statistics.median(first[k]), 3)
        out[f"first_command_s_p95_{k}"] = round(pct(first[k], 0.95), 3)
    out[f"first_command_missing_{k}"] = missing[k]
served = os.environ.get("VP_HOOK_SERVICE", "on")
out["hooks_served_by_planner"] = served != "off"
for side, name in (("vgpu", "hooks.txt"), ("plain", "plain-hooks.txt")):
  try:
    hooks, cpu = {}, {}
    for l in open(f"{d}/{name}"):
        kind, job, real, user, sys_ = l.split()
        hooks.setdefault(kind, []).append(1000 * float(real))
        cpu.setdefault(kind, []).append(1000 * (float(user) + float(sys_)))
    for kind, v in sorted(hooks.items()):
        c = cpu[kind]
        print(f"{kind:8s} {side:5s} per job: wall median {statistics.median(v):.0f} ms, p95 {pct(v, 0.95):.0f} ms; "
              f"own CPU median {statistics.median(c):.0f} ms, p95 {pct(c, 0.95):.0f} ms over {len(v)} runs"
              + (" (/bin/true)" if side == "plain" else "" if served == "off" else " (served work: in the planners' CPU below)"))
        key = kind if side == "vgpu" else f"{kind}_plain"
        out[f"{key}_ms_p50"] = round(statistics.median(v), 1)
        out[f"{key}_ms_p95"] = round(pct(v, 0.95), 1)
        out[f"{key}_cpu_ms_p50"] = round(statistics.median(c), 1)
        out[f"{key}_cpu_ms_p95"] = round(pct(c, 0.95), 1)
  except FileNotFoundError:
    print(f"WARNING: no {side} hook timings")
# CPU per job, by daemon (clock ticks of 10 ms; summed over the daemons of a kind), median of bursts.
try:
    ticks = {}  # (label, rep, name) -> [before, after] summed over processes of that name
    for l in open(f"{d}/cpu.txt"):
        label, rep, when, name, t = l.split()
        slot = ticks.setdefault((label, rep, name), [0, 0])
        slot[0 if when == "before" else 1] += int(t)
    per_job = {}  # (label, name) -> [ms per job, per burst]
    for (label, rep, name), (b, a) in ticks.items():
        per_job.setdefault((label, name), []).append(10.0 * (a - b) / n)
    for label in ("vgpu", "plain"):
        row = {name: statistics.median(v) for (l_, name), v in per_job.items() if l_ == label}
        if "machine" not in row:
            continue
        rest = row["machine"] - sum(v for k, v in row.items() if k != "machine")
        named = {"slurmctld": "slurmctld", "slurmctld_children": "programs slurmctld runs", "slurmd": "slurmd", "slurmd_children": "hooks slurmd runs",
                 "planner": "planner", "planner_children": "Slurm commands and scrubs planners run"}
        parts = ", ".join(f"{what} {row[k]:.1f}" for k, what in named.items() if k in row and (row[k] or k == "slurmd_children"))
        print(f"CPU per job {label:6s} (ms, median of bursts): machine {row['machine']:.1f} = {parts}, "
              f"everything else {rest:.1f} (slurmstepd, the harness's sbatch and squeue)")
        for k, v in row.items():
            out[f"cpu_ms_per_job_{k}_{label}"] = round(v, 1)
        out[f"cpu_ms_per_job_rest_{label}"] = round(rest, 1)
except FileNotFoundError:
    print("WARNING: no CPU samples")
if json_out:
    with open(json_out, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(f"json: {json_out}")
PY
rm -rf "$results"
