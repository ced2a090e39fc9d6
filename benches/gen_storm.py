#!/usr/bin/env python3
"""A crawler storm whose truth is known, for issue 42's tests and README workflow.

Writes, into OUT (default fixtures/storm):
  access.log.gz     a MediaWiki's combined log: 2026-11-03 (the baseline day: people,
                    identified editors, the genuine Googlebot) and 2026-11-04, the same
                    plus a storm from 13:00 to 15:00 UTC: a residential botnet spread
                    over bot /24s of three residential ASNs (people live in other /24s of
                    the same ASNs), a scraper in a hosting AS, and impostor Googlebots
                    from the hosting AS
  asn.tsv           iptoasn's TSV for these networks (a small synthetic database)
  hosting-asns.txt  the hosting AS (one AS number a line)
  googlebot.json    Google's published ranges' layout with the genuine bot's range
  truth.json        what was planted: networks, request counts, impostors

Seeded: the same files every run (gzip without a timestamp).
Usage: python3 benches/gen_storm.py [OUT]
"""

import gzip
import json
import os
import random
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..", "fixtures", "storm")
rng = random.Random(42)

ASNS = [
    # (first, last, asn, country, name)
    ("66.249.64.0", "66.249.95.255", 15169, "US", "GOOGLE"),
    ("100.1.0.0", "100.1.255.255", 64601, "KR", "RESI-ONE"),
    ("100.2.0.0", "100.2.255.255", 64602, "BR", "RESI-TWO"),
    ("100.3.0.0", "100.3.255.255", 64603, "IN", "RESI-THREE"),
    ("100.10.0.0", "100.10.255.255", 64610, "US", "CLOUD-HOST"),
    ("100.20.0.0", "100.20.255.255", 64620, "DE", "PEOPLE-ISP"),
    ("100.30.0.0", "100.30.255.255", 64630, "DE", "EXAMPLE-OFFICE"),
]

# Bot /24s per residential AS: contiguous runs, people elsewhere in the AS.
BOT_NETS = {
    64601: [f"100.1.{n}" for n in range(10, 28)],      # 18 /24s
    64602: [f"100.2.{n}" for n in range(128, 144)],    # 16 /24s
    64603: [f"100.3.{n}" for n in range(200, 212)],    # 12 /24s
}
PEOPLE_NETS = {
    64601: [f"100.1.{n}" for n in range(50, 60)],
    64602: [f"100.2.{n}" for n in range(40, 50)],
    64603: [f"100.3.{n}" for n in range(60, 70)],
    64620: [f"100.20.{n}" for n in range(0, 40)],
}
SCRAPER_NETS = [f"100.10.{n * 4}" for n in range(20)]  # 20 /24s of the hosting AS
GOOGLE_RANGE = "66.249.66.0/27"
GOOGLE_ADDRS = [f"66.249.66.{h}" for h in range(1, 20)]

MOBILE = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 13; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/123.0.0.0 Mobile Safari/537.36",
]
DESKTOP = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
]
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
SCRAPER = "python-requests/2.31.0"

DAY1 = 1793664000  # 2026-11-03T00:00:00Z
DAY2 = DAY1 + 86400
STORM = (DAY2 + 13 * 3600, DAY2 + 15 * 3600)

MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def clf_time(t):
    import time
    g = time.gmtime(t)
    return f"{g.tm_mday:02d}/{MONTHS[g.tm_mon - 1]}/{g.tm_year}:{g.tm_hour:02d}:{g.tm_min:02d}:{g.tm_sec:02d} +0000"


rows = []  # (t, ip, user, request, status, bytes, ua)


def title():
    return f"Page_{rng.randrange(1, 400)}"


def person_visit(ip, ua, t, user="-"):
    """A page and its assets, sometimes a heavy request (a search or a history)."""
    page = title()
    rows.append((t, ip, user, f"GET /wiki/{page} HTTP/1.1", 200, rng.randrange(8000, 40000), ua))
    for k, asset in enumerate(["/static/site.css", "/static/site.js", "/static/logo.png"]):
        status = 304 if rng.random() < 0.5 else 200
        rows.append((t + 1 + k, ip, user, f"GET {asset} HTTP/1.1", status, 0 if status == 304 else 1200, ua))
    if rng.random() < 0.08:
        rows.append((t + 5, ip, user, f"GET /index.php?search={page}&title=Special%3ASearch HTTP/1.1", 200, 15000, ua))
    if user != "-" and rng.random() < 0.3:
        rows.append((t + 7, ip, user, f"GET /index.php?title={page}&action=history HTTP/1.1", 200, 22000, ua))


people = []
for asn, nets in PEOPLE_NETS.items():
    for net in nets:
        for _ in range(2):
            people.append((f"{net}.{rng.randrange(1, 255)}", rng.choice(DESKTOP + MOBILE)))
people = sorted(set(people))
editors = [(f"100.30.1.{h}", rng.choice(DESKTOP), f"editor{h}") for h in range(1, 16)]
editors += [(f"100.20.200.{h}", rng.choice(DESKTOP), f"user{h}") for h in range(1, 11)]

