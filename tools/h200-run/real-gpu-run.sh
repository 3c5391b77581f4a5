#!/usr/bin/env bash
# The product on a real GPU (issue 45, requirement 6): the node's real programs (vgpu-planner,
# vgpu-prolog, vgpu-epilog with their work programs, vgpu-scrub, the MPS adapter) on a node with a
# GPU in MIG-off mode, driven as slurmd would drive them but without a Slurm controller, against the
# real NVML and CUDA. Checks, each with a verdict PASSED / FAILED / COULD NOT RUN (why):
#   (a) a whole-GPU job of an unprivileged user runs a CUDA program on its GPU (CUDA_VISIBLE_DEVICES
#       from the job environment gres/vgpu computes), and a second user is refused the device file;
#       where the driver resets device files (ModifyDeviceFiles: 1) the node must instead offer no
#       whole GPU (a-refusal), and the rest runs with VGPU_CONFINE_DEVICES=off (a-second-user:
#       COULD NOT RUN);
#   (b) two share jobs (CUDA MPS shares of the whole GPU) run side by side: the one that allocates
#       past its memory cap fails, the other runs on unaffected;
#   (c) the epilog's scrub reads back zero;
#   (d) vgpu-planner --verify agrees with NVML at the end.
#
#   real-gpu-run.sh stage BUILD_DIR DEST      here: copy the programs the run needs into DEST (to
#                                             carry to the GPU machine) and compile gpu-job with nvcc
#   real-gpu-run.sh run [--fake] [--bin DIR] [--out DIR] [--keep]
#       --bin   a staged DEST or a build tree (default: build/h200-carry, else build/rel)
#       --fake  the fake NVML of the build tree and a device root under the run directory: rehearses
#               every hook and file check here; CUDA checks are reported COULD NOT RUN (no GPU)
#       --out   where real-gpu-run.txt goes (default: $OUT, else the run directory)
#
# What stands in for Slurm, and nothing else is faked on the GPU machine: the hooks get slurmd's
# environment (SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_UID, SLURM_JOB_PARTITION, SLURMD_NODENAME,
# VGPU_ALLOC chosen from what the planner advertised); pending jobs come from a demand file
# (VGPU_DEMAND_FILE, squeue's format) that this script writes; the job's environment comes from
# gres/vgpu's own bridge call (vgpu-job-env); there is no slurmd to signal and no scontrol (Slurm
# commands fail and are logged by the product; none is needed for these checks).
#
# Changes on the machine, all put back before it exits (trap, also on failure): the owner and mode
# of /dev/nvidia* and /dev/nvidia-caps/* (the product chowns a whole GPU's file to its job's user,
# 0600, and to root 0600 between jobs), a private MPS control daemon (quit). Never touched: MIG
# mode, compute mode, clocks, power, persistence; no MIG instance, no reset. A second user
# (vgpu-tenant-b) is created with useradd if missing and left, as the e2e tests do.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

# --- stage -------------------------------------------------------------------------------------
progs=(nodeagent/vgpu-planner prolog/vgpu-prolog prolog/vgpu-prolog-work epilog/vgpu-epilog
  epilog/vgpu-epilog-work vgpuctl/vgpuctl scrub/vgpu-scrub nodeagent/vgpu-mps tools/h200-run/vgpu-job-env)

stage() {
  local build=$1 dest=$2 p lib
  mkdir -p "$dest/lib" || return 1
  for p in "${progs[@]}"; do
    [ -x "$build/$p" ] || { echo "stage: $build/$p missing (cmake --build $build --target $(basename "$p"))"; return 1; }
    cp "$build/$p" "$dest/" && strip -s "$dest/$(basename "$p")" 2>/dev/null
  done
  # Shared libraries the GPU machine's Ubuntu may lack: carried, found through LD_LIBRARY_PATH.
  for lib in $(ldd "${progs[@]/#/$build/}" 2>/dev/null | awk '/libfmt/ {print $3}' | sort -u); do
    cp -L "$lib" "$dest/lib/" || return 1
  done
  local nvcc
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  if [ -x "$nvcc" ]; then
    "$nvcc" -O2 -arch=sm_90 -o "$dest/gpu-job" "$here/gpu_job.cu" || return 1
  else
    echo "stage: no nvcc here: the run compiles gpu-job on the GPU machine"
  fi
  echo "staged in $dest: $(ls "$dest" | tr '\n' ' ')($(du -sh "$dest" | cut -f1))"
}

