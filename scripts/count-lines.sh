#!/usr/bin/env bash
# count-lines.sh: the non-test lines of the workspace's crates, the figure
# issue 20 names ("lines under crates/ outside tests").
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

Prints the non-test lines of each crate under crates/ and their total.
  REV      count the tree of this git revision instead of the working tree
  --files  also list every counted file with its lines, largest first
USAGE
}

files=0
rev=""
for a in "$@"; do
  case "$a" in
    -h|--help) usage; exit 0 ;;
    --files) files=1 ;;
    -*) usage >&2; exit 2 ;;
    *) rev="$a" ;;
  esac
done

cd "$(dirname "$0")/.."
if [ -n "$rev" ]; then
  list() { git ls-tree -r --name-only "$rev" -- crates; }
  show() { git show "$rev:$1"; }
else
  list() { git ls-files --cached --others --exclude-standard -- crates; }
  show() { cat "$1"; }
fi

counted=$(list | grep '\.rs$' \
  | grep -Ev '/(tests|benches|examples)/' \
  | grep -Ev -- '-study/src/claims/(tests|testkit)\.rs$' \
  | while read -r f; do
      n=$(show "$f" | awk 'prev && /^(pub(\(crate\))? )?mod tests/ { print n - 1; found = 1; exit }
                          { prev = /^#\[cfg\(test\)\]/; n++ }
                          END { if (!found) print n + 0 }')
      echo "$n $f"
    done | sort -rn)

[ "$files" = 1 ] && echo "$counted" && echo
echo "$counted" | awk '{ split($2, p, "/"); c[p[2]] += $1; t += $1 }
  END { for (k in c) printf "%7d  %s\n", c[k], k; printf "%7d  total\n", t }' | sort -n
