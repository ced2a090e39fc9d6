#!/usr/bin/env python3
"""Runs logscope SQL twins in ClickHouse's embedded engine (chdb) and prints their results
as JSON.

  python3 tests/engines/run_clickhouse.py A.sql [B.sql …]

One chdb session per file, 2 threads. Output:
{"engine": "clickhouse", "files": {"A.sql": {"NAME": [row objects …]}, …}}.
Prints {"missing": "…"} and exits 0 when the chdb module is not installed.
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
        from chdb import session
    except ImportError as e:
        print(json.dumps({"missing": "chdb (%s)" % e}))
        return
    files = {}
    for path in sys.argv[1:]:
        home = tempfile.mkdtemp(prefix="logscope-chdb-")
        try:
            s = session.Session(home)
            results = {}
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for kind, name, sql in statements(text):
                if kind == "setup":
                    s.query(sql)
                    continue
                res = s.query(
                    sql + " SETTINGS max_threads = 2, output_format_json_quote_64bit_integers = 0,"
                    " output_format_json_quote_denormals = 1",
                    "JSONCompact",
                )
                doc = json.loads(res.bytes() or b'{"meta": [], "data": []}')
                cols = [m["name"] for m in doc["meta"]]
                results[name] = [dict(zip(cols, map(plain, row))) for row in doc["data"]]
            files[os.path.basename(path)] = results
            s.close()
        finally:
            shutil.rmtree(home, ignore_errors=True)
    print(json.dumps({"engine": "clickhouse", "files": files}))


if __name__ == "__main__":
    main()