# --- run: helpers ------------------------------------------------------------------------------
fake=0 keep=0 bin="" out=""
verdicts=()
verdict() { # check, PASSED|FAILED|COULD NOT RUN, detail
  local detail=${3//$'\n'/ }
  verdicts+=("($1) $2: $detail")
  echo "VERDICT ($1): $2: $detail"
}
say() { echo "== $*"; }

prog() { # a program by name, from a staged directory or a build tree
  local name=$1 p
  for p in "$bin/$name" "$bin"/*/"$name" "$bin"/*/*/"$name"; do
    [ -x "$p" ] && [ -f "$p" ] && { echo "$p"; return 0; }
  done
  return 1
}

# stat of the device files the product may change, one "path uid gid mode" a line.
device_files() {
  local f
  for f in "$devroot"/dev/nvidia[0-9]* "$devroot"/dev/nvidiactl "$devroot"/dev/nvidia-uvm* "$devroot"/dev/nvidia-caps/*; do
    [ -e "$f" ] && stat -c '%n %u %g %a' "$f"
  done
}
restore_device_files() {
  [ -s "$run/devfiles.before" ] || return 0
  local path uid gid mode
  while read -r path uid gid mode; do
    [ -e "$path" ] || continue
    chown "$uid:$gid" "$path" && chmod "$mode" "$path" || echo "could not restore $path to $uid:$gid $mode"
  done < "$run/devfiles.before"
  device_files > "$run/devfiles.after"
  if cmp -s "$run/devfiles.before" "$run/devfiles.after"; then
    echo "device files: back as found ($(tr '\n' ';' < "$run/devfiles.after"))"
  else
    echo "device files: NOT as found: before $(tr '\n' ';' < "$run/devfiles.before") after $(tr '\n' ';' < "$run/devfiles.after")"
  fi
}

cleanup() {
  trap - EXIT INT TERM
  say "cleanup"
  local pid d mps
  for pid in "${job_pids[@]}"; do kill "$pid" 2>/dev/null; done
  restore_device_files > /dev/null  # first, whatever fails below
  # Every MPS daemon the prologs left (a failed run): through the product's adapter, then directly.
  mps=$(prog vgpu-mps || echo /nonexistent/vgpu-mps)
  if [ -d "${VGPU_MPS_ROOT:-/nonexistent}" ]; then
    for d in "$VGPU_MPS_ROOT"/*/; do
      [ -d "$d" ] || continue
      echo "MPS daemon left for $(basename "$d"): closing it"
      "$mps" --root "$VGPU_MPS_ROOT" close --device "$(basename "$d")" 2>&1
      [ -d "$d/pipe" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$d/pipe timeout 10 "$VGPU_MPS_CONTROL" 2>&1
    done
  fi
  restore_device_files
  if [ "$keep" = 1 ]; then echo "kept: $run"; else rm -rf "$run"; fi
}

as_user() { # user, then a command: run with only that user's credentials
  local u=$1
  shift
  setpriv --reuid="$(id -u "$u")" --regid="$(id -g "$u")" --clear-groups -- "$@"
}

# The environment slurmd gives the Prolog and Epilog of job $1 of user $2 in partition $3, alloc $4.
hook() { # prolog|epilog job user partition alloc
  local kind=$1 job=$2 user=$3 part=$4 alloc=$5 program
  program=$(prog "vgpu-$kind") || { echo "no vgpu-$kind"; return 1; }
  env SLURM_JOB_ID="$job" SLURM_JOB_USER="$user" SLURM_JOB_UID="$(id -u "$user")" SLURM_JOB_GID="$(id -g "$user")" \
    SLURM_JOB_PARTITION="$part" SLURMD_NODENAME="$node" SLURM_CLUSTER_NAME=real-gpu-run VGPU_ALLOC="$alloc" \
    SLURM_SCRIPT_CONTEXT="${kind}_slurmd" "$program"
}

# The job's environment as gres/vgpu sets it for a step, into $run/job-$1.env.
job_env() {
  "$(prog vgpu-job-env)" "$1" > "$run/job-$1.env" 2> "$run/job-$1.err"
}
env_of() { sed -n "s/^$2=//p" "$run/job-$1.env"; }

# Runs gpu-job as user $2 with job $1's environment (the batch step's); arguments after.
run_job_program() {
  local job=$1 user=$2
  shift 2
  local -a vars=(PATH=/usr/bin:/bin HOME=/nonexistent SLURM_JOB_ID="$job")
  mapfile -t -O 3 vars < "$run/job-$job.env"
  as_user "$user" env -i "${vars[@]}" "$run/bin/gpu-job" "$@"
}

json_field() { # file, python expression over d (the last JSON line of the file)
  python3 - "$1" "$2" <<'PY' 2>/dev/null
import json, sys
lines = [l for l in open(sys.argv[1]) if l.strip().startswith("{")]
d = json.loads(lines[-1]) if lines else {}
print(eval(sys.argv[2]))
PY
}

# The last JSON line of a file through a str.format template: {key} is the field ("?" when absent);
# {key_gb} gives a *_bytes field in GB.
json_fmt() {
  python3 - "$1" "$2" <<'PY' 2>/dev/null
import collections, json, sys
lines = [l for l in open(sys.argv[1]) if l.strip().startswith("{")]
d = collections.defaultdict(lambda: "?", json.loads(lines[-1]) if lines else {})
for k, v in list(d.items()):
    if k.endswith("_bytes") and isinstance(v, (int, float)):
        d[k[:-6] + "_gb"] = f"{v / 1e9:.1f}"
print(sys.argv[2].format_map(d))
PY
}

owner_mode() { stat -c '%U %a' "$1"; }

planner_round() {
  say "planner round ($1)"
  "$(prog vgpu-planner)" --once 2>&1 | sed 's/^/  /'
  echo "  advertised: $(tr -d ' \n' < "$VGPU_STATE_DIR/$node/advertisement.json" | grep -o '"counts":{[^}]*}')"
  echo "  $gpu_file: $(owner_mode "$gpu_file")"
}

new_log_lines() { # what the node log gained since the last call
  local n
  n=$(wc -l < "$VGPU_STATE_DIR/$node/vgpu.log" 2>/dev/null || echo 0)
  sed -n "$((log_seen + 1)),${n}p" "$VGPU_STATE_DIR/$node/vgpu.log" 2>/dev/null | sed 's/^/  log: /'
  log_seen=$n
}

# --- run: the checks ---------------------------------------------------------------------------
record_runtime() {
  say "runtime"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "mode: $([ "$fake" = 1 ] && echo "FAKE NVML (rehearsal, no GPU)" || echo "real NVML and CUDA")"
  echo "kernel: $(uname -r) ($(uname -m))"
  echo "boot line: $(cat /proc/cmdline 2>/dev/null)"
  local rt="unknown"
  case "$(uname -r) $(cat /proc/cmdline 2>/dev/null)" in
    *firecracker* | *-fc-*) rt="Firecracker microVM" ;;
    4.4.0*) rt="gVisor (kernel 4.4.0)" ;;
  esac
  dmesg 2>/dev/null | grep -qi gvisor && rt="gVisor"
  echo "runtime: $rt"
  echo "os: $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}")"
  echo "user: $(id)"
  if [ "$fake" = 0 ]; then
    echo "gpu: $(nvidia-smi --query-gpu=index,name,uuid,driver_version,mig.mode.current,compute_mode,persistence_mode,memory.total --format=csv,noheader 2>&1)"
    smi_uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i 0 | tr -d ' ')
    echo "/proc/driver/nvidia/params (device-file lines): $(grep -E '^(ModifyDeviceFiles|DeviceFile)' /proc/driver/nvidia/params | tr '\n' ';')"
    echo "/proc/driver/nvidia/params (whole):"
    sed 's/^/  /' /proc/driver/nvidia/params
  else
    echo "gpu (fake NVML fixture): $(python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["gpus"][0]; print(g["name"], g["uuid"], g["mig_mode"])' "$VGPU_FAKE_NVML_FIXTURE")"
    echo "$devroot/proc/driver/nvidia/params: $(tr '\n' ';' < "$devroot/proc/driver/nvidia/params")"
  fi
  local m found=""
  for m in /usr/bin /usr/sbin /bin /sbin /usr/local/bin /usr/local/sbin; do
    [ -e "$devroot$m/nvidia-modprobe" ] && found="$found $devroot$m/nvidia-modprobe"
  done
  echo "nvidia-modprobe: ${found:-none in the standard directories}"
  echo "nvidia-cuda-mps-control: $VGPU_MPS_CONTROL"
  echo "NVIDIA processes: $(ps -eo user,pid,comm 2>/dev/null | grep -i nvidia | tr -s ' ' | tr '\n' ';')"
  echo "device files: $(device_files | tr '\n' ';')"
}

