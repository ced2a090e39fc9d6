#!/usr/bin/env python3
"""The DuckDB twin of a logscope report: the same question over the same Parquet files.

  python3 benches/duckdb_twin.py DATA heavy|concentration|agents|availability|top|timeline

Prints the result rows (so the work cannot be skipped); runs with 2 threads. The SQL is
the one quoted in BENCHMARKS.md. `prefix` is the /24 (IPv4) or /48 (IPv6) computed from
the dataset's ip_hi/ip_lo columns; `heavy` is the MediaWiki rule set in SQL.
"""

import sys

import duckdb

PREFIX = """CASE WHEN ip_hi = 0 AND (ip_lo >> 32) = 65535
             THEN ip_lo & -256 ELSE ip_hi & -65536 END"""
HEAVY = """(path IN ('/index.php', '/w/index.php')
            AND regexp_matches(coalesce(query, ''), '(^|&)(search|diff|oldid)=|(^|&)action=(history|info)(&|$)'))
           OR contains(path, 'Special:Search')"""

SQL = {
    "heavy": f"""
        SELECT time_bucket(INTERVAL 1 hour, ts) AS bucket,
               count(*) AS requests,
               count(*) FILTER (WHERE h) AS heavy,
               count(DISTINCT client) FILTER (WHERE h) AS ips,
               count(DISTINCT p) FILTER (WHERE h) AS prefixes
        FROM (SELECT ts, client, {PREFIX} AS p, {HEAVY} AS h FROM t)
        GROUP BY bucket ORDER BY bucket""",
    "concentration": f"""
        WITH g AS (SELECT {PREFIX} AS p, count(*) AS n, count(DISTINCT client) AS ips
                   FROM t GROUP BY p)
        SELECT p, n, n / sum(n) OVER () AS share, ips, (SELECT count(*) FROM g) AS groups
        FROM g ORDER BY n DESC, p LIMIT 20""",
    "agents": """
        SELECT user_agent, count(*) AS n FROM t GROUP BY user_agent ORDER BY n DESC""",
    "availability": """
        SELECT strftime(ts, '%Y-%m') AS month, count(*) AS requests,
               count(*) FILTER (WHERE status < 500) AS ok
        FROM t GROUP BY month ORDER BY month""",
    # `top --by path`: requests, bytes, clients (a HyperLogLog estimate in both), errors,
    # first and last seen.
    "top": """
        SELECT path, count(*) AS n, sum(coalesce(bytes, 0)) AS bytes,
               approx_count_distinct(client) AS clients,
               count(*) FILTER (WHERE status >= 400) AS errors,
               min(ts) AS first_seen, max(ts) AS last_seen
        FROM t GROUP BY path ORDER BY n DESC, path LIMIT 20""",
    # `timeline --client 20.171.0.0/16 --by 1d`: the network's rows per day (the report's
    # per-day table; its path, status, agent and address breakdowns are not in the twin).
    "timeline": f"""
        SELECT time_bucket(INTERVAL 1 day, ts) AS day, count(*) AS n,
               count(*) FILTER (WHERE status >= 400) AS errors,
               sum(coalesce(bytes, 0)) AS bytes, count(DISTINCT client) AS addresses
        FROM t
        WHERE ip_hi = 0 AND ip_lo BETWEEN {(0xFFFF << 32) | (20 << 24) | (171 << 16)}
                                      AND {(0xFFFF << 32) | (20 << 24) | (171 << 16) | 0xFFFF}
        GROUP BY day ORDER BY day""",
}


def main():
    data, name = sys.argv[1], sys.argv[2]
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{data}/requests/*.parquet')")
    rows = con.sql(SQL[name]).fetchall()
    print(len(rows), rows[:3])


if __name__ == "__main__":
    main()
