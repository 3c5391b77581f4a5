# shellcheck shell=bash
# slurm-vgpu end to end on a real local Slurm cluster: tests/cluster/lib.sh's daemons plus the
# product itself on every node: vgpu-prolog / vgpu-epilog as slurmd's Prolog/Epilog (PrologFlags=
# Alloc), one vgpu-planner daemon per node, and simulated GPUs through the fake libnvidia-ml.so.1
# (each node its own fixture and state file, so NVML calls from prolog, epilog, planner and jobs
# share one view of that node's GPUs).
#
#   VP_BIN=<build dir> . tests/e2e/lib.sh
#   vp_start              # cluster + planners; partitions "train" (3g/4g/7g) and "infer" (1g/2g)
#   vp_sbatch ARGS...     # prints the job id (jobs write to $VC_RUN/out/<id>.out)
#   vp_wait_done J [s]    # until the job left the queue (any end state)
#   vp_check              # every node consistent: ledger == hardware == advertisement ==
#                         # Slurm's split, job records match owners, no drain, no ASan report
#   vp_status             # vgpuctl status pictures of every node
#   vp_stop
#
# VP_METRICS=1: node_exporter per node and Prometheus over them (monitoring.sh).
# Settings: VC_NODES (default "n1 n2 n3"), VP_GPUS=2 H100-80GB per node, VP_PERIOD=1 s,
# VP_STARVATION=15 s, VP_SCRUB=optional (no CUDA here: "required" quarantines every instance),
# VP_PREPARE_SLOTS=false (the policy's planner.prepare_slots: instances made ahead of demand),
# VP_IDLE_RETURN=0 (planner.idle_return_s: the scenarios watch nodes go back to their idle layout
# as soon as nothing is pending; the product's 60 s is unit-tested and run by benchmarks/scale.sh).
# VP_NODE_WEIGHTS: the policy's planner.node_weights as JSON (absent: the planner leaves weights alone).
# VP_NODE_FEATURES=1: the policy's planner.node_features (and the FUTURE node holding both features).
# VP_IDLE_LAYOUT / VP_INFER_PROFILES: the infer partition's idle layout per GPU and its profiles, as
# the policy's JSON (the overhead benchmark sets 7 x 1g.10gb, for H100-80GB only).
# VP_MIG_OFF_GPUS: indexes of each H100 node's GPUs that run with MIG mode off (served whole).
# VP_FIXTURE: another fake-NVML fixture of fakenvml/fixtures for every h100 node (VP_GPUS GPUs).
# VP_MODIFY_DEVICE_FILES: the nodes' /proc/driver/nvidia/params says ModifyDeviceFiles: this (0
# lets a whole GPU be confined); unset, there is no params file, as on a node without the driver.

VP_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VP_SRC=$(cd "$VP_LIB_DIR/../.." && pwd)
VP_GPUS=${VP_GPUS:-2}
VP_PERIOD=${VP_PERIOD:-1}
VP_STARVATION=${VP_STARVATION:-15}
VP_SCRUB=${VP_SCRUB:-optional}
VP_PREPARE_SLOTS=${VP_PREPARE_SLOTS:-false}
VP_IDLE_RETURN=${VP_IDLE_RETURN:-0}
# VP_VIZ=1: node n1 also serves partition "viz" (pool viz-small: VMs without a GPU, 2 sessions)
# through the real libvirtd + QEMU TCG; the vgpu total per node grows by those 2 sessions.
VP_VIZ=${VP_VIZ:-0}
VP_VIZ_SESSIONS=$([ "$VP_VIZ" = 1 ] && echo 2 || echo 0)
# VP_UNITS_PER_GPU: the most vgpu units one GPU can advertise (7 instances; more with share types).
VC_TOTAL=$((${VP_UNITS_PER_GPU:-7} * VP_GPUS + VP_VIZ_SESSIONS))
export VC_TOTAL
. "$VP_SRC/tests/cluster/lib.sh"
. "$VP_LIB_DIR/monitoring.sh"

: "${VP_BIN:?VP_BIN must point at a build directory}"
# Absolute: slurmctld and slurmd run from other directories (a relative PluginDir is fatal there).
VP_BIN=$(cd "$VP_BIN" 2>/dev/null && pwd) || vc_fail "VP_BIN='$VP_BIN' is not a directory"
VC_PLUGIN_DIR=${VC_PLUGIN_DIR:-$VP_BIN/gres_plugin}
export VC_PLUGIN_DIR
# The product's programs: from the build tree, or (VP_INSTALLED=<prefix>, e.g. /usr) as the
# Debian packages installed them. The fake NVML is a test double and always comes from the build.
if [ -n "${VP_INSTALLED:-}" ]; then
  VP_PROLOG=$VP_INSTALLED/sbin/vgpu-prolog VP_EPILOG=$VP_INSTALLED/sbin/vgpu-epilog
  VP_PLANNER=$VP_INSTALLED/sbin/vgpu-planner VP_VGPUCTL=$VP_INSTALLED/bin/vgpuctl
  VP_VIZ_BIN=$VP_INSTALLED/bin/vgpu-viz VP_SUBMIT_FILTER=$VP_INSTALLED/share/slurm-vgpu/job_submit.lua
else
  VP_PROLOG=$VP_BIN/prolog/vgpu-prolog VP_EPILOG=$VP_BIN/epilog/vgpu-epilog
  VP_PLANNER=$VP_BIN/nodeagent/vgpu-planner VP_VGPUCTL=$VP_BIN/vgpuctl/vgpuctl
  VP_VIZ_BIN=$VP_BIN/vizfrontend/vgpu-viz VP_SUBMIT_FILTER=$VP_SRC/jobsubmit/job_submit.lua
fi
VC_SUBMIT_FILTER=$VP_SUBMIT_FILTER
VP_FAKE_LIB=$VP_BIN/fakenvml/libnvidia-ml.so.1

_vp_nodelist() { echo "$VC_NODES" | tr ' ' ','; }

