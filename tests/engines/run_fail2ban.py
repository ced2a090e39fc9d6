#!/usr/bin/env python3
"""Replays a web access log through the REAL fail2ban (Debian 1.0.2), offline.

  python3 tests/engines/run_fail2ban.py --config DIR --jail NAME LOGFILE

Ground truth for `logscope replay --fail2ban-jail`. Prints one JSON object:
  {"jail": NAME, "bans": [{"ip", "start", "end", "nth"}, ...],
   "refused": [0-based line indices], "lines": N}
start = ticket.getTime(); end = ticket.getEndOfBanTime(jail bantime) (null if
permanent); nth = ticket.getBanCount(); all read once the run is over, i.e.
after the observer's banFound (bantime.increment applied). Bans in the order
they happened. Exit 2 on bad usage, 3 if fail2ban is not importable, 1 if
fail2ban rejects the configuration.

Driving model (decisions, keep them exactly):
1. DIR is read by fail2ban's own JailsReader(basedir=DIR) (jail.conf/.local,
   jail.d, filter.d with [INCLUDES], %(x)s and <HOST>); only jail NAME is read.
   Its command stream (JailsReader.convert) goes through fail2ban's
   Transmitter into a fail2ban Server, minus: actions (addaction/action/
   delaction), logpath/journal commands, "start", and bantime.rndtime (no
   randomness). Backend forced to "polling"; no thread is ever started. The
   ban database is a real Fail2BanDb in ":memory:" (fail2ban disables
   bantime.increment without one); its purge age comes from DIR's
   fail2ban.conf/.local via Fail2banReader (default 1d, as in Debian).
2. Observer: a real ObserverThread (never started) behind a proxy installed as
   Observers.Main whose add(name, *args) runs the observer method at once
   (failureFound, banFound). Its add_timer (prolong: only re-runs firewall
   actions) is a no-op. jail.isAlive() is patched to True.
3. Clock: MyTime only (simulated). Each line's time t is its combined-log
   stamp "[10/Oct/2000:13:55:36 -0700]" (a line without one keeps the
   previous t; lines before the first stamped line use the first stamp t0).
   Lines are fed as the requests arrived: stable-sorted by t (--order time,
   the default; --order file feeds them as written - a live daemon tailing an
   out-of-order file sees file order, a timing-dependent case). The daemon
   "starts" at the earliest t, t0. Before line i:
   (a) hourly DB purge from the start: while next_purge <= t (first one at
       t0+3600): MyTime=next_purge, db.purge(), next_purge += 3600;
   (b) MyTime=t, banManager.unBanList(t) (fail2ban unbans once now > end);
   (c) if the line's first whitespace-separated token is an address in the
       jail's ban list, the firewall dropped the request: i goes to
       "refused" and fail2ban never sees the line;
   (d) otherwise filter.processLineAndAdd(line) (fail2ban re-parses the date
       itself), then drain: while the jail queue holds tickets, run the
       Actions' own ban check (Actions._Actions__checkBan, as fail2ban's test
       suite does). So failureFound runs before the banFound it may lead to,
       as in a daemon that keeps up.
   The filter's cleanup (Filter.performSvc) therefore runs only where
   processLineAndAdd calls it (every 100th processed line - refused lines
   are not processed - and after a ban, at most every 5 s of MyTime); a live
   daemon's idle-loop ticks are wall-clock driven and not modelled.
4. Deterministic: no wall clock, no rndtime, TZ forced to UTC (zone-less
   dates would otherwise depend on the machine), and fail2ban's DateDetector
   (which stamps template use with time.time() to order its templates) reads
   MyTime instead. Lines are split on b"\\n" and decoded with the jail's
   logencoding by fail2ban's FileContainer.decode_line; an unterminated last
   line counts as a line. Left to the config: ignoreself (default true: this
   machine's own addresses are ignored) and usedns (a <HOST> that is a name
   would be resolved); set ignoreself = false and keep logs to IP addresses.
If python3 does not see fail2ban (e.g. a pyenv interpreter), Debian's
/usr/lib/python3/dist-packages is appended to sys.path before giving up.
"""

import json
import logging
import os
import re
import sys
import time
import calendar
import argparse

DEBIAN_DIST = "/usr/lib/python3/dist-packages"


def die(code, msg):
    sys.stderr.write("run_fail2ban.py: %s\n" % msg)
    sys.exit(code)


