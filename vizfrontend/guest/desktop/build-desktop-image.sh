#!/bin/bash
# Build the viz desktop guest: Debian 12 from Debian's archive (mmdebstrap), Xfce on the VM's own
# screen, PyMOL and ParaView, PyMOL opening the demo structure when the session starts.
#
#   build-desktop-image.sh [--cache DIR] [--hook SCRIPT] [--mirror URL] [--no-base-build | --status]
#
# Two cached layers under DIR (default /var/cache/slurm-vgpu/viz-desktop), each keyed by what
# makes it, so nothing is rebuilt unless its recipe changed:
#   base-<key>/rootfs     the installed packages (packages.txt, the mirror, the hook)   ~15 min cold
#   image-<key>/          vmlinuz, initrd.img, disk.qcow2, image.json (base + rootfs/ overlay +
#                         demo/)                                                         ~1-2 min
# The last line of stdout is the image directory. image.json is the `images` entry for viz.json.
# --hook SCRIPT runs after the packages with the root file system's path as $1; this is where a
# site adds what its GPU pools need in the guest (the vendor's guest driver, VirtualGL; see
# docs/viz.md). Its content is part of the base key. --no-base-build exits 3 instead of making a
# missing base layer (the test command's choice: it never spends the cold build's minutes);
# --status only says what is cached (exit 0 when the base layer is, 3 when not).
# Needs root (mmdebstrap --mode=root, chroot).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=/var/cache/slurm-vgpu/viz-desktop
HOOK=""
NO_BASE_BUILD=0
STATUS=0
MIRROR=${VGPU_VIZ_MIRROR:-http://deb.debian.org/debian}
SECURITY=${VGPU_VIZ_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
while [ $# -gt 0 ]; do
  case "$1" in
    --cache) CACHE=$2; shift 2 ;;
    --hook) HOOK=$(readlink -f "$2"); shift 2 ;;
    --mirror) MIRROR=$2; shift 2 ;;
    --no-base-build) NO_BASE_BUILD=1; shift ;;
    --status) STATUS=1; shift ;;
    *) echo "build-desktop-image: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
say() { echo "build-desktop-image: $*" >&2; }
[ "$STATUS" = 1 ] || [ "$(id -u)" = 0 ] || { say "must run as root (mmdebstrap --mode=root, chroot)"; exit 1; }
for tool in mmdebstrap mke2fs qemu-img; do
  command -v "$tool" >/dev/null || { say "needs $tool (scripts/install-deps.sh installs it)"; exit 1; }
done
[ -z "$HOOK" ] || [ -x "$HOOK" ] || { say "--hook $HOOK: not an executable file"; exit 1; }

# Bump when the base layer's steps below change in a way packages.txt does not show.
BASE_RECIPE=1
base_key=$( { echo "recipe $BASE_RECIPE $MIRROR $SECURITY"; grep -v '^#' "$HERE/packages.txt";
              [ -z "$HOOK" ] || cat "$HOOK"; } | sha256sum | cut -c1-16)
BASE=$CACHE/base-$base_key
image_key=$( { echo "base $base_key"; cat "$0";
               (cd "$HERE" && find rootfs demo -type f | LC_ALL=C sort | xargs sha256sum); } | sha256sum | cut -c1-16)
IMAGE=$CACHE/image-$image_key
if [ "$STATUS" = 1 ]; then
  echo "base layer $BASE: $([ -e "$BASE/done" ] && echo cached || echo missing)"
  echo "image $IMAGE: $([ -s "$IMAGE/image.json" ] && echo cached || echo missing)"
  [ -e "$BASE/done" ] && exit 0 || exit 3
fi
mkdir -p "$CACHE"
exec 9> "$CACHE/.lock"
flock 9   # two test runs never build into the same directory

if [ -s "$IMAGE/image.json" ]; then
  say "image $IMAGE is up to date"
  echo "$IMAGE"
  exit 0
fi

# A build that fails leaves nothing half-made behind.
trap 'rm -rf "$BASE.tmp" "$IMAGE.tmp"' EXIT
t0=$(date +%s)
if [ ! -e "$BASE/done" ] && [ "$NO_BASE_BUILD" = 1 ]; then
  say "base layer $BASE is not built, and --no-base-build says not to build it here"
  exit 3
