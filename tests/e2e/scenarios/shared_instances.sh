#!/usr/bin/env bash
# Shares of one MIG instance (docs/shared-instances.md) on a real Slurm cluster, one node with two
# simulated H100s and the fake MPS control program (fakemps/): the policy's share type "quarter"
# (3g.40gb in 4) is advertised as 4 units per instance; two jobs of one user get the same instance
# through its MPS daemon, each capped at a quarter (what a client of the daemon gets, asked by the
# fake client from inside the job); a third share request for two shares is refused at submission;
# the last share's end quits the daemon and leaves the node consistent.
set -u
VC_NODES=n1
VP_INFER_PROFILES='["1g.10gb", "2g.20gb", "quarter"]'
VP_SHARE_TYPES='{"quarter": {"instance": "3g.40gb", "shares": 4}}'
VP_UNITS_PER_GPU=9  # two quarter instances (4 units each) and a 1g.10gb: docs/slurm.md's total
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
VC_PROFILES="$VC_PROFILES quarter"
vp_start
vp_check || vc_fail "inconsistent right after start"

cat > "$VC_RUN/etc/share-job.sh" <<JOB
#!/bin/bash
echo "CVD=\${CUDA_VISIBLE_DEVICES-<unset>} PIPE=\${CUDA_MPS_PIPE_DIRECTORY-<unset>} MEMORY=\${VGPU_MEMORY_MIB-<unset>}"
# What a CUDA process of the job gets from the instance's MPS daemon, and a client that tries to
# raise its own limits.
"$VP_SRC/fakemps/fake-mps-client" --alloc-mib 4096 --hold-s 1
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=70G "$VP_SRC/fakemps/fake-mps-client" --alloc-mib 20000
sleep "\${1:-6}"
JOB
chmod 755 "$VC_RUN/etc/share-job.sh"

out=$(sbatch -o /dev/null -p infer --gres=vgpu:quarter:2 --wrap true 2>&1) && vc_fail "two shares in one job were accepted: $out"
echo "$out" | grep -q "is a share of an instance" || vc_fail "refusal of two shares unclear: $out"

a=$(vp_sbatch -p infer --gres=vgpu:quarter:1 "$VC_RUN/etc/share-job.sh" 8)
b=$(vp_sbatch -p infer --gres=vgpu:quarter:1 "$VC_RUN/etc/share-job.sh" 8)
scontrol show job "$a" | grep -q -E '(OverSubscribe|Exclusive)=USER' || vc_fail "a share job is not --exclusive=user"
vp_wait_running "$a" 90 || vc_fail "the first share did not start"
vp_wait_running "$b" 90 || vc_fail "the second share did not start"
sleep 3
vp_status
gres=$(scontrol show node n1 | grep -o 'Gres=[^ ]*')
echo "$gres" | grep -q 'vgpu:quarter:4' || vc_fail "one instance of four shares is not 4 units to Slurm: $gres"
. "$VC_RUN/etc/vgpu-env/n1.sh"
[ "$(ls "$VGPU_MPS_ROOT" 2>/dev/null | grep -c '^MIG-')" = 1 ] || vc_fail "expected one MPS daemon, found: $(ls "$VGPU_MPS_ROOT" 2>&1)"

vp_wait_done "$a" 60 && vp_wait_done "$b" 60 || vc_fail "the share jobs did not finish"
vp_assert_completed "$a" "$b"
for j in "$a" "$b"; do
  o=$VC_RUN/out/$j.out
  grep -q '^CVD=MIG-.* PIPE=/.*/pipe MEMORY=10112$' "$o" || vc_fail "job $j's environment: $(head -1 "$o")"
  grep -q '"mps": true.*"thread_percentage": 25.0.*"memory_limit_mib": 10112.*"alloc": "ok"' "$o" ||
    vc_fail "job $j did not get a quarter through MPS: $(cat "$o")"
  grep -q '"thread_percentage": 25.0.*"memory_limit_mib": 10112.*"alloc": "out of memory"' "$o" ||
    vc_fail "job $j raised its limits: $(cat "$o")"
done
[ "$(head -1 "$VC_RUN/out/$a.out" | cut -d' ' -f1)" = "$(head -1 "$VC_RUN/out/$b.out" | cut -d' ' -f1)" ] ||
  vc_fail "one user's two shares are on different instances: $(head -1 "$VC_RUN/out/$a.out") / $(head -1 "$VC_RUN/out/$b.out")"
for _ in $(seq 50); do [ -z "$(ls "$VGPU_MPS_ROOT" 2>/dev/null)" ] && break; sleep 0.2; done
[ -z "$(ls "$VGPU_MPS_ROOT" 2>/dev/null)" ] || vc_fail "the MPS daemon outlived the last share: $(ls "$VGPU_MPS_ROOT")"
vp_check || vc_fail "inconsistent after the shares ended"
vc_log "PASS shared_instances"
