# shellcheck shell=bash
# Slurm accounting for the local test cluster: a real MariaDB (Debian's mariadb-server) in the run
# dir, with its own data dir, socket and TCP port, and slurmdbd over it; both started here and
# stopped by PID. Sourced by lib.sh; on with VC_ACCOUNTING=1 before vc_start / vp_start.
#
#   $VC_RUN/mysql/{data,run/mysqld.sock,run/mysqld.pid}  log/{mariadb,slurmdbd}.log
#   etc/slurmdbd.conf (beside slurm.conf: slurmdbd finds it through SLURM_CONF's directory)
#
# slurm.conf gains accounting_storage/slurmdbd with AccountingStorageTRES = gres/vgpu plus every
# vgpu type jobs can ask for (VC_ACCOUNTING_TRES, default: one per profile in VC_PROFILES), and
# job comments stored (the product writes why it cancelled a job there).
#
#   vc_accounting_rollup T   makes slurmdbd roll up every hour before unix time T now (see below)
#   vc_accounting_ahead H CMD   runs CMD (sreport) with the clock H hours ahead

VC_ACCOUNTING=${VC_ACCOUNTING:-0}
VC_DB_USER=slurm

# The slurm.conf lines; accounting_storage/none when accounting is off.
_vc_accounting_conf() {
  if [ "$VC_ACCOUNTING" != 1 ]; then
    echo "AccountingStorageType=accounting_storage/none"
    return
  fi
  local tres=${VC_ACCOUNTING_TRES:-} p
  if [ -z "$tres" ]; then
    tres=gres/vgpu
    for p in $VC_PROFILES; do tres+=",gres/vgpu:$p"; done
  fi
  # The connection to slurmdbd takes its munge socket from AccountingStoragePass, not AuthInfo.
  [ "$VC_AUTH" = munge ] && echo "AccountingStoragePass=$VC_RUN/munge/munge.socket"
  cat <<EOF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$VC_DBD_PORT
AccountingStorageTRES=$tres
AccountingStoreFlags=job_comment
EOF
}

_vc_mariadb_start() {
  local m=$VC_RUN/mysql
  mkdir -p "$m/data" "$m/run"
  chown -R mysql:mysql "$m"
  mariadb-install-db --no-defaults --user=mysql --datadir="$m/data" --skip-test-db \
    --auth-root-authentication-method=socket >> "$VC_RUN/log/mariadb-install.log" 2>&1 || return 1
  # Small buffers: a test database of a few hundred rows, on a 2-core machine beside three slurmd.
  runuser -u mysql -- mariadbd --no-defaults --datadir="$m/data" --socket="$m/run/mysqld.sock" \
    --pid-file="$m/run/mysqld.pid" --port="$VC_DB_PORT" --bind-address=127.0.0.1 \
    --skip-name-resolve --log-error="$VC_RUN/log/mariadb.log" --innodb-buffer-pool-size=64M \
    --innodb-log-file-size=16M --innodb-lock-wait-timeout=900 < /dev/null > /dev/null 2>&1 &
  for _ in $(seq 150); do
    mariadb --no-defaults -S "$m/run/mysqld.sock" -u root -e 'select 1' >/dev/null 2>&1 && break
    sleep 0.2
  done
  cp "$m/run/mysqld.pid" "$VC_RUN/run/mariadb.pid" 2>/dev/null || return 1
  VC_DB_PASS=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
  mariadb --no-defaults -S "$m/run/mysqld.sock" -u root -e \
    "CREATE USER '$VC_DB_USER'@'127.0.0.1' IDENTIFIED BY '$VC_DB_PASS';
     GRANT ALL ON slurm_acct_db.* TO '$VC_DB_USER'@'127.0.0.1';"
}

_vc_slurmdbd_conf_write() {
  local auth="AuthType=auth/none"
  [ "$VC_AUTH" = munge ] && auth="AuthType=auth/munge
AuthInfo=socket=$VC_RUN/munge/munge.socket"
  cat > "$VC_RUN/etc/slurmdbd.conf" <<EOF
$auth
DbdHost=localhost
DbdPort=$VC_DBD_PORT
SlurmUser=root
PidFile=$VC_RUN/run/slurmdbd.pid
LogFile=$VC_RUN/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$VC_DB_PORT
StorageUser=$VC_DB_USER
StoragePass=$VC_DB_PASS
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$VC_RUN/etc/slurmdbd.conf"  # slurmdbd refuses a readable file: it holds the password
}

# $@: a wrapper to run slurmdbd under (vc_accounting_rollup's clock), or nothing.
_vc_slurmdbd_start() {
  "$@" slurmdbd || return 1
  for _ in $(seq 100); do
    timeout 10 sacctmgr -n show cluster format=cluster >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  vc_log "slurmdbd did not answer: $(tail -3 "$VC_RUN/log/slurmdbd.log")"
  return 1
}

# Database, slurmdbd, and the cluster registered in it: before slurmctld starts.
vc_accounting_start() {
  [ "$VC_ACCOUNTING" = 1 ] || return 0
  _vc_mariadb_start || { vc_log "MariaDB did not start: $(tail -3 "$VC_RUN/log/mariadb.log")"; return 1; }
  _vc_slurmdbd_conf_write
  _vc_slurmdbd_start || return 1
  sacctmgr -i add cluster vgputest >/dev/null || return 1
}

vc_accounting_stop() {
  _vc_stop_pidfile "$VC_RUN/run/slurmdbd.pid"
  _vc_stop_pidfile "$VC_RUN/run/mariadb.pid"
}

# sreport reads slurmdbd's rollup tables, which slurmdbd fills at start and then once an hour for
# the hours that have ended. A test cannot wait for the hour to end, so this restarts slurmdbd
# with its clock $1 hours ahead (libfaketime, for slurmdbd only): at start it rolls up every hour
# up to that clock, the one the run is in included. The database keeps the real job times; run
# sreport through vc_accounting_ahead with the same offset so it does not stop its window at
# the real now.
VC_FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1
vc_accounting_ahead() { # $1 hours, then a command
  local h=$1; shift
  LD_PRELOAD=$VC_FAKETIME_LIB FAKETIME="+${h}h" FAKETIME_DONT_FAKE_MONOTONIC=1 "$@"
}
vc_accounting_rollup() { # $1: unix time the rollup must reach; $2 hours ahead (default 2)
  local until=$1 h=${2:-2} done
  _vc_stop_pidfile "$VC_RUN/run/slurmdbd.pid"
  _vc_slurmdbd_start vc_accounting_ahead "$h" || return 1
  # The start-up rollup runs in its own thread; slurmdbd notes each hour it finished here.
  for _ in $(seq 300); do
    done=$(mariadb --no-defaults -S "$VC_RUN/mysql/run/mysqld.sock" -u root -N -e \
      "select hourly_rollup from slurm_acct_db.vgputest_last_ran_table" 2>/dev/null)
    [ -n "$done" ] && [ "$done" -ge "$until" ] && return 0
    sleep 0.2
  done
  vc_log "slurmdbd did not roll up to $until (last: ${done:-none})"
  return 1
}
