//! Unit tests of the reader: where inputs end (held back, truncated, corrupt, shrunk),
//! resuming with `skip_to`, line terminators, long lines and detection samples.

use std::io::Write;
use std::path::Path;

use super::*;

/// Every line delivered: (number, bytes) for lines, (number, head) for long lines.
fn lines(r: &mut Reader) -> (Vec<(u64, Vec<u8>)>, Option<SourceError>) {
    let mut out = Vec::new();
    for ev in r.by_ref() {
        match ev {
            Ok(Event::Chunk(c)) => {
                let t = c.terminator;
                let body = c.strip_suffix(&[t]).unwrap_or(&c);
                for (i, l) in body.split(|&b| b == t).enumerate() {
                    out.push((c.first_line + i as u64, l.to_vec()));
                }
            }
            Ok(Event::LongLine { line, head, .. }) => out.push((line, head)),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

fn numbered(n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 1..=n {
        writeln!(v, "line {i:05} {}", "x".repeat(i % 37)).unwrap();
    }
    v
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zst(data: &[u8], checksum: bool) -> Vec<u8> {
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    e.include_checksum(checksum).unwrap();
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn write(dir: &Path, name: &str, data: &[u8]) -> Input {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    Input::Path(p)
}

fn small() -> ReadOptions {
    ReadOptions {
        chunk_size: 64,
        window: 4096,
        max_line: 1000,
        ..ReadOptions::default()
    }
}

fn damage(e: &Option<SourceError>) -> &Damage {
    e.as_ref()
        .and_then(SourceError::damage)
        .unwrap_or_else(|| panic!("expected damage, got {e:?}"))
}

#[test]
fn truncated_gzip_keeps_the_cut_line_for_the_complete_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = numbered(3000);
    let z = gz(&data);
    let cut = write(dir.path(), "cut.gz", &z[..z.len() / 2]);
    let mut r = Reader::open(&cut, small()).unwrap();
    let (got, err) = lines(&mut r);
    let d = damage(&err);
    assert_eq!(d.kind, DamageKind::Truncated, "{d:?}");
    assert_eq!(d.unit_start, Some(0));
    // Only complete lines, and the position is right after the last one.
    let n = got.len() as u64;
    assert!(n > 100 && n < 3000);
    assert_eq!(got.last().unwrap().0, n);
    let end = r.content_pos();
    assert_eq!(end as usize, data[..end as usize].len());
    assert_eq!(data[end as usize - 1], b'\n');
    assert_eq!(
        memchr::memchr_iter(b'\n', &data[..end as usize]).count() as u64,
        n
    );
    assert!(r.held_back() > 0);
    assert_eq!(d.content_end, end);
    assert_eq!(d.lines_end, n);
    assert!(err.unwrap().to_string().contains("truncated gzip stream"));
    // The complete file, resumed there, continues with the very next line.
    let full = write(dir.path(), "full.gz", &z);
    let mut r = Reader::open(&full, small()).unwrap();
    r.skip_to(end, n);
    let (rest, err) = lines(&mut r);
    assert!(err.is_none());
    assert_eq!(rest[0].0, n + 1);
    assert_eq!(
        rest[0].1,
        format!("line {:05} {}", n + 1, "x".repeat((n as usize + 1) % 37)).into_bytes()
    );
    assert_eq!(rest.last().unwrap().0, 3000);
    assert_eq!(r.content_pos(), data.len() as u64);
}

#[test]
fn plain_file_holds_back_an_unterminated_last_line_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = numbered(50);
    data.extend_from_slice(b"line 00051 partial");
    let f = write(dir.path(), "live.log", &data);
    // Default: the last line is complete.
    let mut r = Reader::open(&f, small()).unwrap();
    let (got, err) = lines(&mut r);
    assert!(err.is_none());
    assert_eq!(got.len(), 51);
    assert_eq!(r.content_pos(), data.len() as u64);
    assert_eq!(r.held_back(), 0);
    // Held back: 50 lines, and the position stops before the fragment.
    let opts = ReadOptions {
        hold_unterminated: true,
        ..small()
    };
    let mut r = Reader::open(&f, opts.clone()).unwrap();
    let (got, err) = lines(&mut r);
    assert!(err.is_none());
    assert_eq!(got.len(), 50);
    let end = r.content_pos();
    assert_eq!(r.next_line() - 1, 50);
    assert_eq!(r.held_back(), 18);
    assert_eq!(end as usize, data.len() - 18);
    // Once the writer finished the line, reading resumes with it whole.
    data.extend_from_slice(b" done\nline 00052\n");
    std::fs::write(crate::source::input_path(&f).unwrap(), &data).unwrap();
    let mut r = Reader::open(&f, opts).unwrap();
    r.skip_to(end, 50);
    let (got, err) = lines(&mut r);
    assert!(err.is_none());
    assert_eq!(
        got,
        vec![
            (51, b"line 00051 partial done".to_vec()),
            (52, b"line 00052".to_vec())
        ]
    );
    assert_eq!(r.held_back(), 0);
}

#[test]
fn held_back_over_long_last_line_is_not_consumed() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = b"a\nb\n".to_vec();
    data.extend(std::iter::repeat_n(b'z', 10_000));
    let f = write(dir.path(), "long.log", &data);
    let opts = ReadOptions {
        hold_unterminated: true,
        ..small()
    };
    let mut r = Reader::open(&f, opts).unwrap();
    let (got, err) = lines(&mut r);
    assert!(err.is_none());
    assert_eq!(got.len(), 2);
    assert_eq!(r.content_pos(), 4);
    assert_eq!(r.held_back(), 10_000);
}

#[test]
fn clean_streams_deliver_a_final_line_without_newline() {
    let data = b"one\ntwo\nthree".to_vec();
    for bytes in [data.clone(), gz(&data), zst(&data, true)] {
        let mut r = Reader::from_stream(
            "<stdin>".into(),
            Box::new(std::io::Cursor::new(bytes)),
            ReadOptions {
                hold_unterminated: true, // ignored by streams
                ..small()
            },
        )
        .unwrap();
        let (got, err) = lines(&mut r);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(got.last().unwrap(), &(3, b"three".to_vec()));
        assert_eq!(r.content_pos(), 13);
        assert_eq!(r.next_line(), 4);
        assert_eq!(r.held_back(), 0);
    }
}

#[test]
fn corrupt_gzip_is_corrupt_with_nothing_verified_in_one_member() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = Vec::new();
    for i in 0..20_000u32 {
        writeln!(
            data,
            "10.0.{}.{} - - [10/Oct/2024:13:55:36 +0000] \"GET /p/{} HTTP/1.1\" 200 {}",
            i % 250,
            i % 7,
            i * 7919 % 10007,
            i % 5000
        )
        .unwrap();
    }
    let mut z = gz(&data);
    let mid = z.len() / 2;
    for b in &mut z[mid..mid + 4] {
        *b ^= 0x55;
    }
    let f = write(dir.path(), "bad.gz", &z);
    let mut r = Reader::open(&f, ReadOptions::default()).unwrap();
    let (_got, err) = lines(&mut r);
    let d = damage(&err);
    assert_eq!(d.kind, DamageKind::Corrupt, "{d:?}");
    assert_eq!(d.verified, LinePoint::default());
    assert_eq!(d.unit_start, Some(0));
    assert!(d.detected_at <= z.len() as u64);
    let msg = err.unwrap().to_string();
    assert!(msg.contains("corrupt gzip stream"), "{msg}");
}

#[test]
fn checksum_mismatch_names_the_member_and_keeps_the_verified_members() {
    let dir = tempfile::tempdir().unwrap();
    let first = numbered(100);
    let second: Vec<u8> = numbered(200)[first.len()..].to_vec();
    let m1 = gz(&first);
    let mut m2 = gz(&second);
    let n2 = m2.len();
    m2[n2 - 8] ^= 1; // CRC of the second member
    let mut z = m1.clone();
    z.extend_from_slice(&m2);
    let f = write(dir.path(), "two.gz", &z);
    let mut r = Reader::open(&f, small()).unwrap();
    let (got, err) = lines(&mut r);
    assert_eq!(got.len(), 200);
    let d = damage(&err).clone();
    assert_eq!(d.kind, DamageKind::Corrupt);
    assert_eq!(d.detail, "checksum mismatch");
    assert_eq!(d.unit_start, Some(m1.len() as u64));
    assert_eq!(d.detected_at, z.len() as u64);
    assert_eq!(
        d.verified,
        LinePoint {
            content_bytes: first.len() as u64,
            lines: 100
        }
    );
    let msg = err.unwrap().to_string();
    assert!(
        msg.contains(&format!(
            "checksum mismatch in the gzip member starting at compressed byte {}",
            m1.len()
        )),
        "{msg}"
    );
    // A length mismatch is corrupt too.
    let mut z = m1.clone();
    let mut m2 = gz(&second);
    m2[n2 - 1] ^= 1;
    z.extend_from_slice(&m2);
    let f = write(dir.path(), "len.gz", &z);
    let (_, err) = lines(&mut Reader::open(&f, small()).unwrap());
    assert_eq!(damage(&err).detail, "length mismatch");
}

#[test]
fn member_boundary_inside_a_line_verifies_up_to_the_line_before() {
    let dir = tempfile::tempdir().unwrap();
    let data = numbered(10);
    let cut = data.len() / 2 + 3; // inside a line
    let mut z = gz(&data[..cut]);
    let second = gz(&data[cut..]);
    z.extend_from_slice(&second[..second.len() - 3]);
    let f = write(dir.path(), "mid.gz", &z);
    let (_, err) = lines(&mut Reader::open(&f, small()).unwrap());
    let d = damage(&err);
    assert_eq!(d.kind, DamageKind::Truncated);
    let end = memchr::memrchr(b'\n', &data[..cut]).unwrap() + 1;
    assert_eq!(d.verified.content_bytes, end as u64);
    assert_eq!(
        d.verified.lines,
        memchr::memchr_iter(b'\n', &data[..cut]).count() as u64
    );
}

#[test]
fn zstd_truncated_and_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let data = numbered(20_000);
    let z = zst(&data, true);
    let f = write(dir.path(), "cut.zst", &z[..z.len() / 2]);
    let mut r = Reader::open(&f, small()).unwrap();
    let (got, err) = lines(&mut r);
    assert_eq!(damage(&err).kind, DamageKind::Truncated);
    assert_eq!(got.len() as u64, r.next_line() - 1);
    assert_eq!(data[r.content_pos() as usize - 1], b'\n');
    // Two frames, the second one's checksum broken.
    let mut two = zst(&data[..1000], true);
    let first_len = two.len();
    let mut second = zst(&data[1000..], true);
    let k = second.len() - 1;
    second[k] ^= 0xff;
    two.extend_from_slice(&second);
    let f = write(dir.path(), "two.zst", &two);
    let (_, err) = lines(&mut Reader::open(&f, small()).unwrap());
    let d = damage(&err);
    assert_eq!(d.kind, DamageKind::Corrupt, "{d:?}");
    assert_eq!(d.unit_start, Some(first_len as u64));
    let end = memchr::memrchr(b'\n', &data[..1000]).unwrap() + 1;
    assert_eq!(d.verified.content_bytes, end as u64);
    // A clean multi-frame file reads whole.
    let mut ok = zst(&data[..1000], false);
    ok.extend_from_slice(&zst(&data[1000..], false));
    let f = write(dir.path(), "ok.zst", &ok);
    let mut r = Reader::open(&f, small()).unwrap();
    let (got, err) = lines(&mut r);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(got.len(), 20_000);
}

