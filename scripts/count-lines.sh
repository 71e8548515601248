#!/usr/bin/env bash
# count-lines.sh: the non-test lines of the workspace's crates ("lines under
# crates/ outside tests").
#
# What counts: every .rs file under crates/ that is not under a tests/,
# benches/ or examples/ folder, up to the `#[cfg(test)]` line that opens its
# `mod tests` (other cfg(test) items, which are few and short, are counted),
# except the study's two files compiled only for tests (claims/tests.rs and
# claims/testkit.rs). Blank and comment lines count.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: scripts/count-lines.sh [--files] [REV]
       scripts/count-lines.sh --by-commit RANGE

Prints the non-test lines of each crate under crates/ and their total.
  REV        count the tree of this git revision instead of the working tree
  --files    also list every counted file with its lines, largest first
  --by-commit RANGE
             for each commit of a git range (A..B) that is not a merge, oldest
             first, how much it changed the total, then the sum of the changes
             (what the merges added on their own is the rest of B's total
             less A's)
USAGE
}

files=0
rev=""
range=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --files) files=1 ;;
    --by-commit) [ $# -ge 2 ] || { usage >&2; exit 2; }; range="$2"; shift ;;
    -*) usage >&2; exit 2 ;;
    *) rev="$1" ;;
  esac
  shift
done

cd "$(dirname "$0")/.."

# counted REV: "LINES FILE" for every counted file of REV ("" = working tree).
counted() {
  local r="$1"
  if [ -n "$r" ]; then
    git ls-tree -r --name-only "$r" -- crates
  else
    git ls-files --cached --others --exclude-standard -- crates
  fi | grep '\.rs$' \
    | grep -Ev '/(tests|benches|examples)/' \
    | grep -Ev -- '-study/src/claims/(tests|testkit)\.rs$' \
    | while read -r f; do
        if [ -n "$r" ]; then git show "$r:$f"; else cat "$f"; fi \
          | awk -v f="$f" 'prev && /^(pub(\(crate\))? )?mod tests/ { print n - 1, f; found = 1; exit }
                           { prev = /^#\[cfg\(test\)\]/; n++ }
                           END { if (!found) print n + 0, f }'
      done | sort -rn
}

total() { counted "$1" | awk '{ t += $1 } END { print t + 0 }'; }

if [ -n "$range" ]; then
  git log --no-merges --reverse --format='%h %s' "$range" | while read -r c subject; do
    printf '%+6d %s %.90s\n' $(( $(total "$c") - $(total "$c^") )) "$c" "$subject"
  done | awk '{ print; s += $1 } END { printf "%+6d  the sum\n", s }'
  exit 0
fi

list=$(counted "$rev")
[ "$files" = 1 ] && echo "$list" && echo
echo "$list" | awk '{ split($2, p, "/"); c[p[2]] += $1; t += $1 }
  END { for (k in c) printf "%7d  %s\n", c[k], k; printf "%7d  total\n", t }' | sort -n
