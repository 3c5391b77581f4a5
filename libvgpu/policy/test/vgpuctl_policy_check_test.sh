#!/usr/bin/env bash
# `vgpuctl policy check` end to end: exit codes 0/1/2, the summary, every error line, --json.
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
expect_line() { grep -qxF -- "$3" "$tmp/$1.$2" || { fail "$1: no line in $2: $3"; cat "$tmp/$1.$2"; }; }

run example policy check "$src/examples/policy.json"
expect_rc example 0
expect_line example out "$src/examples/policy.json: OK"
expect_line example out "partition train"
expect_line example out "                idle [7g.80gb@0]"

run bad policy check "$bad/many-errors.json"
expect_rc bad 1
expect_line bad err "$bad/many-errors.json:7:32: partitions.infer.max_instances_per_job: must be an integer >= 1, got \"four\""
expect_line bad err "$bad/many-errors.json:11:7: partitions.infer.colour: unknown field (known here: profiles, max_instances_per_job, max_instances_per_user, nodes, gpus, idle_layout, scrub, share_across_users, viz_pools, comment)"
expect_line bad err "$bad/many-errors.json: 7 error(s)"
[[ -s $tmp/bad.out ]] && fail "bad: errors must go to stderr only"

run syntax policy check "$bad/syntax-trailing-comma.json"
expect_rc syntax 1
expect_line syntax err "$bad/syntax-trailing-comma.json:4:39: invalid JSON: trailing comma before '}'"

run missing policy check "$tmp/no-such-policy.json"
expect_rc missing 2
expect_line missing err "$tmp/no-such-policy.json: cannot read: No such file or directory"

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
e = errors[2]
assert (e["line"], e["column"], e["path"]) == (7, 32, "partitions.infer.max_instances_per_job"), e
PY

run usage policy check
expect_rc usage 2

[[ $failures == 0 ]] && echo "all vgpuctl policy check cases passed"
exit $((failures > 0))
