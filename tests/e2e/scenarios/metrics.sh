#!/usr/bin/env bash
# The node metrics reach a real Prometheus (docs/metrics.md): each planner writes its file,
# node_exporter's textfile collector serves it, Prometheus scrapes every node. With a training job
# and an inference job on n2 running, PromQL must say what the ledgers and slurmctld say:
# instances by profile and state, compute slices per node, Slurm's allocated count, slice-seconds
# used growing on the busy nodes only. Then every query of the shipped Grafana dashboard runs and
# returns data, and the shipped alert rules load and evaluate without error. The training job's
# instance reports the utilisation its (fake) workload causes, through the fake NVML's GPM.
#   VP_BIN=<build> bash tests/e2e/scenarios/metrics.sh     (about 40 s)
set -u
{
export VP_METRICS=1
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
vp_start
job=$(vp_job_script)
# No -w for training: a node takes a 3g.40gb request only once its split offers the type.
t=$(vp_sbatch -p train --gres=vgpu:3g.40gb:1 "$job" 60)
i=$(vp_sbatch -p infer -w n2 --gres=vgpu:1g.10gb:2 "$job" 60)
vp_wait_started "$t" 90 || vc_fail "job $t did not start"
vp_wait_started "$i" 90 || vc_fail "job $i did not start"

# What the ledgers say, as "node profile count" of running instances.
ledger_running() {
  "$VP_VGPUCTL" status --state-dir "$VGPU_STATE_DIR" --json | python3 -c '
import json, sys, collections
c = collections.Counter()
for n in json.load(sys.stdin):
    for g in n["gpus"]:
        for i in g["instances"]:
            if i["job"] is not None: c[(n["node"], i["profile"])] += 1
for (node, p), k in sorted(c.items()): print(node, p, k)'
}
prom_running() {
  vp_prom_query 'sum by (node, profile) (vgpu_instances{state="running"}) > 0' |
    sed -E 's/^node=([^,]*),profile=([^ ]*) (.*)$/\1 \2 \3/'
}
want=$(ledger_running)
[ -n "$want" ] || vc_fail "the ledgers show no running instance"
got=""
for _ in $(seq 50); do got=$(prom_running); [ "$got" = "$want" ] && break; sleep 0.2; done
echo "running instances, ledgers: $(echo "$want" | paste -sd';')"
echo "running instances, PromQL:  $(echo "$got" | paste -sd';')"
[ "$got" = "$want" ] || vc_fail "Prometheus says '$got', the ledgers '$want'"

# What the user's admin sees of a running job: vgpuctl job names the instance the ledger holds.
tn=$(echo "$want" | awk '$2 == "3g.40gb" {print $1}')
shown=$("$VP_VGPUCTL" job "$t" --state-dir "$VGPU_STATE_DIR") || vc_fail "vgpuctl job $t failed: $shown"
echo "vgpuctl job $t:"; echo "$shown" | sed 's/^/  /'
echo "$shown" | grep -qE "^$tn GPU [0-9]  3g.40gb  slices [0-9]-[0-9]  $(vp_ledger_uuids "$tn" "$t")  ready" ||
  vc_fail "vgpuctl job $t does not show its ledger instance"
# The job's environment carries the same placement: GPU index and memory slices.
slices=$(echo "$shown" | sed -nE "s/^$tn GPU ([0-9])  3g.40gb  slices ([0-9])-([0-9]).*/\1:\2-\3/p")
env_placement=$(grep -m1 '^CVD=' "$VC_RUN/out/$t.out" | sed -nE 's/.* PLACEMENT=([^ ]*) .*/\1/p')
echo "job $t: VGPU_PLACEMENT=$env_placement, vgpuctl job says $slices"
[ -n "$slices" ] && [ "$env_placement" = "$slices" ] || vc_fail "job $t: VGPU_PLACEMENT='$env_placement', the ledger says '$slices'"
out=$("$VP_VGPUCTL" job 999999 --state-dir "$VGPU_STATE_DIR" 2>&1); rc=$?
[ $rc = 1 ] && [[ $out == *"job 999999: no instance and no history record"* ]] || vc_fail "vgpuctl job of an unknown job: rc=$rc $out"
echo "excerpt of $(vp_metrics_file n1):"
grep -E '^vgpu_(instances\{.*state="running"|gpu_compute_slices|compute_slice_seconds_total|slurm_allocated)' \
  "$(vp_metrics_file n1)" | grep -v ' 0$' | sed 's/^/  /'
check() { # $1 PromQL, $2 expected output (vp_prom_query's form), $3 what, [$4 tries, 0.2 s apart]
  local out=""
  for _ in $(seq "${4:-50}"); do out=$(vp_prom_query "$1") && [ "$out" = "$2" ] && break; sleep 0.2; done
  echo "$3: $1 -> $(echo "$out" | paste -sd';')"
  [ "$out" = "$2" ] || vc_fail "$3: got '$out', want '$2'"
}
check 'count(up{job="slurm-vgpu"} == 1)' " 3" "every node_exporter scraped"
check 'sum(node_textfile_scrape_error)' " 0" "every metrics file parsed by node_exporter"
check 'sum by (node) (vgpu_gpu_compute_slices)' "$(for n in $VC_NODES; do echo "node=$n $((7 * VP_GPUS))"; done)" \
  "compute slices per node (instance + planned + free = 7 per GPU)"
used_n2=$(scontrol -d show node n2 | grep -oE 'GresUsed=[^ ]*' | tr ',' '\n' | sed -n 's/^.*vgpu:1g.10gb:\([0-9]*\).*/\1/p')
check 'sum by (node, type) (vgpu_slurm_allocated{node="n2",type="1g.10gb"})' "node=n2,type=1g.10gb ${used_n2:-0}" "Slurm's allocated 1g.10gb on n2 (GresUsed says ${used_n2:-0})"
[ -n "$(vp_prom_query "vgpu_gpu_compute_slices{node=\"$tn\",state=\"instance\"} >= 3")" ] ||
  vc_fail "no GPU of $tn has the 3g.40gb's 3 compute slices in instances"

# Utilisation per instance (NVML GPM on Hopper; here the fake's GPM): the training job's workload
# keeps 60 % of its SMs and 25 % of its DRAM bandwidth busy and holds 4 GiB, played by the fake's
# load tool as the job's CUDA program would be. The inference job's instances stay idle.
tu=$(vp_ledger_uuids "$tn" "$t")
( . "$VC_RUN/etc/vgpu-env/$tn.sh"; "$VP_BIN/fakenvml/fake-nvml-load" "$tu" 60 25 4096 ) ||
  vc_fail "fake-nvml-load on $tu failed"
check "round(100 * max by (slurm_job, profile) (vgpu_instance_sm_utilization_ratio{slurm_job=\"$t\"}))" \
  "profile=3g.40gb,slurm_job=$t 60" "the training job's SM utilisation (GPM, %)" 100
check "sum by (slurm_job) (vgpu_instance_memory_used_bytes{slurm_job=\"$t\"}) / 2^30" "slurm_job=$t 4" "the training job's memory in use (GiB)"
check "max by (slurm_job) (vgpu_instance_sm_utilization_ratio{slurm_job=\"$i\"})" "slurm_job=$i 0" "the idle inference job's SM utilisation"
check 'sum(vgpu_gpus_without_gpm)' " 0" "every (fake H100) GPU gives GPM"
grep -E "^vgpu_instance_(sm_utilization_ratio|memory_used_bytes)\{.*slurm_job=\"$t\"" "$(vp_metrics_file "$tn")" | sed 's/^/  /' 

sleep 4
check 'sum by (kind, node) (increase(vgpu_compute_slice_seconds_total{kind="used"}[1m]) > 0) * 0 + 1' \
  "$(echo "$want" | awk '{print "kind=used,node=" $1 " 1"}' | sort -u)" "slice-seconds used grow on the busy nodes only"

# The hooks' tally: every busy node counted its prologs. A job whose prolog cannot run on an idle node (no
# NVML there from now on, as in e2e.node_failure) is cancelled and counted by reason.
busy=$(echo "$want" | awk '{print $1}' | sort -u)
busy_re=$(echo "$busy" | paste -sd'|')
check "count by (node) (vgpu_hook_duration_seconds_count{hook=\"prolog\",node=~\"$busy_re\"} > 0)" \
  "$(for n in $busy; do echo "node=$n 1"; done)" "prologs counted on the busy nodes"
bn=$(for n in $VC_NODES; do echo "$busy" | grep -qx "$n" || echo "$n"; done | head -1)
echo "[ -e $VC_RUN/out/break-$bn ] && export VGPU_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 VGPU_HOOK_SERVICE=off" >> "$VC_RUN/etc/vgpu-env/$bn.sh"
touch "$VC_RUN/out/break-$bn"
c=$(vp_sbatch -p infer -w "$bn" --gres=vgpu:1g.10gb:1 --wrap 'sleep 30')
vp_wait_done "$c" 60 || vc_fail "job $c on $bn was not cancelled"
rm -f "$VC_RUN/out/break-$bn"
scontrol show job "$c" | grep -q 'Comment=vgpu: .*NVML library' || vc_fail "job $c: no vgpu reason: $(scontrol show job "$c" | grep -o 'Comment=.*')"
check 'sum by (node, reason) (vgpu_jobs_cancelled_total) > 0' "node=$bn,reason=hardware 1" "jobs cancelled by reason (the instance could not be created)"

# The dashboard: every panel's query runs and has data (the node variable as "All").
python3 - "$VP_SRC/monitoring/grafana-dashboard.json" > "$VC_RUN/dashboard-queries.txt" <<'PY' ||
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["panels"]:
    for t in p["targets"]:
        print(p["title"] + "\t" + t["expr"].replace("$node", ".*"))
PY
  vc_fail "the dashboard JSON does not parse"
panels=0
while IFS=$'\t' read -r title expr; do
  out=$(vp_prom_query "$expr") || vc_fail "dashboard panel '$title': query failed: $expr"
  [ -n "$out" ] || vc_fail "dashboard panel '$title': no data for $expr"
  echo "dashboard panel '$title': $(echo "$out" | head -3 | paste -sd';')"
  panels=$((panels + 1))
done < "$VC_RUN/dashboard-queries.txt"
[ "$panels" -ge 8 ] || vc_fail "only $panels dashboard queries"

# The alert rules: loaded, evaluated, healthy; none firing on this healthy cluster.
python3 - "$VP_PROM_URL" <<'PY' || vc_fail "alert rules are not healthy in Prometheus"
import json, sys, urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1] + "/api/v1/rules", timeout=10))
rules = [r for g in d["data"]["groups"] for r in g["rules"]]
bad = [(r["name"], r.get("health"), r.get("lastError")) for r in rules if r.get("health") != "ok"]
firing = [r["name"] for r in rules if r.get("state") == "firing"]
print(f"alert rules: {len(rules)} loaded, unhealthy {bad}, firing {firing}")
sys.exit(1 if len(rules) < 5 or bad or firing else 0)
PY

scancel "$t" "$i"
for j in "$t" "$i"; do vp_wait_done "$j" 60 || vc_fail "job $j did not end"; done
check "count by (node) (vgpu_hook_duration_seconds_count{hook=\"epilog\",node=~\"$busy_re\"} > 0)" \
  "$(for n in $busy; do echo "node=$n 1"; done)" "epilogs counted on the busy nodes"
# Each released instance was scrubbed (here: no vgpu-scrub, so "unavailable", and the policy's
# "optional" destroys it), timed and counted by outcome.
check "count by (node) (vgpu_hook_duration_seconds_count{hook=\"scrub\",node=~\"$busy_re\"} > 0)" \
  "$(for n in $busy; do echo "node=$n 1"; done)" "scrubs timed on the busy nodes"
check "sum by (outcome) (vgpu_scrubs_total{node=~\"$busy_re\"}) > 0" "outcome=unavailable 3" "scrubs by outcome (3 instances released)"
vp_check || vc_fail "nodes inconsistent"
echo "PASS: Prometheus, the dashboard and the alert rules see what the ledgers and slurmctld see"
} 2>&1
