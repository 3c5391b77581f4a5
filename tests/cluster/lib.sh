# shellcheck shell=bash
# Local multi-slurmd Slurm cluster for integration tests of slurm-vgpu. Source it; run as root.
#
#   . tests/cluster/lib.sh
#   VC_PLUGIN_DIR=/path/with/gres_vgpu.so      # required: where the built plugin is
#   vc_start [extra slurm.conf lines]           # munged + slurmctld + slurmd per node, waits idle
#   ...                                         # scenario
#   vc_stop                                     # kills only the daemons it started, by PID
#   (scenarios use: trap 'vc_finish $?' EXIT   -> stop, and remove the run dir unless it failed)
#
# Layout (all under one per-run dir $VC_RUN, default mktemp -d /tmp/vgpu-cluster.XXXXXX):
#   etc/slurm.conf  etc/job_submit.lua  etc/hooks/   log/{slurmctld,slurmd.<n>}.log  run/*.pid
#   spool/<n>/  ctld-state/  munge/  out/ (job output, world-writable)
#   vgpu/<n>/advertisement.json  vgpu/<n>/jobs/<id>.json   ($VGPU_STATE_DIR, exported to daemons)
#
# Settings (environment, before vc_start):
#   VC_NODES="n1 n2 n3"   VC_TOTAL=56 (8 GPUs x 7: the constant vgpu total per node)
#   VC_PROFILES           profiles the FUTURE placeholder declares (at VC_TOTAL each) and the
#                         job_submit filter accepts; default: the A100/H100/H200/A30 MIG profiles
#   VC_SHARE_TYPES        share types the FUTURE placeholder declares and the filter accepts as
#                         such, "<type>:user|any ..." (whose jobs may share an instance); default none
#   VC_SLURMD_TIMEOUT=30  (periodic re-registration happens every 20 pings = 20*timeout/3 s)
#   VC_CRED_EXPIRE        job credential lifetime (s); also how long a requeued job waits (Slurm: 120)
#   VC_AUTH=munge|none    VC_PROLOG / VC_EPILOG: script paths for Prolog= / Epilog=
#   VC_SUBMIT_FILTER      the job_submit.lua to install (default: the repository's)
#   VC_ACCOUNTING=1       slurmdbd over a real MariaDB, started and stopped with the cluster
#                         (accounting.sh)
#   VC_SLURM_PREFIX       another Slurm release built by scripts/build-slurm.sh (its prefix/):
#                         its daemons, commands and plugins are used instead of Debian's
#   VC_CTLD_BIN / VC_SLURMD_BIN  the slurmctld / slurmd to start (default: the release's), and
#   VC_EXTRA_PLUGIN_DIRS  more PluginDir entries, for daemons of two releases in one cluster
#                         (an upgrade): each daemon loads the plugins of its own version and
#                         passes over the others (src/common/plugin.c tries every directory)
#
# Functions (all return non-zero on failure; vc_fail prints and exits the scenario):
#   vc_init (run dir + VGPU_STATE_DIR, to write advertisements before vc_start)
#   vc_start vc_stop vc_ctld_start vc_ctld_stop vc_slurmd_start N vc_slurmd_stop N
#   vc_reconfigure vc_wait_idle [s] vc_hup N
#   vc_write_advertisement N GEN "1g.10gb=4 3g.40gb=1"    atomic tmp+rename, as the planner does
#   vc_advertise N GEN "counts"          write + hand to slurmctld the release's way + wait until
#                                        slurmctld shows the split (vc_publish_split N "counts")
#   vc_node_gres N                       slurmctld's view, non-zero types sorted: "1g.10gb:4,3g.40gb:1,free:51"
#   vc_expected_gres "counts"            the same form for an advertisement (free padding added)
#   vc_wait_gres N "counts" [s]          vc_assert_gres N "counts"
#   vc_assert_no_bad_nodes               no real node DRAIN/INVAL/DOWN/FAIL/NOT_RESPONDING
#   vc_sbatch ARGS...                    prints the job id      vc_job_state J
#   proc_alive PID                       the process runs (a zombie does not; tests/process.sh)
#   vc_wait_job J REGEX [s]              vc_wait_periodic_registration [s]

