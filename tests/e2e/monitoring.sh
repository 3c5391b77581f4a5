# shellcheck shell=bash
# Prometheus over the e2e cluster (VP_METRICS=1, sourced by lib.sh): every node's planner writes
# its metrics file (VGPU_METRICS_FILE), one node_exporter per node serves that directory through
# its textfile collector, and one Prometheus scrapes them every second with the product's alert
# rules loaded (monitoring/slurm-vgpu-alerts.yml). Debian's packages, each in the run dir, stopped
# by PID.
#
#   vp_metrics_start / vp_metrics_stop      (vp_start / vp_stop call them)
#   vp_prom_query EXPR                      one line per series: "label=value,... VALUE"
#   VP_PROM_URL                             http://127.0.0.1:<port>

VP_METRICS=${VP_METRICS:-0}
VP_NODE_EXPORTER=${VP_NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}

vp_metrics_file() { echo "$VC_RUN/metrics/$1/slurm_vgpu.prom"; }

vp_metrics_start() {
  [ "$VP_METRICS" = 1 ] || return 0
  local n port targets=""
  for n in $VC_NODES; do
    port=$(_vc_free_port)
    mkdir -p "$VC_RUN/metrics/$n"
    setsid "$VP_NODE_EXPORTER" --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
      --collector.textfile --collector.textfile.directory="$VC_RUN/metrics/$n" \
      >> "$VC_RUN/log/node_exporter.$n.log" 2>&1 < /dev/null &
    echo $! > "$VC_RUN/run/node_exporter.$n.pid"
    targets+="${targets:+, }'127.0.0.1:$port'"
  done
  VP_PROM_PORT=$(_vc_free_port)
  VP_PROM_URL=http://127.0.0.1:$VP_PROM_PORT
  cat > "$VC_RUN/etc/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $VP_SRC/monitoring/slurm-vgpu-alerts.yml
scrape_configs:
  - job_name: slurm-vgpu
    static_configs:
      - targets: [$targets]
YML
  setsid prometheus --config.file="$VC_RUN/etc/prometheus.yml" --storage.tsdb.path="$VC_RUN/prometheus" \
    --web.listen-address="127.0.0.1:$VP_PROM_PORT" --log.level=warn \
    >> "$VC_RUN/log/prometheus.log" 2>&1 < /dev/null &
  echo $! > "$VC_RUN/run/prometheus.pid"
  for _ in $(seq 150); do
    curl -sf "$VP_PROM_URL/-/ready" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  vc_log "prometheus did not become ready: $(tail -3 "$VC_RUN/log/prometheus.log")"
  return 1
}

vp_metrics_stop() {
  [ -n "${VC_RUN:-}" ] || return 0
  local f
  for f in "$VC_RUN"/run/node_exporter.*.pid "$VC_RUN/run/prometheus.pid"; do
    [ -e "$f" ] && _vc_stop_pidfile "$f"
  done
  return 0
}

vp_prom_query() { # $1 PromQL: prints "label=value,... VALUE" per series, sorted; fails on an error
  python3 - "$VP_PROM_URL" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
url, expr = sys.argv[1], sys.argv[2]
with urllib.request.urlopen(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}), timeout=10) as r:
    d = json.load(r)
if d.get("status") != "success":
    sys.exit(f"query {expr!r}: {d}")
res = d["data"]["result"]
if d["data"]["resultType"] == "scalar":
    res = [{"metric": {}, "value": res}]
for s in sorted(res, key=lambda s: sorted(s["metric"].items())):
    labels = ",".join(f"{k}={v}" for k, v in sorted(s["metric"].items()) if k != "__name__")
    print(labels, s["value"][1])
PY
}
