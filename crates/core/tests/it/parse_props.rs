//! Property tests: no input line, however hostile, makes a parser or the detector panic,
//! and every record a parser accepts has a status in range and a sane timestamp.

use logscope_core::parse::{Format, ParseOptions, detect};
use logscope_core::time::{TS_END_MS, TS_MIN_MS};
use proptest::prelude::*;

fn formats() -> Vec<Format> {
    let mut f = Format::builtins();
    f.push(Format::nginx(r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time"#).unwrap());
    f.push(Format::apache(r#"%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i" %D"#).unwrap());
    f
}

/// Lines built from log-like pieces, so that the parsers get deep into their states.
fn loglike() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"127.0.0.1 ".to_vec()),
        Just(b"::1 ".to_vec()),
        Just(b"- - ".to_vec()),
        Just(b"[10/Oct/2000:13:55:36 -0700] ".to_vec()),
        Just(b"[31/Dec/9999:23:59:59 +0000] ".to_vec()),
        Just(b"[01/Jan/0000:00:00:00 -2359] ".to_vec()),
        Just(b"[fe80::1%eth0]:443 ".to_vec()),
        Just(b"999999999999999999 ".to_vec()),
        Just(b"9223372036854.775807 ".to_vec()),
        Just(b"[2015-09-02 10:42:51.003372] ".to_vec()),
        Just(b"\"GET /a?b=c HTTP/1.1\" ".to_vec()),
        Just(b"\"\\\"\" ".to_vec()),
        Just(b"200 ".to_vec()),
        Just(b"- ".to_vec()),
        Just(b"1795968216.081 ".to_vec()),
        Just(b"0.123".to_vec()),
        Just(b"{\"ts\":1.5,\"request\":{\"client_ip\":\"1.2.3.4\"},\"status\":200}".to_vec()),
        Just(b"#Fields: date time c-ip sc-status\n".to_vec()),
        Just(vec![0xff, 0xfe, 0x90, 0x02]),
        proptest::collection::vec(any::<u8>(), 0..12),
    ];
    proptest::collection::vec(piece, 0..14).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn parsers_never_panic(line in prop_oneof![loglike(), proptest::collection::vec(any::<u8>(), 0..300)]) {
        for f in formats() {
            let mut p = f.parser(&ParseOptions::default());
            if let Ok(r) = p.parse(&line) {
                prop_assert!(r.status <= 999, "{} accepted status {}", f.name(), r.status);
                prop_assert!(
                    (TS_MIN_MS..TS_END_MS).contains(&r.ts_ms),
                    "{} accepted time {}",
                    f.name(),
                    r.ts_ms
                );
            }
        }
    }

    #[test]
    fn detection_never_panics(lines in proptest::collection::vec(loglike(), 0..20)) {
        let refs: Vec<&[u8]> = lines.iter().map(|l| l.as_slice()).collect();
        if let Some(d) = detect(&refs) {
            prop_assert!(d.matched <= refs.len());
            prop_assert!((0.0..=1.0).contains(&d.confidence));
        }
    }
}