# Debian's python3 (scripts/install-deps.sh installs the modules the scenarios use for it) before
# any other on PATH: a pyenv shim, as on this project's machines, costs 0.5-1 s a start, and a
# scenario starts python3 a hundred times.
[ -x /usr/bin/python3 ] && export PATH=/usr/bin:$PATH
VC_NODES=${VC_NODES:-"n1 n2 n3"}
VC_TOTAL=${VC_TOTAL:-56}
VC_AUTH=${VC_AUTH:-munge}
VC_SLURMD_TIMEOUT=${VC_SLURMD_TIMEOUT:-30}
VC_PROFILES=${VC_PROFILES:-"1g.5gb 1g.5gb+me 1g.6gb 1g.6gb+me 1g.10gb 1g.10gb+me 1g.12gb 1g.12gb+me 1g.18gb 1g.18gb+me 1g.20gb 1g.24gb 1g.35gb 2g.10gb 2g.12gb 2g.12gb+me 2g.20gb 2g.24gb 2g.35gb 3g.20gb 3g.40gb 3g.47gb 3g.71gb 4g.20gb 4g.24gb 4g.40gb 4g.47gb 4g.71gb 7g.40gb 7g.80gb 7g.94gb 7g.141gb cpx.24gb qpx.48gb dpx.96gb spx.192gb cpx.32gb qpx.64gb dpx.128gb spx.256gb"}
VC_SLURM_LIBDIR=${VC_SLURM_LIBDIR:-/usr/lib/x86_64-linux-gnu/slurm-wlm}
if [ -n "${VC_SLURM_PREFIX:-}" ]; then
  export PATH=$VC_SLURM_PREFIX/bin:$VC_SLURM_PREFIX/sbin:$PATH
  VC_SLURM_LIBDIR=$VC_SLURM_PREFIX/lib/slurm
fi
VC_SLURM_VERSION=$(slurmctld -V 2>/dev/null | awk '{print $2}')
# "2211" for 22.11.x: releases compare as numbers.
_vc_release_number() { local IFS=.; set -- $1; printf '%d%02d' "$((10#$1))" "$((10#$2))"; }
VC_SLURM_RELEASE=$(_vc_release_number "${VC_SLURM_VERSION:-0.0.0}")
VC_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$VC_HERE/../process.sh"
. "$VC_HERE/accounting.sh"

vc_log() { echo "[$(date +%T.%3N)] $*" >&2; }
vc_fail() {
  echo "FAIL: $*" >&2
  [ -n "${VC_RUN:-}" ] && [ -d "$VC_RUN/log" ] && {
    tail -n 25 "$VC_RUN"/log/slurmctld.log >&2
    sinfo -N -h -O 'NodeList:8,StateLong:14,Gres:90,Reason:40' >&2 2>/dev/null
  }
  exit 1
}

# Free TCP ports for the daemons, away from the lab's 16817/17001 and below the kernel's
# ephemeral range (ip_local_port_range, 32768 up by default): a port there can be the local end of
# any outgoing connection (slurmctld pinging a slurmd, a client of MariaDB or Prometheus), which
# `ss -ltn` does not list and which makes a daemon's bind fail ("Address already in use", seen
# once in e2e.crash_matrix).
# A port no socket uses and no cluster on this host has been handed: the daemons bind theirs only
# when they start, so without a record 258 random picks out of 12,768 ports collide more often than
# not (slurmctld then "talking with itself" on a node's port, that node never responding), and two
# clusters started side by side (ctest runs two at a time) would pick each other's. The record is
# host-wide, one line "port run-dir" per port, under a lock; the lines of run dirs that are gone
# are dropped as it is read.
if [ -z "${VC_PORT_RECORD:-}" ]; then
  VC_PORT_RECORD=/run/lock/vgpu-test-cluster-ports
  [ -d /run/lock ] && [ -w /run/lock ] || VC_PORT_RECORD=/tmp/vgpu-test-cluster-ports  # a container's /run
