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
    lua = subprocess.run(["lua5.3", driver_lua, filter_lua, path], capture_output=True, check=True, env=env).stdout.decode().split()

if len(cpp) != len(corpus) or len(lua) != len(corpus):
    sys.exit("gres grammar: %d strings, %d C++ verdicts, %d Lua verdicts" % (len(corpus), len(cpp), len(lua)))
differ = [(c, a, b) for c, a, b in zip(corpus, cpp, lua) if a != b]
for c, a, b in differ[:30]:
    print("differ: %r: C++ %s, job_submit.lua %s" % (c[:120], a, b))
accepted = cpp.count("accept")
print("gres grammar: %d strings, %d accepted and %d refused by the C++ parser, %d verdicts differ"
      % (len(corpus), accepted, len(corpus) - accepted, len(differ)))
sys.exit(1 if differ or accepted == 0 or accepted == len(corpus) else 0)
