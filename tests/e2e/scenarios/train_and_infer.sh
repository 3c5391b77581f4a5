#!/usr/bin/env bash
# Training (7g.80gb), inference (1g.10gb x4) and a mixed concurrent batch on three nodes with two
# simulated H100s each. Every job sees exactly its own instances; afterwards nothing is leaked and
# ledger, hardware, advertisement and Slurm agree on every node.
set -u
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
vp_start
vp_check || vc_fail "inconsistent right after start"
job=$(vp_job_script)

train=$(vp_sbatch -p train --gres=vgpu:7g.80gb:1 "$job" 6)
infer=$(vp_sbatch -p infer --gres=vgpu:1g.10gb:4 "$job" 6)
vp_wait_running "$train" 60 || vc_fail "the training job did not start"
vp_wait_running "$infer" 60 || vc_fail "the inference job did not start"
vp_assert_sees_own "$train"
vp_assert_sees_own "$infer"
vp_status
vp_wait_done "$train" 60 && vp_wait_done "$infer" 60 || vc_fail "jobs did not finish"
vp_assert_completed "$train" "$infer"

batch=()
for g in 3g.40gb:1 4g.40gb:1 7g.80gb:1 3g.40gb:2; do batch+=("$(vp_sbatch -p train --gres=vgpu:$g "$job" 3)"); done
for g in 1g.10gb:2 2g.20gb:1 1g.20gb:1 1g.10gb:7 2g.20gb:3 1g.10gb:1; do batch+=("$(vp_sbatch -p infer --gres=vgpu:$g "$job" 3)"); done
for j in "${batch[@]}"; do vp_wait_done "$j" 120 || vc_fail "batch job $j did not finish"; done
vp_assert_completed "${batch[@]}"
for j in "${batch[@]}"; do grep -q '^CVD=MIG-' "$VC_RUN/out/$j.out" || vc_fail "job $j saw no MIG device: $(cat "$VC_RUN/out/$j.out")"; done

vp_assert_no_instances
vp_check || vc_fail "inconsistent after the batch"
vc_log "PASS train_and_infer"
