"""Splits a logscope SQL twin (`logscope REPORT --sql ENGINE`) into its statements.

Each statement follows a marker line: `-- setup: NAME` (run, result ignored) or
`-- result: NAME` (a result set). Used by run_duckdb.py and run_spark.py.
"""


def statements(text):
    """[(kind, name, sql)] in order; kind is 'setup' or 'result'."""
    out = []
    cur = None
    for line in text.splitlines():
        for kind in ("setup", "result"):
            tag = "-- %s: " % kind
            if line.startswith(tag):
                if cur:
                    out.append(cur)
                cur = (kind, line[len(tag):].strip(), [])
                break
        else:
            if cur:
                cur[2].append(line)
    if cur:
        out.append(cur)
    res = []
    for kind, name, lines in out:
        sql = "\n".join(lines).strip()
        if sql.endswith(";"):
            sql = sql[:-1]
        res.append((kind, name, sql))
    return res


def plain(v):
    """A JSON-able value."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    try:
        import decimal
        if isinstance(v, decimal.Decimal):
            return float(v)
    except ImportError:
        pass
    return str(v)