# Sets one member of the generated policy: $1 a dotted path ("planner.node_weights"), $2 its JSON.
_vp_policy_set() {
  python3 - "$VC_RUN/etc/vgpu-policy.json" "$1" "$2" <<'PY' || vc_fail "could not set $1 in the policy"
import json, sys
path, keys, value = sys.argv[1], sys.argv[2].split("."), json.loads(sys.argv[3])
policy = json.load(open(path))
at = policy
for key in keys[:-1]:
    at = at.setdefault(key, {})
at[keys[-1]] = value
json.dump(policy, open(path, "w"), indent=2)
PY
}

_vp_policy_write() {
  local idle_layout=${VP_IDLE_LAYOUT:-'["2g.20gb", "2g.20gb", "1g.10gb", "1g.10gb", "1g.10gb"]'}
  local infer_profiles=${VP_INFER_PROFILES:-'["1g.10gb", "1g.20gb", "2g.20gb"]'}
  local train_profiles=${VP_TRAIN_PROFILES:-'["3g.40gb", "4g.40gb", "7g.80gb"]'}
  cat > "$VC_RUN/etc/vgpu-policy.json" <<JSON
{
  "version": 1,
  "planner": {"period_s": $VP_PERIOD, "starvation_s": $VP_STARVATION, "idle_return_s": $VP_IDLE_RETURN,
              "prepare_slots": $VP_PREPARE_SLOTS},
  "partitions": {
    "infer": {
      "profiles": $infer_profiles,
      "max_instances_per_job": 7,
      "max_instances_per_user": 64,
      "nodes": ["$(_vp_nodelist)"],
      "idle_layout": $idle_layout,
      "scrub": "$VP_SCRUB"
    },
    "train": {
      "profiles": $train_profiles,
      "max_instances_per_job": 2,
      "nodes": ["$(_vp_nodelist)"],
      "scrub": "$VP_SCRUB"
    }
  }
}
JSON
  [ "$VP_VIZ" = 1 ] && _vp_policy_add_viz
  # VP_CLASSES: the policy's classes (requests by need), as its JSON object.
  [ -n "${VP_CLASSES:-}" ] && _vp_policy_set classes "$VP_CLASSES"
  # VP_SHARE_TYPES: the policy's share types, as its JSON object; the nodes then run the fake MPS
  # control program (fakemps/), each node under its own root.
  [ -n "${VP_SHARE_TYPES:-}" ] && _vp_policy_set share_types "$VP_SHARE_TYPES"
  # VP_SHARE_ACROSS_USERS: a partition whose shared instances take several users' shares.
  [ -n "${VP_SHARE_ACROSS_USERS:-}" ] && _vp_policy_set "partitions.$VP_SHARE_ACROSS_USERS.share_across_users" true
  # VP_TRAIN_MIG_MODE: the train partition's mig_mode ("on_demand", ...).
  [ -n "${VP_TRAIN_MIG_MODE:-}" ] && _vp_policy_set partitions.train.mig_mode "\"$VP_TRAIN_MIG_MODE\""
  # VP_NODE_WEIGHTS: the planner's node_weights, as its JSON object ({"in_use": A, "idle": B}).
  [ -n "${VP_NODE_WEIGHTS:-}" ] && _vp_policy_set planner.node_weights "$VP_NODE_WEIGHTS"
  # VP_NODE_FEATURES=1: the planner's node_features, with slurm.conf's FUTURE node holding every
  # feature the policy summary says it needs.
  [ -n "${VP_NODE_FEATURES:-}" ] && _vp_policy_set planner.node_features true
  local summary
  summary=$("$VP_VGPUCTL" policy check "$VC_RUN/etc/vgpu-policy.json") || vc_fail "generated policy does not check"
  if [ -n "${VP_NODE_FEATURES:-}" ]; then
    VC_FUTURE_FEATURES=$(sed -n 's/^planner: slurm.conf needs a State=FUTURE node with Features=\([^ ]*\) in .*/\1/p' <<< "$summary")
    [ -n "$VC_FUTURE_FEATURES" ] || vc_fail "the policy summary names no features for the FUTURE node: $summary"
  fi
}

# The viz partition (node n1 only) and its image: the guest tests/viz builds, or with
# VP_VIZ_DESKTOP_IMAGE=<dir> the desktop image vizfrontend/guest/desktop built there (its
# image.json), with the memory and vCPUs Xfce and PyMOL need.
_vp_policy_add_viz() {
  python3 - "$VC_RUN/etc/vgpu-policy.json" "$VP_VIZ_GUEST" "$VP_VIZ_SESSIONS" "${VP_VIZ_DESKTOP_IMAGE:-}" <<'PY' ||
import json, sys
path, guest, sessions, desktop = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
p = json.load(open(path))
p["images"] = {"tinyguest": {"kernel": f"{guest}/vmlinuz", "initrd": f"{guest}/initrd.gz",
                             "cmdline": "console=ttyS0,115200 console=tty0 vga=0x318 quiet"}}
pool = {"name": "viz-small", "attach": "none", "image": "tinyguest", "memory_mib": 256,
        "vcpus": 1, "max_sessions": sessions, "display": "vnc", "max_geometry": "1024x768"}
if desktop:
    p["images"]["desktop"] = json.load(open(f"{desktop}/image.json"))
    pool.update(image="desktop", memory_mib=2048, vcpus=2, max_geometry="1920x1200")
p["partitions"]["viz"] = {"profiles": ["1g.10gb"], "nodes": ["n1"], "scrub": "optional", "viz_pools": [pool]}
json.dump(p, open(path, "w"), indent=2)
PY
    vc_fail "could not add viz to the policy"
}

