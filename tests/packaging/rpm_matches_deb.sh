#!/usr/bin/env bash
# The RPMs a RHEL-family site installs, made from the source tarball's spec (scripts/source-tarball.sh)
# over this build tree (its %build skipped: the tree is built already; scripts/build-rpms.sh runs
# the spec's own build), checked by rpmlint, and compared with the .debs cpack makes from the same
# tree: each package pair holds the same files and configuration files, the plugin requires exactly
# its Slurm release and provides what the node package refuses an old version of, the viz package
# requires the node package of its version, and the scriptlets restart the planners on upgrade and
# stop them on removal as the Debian maintainer scripts do. RPMs built on Debian prove the spec
# and its lists, not an install on EL9.
#   VP_BIN=<build dir> tests/packaging/rpm_matches_deb.sh      (ctest packaging.rpm_matches_deb)
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
: "${VP_BIN:?VP_BIN must point at a build directory}"
work=$(mktemp -d /tmp/vgpu-rpm.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cache() { sed -n "s/^$1:[A-Z]*=//p" "$VP_BIN/CMakeCache.txt"; }
for tool in rpmbuild rpmlint rpm cpack dpkg-deb; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/install-deps.sh installs it)"
done

version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$VP_BIN/CPackConfig.cmake")
slurm_version=$(cache VGPU_SLURM_VERSION)
plugin_dir=$(cache VGPU_PLUGIN_INSTALL_DIR)
{ [ -n "$version" ] && [ -n "$slurm_version" ] && [ -n "$plugin_dir" ]; } ||
  fail "$VP_BIN has no package version, plugin or plugin directory (configure with -DVGPU_BUILD_SLURM_PLUGIN=ON)"
options=()
[ -x "$VP_BIN/scrub/vgpu-scrub" ] || options+=(--without scrub)
[ -x "$VP_BIN/vizfrontend/vgpu-viz" ] || options+=(--without viz)

# Neither package is compressed, and the .debs' library dependencies are not derived (dpkg-shlibdeps
# over the ASan binaries: a minute): nothing here compares them (EL and Debian name libraries
# differently), packaging.deb_install_upgrade installs .debs with them, scripts/build-rpms.sh makes
# the RPMs as shipped.
tarball=$(bash "$src/scripts/source-tarball.sh" "$work/dist") || fail "scripts/source-tarball.sh"
rpmbuild -tb --nodeps --load "$src/packaging/rpm/debian-check.macros" --define "_topdir $work/rpm" \
  --define "vgpu_prebuilt $VP_BIN" --define "slurm_version $slurm_version" \
  --define "slurm_plugindir $plugin_dir" --define "debug_package %{nil}" --define "_binary_payload w0.ufdio" \
  "${options[@]}" "$tarball" \
  >"$work/rpmbuild.log" 2>&1 || fail "rpmbuild: $(grep -m5 -i 'error\|unpackaged' "$work/rpmbuild.log" | tr '\n' ' ')"
rpm_of() { find "$work/rpm/RPMS" -name "$1-$version-*.rpm"; }
mapfile -t rpms < <(find "$work/rpm/RPMS" -name '*.rpm')
rpmlint -c "$src/packaging/rpm/rpmlint.toml" "${rpms[@]}" >"$work/rpmlint.log" 2>&1 ||
  fail "rpmlint: $(grep -E ' E: ' "$work/rpmlint.log" | head -5 | tr '\n' ' ') $(tail -1 "$work/rpmlint.log")"
echo "rpmlint: $(tail -1 "$work/rpmlint.log")"

(cd "$work" && cpack --config "$VP_BIN/CPackConfig.cmake" -G DEB -D CPACK_DEBIAN_COMPRESSION_TYPE=none \
   -D CPACK_DEBIAN_PACKAGE_SHLIBDEPS=OFF -B "$work/deb" >"$work/cpack.log" 2>&1) ||
  fail "cpack: $(tail -5 "$work/cpack.log")"
deb_of() { find "$work/deb" -maxdepth 1 -name "$1_${version}-*.deb"; }

