#!/usr/bin/env bash
# vgpuctl catalog / plan / status as a script sees them: JSON shapes, exit codes, error text.
set -u
vgpuctl=$1
fail() { echo "FAIL: $*"; exit 1; }

"$vgpuctl" catalog --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
names = [m["name"] for m in d["models"]]
for want in ("A100-40GB", "A100-80GB", "A30-24GB", "H100-80GB", "H100-94GB", "H200-141GB"):
    assert want in names, want
h100 = next(m for m in d["models"] if m["name"] == "H100-80GB")
p = next(p for p in h100["profiles"] if p["name"] == "3g.40gb")
for field in ("name", "nvml_profile_id", "compute_slices", "memory_slices", "sm_count", "memory_mib", "max_instances", "placements"):
    assert field in p, field
assert p["placements"] == [{"start": 0, "size": 4}, {"start": 4, "size": 4}], p["placements"]
assert p["nvml_profile_id"] == 9 and p["sm_count"] == 60
' || fail "catalog --json shape"

out=$("$vgpuctl" catalog --model V100 2>&1); rc=$?
[ $rc = 1 ] && [[ $out == *"not a model we know (known: A100-40GB"* ]] || fail "catalog unknown model: rc=$rc $out"

"$vgpuctl" plan --gpus 2 --running "0:3g.40gb@0/job42" --demand "4g.40gb:1,1g.10gb:3" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["counts"] == {"1g.10gb": 3, "4g.40gb": 1}, d["counts"]
assert all(s["gpu"] == 1 for s in d["slots"] if s["profile"] == "4g.40gb")
' || fail "plan --json"

out=$("$vgpuctl" plan --demand "9g.99gb:1" 2>&1); rc=$?
[ $rc = 2 ] && [[ $out == *"profile 9g.99gb: unknown profile on H100-80GB (valid: 1g.10gb"* ]] || fail "plan unknown profile: rc=$rc $out"
out=$("$vgpuctl" plan --running "0:3g.40gb@2" 2>&1); rc=$?
[ $rc = 2 ] && [[ $out == *"3g.40gb cannot start at slice 2"* ]] || fail "plan bad placement: rc=$rc $out"
out=$("$vgpuctl" plan --running "0:3g.40gb@0,0:4g.40gb@0" 2>&1); rc=$?
[ $rc = 2 ] && [[ $out == *"overlap"* ]] || fail "plan overlapping running: rc=$rc $out"

example=$(dirname "$0")/../../examples/policy.json
out=$("$vgpuctl" submit-table "$example" --default-partition infer); rc=$?
[ $rc = 0 ] && [[ $out == *'return { default = "infer", partitions = {'* ]] &&
  [[ $out == *'["train"] = {"3g.40gb", "4g.40gb", "7g.80gb"}'* ]] || fail "submit-table: rc=$rc $out"
out=$("$vgpuctl" submit-table "$example" --default-partition nope 2>&1); rc=$?
[ $rc = 1 ] && [[ $out == *"default partition 'nope' is not in the policy"* ]] || fail "submit-table bad default: rc=$rc $out"
out=$("$vgpuctl" accounting-tres "$example"); rc=$?
[ $rc = 0 ] && [[ $out == gres/vgpu,* ]] && [[ $out == *,gres/vgpu:3g.40gb,* ]] ||
  fail "accounting-tres: rc=$rc $out"
out=$("$vgpuctl" accounting-tres /nonexistent/policy.json 2>&1); rc=$?
[ $rc = 2 ] && [[ $out == *"accounting-tres: "*"/nonexistent/policy.json"* ]] || fail "accounting-tres missing file: rc=$rc $out"

empty=$(mktemp -d)
out=$("$vgpuctl" status --state-dir "$empty" 2>&1); rc=$?
rmdir "$empty"
[ $rc = 1 ] && [[ $out == *"no node ledgers under"* ]] || fail "status on an empty dir: rc=$rc $out"
empty=$(mktemp -d)
out=$("$vgpuctl" report --state-dir "$empty" 2>&1); rc=$?
[ $rc = 2 ] && [[ $out == *"report: no node ledgers under"* ]] || fail "report on an empty dir: rc=$rc $out"
out=$("$vgpuctl" job 7 --state-dir "$empty" 2>&1); rc=$?
rmdir "$empty"
[ $rc = 2 ] && [[ $out == *"job: no node ledgers under"* ]] || fail "job on an empty dir: rc=$rc $out"
# A viewer changes nothing: an unreadable ledger is reported and left where it is (set aside, the
# node would rebuild it and quarantine every idle instance).
bad=$(mktemp -d)
mkdir -m 700 "$bad/n1"
echo garbage > "$bad/n1/ledger.json" && chmod 600 "$bad/n1/ledger.json" && : > "$bad/n1/ledger.lock" && chmod 600 "$bad/n1/ledger.lock"
out=$("$vgpuctl" status --state-dir "$bad" 2>&1); rc=$?
[ $rc != 0 ] && [ "$(cat "$bad/n1/ledger.json")" = garbage ] && ! ls "$bad"/n1/ledger.json.corrupt-* >/dev/null 2>&1 ||
  fail "status over a corrupt ledger changed it: rc=$rc $(ls "$bad/n1") $out"