# vgpu-viz's node config for n1 (pools come from the policy) and the daemons it needs.
_vp_viz_setup() {
  VP_VIZ_PORT=$(_vc_free_port)
  mkdir -p "$VC_RUN/viz"
  cat > "$VC_RUN/etc/viz.json" <<JSON
{"version": 1, "libvirt_uri": "qemu:///system", "accelerator": "tcg", "listen_address": "127.0.0.1",
 "proxy_port": $VP_VIZ_PORT,
 "public_host": "127.0.0.1", "ssh_host": "n1", "state_dir": "$VC_RUN/viz/state",
 "access_dir": "$VC_RUN/viz/access", "pools": []}
JSON
  "$VP_SRC/tests/viz/libvirt-up.sh" "$VC_RUN/libvirt" >> "$VC_RUN/log/libvirt-up.log" 2>&1 ||
    vc_fail "libvirtd did not start: $(tail -3 "$VC_RUN/log/libvirt-up.log")"
  "$VP_SRC/vizfrontend/guest/build-guest.sh" "$VP_VIZ_GUEST" >> "$VC_RUN/log/guest.log" 2>&1 ||
    vc_fail "guest build failed: $(tail -3 "$VC_RUN/log/guest.log")"
}
VP_VIZ_GUEST=${VGPU_VIZ_GUEST_DIR:-/var/cache/slurm-vgpu/guest}

# The job_submit filter's table of valid types per partition, generated from the policy as a site
# does it (docs/admin.md).
_vp_submit_table_write() {
  "$VP_VGPUCTL" submit-table "$VC_RUN/etc/vgpu-policy.json" --default-partition infer \
    > "$VC_RUN/etc/vgpu_profiles.lua" || vc_fail "vgpuctl submit-table failed"
}

# A node's simulated GPUs: VP_KIND_<node> is h100 (the default: VP_GPUS H100-80GB), a100 (one
# A100-40GB) or mi300x (two AMD MI300X behind the fake amdgpu driver, vgpu-fake-amdgpu).
vp_kind_of() {
  local v="VP_KIND_$1"
  echo "${!v:-h100}"
}

# The fake amdgpu driver of an mi300x node: its sysfs (FUSE) under $VC_RUN/amdgpu/<node>, its
# render nodes under the node's device root. Every node its own GPU UUIDs, as on real clusters.
_vp_amdgpu_start() {
  local n=$1 mnt=$VC_RUN/amdgpu/$1 fixture=$VC_RUN/etc/vgpu-env/$1.amdgpu.json
  mkdir -p "$mnt" "$VC_RUN/devroot/$n"
  python3 - "$VP_SRC/fakeamdgpu/fixtures/mi300x-2gpu.json" "$fixture" "$n" <<'PY' || vc_fail "could not write the amdgpu fixture for $n"
import json, sys, hashlib
src, dst, node = sys.argv[1:]
d = json.load(open(src))
for i, g in enumerate(d["gpus"]):
    g["unique_id"] = int(hashlib.sha256(f"{node}/{i}".encode()).hexdigest()[:15], 16)
json.dump(d, open(dst, "w"), indent=1)
PY
  ( setsid "$VP_BIN/fakeamdgpu/vgpu-fake-amdgpu" --fixture "$fixture" --mount "$mnt" --dev-root "$VC_RUN/devroot/$n" \
      >> "$VC_RUN/log/fake-amdgpu.$n.log" 2>&1 < /dev/null &
    echo $! > "$VC_RUN/run/fake-amdgpu.$n.pid" )
  for _ in $(seq 50); do [ -e "$mnt/sys/bus/pci/drivers/amdgpu" ] && return 0; sleep 0.1; done
  vc_fail "fake amdgpu driver on $n did not mount: $(tail -3 "$VC_RUN/log/fake-amdgpu.$n.log")"
}

_vp_amdgpu_stop() {
  _vc_stop_pidfile "$VC_RUN/run/fake-amdgpu.$1.pid"
  mountpoint -q "$VC_RUN/amdgpu/$1" && { fusermount3 -u -z "$VC_RUN/amdgpu/$1" 2>/dev/null || umount -l "$VC_RUN/amdgpu/$1"; }
  return 0
}

# Per-node environment for every product process on that node.
_vp_node_env_write() {
  local n=$1 fixture source kind
  kind=$(vp_kind_of "$n")
  case $kind in
    a100) source=$VP_SRC/fakenvml/fixtures/a100-40gb-1gpu.json ;;
    *) source=$VP_SRC/fakenvml/fixtures/${VP_FIXTURE:-h100-80gb-${VP_GPUS}gpu.json} ;;
  esac
  [ -f "$source" ] || vc_fail "no fixture $source"
  mkdir -p "$VC_RUN/etc/vgpu-env"
  # Every node its own GPUs: real GPU UUIDs (and so MIG UUIDs) are unique across a cluster.
  fixture=$VC_RUN/etc/vgpu-env/$n.fixture.json
  python3 - "$source" "$fixture" "$n" "${VP_MIG_OFF_GPUS:-}" <<'PY' || vc_fail "could not write the fixture for $n"
import json, sys, hashlib
src, dst, node, mig_off = sys.argv[1:]
d = json.load(open(src))
for g in d["gpus"]:
    h = hashlib.sha256(f"{node}/{g['index']}".encode()).hexdigest()
    g["uuid"] = f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
    if str(g["index"]) in mig_off.split() and "mig_mode" in g:
        g["mig_mode"] = {"current": "disabled", "pending": "disabled"}
json.dump(d, open(dst, "w"), indent=1)
PY
  # The node's driver tree (fake NVML): mig-minors as the driver publishes it; the fake creates an
  # instance's capability files there, and the product confines them to the job's user.
  mkdir -p "$VC_RUN/devroot/$n/proc/driver/nvidia-caps" "$VC_RUN/devroot/$n/dev/nvidia-caps"
  cp "$VP_SRC/fakenvml/fixtures/mig-minors-8gpu.txt" "$VC_RUN/devroot/$n/proc/driver/nvidia-caps/mig-minors"
  if [ -n "${VP_MODIFY_DEVICE_FILES:-}" ]; then  # as the driver prints it: DeviceFileMode in decimal
    mkdir -p "$VC_RUN/devroot/$n/proc/driver/nvidia"
    printf 'ModifyDeviceFiles: %s\nDeviceFileUID: 0\nDeviceFileGID: 0\nDeviceFileMode: 438\n' \
      "$VP_MODIFY_DEVICE_FILES" > "$VC_RUN/devroot/$n/proc/driver/nvidia/params"
  fi
  chmod -R a+rX "$VC_RUN/devroot"
  cat > "$VC_RUN/etc/vgpu-env/$n.sh" <<ENV
