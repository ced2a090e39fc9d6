#!/usr/bin/env python3
"""Runs a per-key `logscope replay` as N Spark tasks and writes one run's --decisions.

  spark-submit contrib/spark_replay.py --logscope PATH --data DATA --shards N \\
      --out decisions.csv [--master URL] [--summary-json FILE] -- REPLAY FLAGS…

  (or python3 contrib/spark_replay.py … with pyspark installed: a local session)

Task K of N runs

  PATH --data DATA replay REPLAY FLAGS --keys K/N --decisions TMP.csv --decisions-seq
       --format json

which replays only the keys whose XXH3-64(key text) mod N is K, and hands back its
decisions and its JSON report. The driver merges the shards' rows by their `seq`
column (a row's place in one unsharded run's file, the same in every shard) and drops
that column, so that --out is byte for byte the file of

  PATH --data DATA replay REPLAY FLAGS --decisions decisions.csv

and adds the shards' per-candidate counts into one summary, printed (and written as
JSON with --summary-json: under spark-submit the driver's stderr joins its stdout).

Only per-key candidates can be sharded (every zone counts per the same key: ip, prefix,
agent…). The flags are checked by logscope on the driver before Spark starts: a
site-wide candidate, or any other flag logscope refuses, exits 2 with logscope's
message and starts nothing. A task that fails fails the job with its stderr (exit 1).

DATA and PATH are opened by the tasks: in local mode any local path; on a cluster,
PATH must be the logscope binary at that path on every worker (and on the driver,
which checks the flags), and DATA a dataset directory on a filesystem every worker
mounts at the same path (NFS, a cluster filesystem): logscope reads local paths only,
not s3:// or hdfs:// URLs. Every task reads the whole dataset and replays a 1/N share
of the keys. The shards' decisions are collected on the driver (Spark's
spark.driver.maxResultSize, 1 GiB by default, bounds them).

Exit status: 0 written; 1 a task failed, or Spark or pyspark is missing; 2 bad
arguments (this script's or logscope's).
"""

import argparse
import heapq
import json
import os
import shutil
import subprocess
import sys
import tempfile

# Flags the script gives each task itself.
OWN_FLAGS = (
    "--keys",
    "--decisions",
    "--decisions-seq",
    "--format",
    "--out",
    "--force",
    "--data",
    "--emit",
)

# Per-candidate counts of the JSON report that add up over the shards (a shard
# replays only its keys' requests: the others are neither fed nor counted).
SUMMED = (
    "requests",
    "covered",
    "in_scope",
    "admitted",
    "delayed",
    "refused",
    "challenged",
    "exempt",
    "credentials_refused",
    "out_of_scope",
    "boundary",
)


def fail(msg, code=1):
    sys.stderr.write("spark_replay: %s\n" % msg.rstrip("\n"))
    sys.exit(code)


def parse_args(argv):
    if "--" not in argv:
        fail("give the replay flags after --, e.g. -- --limit 300/1m,key=ip", 2)
    at = argv.index("--")
    own, flags = argv[:at], argv[at + 1 :]
    p = argparse.ArgumentParser(
        prog="spark_replay.py",
        description="Per-key logscope replay as N Spark tasks (see the module docstring).",
    )
    p.add_argument("--logscope", required=True, help="the logscope binary, on every worker")
    p.add_argument("--data", required=True, help="the dataset directory, read by every worker")
    p.add_argument("--shards", type=int, required=True, help="N: tasks, a shard of keys each")
    p.add_argument("--out", required=True, help="the decisions CSV to write")
    p.add_argument("--master", help="Spark master URL [default: spark-submit's, else local[*]]")
    p.add_argument("--summary-json", metavar="FILE", help="also write the summary to FILE")
    a = p.parse_args(own)
    # The tasks run elsewhere (another working directory, on a cluster another machine
    # that mounts the same paths).
    a.data = os.path.abspath(a.data)
    if os.sep in a.logscope:
        a.logscope = os.path.abspath(a.logscope)
    if a.shards < 1:
        fail("--shards %d: give at least 1, e.g. --shards 8" % a.shards, 2)
    if not flags:
        fail("no replay flags after --: give the candidates, e.g. -- --limit 300/1m,key=ip", 2)
    for f in flags:
        name = f.split("=", 1)[0]
        if name in OWN_FLAGS:
            fail("%s: the script sets it for each task; leave it out of the flags" % name, 2)
    return a, flags


def task_command(logscope, data, flags, k, n, decisions):
    return [logscope, "--data", data, "replay"] + flags + [
        "--keys",
        "%d/%d" % (k, n),
        "--decisions",
        decisions,
        "--decisions-seq",
        "--format",
        "json",
    ]


def check_flags(a, flags):
    """Lets logscope check the flags against a dataset that does not exist: it refuses
    bad flags (exit 2: a site-wide candidate under --keys, a bad limit…) before it
    looks for the rows, which it then does not find (exit 1)."""
    with tempfile.TemporaryDirectory(prefix="spark-replay-check-") as tmp:
        cmd = task_command(
            a.logscope,
            os.path.join(tmp, "no-dataset"),
            flags,
            0,
            a.shards,
            os.path.join(tmp, "check.csv"),
        )
        try:
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True)
        except OSError as e:
            fail("cannot run --logscope %s: %s" % (a.logscope, e), 2)
    if p.returncode == 2:
        err = p.stderr.decode("utf-8", "replace")
        if "site-wide" in err:
            err += (
                "A site-wide candidate does not split by key: replay it in one ordered pass "
                "on one machine (logscope --data DATA replay FLAGS).\n"
            )
        fail("logscope refused the replay flags (nothing was started on Spark):\n" + err, 2)


