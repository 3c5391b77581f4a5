#!/usr/bin/env bash
# Accounting through slurmdbd on a real MariaDB (docs/accounting.md): every job's vgpu instances
# reach Slurm's database by profile, and what sacct and sreport say equals what the nodes' ledger
# history recorded.
#
# Mixed jobs of two accounts and two users: single-node inference, training (reshapes), a
# two-node job, a three-task array, a job cancelled while it runs, a job requeued while it runs
# (it runs twice), and a slurmctld restart while jobs run. Then:
#  - sacct: each job's AllocTRES names its profile and count; per job and profile, the instance
#    count over all its runs equals the ledger history's records (one per instance and run), and
#    the instance-seconds agree within the prolog/epilog latency (history starts in the prolog
#    and ends in the epilog; Slurm's Start/End bracket the job);
#  - sreport: slurmdbd rolls up the hours the run covered (vc_accounting_rollup moves slurmdbd's
#    clock past them), and its usage per account and profile equals the sum over sacct's records
#    and the ledger history's.
#   VP_BIN=<build> bash tests/e2e/scenarios/accounting.sh     (about a minute)
set -u
{
export VC_ACCOUNTING=1 VC_CRED_EXPIRE=10
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
# The second user is a real account: newer Slurm (26.05 here) reserves the name "nobody" for its
# own uid 99 (common/uid.c), so sacctmgr's association for it matches no uid ("couldn't
# get a uid for user nobody") and would account its jobs to no association.
vp_second_user
vp_start
sacctmgr -i add account infer-team,train-team Description=test Organization=test >/dev/null ||
  vc_fail "sacctmgr add account failed"
sacctmgr -i add user root,$VP_USER_B account=infer-team,train-team >/dev/null || vc_fail "sacctmgr add user failed"
t_start=$(date +%s)
sub() { # sbatch arguments: prints the job id
  local id
  id=$(sbatch --parsable -o "$VC_RUN/out/%j.out" "$@" | cut -d';' -f1)
  echo "${id:-refused}"
}

a=$(sub -p infer -A infer-team --gres=vgpu:1g.10gb:2 --wrap 'sleep 8')
b=$(vp_as_user "$VP_USER_B" sbatch --parsable -o "$VC_RUN/out/%j.out" -p train -A train-team --gres=vgpu:3g.40gb:1 --wrap 'sleep 10')
c=$(sub -p infer -A infer-team -N2 --gres=vgpu:2g.20gb:1 --wrap 'srun -l hostname; sleep 6')
d=$(sub -p infer -A infer-team --array=1-3 --gres=vgpu:1g.10gb:1 --wrap 'sleep 5')
e=$(sub -p train -A train-team --gres=vgpu:4g.40gb:1 --wrap 'echo run; sleep 300')
f=$(sub -p infer -A infer-team --gres=vgpu:2g.20gb:1 --wrap 'echo run; sleep 10')
for j in "$a" "$b" "$c" "$d" "$e" "$f"; do [ "$j" != refused ] || vc_fail "a submission was refused"; done
vc_log "jobs: single $a, train ($VP_USER_B) $b, two-node $c, array $d, to cancel $e, to requeue $f"

# A restart while jobs run: slurmctld re-sends nothing twice and loses nothing for slurmdbd.
# "Run" means their scripts started: a job RUNNING in slurmctld whose batch step slurmd has not
# launched yet (PrologFlags=Alloc: the launch waits for the prolog) is, after a restart, "missing
# from batch node" and requeued by slurmctld itself (job_mgr.c, _foreach_purge_missing_jobs).
vp_wait_started "$e" 90 || vc_fail "job $e did not start its script"
vp_wait_started "$f" 90 || vc_fail "job $f did not start its script"
vc_ctld_stop
vc_ctld_start || vc_fail "slurmctld did not restart"
vc_log "slurmctld restarted with jobs running"
scontrol requeue "$f" || vc_fail "scontrol requeue $f failed"
# A requeued job waits out the launch credential's lifetime (job_mgr.c), so that slurmd has
# forgotten the job and runs the prolog again; VC_CRED_EXPIRE keeps that short here. (Forcing
# StartTime=now instead makes slurmd skip the second run's prolog: docs/slurm.md, "Requeue".)
sleep 2
scancel "$e"
for j in "$a" "$b" "$c" "$e" "$f"; do vp_wait_done "$j" 120 || vc_fail "job $j did not end"; done
for _ in $(seq 300); do squeue -h -j "$d" 2>/dev/null | grep -q . || break; sleep 0.2; done
vp_check || vc_fail "nodes inconsistent after the jobs"

# slurmctld hands job ends to slurmdbd asynchronously: until every job has its end in the database.
acct() {
  SLURM_TIME_FORMAT=%s sacct -a -X -D -n -P -S "$(date -d @"$((t_start - 60))" +%Y-%m-%dT%H:%M:%S)" \
    -o JobIDRaw,JobID,Account,User,State,Start,End,AllocTRES
}
for _ in $(seq 150); do
  acct > "$VC_RUN/sacct.txt"
  [ "$(wc -l < "$VC_RUN/sacct.txt")" -ge 9 ] && ! grep -qE '\|(RUNNING|PENDING)\||\|Unknown\|' "$VC_RUN/sacct.txt" && break
  sleep 0.2
done
echo "sacct -X -D -o JobIDRaw,JobID,Account,User,State,Start,End,AllocTRES:"
sed 's/^/  /' "$VC_RUN/sacct.txt"
cat "$VGPU_STATE_DIR"/*/history.jsonl > "$VC_RUN/history.jsonl" 2>/dev/null

python3 - "$VC_RUN/sacct.txt" "$VC_RUN/history.jsonl" "$a $b $c $d $e $f" > "$VC_RUN/compare.txt" <<'PY' ||
import collections, json, sys
sacct_file, history_file, jobs = sys.argv[1], sys.argv[2], sys.argv[3].split()
a, b, c, d, e, f = jobs
problems = []
runs = collections.defaultdict(list)          # raw job id -> [(jobid, account, user, state, start, end, {profile: n})]
unstarted = collections.defaultdict(list)     # raw job id -> states of runs cancelled before they started
for line in open(sacct_file):
    raw, jobid, account, user, state, start, end, tres = line.rstrip("\n").split("|")
    if start == "None":  # no instances, nothing to compare; only its state counts
        unstarted[int(raw)].append(state.split()[0])
        continue
    counts = {}
    for item in filter(None, tres.split(",")):
        k, _, v = item.partition("=")
        if k.startswith("gres/vgpu:"):
            counts[k[len("gres/vgpu:"):]] = int(v)
        elif k == "gres/vgpu":
            counts["*"] = int(v)
    runs[int(raw)].append((jobid, account, user, state.split()[0], int(start), int(end), counts))
history = collections.defaultdict(list)       # job -> records
for line in open(history_file):
    r = json.loads(line)
    history[r["job"]].append(r)

def check(cond, what):
    if not cond: problems.append(what)

expected = {int(a): ("1g.10gb", 2, 1), int(b): ("3g.40gb", 1, 1), int(c): ("2g.20gb", 2, 1),
            int(e): ("4g.40gb", 1, 1), int(f): ("2g.20gb", 1, 2)}
array_tasks = [raw for raw, rs in runs.items() if rs[0][0].startswith(d + "_")]
for raw in array_tasks: expected[raw] = ("1g.10gb", 1, 1)
check(len(array_tasks) == 3, f"array {d}: {len(array_tasks)} tasks in sacct, want 3")
# Each history record lies just after its Slurm run: the prolog creates the instances after Start,
# the epilog releases them after End (after a cancel, once the job's processes exited: KillWait is
# 2 s). LAG bounds both delays on a loaded 2-core machine; a record outside it is a wrong time.
LAG = 15
per_account = collections.defaultdict(float)  # (account, profile) -> instance-seconds, from sacct
per_account_hist = collections.defaultdict(float)
per_account_runs = collections.defaultdict(int)
for raw, (profile, count, nruns) in sorted(expected.items()):
    rs = runs.get(raw, [])
    check(len(rs) == nruns, f"job {raw}: {len(rs)} runs in sacct, want {nruns}")
    sacct_count = sum(r[6].get(profile, 0) for r in rs)
    check(all(r[6].get(profile) == count and r[6].get("*") == count for r in rs),
          f"job {raw}: AllocTRES {[r[6] for r in rs]}, want gres/vgpu={count} and gres/vgpu:{profile}={count}")
    hist = history.get(raw, [])
    check(len(hist) == sacct_count and all(h["profile"] == profile for h in hist),
          f"job {raw}: ledger history has {[(h['profile'], h['gpu']) for h in hist]}, sacct {sacct_count} x {profile}")
    user = rs[0][2] if rs else "?"
    check(all(h["user"] == user for h in hist), f"job {raw}: history users {[h['user'] for h in hist]}, sacct {user}")
    s_sec = sum(r[6].get(profile, 0) * (r[5] - r[4]) for r in rs)
    h_sec = sum(h["end_time"] - h["start_time"] for h in hist)
    for h in hist:
        run = min(rs, key=lambda r: abs(r[4] - h["start_time"])) if rs else None
        check(run is not None and -1 <= h["start_time"] - run[4] <= LAG and -1 <= h["end_time"] - run[5] <= LAG,
              f"job {raw}: history record {h['start_time']}-{h['end_time']} is not just after its run "
              f"{run[4] if run else '?'}-{run[5] if run else '?'} in sacct")
    for r in rs:
        per_account[(r[1], profile)] += r[6].get(profile, 0) * (r[5] - r[4])
        per_account_runs[(r[1], profile)] += r[6].get(profile, 0)  # instance-runs
    for h in hist: per_account_hist[(rs[0][1] if rs else "?", profile)] += h["end_time"] - h["start_time"]
    print(f"job {raw:>4} {rs[0][0] if rs else '?':>7} {user:>6} {profile:8} runs {[r[3] for r in rs]}: "
          f"sacct {sacct_count} instance(s) {s_sec} s, ledger history {len(hist)} record(s) {h_sec} s")
states = {raw: [r[3] for r in runs.get(raw, [])] + unstarted.get(raw, []) for raw in set(runs) | set(unstarted)}
check(states.get(int(e)) == ["CANCELLED"], f"job {e}: states {states.get(int(e))}, want CANCELLED")
check(sorted(states.get(int(f), [])) == ["COMPLETED", "REQUEUED"], f"job {f}: states {states.get(int(f))}, want REQUEUED then COMPLETED")
extra = set(history) - set(expected)
check(not extra, f"ledger history has jobs sacct does not: {sorted(extra)}")
json.dump({f"{k[0]}|{k[1]}": v for k, v in per_account.items()}, open(sacct_file + ".per_account.json", "w"))
json.dump({f"{k[0]}|{k[1]}": v for k, v in per_account_hist.items()}, open(sacct_file + ".per_account_hist.json", "w"))
json.dump({f"{k[0]}|{k[1]}": v for k, v in per_account_runs.items()}, open(sacct_file + ".per_account_runs.json", "w"))
for p in problems: print("PROBLEM:", p)
sys.exit(1 if problems else 0)
PY
  { cat "$VC_RUN/compare.txt"; vc_fail "sacct and the ledger history disagree"; }
cat "$VC_RUN/compare.txt"
# The same tenancies as vgpuctl job prints them: the requeued job's two runs, each on its node.
shown=$("$VP_VGPUCTL" job "$f" --state-dir "$VGPU_STATE_DIR") || vc_fail "vgpuctl job $f failed"
echo "vgpuctl job $f:"; echo "$shown" | sed 's/^/  /'
[ "$(echo "$shown" | grep -cE '^n[0-9] GPU [0-9]  2g.20gb  slices [0-9]-[0-9]  MIG-[0-9a-f-]+  .* s\), ended$')" = 2 ] ||
  vc_fail "vgpuctl job $f does not show two ended 2g.20gb tenancies"

t_end=$(date +%s)

# sreport: roll the run's hours up, then usage per account and profile over those hours.
hour_start=$(( (t_start - 60) / 3600 * 3600 ))
hour_end=$(( (t_end / 3600 + 1) * 3600 ))
vc_accounting_rollup "$hour_end" 2 || vc_fail "slurmdbd did not roll up the run's hours"
tres=$(cut -d'|' -f8 "$VC_RUN/sacct.txt" | tr ',' '\n' | sed -n 's/=.*//; /^gres\/vgpu:/p' | sort -u | paste -sd,)
vc_accounting_ahead 2 sreport -n -P -t seconds cluster AccountUtilizationByUser \
  start="$(date -d @"$hour_start" +%Y-%m-%dT%H:%M:%S)" end="$(date -d @"$hour_end" +%Y-%m-%dT%H:%M:%S)" \
  -T "$tres" > "$VC_RUN/sreport.txt" || vc_fail "sreport failed"
echo "sreport -t seconds cluster AccountUtilizationByUser -T $tres:"
sed 's/^/  /' "$VC_RUN/sreport.txt"
python3 - "$VC_RUN/sreport.txt" "$VC_RUN"/sacct.txt.per_account{,_hist,_runs}.json <<'PY' ||
import json, sys
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1]) if l.strip()]
sacct = json.load(open(sys.argv[2]))
hist = json.load(open(sys.argv[3]))
runs = json.load(open(sys.argv[4]))
report = {}
for cluster, account, login, name, tres, used in rows:   # account totals have no login
    if not login and account != "root":
        report[f"{account}|{tres[len('gres/vgpu:'):]}"] = int(used)
