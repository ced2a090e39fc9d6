#!/usr/bin/env bash
# `logscope report` against the sum of its parts: the report runs the same computations
# as heavy, concentration, agents, availability and top (paths, statuses), one pass
# each, so its whole time should not exceed theirs added up. Medians of RUNS (hyperfine).
#
#   benches/report.sh DATA_DIR        a dataset (e.g. the 5 M-row one from ingest.sh)
#   RUNS=5 benches/report.sh DATA_DIR
#
# Needs a release build (cargo build --release) and hyperfine.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${1:?usage: benches/report.sh DATA_DIR}
RUNS=${RUNS:-3}
TARGET=${CARGO_TARGET_DIR:-target}
BIN=${BIN:-$TARGET/release/logscope}
WORK=$(mktemp -d /var/tmp/logscope-report.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
[ -x "$BIN" ] || { echo "no release binary at $BIN: run cargo build --release" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
echo "machine: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

L="$BIN --data $DATA"
hyperfine --runs "$RUNS" --warmup 1 --export-json "$WORK/t.json" --style basic \
    -n report "cd $WORK && $L report --by 1h --out r --force" \
    -n heavy "$L heavy --by 1h --format json" \
    -n concentration "$L concentration --heavy --format json" \
    -n agents "$L agents --heavy --format json" \
    -n availability "$L availability --format json" \
    -n top-path "$L top --by path --top 10 --format json" \
    -n top-status "$L top --by status --top 10 --format json" >&2
python3 - "$WORK/t.json" <<'EOF'
import json, sys
r = {x["command"]: x["median"] for x in json.load(open(sys.argv[1]))["results"]}
parts = sum(v for k, v in r.items() if k != "report")
print("| command | median |\n|---|---:|")
for k, v in r.items():
    print(f"| {k} | {v:.2f} s |")
print(f"| sum of the parts | {parts:.2f} s |")
print(f"| report / sum | {r['report'] / parts:.2f} |")
EOF
