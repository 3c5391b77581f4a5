#!/usr/bin/env bash
# Moving in (docs/admin.md, "Moving in"): node n1 already holds an admin's static MIG layout when
# slurm-vgpu's planner first starts there, and a job of that layout runs on one of its instances.
# The admin made 3g.40gb and 1g.10gb on GPU 0 and 1g.10gb on GPU 1 (as `nvidia-smi mig -cgi`); a
# job that asked for no vgpu (as one of gres/gpu would) holds a CUDA context on the 3g.40gb. The
# planner adopts that instance for that job, found through `scontrol pidinfo`: it stays, its UUID
# unchanged, confined to the job's user, shown as adopted by vgpuctl, and nothing is planned over
# it, while the idle instances of the old layout are scrubbed and the node serves vgpu jobs. When
# the job ends its epilog releases the instance like any job's, and a job then gets all of GPU 0
# as one 7g.80gb: the layout became dynamic as the old layout's job ended. Nothing drains.
set -u
export VC_NODES=n1
VP_IDLE_LAYOUT='[]'
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
USER_A=nobody
USER_B=$VP_USER_B
vp_second_user
PROBE=$VP_BIN/fakenvml/fake-cuda-probe
on_n1() { ( . "$VC_RUN/etc/vgpu-env/n1.sh"; "$@" ); }

VP_NO_PLANNERS=1 vp_start

echo "--- the admin's static layout, made before slurm-vgpu's planner ever ran here"
mapfile -t made < <(on_n1 "$VP_BIN/fakenvml/fake-mig-cgi" 0 9@0 19@4 && on_n1 "$VP_BIN/fakenvml/fake-mig-cgi" 1 19@0)
[ "${#made[@]}" = 3 ] || vc_fail "fake-mig-cgi made '${made[*]}'"
busy=${made[0]}
[ -e "$VGPU_STATE_DIR/n1/ledger.json" ] && vc_fail "n1 has a ledger before its planner started"

echo "--- a job of that layout (no vgpu request) runs on the 3g.40gb"
cat > "$VC_RUN/etc/old-layout-job.sh" <<JOB
#!/bin/bash
. "$VC_RUN/etc/vgpu-env/\$SLURMD_NODENAME.sh"
CUDA_VISIBLE_DEVICES=$busy "$PROBE" --hold 300 &
holder=\$!
for _ in \$(seq 600); do [ -e "\$1" ] && break; sleep 0.2; done
kill \$holder
JOB
chmod 755 "$VC_RUN/etc/old-layout-job.sh"
old=$(vp_submit_on_n1 "$USER_A" "$VC_RUN/etc/old-layout-job.sh" "$VC_RUN/out/release-old")
vp_line_of "$old" "fake-cuda: holding a compute context" >/dev/null

echo "--- the planner starts: it adopts the busy instance for job $old and takes over the rest"
vp_planner_start n1
vp_wait_settled 30 || vc_fail "the planner did not publish a first advertisement"
grep -q "1 in use adopted for their running jobs, 0 in use quarantined" "$VC_RUN/log/planner.n1.log" ||
  vc_fail "the planner did not adopt the busy instance: $(grep -m3 'rebuil' "$VC_RUN/log/planner.n1.log")"
status=$("$VP_VGPUCTL" status --state-dir "$VGPU_STATE_DIR" --node n1 --json)
echo "$status" | python3 -c '
import json, sys
busy, job = sys.argv[1], int(sys.argv[2])
gpus = json.load(sys.stdin)[0]["gpus"]
mine = [i for g in gpus for i in g["instances"] if i["mig_uuid"] == busy]
assert len(mine) == 1 and mine[0]["job"] == job and mine[0]["adopted"] and mine[0]["profile"] == "3g.40gb", mine
assert sum(i["adopted"] for g in gpus for i in g["instances"]) == 1, "only the busy instance is adopted"
over = [s for s in gpus[0]["planned"] if s["start"] < 4]
assert not over, "planned over the adopted instance: %s" % over
' "$busy" "$old" || vc_fail "vgpuctl status does not show $busy adopted for job $old alone: $status"
vp_status | grep -q "job $old adopted" || vc_fail "vgpuctl status draws no 'job $old adopted': $(vp_status)"
"$VP_VGPUCTL" job "$old" --state-dir "$VGPU_STATE_DIR" | grep -q "$busy  ready (adopted: the layout before)" ||
  vc_fail "vgpuctl job $old: $("$VP_VGPUCTL" job "$old" --state-dir "$VGPU_STATE_DIR" 2>&1)"
vp_verify_node n1 || vc_fail "n1 is not consistent after moving in"
line=$(vp_line_of "$old" "fake-cuda: $busy: usable")
refused=$(runuser -u "$USER_B" -- bash -c '. "$1"; CUDA_VISIBLE_DEVICES=$2 "$3"' _ "$VC_RUN/etc/vgpu-env/n1.sh" "$busy" "$PROBE" 2>&1)
echo "$refused" | grep -q "$busy: refused: open .*: Permission denied" ||
  vc_fail "another user can open job $old's adopted instance: $refused"

echo "--- vgpu jobs run beside it"
# By partition, not -w: a node offers a type only once a job asks for it (docs/users.md).
small=$(vp_sbatch -p infer --gres=vgpu:1g.10gb:2 "$(vp_job_script 2)")
vp_wait_done "$small" 90
vp_assert_completed "$small"
grep -q "$busy" <<<"$(vp_ledger_uuids n1 "$old")" || vc_fail "job $old lost its instance while others ran"

echo "--- job $old ends: its epilog releases the adopted instance; all of GPU 0 then goes to one 7g.80gb"
touch "$VC_RUN/out/release-old"
vp_wait_done "$old" 60
vp_assert_completed "$old"
[ -z "$(vp_ledger_uuids n1 "$old")" ] || vc_fail "job $old still holds $(vp_ledger_uuids n1 "$old") after it ended"
big=$(vp_sbatch -p train --gres=vgpu:7g.80gb:2 "$(vp_job_script 2)")
vp_wait_done "$big" 120
vp_assert_completed "$big"
vp_check || vc_fail "node not consistent at the end"
echo "PASS moving_in"
