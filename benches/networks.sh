#!/usr/bin/env bash
# Networks and blocks at scale: the reports of issue 42 over the 120-day, 20 M-line
# dataset with a 500 k-range iptoasn database, each timed (whole command, median of RUNS)
# with its peak RSS; beside them DuckDB answering `top --by asn` over the same Parquet
# files with an ASOF join on the same database, in the same run. Prints Markdown rows.
#
#   benches/networks.sh [LOG]      default LOG: /var/tmp/bench/access-120d.log (scale.sh's)
#   RUNS=5 DATA=/var/tmp/bench/data benches/networks.sh
#
# Needs: a release build, hyperfine, GNU time, python3 with duckdb.
set -euo pipefail
cd "$(dirname "$0")/.."

LOG=${1:-/var/tmp/bench/access-120d.log}
RUNS=${RUNS:-3}
TARGET=${CARGO_TARGET_DIR:-target}
BIN=${BIN:-$TARGET/release/logscope}
WORK=${WORK:-$(mktemp -d /var/tmp/logscope-networks.XXXXXX)}
DATA=${DATA:-$WORK/data}
ASN=$WORK/ip2asn-500k.tsv

[ -x "$BIN" ] || { echo "no release binary at $BIN: run cargo build --release" >&2; exit 1; }
if [ ! -d "$DATA/requests" ]; then
    [ -f "$LOG" ] || python3 benches/gen_combined.py -n 20000000 --days 120 -o "$LOG"
    /usr/bin/time -f 'ingest: %e s, peak RSS %M KiB' "$BIN" --data "$DATA" ingest --quiet "$LOG"
fi

# 500,000 ranges over the IPv4 space (iptoasn's dotted layout), 60,000 AS numbers.
python3 - "$ASN" <<'EOF'
import random, sys
rng = random.Random(7)
n = 500_000
step = (1 << 32) // n
with open(sys.argv[1], "w") as f:
    for k in range(n):
        lo, hi = k * step, (k + 1) * step - 1 if k < n - 1 else (1 << 32) - 1
        asn = 64512 + rng.randrange(60000)
        dot = lambda x: ".".join(str((x >> s) & 255) for s in (24, 16, 8, 0))
        f.write(f"{dot(lo)}\t{dot(hi)}\t{asn}\tZZ\tAS-{asn}-NET\n")
EOF
echo "machine: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg); database: $(wc -l < "$ASN") ranges" >&2

DAY=$(python3 -c "import duckdb; print(duckdb.sql(\"SELECT strftime(min(ts) + INTERVAL 60 DAY, '%Y-%m-%d') FROM read_parquet('$DATA/requests/*.parquet')\").fetchall()[0][0])")
BASE=$(python3 -c "import datetime as d; print((d.date.fromisoformat('$DAY') - d.timedelta(days=7)).isoformat())")

median() {
    python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print(f\"{r['median']:.2f}\")" "$1"
}
rss() {
    /usr/bin/time -f '%M' "$@" 2>"$WORK/time.err" >/dev/null || true
    tail -n 1 "$WORK/time.err" | python3 -c "import sys; print(f'{int(sys.stdin.read().strip())/1024:.0f}')"
}
row() { # name, command…
    local name=$1; shift
    hyperfine --style none --warmup 1 --runs "$RUNS" --export-json "$WORK/$name.json" \
        "$(printf '%q ' "$@")" >/dev/null 2>&1
    echo "| \`$name\` | $(median "$WORK/$name.json") | $(rss "$@") |"
}

L=("$BIN" --data "$DATA")
echo "| command (20 M rows, 120 days; --asn-db of 500 k ranges) | s | peak RSS MiB |"
echo "|---|---:|---:|"
row "top --by prefix (no database)" "${L[@]}" top --by prefix
row "top --by asn" "${L[@]}" top --by asn --asn-db "$ASN"
row "concentration --by asn" "${L[@]}" concentration --by asn --asn-db "$ASN"
row "fingerprint --by asn (one day)" "${L[@]}" fingerprint --by asn --asn-db "$ASN" --since "$DAY" --until "$DAY"
row "diff (a week against a day)" "${L[@]}" diff --asn-db "$ASN" --baseline "$BASE..$DAY" --since "$DAY" --until "$DAY"
row "block (heavy of one day)" "${L[@]}" block --asn-db "$ASN" --since "$DAY" --until "$DAY"
row "replay key=asn (one week)" "${L[@]}" replay --asn-db "$ASN" --limit 1000/10m,key=asn --since "$BASE" --until "$DAY"

cat > "$WORK/twin.py" <<EOF
import duckdb, sys
con = duckdb.connect()
con.execute("SET threads = 2")
con.execute("""CREATE TABLE a AS
  SELECT (split_part(s,'.',1)::BIGINT << 24) + (split_part(s,'.',2)::BIGINT << 16)
       + (split_part(s,'.',3)::BIGINT << 8) + split_part(s,'.',4)::BIGINT AS lo,
         (split_part(e,'.',1)::BIGINT << 24) + (split_part(e,'.',2)::BIGINT << 16)
       + (split_part(e,'.',3)::BIGINT << 8) + split_part(e,'.',4)::BIGINT AS hi,
         asn, name
  FROM read_csv('$ASN', delim='\t', header=false,
                columns={'s':'VARCHAR','e':'VARCHAR','asn':'INT','cc':'VARCHAR','name':'VARCHAR'})""")
rows = con.execute("""
  SELECT a.asn, any_value(a.name), count(*) AS n
  FROM (SELECT ip_lo & 4294967295 AS v4 FROM read_parquet('$DATA/requests/*.parquet')
        WHERE ip_hi = 0 AND (ip_lo >> 32) = 65535) r
  ASOF JOIN a ON r.v4 >= a.lo
  WHERE r.v4 <= a.hi
  GROUP BY a.asn ORDER BY n DESC, a.asn LIMIT 20""").fetchall()
print(len(rows))
EOF
row "DuckDB: top --by asn (ASOF join, 2 threads)" python3 "$WORK/twin.py"