rm -rf "$bad"
# slurm-check: --from reads captured scontrol outputs; one missing is an I/O error (2), a failing
# scontrol too, and a configuration without PrologFlags=Alloc is an error (1).
captured=$(mktemp -d)
printf 'GresTypes               = vgpu\nPrologFlags             = (null)\nProlog                  = /usr/sbin/vgpu-prolog\nEpilog                  = /usr/sbin/vgpu-epilog\nJobSubmitPlugins        = lua\nSLURM_VERSION           = 22.05.8\n' > "$captured/config.txt"
: > "$captured/partitions.txt"
out=$("$vgpuctl" slurm-check "$example" --from "$captured" 2>&1); rc=$?
[ $rc = 2 ] && [[ $out == *"slurm-check: $captured/nodes.txt: cannot open"* ]] || fail "slurm-check missing capture: rc=$rc $out"
: > "$captured/nodes.txt"
out=$("$vgpuctl" slurm-check "$example" --from "$captured" 2>&1); rc=$?
[ $rc = 1 ] && [[ $out == *"error: PrologFlags = '(null)' lacks Alloc"* ]] &&
  [[ $out == *"checked against Slurm 22.05.8: 1 error(s), "* ]] || fail "slurm-check without Alloc: rc=$rc $out"
rm -r "$captured"
out=$("$vgpuctl" slurm-check "$example" --scontrol false 2>&1); rc=$?
[ $rc = 2 ] && [[ $out == *"slurm-check: \`false show config\` failed (exit status 1)"* ]] || fail "slurm-check failing scontrol: rc=$rc $out"
# offers / why: what a user sees, from Slurm's own text (here a fake squeue and scontrol).
fake=$(mktemp -d)
cat > "$fake/scontrol" <<'EOF'
#!/bin/bash
echo "NodeName=gpu17 Arch=x86_64 Gres=vgpu:free:10,vgpu:1g.10gb:3 GresUsed=vgpu:1g.10gb:3 State=MIXED Partitions=infer"
EOF
cat > "$fake/squeue" <<'EOF'
#!/bin/bash
case "$*" in
  *"-j 42 -t PD"*) echo "42|infer|4294|2026-12-03T10:00:00|Resources|gres/vgpu:1g.10gb:2|1|alice|60|(null)" ;;
  *"-j 43 -o %T"*) echo RUNNING ;;
esac
EOF
chmod 755 "$fake/scontrol" "$fake/squeue"
out=$("$vgpuctl" offers infer --policy "$example" --slurm-bin "$fake" 2>&1); rc=$?
[ $rc = 0 ] && [[ $out == *"partition infer: 1 vgpu node(s), 1 can start jobs now, at most 4 instances per job"* ]] &&
  [[ $out == *"on H100-80GB: 1g.10gb, 1g.20gb, 2g.20gb"* ]] && [[ $out == *"free now: none"* ]] || fail "offers: rc=$rc $out"
out=$("$vgpuctl" offers nosuch --policy "$example" --slurm-bin "$fake" 2>&1); rc=$?
[ $rc = 1 ] && [[ $out == *"partition nosuch: not in"* ]] || fail "offers unknown partition: rc=$rc $out"
out=$("$vgpuctl" why 42 --policy "$example" --slurm-bin "$fake" 2>&1); rc=$?
[ $rc = 0 ] && [[ $out == *"job 42 (alice) pends in infer: Slurm's reason: Resources"* ]] &&
  [[ $out == *"vgpu:1g.10gb:2 in infer: 0 of the 1 node(s) it needs have 2 x 1g.10gb free now"* ]] || fail "why: rc=$rc $out"
out=$("$vgpuctl" why 43 --policy "$example" --slurm-bin "$fake" 2>&1); rc=$?
[ $rc = 0 ] && [[ $out == "job 43 is RUNNING, not pending" ]] || fail "why running: rc=$rc $out"
out=$("$vgpuctl" why 44 --policy "$example" --slurm-bin "$fake" 2>&1); rc=$?
[ $rc = 1 ] && [[ $out == *"job 44: Slurm knows no such job"* ]] || fail "why unknown job: rc=$rc $out"
out=$("$vgpuctl" why '42;rm' --policy "$example" --slurm-bin "$fake" 2>&1); rc=$?
[ $rc = 2 ] && [[ $out == *"not a job id"* ]] || fail "why hostile job id: rc=$rc $out"
rm -rf "$fake"
echo "vgpuctl CLI: all checks passed"