setup() {
  run=$(mktemp -d /tmp/real-gpu-run.XXXXXX)
  chmod 755 "$run"  # the job users reach their program and the MPS pipe directories below it
  mkdir -p "$run/bin" "$run/slurm-none" && mkdir -m 700 "$run/state"
  node=n1
  export VGPU_NODENAME=$node SLURMD_NODENAME=$node VGPU_STATE_DIR=$run/state VGPU_POLICY=$run/policy.json
  # No slurmd to signal, no Slurm commands (an empty directory: each call fails and is logged).
  export VGPU_SLURMD_PIDFILE=$run/no-slurmd.pid VGPU_SLURM_BIN=$run/slurm-none VGPU_DEMAND_FILE=$run/demand.txt VGPU_CLUSTER_VIEW=slurmctld
  export VGPU_MPS_ROOT=$run/mps VGPU_SCRUB=$run/bin/scrub-and-keep
  export VGPU_HOOK_SERVICE=off  # no planner daemon listens: each hook does its work itself
  : > "$VGPU_DEMAND_FILE"
  # libfmt.so.9 of the build machine, carried beside the programs (stage).
  [ -d "$bin/lib" ] && export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  if [ "$fake" = 1 ]; then
    devroot=$run/devroot
    mkdir -p "$devroot/proc/driver/nvidia" "$devroot/proc/driver/nvidia-caps" "$devroot/dev/nvidia-caps"
    # The lent H200 as captured: MIG off, the driver's device-file settings, no nvidia-modprobe.
    printf 'ModifyDeviceFiles: 1\nDeviceFileUID: 0\nDeviceFileGID: 0\nDeviceFileMode: 438\n' \
      > "$devroot/proc/driver/nvidia/params"
    cp "$repo/fakenvml/fixtures/mig-minors-8gpu.txt" "$devroot/proc/driver/nvidia-caps/mig-minors"
    python3 - "$repo/fakenvml/fixtures/h200-nvl-4gpu-bridged.json" "$run/fixture.json" <<'PY' || return 1
import json, sys
d = json.load(open(sys.argv[1]))
g = d["gpus"][0]
g.update(name="NVIDIA H200", uuid="GPU-5e1f0a7c-0000-4000-8000-00000000f200",
         mig_mode={"current": "disabled", "pending": "disabled"})
g.pop("nvlinks", None)
d.update(gpus=[g], topology={"pairs": []}, source="one H200 with MIG off (real-gpu-run.sh --fake)")
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
    export VGPU_DEVICE_ROOT=$devroot VGPU_FAKE_NVML_DEVICE_ROOT=$devroot
    export VGPU_NVML_LIBRARY=$(prog libnvidia-ml.so.1 || echo /nonexistent/libnvidia-ml.so.1)
    export VGPU_FAKE_NVML_FIXTURE=$run/fixture.json VGPU_FAKE_NVML_STATE=$run/state/fake-nvml-state.json
    export VGPU_MPS_CONTROL=$repo/fakemps/nvidia-cuda-mps-control
    # The GPU's files as the lent machine has them (root 0666).
    : > "$devroot/dev/nvidia0" && chmod 666 "$devroot/dev/nvidia0"
    : > "$devroot/dev/nvidiactl" && chmod 666 "$devroot/dev/nvidiactl"
    chmod -R a+rX "$devroot"
  else
    devroot=""
    export VGPU_MPS_CONTROL=$(command -v nvidia-cuda-mps-control || echo /nonexistent/nvidia-cuda-mps-control)
  fi
  gpu_file=$devroot/dev/nvidia0
  device_files > "$run/devfiles.before"

  # The scrub: the real vgpu-scrub, its JSON line also kept for the report (a stand-in without a GPU).
  local scrub
  if [ "$fake" = 1 ]; then
    scrub=$run/bin/scrub-stand-in
    printf '#!/bin/bash\necho "{\\"vgpu_scrub\\":1,\\"status\\":\\"ok\\",\\"stand_in\\":true,\\"uuid\\":\\"$CUDA_VISIBLE_DEVICES\\",\\"verified_samples\\":0,\\"nonzero_samples\\":0}"\n' > "$scrub"
  else
    scrub=$(prog vgpu-scrub) || scrub=/nonexistent/vgpu-scrub
  fi
  cat > "$VGPU_SCRUB" <<EOF
#!/bin/bash
"$scrub" "\$@" > "$run/scrub.out" 2> "$run/scrub.err"
rc=\$?
{ echo "CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES rc=\$rc"; cat "$run/scrub.out" "$run/scrub.err"; } >> "$run/scrubs.txt"
cat "$run/scrub.out"; cat "$run/scrub.err" >&2
exit \$rc
EOF
  chmod 755 "$run/bin/"*

  # The job's CUDA program: carried, else compiled here.
  if [ "$fake" = 0 ]; then
    if prog gpu-job >/dev/null; then cp "$(prog gpu-job)" "$run/bin/gpu-job"
    else
      local nvcc
      nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
      "$nvcc" -O2 -arch=sm_90 -o "$run/bin/gpu-job" "$here/gpu_job.cu" || echo "gpu-job: nvcc failed"
    fi
    chmod 755 "$run/bin/gpu-job" 2>/dev/null
  fi

  # The job users: nobody (A, and the share jobs) and a second user (B).
  user_a=nobody user_b=vgpu-tenant-b
  id -u "$user_b" >/dev/null 2>&1 ||
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user_b" ||
    echo "could not create $user_b"

  # The policy: whole GPUs for train; two MPS shares of a whole GPU for share. One pair of names
  # per model (an H100 machine may come instead of an H200); each model offers what it has.
  cat > "$run/policy-shares.json" <<'EOF'
{"version": 1, "planner": {"period_s": 5, "starvation_s": 600},
 "share_types": {"half-h200": {"instance": "whole.141gb", "shares": 2},
                 "half-h100": {"instance": "whole.80gb", "shares": 2}},
 "partitions": {
   "train": {"profiles": ["whole.141gb", "whole.80gb"], "mig_mode": "as_found", "scrub": "required"},
   "share": {"profiles": ["half-h200", "half-h100"], "mig_mode": "as_found", "scrub": "required"}}}
EOF
  cat > "$run/policy-whole.json" <<'EOF'
{"version": 1, "planner": {"period_s": 5, "starvation_s": 600},
 "partitions": {
   "train": {"profiles": ["whole.141gb", "whole.80gb"], "mig_mode": "as_found", "scrub": "required"}}}
EOF
  if "$(prog vgpuctl)" policy check "$run/policy-shares.json" > "$run/policy-check.txt" 2>&1; then
    cp "$run/policy-shares.json" "$VGPU_POLICY"
    shares_why=""
  else
    cp "$run/policy-whole.json" "$VGPU_POLICY"
    shares_why="the policy with shares of a whole GPU is refused: $(grep -v '^ ' "$run/policy-check.txt" | tail -3 | tr '\n' ' ')"
  fi
}

