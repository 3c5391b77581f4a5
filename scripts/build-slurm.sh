#!/usr/bin/env bash
# Prepares a Slurm release that is not the one Debian installed: unpacks it, configures it (so the
# plugin gets the release's own config.h and slurm_version.h) and, unless --configure-only, builds
# and installs its daemons and commands into a private prefix. Nothing is installed system-wide.
#
# Usage:
#   scripts/build-slurm.sh [--configure-only] <slurm-X.Y.Z.tar.gz>       # an upstream release tarball
#   scripts/build-slurm.sh [--configure-only] debian:<suite>             # Debian's slurm-wlm of <suite>
#                                                                        # (e.g. debian:trixie), patches applied
# Prints, on the last line of stdout, the release's cache directory:
#   <dir>/src/      the configured source tree (config.h, slurm/slurm_version.h)
#   <dir>/prefix/   bin/ sbin/ lib/libslurmfull.so lib/slurm/*.so   (not with --configure-only)
#   <dir>/VERSION   e.g. 26.05.3
# The cache is ${VGPU_SLURM_CACHE:-/var/cache/slurm-vgpu}/slurm-<version>-<key>/, keyed by the
# source's checksum and this script's own, so a rerun is instant and a changed recipe rebuilds.
# A failed build leaves nothing in the cache (work happens in a temporary sibling directory).
set -euo pipefail

die() { echo "build-slurm: $*" >&2; exit 1; }

configure_only=0
if [ "${1:-}" = --configure-only ]; then configure_only=1; shift; fi
spec=${1:?usage: build-slurm.sh [--configure-only] <tarball|debian:suite>}
cache_root=${VGPU_SLURM_CACHE:-/var/cache/slurm-vgpu}
here=$(cd "$(dirname "$0")" && pwd)
recipe_sum=$(sha256sum "$here/build-slurm.sh" | cut -c1-8)
mkdir -p "$cache_root"

# ---- obtain the source: a tarball path, or Debian's orig tarball + Debian patches of a suite ----
fetch_debian() { # $1 suite; prints "<orig tarball> <debian tarball>" downloaded into $2
  local suite=$1 dl=$2 srclist=$2/apt/sources.list.d f found=0
  mkdir -p "$srclist" "$dl/apt/lists/partial"
  # deb-src of <suite>, derived from the archive mirrors the machine already uses.
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    grep -hoE 'https?://[^ ]+/debian/?( |$)' "$f" | head -1 | tr -d ' ' > "$dl/mirror" && [ -s "$dl/mirror" ] && { found=1; break; }
  done
  [ "$found" = 1 ] || die "no Debian mirror found in /etc/apt to fetch $suite's source from"
  echo "deb-src $(cat "$dl/mirror") $suite main" > "$srclist/debian-$suite.list"
  local opts=(-o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts="$srclist"
              -o Dir::State::Lists="$dl/apt/lists" -o APT::Sandbox::User=root
              -o Acquire::AllowInsecureRepositories=false)
  apt-get -q "${opts[@]}" update >&2 || die "apt-get update for $suite's deb-src failed"
  # Some mirrors carry the upstream tarball but not Debian's packaging of a point update; the
  # upstream release is then used as is (the caller says so).
  (cd "$dl" && apt-get -q "${opts[@]}" source --download-only slurm-wlm >&2) \
    || echo "build-slurm: apt-get source slurm-wlm ($suite) was incomplete" >&2
}

work=$(mktemp -d "$cache_root/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
case "$spec" in
  debian:*)
    suite=${spec#debian:}
    [[ "$suite" =~ ^[a-z]+$ ]] || die "'$suite' is not a Debian suite name"
    fetch_debian "$suite" "$work/dl"
    orig=$(ls "$work"/dl/slurm-wlm_*.orig.tar.* 2>/dev/null | head -1 || true)
    debian_tar=$(ls "$work"/dl/slurm-wlm_*.debian.tar.* 2>/dev/null | head -1 || true)
    [ -n "$orig" ] || die "could not download $suite's slurm-wlm source"
    [ -n "$debian_tar" ] || echo "build-slurm: Debian's patches for $suite are not on this mirror; using the upstream release as is" >&2
    source_sum=$(cat "$orig" ${debian_tar:+"$debian_tar"} | sha256sum | cut -c1-12)
    ;;
  *)
    [ -f "$spec" ] || die "no such tarball: $spec"
    orig=$(cd "$(dirname "$spec")" && pwd)/$(basename "$spec")
    debian_tar=
    source_sum=$(sha256sum "$orig" | cut -c1-12)
    ;;
esac

mkdir -p "$work/unpack"
tar -xf "$orig" -C "$work/unpack"
top=$(find "$work/unpack" -mindepth 1 -maxdepth 1 -type d | head -1)
[ -n "$top" ] && [ -f "$top/META" ] || die "$orig is not a Slurm source tarball (no META)"
version=$(awk '$1=="Version:"{v=$2} $1=="Release:"{print v}' "$top/META")
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "$orig: META gives version '$version'"

kind=$([ "$configure_only" = 1 ] && echo headers || echo built)
dest=$cache_root/slurm-$version-$source_sum-$recipe_sum-$kind
if [ -f "$dest/.done" ]; then
  echo "build-slurm: $version cached in $dest" >&2
  echo "$dest"
  exit 0
fi

mv "$top" "$work/src"
if [ -n "$debian_tar" ]; then
  tar -xf "$debian_tar" -C "$work/src"
  while read -r p _; do
    case "$p" in ''|'#'*) continue ;; esac
    patch -d "$work/src" -p1 -s -N < "$work/src/debian/patches/$p" || die "Debian patch $p does not apply"
  done < <(cat "$work/src/debian/patches/series" 2>/dev/null)
fi

# The prefix is the final location: Slurm bakes it into its binaries (plugin dir, libslurmfull rpath).
start=$(date +%s)
echo "build-slurm: configuring Slurm $version ($([ "$configure_only" = 1 ] && echo headers only || echo full build))" >&2
# --enable-multiple-slurmd as Debian builds it: the test clusters run several slurmd on one host.
(cd "$work/src" && ./configure --prefix="$dest/prefix" --sysconfdir="$dest/prefix/etc" \
   --disable-static --enable-silent-rules --without-rpath --enable-multiple-slurmd > "$work/configure.log" 2>&1) \
  || { tail -30 "$work/configure.log" >&2; die "configure of $version failed (log above)"; }
if [ "$configure_only" = 0 ]; then
  echo "build-slurm: building Slurm $version with $(nproc) jobs (a few minutes, once per release)" >&2
  (cd "$work/src" && make -j"$(nproc)" > "$work/make.log" 2>&1) \
    || { tail -30 "$work/make.log" >&2; die "make of $version failed (log above)"; }
  # Installed into the final prefix, then the source tree moves beside it.
  rm -rf "$dest"
  mkdir -p "$dest"
  (cd "$work/src" && make install > "$work/install.log" 2>&1) \
    || { tail -30 "$work/install.log" >&2; rm -rf "$dest"; die "make install of $version failed"; }
else
  rm -rf "$dest"
  mkdir -p "$dest"
fi
mv "$work/src" "$dest/src"
echo "$version" > "$dest/VERSION"
echo "$(( $(date +%s) - start ))" > "$dest/BUILD_SECONDS"
touch "$dest/.done"
echo "build-slurm: Slurm $version ready in $dest ($(cat "$dest/BUILD_SECONDS") s)" >&2
echo "$dest"