fi
_vc_port_record_forget_gone_runs() { # under the record's lock
  local d gone=""
  touch "$VC_PORT_RECORD"
  for d in $(cut -d' ' -f2 "$VC_PORT_RECORD" | sort -u); do [ -d "$d" ] || gone+="$d "; done
  [ -n "$gone" ] || return 0
  awk -v gone="$gone" 'BEGIN {n = split(gone, g, " "); for (i = 1; i <= n; i++) dead[g[i]] = 1}
    !($2 in dead)' "$VC_PORT_RECORD" > "$VC_PORT_RECORD.new" && mv "$VC_PORT_RECORD.new" "$VC_PORT_RECORD"
}
_vc_free_port() {
  local low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "${low:-0}" -gt 21000 ] 2>/dev/null || low=32768
  (
    flock -w 30 9 || exit 1
    _vc_port_record_forget_gone_runs
    for _ in $(seq 200); do
      p=$((20000 + RANDOM % (low - 20000)))
      awk -v p="$p" '$1 == p {found = 1} END {exit !found}' "$VC_PORT_RECORD" && continue
      ss -tanH "sport = :$p" 2>/dev/null | grep -q . && continue
      echo "$p ${VC_RUN:-/nonexistent}" >> "$VC_PORT_RECORD"
      echo "$p"
      exit 0
    done
    exit 1
  ) 9>"$VC_PORT_RECORD.lock"
}

vc_init() { # creates the run dir and exports VGPU_STATE_DIR; vc_start calls it too
  [ -n "${VC_INITIALIZED:-}" ] && return 0
  VC_INITIALIZED=1
  [ "$(id -u)" = 0 ] || vc_fail "the cluster harness needs root (slurmd)"
  [ -f "${VC_PLUGIN_DIR:-}/gres_vgpu.so" ] || vc_fail "VC_PLUGIN_DIR='${VC_PLUGIN_DIR:-}' holds no gres_vgpu.so"
  VC_RUN=${VC_RUN:-$(mktemp -d /tmp/vgpu-cluster.XXXXXX)}
  mkdir -p "$VC_RUN"/{etc/hooks,log,run,spool,ctld-state,munge,out,vgpu}
  chmod 755 "$VC_RUN" "$VC_RUN"/{etc,etc/hooks,log,run,spool,vgpu}
  chmod 1777 "$VC_RUN/out"
  local n
  for n in $VC_NODES; do mkdir -p "$VC_RUN/vgpu/$n/jobs"; done
  export SLURM_CONF=$VC_RUN/etc/slurm.conf VGPU_STATE_DIR=$VC_RUN/vgpu
  VC_CTLD_PORT=${VC_CTLD_PORT:-$(_vc_free_port)}
  declare -gA VC_PORT
  for n in $VC_NODES future; do VC_PORT[$n]=$(_vc_free_port); done
  if [ "$VC_ACCOUNTING" = 1 ]; then VC_DB_PORT=$(_vc_free_port); VC_DBD_PORT=$(_vc_free_port); fi
}

_vc_munge_start() {
  [ "$VC_AUTH" = munge ] || return 0
  local m=$VC_RUN/munge
  chown munge:munge "$m" && chmod 0711 "$m"   # munged refuses a 0700 socket dir
  mungekey --create --keyfile="$m/munge.key" --bits=1024 >/dev/null 2>&1 || return 1
  chown munge:munge "$m/munge.key" && chmod 0600 "$m/munge.key"
  runuser -u munge -- munged --key-file="$m/munge.key" --socket="$m/munge.socket" \
    --pid-file="$m/munged.pid" --log-file="$m/munged.log" --seed-file="$m/munged.seed" || return 1
  for _ in $(seq 50); do [ -s "$m/munged.pid" ] && break; sleep 0.1; done
  cp "$m/munged.pid" "$VC_RUN/run/munged.pid"
  munge -S "$m/munge.socket" -n | unmunge -S "$m/munge.socket" >/dev/null
}

