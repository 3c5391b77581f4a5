#!/usr/bin/env python3
"""Helper of tests/e2e/scenarios/soak.sh: the seeded job plan, and the end-state accounting.

  soak.py plan SEED JOBS MAXDUR            -> the plan, one line per job, then restart events
  soak.py check RUN_DIR PLAN JOBS_TABLE    -> summary table; exit 1 with reasons if anything is off

Plan lines ("job"): idx partition profile count nodes tasks duration cancel_after_ms hold timeout
Event lines ("event"): after_idx kind node   (kind: slurmd, slurmctld, planner)

JOBS_TABLE (written by soak.sh): "job_id idx last_state seen_running cancelled_at_state" per
Slurm job id (array tasks have their own ids, all mapping to their plan idx), and
"refused idx" lines for submissions sbatch refused.
"""
import collections
import json
import os
import random
import re
import sys

INFER = ["1g.10gb", "1g.20gb", "2g.20gb"]
TRAIN = ["3g.40gb", "4g.40gb", "7g.80gb"]


def plan(seed, jobs, maxdur):
    rnd = random.Random(seed)
    out = []
    # TIMEOUT jobs hold a CPU for the minimum limit (1 min) plus Slurm's check interval: a few,
    # early, so they end while the stream still runs.
    timeouts = set(rnd.sample(range(min(jobs, max(jobs // 3, 1))), max(1, jobs // 300)))
    for i in range(jobs):
        if rnd.random() < 0.6:
            part, profile, count = "infer", rnd.choice(INFER), rnd.randint(1, 4)
        else:
            part, profile, count = "train", rnd.choice(TRAIN), rnd.randint(1, 2)
        nodes = 2 if rnd.random() < 0.05 else 1
        tasks = rnd.randint(2, 3) if nodes == 1 and rnd.random() < 0.03 else 1
        # Many zero-length jobs: the prolog/epilog path with nothing between them.
        duration = 0 if rnd.random() < 0.25 else rnd.randint(1, maxdur)
        cancel, hold, timeout = -1, 0, 0
        r = rnd.random()
        if i in timeouts:
            timeout, duration = 1, 600
        elif tasks == 1 and r < 0.03:
            hold, cancel = 1, rnd.randint(300, 2000)  # certainly cancelled while pending
        elif tasks == 1 and r < 0.13:
            cancel = rnd.randint(0, (duration + 3) * 1000)  # pending or running, whichever it is then
        out.append(f"job {i} {part} {profile} {count} {nodes} {tasks} {duration} {cancel} {hold} {timeout}")
    # A few restarts of each kind at random points of the stream, never in its first or last 5%.
    lo, hi = max(1, jobs // 20), max(2, jobs - jobs // 20)
    n_each = max(2, jobs // 150)
    events = []
    for kind, n in (("slurmd", n_each), ("slurmctld", max(1, n_each // 2)), ("planner", n_each)):
        for _ in range(n):
            events.append((rnd.randint(lo, hi - 1), kind, rnd.choice(["n1", "n2", "n3"]) if kind != "slurmctld" else "-"))
    for e in sorted(events):
        out.append(f"event {e[0]} {e[1]} {e[2]}")
    print("\n".join(out))


def read_plan(path):
    jobs, events = {}, []
    for line in open(path):
        f = line.split()
        if f[0] == "job":
            idx, part, profile, count, nodes, tasks, dur, cancel, hold, timeout = f[1:]
            jobs[int(idx)] = dict(part=part, profile=profile, count=int(count), nodes=int(nodes), tasks=int(tasks),
                                  dur=int(dur), cancel=int(cancel), hold=int(hold), timeout=int(timeout))
        elif f[0] == "event":
            events.append((int(f[1]), f[2], f[3]))
    return jobs, events


def idle_layout_for(policy, node):
    # libvgpu/node/planner_round: the first of the node's partitions (file order) with an idle_layout.
    for p in policy["partitions"].values():
        if p.get("idle_layout") and any(node in spec.split(",") for spec in p.get("nodes", [])):
            return sorted(p["idle_layout"])
    return []


def at_idle_layout(status, policy):
    """Problems that keep the nodes of a `vgpuctl status --json` from their idle layout."""
    problems = []
    for node in status:
        n = node["node"]
        want = idle_layout_for(policy, n)
        for g in node["gpus"]:
            # Idle instances (no job; kept after a scrub or prepared ahead with prepare_slots) each
            # stand on a planned slot of their profile; anything else is left over.
            idle = [i for i in g["instances"] if i["state"] == "idle" and i["job"] is None]
            left = [i for i in g["instances"] if i not in idle]
            if left:
                problems.append(f"node {n} GPU {g['index']}: ledger still holds {len(left)} instance(s): {left}")
            slots = collections.Counter((s["profile"], s["start"]) for s in g["planned"])
            for i in idle:
                key = (i["profile"], i["start"])
                if slots[key] > 0:
                    slots[key] -= 1
                else:
                    problems.append(f"node {n} GPU {g['index']}: idle instance {i} stands on no planned slot")
            claimed = [s for s in g["planned"] if s["claimed_by_job"] is not None]
            if claimed:
                problems.append(f"node {n} GPU {g['index']}: slots still claimed: {claimed}")
            got = sorted(s["profile"] for s in g["planned"])
            if got != want:
                problems.append(f"node {n} GPU {g['index']}: planned {got}, the idle layout is {want}")
    return problems


def check(run, plan_path, table_path):
    state_dir = os.path.join(run, "vgpu")
    problems = []
    jobs, events = read_plan(plan_path)
    rows, refused = {}, []
    for line in open(table_path):
        f = line.split()
        if not f:
            continue
        if f[0] == "refused":
            refused.append(int(f[1]))
            continue
        jid, idx, state, seen_running, cancelled_at = int(f[0]), int(f[1]), f[2], f[3] == "1", f[4]
        rows[jid] = dict(idx=idx, state=state, seen_running=seen_running, cancelled_at=cancelled_at)
    policy = json.load(open(os.path.join(run, "etc", "vgpu-policy.json")))
    # Node folders; the fake driver keeps hidden records beside them.
    nodes = sorted(d for d in os.listdir(state_dir)
                   if not d.startswith(".") and os.path.isdir(os.path.join(state_dir, d)))

    # Instances created: the prolog's "ready" lines (vgpu.log, one per node). A prolog re-run
    # after a crash logs the same uuids again: sets.
    ready_re = re.compile(r"vgpu: prolog: job (\d+): user \S+: ready: (\S+)")
    # Why the product ended a job itself: prolog rejections and errors, per node.
    reason_re = re.compile(r"(vgpu: prolog: job (\d+): (?:rejected|node not ready).*)")
    reasons = collections.defaultdict(list)
    # Jobs Slurm started where the node had no room after all; their prolog requeued them (they
    # must still end as planned). Counted and shown, not a failure: never a cancellation.
    requeue_re = re.compile(r"(vgpu: prolog: job (\d+): vgpu: requeued: .*)")
    requeued = []
    last_requeue = {}  # job -> time of its last requeue by a prolog, on any node
    created = collections.defaultdict(set)   # (node, job) -> {(profile, uuid)}, over every run
    # What the job's last run got on each node: its last "ready" line there. A job requeued by
    # one node's prolog may already have had instances created (and released) on another.
    last_ready = {}  # (node, job) -> (time, {(profile, uuid)})
    history = collections.defaultdict(list)  # (node, job) -> [record]
    hw = {}
    for n in nodes:
        log = os.path.join(state_dir, n, "vgpu.log")
        if os.path.exists(log):
            for line in open(log, errors="replace"):
                r = reason_re.search(line)
                if r:
                    reasons[int(r.group(2))].append(f"{n}: {r.group(1)}")
                q = requeue_re.search(line)
                if q:
                    requeued.append(f"{n}: {q.group(1)}")
                    job = int(q.group(2))
                    last_requeue[job] = max(last_requeue.get(job, ""), line.split(" ", 1)[0])
                m = ready_re.search(line)
                if m:
                    run_insts = set()
                    for item in m.group(2).split(","):
                        profile, uuid = item.split("=", 1)
                        run_insts.add((profile, uuid))
                    created[(n, int(m.group(1)))] |= run_insts
                    last_ready[(n, int(m.group(1)))] = (line.split(" ", 1)[0], run_insts)
        hist = os.path.join(state_dir, n, "history.jsonl")
        if os.path.exists(hist):
            text = open(hist).read()
            lines = text.split("\n")
            if not text.endswith("\n") and lines[-1]:
                problems.append(f"{hist}: last line has no newline (torn append left behind)")
            for no, line in enumerate(lines[:-1], 1):
                rec = json.loads(line)
                if rec.get("format") != "slurm-vgpu-history" or rec.get("version") != 1:
                    problems.append(f"{hist}:{no}: not a version 1 history record: {line[:120]}")
                    continue
                history[(n, rec["job"])].append(rec)
        st = json.load(open(os.path.join(state_dir, f"{n}.fake-nvml-state.json")))
        gis = sum(len(g) for g in st["gpus"].values())
        # Each GPU instance creation and each compute instance creation takes one serial.
        hw[n] = dict(serials=st["next_serial"] - 1, present=gis)

    # Every created instance was released exactly once (history keeps the first record of a
    # retried epilog per (job, mig_uuid, start_time), LedgerStore::history()).
    per_node = {n: collections.Counter() for n in nodes}
    for (n, job), insts in created.items():
        recs = history.get((n, job), [])
        got = {(r["profile"], r["mig_uuid"]) for r in recs}
        for inst in sorted(insts - got):
            problems.append(f"node {n} job {job}: instance {inst[0]} {inst[1]} was created but has no history record")
        per_node[n]["created"] += len(insts)
    for (n, job), recs in history.items():
        keyed = collections.Counter((r["mig_uuid"], r["start_time"]) for r in recs)
        for k, c in keyed.items():
            if c > 1:
                per_node[n]["retried_epilog_duplicates"] += c - 1
        got = {(r["profile"], r["mig_uuid"]) for r in recs}
        for inst in sorted(got - created.get((n, job), set())):
            problems.append(f"node {n} job {job}: history releases {inst[0]} {inst[1]} that no prolog reported creating")
        for r in recs:
            if r["end_time"] < r["start_time"]:
                problems.append(f"node {n} job {job}: history record ends before it starts: {r}")
        per_node[n]["history"] += len(keyed)

    # Jobs: the expected end state, and the instances each one that ran got.
    # A requeued job's last run starts after its last requeue: its prolog runs only once the
    # epilog of the requeued run ended (log times are ISO seconds, so they compare as strings).
    by_job_nodes = collections.defaultdict(dict)  # job -> node -> {(profile, uuid)} of its last run
    for (n, job), (when, insts) in last_ready.items():
        if when > last_requeue.get(job, ""):
            by_job_nodes[job][n] = insts
    states = collections.Counter()
    overalloc = []  # Slurm allocated what the node's plan could not place: the prolog cancelled it
    tasks_seen = collections.Counter()
    cancelled = collections.Counter()
    for jid, row in sorted(rows.items()):
        spec = jobs[row["idx"]]
        tasks_seen[row["idx"]] += 1
        st = row["state"]
        states[st] += 1
        if row["cancelled_at"] != "-":
            cancelled[row["cancelled_at"]] += 1
        want_inst = spec["count"] * spec["nodes"]
        got_nodes = by_job_nodes.get(jid, {})
        got_inst = sum(len(v) for v in got_nodes.values())
        label = f"job {jid} (plan #{row['idx']}: {spec['part']} {spec['profile']}:{spec['count']} -N{spec['nodes']})"
        for n, insts in got_nodes.items():
            for profile, uuid in insts:
                if profile != spec["profile"]:
                    problems.append(f"{label}: node {n} created {profile} {uuid}, the job asked for {spec['profile']}")
        if spec["timeout"]:
            expected = {"TIMEOUT"}
        elif row["cancelled_at"] != "-":
            expected = {"CANCELLED", "COMPLETED"}  # the cancel may arrive after the job ended
        else:
            expected = {"COMPLETED"}
        if st not in expected:
            why = "; ".join(sorted(reasons.get(jid, [])))
            if not why and spec["tasks"] > 1:
                # The prolog cancels a rejected array task with `scancel <its job id>`; for the task
                # that carries the array's id that cancels every task of the array.
                sib = [j for j, r in rows.items() if r["idx"] == row["idx"] and j != jid and reasons.get(j)]
                if sib:
                    why = (f"array sibling of job {sib[0]}, cancelled by its prolog's scancel: "
                           + "; ".join(sorted(reasons[sib[0]])))
            why = why or "no vgpu log line about it"
            msg = f"{label}: ended {st}, expected {'/'.join(sorted(expected))} ({why})"
            if st == "CANCELLED" and "instance(s) fit in the free space" in why:
                overalloc.append(msg)
            else:
                problems.append(msg)
        if st in ("COMPLETED", "TIMEOUT"):
            if got_inst != want_inst or len(got_nodes) != spec["nodes"]:
                problems.append(f"{label}: ended {st} with {got_inst} instance(s) on {len(got_nodes)} node(s), "
                                f"expected {want_inst} on {spec['nodes']}")
            out = os.path.join(run, "out", f"{jid}.out")
            line = next((l for l in open(out, errors="replace") if l.startswith("CVD=")), "") if os.path.exists(out) else ""
            m = re.match(r"CVD=(\S*) .*NODE=(\S+)", line)
            if not m:
                problems.append(f"{label}: ended {st} but printed no CVD line")
            else:
                seen = set(m.group(1).split(","))
                mine = {u for _, u in got_nodes.get(m.group(2), set())}
                if seen != mine:
                    problems.append(f"{label}: saw {m.group(1)} on {m.group(2)}, its instances there are {sorted(mine)}")
        elif got_inst > want_inst:
            problems.append(f"{label}: ended {st} with {got_inst} instance(s), more than the {want_inst} asked for")
    for idx in refused:
        spec = jobs[idx]
        problems.append(f"plan #{idx} ({spec['part']} {spec['profile']}:{spec['count']} -N{spec['nodes']}): sbatch refused it")
    for idx, spec in jobs.items():
        if idx in refused:
            continue
        if tasks_seen[idx] != spec["tasks"]:
            problems.append(f"plan #{idx}: {tasks_seen[idx]} Slurm job(s) seen, expected {spec['tasks']}")
    for job in {job for _, job in created}:
        if job not in rows:
            problems.append(f"job {job}: instances were created for a job the soak did not submit")

    # End state of every GPU: no instances, plan == the policy's idle layout, hardware empty.
    status = json.load(open(os.path.join(run, "out", "status-end.json")))
    layout = at_idle_layout(status, policy)
    layout_note = []
    if os.environ.get("VP_SOAK_IDLE_LAYOUT", "1") == "1":
        problems += layout
    else:
        # Report only: instances or claims left are still problems.
        problems += [p for p in layout if "the idle layout is" not in p]
        layout_note = [p for p in layout if "the idle layout is" in p]
    idle_in_ledger = {node["node"]: sum(1 for g in node["gpus"] for i in g["instances"] if i["state"] == "idle")
                      for node in status}
    for n in nodes:
        if hw[n]["present"] != idle_in_ledger.get(n, 0):
            problems.append(f"node {n}: {hw[n]['present']} GPU instance(s) on the (fake) hardware, "
                            f"{idle_in_ledger.get(n, 0)} idle in the ledger")

    # Summary.
    print("=== soak summary ===")
    print(f"{'end state':<12} {'jobs':>6}")
    for st, c in sorted(states.items()):
        print(f"{st:<12} {c:>6}")
    print(f"{'(refused)':<12} {len(refused):>6}")
    print(f"{'total':<12} {sum(states.values()):>6}  Slurm jobs from {len(jobs)} submissions "
          f"({sum(1 for j in jobs.values() if j['tasks'] > 1)} arrays, "
          f"{sum(1 for j in jobs.values() if j['nodes'] > 1)} two-node)")
    print("cancels sent, by the job's state then: " + (", ".join(f"{k} {v}" for k, v in sorted(cancelled.items())) or "none"))
    print(f"{'node':<6} {'created':>8} {'released':>9} {'hw GI+CI created':>17} {'left on hw':>11} {'retried epilogs':>16}")
    for n in nodes:
        c = per_node[n]
        print(f"{n:<6} {c['created']:>8} {c['history']:>9} {hw[n]['serials']:>17} {hw[n]['present']:>11} "
              f"{c['retried_epilog_duplicates']:>16}")
    print(f"requeued by a prolog (Slurm started the job where the node had no room after all): {len(requeued)}")
    for q in requeued:
        print("REQUEUED: " + q)
    if overalloc:
        print(f"over-allocations: {len(overalloc)} job(s) Slurm started where the node's plan had no room "
              "(the prolog cancelled them)")
        if os.environ.get("VP_SOAK_ALLOW_OVERALLOC", "0") == "1":
            for p in overalloc:
                print("OVER-ALLOCATION (VP_SOAK_ALLOW_OVERALLOC=1, reported only): " + p)
        else:
            problems += overalloc
    for p in layout_note:
        print("NOT IDLE LAYOUT (VP_SOAK_IDLE_LAYOUT=0, reported only): " + p)
    with open(os.path.join(run, "out", "soak-problems.txt"), "w") as f:
        f.write("".join(p + "\n" for p in problems + overalloc + layout_note))
    if problems:
        print(f"=== {len(problems)} problem(s) ===")
        for p in problems[:60]:
            print("PROBLEM: " + p)
        if len(problems) > 60:
            print(f"... and {len(problems) - 60} more")
        return 1
    idle_left = sum(idle_in_ledger.values())
    print("accounting: every instance created was released in the history; "
          + (f"nothing left on any GPU but {idle_left} idle instance(s), one on each of their planned slots"
             if idle_left else "nothing left on any GPU")
          + ("" if layout_note else "; every GPU is back to the idle layout"))
    return 0


def main():
    if sys.argv[1] == "plan":
        plan(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        return 0
    if sys.argv[1] == "idle":
        status, policy = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
        return 1 if at_idle_layout(status, policy) else 0
    if sys.argv[1] == "check":
        return check(sys.argv[2], sys.argv[3], sys.argv[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
