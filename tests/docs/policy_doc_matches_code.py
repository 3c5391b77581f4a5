#!/usr/bin/env python3
"""docs/policy.md states two things the code owns: its "Example" is the shipped
examples/policy.json, and its "Known models:" line is the catalog's models in the catalog's order
(`vgpuctl catalog --json`). This check fails when either drifts, and first plants a contradiction
of each kind in a copy of the page to show that it can.
  policy_doc_matches_code.py <source dir> <vgpuctl>
"""
import json, subprocess, sys

src, vgpuctl = sys.argv[1:3]
page_path = src + "/docs/policy.md"
example_path = src + "/examples/policy.json"


def problems(page, example, models):
    out = []
    at = page.find("## Example")
    start = page.find("```json\n", at)
    end = page.find("```", start + 8)
    if at < 0 or start < 0 or end < 0:
        return ["docs/policy.md: no ```json block under '## Example'"]
    try:
        shown = json.loads(page[start + 8:end])
    except ValueError as e:
        return ["docs/policy.md: the Example does not parse: %s" % e]
    if shown != example:
        out.append("docs/policy.md: the Example differs from examples/policy.json (paste the file in)")
    lines = [l for l in page.splitlines() if l.startswith("Known models: ")]
    if len(lines) != 1:
        out.append("docs/policy.md: expected one 'Known models:' line, found %d" % len(lines))
    elif lines[0][len("Known models: "):].split(", ") != models:
        out.append("docs/policy.md: 'Known models:' says %s; the catalog has %s"
                   % (lines[0][len("Known models: "):], ", ".join(models)))
    return out


page = open(page_path).read()
example = json.load(open(example_path))
catalog = json.loads(subprocess.run([vgpuctl, "catalog", "--json"], capture_output=True, check=True).stdout)
models = [m["name"] for m in catalog["models"]]

# The check can fail: one planted contradiction of each kind must be found.
planted_example = dict(example, version=example["version"] + 1)
shown = page[page.find("```json\n", page.find("## Example")) + 8:]
shown = shown[:shown.find("```")]
if not problems(page.replace(shown, json.dumps(planted_example, indent=2) + "\n", 1), example, models):
    sys.exit("FAIL: a changed Example was not found: the check cannot fail")
if not problems(page, example, models[:-1] + ["B200-180GB"]):
    sys.exit("FAIL: a wrong 'Known models:' line was not found: the check cannot fail")

found = problems(page, example, models)
for p in found:
    print("FAIL: " + p)
if found:
    sys.exit(1)
print("PASS: docs/policy.md's Example is examples/policy.json and its %d known models are the catalog's" % len(models))
