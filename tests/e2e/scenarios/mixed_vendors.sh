#!/usr/bin/env bash
# One cluster, three GPU models, two vendors: n1 has two H100-80GB, n2 one A100-40GB (both through
# the fake NVML), n3 two AMD MI300X behind the fake amdgpu driver (sysfs over FUSE). Jobs land on
# each; n3's GPUs change compute-partition mode as the jobs ask (SPX -> CPX -> SPX) without a
# drain; an AMD job is given exactly its partitions (ROCR_VISIBLE_DEVICES, its render nodes) and a
# mode change waits while a process still uses the GPU.
set -u
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
export VP_KIND_n2=a100 VP_KIND_n3=mi300x
VC_NODES="n1 n2 n3"
VP_INFER_PROFILES=${VP_INFER_PROFILES:-'{"H100-80GB": ["1g.10gb", "2g.20gb"], "A100-40GB": ["1g.5gb", "2g.10gb"], "MI300X-192GB": ["cpx.24gb", "qpx.48gb"]}'}
VP_TRAIN_PROFILES=${VP_TRAIN_PROFILES:-'{"H100-80GB": ["7g.80gb"], "A100-40GB": ["7g.40gb"], "MI300X-192GB": ["spx.192gb", "dpx.96gb"]}'}
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
# Slurm holds a requeued job for about two minutes before it may start again; the test does not wait.
vc_wait_job "$q" PENDING 30 || vc_fail "qpx job $q was not requeued: $(vc_job_state "$q")"
scontrol update JobId="$q" StartTime=now
vp_wait_done "$q" 120 || vc_fail "qpx job $q did not finish once the GPUs were free"
vp_assert_completed "$q"
grep -q QPX <(mode_of $gpu0; mode_of $gpu1) || vc_fail "no GPU in QPX after the qpx job: $(mode_of $gpu0) $(mode_of $gpu1)"
grep -q "requeued: .*Device or resource busy" "$VC_RUN"/log/prolog.n3.log ||
  vc_fail "the prolog did not requeue the job while the GPUs were busy"
grep -h "requeued: .*Device or resource busy" "$VC_RUN"/log/prolog.n3.log | head -1

vp_check || vc_fail "inconsistent at the end"
sinfo -h -o '%n %T' | grep -Ev ' (idle|mixed|allocated)$' && vc_fail "a node left service"
vc_log "PASS mixed_vendors"
