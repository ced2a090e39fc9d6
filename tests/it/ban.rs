//! Ban policies through the binary: `--limit …,algo=ban` (exact ban start and end,
//! refused counts, the challenge class in the report, JSON and `--decisions`,
//! increments, `extend`), `--fail2ban-jail` with fail2ban's own filters
//! (fixtures/limits/fail2ban/filter.d) on a hand-made log, and bad values (exit 2).

use std::path::Path;

use crate::common::*;

fn json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["replay"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--format", "json"]);
    let (out, err, code) = run_in(dir, &a);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).expect("json")
}

/// One combined line at 2026-03-01 10:MM:SS UTC.
fn line(ip: &str, mm: u32, ss: u32, path: &str, status: u16) -> String {
    format!(
        "{ip} - - [01/Mar/2026:10:{mm:02}:{ss:02} +0000] \"GET {path} HTTP/1.1\" {status} 100 \"-\" \"curl/8\"\n"
    )
}

/// A sends 4 requests 10 s apart from 10:00:00, one at 10:05:00 and one at 10:10:30;
/// B one at 10:00:15.
fn synthetic(dir: &Path) {
    let mut s = String::new();
    for (mm, ss) in [(0, 0), (0, 10)] {
        s += &line("192.0.2.1", mm, ss, "/a", 200);
    }
    s += &line("192.0.2.9", 0, 15, "/a", 200);
    for (mm, ss) in [(0, 20), (0, 30), (5, 0), (10, 30)] {
        s += &line("192.0.2.1", mm, ss, "/a", 200);
    }
    std::fs::write(dir.join("access.log"), s).unwrap();
}

#[test]
fn ban_starts_ends_and_counts_what_it_refused() {
    let t = tempfile::tempdir().unwrap();
    synthetic(t.path());
    let dec = t.path().join("d.csv");
    let v = json(
        t.path(),
        &[
            "--limit",
            "3/1m,algo=ban,ban=10m,challenge=1/1m,key=ip,name=seed",
            "--decisions",
            dec.to_str().unwrap(),
            "access.log",
        ],
    );
    let c = &v["candidates"][0];
    // A: 10:00:00 admitted, :10 and :20 challenged (2 and 3 in the minute, over 1),
    // :30 is the 4th: over 3, refused, ban until 10:10:30; 10:05 refused; 10:10:30
    // passes (the ban's end is exclusive). B: admitted.
    assert_eq!(c["refused"], 2);
    assert_eq!(c["challenged"], 2);
    assert_eq!(c["admitted"], 3);
    let b = &c["bans"];
    assert_eq!(b["bans"], 1);
    assert_eq!(b["lost"], 2);
    let ban = &b["list"][0];
    assert_eq!(ban["key"], "192.0.2.1");
    assert_eq!(ban["start"], "2026-03-01T10:00:30.000Z");
    assert_eq!(ban["end"], "2026-03-01T10:10:30.000Z");
    assert_eq!(ban["length_ms"], 600_000);
    assert_eq!(ban["lost"], 2);
    let csv = std::fs::read_to_string(&dec).unwrap();
    let words: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(5).unwrap())
        .collect();
    assert_eq!(
        words,
        [
            "admit",
            "challenge",
            "admit",
            "challenge",
            "refuse",
            "refuse",
            "admit"
        ]
    );
    // The text report names the class and lists the ban.
    let (out, err, code) = run_in(
        t.path(),
        &[
            "replay",
            "--limit",
            "3/1m,algo=ban,ban=10m,challenge=1/1m,key=ip",
            "access.log",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("challenged"), "{out}");
    assert!(out.contains("Bans — "), "{out}");
    assert!(out.contains("192.0.2.1"), "{out}");
}

