#!/usr/bin/env bash
# gres/vgpu loads in slurmd and slurmctld; each node reports its own advertisement padded to the
# constant total; a missing or corrupt advertisement reports everything "free" with a clear error
# and never drains the node.
set -u
. "$(dirname "$0")/../lib.sh"
trap 'vc_finish $?' EXIT

vc_init
vc_write_advertisement n1 1 "1g.10gb=7 3g.40gb=1"
printf '{"format":"slurm-vgpu-advertisement","version":1,"node":"n2","generation":1,"counts":{"3g.40gb":"x"}}' \
  > "$VGPU_STATE_DIR/n2/advertisement.json"
# n3 has no advertisement at all.
vc_start

for n in $VC_NODES; do
  grep -q 'gres/vgpu: loaded in slurmd' "$VC_RUN/log/slurmd.$n.log" || vc_fail "plugin not loaded in slurmd $n"
done
grep -q 'gres/vgpu: loaded in slurmctld' "$VC_RUN/log/slurmctld.log" || vc_fail "plugin not loaded in slurmctld"
grep -q 'Incompatible Slurm plugin' "$VC_RUN"/log/*.log && vc_fail "a daemon refused the plugin version"

vc_assert_gres n1 "1g.10gb=7 3g.40gb=1" 10
vc_assert_gres n2 "" 10
vc_assert_gres n3 "" 10
grep -q "advertisement.json: counts '3g.40gb': count must be a non-negative integer" "$VC_RUN/log/slurmd.n2.log" \
  || vc_fail "n2's log does not name the corrupt field"
grep -q 'advertisement.json: no such file' "$VC_RUN/log/slurmd.n3.log" || vc_fail "n3's log does not name the missing file"
vc_assert_no_bad_nodes

# Only n1 can serve 1g.10gb: the job must run there.
j=$(vc_sbatch --gres=vgpu:1g.10gb:2 --wrap 'echo ran on $SLURMD_NODENAME') || vc_fail "sbatch refused"
vc_wait_job "$j" COMPLETED 30 || vc_fail "job $j did not complete"
grep -q 'ran on n1' "$VC_RUN/out/job-$j.out" || vc_fail "job $j did not run on n1: $(cat "$VC_RUN/out/job-$j.out")"
vc_assert_no_bad_nodes
echo PASS