# The whole profile and share type of this GPU's model, from the ledger the first round wrote.
pick_types() {
  model=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpus"][0]["model"])' \
    "$VGPU_STATE_DIR/$node/ledger.json" 2>/dev/null)
  case $model in
    H200-141GB) whole=whole.141gb share=half-h200 ;;
    H100-80GB) whole=whole.80gb share=half-h100 ;;
    *) whole="" share="" ;;
  esac
  echo "model: ${model:-none in the ledger}; whole profile ${whole:-none}; share type ${share:-none}"
}

# Whether user $user_b can open the GPU's device file now: "refused" (EACCES) or what happened.
b_opens() {
  local r
  # bash prints strerror(errno): "Permission denied" is EACCES (EPERM would read "Operation not permitted").
  r=$(as_user "$user_b" /bin/bash -c 'exec 3<>"$1" && echo opened' open "$gpu_file" 2>&1)
  case $r in
    *"Permission denied"*) echo "refused (EACCES)" ;;
    *) echo "$r" ;;
  esac
}

# Where the driver resets GPU device files (ModifyDeviceFiles: 1: NVML and CUDA themselves do it,
# device_file_probe shows it), the node must offer no whole GPU it promises to keep to one user.
# The rest of the run then goes on with VGPU_CONFINE_DEVICES=off, as a site that accepts no
# confinement would run, so that the GPU, the shares and the scrub are still checked for real.
check_confinement() {
  say "(a) confinement: does the node offer a whole GPU it cannot keep to its job's user?"
  local modify refusal
  modify=$(sed -n 's/^ModifyDeviceFiles: *//p' "${devroot:-}/proc/driver/nvidia/params" 2>/dev/null)
  confine=on
  if [ "$modify" = 0 ]; then
    echo "  ModifyDeviceFiles: 0: whole GPUs are confined to their job's user"
    return
  fi
  refusal=$(grep -m1 "no whole GPU is offered: .*ModifyDeviceFiles: 1" "$VGPU_STATE_DIR/$node/vgpu.log")
  if [ -n "$refusal" ] && ! grep -q "\"$whole\": *1" "$VGPU_STATE_DIR/$node/advertisement.json"; then
    verdict a-refusal "PASSED" "ModifyDeviceFiles: ${modify:-absent}, and the planner offers no whole GPU: ${refusal#*: planner: }"
  else
    verdict a-refusal "FAILED" "ModifyDeviceFiles: ${modify:-absent}, yet the planner offers $whole (or says nothing): $(tr -d ' \n' < "$VGPU_STATE_DIR/$node/advertisement.json")"
  fi
  echo "  the rest runs with VGPU_CONFINE_DEVICES=off: no device confinement, as a site without"
  echo "  ModifyDeviceFiles=0 would have to run; the GPU, the shares and the scrub are still real"
  export VGPU_CONFINE_DEVICES=off
  confine=off
  planner_round "confinement off"
  new_log_lines
}

