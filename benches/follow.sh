#!/usr/bin/env bash
# Can `ingest --follow` keep up? A writer appends real-looking combined lines (the
# 120-day generated log's) to a live file at a fixed rate, in 100 ms slices, for
# SECONDS seconds, while `logscope ingest --follow --commit-every 10s` follows it into an
# empty dataset. Every second the script reads how many rows are committed; the backlog
# (lines written − rows committed) must stay within one commit interval's lines, and
# after the writer stops every line must be committed within one interval. The
# follower's CPU is its utime + stime over the run (from /proc). The peer, in the same run:
# GoAccess following the same file in real time (`--real-time-html`, its WebSocket server
# on 127.0.0.1), its CPU measured the same way (its counts go to the browser over the
# WebSocket, so that it read every line is not checked). Prints Markdown rows.
#
#   benches/follow.sh [LOG]        default LOG: /var/tmp/bench/access-120d.log (scale.sh's)
#   RATES="50000 200000" SECONDS_EACH=30 benches/follow.sh
#
# Needs: a release build, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

LOG=${1:-/var/tmp/bench/access-120d.log}
TARGET=${CARGO_TARGET_DIR:-target}
BIN=${BIN:-$TARGET/release/logscope}
RATES=${RATES:-"50000 200000"}
SECONDS_EACH=${SECONDS_EACH:-30}
[ -x "$BIN" ] || { echo "no release binary at $BIN: run cargo build --release" >&2; exit 1; }
[ -f "$LOG" ] || python3 benches/gen_combined.py -n 20000000 --days 120 -o "$LOG"

echo "| appended lines/s | seconds | lines | max backlog (lines) | all committed after the writer stopped | follower CPU (100% = one core) | follower peak RSS | commits, parts at the end | GoAccess following the same file: CPU, peak RSS |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for RATE in $RATES; do
  WORK=$(mktemp -d /var/tmp/logscope-follow.XXXXXX)
  python3 - "$BIN" "$LOG" "$WORK" "$RATE" "$SECONDS_EACH" <<'PY'
import json, os, subprocess, sys, time
binary, log, work, rate, secs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
need = rate * secs
lines = []
with open(log, "rb") as f:
    for line in f:
        lines.append(line)
        if len(lines) == need:
            break
live = os.path.join(work, "access.log")
data = os.path.join(work, "data")
open(live, "wb").close()
env = dict(os.environ, NO_COLOR="1")
follower = subprocess.Popen([binary, "--data", data, "ingest", "--follow", "--commit-every", "10s", live],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
goaccess = None
if subprocess.run(["sh", "-c", "command -v goaccess"], capture_output=True).returncode == 0:
    goaccess = subprocess.Popen(["goaccess", live, "--log-format=COMBINED", "-o", os.path.join(work, "ga.html"),
                                 "--real-time-html", "--addr=127.0.0.1", "--port=7893"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def committed():
    if not os.path.exists(os.path.join(data, "requests")):
        return 0
    out = subprocess.run([binary, "--data", data, "info", "--json"], capture_output=True, env=env)
    try:
        return json.loads(out.stdout)["rows"]
    except Exception:
        return 0
def peak_rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0
def cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
start = time.monotonic()
written, backlog, next_check = 0, 0, start + 1
slice_n = rate // 10
with open(live, "ab", buffering=0) as out:
    while written < need:
        due = start + (written // slice_n + 1) * 0.1
        chunk = b"".join(lines[written:written + slice_n])
        out.write(chunk)
        written += slice_n
        now = time.monotonic()
        if now >= next_check:
            backlog = max(backlog, written - committed())
            next_check = now + 1
        if due > time.monotonic():
            time.sleep(due - time.monotonic())
wrote_at = time.monotonic()
while committed() < need:
    backlog = max(backlog, need - committed())
    time.sleep(0.2)
    if time.monotonic() - wrote_at > 120:
        break
caught_up = time.monotonic() - wrote_at
used = cpu(follower.pid)
rss = peak_rss_mib(follower.pid)
peer = "not installed"
if goaccess:
    peer = "%.0f%% (%.1f s), %.0f MiB" % (100 * cpu(goaccess.pid) / (time.monotonic() - start),
                                         cpu(goaccess.pid), peak_rss_mib(goaccess.pid))
    goaccess.terminate()
    goaccess.wait()
wall = time.monotonic() - start
follower.terminate()
err = follower.communicate()[1].decode()
commits = err.count("ingest #")
info = json.loads(subprocess.run([binary, "--data", data, "info", "--json"], capture_output=True).stdout)
assert info["rows"] == need, (info["rows"], need)
print("| %s | %d | %s | %s | %.1f s | %.0f%% (%.1f s CPU in %.0f s) | %.0f MiB | %d, %d | %s |" % (
    format(rate, ","), secs, format(need, ","), format(backlog, ","), caught_up,
    100 * used / wall, used, wall, rss, commits, info["parts"], peer))
PY
  rm -rf "$WORK"
done
