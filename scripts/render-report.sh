#!/usr/bin/env bash
# Renders a study report (index.html) to a PNG with headless Chromium, to see
# what a reader sees. Skips, saying why, when Chromium is not installed
# (apt-get install -y chromium).
#   scripts/render-report.sh [STUDY_DIR (default study-out)] [OUT.png]
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -euo pipefail
dir="${1:-study-out}"
png="${2:-$dir/index.png}"
html="$dir/index.html"
if [ ! -f "$html" ]; then
    echo "no report at $html: run 'cargo run --release -- study --profile quick' first" >&2
    exit 1
fi
browser=""
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then browser="$b"; break; fi
done
if [ -z "$browser" ]; then
    echo "skipped: no headless Chromium here (apt-get install -y chromium)"
    exit 0
fi
abs="$(cd "$(dirname "$html")" && pwd)/$(basename "$html")"
# A tall window: the report is one long page.
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1100,6000 --screenshot="$png" "file://$abs" >/dev/null 2>&1
[ -s "$png" ] || { echo "Chromium wrote no screenshot to $png" >&2; exit 1; }
echo "$png"
