#!/bin/bash
# Start libvirt's system daemons by hand on a box without systemd (Debian 12: monolithic
# libvirtd + virtlogd, no virtqemud). Idempotent: daemons already running are left alone.
# Usage: libvirt-up.sh RUN_DIR
# Writes RUN_DIR/started (the daemons this call started, for libvirt-down.sh) and pid files.
set -euo pipefail
RUN=${1:?usage: libvirt-up.sh RUN_DIR}
mkdir -p "$RUN" /var/log/libvirt/qemu /var/lib/libvirt /var/cache/libvirt /run/libvirt
: > "$RUN/started"

# Debian's QEMU driver defaults to user and group libvirt-qemu and looks both up before reading
# qemu.conf; without them the driver does not load ("Failed to parse user 'libvirt-qemu'").
# libvirt-daemon-system's postinst normally creates them.
getent group kvm >/dev/null || groupadd -r kvm
getent group libvirt-qemu >/dev/null || groupadd -r libvirt-qemu
getent passwd libvirt-qemu >/dev/null ||
  useradd -r -g libvirt-qemu -G kvm -d /var/lib/libvirt -M -s /usr/sbin/nologin -c "Libvirt Qemu" libvirt-qemu
# Test box only: QEMU runs as root (the kernel/initrd live in root-owned caches).
if ! grep -qs '^# slurm-vgpu viz test' /etc/libvirt/qemu.conf; then
  [ -e /etc/libvirt/qemu.conf ] && cp -n /etc/libvirt/qemu.conf /etc/libvirt/qemu.conf.orig
  printf '# slurm-vgpu viz test: libvirtd run by hand as root\nuser = "root"\ngroup = "root"\n' > /etc/libvirt/qemu.conf
fi

alive() { [ -S /run/libvirt/libvirt-sock ] && virsh -q -c qemu:///system version >/dev/null 2>&1; }
# A daemon a previous run stopped may still be a zombie here: it has ended (tests/process.sh).
. "$(dirname "$0")/../process.sh"
if proc_named_alive virtlogd; then :; else
  virtlogd --daemon --pid-file="$RUN/virtlogd.pid"
  echo virtlogd >> "$RUN/started"
fi
if ! proc_named_alive libvirtd; then
  libvirtd --daemon --pid-file="$RUN/libvirtd.pid"
  echo libvirtd >> "$RUN/started"
fi
for _ in $(seq 1 300); do alive && break; sleep 0.1; done
alive || { echo "libvirt-up: libvirtd did not answer within 30 s" >&2; exit 1; }
echo "libvirt-up: ready (started: $(tr '\n' ' ' < "$RUN/started"))"