export VGPU_NODENAME=$n
export VGPU_DEVICE_ROOT=$VC_RUN/devroot/$n
export VGPU_FAKE_NVML_DEVICE_ROOT=$VC_RUN/devroot/$n
export VGPU_STATE_DIR=$VGPU_STATE_DIR
export VGPU_POLICY=$VC_RUN/etc/vgpu-policy.json
export VGPU_NVML_LIBRARY=$VP_FAKE_LIB
export VGPU_FAKE_NVML_FIXTURE=$fixture
export VGPU_FAKE_NVML_STATE=$VGPU_STATE_DIR/$n.fake-nvml-state.json
export VGPU_SLURMD_PIDFILE=$VC_RUN/run/slurmd.%n.pid
export VGPU_SCRUB=${VP_SCRUB_PROGRAM:-/nonexistent/vgpu-scrub}
export VGPU_VIZ=$VP_VIZ_BIN
export VGPU_VIZ_CONFIG=$VC_RUN/etc/viz.json
export SLURM_CONF=$SLURM_CONF
export PATH=${VC_SLURM_PREFIX:+$VC_SLURM_PREFIX/bin:$VC_SLURM_PREFIX/sbin:}/usr/sbin:/usr/bin:/sbin:/bin
export ASAN_OPTIONS=log_path=$VC_RUN/log/asan:detect_leaks=1
ENV
  # An AMD node: the backend finds the fake driver's GPUs in its sysfs (VGPU_BACKEND=auto).
  [ "$kind" = mi300x ] && echo "export VGPU_SYSFS_ROOT=$VC_RUN/amdgpu/$n" >> "$VC_RUN/etc/vgpu-env/$n.sh"
  _vp_cluster_view_env >> "$VC_RUN/etc/vgpu-env/$n.sh"
  [ "$VP_METRICS" = 1 ] && echo "export VGPU_METRICS_FILE=$(vp_metrics_file "$n")" >> "$VC_RUN/etc/vgpu-env/$n.sh"
  # MIG changes that take time, as on real hardware (docs/backends.md): VP_NVML_LATENCY=h100.
  [ -n "${VP_NVML_LATENCY:-}" ] && echo "export VGPU_FAKE_NVML_LATENCY_MS=$VP_NVML_LATENCY" >> "$VC_RUN/etc/vgpu-env/$n.sh"
  [ -n "${VP_SHARE_TYPES:-}" ] && printf 'export VGPU_MPS_CONTROL=%s\nexport VGPU_MPS_ROOT=%s\n' \
    "$VP_SRC/fakemps/nvidia-cuda-mps-control" "$VC_RUN/mps/$n" >> "$VC_RUN/etc/vgpu-env/$n.sh"
  # Crash-point matrix (tests/e2e/scenarios/crash_matrix.sh): each node its own arming file.
  # VP_HOOK_SERVICE=off: the hooks do their own work, as without a planner (benchmarks compare).
  [ "${VP_HOOK_SERVICE:-on}" = off ] && echo "export VGPU_HOOK_SERVICE=off" >> "$VC_RUN/etc/vgpu-env/$n.sh"
  # VP_SCRUB_AFTER_EPILOG=on: epilogs hand their scrubs to a detached cleanup process.
  [ -n "${VP_SCRUB_AFTER_EPILOG:-}" ] && echo "export VGPU_SCRUB_AFTER_EPILOG=$VP_SCRUB_AFTER_EPILOG" >> "$VC_RUN/etc/vgpu-env/$n.sh"
  # Its points kill the hook processes, so the hooks do their own work there (a served hook's work
  # runs in the planner: the matrix's served case turns this off for itself).
  [ "${VP_CRASH_POINTS:-0}" = 1 ] &&
    printf 'export VGPU_CRASH_POINT_FILE=%s\nexport VGPU_HOOK_SERVICE=off\n' "$VC_RUN/crash/$n" >> "$VC_RUN/etc/vgpu-env/$n.sh"
  return 0
}

# The controller's cluster view (VP_CLUSTER_VIEW=tcp or file; 0, the default, for planners that
# ask slurmctld themselves): one publisher makes two queries per period for all nodes, its period
# VP_PUBLISH_PERIOD (default: the planners'), signs the view and serves it on VP_VIEW_PORT and in
# a file; the planners read it over TCP or from the file, checking the signature either way. It
# books reservations for wide jobs waiting longer than VP_RESERVE_WIDE_AFTER s (default: 600).
_vp_cluster_view_env() {
  local pub=$VC_RUN/etc/cluster-view.pub
  case ${VP_CLUSTER_VIEW:-0} in
    0) echo "export VGPU_CLUSTER_VIEW=slurmctld" ;;  # every planner asks slurmctld itself
    tcp) printf 'export VGPU_CLUSTER_VIEW=tcp:127.0.0.1:%s\nexport VGPU_CLUSTER_VIEW_KEY=%s\n' "$VP_VIEW_PORT" "$pub" ;;
    file) printf 'export VGPU_CLUSTER_VIEW=%s\nexport VGPU_CLUSTER_VIEW_KEY=%s\n' "$VGPU_STATE_DIR/cluster-view" "$pub" ;;
    *) vc_fail "VP_CLUSTER_VIEW='$VP_CLUSTER_VIEW': expected 0, tcp or file" ;;
  esac
}
vp_publisher_start() {
  local key=$VC_RUN/etc/cluster-view.key
  [ -f "$key" ] || "$VP_PLANNER" --make-view-key "$key" "$VC_RUN/etc/cluster-view.pub" ||
    vc_fail "could not make the cluster view's key pair"
  ( export SLURM_CONF ASAN_OPTIONS=log_path=$VC_RUN/log/asan:detect_leaks=1
    setsid "$VP_PLANNER" --publish-view "$VGPU_STATE_DIR/cluster-view" --serve-view "$VP_VIEW_PORT" --view-key "$key" \
      --period "${VP_PUBLISH_PERIOD:-$VP_PERIOD}" --reserve-wide-after "${VP_RESERVE_WIDE_AFTER:-600}" \
      >> "$VC_RUN/log/publisher.log" 2>&1 < /dev/null &
    echo $! > "$VC_RUN/run/publisher.pid" )
  for _ in $(seq 100); do [ -s "$VGPU_STATE_DIR/cluster-view" ] && return 0; sleep 0.1; done
  vc_fail "the cluster view publisher wrote no view: $(tail -3 "$VC_RUN/log/publisher.log")"
}
vp_publisher_stop() { _vc_stop_pidfile "$VC_RUN/run/publisher.pid"; }

