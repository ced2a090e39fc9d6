#!/usr/bin/env bash
# Times `logscope ingest` against GoAccess and a bare line count on the same file, in
# the same run, and measures peak RSS. Results go to stdout as Markdown rows for
# BENCHMARKS.md.
#
#   benches/ingest.sh [LOG]            default LOG: /var/tmp/bench/access.log (generated)
#   RUNS=5 GOACCESS=0 benches/ingest.sh big.log
#
# Needs: a release build (cargo build --release), hyperfine, GNU time, goaccess
# (apt-get install hyperfine time goaccess).
set -euo pipefail
cd "$(dirname "$0")/.."

LOG=${1:-/var/tmp/bench/access.log}
RUNS=${RUNS:-3}
GOACCESS=${GOACCESS:-1}
TARGET=${CARGO_TARGET_DIR:-target}
BIN=${BIN:-$TARGET/release/logscope}
WORK=$(mktemp -d /var/tmp/logscope-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

if [ ! -f "$LOG" ]; then
    echo "generating $LOG (5 M lines, ~1.2 GB)…" >&2
    mkdir -p "$(dirname "$LOG")"
    python3 benches/gen_combined.py -n 5000000 -o "$LOG"
fi
[ -x "$BIN" ] || { echo "no release binary at $BIN: run cargo build --release" >&2; exit 1; }

bytes=$(stat -c %s "$LOG")
lines=$(wc -l < "$LOG")
mb=$(python3 -c "print(f'{$bytes/1e6:.1f}')")
echo "file: $LOG, $mb MB, $lines lines; machine: $(nproc) cores, $(free -g | awk '/Mem/{print $2}') GiB" >&2
cat "$LOG" > /dev/null   # warm the page cache

median() { # hyperfine JSON → median seconds
    python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print(f\"{r['median']:.3f} [{r['min']:.3f}..{r['max']:.3f}]\")" "$1"
}
rss() { # peak RSS in MiB of a command
    /usr/bin/time -f '%M' "$@" 2>"$WORK/time.err" >/dev/null || true
    tail -n 1 "$WORK/time.err" | python3 -c "import sys; print(f'{int(sys.stdin.read().strip())/1024:.0f}')"
}
row() { # name, seconds-string, median seconds
    local med=${2%% *}
    python3 -c "
b=$bytes; l=$lines; m=float('$med')
print(f'| $1 | $2 | {b/1e6/m:,.0f} | {l/m/1e6:.2f} M | $3 MiB |')"
}

echo "| command | wall s, median [min..max] | MB/s | lines/s | peak RSS |"
echo "|---|---|---|---|---|"

hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$WORK/wc.json" "wc -l $LOG" >/dev/null 2>&1
row '`wc -l`' "$(median "$WORK/wc.json")" "$(rss wc -l "$LOG")"

hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$WORK/ing.json" \
    --prepare "rm -rf $WORK/data" "$BIN --data $WORK/data ingest --quiet $LOG" >/dev/null 2>&1
rm -rf "$WORK/data"
row '`logscope ingest` (parse + Parquet write)' "$(median "$WORK/ing.json")" "$(rss "$BIN" --data "$WORK/data" ingest --quiet "$LOG")"

# The parse alone (no Parquet written), for the "writing may not cost more than the
# parse" ratio of issue 9.
hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$WORK/dry.json" \
    "$BIN --data $WORK/dry ingest --quiet --dry-run $LOG" >/dev/null 2>&1
row '`logscope ingest --dry-run` (parse only)' "$(median "$WORK/dry.json")" "$(rss "$BIN" --data "$WORK/dry" ingest --quiet --dry-run "$LOG")"
python3 -c "
import json
m=lambda f: json.load(open(f))['results'][0]['median']
print(f'ingest / dry-run: {m(\"$WORK/ing.json\")/m(\"$WORK/dry.json\"):.2f}x')" >&2

rm -rf "$WORK/data"
hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$WORK/ing1.json" \
    --prepare "rm -rf $WORK/data" "$BIN --data $WORK/data ingest --quiet --threads 1 $LOG" >/dev/null 2>&1
rm -rf "$WORK/data"
row '`logscope ingest --threads 1`' "$(median "$WORK/ing1.json")" "$(rss "$BIN" --data "$WORK/data" ingest --quiet --threads 1 "$LOG")"

# Second ingest of the same file: recognised, nothing added.
"$BIN" --data "$WORK/data2" ingest --quiet "$LOG"
hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$WORK/again.json" "$BIN --data $WORK/data2 ingest --quiet $LOG" >/dev/null 2>&1
row '`logscope ingest` again (already seen, 0 added)' "$(median "$WORK/again.json")" "-"
du -sh "$WORK/data2" | awk '{print "dataset size on disk: " $1}' >&2

if [ "$GOACCESS" = 1 ] && command -v goaccess >/dev/null; then
    # GoAccess is single-threaded and slow: one timed run.
    /usr/bin/time -f '%e %M' goaccess "$LOG" --log-format=COMBINED --no-global-config \
        --no-progress -o "$WORK/out.json" 2>"$WORK/ga.err" >/dev/null || true
    read -r gs grss < <(tail -n 1 "$WORK/ga.err")
    row "\`goaccess --log-format=COMBINED -o out.json\` ($(goaccess --version | head -1 | awk '{print $3}' | sed 's/\.$//'), 1 run)" "$gs" "$(python3 -c "print(f'{$grss/1024:.0f}')")"
fi
