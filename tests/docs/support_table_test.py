#!/usr/bin/env python3
"""README.md's "## Status" table is the one statement of what is run in tests, compiled only or
untested (per Slurm release), captured from real hardware or taken from documentation (per GPU
model), and faked. This check reads the table, then every Markdown document of the tree, and
fails on a clause that contradicts it:
  - a release said to be run ("run on", "checked on", "loaded by its daemons", ...) that the table
    does not run, or said to be "not run"/"untested"/"compiled only" when the table runs it;
  - a model said to be real ("a real A30", "captured on") that the table takes from documentation;
  - a MIG instance said to be created on real hardware while the table says that is faked.
It also fails when a catalog model (`vgpuctl catalog --json`) has no row. A clause is text between
sentence ends, semicolons and parentheses, so "26.05, run here (24.11 not run)" is two claims; a
table row is one claim cut at semicolons. Before checking the tree it plants one contradiction of each kind in a copy and fails
unless each is found.
  support_table_test.py <source dir> <vgpuctl>
"""
import json, os, re, subprocess, sys

RELEASES = ["22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11", "26.05"]
RELEASE_STATUSES = {"run in tests", "compiled only", "untested"}
MODEL_STATUSES = {"captured from real hardware", "from documentation", "not served"}
PART_STATUSES = {"faked", "real"}

RELEASE = re.compile(r"\b(2[2-6]\.(?:02|05|11))(?:\.\d+)?\b")
RANGE = re.compile(r"\b(2[2-6]\.(?:02|05|11))(?:\.\d+)?\s*(?:-|–|through|to)\s*(2[2-6]\.(?:02|05|11))\b")
NOT_RUN = re.compile(r"\b(not run|never run|not tested|untested|compiled only|only compiled|"
                     r"compile check)\b", re.I)
RUN = re.compile(r"\b(run in tests|run here|runs? (?:on|against)|ran (?:on|against)|checked (?:by|on|in)|"
                 r"checks? it (?:in|on)|tested (?:on|against)|seen on|holds on|loaded by (?:its|real) daemons|"
                 r"real daemons)\b", re.I)
REAL = re.compile(r"\b(real|captured|recorded on)\b(?!-)", re.I)
DOCUMENTED = re.compile(r"\b(from (?:the )?documentation|never (?:run|seen) on real)\b", re.I)
NEGATION = re.compile(r"\b(no|not|never|without|nor)\b", re.I)
MIG_CREATE = re.compile(r"\bMIG instances?\b[^|]*\b(created|destroyed)\b|\b(created|destroyed)\b[^|]*\bMIG instances?\b", re.I)
REAL_HARDWARE = re.compile(r"\breal (hardware|GPUs?|H100s?|H200s?|A100s?)\b", re.I)
CLAUSE_END = re.compile(r"[.;:!?](?=\s)|[()]|\n\s*\n|\n\s*[-*] ")


def model_pattern(name, models):
    """A30-24GB is also written "A30 24GB", and plain "A30" when every model of that family has the
    same status: "a real H100" says nothing about H100-94GB while H100-80GB is captured."""
    family, _, memory = name.partition("-")
    alike = {s for m, s in models.items() if m.partition("-")[0] == family} == {models[name]}
    return re.compile(r"\b%s(?:[- ]%s\b)%s" % (re.escape(family), re.escape(memory), "?" if alike else ""))


def read_table(readme):
    """{subject: status} from README's "## Status" table; a problem for each unknown status."""
    at = readme.find("\n## Status")
    if at < 0:
        return None, ["README.md: no '## Status' section"]
    end = readme.find("\n## ", at + 1)
    rows, problems = {}, []
    for line in readme[at:end if end > 0 else None].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cells) < 2 or cells[0] in ("subject", "---"):
            continue
        if cells[1] not in RELEASE_STATUSES | MODEL_STATUSES | PART_STATUSES:
            problems.append("README.md: status table: '%s' has status '%s', not one of %s"
                            % (cells[0], cells[1], sorted(RELEASE_STATUSES | MODEL_STATUSES | PART_STATUSES)))
        rows[cells[0]] = cells[1]
    return rows, problems


def statuses(rows):
    releases, models, parts = {}, {}, {}
    for subject, status in rows.items():
        if status in RELEASE_STATUSES:
            for r in RELEASE.findall(subject):
                releases[r] = status
        elif status in MODEL_STATUSES:
            for m in re.findall(r"\b[A-Z]+\d+[A-Z]?-\d+GB\b", subject):
                models[m] = status
        else:
            parts[subject] = status
    return releases, models, parts


def releases_in(clause):
    named = set(RELEASE.findall(clause))
    for lo, hi in RANGE.findall(clause):
        if lo in RELEASES and hi in RELEASES:
            named.update(RELEASES[RELEASES.index(lo):RELEASES.index(hi) + 1])
    return named


def clauses(text):
    """(line number, clause) pairs. A table row is one claim about its first cell, so it is cut
    only at semicolons, with its parenthesized asides left out."""
    prose, prose_line = [], 1
    for number, line in enumerate(text.splitlines() + [""], start=1):
        if line.startswith("|"):
            yield from prose_clauses(prose_line, "\n".join(prose))
            prose, prose_line = [], number + 1
            for part in re.sub(r"\([^()]*\)", "", line).split(";"):
                yield number, part
        else:
            prose.append(line)
    yield from prose_clauses(prose_line, "\n".join(prose))


