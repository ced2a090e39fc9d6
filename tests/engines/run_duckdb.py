#!/usr/bin/env python3
"""Runs logscope SQL twins in DuckDB and prints their results as JSON.

  python3 tests/engines/run_duckdb.py A.sql [B.sql …]

Output: {"engine": "duckdb", "files": {"A.sql": {"NAME": [row objects …]}, …}}.
Prints {"missing": "…"} and exits 0 when the duckdb module is not installed.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from twin_script import plain, statements  # noqa: E402


def main():
    try:
        import duckdb
    except ImportError as e:
        print(json.dumps({"missing": "duckdb (%s)" % e}))
        return
    files = {}
    for path in sys.argv[1:]:
        con = duckdb.connect()
        con.execute("SET threads = 2")
        results = {}
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for kind, name, sql in statements(text):
            if kind == "setup":
                con.execute(sql)
                continue
            rel = con.execute(sql)
            cols = [c[0] for c in rel.description]
            results[name] = [dict(zip(cols, map(plain, row))) for row in rel.fetchall()]
        files[os.path.basename(path)] = results
        con.close()
    print(json.dumps({"engine": "duckdb", "files": files}))


if __name__ == "__main__":
    main()