# slurmd's Prolog/Epilog: load the node's environment and run the product. The wrapper exits 0
# whatever happens (the binaries already do; this also covers a sanitizer abort, which
# vp_check reports through the ASan log instead of a drained node).
# VP_HOOK_RUNNER (benchmarks/slurm_overhead.sh): the same without a shell, for a node environment
# of plain exports only (benchmarks/hook_runner/hook_runner.c).
_vp_hooks_write() {
  local kind program
  for kind in prolog epilog; do
    program=$([ "$kind" = prolog ] && echo "$VP_PROLOG" || echo "$VP_EPILOG")
    if [ -n "${VP_HOOK_RUNNER:-}" ]; then
      cp "$VP_HOOK_RUNNER" "$VC_RUN/etc/hooks/$kind" || vc_fail "cannot copy $VP_HOOK_RUNNER"
      printf 'kind=%s\nprogram=%s\nenv_dir=%s\nlog_dir=%s\ntimes=%s\n' "$kind" "$program" \
        "$VC_RUN/etc/vgpu-env" "$VC_RUN/log" "$VC_RUN/log/hook-times.txt" > "$VC_RUN/etc/hooks/$kind.conf"
      continue
    fi
    # Wall and CPU seconds (user, system) of the hook, by bash's own timer: no process of its own.
    cat > "$VC_RUN/etc/hooks/$kind.sh" <<HOOK
#!/bin/bash
. "$VC_RUN/etc/vgpu-env/\$SLURMD_NODENAME.sh"
TIMEFORMAT="$kind \$SLURM_JOB_ID %3R %3U %3S"
{ time "$program" >> "$VC_RUN/log/$kind.\$SLURMD_NODENAME.log" 2>&1; } 2>> "$VC_RUN/log/hook-times.txt"
exit 0
HOOK
    chmod 755 "$VC_RUN/etc/hooks/$kind.sh"
  done
  if [ -n "${VP_HOOK_RUNNER:-}" ]; then
    VC_PROLOG=$VC_RUN/etc/hooks/prolog VC_EPILOG=$VC_RUN/etc/hooks/epilog
  else
    VC_PROLOG=$VC_RUN/etc/hooks/prolog.sh VC_EPILOG=$VC_RUN/etc/hooks/epilog.sh
  fi
  [ "${VP_SITE_HOOKS:-0}" = 1 ] && _vp_site_hooks_write
  return 0
}

# VP_SITE_HOOKS=1: ours beside a site's own Prolog and Epilog, as docs/slurm.md says to configure
# it: Prolog=/etc/slurm/prolog.d/* (a glob: every program it names runs, 22.05 on), ours one entry.
# The site's entries append the job id to out/site-<kind>.<node> (vp_assert_site_hooks_ran).
_vp_site_hooks_write() {
  local kind dir ours
  for kind in prolog epilog; do
    dir=$VC_RUN/etc/$kind.d ours=$([ "$kind" = prolog ] && echo "$VC_PROLOG" || echo "$VC_EPILOG")
    mkdir -p "$dir"
    printf '#!/bin/bash\nexec %q "$@"\n' "$ours" > "$dir/50-slurm-vgpu"
    printf '#!/bin/bash\necho "$SLURM_JOB_ID" >> "%s/site-%s.$SLURMD_NODENAME"\nexit 0\n' "$VC_RUN/out" "$kind" \
      > "$dir/90-site"
    chmod 755 "$dir/50-slurm-vgpu" "$dir/90-site"
  done
  VC_PROLOG="$VC_RUN/etc/prolog.d/*" VC_EPILOG="$VC_RUN/etc/epilog.d/*"
}
vp_assert_site_hooks_ran() { # $1 job $2 node: the site's prolog and epilog ran for it beside ours
  local kind
  for kind in prolog epilog; do
    grep -qx "$1" "$VC_RUN/out/site-$kind.$2" 2>/dev/null ||
      vc_fail "the site's $kind did not run for job $1 on $2 beside ours: $(cat "$VC_RUN/out/site-$kind.$2" 2>&1)"
  done
}

vp_planner_start() { # $1 node
  ( . "$VC_RUN/etc/vgpu-env/$1.sh"
    setsid "$VP_PLANNER" >> "$VC_RUN/log/planner.$1.log" 2>&1 < /dev/null & )
  local f=$VGPU_STATE_DIR/$1/planner.pid
  for _ in $(seq 100); do [ -s "$f" ] && return 0; sleep 0.1; done
  vc_fail "planner on $1 did not start: $(tail -3 "$VC_RUN/log/planner.$1.log")"
}
vp_planner_stop() { _vc_stop_pidfile "$VGPU_STATE_DIR/$1/planner.pid"; }