# The files (not directories) of each package, as absolute paths; rpmbuild adds a link per ELF
# file under /usr/lib/.build-id (as on Fedora and EL), which a .deb keeps in its -dbgsym package.
deb_files() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | sort; }
rpm_files() {
  rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$1" | awk '$1 !~ /^d/ && $2 !~ "^/usr/lib/.build-id/" {print $2}' | sort
}
pairs="slurm-vgpu slurm-vgpu-gres-$slurm_version"
[ -x "$VP_BIN/vizfrontend/vgpu-viz" ] && pairs="$pairs slurm-vgpu-viz"
for pkg in $pairs; do
  deb=$(deb_of "$pkg") rpm=$(rpm_of "$pkg")
  { [ -n "$deb" ] && [ -n "$rpm" ]; } || fail "$pkg: deb '${deb:-none}', rpm '${rpm:-none}'"
  differ=$(diff <(deb_files "$deb") <(rpm_files "$rpm"))
  [ -z "$differ" ] || fail "$pkg: files differ (< deb, > rpm): $(echo "$differ" | grep '^[<>]' | head -8 | tr '\n' ' ')"
  echo "$pkg: $(rpm_files "$rpm" | wc -l) files, the same in both"
done

node_rpm=$(rpm_of slurm-vgpu) node_deb=$(deb_of slurm-vgpu) plugin_rpm=$(rpm_of "slurm-vgpu-gres-$slurm_version")
conffiles=$(dpkg-deb --ctrl-tarfile "$node_deb" | tar -xO ./conffiles | sort)
configfiles=$(rpm -qp --configfiles "$node_rpm" | sort)
[ "$conffiles" = "$configfiles" ] ||
  fail "configuration files: deb '$(tr '\n' ' ' <<<"$conffiles")', rpm '$(tr '\n' ' ' <<<"$configfiles")'"

rpm -qp --requires "$plugin_rpm" | grep -qx "slurm(x86-64) = $slurm_version" ||
  fail "the plugin RPM does not require exactly Slurm $slurm_version: $(rpm -qp --requires "$plugin_rpm" | tr '\n' ' ')"
rpm -qp --provides "$plugin_rpm" | grep -qx "slurm-vgpu-gres-plugin = $version" ||
  fail "the plugin RPM does not provide slurm-vgpu-gres-plugin = $version"
breaks=$(dpkg-deb -f "$node_deb" Breaks | sed -n 's/^slurm-vgpu-gres-plugin (<< \(.*\))$/\1/p')
rpm -qp --conflicts "$node_rpm" | grep -qx "slurm-vgpu-gres-plugin < $breaks" ||
  fail "slurm-vgpu RPM conflicts '$(rpm -qp --conflicts "$node_rpm" | tr '\n' ' ')', the deb breaks plugins << '$breaks'"
if [ -x "$VP_BIN/vizfrontend/vgpu-viz" ]; then
  rpm -qp --requires "$(rpm_of slurm-vgpu-viz)" | grep -qx "slurm-vgpu(x86-64) >= $version" ||
    fail "slurm-vgpu-viz RPM does not require slurm-vgpu >= $version"
fi

# Upgrade restarts running planners, removal stops them: the same command in both formats.
scripts=$(rpm -qp --scripts "$node_rpm")
section() { echo "$scripts" | awk -v s="$1 scriptlet" 'index($0, s) == 1 {on=1; next} /scriptlet \(using/ {on=0} on'; }
for pair in "postuninstall:postinst:systemctl try-restart 'vgpu-planner@*.service' vgpu-cluster-view.service" \
            "preuninstall:prerm:systemctl stop 'vgpu-planner@*.service' vgpu-cluster-view.service"; do
  rpm_part=${pair%%:*} rest=${pair#*:} deb_part=${rest%%:*} command=${rest#*:}
  section "$rpm_part" | grep -qF "$command" || fail "the RPM's $rpm_part scriptlet lacks: $command"
  grep -qF "$command" "$src/packaging/debian/slurm-vgpu/$deb_part" || fail "the deb's $deb_part lacks: $command"
done
echo "PASS: RPMs of $version (plugin for Slurm $slurm_version) match the .debs: files, configuration, dependencies, scriptlets"
