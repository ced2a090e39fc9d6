#!/usr/bin/env python3
"""Runs logscope SQL twins in one local Spark session and prints their results as JSON.

  python3 tests/engines/run_spark.py A.sql [B.sql …]

One session for every file (Spark starts in ~10 s on an idle machine). Output:
{"engine": "spark", "files": {"A.sql": {"NAME": [row objects …]}, …}}.
Prints {"missing": "…"} and exits 0 when pyspark or Java is not installed.
"""

import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from twin_script import plain, statements  # noqa: E402


def main():
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        print(json.dumps({"missing": "pyspark (%s)" % e}))
        return
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        print(json.dumps({"missing": "java (Spark needs a JRE 17)"}))
        return
    # The twins' intermediate tables (database logscope_twin) live in a temporary
    # directory, not in the current one.
    warehouse = tempfile.mkdtemp(prefix="logscope-spark-")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("logscope-twins")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.warehouse.dir", warehouse)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    files = {}
    try:
        for path in sys.argv[1:]:
            results = {}
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for kind, name, sql in statements(text):
                if kind == "setup":
                    spark.sql(sql)
                    continue
                df = spark.sql(sql)
                cols = df.columns
                results[name] = [
                    dict(zip(cols, [plain(v) for v in row])) for row in df.collect()
                ]
            files[os.path.basename(path)] = results
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)
    print(json.dumps({"engine": "spark", "files": files}))


if __name__ == "__main__":
    main()
