#!/usr/bin/env bash
# Renders every report's HTML page in headless chromium and saves one screenshot per
# report under docs/ (docs/heavy.png, docs/concentration.png, …). Input: a generated
# storm (6 hours of a wiki, a storm of anonymous heavy requests from many /24s at
# 14:00-15:00 UTC), so the charts have something to show. No network is used.
#   benches/screenshots.sh [path/to/logscope]   (default: target/debug/logscope)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-${CARGO_TARGET_DIR:-target}/debug/logscope}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$BIN" ] || { echo "no $BIN: cargo build first" >&2; exit 1; }
[ -x "$CHROMIUM" ] || { echo "no $CHROMIUM: apt-get install chromium" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
python3 - "$TMP/storm.log" <<'PY'
import random, sys
random.seed(2)
mobile = ["Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
          "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"]
desk = ["Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "curl/8.5.0"]
rows = []
for s in range(6 * 3600):
    for _ in range(random.choice([0, 0, 1, 1, 2])):
        ip = "192.0.%d.%d" % (random.randrange(40), random.randrange(250))
        path = random.choice(["/wiki/Main_Page", "/wiki/Help", "/w/index.php?title=A&action=history", "/wiki/Special:Search?search=x"])
        rows.append((s, ip, path, 200, random.choice(desk)))
    if 3 * 3600 <= s < 4 * 3600:
        rate = 1 + (3 if 3 * 3600 + 1200 <= s < 3 * 3600 + 1800 else 1)
        for _ in range(rate):
            ip = "%d.%d.%d.%d" % (random.randrange(11, 220), random.randrange(256), random.randrange(3), random.randrange(250))
            path = "/w/index.php?search=%d&diff=%d" % (random.randrange(9999), random.randrange(99))
            rows.append((s, ip, path, random.choice([200, 200, 200, 503]), random.choice(mobile)))
with open(sys.argv[1], "w") as f:
    for s, ip, path, st, ua in rows:
        h, m, sec = 11 + s // 3600, s % 3600 // 60, s % 60
        f.write('%s - - [25/Sep/2026:%02d:%02d:%02d +0000] "GET %s HTTP/1.1" %d 512 "-" "%s"\n' % (ip, h, m, sec, path, st, ua))
PY
run() { # NAME ARGS…
  local name=$1; shift
  "$BIN" --data "$TMP/no-dataset" "$@" --format html "$TMP/storm.log" > "$TMP/$name.html" 2>/dev/null
  "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$TMP/profile" --hide-scrollbars --window-size=1200,1600 \
    --screenshot="docs/$name.png" "file://$TMP/$name.html" 2>/dev/null
  echo "docs/$name.png"
}
run heavy heavy --by 10m --capacity 1000/10m
run concentration concentration --heavy --top 15
run agents agents --heavy --top 10
run availability availability
run replay replay --limit 20/1m
if "$BIN" top --help >/dev/null 2>&1; then run top top --by path; fi
# The incident post: one page of every part.
"$BIN" --data "$TMP/no-dataset" report --capacity 1000/10m --out "$TMP/report" "$TMP/storm.log" 2>/dev/null
"$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$TMP/profile" --hide-scrollbars --window-size=1400,1800 \
  --screenshot="docs/report.png" "file://$TMP/report/index.html" 2>/dev/null
echo "docs/report.png"
