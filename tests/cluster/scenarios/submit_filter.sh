#!/usr/bin/env bash
# Untyped and unknown-profile vgpu requests are refused at submission (job_submit/lua) with a
# message listing the partition's valid profiles; valid typed requests pass. An update that changes
# a pending job's request meets the same checks (the module's job_modify).
set -u
VC_SHARE_TYPES="quarter:user half:any"
VC_PER_JOB_LIMIT=4
. "$(dirname "$0")/../lib.sh"
trap 'vc_finish $?' EXIT
vc_start

expect_refused() { # $1 what, rest: sbatch args; the message must name the problem and list profiles
  local what=$1 out; shift
  out=$(sbatch -o /dev/null "$@" --wrap true 2>&1) && vc_fail "$what was accepted: $out"
  echo "$out" | grep -q "$what" || vc_fail "refusal does not say '$what': $out"
  echo "$out" | grep -q 'Valid profiles.*1g.10gb.*3g.40gb.*7g.80gb' || vc_fail "refusal lists no valid profiles: $out"
}
expect_refused "untyped request 'vgpu:2'" --gres=vgpu:2
expect_refused "unknown profile '9g.99gb' on partition main" --gres=vgpu:9g.99gb:1
expect_refused "unknown profile '9g.99gb' on partition main" -p main --gres=vgpu:1g.10gb:1,vgpu:9g.99gb:1
out=$(srun --gres=vgpu:9g.99gb:1 true 2>&1) && vc_fail "srun with unknown profile accepted"
echo "$out" | grep -q "unknown profile '9g.99gb'" || vc_fail "srun refusal unclear: $out"

j=$(vc_sbatch --gres=vgpu:1g.10gb:1 --wrap true) || vc_fail "valid typed request refused"
scancel "$j"

# The per-job cap counts every type of the job (4 here), and a type is named once.
out=$(sbatch -o /dev/null --gres=vgpu:1g.10gb:3,vgpu:3g.40gb:2 --wrap true 2>&1) && vc_fail "5 instances over a cap of 4 accepted: $out"
echo "$out" | grep -q "5 instances asked for per node; partition main allows 4 per job" || vc_fail "cap refusal unclear: $out"
j=$(vc_sbatch --gres=vgpu:1g.10gb:2,vgpu:3g.40gb:2 --wrap true) || vc_fail "4 instances under a cap of 4 refused"
scancel "$j"
# Slurm may refuse a repeated type itself; if it passes it on, the filter refuses it.
out=$(sbatch -o /dev/null --gres=vgpu:1g.10gb:1,vgpu:1g.10gb:2 --wrap true 2>&1) && vc_fail "a repeated type was accepted: $out"
echo "$out" | grep -q "vgpu: .*" && ! echo "$out" | grep -q "is asked for more than once" && vc_fail "repeated-type refusal unclear: $out"

# A share is asked alone, one per node; one user's by default (Slurm counts shares, not whose).
expect_share_refused() { # sbatch args
  local out
  out=$(sbatch -o /dev/null "$@" --wrap true 2>&1) && vc_fail "share request $* was accepted: $out"
  echo "$out" | grep -q "is a share of an instance: a job asks for one share per node" ||
    vc_fail "share refusal of $* unclear: $out"
}
expect_share_refused --gres=vgpu:quarter:2
expect_share_refused --gres=vgpu:quarter:1,vgpu:1g.10gb:1
# Slurm 22.05 shows --exclusive=user as OverSubscribe=USER, later releases as Exclusive=USER.
share_mode() { scontrol show job "$1" | grep -o -E '(OverSubscribe|Exclusive)=[A-Z]*' | tr '\n' ' '; }
j=$(vc_sbatch --gres=vgpu:quarter:1 --wrap true) || vc_fail "one share refused"
share_mode "$j" | grep -q -E '(OverSubscribe|Exclusive)=USER' || vc_fail "a one-user share job is not --exclusive=user: $(share_mode "$j")"
scancel "$j"
plain=$(vc_sbatch --gres=vgpu:1g.10gb:1 --wrap true) || vc_fail "valid typed request refused"
j=$(vc_sbatch --exclusive --gres=vgpu:quarter:1 --wrap true) || vc_fail "one share with --exclusive refused"
[ "$(share_mode "$j")" != "$(share_mode "$plain")" ] && ! share_mode "$j" | grep -q USER ||
  vc_fail "--exclusive was weakened: $(share_mode "$j") (a plain job: $(share_mode "$plain"))"
scancel "$j" "$plain"
j=$(vc_sbatch --gres=vgpu:half:1 --wrap true) || vc_fail "one share across users refused"
! share_mode "$j" | grep -q USER || vc_fail "a share across users was made --exclusive=user: $(share_mode "$j")"
scancel "$j"
# An update of a pending job's request: refused to an unknown profile (the job keeps its request),
# accepted to a valid one; an update that touches no request is never refused.
tres() { scontrol show job "$1" | grep -o 'TresPerNode=[^ ]*'; }
j=$(vc_sbatch --hold --gres=vgpu:1g.10gb:1 --wrap true) || vc_fail "held valid job refused"
out=$(scontrol update jobid="$j" gres=vgpu:9g.99gb:1 2>&1) && vc_fail "update to an unknown profile accepted: $out"
tres "$j" | grep -q 'vgpu:1g.10gb' || vc_fail "a refused update changed the request: $(tres "$j")"
out=$(scontrol update jobid="$j" gres=vgpu:3g.40gb:1 2>&1) || vc_fail "update to a valid profile refused: $out"
tres "$j" | grep -q 'vgpu:3g.40gb' || vc_fail "an accepted update did not change the request: $(tres "$j")"
out=$(scontrol update jobid="$j" comment=kept 2>&1) || vc_fail "an update of another field refused: $out"
scancel "$j"
j=$(vc_sbatch --wrap true) || vc_fail "job without vgpu refused"
vc_wait_job "$j" COMPLETED 30 || vc_fail "plain job did not complete"
vc_assert_no_bad_nodes
echo PASS
