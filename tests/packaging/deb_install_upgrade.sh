#!/usr/bin/env bash
# The Debian packages, as a site installs them: cpack builds slurm-vgpu, slurm-vgpu-viz and
# slurm-vgpu-gres-<slurm version> from this build tree; dpkg -i installs them; the local cluster then
# runs from the installed paths only (plugin in Slurm's plugin directory, hooks and planner from
# /usr/sbin, vgpuctl from /usr/bin, the job_submit filter from /usr/share/slurm-vgpu; only the fake
# NVML, a test double, comes from the build). While a job holds its instances the packages are
# upgraded to a newer version and the planner restarted as the package's postinst does: the job
# keeps running on the same instances, the next job runs, and dpkg --purge removes every file.
#   VP_BIN=<build dir> tests/packaging/deb_install_upgrade.sh      (root; ctest packaging.deb_install_upgrade)
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${VP_BIN:?VP_BIN must point at a build directory}"
pkgdir=$(mktemp -d /tmp/vgpu-deb.XXXXXX)
packages=(slurm-vgpu-viz slurm-vgpu)
purge_all() { # one dpkg call, so dependencies between the packages do not block it
  local installed
  installed=$(dpkg-query -W -f '${Package} ${Status}\n' 'slurm-vgpu*' 2>/dev/null | awk '$NF != "not-installed" {print $1}')
  [ -z "$installed" ] || dpkg --purge $installed >/dev/null 2>&1
}
log() { echo "[$(date +%T)] $*" >&2; }

# Two versions of the same build: what is installed now, and the upgrade.
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$VP_BIN/CPackConfig.cmake")
[ -n "$version" ] || { echo "FAIL: no CPACK_PACKAGE_VERSION in $VP_BIN/CPackConfig.cmake"; exit 1; }
(cd "$pkgdir" && cpack --config "$VP_BIN/CPackConfig.cmake" -G DEB -B "$pkgdir/$version" >"$pkgdir/cpack.log" 2>&1) \
  || { echo "FAIL: cpack: $(tail -5 "$pkgdir/cpack.log")"; exit 1; }
