#!/usr/bin/env bash
# A valid profile that no node advertises yet is accepted (the FUTURE placeholder declares every
# profile) and pends; it starts as soon as a node advertises it.
set -u
. "$(dirname "$0")/../lib.sh"
trap 'vc_finish $?' EXIT
vc_start

j=$(vc_sbatch --gres=vgpu:3g.40gb:1 --wrap 'echo ran on $SLURMD_NODENAME') || vc_fail "valid profile at 0 was refused"
sleep 2
[ "$(vc_job_state "$j")" = PENDING ] || vc_fail "job $j is $(vc_job_state "$j"), expected PENDING"
vc_assert_no_bad_nodes

start=$(date +%s.%N)
vc_advertise n2 1 "3g.40gb=1" || vc_fail "n2 advertisement not adopted"
vc_wait_job "$j" 'RUNNING|COMPLETED' 30 || vc_fail "job $j did not start after the advertisement"
echo "advertise+SIGHUP -> job running: $(echo "$(date +%s.%N) - $start" | bc) s"
vc_wait_job "$j" COMPLETED 30 || vc_fail "job $j did not complete"
grep -q 'ran on n2' "$VC_RUN/out/job-$j.out" || vc_fail "job $j ran elsewhere: $(cat "$VC_RUN/out/job-$j.out")"
vc_assert_no_bad_nodes
echo PASS