check_a() {
  say "(a) a whole GPU for user $user_a (job 1001), refused to $user_b"
  grep -q "\"$whole\": *1" "$VGPU_STATE_DIR/$node/advertisement.json" || {
    verdict a "FAILED" "the planner does not advertise $whole:1 (see its round above)"
    return
  }
  hook prolog 1001 "$user_a" train "$whole:1" 2>&1 | sed 's/^/  prolog: /'
  new_log_lines
  if ! job_env 1001; then
    verdict a "FAILED" "job 1001 has no job environment: $(cat "$run/job-1001.err"); log: $(tail -2 "$VGPU_STATE_DIR/$node/vgpu.log")"
    return
  fi
  sed 's/^/  job env: /' "$run/job-1001.env"
  local cvd
  cvd=$(env_of 1001 CUDA_VISIBLE_DEVICES)
  a_uuid=$cvd
  # B's open(2) of the device file at each step of the job's life: after the prolog, after the
  # job's own CUDA program, after a planner round (the daemon runs one every period_s).
  local steps=() file_ok=1 b
  note_step() { # label
    local om
    om=$(owner_mode "$gpu_file")
    b=$(b_opens)
    echo "  $1: $gpu_file $om; $user_b's open: $b"
    steps+=("$1: $om, $user_b $b")
    [ "$confine" = off ] || { [ "$om" = "$user_a 600" ] && [ "$b" = "refused (EACCES)" ]; } || file_ok=0
  }
  note_step "after the prolog"
  local a_rc=0 a_uuid_seen=""
  if [ "$fake" = 0 ]; then
    run_job_program 1001 "$user_a" --label job-1001-A --alloc-mib 8192 --run-s 3 > "$run/a.json" 2>&1
    a_rc=$?
    sed 's/^/  A: /' "$run/a.json"
    a_uuid_seen=$(json_field "$run/a.json" 'd.get("uuid", "")')
    note_step "after A's CUDA program"
  fi
  planner_round "while job 1001 runs"
  note_step "after a planner round"
  if [ "$fake" = 1 ]; then
    echo "  CUDA: not run (fake NVML, no GPU)"
    if [ "$file_ok" = 1 ] && [[ $cvd == GPU-* ]]; then
      verdict a "COULD NOT RUN" "no GPU here (fake NVML): the job's CUDA program was not run; the rest held: CUDA_VISIBLE_DEVICES=$cvd; $(IFS=';'; echo "${steps[*]}")"
    else
      verdict a "FAILED" "CUDA_VISIBLE_DEVICES=$cvd; $(IFS=';'; echo "${steps[*]}")"
    fi
    return
  fi
  local b_cuda b_rc
  b_cuda=$(as_user "$user_b" env -i PATH=/usr/bin:/bin HOME=/nonexistent CUDA_VISIBLE_DEVICES="$cvd" \
    "$run/bin/gpu-job" --label B-on-A --alloc-mib 64 2>&1)
  b_rc=$?
  echo "  B's CUDA program on $cvd: $b_cuda (exit $b_rc)"
  if [ "$confine" = off ]; then
    verdict a-second-user "COULD NOT RUN" "the driver here resets device files (ModifyDeviceFiles: 1), so the \
node confines nothing (a-refusal); without confinement $user_b's CUDA program on $cvd: exit $b_rc"
  fi
  local detail="job env CUDA_VISIBLE_DEVICES=$cvd (nvidia-smi GPU 0: $smi_uuid); A as $user_a: exit $a_rc, \
$(json_fmt "$run/a.json" '{device} {uuid}, {sms} SMs, {total_mib} MiB, 8 GiB {alloc}, {checked_passes} checked passes in 3 s'); \
$(IFS=';'; echo "${steps[*]}"); $user_b's CUDA program on $cvd: exit $b_rc $(json_fmt <(echo "$b_cuda") '{context}{device}')"
  # Unconfined (a-refusal), the second user's part is a-second-user's verdict, not this one's.
  local b_refused=0
  [ "$b_rc" != 0 ] || [ "$confine" = off ] && b_refused=1
  if [ "$a_rc" = 0 ] && [ "$cvd" = "$smi_uuid" ] && [ "$a_uuid_seen" = "$cvd" ] && [ "$file_ok" = 1 ] && [ "$b_refused" = 1 ]; then
    verdict a "PASSED" "$detail"
  else
    verdict a "FAILED" "$detail"
  fi
}