# Real nodes: the constant total as free plus the permanent zero type (docs/slurm.md). The
# placeholder declares every profile at its maximum so valid requests pend instead of being rejected.
_vc_gres_line() { # $1 node
  local total p n
  # VC_GRES_LINE (with VC_GRES_TYPES): every node's Gres= as a site without slurm-vgpu has it.
  [ -n "${VC_GRES_LINE:-}" ] && { echo "$VC_GRES_LINE"; return 0; }
  total=$(vc_total_of "$1")
  if [ "${1:-}" = future ]; then
    # The placeholder declares every type at the largest node total (docs/slurm.md), so a mixed
    # cluster's MI300X node (16) is not capped by the H100 nodes' 14.
    for n in $VC_NODES; do [ "$(vc_total_of "$n")" -gt "$total" ] && total=$(vc_total_of "$n"); done
  fi
  local line="vgpu:never:0,vgpu:free:$total"
  if [ "${1:-}" = future ]; then for p in $VC_PROFILES ${VC_SHARE_TYPES:-}; do line+=",vgpu:${p%%:*}:$total"; done; fi
  echo "$line"
}

# A node's constant vgpu total: VC_TOTAL_<node> where set (a mixed cluster's MI300X node has 8
# partitions per GPU, a MIG GPU 7 instances), else VC_TOTAL.
vc_total_of() {
  local v="VC_TOTAL_${1:-}"
  echo "${!v:-$VC_TOTAL}"
}

vc_conf_write() { # $1: extra lines
  local n auth
  if [ "$VC_AUTH" = munge ]; then
    auth="AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$VC_RUN/munge/munge.socket${VC_CRED_EXPIRE:+,cred_expire=$VC_CRED_EXPIRE}"
  else
    auth="AuthType=auth/none
CredType=cred/none${VC_CRED_EXPIRE:+
AuthInfo=cred_expire=$VC_CRED_EXPIRE}"
  fi
  {
    cat <<EOF
ClusterName=vgputest
SlurmctldHost=localhost
SlurmctldPort=$VC_CTLD_PORT
SlurmUser=root
SlurmdUser=root
$auth
PluginDir=$VC_PLUGIN_DIR:$VC_SLURM_LIBDIR${VC_EXTRA_PLUGIN_DIRS:+:$VC_EXTRA_PLUGIN_DIRS}
GresTypes=${VC_GRES_TYPES:-vgpu}
StateSaveLocation=$VC_RUN/ctld-state
SlurmdSpoolDir=$VC_RUN/spool/%n
SlurmctldPidFile=$VC_RUN/run/slurmctld.pid
SlurmdPidFile=$VC_RUN/run/slurmd.%n.pid
SlurmctldLogFile=$VC_RUN/log/slurmctld.log
SlurmdLogFile=$VC_RUN/log/slurmd.%n.log
SlurmctldDebug=debug
SlurmdDebug=debug
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
$(_vc_accounting_conf)
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,bf_interval=1
ReturnToService=2
SlurmdTimeout=$VC_SLURMD_TIMEOUT
InactiveLimit=0
KillWait=2
MinJobAge=${VC_MIN_JOB_AGE:-300}
MailProg=/bin/true
JobSubmitPlugins=lua
EOF
    [ -n "${VC_PROLOG:-}" ] && echo "Prolog=$VC_PROLOG"
    [ -n "${VC_EPILOG:-}" ] && echo "Epilog=$VC_EPILOG"
    [ -n "${1:-}" ] && printf '%s\n' "$1"
    for n in $VC_NODES; do
      echo "NodeName=$n NodeHostname=localhost Port=${VC_PORT[$n]} CPUs=2 RealMemory=1000 State=UNKNOWN Gres=$(_vc_gres_line "$n")"
    done
    # VC_FUTURE_FEATURES: features only this never-scheduled node holds, so that a job may prefer
    # them while no real node has them (planner.node_features; docs/admin.md).
    echo "NodeName=future NodeHostname=localhost Port=${VC_PORT[future]} CPUs=2 RealMemory=1000 State=FUTURE Gres=$(_vc_gres_line future)${VC_FUTURE_FEATURES:+ Features=$VC_FUTURE_FEATURES}"
    echo "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
  } > "$SLURM_CONF"
  _vc_job_submit_write
}