#[test]
fn file_truncated_between_windows_ends_with_shrank() {
    let dir = tempfile::tempdir().unwrap();
    let data = numbered(10_000);
    let f = write(dir.path(), "rotating.log", &data);
    let path = input_path(&f).unwrap().to_path_buf();
    let mut r = Reader::open(&f, small()).unwrap();
    let mut got = Vec::new();
    let first = r.next_event().unwrap().unwrap();
    if let Event::Chunk(c) = first {
        got.push(c.len());
    }
    // copytruncate: the file is cut to nothing and written again.
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .unwrap()
        .write_all(b"new content\n")
        .unwrap();
    let (rest, err) = lines(&mut r);
    let d = damage(&err).clone();
    let DamageKind::Shrank { at, size } = d.kind else {
        panic!("{d:?}")
    };
    assert_eq!(size, 12);
    // The head (read at open for detection) is original; the first read after it notices.
    assert_eq!(at, HEAD_LEN as u64);
    // Nothing read after the truncation; everything before is original.
    assert!(
        rest.iter()
            .all(|(n, l)| l.starts_with(format!("line {n:05}").as_bytes()))
    );
    assert!(d.content_end <= at);
    assert_eq!(data[d.content_end as usize - 1], b'\n');
    let msg = err.unwrap().to_string();
    assert!(
        msg.contains("shrank to 12 bytes while being read at byte"),
        "{msg}"
    );
    assert!(msg.contains("copytruncate"));
}

