#!/usr/bin/env bash
# The `logscope watch` dashboard as docs/watch.png: the storm fixture watched at 14:30 in
# a 100×30 tmux pane (colours on), the pane's text and colours turned into an HTML page,
# and the page screenshotted by headless chromium. No network is used.
#   benches/watch-screenshot.sh [path/to/logscope]   (default: target/debug/logscope)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-${CARGO_TARGET_DIR:-target}/debug/logscope}")
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$BIN" ] || { echo "no $BIN: cargo build first" >&2; exit 1; }
command -v tmux >/dev/null || { echo "no tmux: apt-get install tmux" >&2; exit 1; }
TMP=$(mktemp -d)
SOCK="logscope-shot-$$"
trap 'tmux -L "$SOCK" kill-server 2>/dev/null || true; rm -rf "$TMP"' EXIT
tmux -L "$SOCK" new-session -d -s w -x 100 -y 30 \
  "env -u NO_COLOR TERM=xterm-256color '$BIN' --data '$TMP/none' watch --capacity 30/1m \
     --asn-db fixtures/storm/asn.tsv --limit 1600/10m --limit '5r/s,algo=nginx,burst=10,key=ip' \
     --alert 'heavy > 200/10m' --alert 'errors > 5%/5m' --alert 'prefix_share > 20%' \
     --until 2026-11-04T14:30 fixtures/storm/access.log.gz; sleep 30"
for _ in $(seq 100); do
  tmux -L "$SOCK" capture-pane -p -t w | grep -q 'top prefixes' && break
  sleep 0.1
done
tmux -L "$SOCK" capture-pane -e -p -t w > "$TMP/pane.ansi"
python3 - "$TMP/pane.ansi" "$TMP/watch.html" <<'PY'
import html, re, sys
base = ["#1e1e1e", "#e05561", "#8cc265", "#d18f52", "#4aa5f0", "#c162de", "#42b3c2", "#d7dae0"]
bright = ["#4f5666", "#ff616e", "#a5e075", "#f0a45d", "#4dc4ff", "#de73ff", "#4cd1e0", "#e6e6e6"]
def colour(n):
    return (base + bright)[n] if n < 16 else "#d7dae0"
out, style = [], {"fg": None, "b": False, "dim": False}
def span(text):
    if not text:
        return
    css = []
    if style["fg"]: css.append("color:%s" % style["fg"])
    if style["b"]: css.append("font-weight:bold")
    if style["dim"]: css.append("opacity:.6")
    t = html.escape(text)
    out.append('<span style="%s">%s</span>' % (";".join(css), t) if css else t)
for line in open(sys.argv[1], encoding="utf-8").read().split("\n"):
    pos = 0
    for m in re.finditer(r"\x1b\[([0-9;]*)m", line):
        span(line[pos:m.start()])
        pos = m.end()
        codes = [int(c) for c in m.group(1).split(";") if c] or [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0: style = {"fg": None, "b": False, "dim": False}
            elif c == 1: style["b"] = True
            elif c == 2: style["dim"] = True
            elif c == 22: style["b"] = style["dim"] = False
            elif 30 <= c <= 37: style["fg"] = colour(c - 30)
            elif 90 <= c <= 97: style["fg"] = colour(c - 90 + 8)
            elif c == 39: style["fg"] = None
            elif c == 38 and i + 2 < len(codes) and codes[i + 1] == 5:
                style["fg"] = colour(codes[i + 2]); i += 2
            i += 1
    span(line[pos:])
    out.append("\n")
page = """<!doctype html><meta charset="utf-8"><style>
body{margin:0;background:#1e1e1e}
pre{margin:0;padding:14px 18px;color:#d7dae0;font:15px/1.25 'DejaVu Sans Mono',monospace}
</style><pre>%s</pre>""" % "".join(out)
open(sys.argv[2], "w", encoding="utf-8").write(page)
PY
"$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$TMP/profile" --hide-scrollbars --window-size=960,620 \
  --screenshot="docs/watch.png" "file://$TMP/watch.html" 2>/dev/null
echo "docs/watch.png"
