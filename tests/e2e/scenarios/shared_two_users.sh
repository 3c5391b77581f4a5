#!/usr/bin/env bash
# Shared instances and two unprivileged users on a real Slurm cluster (docs/shared-instances.md,
# docs/security.md), two nodes with two simulated H100s each, the policy's share type "quarter"
# (3g.40gb in 4) offered in two partitions:
# - "infer" keeps the default, one user per shared instance: a share job gets --exclusive=user, so
#   while user A's share runs on one node, user B's share goes to the other, never into A's instance;
# - "train" sets share_across_users: B's share joins A's instance, and both users' processes
#   can open the instance's capability files (A owns them, B reads them through their ACL) while
#   nobody else can; when B's job ends B cannot open them any more and A's job keeps its instance;
#   the last share's end gives the files back to root with no ACL left.
# Jobs reach their instance through fake-cuda-probe, which opens the capability files as the CUDA
# driver does, as the job's user.
set -u
VC_NODES="n1 n2"
VP_INFER_PROFILES='["1g.10gb", "2g.20gb", "quarter"]'
VP_TRAIN_PROFILES='["3g.40gb", "quarter"]'
VP_SHARE_TYPES='{"quarter": {"instance": "3g.40gb", "shares": 4}}'
VP_SHARE_ACROSS_USERS=train
VP_UNITS_PER_GPU=9  # two quarter instances (4 units each) and a 1g.10gb: docs/slurm.md's total
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
VC_PROFILES="$VC_PROFILES quarter"
USER_A=nobody
USER_B=$VP_USER_B
vp_second_user
PROBE=$VP_BIN/fakenvml/fake-cuda-probe
submit() { # $1 user, then sbatch arguments: prints the job id
  local u=$1 id; shift
  id=$(vp_as_user "$u" sbatch --parsable -o "$VC_RUN/out/%j.out" "$@" | cut -d';' -f1)
  [ -n "$id" ] && echo "$id"
}
# Submits a share job of user $1 released by the file $2 (sbatch arguments after them) and waits
# until it uses its instance: sets JOB and OWN (the job's OWN line).
start_share() {
  local u=$1 release=$2
  shift 2
  JOB=$(submit "$u" "$@" "$VC_RUN/etc/share-tenant.sh" "$release") || vc_fail "$u's share was refused at submission: $*"
  OWN=$(vp_line_of "$JOB" OWN)
  echo "$OWN" | grep -q ': usable (' || vc_fail "$u cannot use its share: $OWN"
}
node_of() { echo "$1" | sed -n 's/.* NODE=\([^ ]*\) .*/\1/p'; }
uuid_of() { echo "$1" | sed -n 's/.*CVD=\([^ ]*\).*/\1/p'; }
caps_of() { # the two capability files a probe line names
  echo "$1" | sed -n 's/.*usable (gpu [0-9]* gi [0-9]* ci [0-9]*: \([^ ]*\) \([^)]*\)).*/\1 \2/p'
}
opens() { runuser -u "$1" -- cat "$2" >/dev/null 2>&1; }
has_acl() { python3 -c 'import os,sys; sys.exit(0 if "system.posix_acl_access" in os.listxattr(sys.argv[1]) else 1)' "$1"; }

vp_start
vp_check || vc_fail "inconsistent right after start"

# Every job: its instance through the probe, then it waits for its release file $1 (at most two
# minutes), then the probe again.
cat > "$VC_RUN/etc/share-tenant.sh" <<JOB
#!/bin/bash
. "$VC_RUN/etc/vgpu-env/\$SLURMD_NODENAME.sh"
echo "OWN \$(id -un) NODE=\$SLURMD_NODENAME CVD=\$CUDA_VISIBLE_DEVICES \$("$PROBE" 2>&1)"
for _ in \$(seq 600); do [ -e "\$1" ] && break; sleep 0.2; done
echo "AGAIN \$("$PROBE" 2>&1)"
JOB
chmod 755 "$VC_RUN/etc/share-tenant.sh"

echo "--- one user per shared instance (partition infer): B's share goes to the other node"
# A node's share type has no unit before a share is asked for there, so Slurm would refuse a
# share pinned to a node (-w) at submission: the first share of each part goes where Slurm sends it.
start_share "$USER_A" "$VC_RUN/out/release-a" -p infer --gres=vgpu:quarter:1
a=$JOB own_a=$OWN node_a=$(node_of "$OWN")
start_share "$USER_B" "$VC_RUN/out/release-b" -p infer --gres=vgpu:quarter:1
b=$JOB own_b=$OWN
[ "$(node_of "$own_b")" != "$node_a" ] || vc_fail "B's share runs on $node_a beside A's: $own_b"
vp_wait_running "$a" 5 || vc_fail "A's job stopped while B's started"
touch "$VC_RUN/out/release-a" "$VC_RUN/out/release-b"
vp_wait_done "$a" 60 && vp_wait_done "$b" 60 || vc_fail "the first two share jobs did not finish"
vp_assert_completed "$a" "$b"

