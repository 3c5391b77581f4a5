#!/usr/bin/env bash
# `vgpuctl policy check` end to end: exit codes 0/1/2, the summary, every error line, --json,
# and a file with a million errors, which lists the first ones and counts the rest.
# Usage: vgpuctl_policy_check_test.sh <vgpuctl> <source dir>
set -uo pipefail
vgpuctl=$1
src=$2
bad=$src/libvgpu/policy/test/bad
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

run() {  # run <name> <args...>: stdout, stderr and exit code into $tmp/<name>.{out,err,rc}
  local name=$1; shift
  "$vgpuctl" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  echo $? >"$tmp/$name.rc"
}
expect_rc() { [[ $(cat "$tmp/$1.rc") == "$2" ]] || fail "$1: exit $(cat "$tmp/$1.rc"), wanted $2"; }
expect_line() { grep -qxF -- "$3" "$tmp/$1.$2" || { fail "$1: no line in $2: $3"; head -n 30 "$tmp/$1.$2"; }; }

run example policy check "$src/examples/policy.json"
expect_rc example 0
expect_line example out "$src/examples/policy.json: OK"
expect_line example out "partition train"
expect_line example out "                idle [7g.80gb@0]"

run bad policy check "$bad/many-errors.json"
expect_rc bad 1
expect_line bad err "$bad/many-errors.json:7:32: partitions.infer.max_instances_per_job: must be an integer >= 1, got \"four\""
expect_line bad err "$bad/many-errors.json:11:7: partitions.infer.colour: unknown field (known here: profiles, max_instances_per_job, max_instances_per_user, nodes, gpus, idle_layout, scrub, mig_mode, share_across_users, viz_pools, comment)"
expect_line bad err "$bad/many-errors.json: 7 error(s)"
[[ -s $tmp/bad.out ]] && fail "bad: errors must go to stderr only"

run syntax policy check "$bad/syntax-trailing-comma.json"
expect_rc syntax 1
expect_line syntax err "$bad/syntax-trailing-comma.json:4:39: invalid JSON: trailing comma before '}'"

run missing policy check "$tmp/no-such-policy.json"
expect_rc missing 2
expect_line missing err "$tmp/no-such-policy.json: cannot read: no such file"

ln -s "$src/examples/policy.json" "$tmp/linked-policy.json"
run symlink policy check "$tmp/linked-policy.json"
expect_rc symlink 2
expect_line symlink err "$tmp/linked-policy.json: cannot read: refused: a symbolic link (never followed)"

# The example with a million out-of-range GPU indices: a million errors, 20 of them listed.
python3 - "$src/examples/policy.json" "$tmp/huge.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["partitions"]["infer"]["gpus"] = [64] * 1000000
json.dump(doc, open(sys.argv[2], "w"), separators=(",", ":"))
PY
run huge policy check "$tmp/huge.json"
expect_rc huge 1
listed=$(grep -c "^$tmp/huge.json:[0-9]*:[0-9]*: partitions.infer.gpus\[" "$tmp/huge.err")
[[ $listed == 20 ]] || fail "huge: $listed error lines, wanted 20"
grep -q "^$tmp/huge.json:1:[0-9]*: partitions.infer.gpus\[19\]: must be an integer in 0..63, got 64\$" "$tmp/huge.err" ||
  fail "huge: no line for gpus[19]"
expect_line huge err "... and 999980 more errors"
expect_line huge err "$tmp/huge.json: 1000000 error(s)"
[[ $(wc -l <"$tmp/huge.err") == 22 ]] || fail "huge: $(wc -l <"$tmp/huge.err") lines on stderr, wanted 20 errors, the count of the rest and the total"

run json_huge policy check --json "$tmp/huge.json"
expect_rc json_huge 1
python3 - "$tmp/json_huge.out" <<'PY' || fail "json_huge: bad JSON output"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["ok"] is False, doc
assert len(doc["errors"]) == 20, len(doc["errors"])
assert doc["more_errors"] == 999980, doc.get("more_errors")
assert doc["errors"][19]["path"] == "partitions.infer.gpus[19]", doc["errors"][19]
PY

run json_ok policy check --json "$src/examples/policy.json"
expect_rc json_ok 0
python3 - "$tmp/json_ok.out" <<'PY' || fail "json_ok: bad JSON output"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["ok"] is True, doc
assert doc["policy"]["partitions"]["train"]["profiles"]["H100-80GB"] == ["3g.40gb", "4g.40gb", "7g.80gb"]
PY

run json_bad policy check --json "$bad/many-errors.json"
expect_rc json_bad 1
python3 - "$tmp/json_bad.out" <<'PY' || fail "json_bad: bad JSON output"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["ok"] is False, doc
errors = doc["errors"]
assert len(errors) == 7, errors
assert doc["more_errors"] == 0, doc
e = errors[2]
assert (e["line"], e["column"], e["path"]) == (7, 32, "partitions.infer.max_instances_per_job"), e
PY

run usage policy check
expect_rc usage 2

[[ $failures == 0 ]] && echo "all vgpuctl policy check cases passed"
exit $((failures > 0))
