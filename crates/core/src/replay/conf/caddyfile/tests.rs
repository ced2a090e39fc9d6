//! Tests of the Caddyfile reader: zones, keys, rewrites, errors, a real Caddyfile.

use std::path::Path;

use super::*;
use crate::replay::key::KeySpec;
use crate::replay::{Decision, Replay, Request};

fn no_env(_: &str) -> Option<String> {
    None
}

fn conf(text: &str) -> CaddyConf {
    CaddyConf::from_str(text, Path::new("Caddyfile"), &no_env).unwrap_or_else(|e| panic!("{e}"))
}

fn req<'a>(t: i64, ip: &str, path: &'a [u8], query: Option<&'a [u8]>) -> Request<'a> {
    Request {
        arrival_ms: t,
        ip: Some(ip.parse().unwrap()),
        method: Some(b"GET"),
        path: Some(path),
        query,
        ..Request::default()
    }
}

#[test]
fn zones_keys_and_rewrites() {
    let c = conf(
        "{\n\torder respond before rewrite\n}\n:80 {\n\trewrite /w/* /index.php\n\trespond /health 200\n\trate_limit {\n\t\tzone dyn {\n\t\t\tmatch {\n\t\t\t\tpath /index.php*\n\t\t\t}\n\t\t\tkey {remote_host}\n\t\t\tipv4_prefix 24\n\t\t\tevents {$EV:2}\n\t\t\twindow 1m\n\t\t}\n\t\tdistributed\n\t}\n}\n",
    );
    let p = &c.policy;
    assert_eq!(p.zones().len(), 1);
    assert_eq!(p.zones()[0].spec().key, KeySpec::Prefix { v4: 24, v6: 128 });
    assert!(
        c.notes.iter().any(|n| n.message.contains("distributed")),
        "{:?}",
        c.notes
    );
    let mut r = Replay::new(vec![c.policy]);
    // /w/Foo is rewritten to /index.php: counted; the third from the /24 is refused.
    let d: Vec<Decision> = (0..3)
        .map(|i| r.decide(&req(i, &format!("198.51.100.{i}"), b"/w/Foo", None))[0].decision)
        .collect();
    assert_eq!(d, [Decision::Admit, Decision::Admit, Decision::Refuse]);
    assert_eq!(
        r.decide(&req(5, "198.51.100.9", b"/other", None))[0].decision,
        Decision::OutOfScope
    );
}

#[test]
fn errors_have_lines() {
    let bad = [
        (
            ":80 {\n\trate_limit {\n\t\tzone a {\n\t\t\tevents 3\n\t\t}\n\t}\n}\n",
            3,
            "both a window",
        ),
        (
            ":80 {\n\trate_limit {\n\t\tzone a {\n\t\t\tevents x\n\t\t}\n\t}\n}\n",
            4,
            "invalid max events",
        ),
        (
            ":80 {\n\trate_limit {\n\t\tfoo\n\t}\n}\n",
            3,
            "unrecognized",
        ),
        (":80 {\n\trespond 200\n}\n", 1, "no rate_limit"),
        (":80 {\n\trate_limit {\n", 2, "not closed"),
    ];
    for (text, line, want) in bad {
        let e = CaddyConf::from_str(text, Path::new("C"), &no_env)
            .err()
            .expect(text);
        assert!(e.message.contains(want), "{text:?}: {e}");
        assert_eq!(e.line, line, "{text:?}: {e}");
    }
}

mod femiwiki {
    use super::*;

    #[test]
    fn femiwiki_caddyfile_reads() {
        let path = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/limits/caddy/femiwiki-caddy.Caddyfile"
        ));
        let c = CaddyConf::read(path, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = c.policy.zones().iter().map(|z| z.name()).collect();
        assert_eq!(names.len(), 9, "{names:?}");
        assert!(!names.contains(&"botlike_expensive"));
        let msgs: Vec<String> = c
            .notes
            .iter()
            .map(|n| format!("{}: {}", n.at, n.message))
            .collect();
        let all = msgs.join("\n");
        for want in [
            "zone botlike_expensive left out",
            "CEL is not evaluated",
            "mwcache runs before rate_limit",
            "uri @special_title query -oldid",
            "respond runs before rate_limit but its matcher cannot be evaluated",
            "REDACTED",
            "{$BLOCKED_CIDR} is not set",
        ] {
            assert!(all.contains(want), "missing {want:?} in\n{all}");
        }
        let _ = c.policy.describe();
    }
}
