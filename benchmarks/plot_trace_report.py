#!/usr/bin/python3
"""Plots and REPORT.md from the JSON that run-trace-report.sh collected.
Usage: plot_trace_report.py RESULTS_DIR REPLAY_GPUS "SWEEP_GPUS..." """
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

out, replay_gpus = sys.argv[1], sys.argv[2]
sweep_gpus = [int(g) for g in sys.argv[3].split()] if len(sys.argv) > 3 else []
CLASSES = ["sub_gpu", "single_gpu", "multi_gpu"]
TRACES = ["default", "gpushare40", "multigpu20"]
COLORS = {"whole": "#888888", "static": "#d08c30", "firstfit": "#4a78b5", "planner": "#3a9a50",
          "shared": "#8a4fb0", "planner+weights": "#1f5e2e", "shared+weights": "#4f2670",
          "planner+prefer": "#7cc48a", "shared+prefer": "#c39be0",
          "planner+fill": "#2f7d8c", "shared+fill": "#b0407a",
          "planner+prefer+fill": "#b5e0bd", "shared+prefer+fill": "#e3cff0",
          "fgd-twin": "#222222", "bestfit-twin": "#bbbbbb", "fgd-mig": "#555555"}


def load(name):
    with open(os.path.join(out, name + ".json")) as f:
        return json.load(f)


runs = {t: load(t) for t in TRACES}
replay = load(f"replay-{replay_gpus}")
sweep = {g: load(f"sweep-{g}") for g in sweep_gpus}
reserved = {g: load(f"sweep-reserved-{g}") for g in sweep_gpus
            if os.path.exists(os.path.join(out, f"sweep-reserved-{g}.json"))}
latency = {g: load(f"sweep-latency-{g}") for g in sweep_gpus
           if os.path.exists(os.path.join(out, f"sweep-latency-{g}.json"))}
arrival_policies = [r["policy"] for r in runs["default"]["results"]]
policies = [r["policy"] for r in replay["results"]]  # the replays and sweeps


def save(fig, name):
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=72)
    plt.close(fig)


# FGD's metric per trace and policy (seed deviation as error bars), FGD's published number as a line.
fig, ax = plt.subplots(figsize=(9, 3.6))
width = 0.8 / len(arrival_policies)
for i, pol in enumerate(arrival_policies):
    xs = [k + i * width for k in range(len(TRACES))]
    rs = [next(r for r in runs[t]["results"] if r["policy"] == pol) for t in TRACES]
    ax.bar(xs, [r["fgd_unallocated_pct"] for r in rs], width,
           yerr=[r["fgd_unallocated_pct_std"] for r in rs], label=pol, color=COLORS[pol], capsize=2)
for k, t in enumerate(TRACES):
    pub = runs[t]["fgd_published_unallocated_pct"] or {}
    if "fgd" in pub:
        ax.hlines(pub["fgd"], k - width / 2, k + 0.8 - width / 2, colors="black",
                  linestyles="dashed", label="FGD (published)" if k == 0 else None)
    ceil = runs[t]["ceilings_fgd_unallocated_pct"]["online_mig"]
    ax.hlines(ceil, k - width / 2, k + 0.8 - width / 2, colors="#3a9a50", linestyles="dotted",
              label="online MIG ceiling" if k == 0 else None)
ax.set_xticks([k + 0.4 - width / 2 for k in range(len(TRACES))], TRACES)
ax.set_title("FGD's metric: GPU capacity not serving requested work at 100% arrived (lower is "
             "better)", fontsize=10)
ax.legend(fontsize=8, loc="upper right", ncol=2)
save(fig, "unallocated.png")

# Slice utilisation over time in the contended replay.
fig, ax = plt.subplots(figsize=(8, 3.2))
for r in replay["results"]:
    rp = r["replay"]
    ax.plot([h / 24 for h in rp["util_time_h"]], [100 * u for u in rp["util"]], label=r["policy"],
            color=COLORS[r["policy"]], linewidth=1)
ax.set_xlabel("days since the first arrival")
ax.set_ylabel("allocated compute slices %")
ax.set_title(f"replay of openb default on {replay_gpus} H100-80GB", fontsize=10)
ax.legend(fontsize=8)
save(fig, "utilisation.png")

# Wait CDF in the contended replay.
fig, ax = plt.subplots(figsize=(6, 3.2))
for r in replay["results"]:
    q = r["replay"]["wait_quantiles_s"]
    ax.plot([max(w, 1) for w in q], [i / 100 for i in range(len(q))], label=r["policy"],
            color=COLORS[r["policy"]])
