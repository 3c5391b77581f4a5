#!/usr/bin/python3
"""End-to-end smoke test of vgpu-tracesim: the real binary on a sample of each openb trace, its JSON
checked for the fields and properties the report relies on, and a malformed CSV must fail with a
file:line: column: value message. Usage: smoke_check.py TRACESIM TRACES_DIR"""
import json
import subprocess
import sys
import tempfile

tool, traces = sys.argv[1], sys.argv[2]
POLICIES = ["whole", "static", "firstfit", "planner", "shared", "planner+weights", "shared+weights",
            "planner+prefer", "shared+prefer", "fgd-twin", "bestfit-twin", "planner+ondemand", "shared+ondemand"]


def run(*args):
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=100)


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


for name, timed in [("default", True), ("multigpu20", False)]:
    p = run("--trace", f"{traces}/openb_pod_list_{name}.csv", "--policy", ",".join(POLICIES),
            "--seeds", "2", "--gpus", "64", "--tasks", "500", "--json")
    check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr}")
    doc = json.loads(p.stdout)
    check([r["policy"] for r in doc["results"]] == POLICIES, f"{name}: one entry per policy")
    offline = doc["ceilings_fgd_unallocated_pct"]["offline_mig"]
    for r in doc["results"]:
        pol = r["policy"]
        check(list(r)[:2] == ["policy", "fgd_unallocated_pct"], f"{name} {pol}: FGD's metric leads")
        check(0 <= r["fgd_unallocated_pct"] <= 100, f"{name} {pol}: unallocated % in range")
        check(abs(r["fgd_unallocated_pct"] - r["rounding_pct"] - r["stranded_pct"]) < 1e-6,
              f"{name} {pol}: unallocated = rounding + stranded")
        if not pol.startswith("shared") and not pol.endswith("-twin"):  # shares are not rounded
            check(r["fgd_unallocated_pct"] >= offline - 1e-9, f"{name} {pol}: offline bound holds")
        for s in r["per_seed"]:
            check(s["peak_allocated_slices"] <= s["capacity_slices"], f"{name} {pol}: capacity")
        if timed:
            check(r["p95_wait_s"] is not None and r["p95_wait_s"] >= 0, f"{name} {pol}: p95 wait")
            check(len(r["replay"]["wait_quantiles_s"]) == 101, f"{name} {pol}: wait CDF")
        else:
            check(r["p95_wait_s"] is None, f"{name} {pol}: no times, no replay")
    by = {r["policy"]: r for r in doc["results"]}
    check(by["planner"]["served_gpus"] >= by["firstfit"]["served_gpus"], f"{name}: planner >= firstfit")

p = run("--trace", f"{traces}/openb_pod_list_default.csv", "--tasks", "800", "--seeds", "1",
        "--nodes", f"{traces}/openb_node_list_gpu_node.csv", "--published",
        f"{traces}/fgd_published.csv", "--json")
check(p.returncode == 0, f"node list: exit {p.returncode}: {p.stderr}")
doc = json.loads(p.stdout)
check(doc["nodes"] == 1213 and doc["host_constrained"], "node list: the real shapes")
check(doc["fgd_published_unallocated_pct"]["fgd"] == 4.77, "node list: FGD's number beside ours")

# The planners' start latency: static pays none, and no reshaping policy waits less for it.
args = ["--trace", f"{traces}/openb_pod_list_default.csv", "--tasks", "400", "--gpus", "8", "--seeds", "1",
        "--policy", "static,planner", "--json"]
plain, late = run(*args), run(*args, "--start-latency-s", "30", "--latency-only-for-new-slots")
check(plain.returncode == 0 and late.returncode == 0, f"latency: exit {late.returncode}: {late.stderr}")
plain_by = {r["policy"]: r["replay"] for r in json.loads(plain.stdout)["results"]}
late_doc = json.loads(late.stdout)
late_by = {r["policy"]: r["replay"] for r in late_doc["results"]}
check(late_doc["start_latency_s"] == 30 and late_doc["latency_only_for_new_slots"], "latency: in the JSON")
check(late_by["static"]["mean_wait_s"] == plain_by["static"]["mean_wait_s"], "latency: static pays none")
check(late_by["planner"]["wait_quantiles_s"][-1] >= 30, "latency: some planner start pays it")

p = run("--trace", f"{traces}/openb_pod_list_default.csv", "--tasks", "50", "--gpus", "8")
check(p.returncode == 0 and "planner" in p.stdout and "Replay" in p.stdout, "readable table")

with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
    f.write("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,1,500\np1,1,1,1,half\n")
p = run("--trace", f.name, "--seeds", "1")
check(p.returncode == 1, f"bad CSV exit code {p.returncode}")
check(f"{f.name}:3: column gpu_milli: value 'half': not an integer" in p.stderr,
      f"bad CSV message: {p.stderr!r}")
p = run("--trace", f"{traces}/openb_pod_list_default.csv", "--policy", "bestest")
check(p.returncode == 2 and "policy 'bestest': unknown" in p.stderr, f"bad policy: {p.stderr!r}")
print("ok")