# Several users of one instance need POSIX ACLs where the capability files live (here the run
# directory; /dev on a real node): without them the node refuses such a share with the reason.
if ! python3 - "$VC_RUN" <<'PY'
import os, struct, sys, tempfile
with tempfile.NamedTemporaryFile(dir=sys.argv[1]) as f:
    entry = lambda tag, perm, id_: struct.pack("<HHI", tag, perm, id_)
    acl = struct.pack("<I", 2) + entry(1, 4, 0xffffffff) + entry(4, 0, 0xffffffff) + entry(0x20, 0, 0xffffffff)
    try:
        os.setxattr(f.name, "system.posix_acl_access", acl)
    except OSError:
        sys.exit(1)
PY
then
  echo "SKIPPED: shares across users: the file system of $VC_RUN takes no POSIX ACLs"
  vp_check || vc_fail "node state inconsistent"
  vc_log "PASS shared_two_users (one user per instance only)"
  exit 0
fi
echo "--- shares across users (partition train): B joins A's instance, both can open it, nobody else"
start_share "$USER_A" "$VC_RUN/out/release-a2" -p train --gres=vgpu:quarter:1
a=$JOB own_a=$OWN node_a=$(node_of "$OWN")
# A planner that shrank the node's quarter units while Slurm allocated A's share (the two cross on
# 26.05, where slurmctld takes a split below what it has allocated) counts them again next round,
# once the prolog's claim is in its ledger: B's share pinned there waits for that.
for _ in $(seq 100); do scontrol show node "$node_a" | grep -q 'Gres=.*vgpu:quarter:[1-9]' && break; sleep 0.2; done
scontrol show node "$node_a" | grep -q 'Gres=.*vgpu:quarter:[1-9]' ||
  vc_fail "$node_a holds A's share but Slurm counts no quarter unit there: $(scontrol show node "$node_a" | grep -o 'Gres=[^ ]*')"
start_share "$USER_B" "$VC_RUN/out/release-b2" -p train -w "$node_a" --gres=vgpu:quarter:1
b=$JOB own_b=$OWN
[ "$(uuid_of "$own_a")" = "$(uuid_of "$own_b")" ] || vc_fail "B's share is not in A's instance: $own_a / $own_b"
read -r gi_cap ci_cap < <(caps_of "$own_a")
[ -n "$gi_cap" ] && [ -n "$ci_cap" ] || vc_fail "cannot read the instance's capability files from: $own_a"
for f in "$gi_cap" "$ci_cap"; do
  [ "$(stat -c '%U %a' "$f")" = "$USER_A 440" ] || vc_fail "$f is '$(stat -c '%U %a' "$f")', expected '$USER_A 440'"
  has_acl "$f" || vc_fail "$f has no access ACL naming B"
  opens "$USER_B" "$f" || vc_fail "B cannot open $f while it holds a share"
  opens daemon "$f" && vc_fail "a user holding no share (daemon) opened $f"
done

echo "--- B's job ends: B loses the instance, A keeps it"
touch "$VC_RUN/out/release-b2"
vp_wait_done "$b" 60 || vc_fail "B's job did not finish"
vp_line_of "$b" AGAIN | grep -q ': usable (' || vc_fail "B lost the instance while its job ran: $(vp_line_of "$b" AGAIN)"
for f in "$gi_cap" "$ci_cap"; do
  opens "$USER_B" "$f" && vc_fail "B can still open $f after its job ended ($(stat -c '%U %a' "$f"))"
  [ "$(stat -c '%U %a' "$f")" = "$USER_A 400" ] || vc_fail "after B left $f is '$(stat -c '%U %a' "$f")'"
done
touch "$VC_RUN/out/release-a2"
vp_wait_done "$a" 60 || vc_fail "A's job did not finish"
vp_line_of "$a" AGAIN | grep -q ': usable (' || vc_fail "A lost its instance when B left: $(vp_line_of "$a" AGAIN)"
vp_assert_completed "$a" "$b"
for f in "$gi_cap" "$ci_cap"; do
  [ "$(stat -c '%U %a' "$f")" = "root 400" ] || vc_fail "after the last share $f is '$(stat -c '%U %a' "$f")'"
  has_acl "$f" && vc_fail "$f kept an ACL after the last share"
done
vp_check || vc_fail "node state inconsistent after the shares ended"
vc_log "PASS shared_two_users"
