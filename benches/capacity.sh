#!/usr/bin/env bash
# The cost of `capacity` and of `replay --workers` / `--sweep` over the 20 M-row dataset,
# beside the plain replay, alternated round by round (wall s, CPU s, peak RSS). Prints
# Markdown rows for BENCHMARKS.md.
#
#   benches/capacity.sh [LOG]      default LOG: /var/tmp/bench/access-120d.log (generated)
#   ROUNDS=5 benches/capacity.sh
#
# Needs: a release build (cargo build --release), GNU time, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

LOG=${1:-/var/tmp/bench/access-120d.log}
ROUNDS=${ROUNDS:-3}
TARGET=${CARGO_TARGET_DIR:-target}
BIN=${BIN:-$TARGET/release/logscope}
WORK=${WORK:-/var/tmp/logscope-capacity-bench}
DATA=$WORK/data

if [ ! -f "$LOG" ]; then
    echo "generating $LOG (20 M lines over 120 days)…" >&2
    mkdir -p "$(dirname "$LOG")"
    python3 benches/gen_combined.py -n 20000000 --days 120 -o "$LOG"
fi
[ -x "$BIN" ] || { echo "no release binary at $BIN: run cargo build --release" >&2; exit 1; }
if [ ! -d "$DATA/requests" ]; then
    mkdir -p "$WORK"
    "$BIN" --data "$DATA" ingest --quiet "$LOG"
fi
echo "machine: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

cmds=(
    "replay --limit 1600/10m"
    "capacity --by 10m"
    "capacity --by 10m --scope heavy"
    "replay --limit 1600/10m --workers 8"
    "replay --sweep 600..2400/10m,step=200,scope=heavy --capacity 1610/10m"
    "replay --sweep 600..2400/10m,step=200,scope=heavy --capacity 1610/10m --workers 8"
)
declare -A wall cpu rss
for ((r = 0; r < ROUNDS; r++)); do
    for c in "${cmds[@]}"; do
        # shellcheck disable=SC2086
        out=$( { /usr/bin/time -f '%e %U %S %M' "$BIN" --data "$DATA" $c --format json >/dev/null; } 2>&1 | tail -1)
        read -r e u s m <<<"$out"
        wall[$c]+="$e "
        cpu[$c]+="$(echo "$u + $s" | bc) "
        rss[$c]+="$m "
    done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "| command | wall s | CPU s | peak RSS MiB |"
echo "|---|---:|---:|---:|"
for c in "${cmds[@]}"; do
    w=$(echo "${wall[$c]}" | median)
    p=$(echo "${cpu[$c]}" | median)
    m=$(echo "${rss[$c]}" | median)
    echo "| \`$c\` | $w | $p | $((m / 1024)) |"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