#[test]
fn any_max_line_is_safe_and_long_lines_keep_their_first_max_line_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = b"short\n".to_vec();
    let long: Vec<u8> = (0..5000u32).map(|i| b'a' + (i % 26) as u8).collect();
    data.extend_from_slice(&long);
    data.extend_from_slice(b"\n\nend\n");
    let f = write(dir.path(), "l.log", &data);
    for max_line in [0usize, 1, 3, 100, 199, 200, 4999, 5000] {
        let opts = ReadOptions {
            max_line,
            ..small()
        };
        let mut r = Reader::open(&f, opts).unwrap();
        let mut longs = Vec::new();
        for ev in r.by_ref() {
            if let Event::LongLine {
                line, len, head, ..
            } = ev.unwrap()
            {
                longs.push((line, len, head));
            }
        }
        assert_eq!(r.next_line(), 5, "max_line {max_line}");
        if max_line < 5000 {
            assert!(
                longs.contains(&(2, 5000, long[..max_line].to_vec())),
                "max_line {max_line}: {:?}",
                longs.iter().map(|l| (l.0, l.1)).collect::<Vec<_>>()
            );
        } else {
            assert!(longs.is_empty());
        }
    }
}

#[test]
fn cr_only_files_are_split_on_cr() {
    let dir = tempfile::tempdir().unwrap();
    let data = b"first line\rsecond\r\rfourth\r".to_vec();
    for (name, bytes) in [("cr.log", data.clone()), ("cr.log.gz", gz(&data))] {
        let f = write(dir.path(), name, &bytes);
        let mut r = Reader::open(&f, small()).unwrap();
        assert_eq!(r.terminator(), b'\r');
        let (got, err) = lines(&mut r);
        assert!(err.is_none());
        assert_eq!(
            got,
            vec![
                (1, b"first line".to_vec()),
                (2, b"second".to_vec()),
                (3, b"".to_vec()),
                (4, b"fourth".to_vec())
            ]
        );
    }
    // CRLF stays a '\n' file; a '\r' inside a long first line does not make it CR-only.
    let f = write(dir.path(), "crlf.log", b"a\r\nb\r\n");
    assert_eq!(Reader::open(&f, small()).unwrap().terminator(), b'\n');
    let mut tricky = vec![b'j'; 70_000];
    tricky[10] = b'\r';
    tricky.extend_from_slice(b"\nnext\n");
    let f = write(dir.path(), "tricky.log", &tricky);
    assert_eq!(Reader::open(&f, small()).unwrap().terminator(), b'\n');
}