# Which programs give the device file back to the driver's owner and mode (DeviceFileUID/GID/Mode)
# when ModifyDeviceFiles is 1: the file is set to $user_a 0600 as the prolog sets it, then one
# program runs, and its owner and mode are read again. Diagnostics for (a); no verdict.
device_file_probe() {
  say "which programs reset $gpu_file (set to $user_a 600 before each)"
  [ "$fake" = 0 ] || { echo "  not run (fake NVML)"; return; }
  local label rc
  local -a cmd
  local -a as_a=(as_user "$user_a" env -i PATH=/usr/bin:/bin)
  for label in "nvidia-smi -L, as root" "vgpu-planner --verify (NVML), as root" "a CUDA program, as root" \
    "a CUDA program, as $user_a" "a CUDA program, as $user_a, CUDA_VISIBLE_DEVICES=${a_uuid:-?}, 8 GiB for 3 s" \
    "a CUDA program, as $user_b"; do
    chown "$(id -u "$user_a"):0" "$gpu_file" && chmod 600 "$gpu_file"
    case $label in
      nvidia-smi*) cmd=(nvidia-smi -L) ;;
      vgpu-planner*) cmd=("$(prog vgpu-planner)" --verify) ;;
      *"as root") cmd=("$run/bin/gpu-job" --label probe-root) ;;
      *"as $user_a") cmd=("${as_a[@]}" "$run/bin/gpu-job" --label "probe-$user_a") ;;
      *"8 GiB for 3 s") cmd=("${as_a[@]}" CUDA_VISIBLE_DEVICES="${a_uuid:-}" "$run/bin/gpu-job" --label "probe-$user_a-job"
        --alloc-mib 8192 --run-s 3) ;;
      *"as $user_b") cmd=(as_user "$user_b" env -i PATH=/usr/bin:/bin "$run/bin/gpu-job" --label "probe-$user_b") ;;
    esac
    "${cmd[@]}" > "$run/probe.out" 2>&1
    rc=$?
    echo "  $label: exit $rc, then $gpu_file $(stat -c '%U:%G %a' "$gpu_file") ($(head -c 120 "$run/probe.out" | tr '\n' ' '))"
  done
}

check_scrub() { # label, the UUID the epilog scrubbed (CUDA_VISIBLE_DEVICES)
  local label=$1 uuid=$2
  local line
  line=$(grep -F "CUDA_VISIBLE_DEVICES=$uuid " "$run/scrubs.txt" 2>/dev/null | tail -1)
  if [ -z "$line" ]; then
    scrub_results+=("$label: FAILED: the epilog ran no scrub for $uuid")
    return
  fi
  local json
  json=$(awk -v l="$line" 'found && /^\{/ {last=$0} $0==l {found=1} END {print last}' "$run/scrubs.txt")
  echo "  scrub of $label: $line $json"
  if [ "$fake" = 1 ]; then
    scrub_results+=("$label: COULD NOT RUN: no GPU here (a stand-in answered for vgpu-scrub)")
    return
  fi
  local summary
  summary=$(json_fmt <(echo "$json") 'status {status}, {scrubbed_gb} of {total_gb} GB zeroed (fraction {fraction}), {method} at {gbps} GB/s, {verified_samples} words read back, {nonzero_samples} nonzero, wall {wall_seconds} s')
  if [ "$(json_field <(echo "$json") 'd.get("status") == "ok" and d.get("nonzero_samples") == 0 and d.get("verified_samples", 0) > 0')" = True ] &&
    [ "GPU-$(json_field <(echo "$json") 'd.get("uuid")')" = "$uuid" ] && [[ $line == *" rc=0" ]]; then
    scrub_results+=("$label: PASSED: $summary")
  else
    scrub_results+=("$label: FAILED: $line $summary")
  fi
}

epilog_of() { # job user partition alloc
  hook epilog "$1" "$2" "$3" "$4" 2>&1 | sed "s/^/  epilog $1: /"
  new_log_lines
  echo "  $gpu_file after the epilog of $1: $(owner_mode "$gpu_file")"
  [ -e "$VGPU_STATE_DIR/$node/jobs/$1.json" ] && echo "  job record of $1 still there"
}

