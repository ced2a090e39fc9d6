#!/usr/bin/env bash
# Each report over a dataset beside its `--sql duckdb`, `--sql clickhouse` and `--sql spark`
# twins: logscope's whole command, DuckDB (PyPI, 2 threads) and ClickHouse (chdb from PyPI,
# 2 threads) running the emitted SQL, and Spark local[2] running it (one process per twin,
# so its ~10 s start-up is counted; the start-up alone is timed too).
# Usage: benches/twins.sh DATA_DIR   (BIN=, RUNS= to override; SPARK=0 leaves Spark out)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:?usage: benches/twins.sh DATA_DIR}
TARGET=${CARGO_TARGET_DIR:-target}
BIN=${BIN:-$TARGET/release/logscope}
RUNS=${RUNS:-3}
SPARK=${SPARK:-1}
# The twins are written by the same logscope (any build: writing them is not timed).
GEN=${GEN:-$BIN}
WORK=$(mktemp -d /var/tmp/logscope-twins.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
[ -x "$BIN" ] || { echo "no release binary at $BIN" >&2; exit 1; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
median() { python3 -c "import json,sys; print('%.3f' % json.load(open(sys.argv[1]))['results'][0]['median'])" "$1"; }
time1() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); python3 -c "print('%.1f' % ($e - $s))"; }
printf '| report | logscope s | DuckDB twin s | ClickHouse twin s | Spark twin s (incl. start) |\n|---|---:|---:|---:|---:|\n'
while IFS='|' read -r name args; do
    # shellcheck disable=SC2086
    "$GEN" --data "$DATA" $args --sql duckdb > "$WORK/$name.duckdb.sql"
    # shellcheck disable=SC2086
    "$GEN" --data "$DATA" $args --sql clickhouse > "$WORK/$name.clickhouse.sql"
    # shellcheck disable=SC2086
    "$GEN" --data "$DATA" $args --sql spark > "$WORK/$name.spark.sql"
    hyperfine --style none --warmup 1 --runs "$RUNS" --export-json "$WORK/l.json" \
        "$BIN --data $DATA $args --format json" >/dev/null
    hyperfine --style none --warmup 0 --runs "$RUNS" --export-json "$WORK/d.json" \
        "python3 tests/engines/run_duckdb.py $WORK/$name.duckdb.sql" >/dev/null
    hyperfine --style none --warmup 0 --runs "$RUNS" --export-json "$WORK/c.json" \
        "python3 tests/engines/run_clickhouse.py $WORK/$name.clickhouse.sql" >/dev/null
    s=-
    [ "$SPARK" = 1 ] && s=$(time1 python3 tests/engines/run_spark.py "$WORK/$name.spark.sql" 2>/dev/null)
    printf '| `%s` | %s | %s | %s | %s |\n' "$args" "$(median "$WORK/l.json")" "$(median "$WORK/d.json")" "$(median "$WORK/c.json")" "$s"
done <<'LIST'
heavy|heavy --by 1h
concentration|concentration
agents|agents
availability|availability --by month
probe|availability --probe ^/wiki/ --by day
top|top --by path
LIST
: > "$WORK/empty.sql"
[ "$SPARK" = 1 ] && echo "Spark start-up alone (an empty script): $(time1 python3 tests/engines/run_spark.py "$WORK/empty.sql" 2>/dev/null) s"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
