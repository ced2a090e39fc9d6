#!/usr/bin/env bash
# A year of logs, scaled down: every report over a 120-day, 20 M-line dataset, each
# beside the DuckDB SQL that answers the same question over the same Parquet files, timed
# in the same run (whole commands, median of RUNS); peak RSS of each; time-filter
# pruning; replay memory. Prints Markdown rows for BENCHMARKS.md.
#
#   benches/scale.sh [LOG]         default LOG: /var/tmp/bench/access-120d.log (generated)
#   RUNS=5 benches/scale.sh
#
# Needs: a release build (cargo build --release), hyperfine, GNU time, python3 with
# duckdb (installed from PyPI by this script if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

LOG=${1:-/var/tmp/bench/access-120d.log}
RUNS=${RUNS:-3}
TARGET=${CARGO_TARGET_DIR:-target}
BIN=${BIN:-$TARGET/release/logscope}
WORK=${WORK:-$(mktemp -d /var/tmp/logscope-scale.XXXXXX)}
DATA=$WORK/data
KEEP=${KEEP:-0}
SECTIONS=${SECTIONS:-reports,prune,replay}   # which parts to run
on() { [[ ",$SECTIONS," == *",$1,"* ]]; }
[ "$KEEP" = 1 ] || trap 'rm -rf "$WORK"' EXIT

if [ ! -f "$LOG" ]; then
    echo "generating $LOG (20 M lines over 120 days, ~4.6 GB)…" >&2
    mkdir -p "$(dirname "$LOG")"
    python3 benches/gen_combined.py -n 20000000 --days 120 -o "$LOG"
fi
[ -x "$BIN" ] || { echo "no release binary at $BIN: run cargo build --release" >&2; exit 1; }
python3 -c "import duckdb" 2>/dev/null || python3 -m pip install --quiet duckdb
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }

echo "machine: $(nproc) cores, $(free -g | awk '/Mem/{print $2}') GiB; load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if [ ! -d "$DATA/requests" ]; then
    /usr/bin/time -f 'ingest: %e s, peak RSS %M KiB' "$BIN" --data "$DATA" ingest --quiet "$LOG"
fi
ROWS=$("$BIN" --data "$DATA" info --json | python3 -c "import json,sys; print(json.load(sys.stdin)['rows'])")
echo "dataset: $ROWS rows" >&2

median() { # hyperfine JSON → median seconds
    python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print(f\"{r['median']:.3f}\")" "$1"
}
rss() { # peak RSS in MiB of a command
    /usr/bin/time -f '%M' "$@" 2>"$WORK/time.err" >/dev/null || true
    tail -n 1 "$WORK/time.err" | python3 -c "import sys; print(f'{int(sys.stdin.read().strip())/1024:.0f}')"
}
time_cmd() { # name, command... → median seconds (whole command)
    local name=$1; shift
    hyperfine --style none --warmup 1 --runs "$RUNS" --export-json "$WORK/$name.json" \
        "$(printf '%q ' "$@")" >/dev/null 2>&1
    median "$WORK/$name.json"
}

# The DuckDB twins: the same question, the same files, 2 threads.
TWIN=benches/duckdb_twin.py

if on reports; then
echo "| question | logscope s | rows/s | peak RSS MiB | DuckDB s | DuckDB RSS MiB | logscope / DuckDB |"
echo "|---|---:|---:|---:|---:|---:|---:|"
report() { # name, twin, logscope args...
    local name=$1 twin=$2; shift 2
    local ls dk lr dr
    ls=$(time_cmd "ls-$name" "$BIN" --data "$DATA" "$@" --format json)
    lr=$(rss "$BIN" --data "$DATA" "$@" --format json)
    dk=$(time_cmd "dk-$name" python3 "$TWIN" "$DATA" "$twin")
    dr=$(rss python3 "$TWIN" "$DATA" "$twin")
    python3 -c "
ls=float('$ls'); dk=float('$dk'); n=$ROWS
print(f'| \`$*\` | {ls:.3f} | {n/ls/1e6:.1f} M | $lr | {dk:.3f} | $dr | {ls/dk:.2f} |')"
}
report heavy heavy heavy --by 1h
report concentration concentration concentration
report agents agents agents
report availability availability availability --by month
report top top top --by path
report timeline timeline timeline --client 20.171.0.0/16 --by 1d
fi

# Pruning: one day of the 120 against the whole dataset.
if on prune; then
DAY=$(python3 -c "import duckdb,sys; print(duckdb.sql(\"SELECT strftime(min(ts) + INTERVAL 60 DAY, '%Y-%m-%d') FROM read_parquet('$DATA/requests/*.parquet')\").fetchall()[0][0])")
whole=$(time_cmd prune-whole "$BIN" --data "$DATA" heavy --by 1h --format json)
day=$(time_cmd prune-day "$BIN" --data "$DATA" heavy --by 1h --since "$DAY" --until "$DAY" --format json)
python3 -c "print(f'\nheavy --by 1h, whole: $whole s; --since/--until $DAY: $day s = {100*float(\"$day\")/float(\"$whole\"):.1f}% of whole')"
fi

# Replay: wall, the rows replayed as they were read (LOGSCOPE_TIMING; the others were
# sorted on disk first), and peak RSS.
if on replay; then
echo
echo "| replay | wall s | rows/s whole | rows replayed as read | runs on disk | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|---:|"
for spec in 1600/10m 300/1m,key=ip; do
    t=$(time_cmd "replay" "$BIN" --data "$DATA" replay --limit "$spec" --format json)
    r=$(rss "$BIN" --data "$DATA" replay --limit "$spec" --format json)
    phases=$(LOGSCOPE_TIMING=1 "$BIN" --data "$DATA" replay --limit "$spec" --format json 2>&1 >/dev/null)
    fed=$(echo "$phases" | sed -n 's/.*(\([0-9]*\) rows replayed as read).*/\1/p')
    runs=$(echo "$phases" | sed -n 's/.*(\([0-9]*\) runs on disk).*/\1/p')
    python3 -c "print(f'| \`--limit $spec\` | $t | {$ROWS/float(\"$t\")/1e6:.1f} M | {100*int(\"${fed:-0}\")/$ROWS:.1f} % | ${runs:-?} | $r |')"
done
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