ax.set_xscale("log")
ax.set_xlabel("queueing delay, s (waits under 1 s drawn at 1 s)")
ax.set_ylabel("fraction of tasks")
ax.set_title(f"wait CDF, openb default on {replay_gpus} GPUs", fontsize=10)
ax.legend(fontsize=8)
save(fig, "wait_cdf.png")


def spread(values):
    return statistics.median(values), min(values), max(values)


# p95 wait over the sweep: median of the jittered seeds, min-max as error bars.
if sweep:
    fig, ax = plt.subplots(figsize=(8, 3.4))
    for k, pol in enumerate(policies):
        med, lo, hi = [], [], []
        for g in sweep_gpus:
            r = next(x for x in sweep[g]["results"] if x["policy"] == pol)
            m, a_, b_ = spread([j["p95_wait_s"] for j in r["jittered_replays"]])
            med.append(m)
            lo.append(m - a_)
            hi.append(b_ - m)
        xs = [g + (k - len(policies) / 2) * 0.15 for g in sweep_gpus]
        ax.errorbar(xs, med, yerr=[lo, hi], label=pol, color=COLORS[pol], marker="o", ms=3,
                    capsize=2, linewidth=1)
    ax.set_xlabel("GPUs in the replayed cluster")
    ax.set_ylabel("p95 wait, s (median, min-max of seeds)")
    ax.legend(fontsize=8)
    save(fig, "sweep_p95.png")


def read(name):
    p = os.path.join(out, name)
    return open(p).read().strip() if os.path.exists(p) else "(not run)"


# FGD's published schedulers run in this twin on their own resource model (policies *-twin), and
# FGD's choice with dedicated MIG instances (fgd-mig: a per-job choice no Slurm lever makes).
TWIN_LABELS = {"fgd-twin": "fgd, run in this twin (fractional GPUs, no isolation)",
               "bestfit-twin": "bestfit, run in this twin (fractional GPUs, no isolation)",
               "fgd-mig": "fgd's choice per job, dedicated MIG instances (reference: not a Slurm lever)"}
lines = ["# Trace benchmark report", "",
         "Generated by `benchmarks/run-trace-report.sh`; methodology in `docs/benchmarks.md`.",
         "Trace: Alibaba cluster-trace-gpu-v2023 \"openb\" (Weng et al., *Beware of "
         "Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent*, "
         "USENIX ATC '23).", "", "## Machine", "", "```", read("machine.txt"), "```", "",
         "## Arrivals until 100% of capacity: FGD's metric, beside FGD's published numbers", "",
         "`fgd_unallocated_pct` = 100 - served %: GPU capacity not serving requested work when the "
         "arrived work reaches 100 % of capacity (FGD's headline metric). It splits exactly into "
         "*rounding* (allocated beyond the request: a MIG profile larger than the task, or the "
         "unshared part of a shared instance) and *stranded* (never allocated). *Failed work* is "
         "the arrived GPU work that was refused.", ""]
for t in TRACES:
    d = runs[t]
    m = d["mapping"]
    pub = d["fgd_published_unallocated_pct"] or {}
    ceil = d["ceilings_fgd_unallocated_pct"]
    lines += [f"### {t}: {d['nodes']} openb nodes, {d['gpus']} GPUs as {d['model']}, "
              f"{d['seeds']} seeds", "",
              f"{m['gpu_tasks']} GPU tasks and {m['cpu_only']} CPU-only tasks in the trace, tuned to "
              f"{d['tune_ratio']}x capacity; node choice: {d['node_choice']}; host CPU and memory "
              f"{'limited' if d['host_constrained'] else 'unlimited'}.", "",
              "| scheduler | FGD unallocated % | rounding % | stranded % | failed work % | "
              "failed tasks | ms/seed |", "|---|---|---|---|---|---|---|"]
    for name in ["fgd", "bestfit", "dotprod"]:
        if name in pub:
            lines.append(f"| {name} (published, fractional GPUs, no isolation) | {pub[name]:.2f} "
                         "| | | | | |")
    lines.append(f"| ceiling: online perfect packing with MIG rounding | {ceil['online_mig']:.2f} "
                 "| | | | | |")
    lines.append(f"| bound: offline, MIG rounding | {ceil['offline_mig']:.2f} | | | | | |")
    for r in d["results"]:
        label = TWIN_LABELS.get(r["policy"], r["policy"])
        lines.append(
            f"| {label} | {r['fgd_unallocated_pct']:.2f} ± {r['fgd_unallocated_pct_std']:.2f} "
            f"| {r['rounding_pct']:.2f} | {r['stranded_pct']:.2f} | {r['failed_work_pct']:.2f} | "
            f"{r['failed_tasks']:.1f} | {r['arrival_ms_per_seed']:.1f} |")
    for r in d["results"]:
        if "static_layout" in r:
            lines += ["", f"static layout: {r['static_layout']}"]
    lines.append("")
