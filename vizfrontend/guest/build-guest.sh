#!/bin/bash
# Build the tiny bootable viz test guest:
#   OUT/vmlinuz     Debian's stock kernel, taken out of the linux-image .deb (nothing installed)
#   OUT/initrd.gz   busybox-static initramfs whose /init draws a banner on /dev/fb0 (vesafb,
#                   vga=0x318 = 1024x768x24) and prints "VIZGUEST READY" on the serial console
#   OUT/banner.png  what the banner looks like (the end-to-end test compares against its colours)
# Usage: build-guest.sh [OUT]      (default /var/cache/slurm-vgpu/guest)
# Idempotent: rebuilds only when this script, init.sh or make_banner.py changed. Touches nothing
# outside OUT except a temp dir. Needs apt (one `apt-get download`), busybox-static, python3-pil.
set -euo pipefail
OUT=${1:-/var/cache/slurm-vgpu/guest}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/debs"
stamp=$(cat "$0" "$HERE/init.sh" "$HERE/make_banner.py" /bin/busybox | sha256sum | cut -c1-16)
if [ -s "$OUT/vmlinuz" ] && [ -s "$OUT/initrd.gz" ] && [ "$(cat "$OUT/stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "build-guest: $OUT is up to date"
  exit 0
fi
t0=$(date +%s.%N)

# --- kernel: the version linux-image-amd64 currently points at
if [ ! -s "$OUT/vmlinuz" ]; then
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  [ -n "$pkg" ] || { echo "build-guest: cannot resolve linux-image-amd64 (run apt-get update)" >&2; exit 1; }
  deb=$(ls "$OUT/debs/${pkg}"_*.deb 2>/dev/null | head -1 || true)
  if [ -z "$deb" ]; then
    # apt-get download as root warns about the unsandboxed _apt user; harmless here
    (cd "$OUT/debs" && apt-get -q download "$pkg" 2>&1 | grep -v unsandboxed || true)
    deb=$(ls "$OUT/debs/${pkg}"_*.deb 2>/dev/null | head -1 || true)
    [ -n "$deb" ] || { echo "build-guest: apt-get download $pkg failed" >&2; exit 1; }
  fi
  K=$(mktemp -d /tmp/viz-kernel.XXXXXX)
  trap 'rm -rf "$K"' EXIT
  # only the kernel image, not the modules
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$K" --wildcards './boot/vmlinuz-*'
  cp "$K"/boot/vmlinuz-* "$OUT/vmlinuz.tmp" && mv "$OUT/vmlinuz.tmp" "$OUT/vmlinuz"
  rm -rf "$K"
  trap - EXIT
fi
t1=$(date +%s.%N)

# --- initramfs
R=$(mktemp -d /tmp/viz-initramfs.XXXXXX)
trap 'rm -rf "$R"' EXIT
mkdir -p "$R"/{bin,dev,proc,sys,tmp,etc}
cp /bin/busybox "$R/bin/busybox"
ln -s busybox "$R/bin/sh"
# Only the device nodes the kernel needs before devtmpfs is mounted. mknod needs root; as
# non-root, cpio's -R 0:0 cannot make them either, so say so plainly.
mknod -m 600 "$R/dev/console" c 5 1 || { echo "build-guest: must run as root (mknod)" >&2; exit 1; }
mknod -m 666 "$R/dev/null" c 1 3
/usr/bin/python3 "$HERE/make_banner.py" "$R/etc/banner" 1024 768
mv "$R/etc/banner.png" "$OUT/banner.png"
install -m 755 "$HERE/init.sh" "$R/init"
(cd "$R" && find . | busybox cpio -o -H newc -R 0:0 2>/dev/null | gzip -1 > "$OUT/initrd.gz.tmp")
mv "$OUT/initrd.gz.tmp" "$OUT/initrd.gz"
echo "$stamp" > "$OUT/stamp"
t2=$(date +%s.%N)
printf 'build-guest: %s ready (kernel %.1fs, initramfs %.1fs)\n' "$OUT" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)"
