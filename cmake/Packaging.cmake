# Debian packages (cpack -G DEB, or scripts/package.sh for a Release build). Three packages, so a
# node installs only what it runs and the plugin follows its Slurm release:
#   slurm-vgpu             prolog, epilog, planner (+ systemd unit), vgpuctl, vgpu-scrub (unless
#                          VGPU_SCRUB left it out; the description then says so), probes, the
#                          job_submit filter and example configuration under /etc/slurm-vgpu
#   slurm-vgpu-viz         vgpu-viz (libvirt VM sessions) and its guest-image tools (VGPU_VIZ only)
#   slurm-vgpu-gres-plugin gres_vgpu.so in the plugin directory of the Slurm release it was built
#                          against; it depends on that upstream release x.y.z (any Debian revision,
#                          so a security update of the same release still installs) and must be
#                          rebuilt for every Slurm point release (docs/admin.md, "Upgrades").
# Debian's conventions: /usr prefix, binaries in /usr/sbin (root daemons and hooks) and /usr/bin,
# conffiles for everything under /etc, dependencies from dpkg-shlibdeps.
include_guard(GLOBAL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME slurm-vgpu)
set(CPACK_PACKAGE_VENDOR "slurm-vgpu")
set(CPACK_PACKAGE_CONTACT "slurm-vgpu maintainers <slurm-vgpu@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Dynamic GPU partitioning (MIG) for Slurm")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_COMPONENTS_ALL node plugin)
if(VGPU_VIZ)  # a build without vizfrontend makes no slurm-vgpu-viz
  list(INSERT CPACK_COMPONENTS_ALL 1 viz)
endif()

