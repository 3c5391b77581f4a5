#!/bin/bash
# Stop only the daemons libvirt-up.sh started (listed in RUN_DIR/started), by their pid files.
# Usage: libvirt-down.sh RUN_DIR
RUN=${1:?usage: libvirt-down.sh RUN_DIR}
[ -f "$RUN/started" ] || exit 0
. "$(dirname "$0")/../process.sh"
# libvirtd first: virtlogd must outlive it to collect the last log lines.
for d in libvirtd virtlogd; do
  grep -qx "$d" "$RUN/started" || continue
  f="$RUN/$d.pid"
  [ -s "$f" ] || continue
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null || continue
  for _ in $(seq 1 100); do proc_alive "$pid" || break; sleep 0.1; done
  if proc_alive "$pid"; then echo "libvirt-down: $d ($pid) still running" >&2; else echo "libvirt-down: $d stopped"; fi
  rm -f "$f"
done
rm -f "$RUN/started"