fi
if [ ! -e "$BASE/done" ]; then
  say "base layer $BASE: installing Debian 12 and $(grep -vc '^#' "$HERE/packages.txt") packages (a cold build takes minutes)"
  rm -rf "$BASE" "$BASE.tmp"
  mkdir -p "$BASE.tmp"
  pkgs=$(grep -v '^#' "$HERE/packages.txt" | paste -sd, -)
  mmdebstrap --mode=root --variant=minbase --format=directory \
    --aptopt='APT::Install-Recommends "false"' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --include="$pkgs" bookworm "$BASE.tmp/rootfs" \
    "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" "deb $SECURITY bookworm-security main" \
    > "$BASE.tmp/mmdebstrap.log" 2>&1 || {
      cp "$BASE.tmp/mmdebstrap.log" "$CACHE/failed-mmdebstrap.log"
      say "mmdebstrap failed (whole log: $CACHE/failed-mmdebstrap.log); its last lines:"
      tail -20 "$CACHE/failed-mmdebstrap.log" >&2; exit 1; }
  if [ -n "$HOOK" ]; then
    say "running the site hook $HOOK"
    "$HOOK" "$BASE.tmp/rootfs" > "$CACHE/hook.log" 2>&1 || { say "hook $HOOK failed; see $CACHE/hook.log"; exit 1; }
  fi
  mv "$BASE.tmp" "$BASE"
  touch "$BASE/done"
  # Older bases are dead weight (several GB each); the images built from them stay until replaced.
  find "$CACHE" -mindepth 1 -maxdepth 1 -name 'base-*' ! -path "$BASE" -exec rm -rf {} +
fi
t1=$(date +%s)

say "image $IMAGE: base + the session overlay"
rm -rf "$IMAGE.tmp"
mkdir -p "$IMAGE.tmp"
STAGE=$IMAGE.tmp/rootfs
cp -a "$BASE/rootfs" "$STAGE"
cp -a "$HERE/rootfs/." "$STAGE/"
mkdir -p "$STAGE/usr/share/slurm-vgpu/viz"
cp "$HERE"/demo/*.pdb "$STAGE/usr/share/slurm-vgpu/viz/"
chroot "$STAGE" /bin/sh -ec '
  echo vgpu-viz > /etc/hostname
  id viz >/dev/null 2>&1 || useradd --create-home --shell /bin/bash --comment "viz session" viz
  passwd --lock root >/dev/null
  # Xfce 4.18 asks how to set up a new panel unless the system carries a panel configuration.
  mkdir -p /etc/xdg/xfce4/xfconf/xfce-perchannel-xml
  cp /etc/xdg/xfce4/panel/default.xml /etc/xdg/xfce4/xfconf/xfce-perchannel-xml/xfce4-panel.xml
  systemctl enable vgpu-viz-desktop.service >/dev/null 2>&1
  systemctl set-default multi-user.target >/dev/null 2>&1
  # Nothing on the boot path that a throwaway desktop VM does not need.
  systemctl mask getty@tty1.service serial-getty@ttyS0.service apt-daily.timer apt-daily-upgrade.timer \
    e2scrub_all.timer fstrim.timer systemd-timesyncd.service >/dev/null 2>&1
  chmod 755 /usr/local/libexec/vgpu-viz-*
  update-initramfs -u -k all >/dev/null 2>&1
'
cp "$STAGE"/boot/vmlinuz-* "$IMAGE.tmp/vmlinuz"
cp "$STAGE"/boot/initrd.img-* "$IMAGE.tmp/initrd.img"
size_mib=$(( $(du -sm "$STAGE" | cut -f1) * 5 / 4 + 512 ))
mke2fs -q -t ext4 -L vizroot -d "$STAGE" "$IMAGE.tmp/disk.raw" "${size_mib}M" > /dev/null
qemu-img convert -O qcow2 "$IMAGE.tmp/disk.raw" "$IMAGE.tmp/disk.qcow2"
rm -rf "$STAGE" "$IMAGE.tmp/disk.raw"
cat > "$IMAGE.tmp/image.json" <<JSON
{"kernel": "$IMAGE/vmlinuz", "initrd": "$IMAGE/initrd.img", "disk": "$IMAGE/disk.qcow2",
 "cmdline": "root=/dev/vda rw console=ttyS0,115200 quiet systemd.show_status=0 loglevel=3"}
JSON
rm -rf "$IMAGE"
mv "$IMAGE.tmp" "$IMAGE"
# Replaced images go: a session already running keeps its open backing file, and a session
# started from now on uses the new image.
find "$CACHE" -mindepth 1 -maxdepth 1 -name 'image-*' ! -path "$IMAGE" -exec rm -rf {} +
t2=$(date +%s)
say "image ready: base layer $((t1 - t0)) s, image $((t2 - t1)) s, disk $(du -sh "$IMAGE/disk.qcow2" | cut -f1)"
echo "$IMAGE"