def prose_clauses(first_line, text):
    start = 0
    for m in list(CLAUSE_END.finditer(text)) + [None]:
        end = m.start() if m else len(text)
        yield first_line + text.count("\n", 0, start), text[start:end]
        if m:
            start = m.end()


def contradictions(name, text, releases, models, parts):
    out = []
    documented_models = [m for m, s in models.items() if s == "from documentation"]
    captured_models = [m for m, s in models.items() if s == "captured from real hardware"]
    mig_create_faked = any("MIG create" in p and s == "faked" for p, s in parts.items())
    for line, clause in clauses(text):
        flat = " ".join(clause.split())
        named = releases_in(flat)
        if named and NOT_RUN.search(flat):
            for r in sorted(named):
                if releases.get(r) == "run in tests":
                    out.append("%s:%d: says %s is not run ('%s'); the status table runs it" % (name, line, r, flat))
        elif named and RUN.search(flat):
            for r in sorted(named):
                if releases.get(r) != "run in tests":
                    out.append("%s:%d: says %s is run ('%s'); the status table says %s"
                               % (name, line, r, flat, releases.get(r, "nothing about it")))
        if REAL.search(flat) and not NEGATION.search(flat):
            for m in documented_models:
                if model_pattern(m, models).search(flat):
                    out.append("%s:%d: calls %s real or captured ('%s'); the status table has it from documentation"
                               % (name, line, m, flat))
        if DOCUMENTED.search(flat):
            for m in captured_models:
                if model_pattern(m, models).search(flat):
                    out.append("%s:%d: says %s comes from documentation ('%s'); the status table has it captured"
                               % (name, line, m, flat))
        if mig_create_faked and MIG_CREATE.search(flat) and REAL_HARDWARE.search(flat) and not NEGATION.search(flat):
            out.append("%s:%d: says MIG instances were created on real hardware ('%s'); the status table says faked"
                       % (name, line, flat))
    return out


def without_table(readme):
    at = readme.find("\n## Status")
    end = readme.find("\n## ", at + 1)
    return readme if at < 0 else readme[:at] + "\n" * readme[at:end].count("\n") + readme[end:]


def check(docs, catalog_models):
    """docs: {relative path: text}, README.md among them."""
    rows, out = read_table(docs["README.md"])
    if rows is None:
        return out
    releases, models, parts = statuses(rows)
    out += ["README.md: status table: no row for catalog model %s" % m for m in catalog_models if m not in models]
    out += ["README.md: status table: no row for Slurm %s" % r for r in RELEASES if r not in releases]
    for name, text in sorted(docs.items()):
        body = without_table(text) if name == "README.md" else text
        out += contradictions(name, body, releases, models, parts)
    return out


def read_docs(src):
    docs = {}
    for top in ["README.md", "docs", "nodeagent/README.md", "fakenvml", "fakeamdgpu", "vizfrontend", "jobsubmit"]:
        path = os.path.join(src, top)
        files = [path] if os.path.isfile(path) else [
            os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith(".md")]
        for f in files:
            docs[os.path.relpath(f, src)] = open(f, encoding="utf-8").read()
    return docs


def main():
    src, vgpuctl = sys.argv[1:3]
    catalog = json.loads(subprocess.run([vgpuctl, "catalog", "--json"], capture_output=True, check=True).stdout)
    catalog_models = [m["name"] for m in catalog["models"]]
    docs = read_docs(src)

    plants = {
        "an untested release said to run": "\n\nThe cluster suite runs on Slurm 23.11 every night.\n",
        "a run release said not to be": "\n\nSlurm 22.05 is not tested.\n",
        "a documented model said to be real": "\n\nThe A30 numbers were captured on a real A30-24GB.\n",
        "a captured model said to be documented": "\n\nThe H200-141GB table comes from documentation.\n",
        "a faked part said to be real": "\n\nWe created MIG instances on real hardware and destroyed them.\n",
        "a table row against the table": "\n\n| 23.11.4 | (EOL) | every suite runs on it |\n",
    }
    unfound = []
    for what, text in plants.items():
        planted = dict(docs, **{"docs/admin.md": docs["docs/admin.md"] + text})
        if len(check(planted, catalog_models)) <= len(check(docs, catalog_models)):
            unfound.append(what)
    table_row = "| Slurm 26.05 | run in tests |"
    if table_row in docs["README.md"]:
        planted = dict(docs, **{"README.md": docs["README.md"].replace(table_row, "| Slurm 26.05 | maybe |")})
        if not any("not one of" in p for p in check(planted, catalog_models)):
            unfound.append("an unknown status in the table")
    if unfound:
        print("FAIL: the check missed planted contradictions: " + "; ".join(unfound))
        return 1

    problems = check(docs, catalog_models)
    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    print("PASS: %d documents agree with README.md's status table (%d planted contradictions found)"
          % (len(docs), len(plants) + 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
