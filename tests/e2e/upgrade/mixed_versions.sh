#!/usr/bin/env bash
# An upgrade in Slurm's order (slurmctld first, then each slurmd) with a vgpu job running through
# it: the cluster starts on the older release (VC_SLURM_PREFIX, its gres_vgpu.so in VC_PLUGIN_DIR),
# slurmctld is restarted as the newer one (VC_NEW_PREFIX, VC_NEW_PLUGIN_DIR) while the slurmds stay
# old, as Slurm allows, then the job's node's slurmd is upgraded too. Each daemon loads the
# gres_vgpu.so of its own version from the shared PluginDir. The job keeps its instance throughout,
# vgpu jobs run on the mixed cluster (the newer slurmctld takes the older slurmd's splits), nothing
# drains and every node ends consistent. Registered where both releases' daemons are built
# (tests/CMakeLists.txt; scripts/test-releases.sh builds them).
set -u
export VC_NODES="n1 n2"
: "${VC_NEW_PREFIX:?the newer release's prefix (scripts/build-slurm.sh)}"
: "${VC_NEW_PLUGIN_DIR:?the newer release's gres_vgpu.so directory}"
export VC_EXTRA_PLUGIN_DIRS=$VC_NEW_PLUGIN_DIR:$VC_NEW_PREFIX/lib/slurm
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
old=$(slurmctld -V | awk '{print $2}')
new=$("$VC_NEW_PREFIX/sbin/slurmctld" -V | awk '{print $2}')
[ "$old" != "$new" ] || vc_fail "VC_NEW_PREFIX is the same release as the cluster's ($old)"
versions() { scontrol show node "$1" | sed -n 's/.*Version=\([^ ]*\).*/\1/p'; }

vp_start
cat > "$VC_RUN/etc/long.sh" <<'JOB'
#!/bin/bash
echo "CVD=$CUDA_VISIBLE_DEVICES NODE=$SLURMD_NODENAME"
for _ in $(seq 900); do [ -e "$1" ] && break; sleep 0.2; done
JOB
chmod 755 "$VC_RUN/etc/long.sh"
long=$(vp_sbatch -p train --gres=vgpu:3g.40gb:1 "$VC_RUN/etc/long.sh" "$VC_RUN/out/release-long")
vp_wait_started "$long" 90 || vc_fail "job $long did not start on $old"
node=$(squeue -h -j "$long" -o %N)
uuid=$(vp_ledger_uuids "$node" "$long")
[ -n "$uuid" ] || vc_fail "job $long holds no instance on $node"
vc_log "job $long runs on $node ($uuid), every daemon on $old"

echo "--- slurmctld upgraded to $new; the slurmds stay on $old"
vc_ctld_stop 90
VC_CTLD_BIN=$VC_NEW_PREFIX/sbin/slurmctld vc_ctld_start || vc_fail "slurmctld $new did not start on $old's state"
scontrol show config | grep -q "SLURM_VERSION *= *$new" || vc_fail "slurmctld is not $new"
# A restarted slurmctld knows a node's version once its slurmd registers again.
for _ in $(seq 60); do [ -n "$(versions "$node")" ] && break; sleep 1; done
[ "$(versions "$node")" = "$old" ] || vc_fail "$node's slurmd reports '$(versions "$node")', not $old"
vc_wait_job "$long" RUNNING 30 || vc_fail "job $long is not running after the controller upgrade"
mixed=$(vp_sbatch -p infer --gres=vgpu:1g.10gb:2 "$(vp_job_script 2)")
vp_wait_done "$mixed" 120 || vc_fail "job $mixed did not run on the mixed cluster"
vp_assert_completed "$mixed"

echo "--- $node's slurmd upgraded to $new with job $long on it"
vc_slurmd_stop "$node"
VC_SLURMD_BIN=$VC_NEW_PREFIX/sbin/slurmd vc_slurmd_start "$node" || vc_fail "slurmd $new did not start on $node"
for _ in $(seq 60); do [ "$(versions "$node")" = "$new" ] && break; sleep 1; done
[ "$(versions "$node")" = "$new" ] || vc_fail "$node reports $(versions "$node") after its upgrade"
vc_wait_job "$long" RUNNING 30 || vc_fail "job $long did not survive its slurmd's upgrade"
[ "$(vp_ledger_uuids "$node" "$long")" = "$uuid" ] || vc_fail "job $long lost $uuid in the upgrade"
after=$(vp_sbatch -p train --gres=vgpu:3g.40gb:1 "$(vp_job_script 2)")
vp_wait_done "$after" 120 || vc_fail "job $after did not run after the upgrade"
vp_assert_completed "$after"
touch "$VC_RUN/out/release-long"
vp_wait_done "$long" 60
vp_assert_completed "$long"
vp_check || vc_fail "not consistent after the upgrade"
echo "PASS mixed_versions ($old -> $new)"