_vc_job_submit_write() { # the filter, plus its data: valid profiles per partition
  local filter=${VC_SUBMIT_FILTER:-$VC_HERE/../../jobsubmit/job_submit.lua}
  cp "$filter" "$VC_RUN/etc/job_submit.lua"
  cp "$(dirname "$filter")/vgpu_submit_filter.lua" "$VC_RUN/etc/vgpu_submit_filter.lua"
  {
    echo "-- generated by tests/cluster/lib.sh: valid vgpu profiles per partition"
    echo "return { default = \"main\", partitions = {"
    printf '  main = {'
    local p; for p in $VC_PROFILES ${VC_SHARE_TYPES:-}; do printf '"%s",' "${p%%:*}"; done
    echo "},"
    printf '}, shares = {\n  main = {'
    for p in ${VC_SHARE_TYPES:-}; do printf '["%s"] = "%s",' "${p%%:*}" "${p#*:}"; done
    echo "},"
    # VC_PER_JOB_LIMIT: the policy's max_instances_per_job for main, as vgpuctl submit-table writes it.
    local limits=""
    [ -n "${VC_PER_JOB_LIMIT:-}" ] && limits=", limits = { main = { per_job = $VC_PER_JOB_LIMIT } }"
    echo "}$limits }"
  } > "$VC_RUN/etc/vgpu_profiles.lua"
}

vc_ctld_start() { # args: extra slurmctld flags (-c to clear state)
  "${VC_CTLD_BIN:-slurmctld}" -f "$SLURM_CONF" "$@" || return 1
  for _ in $(seq 150); do scontrol ping 2>/dev/null | grep -q 'is UP' && return 0; sleep 0.2; done
  vc_log "slurmctld did not come up"; return 1
}

vc_slurmd_start() { # $1 node
  mkdir -p "$VC_RUN/spool/$1"
  "${VC_SLURMD_BIN:-slurmd}" -f "$SLURM_CONF" -N "$1" || return 1
}

_vc_stop_pidfile() { # $1 pid file, $2 seconds to wait for SIGTERM before SIGKILL (10)
  local f=$1 pid
  # The daemon removes its own pid file as it exits: it may be gone between test and read.
  pid=$(cat "$f" 2>/dev/null) && [ -n "$pid" ] || return 0
  if proc_alive "$pid"; then
    kill "$pid" 2>/dev/null
    for _ in $(seq $((${2:-10} * 10))); do proc_alive "$pid" || break; sleep 0.1; done
    proc_alive "$pid" && kill -9 "$pid" 2>/dev/null
  fi
  rm -f "$f"
}

# $1: seconds to wait before SIGKILL. A restart that means to keep the jobs waits as systemd does
# (TimeoutStopSec=90 s by default): a SIGKILLed slurmctld loses what it had not saved yet.
vc_ctld_stop() { _vc_stop_pidfile "$VC_RUN/run/slurmctld.pid" "${1:-10}"; }
vc_slurmd_stop() { _vc_stop_pidfile "$VC_RUN/run/slurmd.$1.pid"; }
vc_slurmd_pid() { cat "$VC_RUN/run/slurmd.$1.pid"; }
vc_hup() { kill -HUP "$(vc_slurmd_pid "$1")"; }
vc_reconfigure() { scontrol reconfigure; }

vc_wait_idle() { # all real nodes idle/mixed/allocated
  local t=0 lim=$(( ${1:-60} * 5 )) nodes
  nodes=$(echo "$VC_NODES" | tr ' ' ',')
  # sinfo -N prints a node once per partition it is in: count distinct names.
  while sinfo -h -N -n "$nodes" -o '%N %t' 2>/dev/null | grep -qvE ' (idle|mix|alloc)$' ||
        [ "$(sinfo -h -N -n "$nodes" -o '%N' 2>/dev/null | sort -u | wc -l)" -ne "$(echo $VC_NODES | wc -w)" ]; do
    sleep 0.2; t=$((t + 1)); [ $t -ge $lim ] && { vc_log "nodes not idle: $(sinfo -h -N -o '%N:%t' | tr '\n' ' ')"; return 1; }
  done
  return 0
}

vc_start() { # $1: extra slurm.conf lines
  vc_init
  vc_log "cluster run dir $VC_RUN (ctld port $VC_CTLD_PORT, Slurm ${VC_SLURM_VERSION:-?} from $(dirname "$(command -v slurmctld)"))"
  _vc_munge_start || vc_fail "munged did not start"
  vc_conf_write "${1:-}"
  vc_accounting_start || vc_fail "accounting (MariaDB + slurmdbd) did not start"
  vc_ctld_start -c -i || vc_fail "slurmctld did not start"
  local n
  for n in $VC_NODES; do vc_slurmd_start "$n" || vc_fail "slurmd $n did not start"; done
  vc_wait_idle 60 || vc_fail "nodes did not become idle"
}