check_b() {
  say "(b) two MPS shares of the whole GPU, side by side (jobs 1002, 1003 of $user_a)"
  if [ -n "$shares_why" ]; then
    verdict b "COULD NOT RUN" "$shares_why"
    return
  fi
  [ -n "$share" ] || { verdict b "COULD NOT RUN" "no share type for model '$model'"; return; }
  # The controller's pending jobs, as `vgpu-planner --publish-demand` writes them (squeue's text).
  local now
  now=$(date -u +%Y-%m-%dT%H:%M:%S)
  printf '%s|share|100|%s|Resources|gres/vgpu:%s:1|1|%s|1:00:00|(null)\n' 1002 "$now" "$share" "$user_a" \
    1003 "$now" "$share" "$user_a" > "$VGPU_DEMAND_FILE"
  chmod 644 "$VGPU_DEMAND_FILE"
  planner_round "two share jobs pending"
  new_log_lines
  grep -q "\"$share\": *2" "$VGPU_STATE_DIR/$node/advertisement.json" ||
    echo "  (the planner does not advertise $share:2; the prologs are run anyway)"
  local j
  for j in 1002 1003; do
    hook prolog "$j" "$user_a" share "$share:1" 2>&1 | sed "s/^/  prolog $j: /"
  done
  new_log_lines
  : > "$VGPU_DEMAND_FILE"
  for j in 1002 1003; do
    if ! job_env "$j"; then
      verdict b "FAILED" "job $j has no job environment: $(cat "$run/job-$j.err"); log: $(tail -4 "$VGPU_STATE_DIR/$node/vgpu.log")"
      epilog_of 1002 "$user_a" share "$share:1"
      epilog_of 1003 "$user_a" share "$share:1"
      return
    fi
    sed "s/^/  job env $j: /" "$run/job-$j.env"
  done
  echo "  $gpu_file with the shares: $(owner_mode "$gpu_file")"
  echo "  MPS root: $(ls -A "$VGPU_MPS_ROOT" 2>&1 | tr '\n' ' ')"
  local cap pipe
  cap=$(env_of 1002 VGPU_MEMORY_MIB)
  pipe=$(env_of 1002 CUDA_MPS_PIPE_DIRECTORY)
  echo "  cap per share (VGPU_MEMORY_MIB): $cap MiB; pipe: $pipe"
  if [ "$fake" = 1 ]; then
    # The fake MPS client stands in for CUDA: it rehearses the calls, it measures nothing.
    local client=$repo/fakemps/fake-mps-client
    local -a v2 v3
    mapfile -t v2 < "$run/job-1002.env"
    mapfile -t v3 < "$run/job-1003.env"
    as_user "$user_a" env -i PATH=/usr/bin:/bin "${v2[@]}" "$client" --alloc-mib 4096 --hold-s 2 > "$run/b1.json" 2>&1 &
    local b1=$!
    job_pids+=("$b1")
    sleep 0.5
    as_user "$user_a" env -i PATH=/usr/bin:/bin "${v3[@]}" "$client" --alloc-mib "$((${cap:-0} + 1024))" > "$run/b2.json" 2>&1
    wait "$b1"  # not a bare wait: that would wait for the tee of the output too
    sed 's/^/  B1 (stand-in): /' "$run/b1.json"
    sed 's/^/  B2 (stand-in): /' "$run/b2.json"
    verdict b "COULD NOT RUN" "no GPU here (fake NVML, fake MPS client); the hooks' flow ran: cap $cap MiB per share, pipe $pipe"
  else
    # B1 holds 8 GiB and runs checked kernels for 12 s; B2 starts 3 s later, takes 8 GiB, then
    # asks for its whole cap again (past the cap by 8 GiB): that allocation must fail, and B1 must
    # see nothing of it.
    run_job_program 1002 "$user_a" --label share-1002-B1 --alloc-mib 8192 --run-s 12 > "$run/b1.json" 2>&1 &
    local b1=$!
    job_pids+=("$b1")
    sleep 3
    run_job_program 1003 "$user_a" --label share-1003-B2 --alloc-mib 8192 --second-alloc-mib "${cap:-0}" > "$run/b2.json" 2>&1
    local b2_rc=$?
    wait "$b1"
    local b1_rc=$?
    sed 's/^/  B1: /' "$run/b1.json"
    sed 's/^/  B2: /' "$run/b2.json"
    echo "  MPS servers: $(echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=$pipe timeout 10 "$VGPU_MPS_CONTROL" 2>&1 | tr '\n' ' ')"
    local detail
    detail="cap $cap MiB a share (CUDA_MPS_PIPE_DIRECTORY=$pipe); B1: exit $b1_rc, \
$(json_fmt "$run/b1.json" 'free {free_mib} of {total_mib} MiB, {sms} SMs, 8 GiB {alloc}, run {run}, {checked_passes} checked passes'); \
B2: exit $b2_rc, $(json_fmt "$run/b2.json" 'free {free_mib} MiB, {sms} SMs, 8 GiB {alloc}, then {second_alloc_mib} MiB more: {second_alloc}')"
    local b2_second
    b2_second=$(json_field "$run/b2.json" 'd.get("second_alloc", "")')
    if [ "$b1_rc" = 0 ] && [ "$(json_field "$run/b1.json" 'd.get("checked_passes", 0) > 0')" = True ] &&
      [ "$b2_rc" = 5 ] && [[ $b2_second == *"out of memory"* ]] &&
      [ -n "$pipe" ] && [ "$(json_field "$run/b1.json" 'd.get("mps_pipe")')" = "$pipe" ]; then
      verdict b "PASSED" "$detail"
    else
      verdict b "FAILED" "$detail"
    fi
  fi
  epilog_of 1002 "$user_a" share "$share:1"
  echo "  MPS root after the first share's epilog: $(ls -A "$VGPU_MPS_ROOT" 2>&1 | tr '\n' ' ')"
  epilog_of 1003 "$user_a" share "$share:1"
  echo "  MPS root after the last share's epilog: $(ls -A "$VGPU_MPS_ROOT" 2>&1 | tr '\n' ' ')"
  echo "  MPS processes: $(pgrep -a -f nvidia-cuda-mps | grep -v pgrep | tr '\n' ';' || true)"
  share_uuid=$(env_of 1003 CUDA_VISIBLE_DEVICES)
}

