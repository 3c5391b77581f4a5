#!/usr/bin/env bash
# docs/layout.md's table names every top-level folder of the tree, and only folders that exist:
# a folder added or moved without its row (or a row left behind) fails here.
#   layout_table_test.sh <source dir>
set -u
cd "${1:?usage: layout_table_test.sh <source dir>}" || exit 2
# The folders git tracks files in (build trees and caches are not the tree).
folders=$(git ls-files | awk -F/ 'NF > 1 && $1 !~ /^\./ {print $1}' | sort -u)
# Every `name/` in the first column of the rows under "## Layout".
rows=$(awk '/^## Layout/{on=1; next} /^## /{on=0} on && /^\| `/' docs/layout.md |
  awk -F'|' '{print $2}' | grep -o '`[^`/]*/`' | tr -d '`/' | sort -u)
missing=$(comm -23 <(echo "$folders") <(echo "$rows"))
stale=$(comm -13 <(echo "$folders") <(echo "$rows"))
[ -n "$rows" ] || { echo "FAIL: docs/layout.md has no layout table under '## Layout'"; exit 1; }
status=0
[ -z "$missing" ] || { echo "FAIL: docs/layout.md's layout table lacks: $(echo $missing)"; status=1; }
[ -z "$stale" ] || { echo "FAIL: docs/layout.md's layout table names folders the tree lacks: $(echo $stale)"; status=1; }
[ "$status" = 0 ] && echo "PASS: docs/layout.md's layout table names all $(echo "$folders" | wc -l) top-level folders"
exit "$status"