vc_stop() {
  [ -n "${VC_RUN:-}" ] && [ -d "$VC_RUN/run" ] || return 0
  local n pid
  # Jobs first, so no slurmstepd outlives its slurmd; only with a controller to ask: scancel retries
  # an absent one for 18 s (a second vc_stop, as crash_matrix.sh's exit trap makes, paid that).
  pid=$(cat "$VC_RUN/run/slurmctld.pid" 2>/dev/null)
  if [ -n "$pid" ] && proc_alive "$pid"; then scancel --full -u root >/dev/null 2>&1 && sleep 0.5; fi
  # SIGTERM everything first: each daemon takes ~2 s to wind down, in parallel that is paid once.
  for pid in $(cat "$VC_RUN"/run/slurmd.*.pid "$VC_RUN/run/slurmctld.pid" 2>/dev/null); do kill "$pid" 2>/dev/null; done
  for n in $VC_NODES; do vc_slurmd_stop "$n"; done
  vc_ctld_stop
  vc_accounting_stop
  # slurmstepd processes re-parented to init: ours carry this run's SLURM_CONF in their environment,
  # or, where the process title overwrote it, work in this run's directory (slurmd's log dir).
  # SIGKILL: slurmstepd blocks SIGTERM, and one whose job is gone keeps trying to tell the stopped
  # slurmd for minutes.
  for pid in $(pgrep -x slurmstepd); do
    if grep -qsz "^SLURM_CONF=$SLURM_CONF\$" "/proc/$pid/environ" ||
       [[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$VC_RUN"/* ]]; then
      kill -9 "$pid" 2>/dev/null
    fi
  done
  _vc_stop_pidfile "$VC_RUN/run/munged.pid"
  vc_log "cluster stopped ($VC_RUN)"
}

# EXIT trap for scenarios: stop the cluster; keep the run dir (logs) only when the scenario failed
# or VC_KEEP=1.
vc_finish() {
  local rc=$1
  vc_stop
  if [ "$rc" = 0 ] && [ "${VC_KEEP:-0}" != 1 ] && [ -n "${VC_RUN:-}" ]; then
    rm -rf "$VC_RUN"
  elif [ -n "${VC_RUN:-}" ]; then
    echo "logs kept in $VC_RUN" >&2
  fi
}

# ---- advertisements ----
vc_write_advertisement() { # $1 node $2 generation $3 "type=count ..."
  local node=$1 gen=$2 counts="" item dir=$VGPU_STATE_DIR/$1
  for item in $3; do counts+="${counts:+,}\"${item%%=*}\":${item#*=}"; done
  mkdir -p "$dir"
  printf '{"format":"slurm-vgpu-advertisement","version":1,"node":"%s","generation":%s,"counts":{%s}}\n' \
    "$node" "$gen" "$counts" > "$dir/.advertisement.json.tmp"
  mv -f "$dir/.advertisement.json.tmp" "$dir/advertisement.json"
}

vc_expected_gres() { # "type=count ..." [node] -> non-zero types plus the free padding, sorted
  local item sum=0 out=() total
  total=$(vc_total_of "${2:-}")
  for item in $1; do
    out+=("${item%%=*}:${item#*=}")
    sum=$((sum + ${item#*=}))
  done
  out+=("free:$((total - sum))")
  printf '%s\n' "${out[@]}" | grep -v ':0$' | sort | tr '\n' ',' | sed 's/,$//'
}

vc_node_gres() { # slurmctld's configured split for a node, non-zero types, sorted
  scontrol show node "$1" 2>/dev/null | sed -n 's/^ *Gres=//p' | tr ',' '\n' |
    sed -E 's/\(.*\)//; s/^vgpu://' | grep -v ':0$' | sort | tr '\n' ',' | sed 's/,$//'
}

vc_wait_gres() { # $1 node $2 counts [$3 seconds]
  local want got t=0 lim=$(( ${3:-20} * 5 ))
  want=$(vc_expected_gres "$2" "$1")
  while got=$(vc_node_gres "$1"); [ "$got" != "$want" ]; do
    sleep 0.2; t=$((t + 1))
    [ $t -ge $lim ] && { vc_log "$1: slurmctld shows '$got', advertisement says '$want'"; return 1; }
  done
  return 0
}

vc_assert_gres() { vc_wait_gres "$1" "$2" "${3:-1}" || vc_fail "$1: GRES split differs from the advertisement"; }

# How a new split reaches slurmctld, as the planner hands it over (docs/slurm.md): before 23.11
# slurmd re-registers on SIGHUP and the plugin reports the file; from 23.11 slurmctld ignores a
# same-total split at registration, so it is set with scontrol update (same total, every type
# listed), once slurmd's own report (which the plugin keeps equal to the file and records in
# slurmd-report.json) says the same.
vc_publish_split() { # $1 node $2 "type=count ..."
  if [ "$VC_SLURM_RELEASE" -ge 2311 ]; then
    local gres item sum=0
    for item in $2; do gres+="${gres:+,}vgpu:${item%%=*}:${item#*=}"; sum=$((sum + ${item#*=})); done
    vc_wait_slurmd_report "$1" "$2" 5 || return 1
    scontrol update NodeName="$1" Gres="vgpu:free:$(($(vc_total_of "$1") - sum))${gres:+,$gres}"
  else
    vc_hup "$1"
  fi
}

vc_wait_slurmd_report() { # $1 node $2 "type=count ..." [$3 s]: slurmd reports that split (23.11+)
  local t=0 lim=$(( ${3:-5} * 10 ))
  until python3 - "$VGPU_STATE_DIR/$1/slurmd-report.json" "$2" <<'PY' 2>/dev/null
import json, sys
want = {k: int(v) for k, v in (i.split("=") for i in sys.argv[2].split())}
got = json.load(open(sys.argv[1]))["counts"]
sys.exit(0 if {k: v for k, v in want.items() if v} == got else 1)
PY
  do
    t=$((t + 1)); [ $t -ge $lim ] && { vc_log "$1: slurmd does not report '$2'"; return 1; }
    sleep 0.1
  done
}

vc_advertise() { # $1 node $2 gen $3 counts: the planner's move, then wait for slurmctld to adopt it
  vc_write_advertisement "$1" "$2" "$3"
  vc_publish_split "$1" "$3"
  vc_wait_gres "$1" "$3" 20
}

vc_assert_no_bad_nodes() {
  local n state
  for n in $VC_NODES; do
    state=$(scontrol show node "$n" | sed -n 's/^ *State=\([^ ]*\).*/\1/p')
    case "$state" in
      *DRAIN*|*INVAL*|*DOWN*|*FAIL*|*NOT_RESPONDING*|'')
        vc_fail "node $n is in state '$state': $(scontrol show node "$n" | grep -o 'Reason=.*')" ;;
    esac
  done
}

# ---- jobs ----
vc_sbatch() { sbatch --parsable -o "$VC_RUN/out/job-%j.out" "$@"; }
vc_job_state() { scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
vc_wait_job() { # $1 job $2 state regex [$3 seconds]
  local st t=0 lim=$(( ${3:-30} * 10 ))
  while st=$(vc_job_state "$1"); ! echo "$st" | grep -qE "^($2)$"; do
    sleep 0.1; t=$((t + 1))
    [ $t -ge $lim ] && { vc_log "job $1 is '$st', wanted $2"; return 1; }
  done
  return 0
}

# slurmctld asks every node to re-register about every 20 pings (ping_nodes.c MAX_REG_FREQUENCY);
# this waits for the next such round and gives the nodes time to answer it.
vc_wait_periodic_registration() { # [$1 seconds]
  local log=$VC_RUN/log/slurmctld.log before t=0 lim=$(( ${1:-120} * 5 ))
  before=$(grep -c 'Spawning registration agent' "$log")
  while [ "$(grep -c 'Spawning registration agent' "$log")" -le "$before" ]; do
    sleep 0.2; t=$((t + 1)); [ $t -ge $lim ] && { vc_log "no periodic registration round"; return 1; }
  done
  sleep 3
}