vp_start() {
  vc_init
  _vp_policy_write
  # VP_COUNT_GRES=countgpu:8 (benchmarks/scale.sh's busy baseline): the same cluster as a site without
  # slurm-vgpu runs it, count-only GRES and no prolog, epilog, planners or publisher.
  if [ -n "${VP_COUNT_GRES:-}" ]; then
    VC_GRES_TYPES=${VP_COUNT_GRES%%:*} VC_GRES_LINE=$VP_COUNT_GRES VP_NO_PLANNERS=1 VP_CLUSTER_VIEW=0
    # A GRES without File= and without a plugin is a count (gres.conf(5)), as slurmd reports it.
    echo "Name=${VP_COUNT_GRES%%:*} Count=${VP_COUNT_GRES##*:}" > "$VC_RUN/etc/gres.conf"
  else
    _vp_hooks_write
  fi
  # Accounting (VC_ACCOUNTING=1) records every type the policy offers, as docs/accounting.md says.
  [ "$VC_ACCOUNTING" = 1 ] && VC_ACCOUNTING_TRES=$("$VP_VGPUCTL" accounting-tres "$VC_RUN/etc/vgpu-policy.json")
  local n
  VP_VIEW_PORT=${VP_VIEW_PORT:-$(_vc_free_port)}
  for n in $VC_NODES; do
    _vp_node_env_write "$n"
    case $(vp_kind_of "$n") in
      h100) ;;  # VC_TOTAL
      a100) printf -v "VC_TOTAL_$n" '%s' 7 ;;
      mi300x) printf -v "VC_TOTAL_$n" '%s' 16; _vp_amdgpu_start "$n" ;;
      *) vc_fail "VP_KIND_$n='$(vp_kind_of "$n")': expected h100, a100 or mi300x" ;;
    esac
  done
  vc_log "e2e run dir $VC_RUN"
  _vc_munge_start || vc_fail "munged did not start"
  vc_conf_write "PrologFlags=Alloc
PartitionName=infer Nodes=$(_vp_nodelist),future MaxTime=INFINITE State=UP
PartitionName=train Nodes=$(_vp_nodelist),future MaxTime=INFINITE State=UP
$([ "$VP_VIZ" = 1 ] && echo "PartitionName=viz Nodes=n1 MaxTime=INFINITE State=UP")"
  [ "$VP_VIZ" = 1 ] && _vp_viz_setup
  _vp_submit_table_write
  vc_accounting_start || vc_fail "accounting (MariaDB + slurmdbd) did not start"
  vc_ctld_start -c -i || vc_fail "slurmctld did not start"
  for n in $VC_NODES; do vc_slurmd_start "$n" || vc_fail "slurmd $n did not start"; done
  vc_wait_idle 60 || vc_fail "nodes did not become idle"
  [ "${VP_CLUSTER_VIEW:-0}" != 0 ] && vp_publisher_start
  vp_metrics_start || vc_fail "node_exporter + Prometheus did not start"
  # VP_NO_PLANNERS=1 (benchmarks/scale.sh's baseline): the cluster without slurm-vgpu's daemons.
  [ "${VP_NO_PLANNERS:-0}" = 1 ] && return 0
  for n in $VC_NODES; do vp_planner_start "$n"; done
  # VP_SETTLE_S: a large emulated cluster on a few cores needs longer (benchmarks/scale.sh).
  vp_wait_settled "${VP_SETTLE_S:-30}" || vc_fail "planners did not publish a first advertisement"
}

vp_stop() {
  local n
  for n in $VC_NODES; do vp_planner_stop "$n"; done
  for n in $VC_NODES; do [ "$(vp_kind_of "$n")" = mi300x ] && _vp_amdgpu_stop "$n"; done
  vp_publisher_stop
  vp_metrics_stop
  vc_stop
  if [ "$VP_VIZ" = 1 ] && [ -f "$VC_RUN/etc/viz.json" ]; then
    ( . "$VC_RUN/etc/vgpu-env/n1.sh"; "$VGPU_VIZ" --policy "$VGPU_POLICY" reap --live "" ) >/dev/null 2>&1
    "$VP_SRC/tests/viz/libvirt-down.sh" "$VC_RUN/libvirt" >/dev/null 2>&1
  fi
}

# Until every node's advertisement equals Slurm's view of it (planners and slurmctld agree).
vp_wait_settled() {
  local lim=$(( ${1:-30} * 5 )) t=0 n ok
  while :; do
    ok=1
    for n in $VC_NODES; do
      [ -f "$VGPU_STATE_DIR/$n/advertisement.json" ] || { ok=0; break; }
      [ "$(vc_node_gres "$n")" = "$(vc_expected_gres "$(_vp_advertised "$n")" "$n")" ] || { ok=0; break; }
    done
    [ $ok = 1 ] && return 0
    t=$((t + 1)); [ $t -ge $lim ] && return 1
    sleep 0.2
  done
}

_vp_advertised() { # "type=count ..." from a node's advertisement file
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(f"{k}={v}" for k,v in sorted(d["counts"].items())))' \
    "$VGPU_STATE_DIR/$1/advertisement.json"
}

vp_sbatch() { # prints the job id; a refused submission prints "refused" so waits on it fail loudly
  local id
  id=$(sbatch --parsable -o "$VC_RUN/out/%j.out" "$@" | cut -d';' -f1)
  echo "${id:-refused}"
}

vp_wait_done() { # $1 job [$2 seconds]: until the job has left the queue
  local t=0 lim=$(( ${2:-60} * 5 ))
  while squeue -h -j "$1" 2>/dev/null | grep -q .; do
    t=$((t + 1)); [ $t -ge $lim ] && { vc_log "job $1 still queued: $(squeue -h -j "$1" -o '%T %r')"; return 1; }
    sleep 0.2
  done
}