#[test]
fn increments_and_extend() {
    let t = tempfile::tempdir().unwrap();
    synthetic(t.path());
    // More than 1 in a minute bans for 2 m; increments double it. A: 10:00:10 bans
    // (until 10:02:10; it, 10:00:20 and :30 lost); 10:05:00 passes, 10:10:30 is 1 in a
    // minute: passes.
    let v = json(
        t.path(),
        &[
            "--limit",
            "1/1m,algo=ban,ban=2m,increment,key=ip",
            "access.log",
        ],
    );
    let list = &v["candidates"][0]["bans"]["list"];
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["end"], "2026-03-01T10:02:10.000Z");
    assert_eq!(list[0]["lost"], 3);
    // With `reach` (fail2ban's maxretry) 2 reached bans and the known offender's
    // next request counts double: banned again at 10:05:00 for twice as long.
    let v = json(
        t.path(),
        &[
            "--limit",
            "2/1m,algo=ban,ban=2m,increment,reach,key=ip",
            "access.log",
        ],
    );
    let list = &v["candidates"][0]["bans"]["list"];
    assert_eq!(list[0]["start"], "2026-03-01T10:00:10.000Z");
    assert_eq!(list[0]["end"], "2026-03-01T10:02:10.000Z");
    assert_eq!(list[1]["start"], "2026-03-01T10:05:00.000Z");
    assert_eq!(list[1]["length_ms"], 240_000);
    assert_eq!(list[1]["nth"], 2);
    // extend: every banned request restarts the ban.
    let v = json(
        t.path(),
        &[
            "--limit",
            "1/1m,algo=ban,ban=5m,extend,key=ip",
            "access.log",
        ],
    );
    let b = &v["candidates"][0]["bans"]["list"][0];
    // Banned at 10:00:10, restarted at :20, :30 and 10:05:00 (< 10:05:30): ends 10:10:00,
    // so 10:10:30 passes.
    assert_eq!(b["end"], "2026-03-01T10:10:00.000Z");
    assert_eq!(b["extended"], 3);
    assert_eq!(b["lost"], 4);
}

