#!/usr/bin/env python3
"""The vgpu GRES grammar has one owner, the C++ parser (libvgpu/core/gres_request.h); the submit
filter (jobsubmit/job_submit.lua) must give every string the verdict the C++ side gives it. Feeds
one corpus (valid and invalid requests in each spelling Slurm uses, the fuzzers' seeds, hostile
strings, and seeded random strings over the grammar's own tokens) to both and requires identical
verdicts, line by line.
  gres_grammar_test.py <vgpu-test-gres-verdicts> <job_submit.lua> <gres_verdicts.lua> <fuzz corpus dir>
"""
import os, random, subprocess, sys, tempfile

verdicts_cpp, filter_lua, driver_lua, fuzz_dir = sys.argv[1:5]
OFFERED = ["1g.10gb", "3g.40gb", "7g.80gb", "small"]
PER_JOB = 8

corpus = [
    # what users ask, as slurmctld spells it in tres_per_node (22.05 and 23.11+)
    "gres:vgpu:1g.10gb:2", "gres/vgpu:1g.10gb:2", "vgpu:1g.10gb:2", "gres:vgpu:3g.40gb",
    "gres:vgpu:1g.10gb:2,gres:vgpu:3g.40gb:1", "gres:gpu:1", "gres:gpu:1,gres:vgpu:small:4",
    "gres/vgpu:7g.80gb:1,gres/gpu:a100:2", "gres:vgpu:small:8", "gres:vgpu:small:9",
    "gres:vgpu:1g.10gb:4,gres:vgpu:3g.40gb:4", "gres:vgpu:1g.10gb:4,gres:vgpu:3g.40gb:5",
    # untyped, unknown, malformed counts and fields
    "gres:vgpu:2", "gres:vgpu", "vgpu", "gres:vgpu:", "gres:vgpu::1", "gres:vgpu:9g.99gb:1",
    "gres:vgpu:1g.10gb:0", "gres:vgpu:1g.10gb:4096", "gres:vgpu:1g.10gb:4097", "gres:vgpu:1g.10gb:-1",
    "gres:vgpu:1g.10gb:+1", "gres:vgpu:1g.10gb:01", "gres:vgpu:1g.10gb: 1", "gres:vgpu:1g.10gb:1 ",
    "gres:vgpu:1g.10gb:2:3", "gres:vgpu:1g.10gb:1e3", "gres:vgpu:1g.10gb:0x10", "gres:vgpu:1g.10gb:99999999999999999999",
    # a type named twice, empty items, stray prefixes
    "gres:vgpu:1g.10gb:1,gres:vgpu:1g.10gb:2", "gres:vgpu:1g.10gb:1,,gres:vgpu:3g.40gb:1", ",gres:vgpu:1g.10gb:1",
    "gres:vgpu:1g.10gb:1,", "gres", "gres:", "gres/", ":", ",", "gres:gres:vgpu:1g.10gb:1", "gres/gres/vgpu:small:1",
    "VGPU:1g.10gb:1", " gres:vgpu:1g.10gb:1", "gres:vgpu :1g.10gb:1", "gres:vgpu:1G.10GB:1",
    # reserved and hostile types
    "gres:vgpu:free:1", "gres:vgpu:never:1", "gres:vgpu:any:1", "gres:vgpu:../etc:1", "gres:vgpu:%s:1",
    "gres:vgpu:.*:1", "gres:vgpu:[1g]:1", "gres:vgpu:1g.10gb%:1", "gres:vgpu:1g.10gb\t:1", "gres:vgpu:1g.10gb\x01:1",
    "gres:vgpu:1g.10gb\xff:1", "gres:vgpu:\xc3\xa9:1", "gres:vgpu:" + "x" * 33 + ":1", "gres:vgpu:" + "1g.10gb," * 1000,
    "gres:vgpu:1g.10gb:1," * 2000,
]
for name in sorted(os.listdir(fuzz_dir)):
    with open(os.path.join(fuzz_dir, name), "rb") as f:
        text = f.read().decode("latin-1")
    corpus += [text, "gres:" + text]

tokens = ["gres", "gres/", "vgpu", "gpu", ":", ",", "1g.10gb", "3g.40gb", "7g.80gb", "small", "free", "1", "2",
          "0", "8", "9", "4097", "", " ", "+", "-", ".", "x"]
rng = random.Random(20261201)
for _ in range(3000):
    corpus.append("".join(rng.choice(tokens) for _ in range(rng.randint(1, 9))))

# One line each: no newline (Slurm's strings carry none), no NUL, and no empty line (no request).
corpus = [c for c in corpus if c and "\n" not in c and "\r" not in c and "\0" not in c]

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "corpus.txt")
    with open(path, "wb") as f:
        f.write(("\n".join(corpus) + "\n").encode("latin-1"))
    with open(os.path.join(tmp, "vgpu_profiles.lua"), "w") as f:
        listed = ", ".join('"%s"' % t for t in OFFERED)
        f.write('return { default = "main", partitions = { main = {%s} }, shares = {}, limits = { main = { per_job = %d } } }\n'
                % (listed, PER_JOB))
    cpp = subprocess.run([verdicts_cpp, path, str(PER_JOB)] + OFFERED, capture_output=True, check=True).stdout.decode().split()
    env = dict(os.environ, SLURM_CONF=os.path.join(tmp, "slurm.conf"))
    # Each Lua a slurmctld may embed: Debian 12's Slurm links 5.1, a release built here 5.3.
    lua = {}
    for interpreter in ("lua5.1", "lua5.3"):
        run = subprocess.run([interpreter, driver_lua, filter_lua, path], capture_output=True, env=env)
        if run.returncode != 0:
            sys.exit("gres grammar: %s failed: %s" % (interpreter, run.stderr.decode()[-2000:]))
        lua[interpreter] = run.stdout.decode().split()

accepted = cpp.count("accept")
failed = accepted == 0 or accepted == len(corpus)
for interpreter, verdicts in lua.items():
    if len(cpp) != len(corpus) or len(verdicts) != len(corpus):
        sys.exit("gres grammar: %d strings, %d C++ verdicts, %d from %s" % (len(corpus), len(cpp), len(verdicts), interpreter))
    differ = [(c, a, b) for c, a, b in zip(corpus, cpp, verdicts) if a != b]
    for c, a, b in differ[:30]:
        print("differ: %r: C++ %s, job_submit.lua under %s %s" % (c[:120], a, interpreter, b))
    print("gres grammar: %d strings, %d accepted and %d refused by the C++ parser, %d verdicts differ under %s"
          % (len(corpus), accepted, len(corpus) - accepted, len(differ), interpreter))
    failed = failed or bool(differ)
sys.exit(1 if failed else 0)