# With VGPU_SCRUB_AFTER_EPILOG=on a job leaves the queue while a cleanup process still scrubs and
# destroys its instances: until no node's ledger holds an instance in scrubbing or destroying.
vp_wait_cleanups_done() { # [$1 seconds]
  local t=0 lim=$(( ${1:-60} * 10 ))
  while cat "$VGPU_STATE_DIR"/*/ledger.json 2>/dev/null | grep -Eq '"(scrubbing|destroying)"'; do
    t=$((t + 1)); [ $t -ge $lim ] && { vc_log "instances still being cleaned up after ${1:-60} s"; return 1; }
    sleep 0.1
  done
}

vp_wait_running() { vc_wait_job "$1" RUNNING "${2:-60}"; }

# RUNNING comes while the prolog still works (PrologFlags=Alloc); the batch script's first line
# of output comes after it. For jobs from vp_job_script or the like (they print first thing).
vp_wait_started() { # $1 job [$2 seconds]
  local t=0 lim=$(( ${2:-60} * 5 ))
  until [ -s "$VC_RUN/out/$1.out" ]; do
    t=$((t + 1)); [ $t -ge $lim ] && { vc_log "job $1 printed nothing: $(squeue -h -j "$1" -o '%T %r')"; return 1; }
    sleep 0.2
  done
}

# Every node's Slurm weight, "n1:w n2:w ...", and a wait until it is as expected (policy
# planner.node_weights).
vp_node_weights() {
  local n out=""
  for n in $VC_NODES; do out+="$n:$(scontrol -o show node "$n" | grep -o 'Weight=[0-9]*' | cut -d= -f2) "; done
  echo "${out% }"
}
vp_wait_node_weights() { # $1 "n1:w n2:w ..." [$2 seconds]
  local t=0 lim=$(( ${2:-30} * 5 ))
  until [ "$(vp_node_weights)" = "$1" ]; do
    t=$((t + 1)); [ $t -ge $lim ] && { vc_log "weights $(vp_node_weights), expected $1"; return 1; }
    sleep 0.2
  done
}

vp_verify_node() { # ledger == hardware == advertisement == job records
  ( . "$VC_RUN/etc/vgpu-env/$1.sh"; "$VP_PLANNER" --verify )
}

# One pass over every node: ledger == hardware == advertisement == job records, and Slurm shows
# what is advertised. Its report goes to stdout; non-zero when anything disagrees.
_vp_check_once() {
  local n rc=0 want got
  vp_wait_settled 30 || { echo "advertisements and Slurm's view did not converge"; rc=1; }
  # The nodes' verifications side by side (each a planner start-up, about 0.4 s under ASan), their
  # reports in node order.
  local -A verify_pid
  for n in $VC_NODES; do
    vp_verify_node "$n" > "$VC_RUN/run/verify.$n" 2>&1 &
    verify_pid[$n]=$!
  done
  for n in $VC_NODES; do
    wait "${verify_pid[$n]}" || rc=1
    cat "$VC_RUN/run/verify.$n"
    want=$(vc_expected_gres "$(_vp_advertised "$n")" "$n")
    got=$(vc_node_gres "$n")
    [ "$want" = "$got" ] || { echo "node $n: Slurm shows $got, advertised $want"; rc=1; }
  done
  return $rc
}

vp_check() {
  local rc=0 waited=0 report
  # A node may be in the middle of a handover (a shrink published, slurmctld not yet caught up,
  # e.g. on its way back to the idle layout after a job's epilog poked its planner): ledger and
  # advertisement legitimately differ until it completes, and one may begin between two looks.
  # So the whole check passes in one pass or is tried again (up to VP_CHECK_WAIT s); only a
  # disagreement that outlasts that is reported.
  while :; do
    report=$(_vp_check_once) && break
    [ "$waited" -ge "${VP_CHECK_WAIT:-60}" ] && { rc=1; break; }
    sleep 2; waited=$((waited + 2))
  done
  [ -n "$report" ] && printf '%s\n' "$report" >&2
  vc_assert_no_bad_nodes || rc=1
  if ls "$VC_RUN"/log/asan* >/dev/null 2>&1; then
    vc_log "sanitizer reports:"; cat "$VC_RUN"/log/asan* >&2; rc=1
  fi
  return $rc
}

# Instances each node holds on its (fake) hardware right now: "n1:3 n2:0 ..."
vp_hw_instances() {
  local n out=""
  for n in $VC_NODES; do
    out+="$n:$(python3 -c 'import json,sys
try: d=json.load(open(sys.argv[1]))
except Exception: print(0); sys.exit()
print(sum(len(gis) for gis in d["gpus"].values()))' \
      "$VGPU_STATE_DIR/$n.fake-nvml-state.json") "
  done
  echo "${out% }"
}

vp_status() { "$VP_VGPUCTL" status --state-dir "$VGPU_STATE_DIR"; }

# The MIG uuids the ledger of node $1 gives job $2, sorted, comma-joined.
vp_ledger_uuids() {
  "$VP_VGPUCTL" status --state-dir "$VGPU_STATE_DIR" --node "$1" --json |
    python3 -c 'import json,sys; j=int(sys.argv[1]); d=json.load(sys.stdin)
print(",".join(sorted(i["mig_uuid"] for n in d for g in n["gpus"] for i in g["instances"] if i["job"]==j)))' "$2"
}

vp_finish() { # trap handler: stop, keep the run dir only on failure or with VC_KEEP=1
  local rc=$1
  vp_stop >/dev/null 2>&1
  [ -n "${VC_RUN:-}" ] || return 0  # failed before the cluster was made
  if [ "$rc" = 0 ] && [ "${VC_KEEP:-0}" != 1 ]; then rm -rf "$VC_RUN"; else echo "run dir kept: $VC_RUN" >&2; fi
}

# A second unprivileged user for tests of what one user can do to another's jobs (the first is
# nobody): created once on this machine, a system account without home or shell.
VP_USER_B=vgpu-tenant-b
vp_second_user() {
  id -u "$VP_USER_B" >/dev/null 2>&1 ||
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$VP_USER_B" ||
    vc_fail "cannot create the second test user $VP_USER_B"
}

# Runs a command as user $1 (vp_second_user's or nobody) against this cluster.
vp_as_user() { local u=$1; shift; runuser -u "$u" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" "$@"; }

# Submits a batch job of user $1 to node n1 (sbatch arguments after it), its output in
# $VC_RUN/out/<id>.out: prints the job id, or "refused".
vp_submit_on_n1() {
  local u=$1 id; shift
  id=$(vp_as_user "$u" sbatch --parsable -w n1 -o "$VC_RUN/out/%j.out" "$@" | cut -d';' -f1)
  echo "${id:-refused}"
}

# Writes $VC_RUN/etc/tenant.sh, the job of the device-confinement tests: the node's fake driver
# tree (as a CUDA program finds the driver), its own devices through fake-cuda-probe ("OWN"),
# then the commands in its $2 (one per line, each reported, "TRY"), then it waits for the file
# its $1 names (at most two minutes) and probes again ("AGAIN").
vp_write_tenant_job() {
  local probe=$VP_BIN/fakenvml/fake-cuda-probe
  cat > "$VC_RUN/etc/tenant.sh" <<JOB
#!/bin/bash
. "$VC_RUN/etc/vgpu-env/\$SLURMD_NODENAME.sh"
echo "OWN \$(id -un) CVD=\$CUDA_VISIBLE_DEVICES \$("$probe" 2>&1)"
while IFS= read -r cmd; do
  [ -n "\$cmd" ] || continue
  out=\$(bash -c "\$cmd" 2>&1); rc=\$?
  echo "TRY rc=\$rc \$cmd => \$(echo "\$out" | tr '\n' ' ')"
done < "\${2:-/dev/null}"
for _ in \$(seq 600); do [ -e "\$1" ] && break; sleep 0.2; done  # a failed test must not leave it
echo "AGAIN \$("$probe" 2>&1)"
JOB
  chmod 755 "$VC_RUN/etc/tenant.sh"
}

# The first line of job $1's output that starts with $2, waited for (30 s).
vp_line_of() {
  local l=""
  for _ in $(seq 150); do
    l=$(grep -m1 "^$2" "$VC_RUN/out/$1.out" 2>/dev/null) && [ -n "$l" ] && break
    sleep 0.2
  done
  [ -n "$l" ] || vc_fail "job $1 printed no '$2' line: $(cat "$VC_RUN/out/$1.out" 2>/dev/null)"
  echo "$l"
}

# A job script that reports what it sees, then sleeps $1 seconds ($2 in a run after a requeue).
vp_job_script() {
  cat > "$VC_RUN/etc/job.sh" <<'JOB'
#!/bin/bash
echo "CVD=${CUDA_VISIBLE_DEVICES-<unset>} PROFILES=${VGPU_PROFILES-<unset>} PLACEMENT=${VGPU_PLACEMENT-<unset>} ROCR=${ROCR_VISIBLE_DEVICES-<unset>} MODEL=${VGPU_MODEL-<unset>} MEMORY=${VGPU_MEMORY_MIB-<unset>} COMPUTE=${VGPU_COMPUTE-<unset>} NODE=${SLURMD_NODENAME}"
if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then sleep "${2:-${1:-3}}"; else sleep "${1:-3}"; fi
JOB
  chmod 755 "$VC_RUN/etc/job.sh"
  echo "$VC_RUN/etc/job.sh"
}

# While job $1 runs: its CUDA_VISIBLE_DEVICES (ROCR_VISIBLE_DEVICES on an AMD node) names exactly
# the instances the node's ledger gives it.
vp_assert_sees_own() {
  local j=$1 line="" node cvd want got
  for _ in $(seq 100); do
    line=$(grep -m1 '^CVD=' "$VC_RUN/out/$j.out" 2>/dev/null) && [ -n "$line" ] && break
    sleep 0.2
  done
  [ -n "$line" ] || vc_fail "job $j printed nothing"
  node=${line##*NODE=}
  cvd=$(echo "$line" | sed 's/^CVD=\([^ ]*\).*/\1/')
  [ "$(vp_kind_of "$node")" = mi300x ] && cvd=$(echo "$line" | sed 's/.* ROCR=\([^ ]*\).*/\1/')
  want=$(vp_ledger_uuids "$node" "$j")
  got=$(echo "$cvd" | tr ',' '\n' | sort | paste -sd, -)
  [ -n "$want" ] && [ "$want" = "$got" ] || vc_fail "job $j on $node sees '$cvd'; its ledger instances are '$want'"
  vc_log "job $j on $node sees exactly its instances: $cvd"
}

