#!/usr/bin/env bash
# One reader on the controller (issue 46): every planner learns demand, its node's GRES and the
# jobs running on it from the publisher's signed cluster view over TCP, so slurmctld's node, job
# and partition queries follow the publisher's periods, not nodes x periods. With the publisher
# gone the planners keep their plans: a job whose instance needs a new layout pends (never starts
# where nothing can be placed), nothing drains, and each planner asks slurmctld itself at most
# once a minute per question. A restarted publisher is used again within a period, and the job
# that waited starts.
#   VP_BIN=<build> bash tests/e2e/scenarios/cluster_view.sh     (about 1.5 minutes)
set -u
{
VP_CLUSTER_VIEW=tcp
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
vp_start
nodes=$(echo $VC_NODES | wc -w)

# slurmctld's answers to node, job and partition queries over $1 seconds: "node job partition".
queries_over() {
  sdiag -r >/dev/null || vc_fail "sdiag -r failed"
  sleep "$1"
  sdiag | awk '/by message type/ {on = 1} /by user/ {on = 0}
    on && match($0, /count:[0-9]+/) { c[$1] = substr($0, RSTART + 6, RLENGTH - 6) }
    END { printf "%d %d %d\n", c["REQUEST_NODE_INFO"], c["REQUEST_JOB_INFO"], c["REQUEST_PARTITION_INFO"] }'
}
problems=""
at_most() { # $1 what $2 got $3 bound
  if [ "$2" -le "$3" ]; then echo "  $1: $2 (at most $3): ok"; else echo "  $1: $2, over $3"; problems+=" $1: $2 > $3;"; fi
}

# Idle: the publisher's squeue (a job and a partition query on 22.05) and scontrol show node (a
# node and a partition query) once a period; planners polling for themselves would add as much
# per node per period.
window=12
read -r node_q job_q part_q < <(queries_over $window)
periods=$((window / VP_PERIOD))
echo "idle, $nodes planners reading the view, publisher period ${VP_PERIOD} s, ${window} s:"
at_most "node queries" "$node_q" $((periods + 3))
at_most "job queries" "$job_q" $((periods + 3))
at_most "partition queries" "$part_q" $((2 * periods + 3))

j1=$(vp_sbatch -p infer --gres=vgpu:1g.10gb:1 --wrap 'echo started; sleep 300')
vp_wait_started "$j1" 60 || vc_fail "job $j1 did not start with the view"

# The publisher goes away. Its last view serves until it is stale (15 s at a 1 s period).
vp_publisher_stop
stale_at=$((SECONDS + 17))
for n in $VC_NODES; do
  until grep -q "cluster view tcp:127.0.0.1:$VP_VIEW_PORT: stale" "$VGPU_STATE_DIR/$n/vgpu.log" 2>/dev/null; do
    [ $SECONDS -lt $((stale_at + 20)) ] || vc_fail "planner on $n never said its view went stale"
    sleep 0.5
  done
done
echo "every planner logged its view stale: $(grep -h -m1 "cluster view tcp:.*stale" "$VGPU_STATE_DIR/n1/vgpu.log" | cut -c1-200)"
# A 7g.80gb needs a new layout on some GPU: with demand unknown no planner makes it, so the job waits.
j2=$(vp_sbatch -p train --gres=vgpu:7g.80gb:1 --wrap 'echo started; sleep 5')
read -r node_q job_q part_q < <(queries_over 20)
echo "stale, 20 s: each planner asks slurmctld itself once a minute per question at most:"
at_most "node queries" "$node_q" $((2 * nodes + 1))
at_most "job queries" "$job_q" $((2 * nodes + 1))
st=$(vc_job_state "$j2")
echo "job $j2 (7g.80gb, needs a new layout) while the view is stale: $st"
[ "$st" = PENDING ] || problems+=" job $j2 was $st while no planner could know its demand;"
[ "$(vc_job_state "$j1")" = RUNNING ] || problems+=" job $j1 was $(vc_job_state "$j1") while the view was stale;"
vc_assert_no_bad_nodes

# Back: within a period or two the planners use the view again and the waiting job starts.
vp_publisher_start
vp_wait_started "$j2" 60 || problems+=" job $j2 did not start once the publisher was back;"
vp_wait_done "$j2" 60
[ "$(vc_job_state "$j2")" = COMPLETED ] || problems+=" job $j2 ended $(vc_job_state "$j2");"
scancel "$j1"
vp_wait_done "$j1" 60
vc_assert_no_bad_nodes
vp_check || problems+=" node state inconsistent;"
if [ -z "$problems" ]; then
  vc_log "PASS: slurmctld's queries followed the publisher, not the nodes; a stale view kept every plan and nothing drained"
  exit 0
fi
echo "FAIL:$problems" >&2
exit 1
}
