#!/usr/bin/env bash
# Memory per distinct value: peak RSS of ingest and every report over logs whose every
# line has a new client address (and, for the agents run, a new user agent), at two
# sizes, so the slope (bytes per distinct value) and the total at the larger size show.
# Prints Markdown rows for BENCHMARKS.md.
#
#   benches/memory.sh                  N=1000000,10000000 distinct clients
#   N=2000000,5000000 benches/memory.sh
#
# Needs: a release build (cargo build --release), GNU time, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=${CARGO_TARGET_DIR:-target}
BIN=${BIN:-$TARGET/release/logscope}
WORK=${WORK:-/var/tmp/logscope-memory}
SIZES=${N:-1000000,10000000}
AGENTS=${AGENTS:-2000000}
mkdir -p "$WORK"
[ -x "$BIN" ] || { echo "no release binary at $BIN: run cargo build --release" >&2; exit 1; }

rss() { # peak RSS in MiB and seconds of a command (its output discarded)
    /usr/bin/time -f '%M %e' "$@" 2>"$WORK/time.err" >/dev/null || {
        echo "failed: $*" >&2; tail -n 3 "$WORK/time.err" >&2; }
    tail -n 1 "$WORK/time.err" | awk '{printf "%.0f %s", $1/1024, $2}'
}

row() { # label n command... → a Markdown row with MiB and bytes per distinct value
    local label=$1 n=$2; shift 2
    read -r mib secs < <(rss "$@")
    awk -v l="$label" -v n="$n" -v m="$mib" -v s="$secs" \
        'BEGIN { printf "| %s | %d | %d | %.0f | %s |\n", l, n, m, m * 1048576 / n, s }'
}

echo "| command | distinct | peak RSS MiB | bytes per distinct | s |"
echo "|---|---:|---:|---:|---:|"
IFS=, read -r -a sizes <<<"$SIZES"
for n in "${sizes[@]}"; do
    log=$WORK/distinct-$n.log
    [ -f "$log" ] || python3 benches/gen_distinct.py -n "$n" -o "$log"
    data=$WORK/data-$n
    rm -rf "$data"
    row "ingest (addresses)" "$n" "$BIN" --data "$data" ingest --quiet "$log"
    row "top --by ip" "$n" "$BIN" --data "$data" top --by ip --format json
    row "top --by prefix" "$n" "$BIN" --data "$data" top --by prefix --format json
    row "top --by path" "$n" "$BIN" --data "$data" top --by path --format json
    row "concentration" "$n" "$BIN" --data "$data" concentration --format json
    row "heavy --by 1h" "$n" "$BIN" --data "$data" heavy --by 1h --format json
    row "timeline --client 0.0.0.0/0" "$n" "$BIN" --data "$data" timeline --client 0.0.0.0/0 --format json
    row "agents" "$n" "$BIN" --data "$data" agents --format json
    row "availability" "$n" "$BIN" --data "$data" availability --format json
    row "replay 1600/10m" "$n" "$BIN" --data "$data" replay --limit 1600/10m --format json
    row "replay key=ip" "$n" "$BIN" --data "$data" replay --limit 300/1m,key=ip --format json
    row "report" "$n" "$BIN" --data "$data" report --force --out "$WORK/report-$n"
    row "report (files)" "$n" "$BIN" --data "$data" report --force --out "$WORK/report-files-$n" "$log"
done
log=$WORK/agents-$AGENTS.log
[ -f "$log" ] || python3 benches/gen_distinct.py -n "$AGENTS" --agents -o "$log"
data=$WORK/data-agents
rm -rf "$data"
row "ingest (agents)" "$AGENTS" "$BIN" --data "$data" ingest --quiet "$log"
row "agents (agents)" "$AGENTS" "$BIN" --data "$data" agents --format json
row "top --by agent (agents)" "$AGENTS" "$BIN" --data "$data" top --by agent --format json
row "replay key=ip (agents)" "$AGENTS" "$BIN" --data "$data" replay --limit 300/1m,key=ip --format json
row "replay key=agent (agents)" "$AGENTS" "$BIN" --data "$data" replay --limit 300/1m,key=agent --format json
row "report (agents)" "$AGENTS" "$BIN" --data "$data" report --force --out "$WORK/report-agents"
