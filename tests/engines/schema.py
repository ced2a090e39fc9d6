#!/usr/bin/env python3
"""Prints the dataset's columns and their types as an engine sees them, as JSON.

  python3 tests/engines/schema.py duckdb|spark|clickhouse 'DATA/requests/*.parquet'

Output: {"engine": …, "columns": [[name, type], …]}; {"missing": "…"} when the engine
is not installed.
"""

import json
import shutil
import os
import sys


def duckdb_schema(glob):
    import duckdb

    con = duckdb.connect()
    rows = con.execute(
        "DESCRIBE SELECT * FROM read_parquet(?)", [glob]
    ).fetchall()
    return [[r[0], r[1]] for r in rows]


def clickhouse_schema(glob):
    import chdb

    res = chdb.query("DESCRIBE file('%s', Parquet)" % glob.replace("'", "\\'"), "JSONCompact")
    return [[r[0], r[1]] for r in json.loads(res.bytes())["data"]]


def spark_schema(glob):
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("logscope-schema")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        df = spark.read.parquet(glob)
        return [[f.name, f.dataType.simpleString()] for f in df.schema.fields]
    finally:
        spark.stop()


def main():
    engine, glob = sys.argv[1], sys.argv[2]
    try:
        if engine == "duckdb":
            import duckdb  # noqa: F401
        elif engine == "clickhouse":
            import chdb  # noqa: F401
        else:
            import pyspark  # noqa: F401
            if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
                raise ImportError("java")
    except ImportError as e:
        print(json.dumps({"missing": "%s (%s)" % (engine, e)}))
        return
    cols = {"duckdb": duckdb_schema, "clickhouse": clickhouse_schema}.get(engine, spark_schema)(glob)
    print(json.dumps({"engine": engine, "columns": cols}))


if __name__ == "__main__":
    main()
