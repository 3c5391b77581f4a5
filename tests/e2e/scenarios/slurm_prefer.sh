#!/usr/bin/env bash
# What the trace twin's +prefer policies assume of Slurm (docs/benchmarks.md), on a real
# slurmctld, before anything of ours relies on it: a node's features can be changed with
# `scontrol update` and `scontrol reconfigure` restores slurm.conf's; a job that prefers a feature
# (sbatch --prefer) goes to a node that has it although CPU best-fit picks another, and starts
# elsewhere when no such node can take it; a preference no node has is refused at submission,
# which is the constraint any design of node features must meet, unless a node that is never
# scheduled (State=FUTURE) holds the feature. No vgpu code is involved beyond the cluster itself.
set -u
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
vp_start
job=$(vp_job_script)
features_of() { scontrol -o show node "$1" | grep -o 'ActiveFeatures=[^ ]*' | cut -d= -f2; }
node_of() { grep -o 'NODE=.*' "$VC_RUN/out/$1.out" | cut -d= -f2; }

echo "--- a preference no node has is refused at submission"
refused=$(vp_sbatch -p infer -n1 --prefer=vgpu_nowhere "$job" 2 2>&1 | tail -1)
[ "$refused" = refused ] || vc_fail "a job preferring a feature no node has was accepted: $refused"

echo "--- a feature held only by a FUTURE node (never scheduled) makes the preference valid"
scontrol update NodeName=future AvailableFeatures=vgpu_anchor ActiveFeatures=vgpu_anchor ||
  vc_fail "scontrol update of the future node's features failed"
anchored=$(vp_sbatch -p infer -n1 --prefer=vgpu_anchor "$job" 2)
vp_wait_done "$anchored" 60 || vc_fail "job $anchored (preferring a FUTURE node's feature) did not end"
[ "$(node_of "$anchored")" = n1 ] || vc_fail "job $anchored ran on $(node_of "$anchored"), expected n1"

echo "--- scontrol sets a node's features"
scontrol update NodeName=n3 AvailableFeatures=vgpu_in_use ActiveFeatures=vgpu_in_use ||
  vc_fail "scontrol update of n3's features failed"
[ "$(features_of n3)" = vgpu_in_use ] || vc_fail "n3's features: $(features_of n3)"

echo "--- without a preference CPU best-fit picks n1; preferring the feature picks n3"
plain=$(vp_sbatch -p infer -n1 "$job" 2)
vp_wait_done "$plain" 60 || vc_fail "job $plain did not end"
[ "$(node_of "$plain")" = n1 ] || vc_fail "job $plain ran on $(node_of "$plain"), expected n1 (all alike: the first)"
preferring=$(vp_sbatch -p infer -n1 --prefer=vgpu_in_use "$job" 2)
vp_wait_done "$preferring" 60 || vc_fail "job $preferring did not end"
[ "$(node_of "$preferring")" = n3 ] || vc_fail "job $preferring ran on $(node_of "$preferring"), not on n3"

echo "--- with n3 full the preferring job starts elsewhere at once"
hold=$(vp_sbatch -p infer -w n3 -n2 "$job" 120)
vp_wait_started "$hold" 60 || vc_fail "job $hold did not start on n3"
fallback=$(vp_sbatch -p infer -n1 --prefer=vgpu_in_use "$job" 2)
vp_wait_done "$fallback" 60 || vc_fail "job $fallback waited for its preferred node"
[ "$(node_of "$fallback")" != n3 ] || vc_fail "job $fallback ran on n3, which was full"
scancel "$hold"
vp_wait_done "$hold" 60 || vc_fail "job $hold did not end"

echo "--- scontrol reconfigure restores slurm.conf's features"
vc_reconfigure
[ "$(features_of n3)" = "(null)" ] || vc_fail "n3 kept $(features_of n3) across reconfigure"
vp_check || vc_fail "inconsistent at the end"
vc_log "PASS slurm_prefer"