def run_shard(logscope, data, flags, n):
    """The function of a task: replays its shard; yields (k, exit, stderr, report, rows)."""

    def run(ks):
        for k in ks:
            tmp = tempfile.mkdtemp(prefix="spark-replay-%d-" % k)
            try:
                out = os.path.join(tmp, "shard-%d.csv" % k)
                try:
                    p = subprocess.run(
                        task_command(logscope, data, flags, k, n, out),
                        stdin=subprocess.DEVNULL,
                        capture_output=True,
                    )
                except OSError as e:
                    yield (k, 127, "cannot run %s: %s" % (logscope, e), None, None)
                    continue
                err = p.stderr.decode("utf-8", "replace")
                if p.returncode != 0:
                    yield (k, p.returncode, err, None, None)
                    continue
                if not os.path.exists(out):
                    yield (k, 1, err + "logscope wrote no --decisions file\n", None, None)
                    continue
                with open(out, "rb") as f:
                    rows = f.read()
                yield (k, 0, err, p.stdout.decode("utf-8"), rows)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)

    return run


def split_shard(k, rows):
    """The header without `seq,`, and the (seq, rest of the line) of every row."""
    lines = rows.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if not lines or not lines[0].startswith(b"seq,"):
        fail("shard %d: its --decisions file has no seq column (is --logscope too old?)" % k)
    out = []
    for line in lines[1:]:
        seq, rest = line.split(b",", 1)
        out.append((int(seq), rest))
    return lines[0][len(b"seq,") :], out


def summarise(reports, n, rows):
    first = reports[0]
    for k, r in enumerate(reports):
        if r["requests"] != first["requests"]:
            fail(
                "shard %d read %d requests, shard 0 %d: did the dataset change?"
                % (k, r["requests"], first["requests"])
            )
    cands = []
    for i, c in enumerate(first["candidates"]):
        s = {"name": c["name"]}
        for f in SUMMED:
            s[f] = sum(r["candidates"][i][f] for r in reports)
        s["delay_ms_max"] = max(r["candidates"][i]["delay_ms_max"] for r in reports)
        cands.append(s)
    return {
        "shards": n,
        "requests": first["requests"],
        "first": first.get("first"),
        "last": first.get("last"),
        "decisions": rows,
        "candidates": cands,
    }


def print_text(s, out):
    print(
        "Replayed %s requests (%s .. %s) in %d shards of the keys; %s decisions written to %s"
        % (
            "{:,}".format(s["requests"]),
            s["first"],
            s["last"],
            s["shards"],
            "{:,}".format(s["decisions"]),
            out,
        )
    )
    cols = ("in_scope", "admitted", "delayed", "refused")
    width = max([len("candidate")] + [len(c["name"]) for c in s["candidates"]])
    print("  ".join(["candidate".ljust(width)] + [c.rjust(10) for c in cols]))
    for c in s["candidates"]:
        print("  ".join([c["name"].ljust(width)] + ["{:,}".format(c[f]).rjust(10) for f in cols]))


def main():
    a, flags = parse_args(sys.argv[1:])
    check_flags(a, flags)
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        fail("pyspark is not installed (%s): pip install pyspark, with Java 17" % e)
    b = SparkSession.builder.appName("logscope-replay")
    b = b.config("spark.ui.showConsoleProgress", "false")
    if a.master:
        b = b.master(a.master)
    spark = b.getOrCreate()
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    n = a.shards
    try:
        results = (
            sc.parallelize(range(n), n)
            .mapPartitions(run_shard(a.logscope, a.data, flags, n))
            .collect()
        )
    except Exception as e:  # the job itself failed (a worker lost, results too large…)
        fail("the Spark job failed: %s" % e)
    finally:
        spark.stop()
    results.sort(key=lambda r: r[0])
    failed = [r for r in results if r[1] != 0]
    if failed:
        k, code, err = failed[0][:3]
        more = " (and %d more shards)" % (len(failed) - 1) if len(failed) > 1 else ""
        fail("shard %d/%d failed%s (logscope exit %d):\n%s" % (k, n, more, code, err))
    if [r[0] for r in results] != list(range(n)):
        fail("Spark returned shards %s, not 0..%d" % ([r[0] for r in results], n - 1))
    header, streams = None, []
    for k, _, _, _, rows in results:
        h, s = split_shard(k, rows)
        if header is not None and h != header:
            fail("shard %d wrote another header than shard 0" % k)
        header = h
        streams.append(s)
    target = os.path.abspath(a.out)
    fd, tmp = tempfile.mkstemp(prefix=".spark-replay-", suffix=".tmp", dir=os.path.dirname(target))
    written, last = 0, -1
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header + b"\n")
            for seq, rest in heapq.merge(*streams):
                if seq <= last:
                    fail("two shards wrote seq %d: were the tasks given different rows?" % seq)
                last = seq
                f.write(rest + b"\n")
                written += 1
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    summary = summarise([json.loads(r[3]) for r in results], n, written)
    if a.summary_json:
        with open(a.summary_json, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
            f.write("\n")
    print_text(summary, a.out)


if __name__ == "__main__":
    main()