set(CPACK_DEBIAN_NODE_PACKAGE_NAME slurm-vgpu)
# The description says what this build holds: a node package without vgpu-scrub (VGPU_SCRUB=OFF, or
# AUTO without CUDA) quarantines every instance a partition with a required scrub releases, and an
# admin reading `apt show` must learn that before the first job ends, not after. CPack writes the
# value into CPackConfig.cmake unescaped, so its quotes are escaped twice.
if(TARGET vgpu-scrub)
  set(CPACK_DEBIAN_NODE_DESCRIPTION "Dynamic GPU partitioning for Slurm: node agent and admin tools
 The node creates exactly the MIG instances each job asked for, at placements planned and
 advertised to Slurm beforehand, and scrubs and destroys them when the job ends. This package holds
 the Prolog/Epilog hooks, the per-node planner daemon, vgpuctl, vgpu-mps, the probes
 vgpu-nvml-probe and vgpu-locality, vgpu-scrub and the job_submit filter.")
else()
  set(CPACK_DEBIAN_NODE_DESCRIPTION "Dynamic GPU partitioning for Slurm: node agent (WITHOUT vgpu-scrub)
 The node creates exactly the MIG instances each job asked for, at placements planned and
 advertised to Slurm beforehand, and destroys them when the job ends. This package holds the
 Prolog/Epilog hooks, the per-node planner daemon, vgpuctl, vgpu-mps, the probes vgpu-nvml-probe
 and vgpu-locality and the job_submit filter.
 .
 It lacks vgpu-scrub, which zeroes a released instance's memory: every partition of a
 node running it must set \\\"scrub\\\": \\\"optional\\\" in its policy, or each instance
 its jobs release is quarantined (/usr/share/doc/slurm-vgpu/scrub.md).")
endif()
set(CPACK_DEBIAN_NODE_PACKAGE_RECOMMENDS "slurm-vgpu-gres-plugin")
# The first release whose prolog writes job records an older plugin refuses (0.3.0: version 2, with
# the placement; 0.4.0: version 3, with the device UUID of either vendor and what the job got): an
# older plugin would run that job with no GPU visible. Breaks makes dpkg and apt upgrade the plugin
# with this package, never after it (docs/admin.md, "Upgrades").
set(VGPU_JOB_RECORD_SINCE 0.4.0)
set(CPACK_DEBIAN_NODE_PACKAGE_BREAKS "slurm-vgpu-gres-plugin (<< ${VGPU_JOB_RECORD_SINCE})")
# vgpuctl report --png draws with matplotlib; node_exporter serves VGPU_METRICS_FILE.
set(CPACK_DEBIAN_NODE_PACKAGE_SUGGESTS "python3-matplotlib, prometheus-node-exporter")
set(CPACK_DEBIAN_NODE_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/packaging/debian/slurm-vgpu/conffiles
  ${PROJECT_SOURCE_DIR}/packaging/debian/slurm-vgpu/postinst
  ${PROJECT_SOURCE_DIR}/packaging/debian/slurm-vgpu/prerm
  ${PROJECT_SOURCE_DIR}/packaging/debian/slurm-vgpu/postrm)
set(CPACK_DEBIAN_NODE_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_VIZ_PACKAGE_NAME slurm-vgpu-viz)
set(CPACK_DEBIAN_VIZ_DESCRIPTION "Dynamic GPU partitioning for Slurm: visualization sessions
 vgpu-viz starts a libvirt VM with a (v)GPU for a Slurm job and shows its desktop in the user's
 browser through noVNC, with a one-time secret.")
set(CPACK_DEBIAN_VIZ_PACKAGE_DEPENDS "slurm-vgpu (>= ${PROJECT_VERSION}), websockify, novnc")
# The desktop image builder (libexec/slurm-vgpu/viz/desktop) runs on the node that builds images.
set(CPACK_DEBIAN_VIZ_PACKAGE_SUGGESTS "mmdebstrap, qemu-utils")

# The plugin package is named after the Slurm release it was built for (like Debian's kernel
# module packages), so installing the build for the next release replaces it through
# Provides/Conflicts/Replaces, and depends on exactly that upstream release.
set(VGPU_DEB_SLURM_PACKAGE "slurm-wlm-basic-plugins" CACHE STRING
  "Debian package that owns Slurm's plugin directory (empty: a Slurm not installed from packages)")
set(CPACK_DEBIAN_PLUGIN_PACKAGE_NAME "slurm-vgpu-gres-${VGPU_SLURM_VERSION}")
set(CPACK_DEBIAN_PLUGIN_PACKAGE_PROVIDES "slurm-vgpu-gres-plugin (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_PLUGIN_PACKAGE_CONFLICTS slurm-vgpu-gres-plugin)
set(CPACK_DEBIAN_PLUGIN_PACKAGE_REPLACES slurm-vgpu-gres-plugin)
set(CPACK_DEBIAN_PLUGIN_DESCRIPTION "Dynamic GPU partitioning for Slurm: gres/vgpu for Slurm ${VGPU_SLURM_VERSION}
 Reports each node's planned MIG split to slurmctld and gives every job exactly its own instances.
 Built for Slurm ${VGPU_SLURM_VERSION} only: Slurm loads a plugin only when its version equals the
 daemon's, so a new Slurm point release needs this package rebuilt against it.")
set(CPACK_DEBIAN_PLUGIN_PACKAGE_SHLIBDEPS OFF)  # libslurmfull is Slurm's private library
if(VGPU_SLURM_VERSION AND VGPU_DEB_SLURM_PACKAGE)
  string(REGEX MATCH "^([0-9]+)\\.([0-9]+)\\.([0-9]+)$" _ ${VGPU_SLURM_VERSION})
  math(EXPR next_micro "${CMAKE_MATCH_3} + 1")
  set(CPACK_DEBIAN_PLUGIN_PACKAGE_DEPENDS "${VGPU_DEB_SLURM_PACKAGE} (>= ${VGPU_SLURM_VERSION}), \
${VGPU_DEB_SLURM_PACKAGE} (<< ${CMAKE_MATCH_1}.${CMAKE_MATCH_2}.${next_micro}~)")
endif()

include(CPack)
