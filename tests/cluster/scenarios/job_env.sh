#!/usr/bin/env bash
# Prolog/Epilog see VGPU_ALLOC=<type>:<n>[,...]; a job whose jobs/<id>.json exists sees exactly its
# instances in CUDA_VISIBLE_DEVICES / VGPU_PROFILES / VGPU_INSTANCES / VGPU_PLACEMENT (batch step and
# srun steps; the stand-in writes a version 1 record, as the release before did, so the placement
# names GPUs only);
# a job without a record gets nothing; an unreadable record hides every GPU.
# The real prolog comes later: a stand-in writes the record from VGPU_ALLOC.
set -u
. "$(dirname "$0")/../lib.sh"
trap 'vc_finish $?' EXIT
vc_init

OUT=$VC_RUN/out
cat > "$VC_RUN/etc/hooks/prolog.sh" <<HOOK
#!/bin/bash
env | sort > "$OUT/prolog.\$SLURM_JOB_ID.\$SLURMD_NODENAME"
rec="$VGPU_STATE_DIR/\$SLURMD_NODENAME/jobs/\$SLURM_JOB_ID.json"
[ -n "\${VGPU_ALLOC:-}" ] || exit 0
if [ -e "$OUT/corrupt-next" ]; then rm -f "$OUT/corrupt-next"; echo '{"format":"slurm-vgpu-job"' > "\$rec"; exit 0; fi
items="" i=0
for a in \$(echo "\$VGPU_ALLOC" | tr ',' ' '); do
  for _ in \$(seq "\${a##*:}"); do
    items="\$items\${items:+,}{\"profile\":\"\${a%%:*}\",\"mig_uuid\":\"MIG-test-\$SLURM_JOB_ID-\$i\",\"gpu\":0}"
    i=\$((i + 1))
  done
done
printf '{"format":"slurm-vgpu-job","version":1,"job_id":%s,"instances":[%s]}\n' "\$SLURM_JOB_ID" "\$items" > "\$rec.tmp"
mv "\$rec.tmp" "\$rec"
HOOK
cat > "$VC_RUN/etc/hooks/epilog.sh" <<HOOK
#!/bin/bash
env | sort > "$OUT/epilog.\$SLURM_JOB_ID.\$SLURMD_NODENAME"
rm -f "$VGPU_STATE_DIR/\$SLURMD_NODENAME/jobs/\$SLURM_JOB_ID.json"
HOOK
chmod 755 "$VC_RUN"/etc/hooks/*.sh
cat > "$VC_RUN/etc/showenv.sh" <<'JOB'
#!/bin/bash
show() { echo "$1 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>} VGPU_PROFILES=${VGPU_PROFILES-<unset>} VGPU_INSTANCES=${VGPU_INSTANCES-<unset>} VGPU_PLACEMENT=${VGPU_PLACEMENT-<unset>}"; }
show batch
srun bash -c "$(declare -f show); show step"
JOB
chmod 755 "$VC_RUN/etc/showenv.sh"
export VC_PROLOG=$VC_RUN/etc/hooks/prolog.sh VC_EPILOG=$VC_RUN/etc/hooks/epilog.sh

vc_write_advertisement n1 1 "1g.10gb=4 3g.40gb=1"
vc_write_advertisement n2 1 "1g.10gb=1 7g.80gb=1"
vc_start

run_job() { # args: sbatch options; prints the job id once it completed
  local j
  j=$(vc_sbatch -w n1 "$@" "$VC_RUN/etc/showenv.sh") || vc_fail "sbatch $* refused"
  vc_wait_job "$j" COMPLETED 30 || vc_fail "job $j ($*) did not complete: $(cat "$OUT/job-$j.out" 2>/dev/null)"
  echo "$j"
}
expect_line() { # $1 job $2 exact line
  grep -qxF "$2" "$OUT/job-$1.out" || vc_fail "job $1 output lacks '$2': $(cat "$OUT/job-$1.out")"
}

j=$(run_job --gres=vgpu:1g.10gb:2,vgpu:3g.40gb:1)
alloc=$(sed -n 's/^VGPU_ALLOC=//p' "$OUT/prolog.$j.n1" | tr ',' '\n' | sort | tr '\n' ',')
[ "$alloc" = "1g.10gb:2,3g.40gb:1," ] || vc_fail "prolog VGPU_ALLOC is '$alloc'"
# The stand-in prolog numbers instances in VGPU_ALLOC order; the plugin must keep that order.
profiles=$(sed -n 's/^VGPU_ALLOC=//p' "$OUT/prolog.$j.n1" | tr ',' '\n' |
  while IFS=: read -r p c; do for _ in $(seq "$c"); do echo "$p"; done; done | paste -sd,)
for line in batch step; do
  expect_line "$j" "$line CUDA_VISIBLE_DEVICES=MIG-test-$j-0,MIG-test-$j-1,MIG-test-$j-2 VGPU_PROFILES=$profiles VGPU_INSTANCES=3 VGPU_PLACEMENT=0,0,0"
done
sleep 1
grep -q '^VGPU_ALLOC=.*3g.40gb:1' "$OUT/epilog.$j.n1" || vc_fail "epilog did not see VGPU_ALLOC"

j=$(run_job)
expect_line "$j" "batch CUDA_VISIBLE_DEVICES=<unset> VGPU_PROFILES=<unset> VGPU_INSTANCES=<unset> VGPU_PLACEMENT=<unset>"
grep -q '^VGPU_ALLOC=' "$OUT/prolog.$j.n1" && vc_fail "job without vgpu got VGPU_ALLOC in its prolog"

touch "$OUT/corrupt-next"
j=$(run_job --gres=vgpu:3g.40gb:1)
expect_line "$j" "batch CUDA_VISIBLE_DEVICES= VGPU_PROFILES= VGPU_INSTANCES=0 VGPU_PLACEMENT="
grep -q "jobs/$j.json: not valid JSON" "$VC_RUN/log/slurmd.n1.log" || vc_fail "corrupt record not reported in slurmd log"
vc_assert_no_bad_nodes
echo PASS
