#!/usr/bin/env bash
# Wide jobs do not starve (issue 14, req 3). A job that needs both GPUs of a node waits behind a
# stream of small jobs that keeps every node busy. Once it has waited past the limit, the demand
# publisher books a Slurm reservation (vgpu-wide-<job>) on the node whose jobs end first, from
# when they end; Slurm keeps jobs that would run across that time off the node (backfill), the
# other nodes keep serving the stream, nothing is drained, and the wide job starts there. Once it
# runs the publisher takes it out of the reservation and deletes it, while it runs on to completion.
set -u
VP_CLUSTER_VIEW=file  # the view from a shared file, signed (the demo serves it over TCP)
VP_RESERVE_WIDE_AFTER=${VP_RESERVE_WIDE_AFTER:-10}
# The node-local guard (each node drains a GPU for a starving request) stays out of the way, so
# what lets the wide job start here is the reservation.
VP_STARVATION=${VP_STARVATION:-3600}
. "$(dirname "$0")/../lib.sh"
trap 'vp_finish $?' EXIT
vp_start
job=$(vp_job_script)
# Two CPUs per node: two small jobs keep a node busy. Each runs 20 s under a 1-minute limit (the
# limit, not the run time, is what Slurm plans reservations with).
feed() { vp_sbatch -p infer --time=1 --gres=vgpu:1g.10gb:1 "$job" 20; }
stream=()
for _ in $(seq 12); do stream+=("$(feed)"); done
sleep 3
wide=$(vp_sbatch -p train --time=1 --gres=vgpu:7g.80gb:2 "$job" 20)
submitted=$(date +%s)
resv=vgpu-wide-$wide
booked_at=""
stop_at=$(( submitted + 240 ))
while [ "$(date +%s)" -lt $stop_at ]; do
  state=$(vc_job_state "$wide")
  [[ $state =~ RUNNING|COMPLETING|COMPLETED ]] && break
  if [ -z "$booked_at" ] && scontrol -o show reservation "$resv" 2>/dev/null | grep -q "ReservationName=$resv"; then
    booked_at=$(date +%s)
    scontrol -o show reservation "$resv" | tee "$VC_RUN/out/reservation.txt"
  fi
  # Keep the stream flowing: about one new small job per second while the wide job waits.
  [ "$(squeue -h -t PD -p infer | wc -l)" -lt 6 ] && stream+=("$(feed)")
  sleep 1
done
state=$(vc_job_state "$wide")
pending_small=$(squeue -h -t PD -p infer | wc -l)
started=$(date +%s)
echo "wide job $wide is $state after $((started - submitted)) s; $pending_small small jobs pending"
grep -h "wide jobs:" "$VC_RUN/log/publisher.log" | head -5
[ -n "$booked_at" ] || vc_fail "no reservation $resv was booked: $(tail -5 "$VC_RUN/log/publisher.log")"
[ $((booked_at - submitted)) -ge "$VP_RESERVE_WIDE_AFTER" ] ||
  vc_fail "booked after $((booked_at - submitted)) s, before the job had waited $VP_RESERVE_WIDE_AFTER s"
grep -q "Flags=.*FLEX" "$VC_RUN/out/reservation.txt" && grep -q "PURGE_COMP" "$VC_RUN/out/reservation.txt" ||
  vc_fail "reservation flags: $(cat "$VC_RUN/out/reservation.txt")"
reserved_node=$(grep -o ' Nodes=[^ ]*' "$VC_RUN/out/reservation.txt" | cut -d= -f2)
resv_start=$(date -u -d "$(grep -o 'StartTime=[^ ]*' "$VC_RUN/out/reservation.txt" | cut -d= -f2)" +%s)
[[ $state =~ RUNNING|COMPLETING|COMPLETED ]] || vc_fail "the wide job starved ($state)"
[ "$pending_small" -gt 0 ] || vc_fail "the stream had drained: it was not the reservation that let the wide job start"
wide_node=$(scontrol -o show job "$wide" | grep -o ' NodeList=[^ ]*' | cut -d= -f2)
[ "$wide_node" = "$reserved_node" ] || vc_fail "the wide job ran on $wide_node, its reservation holds $reserved_node"
sinfo -h -o '%N %T' | grep -iE 'drain|down' && vc_fail "a node was drained or down"

# Backfill around the reservation: after the booking, small jobs kept starting on the other nodes,
# and none started on the reserved node that would run past the reservation's start.
elsewhere=0
for j in "${stream[@]}"; do
  line=$(scontrol -o show job "$j" 2>/dev/null) || continue
  st=$(grep -o ' StartTime=[^ ]*' <<<"$line" | cut -d= -f2)
  [[ $st =~ ^[0-9] ]] || continue
  st=$(date -u -d "$st" +%s)
  [ "$st" -gt "$booked_at" ] || continue
  node=$(grep -o ' NodeList=[^ ]*' <<<"$line" | cut -d= -f2)
  if [ "$node" = "$reserved_node" ]; then
    [ $((st + 60)) -le "$resv_start" ] || vc_fail "job $j started on $node at $st, across the reservation's start $resv_start"
  else
    elsewhere=$((elsewhere + 1))
  fi
done
vc_log "small jobs started on other nodes while the reservation held $reserved_node: $elsewhere"
[ "$elsewhere" -gt 0 ] || vc_fail "no small job started elsewhere: the reservation held more than its node"

# The reservation got its job started: it goes while the job runs (its whole node would otherwise
# stay closed to others for the job's run), and the job runs on.
for _ in $(seq 15); do
  scontrol -o show reservation "$resv" 2>/dev/null | grep -q "ReservationName=$resv" || break
  sleep 1
done
scontrol -o show reservation "$resv" 2>/dev/null | grep -q "ReservationName=$resv" &&
  vc_fail "reservation $resv still there 15 s after its job started: $(grep "wide jobs:" "$VC_RUN/log/publisher.log" | tail -2)"
[ "$(vc_job_state "$wide")" = RUNNING ] || vc_fail "the wide job is $(vc_job_state "$wide") once its reservation went, expected RUNNING"
grep -q "$resv: job $wide runs; taken out of it and deleted" "$VC_RUN/log/publisher.log" ||
  vc_fail "the publisher did not say it released $resv: $(grep "wide jobs:" "$VC_RUN/log/publisher.log" | tail -2)"
for j in "$wide" "${stream[@]}"; do vp_wait_done "$j" 180 || vc_fail "job $j did not finish"; done
vp_assert_completed "$wide"
vp_assert_no_instances
vp_check || vc_fail "inconsistent at the end"
vc_log "PASS wide_reservation"
