#!/usr/bin/env bash
# The test command's style checks (README "Tests"):
#   1. every tracked C/C++ source is laid out as .clang-format says (clang-format --dry-run);
#   2. the node side passes .clang-tidy's checks, among them no function over 80 lines.
# Usage: scripts/check-style.sh <build dir with compile_commands.json>
# Prints each offender and exits 1 when there is one; clang-format -i <file> fixes a layout.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: check-style.sh <build dir>}
# Debian 12's clang-format (14) lays the tree out. clang-tidy must be 19: clang 14 cannot read
# GCC 12's <expected> (it needs C++20 concepts as clang 16 has them) and would check functions it
# half parsed. scripts/install-deps.sh installs both.
format=$(command -v clang-format-14 || command -v clang-format) || { echo "check-style: FAIL: no clang-format"; exit 1; }
tidy=$(command -v clang-tidy-19) || { echo "check-style: FAIL: no clang-tidy-19"; exit 1; }
[ -f "$build/compile_commands.json" ] || { echo "check-style: FAIL: $build/compile_commands.json missing"; exit 1; }

# First, that each check can fail: a misformatted line and an 82-line function, with this tree's
# own configuration, must each be found.
sample=$(mktemp -d)
trap 'rm -rf "$sample"' EXIT
printf 'int  f( ){return 1;}\n' >"$sample/misformatted.cpp"
if "$format" --style=file:.clang-format --dry-run --Werror "$sample/misformatted.cpp" >/dev/null 2>&1; then
  echo "check-style: FAIL: clang-format passes a misformatted file: the layout check cannot fail"
  exit 1
fi
{ echo 'int long_function(int x) {'; for i in $(seq 1 80); do echo "  x += $i;"; done; echo '  return x;'; echo '}'; } \
  >"$sample/long_function.cpp"
sample_findings=$("$tidy" --config-file=.clang-tidy --quiet "$sample/long_function.cpp" -- -std=c++20 2>/dev/null)
if ! grep -q 'lines including' <<<"$sample_findings"; then
  echo "check-style: FAIL: clang-tidy passes an 82-line function: the function-size check cannot fail"
  exit 1
fi

# The node side: what slurmd runs and the flows it runs (docs/design.md).
tidy_dirs=(libvgpu/node nodeagent prolog epilog)

status=0
unformatted=$(git ls-files '*.cpp' '*.h' '*.c' '*.cu' | while read -r f; do
  "$format" --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"
done)
if [ -n "$unformatted" ]; then
  echo "check-style: FAIL: not laid out as .clang-format says (clang-format -i fixes them):"
  echo "$unformatted" | sed 's/^/  /'
  status=1
fi

sources=$(git ls-files "${tidy_dirs[@]/%//*.cpp}" | grep -v '/test/')
findings=$(echo "$sources" | xargs -P "$(nproc)" -n 4 "$tidy" -p "$build" --quiet 2>&1 |
  grep -E 'warning:|error:|note: [0-9]+ lines')
if [ -n "$findings" ]; then
  echo "check-style: FAIL: .clang-tidy over ${tidy_dirs[*]}:"
  echo "$findings" | sed 's/^/  /'
  status=1
fi
[ "$status" = 0 ] && echo "check-style: PASS: $(git ls-files '*.cpp' '*.h' '*.c' '*.cu' | wc -l) files laid out," \
  "$(echo "$sources" | wc -l) files of ${tidy_dirs[*]} pass .clang-tidy"
exit "$status"