#[test]
fn fail2ban_jail_with_real_filters() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::create_dir(d.join("filter.d")).unwrap();
    for f in [
        "nginx-botsearch.conf",
        "botsearch-common.conf",
        "nginx-error-common.conf",
        "apache-badbots.conf",
        "nginx-limit-req.conf",
    ] {
        std::fs::copy(
            fixture(&format!("limits/fail2ban/filter.d/{f}")),
            d.join("filter.d").join(f),
        )
        .unwrap();
    }
    for f in ["jail.local", "access.log"] {
        std::fs::copy(fixture(&format!("limits/fail2ban/{f}")), d.join(f)).unwrap();
    }
    let (out, err, code) = run_in(
        d,
        &[
            "replay",
            "--fail2ban-jail",
            "jail.local",
            "access.log",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    // The unsupported key, with file:line.
    assert!(
        err.contains("jail.local:27") && err.contains("ignorecommand"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let c = v["candidates"].as_array().unwrap();
    assert_eq!(c.len(), 3, "sshd is disabled");
    // nginx-botsearch: maxretry 2 in 1m, bantime 1h, increment (maxtime 4h); the
    // real fail2ban 1.0.2 (tests/engines/run_fail2ban.py) makes the same three bans and
    // refuses the same four requests.
    // 203.0.113.5's 404s at 10:00:10 and 10:00:20 ban it (the second passes: fail2ban
    // reads it after it was served) until 11:00:20; its requests at 10:00:30 and
    // 10:30:00 are lost. 198.51.100.7's two 404s are 115 s apart: findtime is a rate,
    // not a window — round(1 / 115 s · 60 s) = 1, +1 = 2: banned at 10:02:00, its
    // 10:02:30 request lost. Back at 11:00:25 one 404 of 203.0.113.5 counts double (a
    // known offender): banned again for 2 h, its 11:05:00 request lost. 10.9.0.3 is in
    // ignoreip.
    let a = &c[0];
    assert_eq!(a["name"], "jail nginx-botsearch");
    assert_eq!(a["refused"], 4);
    assert_eq!(a["exempt"], 3);
    let list = &a["bans"]["list"];
    assert_eq!(list.as_array().unwrap().len(), 3, "{list}");
    assert_eq!(list[0]["key"], "203.0.113.5");
    assert_eq!(list[0]["start"], "2026-03-01T10:00:20.000Z");
    assert_eq!(list[0]["end"], "2026-03-01T11:00:20.000Z");
    assert_eq!(list[0]["lost"], 2);
    assert_eq!(list[1]["key"], "198.51.100.7");
    assert_eq!(list[1]["start"], "2026-03-01T10:02:00.000Z");
    assert_eq!(list[1]["lost"], 1);
    assert_eq!(list[2]["start"], "2026-03-01T11:00:25.000Z");
    assert_eq!(list[2]["length_ms"], 7_200_000);
    assert_eq!(list[2]["nth"], 2);
    assert_eq!(list[2]["lost"], 1);
    assert_eq!(a["bans"]["counted"], 5);
    // apache-badbots: maxretry 1, bantime 48h; EmailCollector banned at its first
    // request, its second lost.
    let b = &c[1];
    assert_eq!(b["bans"]["list"][0]["key"], "192.0.2.50");
    assert_eq!(b["bans"]["list"][0]["end"], "2026-03-03T10:01:00.000Z");
    assert_eq!(b["refused"], 1);
    // nginx-limit-req reads nginx's error log: nothing in an access log counts.
    assert_eq!(c[2]["bans"]["counted"], 0);
    assert_eq!(c[2]["refused"], 0);
    assert!(
        a["bans"]["counted_by"]
            .as_str()
            .unwrap()
            .contains("rebuilt from its stored fields"),
        "{a}"
    );
}

#[test]
fn inline_failregex_and_bad_jails() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    synthetic(d);
    std::fs::write(
        d.join("jail.conf"),
        "[probe]\nenabled = true\nmaxretry = 2\nfindtime = 1m\nbantime = 1h\nfailregex = ^<HOST> - \\S+ \\[\\] \"GET /a \n",
    )
    .unwrap();
    let v = json(d, &["--fail2ban-jail", "jail.conf", "access.log"]);
    let list = &v["candidates"][0]["bans"]["list"];
    assert_eq!(list[0]["key"], "192.0.2.1");
    assert_eq!(list[0]["start"], "2026-03-01T10:00:10.000Z");
    std::fs::write(
        d.join("bad.conf"),
        "[probe]\nenabled = true\nmaxretry = lots\nfailregex = ^<HOST> \n",
    )
    .unwrap();
    let (_, err, code) = run_in(d, &["replay", "--fail2ban-jail", "bad.conf", "access.log"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("bad.conf:3") && err.contains("For example"),
        "{err}"
    );
    std::fs::write(d.join("none.conf"), "[probe]\nenabled = false\n").unwrap();
    let (_, err, code) = run_in(d, &["replay", "--fail2ban-jail", "none.conf", "access.log"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no enabled jail"), "{err}");
}

#[test]
fn bad_ban_values_exit_2_with_an_example() {
    let t = tempfile::tempdir().unwrap();
    synthetic(t.path());
    for (spec, want) in [
        ("5/1m,algo=ban,ban=soon", "ban=soon"),
        ("5/1m,algo=ban,ban=0", "a duration above 0"),
        ("5/1m,algo=ban,challenge=10/1m", "lower than the ban rate"),
        ("5/1m,algo=ban,challenge=lots", "a rate"),
        ("5/1m,ban=1h", "does not apply to sliding-log"),
        ("5/1m,algo=ban,multipliers=1:x", "multipliers"),
        ("5/1m,algo=ban,status=abc", "statuses"),
    ] {
        let (_, err, code) = run_in(t.path(), &["replay", "--limit", spec, "access.log"]);
        assert_eq!(code, 2, "{spec}: {err}");
        assert!(err.contains(want), "{spec}: {err}");
        assert!(err.contains("For example: `"), "{spec}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{spec}: {err}");
    }
}

/// fail2ban's `ignoreself` (default true) ignores this host's own addresses — those of
/// `localhost` — so a health check from 127.0.0.1 is never banned; `ignoreself = false`
/// bans it like anyone.
#[test]
fn ignoreself_spares_the_loopback_addresses() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let mut s = String::new();
    for ip in ["127.0.0.1", "::1", "198.51.100.1"] {
        for ss in [0, 10, 20] {
            s += &line(ip, 0, ss, "/x", 404);
        }
    }
    std::fs::write(d.join("access.log"), s).unwrap();
    for (setting, banned) in [("", 1), ("ignoreself = false\n", 3)] {
        std::fs::write(
            d.join("jail.local"),
            format!("[probe]\nenabled = true\n{setting}maxretry = 2\nfindtime = 1m\nbantime = 1h\nfailregex = ^<HOST> \\S+ \\S+ \\[\\] \"GET /x \n"),
        )
        .unwrap();
        let v = json(d, &["--fail2ban-jail", "jail.local", "access.log"]);
        let list = v["candidates"][0]["bans"]["list"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(list.len(), banned, "{setting:?}: {list:?}");
        assert!(list.iter().any(|b| b["key"] == "198.51.100.1"));
    }
}
