#!/usr/bin/env bash
# One cluster, three GPU models, two vendors: n1 has two H100-80GB, n2 one A100-40GB (both through
# the fake NVML), n3 two AMD MI300X behind the fake amdgpu driver (sysfs over FUSE). Jobs asking
# for a model's own profiles land on it; n3's GPUs change compute-partition mode as the jobs ask
# without a drain; an AMD job is given exactly its partitions (ROCR_VISIBLE_DEVICES, its render
# nodes) and a mode change waits while a process still uses the GPU. Then requests by need: the
# classes small/medium/large land on every model that can realize them, each job told what it got,
# and a train -> infer -> train shift reshapes both vendors' GPUs without a drain.
set -u
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
export VP_KIND_n2=a100 VP_KIND_n3=mi300x
# A requeued job waits one credential lifetime before it may start again (slurmd must have
# forgotten the job to run its prolog again); short here.
export VC_CRED_EXPIRE=10
VC_NODES="n1 n2 n3"
VP_CLASSES='{"small": {"min_memory_gb": 10, "min_compute_fraction": 0.125},
              "medium": {"min_memory_gb": 20, "min_compute_fraction": 0.25},
              "large": {"min_memory_gb": 80}}'
VP_INFER_PROFILES='{"H100-80GB": ["1g.10gb", "2g.20gb", "small", "medium"], "A100-40GB": ["1g.5gb", "2g.10gb", "small", "medium"],
                    "MI300X-192GB": ["cpx.24gb", "qpx.48gb", "small", "medium"]}'
VP_TRAIN_PROFILES='{"H100-80GB": ["7g.80gb", "large"], "A100-40GB": ["7g.40gb"], "MI300X-192GB": ["spx.192gb", "dpx.96gb", "large"]}'
VC_PROFILES="$VC_PROFILES small medium large"
VP_IDLE_LAYOUT='[]'
vp_start
job=$(vp_job_script)
mode_of() { cat "$VC_RUN/amdgpu/n3/sys/bus/pci/devices/$1/current_compute_partition"; }
gpu0=0000:0c:00.0 gpu1=0000:22:00.0

echo "--- the backends each node chose"
grep -h "backend\|ledger rebuilt" "$VC_RUN"/log/planner.n3.log | head -3
[ "$(mode_of $gpu0)" = SPX ] && [ "$(mode_of $gpu1)" = SPX ] || vc_fail "n3 did not start in SPX"

