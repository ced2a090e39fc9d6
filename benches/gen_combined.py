#!/usr/bin/env python3
"""Generate a realistic Apache/nginx *combined* access log of a MediaWiki site, for
benchmarks. Deterministic for a given --seed; standard library only.

  python3 benches/gen_combined.py -n 5000000 -o /var/tmp/access.log

Traffic: Poisson arrivals over --days days with a diurnal curve; a heavy-tailed pool of
clients (IPv4 /24s with Zipf weights, ~8 % of humans on IPv6 /48s); crawlers on their
usual networks; MediaWiki URLs (articles, history, diff/oldid, search, load.php, api.php,
static files, scanner probes); statuses, sizes and user agents in realistic shares.
"""

import argparse
import math
import random

MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

DESKTOP = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:127.0) Gecko/20100101 Firefox/127.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36",
]
MOBILE = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
]
BOTS = [
    ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "66.249.66"),
    ("Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "66.249.68"),
    ("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", "157.55.39"),
    ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)", "20.171.207"),
    ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)", "52.230.152"),
    ("Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", "54.36.148"),
]
SCRIPTS = ["curl/8.5.0", "python-requests/2.32.3", "Wget/1.21.4", "Go-http-client/1.1", "python-httpx/0.27.0", "-"]
REFERERS = ["-", "-", "-", "https://www.google.com/", "https://duckduckgo.com/", "https://t.co/x"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--lines", type=int, default=1_000_000)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--days", type=float, default=3.0)
    ap.add_argument("--start", type=int, default=1717200000, help="epoch seconds of the first line (default 2024-06-01)")
    args = ap.parse_args()
    rnd = random.Random(args.seed)

    titles = [f"Title_{i}" for i in range(20000)] + ["Main_Page", "Special:Random", "서울", "Überblick"]
    title_w = [1.0 / (i + 1) ** 1.1 for i in range(len(titles))]
    cum_titles = list(accumulate(title_w))

    # Client pool: (ip, ua, kind)
    clients = []
    v4_24s = [f"{rnd.randint(1, 223)}.{rnd.randint(0, 255)}.{rnd.randint(0, 255)}" for _ in range(30000)]
    v6_48s = [f"2a0{rnd.randint(0, 9)}:{rnd.randint(0, 0xffff):x}:{rnd.randint(0, 0xffff):x}" for _ in range(4000)]
    net_w = [1.0 / (i + 1) ** 0.9 for i in range(len(v4_24s))]
    cum_nets = list(accumulate(net_w))
    for _ in range(120000):
        r = rnd.random()
        if r < 0.08:
            ip = f"{rnd.choice(v6_48s)}:{rnd.randint(0, 0xffff):x}::{rnd.randint(1, 0xffff):x}"
        else:
            ip = f"{pick(rnd, v4_24s, cum_nets)}.{rnd.randint(1, 254)}"
        ua = rnd.choice(MOBILE) if rnd.random() < 0.45 else rnd.choice(DESKTOP)
        if rnd.random() < 0.03:
            ua = rnd.choice(SCRIPTS)
        clients.append((ip, ua, "human"))
    for ua, net in BOTS:
        for k in range(20):
            clients.append((f"{net}.{rnd.randint(1, 254)}", ua, "bot"))
    weights = [1.0 / (i + 1) ** 1.05 for i in range(len(clients))]
    rnd.shuffle(weights)
    # Bots are busy.
    for i in range(120000, len(clients)):
        weights[i] = 0.05 + rnd.random() * 0.05
    cum_clients = list(accumulate(weights))

    span = args.days * 86400
    rate = args.lines / span
    t = float(args.start)
    with open(args.out, "w", encoding="utf-8", newline="\n") as out:
        buf = []
        for n in range(args.lines):
            hour = (t / 3600) % 24
            diurnal = 1.0 + 0.6 * math.sin((hour - 9) / 24 * 2 * math.pi)
            t += rnd.expovariate(rate * diurnal)
            ip, ua, kind = pick(rnd, clients, cum_clients)
            method, url, status, size = request(rnd, titles, cum_titles, kind)
            ref = rnd.choice(REFERERS)
            buf.append(f'{ip} - - [{clf_time(int(t))}] "{method} {url} HTTP/1.1" {status} {size} "{ref}" "{ua}"\n')
            if len(buf) >= 10000:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))


def accumulate(ws):
    s = 0.0
    for w in ws:
        s += w
        yield s


def pick(rnd, items, cum):
    import bisect
    x = rnd.random() * cum[-1]
    return items[min(bisect.bisect_left(cum, x), len(items) - 1)]


def request(rnd, titles, cum_titles, kind):
    title = pick(rnd, titles, cum_titles)
    r = rnd.random()
    if r < 0.40:
        url, size = f"/wiki/{title}", int(rnd.lognormvariate(10, 0.8))
    elif r < 0.52:
        url, size = f"/w/index.php?title={title}&action=history", int(rnd.lognormvariate(10.5, 0.6))
    elif r < 0.64:
        a = rnd.randint(1000000, 9999999)
        url, size = f"/w/index.php?title={title}&diff={a + rnd.randint(1, 500)}&oldid={a}", int(rnd.lognormvariate(10.2, 0.7))
    elif r < 0.67:
        url, size = f"/w/index.php?title={title}&oldid={rnd.randint(1000000, 9999999)}", int(rnd.lognormvariate(10, 0.7))
    elif r < 0.70:
        url, size = f"/w/index.php?search={title.replace('_', '+')}&title=Special%3ASearch&go=Go", int(rnd.lognormvariate(9.5, 0.5))
    elif r < 0.82:
        url, size = "/w/load.php?lang=en&modules=startup&only=scripts&skin=vector", int(rnd.lognormvariate(9, 0.4))
    elif r < 0.90:
        url, size = f"/w/api.php?action=query&format=json&titles={title}", int(rnd.lognormvariate(7, 1))
    elif r < 0.97:
        url, size = f"/w/resources/assets/poweredby_mediawiki_{rnd.choice([88, 132, 176])}x31.png", rnd.randint(2000, 9000)
    elif r < 0.99:
        url, size = "/robots.txt", 1024
    else:
        url, size = rnd.choice(["/wp-login.php", "/.env", "/xmlrpc.php"]), 200
    method = "GET" if rnd.random() < 0.97 else rnd.choice(["POST", "HEAD"])
    s = rnd.random()
    status = 200
    if kind == "bot" and s < 0.08:
        status = 429
    elif s < 0.06:
        status, size = 304, "-"
    elif s < 0.09:
        status = 404
    elif s < 0.11:
        status = 301
    elif s < 0.115:
        status = 503
    elif s < 0.118:
        status = 500
    if method == "HEAD":
        size = "-"
    return method, url, status, size


def clf_time(t):
    import time
    g = time.gmtime(t)
    return f"{g.tm_mday:02d}/{MONTHS[g.tm_mon - 1]}/{g.tm_year}:{g.tm_hour:02d}:{g.tm_min:02d}:{g.tm_sec:02d} +0000"


if __name__ == "__main__":
    main()