#[test]
fn sample_reaches_past_a_long_first_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = vec![b'#'; 70_000];
    data.push(b'\n');
    data.extend_from_slice(&numbered(300));
    let f = write(dir.path(), "junk.log", &data);
    let mut r = Reader::open(&f, ReadOptions::default()).unwrap();
    let s = r.sample(200).unwrap();
    let l = s.lines(200);
    assert_eq!(l.len(), 200);
    assert_eq!(l[0].len(), 70_000);
    assert!(l[1].starts_with(b"line 00001"));
    // With a line limit below it, the junk line is skipped in the sample.
    let mut r = Reader::open(
        &f,
        ReadOptions {
            max_line: 1000,
            ..ReadOptions::default()
        },
    )
    .unwrap();
    let s = r.sample(200).unwrap();
    assert!(s.lines(200)[0].starts_with(b"line 00001"));
    // Sampling consumed nothing.
    let (got, _) = lines(&mut r);
    assert_eq!(got.len(), 301);
    // An empty input is blank.
    let f = write(dir.path(), "empty.log", b"\n \n");
    let s = Reader::open(&f, small()).unwrap().sample(200).unwrap();
    assert!(s.is_blank());
    assert!(s.lines(200).is_empty());
}

#[test]
fn missing_file_message_names_it_once_and_the_os_error_once() {
    let e = Reader::open(&Input::Path("/nonexistent/x\x1b.log".into()), small())
        .err()
        .unwrap();
    let msg = e.to_string();
    assert_eq!(msg.matches("No such file or directory").count(), 1, "{msg}");
    assert!(msg.contains("/nonexistent/x\\x1b.log"), "{msg}");
    assert!(std::error::Error::source(&e).is_none());
}