lines += ["![unallocated](unallocated.png)", "", "## Replay with departures", ""]
for name, d in [(f"default, {replay_gpus} GPUs (contended, uniform nodes of 8, no host limits)",
                 replay)]:
    lines += [f"### {name}", "",
              "| policy | mean wait s | p95 wait s | max wait s | jobs/h | mean slice util | "
              "never started | replay ms |", "|---|---|---|---|---|---|---|---|"]
    for r in d["results"]:
        rp = r["replay"]
        lines.append(
            f"| {r['policy']} | {rp['mean_wait_s']:.1f} | {rp['p95_wait_s']:.1f} | "
            f"{rp['max_wait_s']:.0f} | {rp['completed_per_hour']:.3f} | "
            f"{100 * rp['mean_slice_util']:.2f}% | {rp['never_started']} | {rp['replay_ms']:.1f} |")
    for r in d["results"]:
        if "static_layout_replay" in r:
            lines += ["", f"static layout: {r['static_layout_replay']}"]
    lines.append("")
if sweep:
    longest = max(next(iter(sweep.values()))["results"][0]["replay"]["longest_run_s"], 1)
    n_seeds = len(next(iter(sweep.values()))["results"][0]["jittered_replays"])
    lines += [f"## Replay sweep: {len(sweep_gpus)} cluster sizes x {n_seeds} jittered seeds", "",
              "Arrivals of `openb_pod_list_default.csv` each moved by a uniform offset of up to "
              "10 minutes (the same offsets for every policy of a seed). Waits in seconds: the median "
              "over seeds, [min-max] beside it. Classes: *sub-GPU* (a fraction of one GPU), "
              "*single* (one whole GPU), *multi* (several GPUs on one node).", "",
              "| GPUs | policy | p95 all | p95 sub-GPU | p95 single | p95 multi | max multi | "
              "multi starves? |", "|---|---|---|---|---|---|---|---|"]
    verdicts = {p: {"starve": 0, "beats_static": 0} for p in policies}
    for g in sweep_gpus:
        by = {r["policy"]: r for r in sweep[g]["results"]}
        p95_all = {p: spread([j["p95_wait_s"] for j in by[p]["jittered_replays"]]) for p in policies}
        best_static = p95_all["static"][0] if "static" in p95_all else None
        for pol in policies:
            js = by[pol]["jittered_replays"]
            cells = [f"{p95_all[pol][0]:.0f} [{p95_all[pol][1]:.0f}-{p95_all[pol][2]:.0f}]"]
            for c in CLASSES:
                m, a_, b_ = spread([j["by_class"][c]["p95_wait_s"] for j in js])
                cells.append(f"{m:.0f} [{a_:.0f}-{b_:.0f}]")
            max_multi = max(j["by_class"]["multi_gpu"]["max_wait_s"] for j in js)
            med_multi = statistics.median(j["by_class"]["multi_gpu"]["p50_wait_s"] for j in js)
            # The bar: max <= max(10 x the class's median wait, 2 x the longest runtime).
            starves = max_multi > max(10 * med_multi, 2 * longest)
            verdicts[pol]["starve"] += starves
            if best_static is not None and p95_all[pol][0] <= best_static:
                verdicts[pol]["beats_static"] += 1
            lines.append(f"| {g} | {pol} | " + " | ".join(cells) +
                         f" | {max_multi:.0f} | {'yes' if starves else 'no'} |")
    lines += ["", f"Longest task in the trace: {longest:.0f} s. Per policy over the "
              f"{len(sweep_gpus)} sizes: sizes where the multi-GPU class starves by the bar above; "
              "sizes where its median p95 is at or below static MIG's.", "",
              "| policy | sizes starving | sizes p95 <= static |", "|---|---|---|"]
    for pol in policies:
        lines.append(f"| {pol} | {verdicts[pol]['starve']} | {verdicts[pol]['beats_static']} |")
    lines += ["", "![p95 over the sweep](sweep_p95.png)", ""]
