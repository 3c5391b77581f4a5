# Shared by the viz suites (e2e.sh, crash_matrix.sh): the node's test viz config.
# Source it; then `viz_test_config FILE STATE_DIR PORT GUEST_DIR [OOD_PORT_MIN]` writes a viz.json
# with one pool, viz-test (attach none, the repo's guest), VNC and websockify on loopback at PORT;
# with OOD_PORT_MIN, every session also gets an OnDemand websocket on loopback in
# OOD_PORT_MIN..OOD_PORT_MIN+9.
viz_test_config() {
  local file=$1 state=$2 port=$3 guest=$4 ood=${5:-}
  local ood_json=""
  [ -n "$ood" ] && ood_json="\"ood_listen_address\": \"127.0.0.1\", \"ood_host\": \"testnode\",
  \"ood_port_min\": $ood, \"ood_port_max\": $((ood + 9)),"
  cat > "$file" <<JSON
{
  $ood_json
  "version": 1,
  "libvirt_uri": "qemu:///system",
  "accelerator": "tcg",
  "listen_address": "127.0.0.1",
  "proxy_port": $port,
  "public_host": "127.0.0.1",
  "ssh_host": "testnode",
  "state_dir": "$state",
  "pools": [
    {"name": "viz-test", "attach": "none", "memory_mib": 256, "vcpus": 1, "display": "vnc",
     "max_geometry": "1024x768",
     "image": {"kernel": "$guest/vmlinuz", "initrd": "$guest/initrd.gz",
               "cmdline": "console=ttyS0,115200 console=tty0 vga=0x318 quiet"}}
  ]
}
JSON
}