echo "--- inference: a profile of each model, each lands on its own node"
a=$(vp_sbatch -p infer --gres=vgpu:1g.10gb:2 "$job" 8)
b=$(vp_sbatch -p infer --gres=vgpu:1g.5gb:1 "$job" 8)
# The AMD job runs as an ordinary user and reports which render nodes of its node it can open.
cat > "$VC_RUN/etc/amd-job.sh" <<JOB
#!/bin/bash
open=""
for f in $VC_RUN/devroot/n3/dev/dri/renderD*; do (exec 9<"\$f") 2>/dev/null && open+="\${f##*renderD} "; done
echo "OPEN=\$open"
exec "$job" "\$@"
JOB
chmod 755 "$VC_RUN/etc/amd-job.sh"
c=$(runuser -u nobody -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" \
  sbatch --parsable -p infer --gres=vgpu:cpx.24gb:3 -o "$VC_RUN/out/%j.out" "$VC_RUN/etc/amd-job.sh" 8)
for j in $a $b $c; do vp_wait_running "$j" 60 || vc_fail "job $j did not start: $(squeue -h -j "$j" -o '%r')"; done
for j in $a $b $c; do vp_assert_sees_own "$j"; done
[ "$(squeue -h -j "$a" -o %N)" = n1 ] && [ "$(squeue -h -j "$b" -o %N)" = n2 ] && [ "$(squeue -h -j "$c" -o %N)" = n3 ] ||
  vc_fail "jobs on the wrong nodes: $(squeue -h -o '%i %N %b')"
grep -q "ROCR=GPU-[0-9a-f]\{16\},GPU-[0-9a-f]\{16\},GPU-[0-9a-f]\{16\} " "$VC_RUN/out/$c.out" ||
  vc_fail "the AMD job did not get three partition UUIDs: $(cat "$VC_RUN/out/$c.out")"
grep -q "CVD=0,1,2 " "$VC_RUN/out/$c.out" || vc_fail "HIP ordinals missing: $(cat "$VC_RUN/out/$c.out")"
cpx_gpu=$( [ "$(mode_of $gpu0)" = CPX ] && echo $gpu0 || echo $gpu1 )
[ "$(mode_of $cpx_gpu)" = CPX ] || vc_fail "no MI300X switched to CPX: $(mode_of $gpu0) $(mode_of $gpu1)"
vc_log "n3: $cpx_gpu is in CPX for job $c"

echo "--- the job's render nodes are its user's alone"
owned=$(find "$VC_RUN/devroot/n3/dev/dri" -user nobody -name 'renderD*' -printf '%f\n' | sed 's/renderD//' | sort -n | paste -sd' ')
[ "$cpx_gpu" = $gpu0 ] || vc_fail "expected the first MI300X to take the CPX job, got $cpx_gpu"
[ "$(echo "$owned" | wc -w)" = 3 ] || vc_fail "job $c's user owns render nodes '$owned', expected 3: $(ls -l "$VC_RUN/devroot/n3/dev/dri")"
# Of the CPX GPU's eight partitions (render nodes 128-135), the job could open its three alone.
# (The other GPU's render nodes 137-143 belong to partitions SPX does not have: the real driver
# refuses to open them; the fake's plain files cannot.)
opened=$(sed -n 's/^OPEN=//p' "$VC_RUN/out/$c.out" | xargs -n1 | awk '$1 >= 128 && $1 <= 135' | sort -n | paste -sd' ')
[ "$opened" = "$owned" ] || vc_fail "job $c could open render nodes '$opened', its partitions' are '$owned'"
vc_log "job $c (user nobody) can open exactly its partitions' render nodes: $opened"
others=$(find "$VC_RUN/devroot/n3/dev/dri" -name 'renderD*' -perm /077 -printf '%f ')
[ -z "$(find "$VC_RUN/devroot/n3/dev/dri" -name 'renderD*' -perm /077 -printf '%f' | grep -E "renderD(12[89]|13[0-5])")" ] ||
  vc_fail "render nodes of the CPX GPU open to group or others: $others"
vp_status

echo "--- training: whole GPUs of each model"
t1=$(vp_sbatch -p train --gres=vgpu:7g.80gb:1 "$job" 3)
t2=$(vp_sbatch -p train --gres=vgpu:7g.40gb:1 "$job" 3)
t3=$(vp_sbatch -p train --gres=vgpu:spx.192gb:1 "$job" 3)
for j in $a $b $c $t1 $t2 $t3; do vp_wait_done "$j" 120 || vc_fail "job $j did not finish"; done
vp_assert_completed "$a" "$b" "$c" "$t1" "$t2" "$t3"
for j in $t1 $t2 $t3; do grep -q '^CVD=' "$VC_RUN/out/$j.out" || vc_fail "training job $j printed nothing"; done

echo "--- a busy GPU keeps its mode; the switch happens once the process is gone"
# Something outside any job holds a partition of each GPU open (a stray process, as the driver
# sees it): a job that needs another mode on n3 goes back to the queue (never cancelled) until the
# process is gone.
exec 7<"$VC_RUN/devroot/n3/dev/dri/renderD128" 8<"$VC_RUN/devroot/n3/dev/dri/renderD136"
before0=$(mode_of $gpu0) before1=$(mode_of $gpu1)
q=$(vp_sbatch -p infer --gres=vgpu:qpx.48gb:2 "$job" 3)
sleep 6
[ "$(mode_of $gpu0)" = "$before0" ] && [ "$(mode_of $gpu1)" = "$before1" ] || vc_fail "a mode changed under an open render node"
exec 7<&- 8<&-
vc_wait_job "$q" PENDING 30 || vc_fail "qpx job $q was not requeued: $(vc_job_state "$q")"
vp_wait_done "$q" 120 || vc_fail "qpx job $q did not finish once the GPUs were free"
grep -q "PROFILES=qpx.48gb,qpx.48gb " "$VC_RUN/out/$q.out" || vc_fail "the requeued job ran without its partitions: $(cat "$VC_RUN/out/$q.out")"
vp_assert_completed "$q"
grep -q QPX <(mode_of $gpu0; mode_of $gpu1) || vc_fail "no GPU in QPX after the qpx job: $(mode_of $gpu0) $(mode_of $gpu1)"
grep -q "requeued: .*Device or resource busy" "$VC_RUN"/log/prolog.n3.log ||
  vc_fail "the prolog did not requeue the job while the GPUs were busy"
grep -h "requeued: .*Device or resource busy" "$VC_RUN"/log/prolog.n3.log | head -1

echo "--- requests by need: each model realizes the class as its smallest sufficient profile"
"$VP_VGPUCTL" catalog --policy "$VC_RUN/etc/vgpu-policy.json" | sed -n '/^classes/,$p'
declare -A want_small=([n1]=1g.10gb [n2]=1g.10gb [n3]=cpx.24gb) want_medium=([n1]=2g.20gb [n2]=3g.20gb [n3]=qpx.48gb)
# ... and what the job is told it got: model, memory (MiB) and compute share of each instance.
declare -A got_small=([n1]="MODEL=H100-80GB MEMORY=9984,9984 COMPUTE=1/7,1/7" [n2]="MODEL=A100-40GB MEMORY=9856,9856 COMPUTE=1/7,1/7"
                      [n3]="MODEL=MI300X-192GB MEMORY=24576,24576 COMPUTE=1/8,1/8")
jobs=()
for n in n1 n2 n3; do
  # Steered with -x, not -w: Slurm refuses -w for a type the node has never advertised, while
  # the other nodes left out still let the FUTURE placeholder vouch for the request.
  others=$(echo n1 n2 n3 | tr ' ' '\n' | grep -vx "$n" | paste -sd,)
  s=$(vp_sbatch -p infer -x "$others" --gres=vgpu:small:2 "$job" 8)
  m=$(vp_sbatch -p infer -x "$others" --gres=vgpu:medium:1 "$job" 8)
  jobs+=("$s" "$m")
  for j in $s $m; do vp_wait_started "$j" 60 || vc_fail "class job $j on $n did not start: $(squeue -h -j "$j" -o '%r')"; done
  grep -q "PROFILES=${want_small[$n]},${want_small[$n]} " "$VC_RUN/out/$s.out" ||
    vc_fail "small on $n should be ${want_small[$n]}: $(cat "$VC_RUN/out/$s.out")"
  grep -q "${got_small[$n]} " "$VC_RUN/out/$s.out" || vc_fail "small on $n: want '${got_small[$n]}': $(cat "$VC_RUN/out/$s.out")"
  grep -q "PROFILES=${want_medium[$n]} " "$VC_RUN/out/$m.out" ||
    vc_fail "medium on $n should be ${want_medium[$n]}: $(cat "$VC_RUN/out/$m.out")"
  vp_assert_sees_own "$s"
  # The admin's tools resolve the class from the node's ledger, without the policy.
  "$VP_VGPUCTL" job "$s" --state-dir "$VGPU_STATE_DIR" | grep -q "^$n GPU [0-9]  small  slice" ||
    vc_fail "vgpuctl job $s does not show its small instances: $("$VP_VGPUCTL" job "$s" --state-dir "$VGPU_STATE_DIR")"
  "$VP_VGPUCTL" status --state-dir "$VGPU_STATE_DIR" | grep -q "\[small" ||
    vc_fail "vgpuctl status draws no small instance: $(vp_status)"
  vc_log "$n: small -> ${want_small[$n]}, medium -> ${want_medium[$n]}"
done
for j in "${jobs[@]}"; do vp_wait_done "$j" 120 || vc_fail "class job $j did not finish"; done
vp_assert_completed "${jobs[@]}"
# large (80 GB) exists on H100 and MI300X only: a job for it never lands on the A100-40GB node.
l=$(vp_sbatch -p train --gres=vgpu:large:1 "$job" 2)
vp_wait_done "$l" 90 || vc_fail "large job $l did not finish"
vp_assert_completed "$l"
grep -q "NODE=n2" "$VC_RUN/out/$l.out" && vc_fail "large ran on the A100-40GB node"

echo "--- train -> infer -> train on both vendors, by class, without a drain"
phase() { # $1 class $2 count per job $3 jobs: all run, all complete
  local ids=() k
  for k in $(seq "$3"); do ids+=("$(vp_sbatch -p "$([ "$1" = large ] && echo train || echo infer)" -x n2 --gres=vgpu:$1:$2 "$job" 3)"); done
  for k in "${ids[@]}"; do vp_wait_done "$k" 120 || vc_fail "$1 job $k did not finish"; done
  vp_assert_completed "${ids[@]}"
  vc_log "$1 phase done; n3 modes: $(mode_of $gpu0) $(mode_of $gpu1)"
}
phase large 1 6
phase small 4 6
grep -q CPX <(mode_of $gpu0; mode_of $gpu1) || vc_fail "no MI300X went to CPX for the small phase"
phase large 1 6
grep -q DPX <(mode_of $gpu0; mode_of $gpu1) || vc_fail "no MI300X went to DPX for the large phase"

vp_check || vc_fail "inconsistent at the end"
sinfo -h -o '%n %T' | grep -Ev ' (idle|mixed|allocated)$' && vc_fail "a node left service"
vc_log "PASS mixed_vendors"