if reserved:
    after = next(iter(reserved.values()))["reserve_after_s"]
    lines += [f"## Reservations for wide tasks (the same sweep, reservations after {after} s)", "",
              "A multi-GPU task waiting longer than that gets what production's demand publisher books "
              "(`vgpu/core/wide_reservation.h`, `vgpu/node/wide_booking.h`): a reservation of the node "
              "whose tasks end first, from when they end; tasks that would run past its start stay off "
              "the node (Slurm's backfill), and the wide task may start earlier anywhere (FLEX). Medians "
              "over seeds, without -> with reservations.", "",
              "| GPUs | policy | p95 multi | max multi | p95 sub-GPU | p95 single | reservations |",
              "|---|---|---|---|---|---|---|"]
    def med(rows, get):
        return statistics.median(get(j) for j in rows["jittered_replays"])
    for g in sweep_gpus:
        if g not in reserved:
            continue
        before = {r["policy"]: r for r in sweep[g]["results"]}
        with_r = {r["policy"]: r for r in reserved[g]["results"]}
        for pol in policies:
            a, b = before[pol], with_r[pol]
            cell = lambda get: f"{med(a, get):.0f} -> {med(b, get):.0f}"
            mx = lambda r: max(j["by_class"]["multi_gpu"]["max_wait_s"] for j in r["jittered_replays"])
            lines.append(
                f"| {g} | {pol} | {cell(lambda j: j['by_class']['multi_gpu']['p95_wait_s'])} | "
                f"{mx(a):.0f} -> {mx(b):.0f} | {cell(lambda j: j['by_class']['sub_gpu']['p95_wait_s'])} | "
                f"{cell(lambda j: j['by_class']['single_gpu']['p95_wait_s'])} | "
                f"{med(b, lambda j: j['reservations']):.0f} |")
    lines.append("")
if latency:
    lat = next(iter(latency.values()))["start_latency_s"]
    lines += [f"## The planners' start latency (the same sweep, {lat} s per start)", "",
              f"In production a node offers a new profile after its planner's round has seen the "
              f"demand and Slurm has taken the new split, and the prolog creates the instance. Here "
              f"a start of a policy that reshapes nodes comes {lat} s after its placement (the task "
              "holds its instance meanwhile) unless a slot an ended task left on the plan, an "
              "open shared instance, or an empty GPU's whole-GPU instance serves it" +
              ("" if next(iter(latency.values())).get("latency_only_for_new_slots") else
               " (not applied in this run: every start pays)") +
              ". Other idle layouts and prepared slots are not modelled, so this is an upper bound on that "
              "cost, where the sweep above is the lower one. Static MIG and whole GPUs pay nothing. "
              "Median p95 wait over seeds, without -> with the latency.", "",
              "| GPUs | " + " | ".join(policies) + " |", "|---|" + "---|" * len(policies)]
    at_or_below = {p: [0, 0] for p in policies}
    for g in sweep_gpus:
        if g not in latency:
            continue
        before = {r["policy"]: r for r in sweep[g]["results"]}
        after = {r["policy"]: r for r in latency[g]["results"]}
        p95 = lambda r: statistics.median(j["p95_wait_s"] for j in r["jittered_replays"])
        cells = []
        for pol in policies:
            a, b = p95(before[pol]), p95(after[pol])
            cells.append(f"{a:.0f} -> {b:.0f}")
            at_or_below[pol][0] += a <= p95(before["static"])
            at_or_below[pol][1] += b <= p95(after["static"])
        lines.append(f"| {g} | " + " | ".join(cells) + " |")
    lines += ["", "Sizes where the median p95 is at or below static MIG's, without -> with the latency: " +
              ", ".join(f"{p} {at_or_below[p][0]} -> {at_or_below[p][1]}" for p in policies
                        if p != "static") + ".", ""]
lines += ["![utilisation](utilisation.png)", "", "![wait CDF](wait_cdf.png)", "",
          "## Core speed (Release build, `vgpu_bench_core`)", "", "```", read("bench_core.txt"),
          "```", "", "## Exact commands", "", "```", read("commands.txt"), "```", ""]
with open(os.path.join(out, "REPORT.md"), "w") as f:
    f.write("\n".join(lines))
