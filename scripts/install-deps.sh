#!/usr/bin/env bash
# Installs every Debian 12 package slurm-vgpu builds, tests or demos with.
# Idempotent and non-interactive: safe to run on every invocation of the README commands.
set -euo pipefail

packages=(
  # build toolchain and libraries
  build-essential cmake ninja-build pkg-config git ccache
  nlohmann-json3-dev libgtest-dev libgmock-dev googletest libcli11-dev libfmt-dev
  libbenchmark-dev librapidcheck-dev libhwloc-dev hwloc
  libssl-dev  # libcrypto: the cluster view's Ed25519 signatures
  # the fake amdgpu driver serves its sysfs to a test node's processes as a FUSE filesystem
  libfuse3-dev fuse3
  clang libclang-rt-14-dev
  clang-19 libclang-rt-19-dev  # libFuzzer with std::expected (scripts/fuzz.sh)
  clang-format clang-tidy-19   # the layout and the node side's static checks (scripts/check-style.sh)
  # Slurm 22.05 (daemons, clients, and the tools that fetch its matching source)
  slurm-wlm slurmctld slurmd slurm-client munge dpkg-dev
  # the submit filter's grammar test runs job_submit.lua outside slurmctld (jobsubmit/test), in
  # the Lua of Debian's Slurm (5.1) and of the releases built here (5.3)
  lua5.1 lua5.3
  # newer Slurm releases built from source (scripts/build-slurm.sh): munge, lua (job_submit/lua),
  # MariaDB client (accounting_storage/mysql)
  libmunge-dev liblua5.3-dev libmariadb-dev
  # accounting in the test cluster (tests/cluster/accounting.sh): slurmdbd over a real MariaDB;
  # libfaketime moves slurmdbd's clock so it rolls up the hours a test ran in
  slurmdbd mariadb-server faketime
  # metrics (tests/e2e/monitoring.sh): node_exporter's textfile collector, Prometheus, promtool
  prometheus prometheus-node-exporter curl
  # visualization sessions
  libvirt-dev libvirt-daemon libvirt-clients qemu-system-x86 qemu-utils
  websockify novnc chromium busybox-static cpio
  # the desktop guest image (vizfrontend/guest/desktop): Debian from its archive into a directory
  mmdebstrap
  # the RPMs, built and checked on Debian (scripts/build-rpms.sh, tests/packaging/rpm_matches_deb.sh)
  rpm rpmlint
  # benchmark plots and helpers
  python3 python3-matplotlib python3-pil fonts-dejavu-core jq bc
  # the Open OnDemand app check (tests/viz/ood_app_check.py): ERB as OnDemand renders it, YAML
  ruby python3-yaml
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Debian's slurm packages try to start daemons from maintainer scripts; we start our own.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