# People who come only on the incident day: neither baseline nor storm ("other").
newcomers = sorted({(f"{rng.choice(PEOPLE_NETS[asn])}.{rng.randrange(1, 255)}", rng.choice(DESKTOP + MOBILE))
                    for asn in PEOPLE_NETS for _ in range(15)} - set(people))
for ip, ua in newcomers:
    for _ in range(rng.randrange(1, 3)):
        person_visit(ip, ua, DAY2 + rng.randrange(12 * 3600, 16 * 3600))

for day in (DAY1, DAY2):
    for ip, ua in people:
        for _ in range(rng.randrange(1, 4)):
            person_visit(ip, ua, day + rng.randrange(6 * 3600, 23 * 3600))
    for ip, ua, user in editors:
        for _ in range(rng.randrange(2, 6)):
            person_visit(ip, ua, day + rng.randrange(8 * 3600, 18 * 3600), user)
    for _ in range(300):
        ip = rng.choice(GOOGLE_ADDRS)
        rows.append((day + rng.randrange(0, 86400), ip, "-", f"GET /wiki/{title()} HTTP/1.1", 200, 20000, GOOGLEBOT))

# The storm.
truth_nets = {}
bot_requests = 0
for asn, nets in BOT_NETS.items():
    for net in nets:
        n = 0
        for h in rng.sample(range(1, 255), rng.randrange(3, 8)):
            ip = f"{net}.{h}"
            ua = rng.choice(MOBILE)
            for _ in range(rng.randrange(6, 16)):
                t = rng.randrange(*STORM)
                k = rng.random()
                if k < 0.5:
                    req = f"GET /index.php?search={title()}+{rng.randrange(10**6)}&title=Special%3ASearch HTTP/1.1"
                elif k < 0.8:
                    req = f"GET /index.php?title={title()}&action=history&offset={rng.randrange(10**6)} HTTP/1.1"
                else:
                    req = f"GET /index.php?title={title()}&diff={rng.randrange(10**6)}&oldid={rng.randrange(10**6)} HTTP/1.1"
                rows.append((t, ip, "-", req, 200, rng.randrange(15000, 60000), ua))
                n += 1
        truth_nets[net + ".0/24"] = {"asn": asn, "requests": n}
        bot_requests += n

scraper_requests = 0
impostors = 0
for net in SCRAPER_NETS:
    for h in rng.sample(range(1, 255), 3):
        ip = f"{net}.{h}"
        ua = GOOGLEBOT if rng.random() < 0.4 else SCRAPER
        for _ in range(rng.randrange(15, 30)):
            t = rng.randrange(*STORM)
            req = f"GET /index.php?title={title()}&action=history HTTP/1.1"
            rows.append((t, ip, "-", req, 200, 30000, ua))
            scraper_requests += 1
            impostors += ua == GOOGLEBOT

rows.sort()
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "access.log.gz"), "wb") as raw:
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        for t, ip, user, req, status, size, ua in rows:
            line = f'{ip} - {user} [{clf_time(t)}] "{req}" {status} {size} "-" "{ua}"\n'
            gz.write(line.encode())
with open(os.path.join(OUT, "asn.tsv"), "w") as f:
    for a in ASNS:
        f.write("\t".join(str(x) for x in a) + "\n")
with open(os.path.join(OUT, "hosting-asns.txt"), "w") as f:
    f.write("# hosting and cloud providers (one AS number a line)\n64610\n")
with open(os.path.join(OUT, "googlebot.json"), "w") as f:
    json.dump({"creationTime": "2026-11-01T00:00:00.000000",
               "prefixes": [{"ipv4Prefix": GOOGLE_RANGE}, {"ipv6Prefix": "2001:4860:4801:10::/64"}]}, f, indent=1)
    f.write("\n")
genuine = sum(1 for r in rows if r[6] == GOOGLEBOT and r[1].startswith("66.249.66."))
genuine_storm = sum(1 for r in rows if r[6] == GOOGLEBOT and r[1].startswith("66.249.66.") and STORM[0] <= r[0] < STORM[1])
impostors_storm = impostors
with open(os.path.join(OUT, "truth.json"), "w") as f:
    json.dump({
        "rows": len(rows),
        "storm": {"since": "2026-11-04T13:00:00Z", "until": "2026-11-04T15:00:00Z"},
        "baseline": "2026-11-03",
        "bot_nets": truth_nets,
        "bot_asns": sorted(BOT_NETS),
        "bot_requests": bot_requests,
        "scraper_asn": 64610,
        "scraper_nets": [n + ".0/24" for n in SCRAPER_NETS],
        "scraper_requests": scraper_requests,
        "googlebot": {"genuine": genuine, "genuine_in_storm": genuine_storm,
                      "impostors": impostors, "impostors_in_storm": impostors_storm},
        "planted_groups": len(BOT_NETS) + 1,
    }, f, indent=1, sort_keys=True)
    f.write("\n")
print(f"{len(rows)} rows, {bot_requests} botnet + {scraper_requests} scraper requests, {impostors} impostor Googlebots -> {OUT}")