class Args(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        die(2, "usage: --config DIR --jail NAME LOGFILE (%s)" % message)


def import_fail2ban():
    """Imports fail2ban; falls back to Debian's dist-packages when python3 is
    another interpreter (e.g. pyenv) that does not see the system package."""
    try:
        import fail2ban  # noqa: F401
    except ImportError:
        if os.path.isdir(os.path.join(DEBIAN_DIST, "fail2ban")):
            sys.path.append(DEBIAN_DIST)
    try:
        from fail2ban.client.jailsreader import JailsReader
        from fail2ban.client.fail2banreader import Fail2banReader
        from fail2ban.server.server import Server
        from fail2ban.server.transmitter import Transmitter
        from fail2ban.server.observer import Observers, ObserverThread
        from fail2ban.server.mytime import MyTime
        from fail2ban.server.ipdns import IPAddr
        from fail2ban.server.filter import FileContainer
    except ImportError as e:
        die(3, "cannot import fail2ban (apt-get install fail2ban): %s" % e)
    return dict(JailsReader=JailsReader, Fail2banReader=Fail2banReader,
                Server=Server, Transmitter=Transmitter, Observers=Observers,
                ObserverThread=ObserverThread, MyTime=MyTime, IPAddr=IPAddr,
                FileContainer=FileContainer)


# Combined-log time stamp: [10/Oct/2000:13:55:36 -0700]
STAMP = re.compile(rb"\[(\d{2})/([A-Za-z]{3})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})\]")
MONTHS = {m: i + 1 for i, m in enumerate(
    [b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov", b"dec"])}


def stamp_time(raw):
    """Epoch seconds of the first combined-log stamp in the raw line, or None."""
    m = STAMP.search(raw)
    if not m or m.group(2).lower() not in MONTHS:
        return None
    d, mon, y, hh, mm, ss, sign, zh, zm = m.groups()
    t = calendar.timegm((int(y), MONTHS[mon.lower()], int(d), int(hh), int(mm), int(ss), 0, 0, 0))
    off = (int(zh) * 60 + int(zm)) * 60
    return t - off if sign == b"+" else t + off


# Commands of the reader's stream that are not replayed (see docstring, 1.)
DROPPED = {"addaction", "delaction", "action", "addlogpath", "dellogpath",
           "addjournalmatch", "deljournalmatch", "bantime.rndtime", "idle"}


def build_jail(f2b, cfg, name):
    """Reads DIR with fail2ban's readers and builds jail NAME in a Server."""
    reader = f2b["JailsReader"](basedir=cfg)
    if not reader.read():
        die(2, "no readable jail.conf/jail.local in %s" % cfg)
    if name not in reader.sections():
        die(2, "jail %r not found in %s" % (name, cfg))
    ok = reader.getOptions(section=name)
    if not any(j.getName() == name for j in reader.jails):
        die(2, "jail %r is not enabled in %s" % (name, cfg))
    if not ok:
        die(1, "fail2ban rejected the configuration of jail %r" % name)
    stream = reader.convert(allow_no_files=True)
    # dbpurgeage from DIR's fail2ban.conf/.local, else Fail2BanDb's 1d
    purge = []
    if any(os.path.exists(os.path.join(cfg, f)) for f in ("fail2ban.conf", "fail2ban.local")):
        mreader = f2b["Fail2banReader"](basedir=cfg)
        mreader.read()
        mreader.getOptions()
        purge = [c for c in mreader.convert() if c[:2] == ["set", "dbpurgeage"]]

    server = f2b["Server"]()
    tr = f2b["Transmitter"](server)

    def send(cmd):
        rc, ret = tr.proceed(cmd)
        if rc != 0:
            die(1, "fail2ban rejected %r: %s" % (cmd, ret))

    send(["set", "dbfile", ":memory:"])  # before "add": the jail takes the db
    for cmd in purge:
        send(cmd)
    for cmd in stream:
        if cmd[0] == "config-error":
            die(1, cmd[1])
        if cmd[0] == "start" or (cmd[0] in ("set", "multi-set") and cmd[2] in DROPPED):
            continue
        if cmd[0] == "add":
            cmd = ["add", cmd[1], "polling"]
        send(cmd)
    jail = server._Server__jails[name]  # no public getter for the Jail object
    jail.isAlive = lambda: True  # observer checks; no thread runs
    return server, jail


class SyncObserver(object):
    """Observers.Main stand-in: add() runs the real observer method now."""

    def __init__(self, real, on_ban):
        self.real = real
        self.on_ban = on_ban
        real.add_timer = lambda *a, **k: None  # prolongBan: actions only

    def add(self, event, *args):
        getattr(self.real, event)(*args)
        if event == "banFound":
            self.on_ban(args[0])

    def __getattr__(self, attr):  # db_set, ...
        return getattr(self.real, attr)


def num(x):
    return int(x) if float(x).is_integer() else x


def main():
    ap = Args(add_help=True, description="Replay a log through real fail2ban")
    ap.add_argument("--config", required=True, metavar="DIR")
    ap.add_argument("--jail", required=True, metavar="NAME")
    ap.add_argument("--order", choices=("time", "file"), default="time",
                    help="feed lines as the requests arrived (stable by stamp, default) "
                         "or in file order")
    ap.add_argument("logfile", metavar="LOGFILE")
    a = ap.parse_args()
    if not os.path.isdir(a.config):
        die(2, "--config %s is not a directory" % a.config)
    if not os.path.isfile(a.logfile):
        die(2, "LOGFILE %s not found" % a.logfile)

    os.environ["TZ"] = "UTC"
    time.tzset()
    f2b = import_fail2ban()
    log = logging.getLogger("fail2ban")
    log.setLevel(os.environ.get("RUN_FAIL2BAN_LOGLEVEL", "ERROR").upper())
    log.addHandler(logging.StreamHandler(sys.stderr))
    log.propagate = False
    MyTime = f2b["MyTime"]
    # DateDetector stamps template use with time.time() (it only orders the
    # templates it tries); give it the simulated clock so runs repeat exactly.
    import fail2ban.server.datedetector as datedetector
    datedetector.time = type("SimClock", (), {"time": staticmethod(MyTime.time)})

    with open(a.logfile, "rb") as fh:
        raw = fh.read().split(b"\n")
    if raw and raw[-1] == b"":
        raw.pop()  # trailing newline ends the last line, it is not a line
    times = [stamp_time(r) for r in raw]
    t0 = next((t for t in times if t is not None), 0)
    MyTime.setTime(t0)  # before anything reads the clock

    bans = []
    real_obs = f2b["ObserverThread"]()
    f2b["Observers"].Main = SyncObserver(real_obs, bans.append)
    server, jail = build_jail(f2b, a.config, a.jail)
    flt, actions = jail.filter, jail.actions
    bm, db = actions.banManager, jail.database
    enc = flt.getLogEncoding()
    decode = f2b["FileContainer"].decode_line
    IPAddr = f2b["IPAddr"]

    # A line without a stamp keeps the previous line's time.
    eff, t = [], t0
    for x in times:
        t = x if x is not None else t
        eff.append(t)
    order = range(len(raw))
    if a.order == "time":
        order = sorted(order, key=lambda i: (eff[i], i))
    t0 = min(eff, default=t0)

    refused = []
    next_purge = t0 + 3600
    for i in order:
        rawline = raw[i]
        t = eff[i]
        # (a) hourly purge of the ban database (observer's DB_PURGE timer)
        while next_purge <= t:
            MyTime.setTime(next_purge)
            db.purge()
            next_purge += 3600
        # (b) the clock, then the actions' unban of what timed out
        MyTime.setTime(t)
        bm.unBanList(MyTime.time())
        line = decode(a.logfile, enc, rawline).rstrip("\r\n")
        # (c) a banned client's request never reaches the log
        if bm.size():
            tok = line.split(None, 1)
            if tok and IPAddr(tok[0]) in bm.getBanList():
                refused.append(i)
                continue
        # (d) fail2ban's filter, then its actions' ban check until drained
        flt.processLineAndAdd(line)
        while jail.hasFailTickets:
            actions._Actions__checkBan()

    default_bt = bm.getBanTime()
    out = []
    for tk in bans:
        permanent = tk.getBanTime(default_bt) == -1
        out.append({"ip": str(tk.getID()), "start": num(tk.getTime()),
                    "end": None if permanent else num(tk.getEndOfBanTime(default_bt)),
                    "nth": tk.getBanCount()})
    refused.sort()
    print(json.dumps({"jail": a.jail, "bans": out, "refused": refused, "lines": len(raw)}))
    f2b["Observers"].Main = None


if __name__ == "__main__":
    main()