problems = []
for key in sorted(set(sacct) | set(report)):
    s, r, h = sacct.get(key, 0), report.get(key, 0), hist.get(key, 0)
    # The hourly rollup counts a run's seconds as sacct does, up to a second per instance and run
    # at the hour boundaries; the history differs by the prolog/epilog delays, as above.
    LAG = 15
    instance_runs = max(1, runs.get(key, 0))
    print(f"  {key:22} sreport {r:6d} s   sacct {int(s):6d} s   ledger history {int(h):6d} s")
    if abs(r - s) > instance_runs or abs(r - h) > LAG * instance_runs:
        problems.append(f"{key}: sreport {r} s, sacct {s} s, ledger history {h} s")
for p in problems: print("PROBLEM:", p)
sys.exit(1 if problems or not report else 0)
PY
  vc_fail "sreport disagrees with sacct and the ledger history"
# Last (after the usage checks, which it would change): a job slurm-vgpu cancels says why in
# sacct (AccountingStoreFlags=job_comment): its node cannot create
# the instance (no NVML library there from now on, as in e2e.node_failure; the hooks work alone).
echo "[ -e $VC_RUN/out/break-n3 ] && export VGPU_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 VGPU_HOOK_SERVICE=off" >> "$VC_RUN/etc/vgpu-env/n3.sh"
touch "$VC_RUN/out/break-n3"
g=$(sub -p infer -A infer-team -w n3 --gres=vgpu:1g.10gb:1 --wrap 'sleep 30')
vp_wait_done "$g" 60 || vc_fail "job $g on n3 was not cancelled"
rm -f "$VC_RUN/out/break-n3"
for _ in $(seq 50); do
  why=$(sacct -n -X -P -j "$g" -o State,Comment)
  [[ $why == CANCELLED*"|vgpu: "* ]] && break
  sleep 0.2
done
echo "sacct -j $g -o State,Comment: $why"
[[ $why == CANCELLED*"|vgpu: node n3: GPU "*"NVML library"* ]] || vc_fail "job $g: sacct says '$why'"
vp_check || vc_fail "nodes inconsistent after the cancelled job"
echo "PASS: sacct and sreport account every vgpu instance as the ledger history does, and why it cancelled a job"
} 2>&1