vp_assert_completed() { # jobs...: each ended COMPLETED (MinJobAge keeps them visible)
  local j st
  for j in "$@"; do
    st=$(vc_job_state "$j")
    [ "$st" = COMPLETED ] || vc_fail "job $j ended $st: $(scontrol show job "$j" | grep -oE '(Reason|Comment)=[^ ]*' | tr '\n' ' ')"
  done
}

vp_assert_no_instances() { # after all jobs: nothing left on any node's hardware (prepared: only idle ones)
  local hw want
  for _ in $(seq 50); do
    hw=$(vp_hw_instances)
    want=$(vp_idle_instances)
    [ "$hw" = "$want" ] && return 0
    sleep 0.2
  done
  vc_fail "instances left on the hardware: $hw (idle in the ledgers: $want)"
}

vp_wait_prepared() { # $1 seconds: until every node's hardware holds an idle instance per planned slot (prepare_slots)
  local end=$((SECONDS + ${1:-60})) n ok
  while [ $SECONDS -lt $end ]; do
    ok=1
    for n in $VC_NODES; do
      [ "$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); slots=d["plan"]["slots"]
idle=[i for i in d["instances"] if i.get("state") == "idle" and i.get("job") is None]
print(1 if slots and len(idle) == len(slots) else 0)' "$VGPU_STATE_DIR/$n/ledger.json" 2>/dev/null)" = 1 ] || ok=0
    done
    [ $ok = 1 ] && [ "$(vp_hw_instances)" = "$(vp_idle_instances)" ] && return 0
    sleep 0.5
  done
  return 1
}

vp_idle_instances() { # per node, the ledger's instances no job holds and kept for the next one: "n1:8 n2:8 ..."
  local n out=""
  for n in $VC_NODES; do
    out+="$n:$(python3 -c 'import json,sys
try: d=json.load(open(sys.argv[1]))
except Exception: print(0); sys.exit()
print(sum(1 for i in d.get("instances", []) if i.get("state") == "idle" and i.get("job") is None))' \
      "$VGPU_STATE_DIR/$n/ledger.json") "
  done
  echo "${out% }"
}