debs() { ls "$pkgdir/$1"/*.deb; }
# The upgrade is the same packages with the next version in their control files, repacked
# uncompressed: a second cpack run (install tree, dpkg-shlibdeps) took about a minute more.
mkdir -p "$pkgdir/$version.1" "$pkgdir/repack"
for deb in $(debs "$version"); do
  tree=$pkgdir/repack/$(basename "$deb" .deb)
  dpkg-deb -R "$deb" "$tree" && sed -i "s/^Version: $version-/Version: $version.1-/" "$tree/DEBIAN/control" &&
    dpkg-deb -Znone -b "$tree" "$pkgdir/$version.1/$(basename "$deb" | sed "s/_${version}-/_${version}.1-/")" >/dev/null &&
    rm -rf "$tree" || { echo "FAIL: repacking $deb as $version.1"; exit 1; }
done
[ "$(debs "$version" | wc -l)" = 3 ] || { echo "FAIL: cpack made $(debs "$version" | xargs -n1 basename)"; exit 1; }
plugin_pkg=$(basename "$(debs "$version" | grep gres)" | cut -d_ -f1)
packages+=("$plugin_pkg")
log "packages: $(debs "$version" | xargs -n1 basename | tr '\n' ' ')"

# What each package says about itself: the plugin depends on exactly its Slurm release.
slurm_version=$(slurmd -V | awk '{print $2}')
deps=$(dpkg-deb -f "$(debs "$version" | grep gres)" Depends)
next_micro=$(echo "$slurm_version" | awk -F. '{printf "%s.%s.%d", $1, $2, $3 + 1}')
[ "$deps" = "slurm-wlm-basic-plugins (>= $slurm_version), slurm-wlm-basic-plugins (<< $next_micro~)" ] \
  || { echo "FAIL: plugin package Depends is '$deps'"; exit 1; }

# The node package never runs with a plugin too old for its job records (docs/admin.md, Upgrades).
node_breaks=$(dpkg-deb -f "$(debs "$version" | grep '/slurm-vgpu_')" Breaks)
plugin_provides=$(dpkg-deb -f "$(debs "$version" | grep gres)" Provides)
[[ $node_breaks == "slurm-vgpu-gres-plugin (<< "* ]] || { echo "FAIL: slurm-vgpu Breaks is '$node_breaks'"; exit 1; }
[ "$plugin_provides" = "slurm-vgpu-gres-plugin (= $version)" ] || { echo "FAIL: plugin Provides is '$plugin_provides'"; exit 1; }

# ... and dpkg holds to it: with a plugin package of the previous release installed (only its
# control fields matter here: name, version, what it provides), this node package is refused.
mkdir -p "$pkgdir/old/DEBIAN"
cat > "$pkgdir/old/DEBIAN/control" <<CONTROL
Package: slurm-vgpu-gres-old-test
Version: 0.2.0-1
Architecture: all
Maintainer: slurm-vgpu tests <root@localhost>
Provides: slurm-vgpu-gres-plugin (= 0.2.0)
Conflicts: slurm-vgpu-gres-plugin
Description: stand-in for a slurm-vgpu 0.2 plugin package (test only)
CONTROL
dpkg-deb --build "$pkgdir/old" "$pkgdir/old.deb" >/dev/null || { echo "FAIL: dpkg-deb of the 0.2.0 stand-in"; exit 1; }
purge_all
dpkg -i "$pkgdir/old.deb" >"$pkgdir/dpkg-old.log" 2>&1 || { echo "FAIL: dpkg -i 0.2.0 stand-in: $(tail -5 "$pkgdir/dpkg-old.log")"; exit 1; }
if dpkg -i "$(debs "$version" | grep '/slurm-vgpu_')" >"$pkgdir/dpkg-breaks.log" 2>&1 || ! grep -q "breaks" "$pkgdir/dpkg-breaks.log"; then
  echo "FAIL: slurm-vgpu $version installed beside a 0.2.0 plugin: $(tail -5 "$pkgdir/dpkg-breaks.log")"
  dpkg --purge slurm-vgpu-gres-old-test >/dev/null 2>&1; purge_all; exit 1
fi
dpkg --purge slurm-vgpu-gres-old-test >/dev/null 2>&1
log "slurm-vgpu $version refused beside a 0.2.0 plugin: $(grep -m1 breaks "$pkgdir/dpkg-breaks.log")"

purge_all
# vp_finish stops the cluster and keeps its run directory only when the test failed.
trap 'rc=$?; vp_finish $rc; purge_all; rm -rf "$pkgdir"; exit $rc' EXIT
dpkg -i $(debs "$version") >"$pkgdir/dpkg-install.log" 2>&1 \
  || { echo "FAIL: dpkg -i: $(tail -5 "$pkgdir/dpkg-install.log")"; exit 1; }
plugin_dir=$(dpkg -L "$plugin_pkg" | grep '/gres_vgpu.so$' | xargs dirname)
for f in /usr/sbin/vgpu-prolog /usr/sbin/vgpu-prolog-work /usr/sbin/vgpu-epilog /usr/sbin/vgpu-epilog-work /usr/sbin/vgpu-planner /usr/sbin/vgpu-mps /usr/bin/vgpuctl /usr/bin/vgpu-viz \
         /usr/lib/systemd/system/vgpu-planner@.service /etc/slurm-vgpu/policy.json.example \
         /etc/slurm-vgpu/planner.env /usr/share/slurm-vgpu/job_submit.lua /usr/share/slurm-vgpu/vgpu_submit_filter.lua \
         "$plugin_dir/gres_vgpu.so" \
         /usr/libexec/slurm-vgpu/viz/desktop/build-desktop-image.sh /usr/share/slurm-vgpu/ood/bc_vgpu_viz/form.yml; do
  [ -e "$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
# The desktop image's recipe works from where it is installed (exit 3: its package layer is not
# built on this machine), and the installed OnDemand app is the one that passes the check.
/usr/libexec/slurm-vgpu/viz/desktop/build-desktop-image.sh --status >/dev/null; rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { echo "FAIL: the installed desktop image builder: exit $rc"; exit 1; }
/usr/bin/python3 "$here/../viz/ood_app_check.py" /usr/share/slurm-vgpu/ood/bc_vgpu_viz >/dev/null \
  || { echo "FAIL: the installed OnDemand app"; exit 1; }
grep -q '^ExecStart=/usr/sbin/vgpu-planner$' /usr/lib/systemd/system/vgpu-planner@.service \
  || { echo "FAIL: the unit does not start /usr/sbin/vgpu-planner"; exit 1; }
/usr/sbin/vgpu-planner --help | grep -q 're-plans this node' || { echo "FAIL: vgpu-planner --help"; exit 1; }
/usr/sbin/vgpu-mps --help | grep -q 'shared instances' || { echo "FAIL: vgpu-mps --help"; exit 1; }
/usr/bin/vgpuctl policy check /etc/slurm-vgpu/policy.json.example >/dev/null \
  || { echo "FAIL: the shipped example policy does not check"; exit 1; }
log "installed; plugin in $plugin_dir"

# The cluster, from the installed paths only.
export VP_INSTALLED=/usr VC_PLUGIN_DIR=$plugin_dir
. "$here/../e2e/lib.sh"
vp_start
job=$(vp_job_script)
hold=$(vp_sbatch -p infer -w n1 --gres=vgpu:1g.10gb:2 "$job" 40)
vp_wait_started "$hold" 60 || vc_fail "job $hold did not start on the installed packages"
vp_assert_sees_own "$hold"
before=$(vp_ledger_uuids n1 "$hold")
grep -q "gres/vgpu: loaded in slurmd" "$VC_RUN/log/slurmd.n1.log" || vc_fail "slurmd did not load $plugin_dir/gres_vgpu.so"

# Upgrade while the job runs; restart the planners as the postinst's systemctl try-restart would.
dpkg -i $(debs "$version.1") >"$pkgdir/dpkg-upgrade.log" 2>&1 \
  || vc_fail "dpkg -i (upgrade): $(tail -5 "$pkgdir/dpkg-upgrade.log")"
[ "$(dpkg-query -W -f '${Version}' slurm-vgpu)" = "$version.1-1" ] || vc_fail "slurm-vgpu not upgraded"
for n in $VC_NODES; do vp_planner_stop "$n"; vp_planner_start "$n"; done
[ "$(vc_job_state "$hold")" = RUNNING ] || vc_fail "job $hold is $(vc_job_state "$hold") after the upgrade"
[ "$(vp_ledger_uuids n1 "$hold")" = "$before" ] || vc_fail "job $hold's instances changed across the upgrade"
next=$(vp_sbatch -p infer --gres=vgpu:1g.10gb:1 "$job" 1)
vp_wait_done "$next" 60 || vc_fail "a job after the upgrade did not finish"
vp_assert_completed "$next"
scancel "$hold"
vp_wait_done "$hold" 60 || vc_fail "job $hold did not leave the queue"
vp_assert_no_instances
vp_check || vc_fail "nodes inconsistent after the upgrade"
vp_stop

purge_all
left=$(for f in /usr/sbin/vgpu-prolog /usr/sbin/vgpu-prolog-work /usr/sbin/vgpu-planner /usr/bin/vgpuctl /etc/slurm-vgpu "$plugin_dir/gres_vgpu.so"; do
  [ -e "$f" ] && echo "$f"; done)
[ -z "$left" ] || vc_fail "dpkg --purge left: $left"
echo "PASS: installed, ran, upgraded $version -> $version.1 under a running job, purged"