# vgpu-planner --verify on the node state now, and the ledger's GPUs against NVML read directly
# (nvidia-smi), independently of the product. Appends to verify_results.
verify_now() { # label
  local label=$1
  "$(prog vgpu-planner)" --verify > "$run/verify.txt" 2>&1
  local rc=$?
  sed 's/^/  verify: /' "$run/verify.txt"
  "$(prog vgpuctl)" status --state-dir "$VGPU_STATE_DIR" 2>&1 | sed 's/^/  status: /'
  local ledger_gpus nvml_gpus="" apps=""
  ledger_gpus=$(python3 - "$VGPU_STATE_DIR/$node/ledger.json" <<'PY' 2>&1
import json, sys
l = json.load(open(sys.argv[1]))
gpus = ";".join("%s %s" % (g["index"], g["uuid"]) for g in l["gpus"])
inst = ";".join("%s %s job %s" % (i["profile"], i["state"], i.get("job", 0)) for i in l.get("instances", []))
print(gpus, "| instances:", inst or "none")
PY
)
  if [ "$fake" = 0 ]; then
    nvml_gpus=$(nvidia-smi --query-gpu=index,uuid,mig.mode.current --format=csv,noheader 2>&1 | tr -d ',' | tr '\n' ';')
    apps=$(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader 2>&1 | tr '\n' ';')
  fi
  echo "  ledger: $ledger_gpus"
  echo "  NVML (nvidia-smi): ${nvml_gpus:-not asked (fake)}; compute processes: ${apps:-none}"
  local detail="$label: --verify exit $rc: $(tr '\n' ' ' < "$run/verify.txt"); ledger GPUs $ledger_gpus; nvidia-smi ${nvml_gpus:-n/a}"
  local ledger_uuid=${ledger_gpus#* }
  ledger_uuid=${ledger_uuid%% *}
  if [ "$rc" != 0 ]; then
    verify_results+=("FAILED: $detail")
  elif [ "$fake" = 1 ]; then
    verify_results+=("COULD NOT RUN: fake NVML, not a GPU: $detail")
  elif [[ $nvml_gpus == *"$ledger_uuid Disabled"* ]] && [ -z "$apps" ]; then
    verify_results+=("PASSED: $detail")
  else
    verify_results+=("FAILED: the ledger's GPU, MIG mode or processes are not NVML's: $detail; compute processes: $apps")
  fi
}

main_run() {
  while [ $# -gt 0 ]; do
    case $1 in
      --fake) fake=1 ;;
      --keep) keep=1 ;;
      --bin) bin=$2; shift ;;
      --out) out=$2; shift ;;
      *) echo "unknown argument $1"; return 2 ;;
    esac
    shift
  done
  if [ -z "$bin" ]; then
    bin=$repo/build/h200-carry
    [ -d "$bin" ] || bin=$repo/build/rel
  fi
  bin=$(cd "$bin" && pwd) || return 2
  [ "$(id -u)" = 0 ] || { echo "real-gpu-run: needs root (it runs slurmd's hooks and changes device-file owners)"; return 77; }
  job_pids=()
  setup || { echo "real-gpu-run: setup failed"; return 1; }
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  out=${out:-${OUT:-$run}}
  mkdir -p "$out"
  exec > >(tee "$out/real-gpu-run.txt") 2>&1
  echo "command: $0 run $([ "$fake" = 1 ] && echo --fake) --bin $bin"
  echo "programs: $(for p in "${progs[@]}"; do prog "$(basename "$p")" >/dev/null && printf '%s ' "$(basename "$p")"; done)"
  record_runtime
  echo "policy: $(tr -s ' \n' ' ' < "$VGPU_POLICY")"
  [ -n "$shares_why" ] && echo "($shares_why)"
  local missing="" p
  for p in "${progs[@]}"; do
    [ "$fake" = 1 ] && [ "$(basename "$p")" = vgpu-scrub ] && continue  # a stand-in scrubs there
    prog "$(basename "$p")" >/dev/null || missing="$missing $(basename "$p")"
  done
  [ "$fake" = 1 ] && { prog libnvidia-ml.so.1 >/dev/null || missing="$missing libnvidia-ml.so.1(fake)"; }
  [ "$fake" = 0 ] && [ ! -x "$run/bin/gpu-job" ] && missing="$missing gpu-job"
  if [ -n "$missing" ]; then
    for c in a b c d; do verdict "$c" "COULD NOT RUN" "missing:$missing"; done
    return 1
  fi
  log_seen=0
  planner_round "first"
  new_log_lines
  pick_types
  if [ -z "$whole" ]; then
    for c in a b c d; do verdict "$c" "COULD NOT RUN" "no GPU with MIG off that this script knows (model '$model')"; done
    return 1
  fi
  scrub_results=() verify_results=()
  check_confinement
  check_a
  say "(c) the epilog of job 1001 scrubs its GPU"
  epilog_of 1001 "$user_a" train "$whole:1"
  [ -n "${a_uuid:-}" ] && check_scrub "job 1001 ($whole)" "$a_uuid"
  planner_round "after job 1001"
  say "(d) vgpu-planner --verify after the whole-GPU job"
  verify_now "after the whole-GPU job"
  # The shares on the node's state started afresh, as a planner starting with share jobs pending:
  # from the whole-GPU plan above, the share plan is a shrink, which waits for slurmctld to confirm
  # the new split, and no slurmctld is here (it would time out and leave the plan as it is).
  say "a fresh node state for the shares (the whole-GPU run's is kept as state-whole)"
  mv "$VGPU_STATE_DIR" "$run/state-whole" && mkdir -m 700 "$VGPU_STATE_DIR"
  log_seen=0
  share_uuid=""
  check_b
  [ -n "$share_uuid" ] && check_scrub "the shares' GPU ($share)" "$share_uuid"
  local r status=PASSED detail=""
  for r in "${scrub_results[@]}"; do
    detail="$detail${detail:+; }$r"
    case $r in
      *": FAILED:"*) status=FAILED ;;
      *": COULD NOT RUN:"*) [ "$status" = PASSED ] && status="COULD NOT RUN" ;;
    esac
  done
  [ ${#scrub_results[@]} = 0 ] && status="COULD NOT RUN" detail="no epilog scrubbed anything (job 1001 got no GPU)"
  verdict c "$status" "$detail"
  say "(d) vgpu-planner --verify at the end"
  verify_now "at the end, after the shares"
  status=PASSED detail=""
  for r in "${verify_results[@]}"; do
    detail="$detail${detail:+; }$r"
    case $r in
      FAILED:*) status=FAILED ;;
      "COULD NOT RUN:"*) [ "$status" = PASSED ] && status="COULD NOT RUN" ;;
    esac
  done
  verdict d "$status" "$detail"
  device_file_probe
  say "summary"
  for r in "${verdicts[@]}"; do echo "$r"; done
  return 0
}

case ${1:-} in
  stage) shift; stage "${1:?usage: real-gpu-run.sh stage BUILD_DIR DEST}" "${2:?usage: real-gpu-run.sh stage BUILD_DIR DEST}" ;;
  run) shift; main_run "$@" ;;
  *) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
