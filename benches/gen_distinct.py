#!/usr/bin/env python3
"""Generate a combined access log whose every line comes from a new client address
(and, with --agents, carries a new user agent), for measuring memory per distinct
value. Deterministic; standard library only.

  python3 benches/gen_distinct.py -n 10000000 -o /var/tmp/mem/distinct.log
  python3 benches/gen_distinct.py -n 2000000 --agents -o /var/tmp/mem/agents.log

Addresses: every one different (a bijective scramble of 0..n over 32 bits, from
1.0.0.0 up), so each /24 holds a few and distinct prefixes are many too. One line a
millisecond-ish over a day, paths from a small MediaWiki set (some heavy).
"""

import argparse
import sys

MON = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
PATHS = [
    "/wiki/Main_Page",
    "/wiki/Special:BlankPage",
    "/w/index.php?search=storm&title=Special:Search",
    "/w/index.php?title=Page&diff=123&oldid=122",
    "/w/index.php?title=Page&action=history",
    "/w/load.php?modules=site&only=styles",
    "/static/images/logo.png",
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, required=True)
    ap.add_argument("-o", required=True)
    ap.add_argument("--agents", action="store_true", help="a new user agent per line")
    a = ap.parse_args()
    n = a.n
    out = open(a.o, "w", buffering=1 << 22)
    day_ms = 86_400_000
    for i in range(n):
        x = (i * 2654435761) & 0xFFFFFFFF  # odd multiplier: a bijection on 32 bits
        x = 0x01000000 + x % (0xDF000000)  # 1.0.0.0 .. 223.255.255.255
        ip = f"{x >> 24}.{(x >> 16) & 255}.{(x >> 8) & 255}.{x & 255}"
        t = i * day_ms // n // 1000
        h, m, s = t // 3600, (t // 60) % 60, t % 60
        agent = (
            f"Mozilla/5.0 (Linux; Android 10; K{i}) AppleWebKit/537.36 Chrome/126.0.{i}.0 Mobile Safari/537.36"
            if a.agents
            else "Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0"
        )
        status = 503 if i % 97 == 0 else 200
        out.write(
            f'{ip} - - [25/Sep/2026:{h:02}:{m:02}:{s:02} +0000] "GET {PATHS[i % len(PATHS)]} HTTP/1.1" {status} {512 + i % 1000} "-" "{agent}"\n'
        )
    out.close()


if __name__ == "__main__":
    sys.exit(main())
