//! Property tests of the reader: whatever the chunk size, window size, compression
//! (one or several gzip members, zstd) and line terminator (`\n`, or `\r` alone), the
//! lines delivered (and their numbers) are exactly the file's lines, lines over the
//! limit are reported, not kept, an unterminated last line is held back when asked, and
//! resuming at any line boundary continues with the next line.

use std::io::Write;

use logscope_core::source::{Event, Input, ReadOptions, Reader};
use proptest::prelude::*;

#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Line(u64, Vec<u8>),
    Long(u64),
}

/// The terminator the reader picks: `\r` when the content has no `\n` (within the
/// first 4 MiB, more than any test input) but a `\r` in its 64 KiB head.
fn terminator(content: &[u8]) -> u8 {
    let head = &content[..content.len().min(64 * 1024)];
    if !content.contains(&b'\n') && head.contains(&b'\r') {
        b'\r'
    } else {
        b'\n'
    }
}

fn expected(content: &[u8], max_line: usize) -> Vec<Seen> {
    let mut out = Vec::new();
    if content.is_empty() {
        return out;
    }
    let t = terminator(content);
    let body = content.strip_suffix(&[t]).unwrap_or(content);
    for (i, l) in body.split(|&b| b == t).enumerate() {
        let n = i as u64 + 1;
        if l.len() > max_line {
            out.push(Seen::Long(n));
        } else {
            out.push(Seen::Line(n, l.to_vec()));
        }
    }
    out
}

fn read_all(input: &Input, opts: ReadOptions) -> Vec<Seen> {
    read_from(Reader::open(input, opts.clone()).unwrap(), opts.max_line)
}

fn read_from(mut reader: Reader, max_line: usize) -> Vec<Seen> {
    read_from_ref(&mut reader, max_line)
}

fn content() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        4 => proptest::collection::vec(prop_oneof![Just(b'a'), Just(b' '), Just(b'\r'), Just(0xc3u8)], 0..80),
        1 => proptest::collection::vec(Just(b'x'), 150..3000),
    ];
    (proptest::collection::vec(line, 0..60), any::<bool>()).prop_map(|(lines, final_nl)| {
        let mut c = lines.join(&b'\n');
        if final_nl && !c.is_empty() {
            c.push(b'\n');
        }
        c
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn lines_and_numbers_survive_any_chunking(
        data in content(),
        chunk in 16usize..2048,
        window_pages in 1usize..4,
        max_line in 100usize..1000,
        split in any::<proptest::sample::Index>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("a.log");
        std::fs::write(&plain, &data).unwrap();
        let gz = dir.path().join("a.log.gz");
        std::fs::write(&gz, gzip(&data)).unwrap();
        // Two members, split anywhere (inside a line too).
        let split = split.index(data.len() + 1);
        let mut two = gzip(&data[..split]);
        two.extend_from_slice(&gzip(&data[split..]));
        let gz2 = dir.path().join("b.log.gz");
        std::fs::write(&gz2, two).unwrap();
        let zst = dir.path().join("a.log.zst");
        std::fs::write(&zst, zstd::encode_all(&data[..], 1).unwrap()).unwrap();
        let opts = ReadOptions { chunk_size: chunk, window: window_pages * 4096, max_line, ..ReadOptions::default() };
        let want = expected(&data, max_line);
        prop_assert_eq!(&read_all(&Input::Path(plain), opts.clone()), &want);
        prop_assert_eq!(&read_all(&Input::Path(gz), opts.clone()), &want);
        prop_assert_eq!(&read_all(&Input::Path(gz2), opts.clone()), &want);
        prop_assert_eq!(&read_all(&Input::Path(zst), opts), &want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn cr_only_held_back_and_resumed_at_any_line(
        lines in proptest::collection::vec(line(), 1..40),
        final_term in any::<bool>(),
        cr in any::<bool>(),
        hold in any::<bool>(),
        compress in any::<bool>(),
        chunk in 16usize..2048,
        window_pages in 1usize..4,
        max_line in 100usize..1000,
        resume in any::<proptest::sample::Index>(),
    ) {
        let t = if cr { b'\r' } else { b'\n' };
        let mut data = lines.join(&t);
        if final_term {
            data.push(t);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        std::fs::write(&path, if compress { gzip(&data) } else { data.clone() }).unwrap();
        let input = Input::Path(path);
        let opts = ReadOptions {
            chunk_size: chunk,
            window: window_pages * 4096,
            max_line,
            hold_unterminated: hold,
        };
        // The lines, each with the offset just after its terminator.
        let body = data.strip_suffix(&[t]).unwrap_or(&data);
        let mut want = Vec::new();
        let mut ends = Vec::new();
        let mut at = 0usize;
        for (i, l) in body.split(|&b| b == t).enumerate() {
            at += l.len() + 1;
            let n = i as u64 + 1;
            want.push(if l.len() > max_line { Seen::Long(n) } else { Seen::Line(n, l.to_vec()) });
            ends.push(at.min(data.len()));
        }
        let held = hold && !compress && data.last().is_some_and(|&b| b != t);
        if held {
            want.pop();
            ends.pop();
        }
        if data.is_empty() {
            want.clear();
            ends.clear();
        }
        let mut r = Reader::open(&input, opts.clone()).unwrap();
        if data.contains(&b'\r') && !data.contains(&b'\n') {
            prop_assert_eq!(r.terminator(), b'\r');
        }
        let got = read_from_ref(&mut r, max_line);
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(r.content_pos(), ends.last().copied().unwrap_or(0) as u64);
        prop_assert_eq!(r.held_back(), if held { lines.last().unwrap().len() as u64 } else { 0 });
        prop_assert_eq!(r.next_line() - 1, want.len() as u64);
        // Resume after any line: the rest continues with the next line.
        if !want.is_empty() {
            let k = resume.index(want.len() + 1);
            let (bytes, lines_done) = if k == 0 { (0, 0) } else { (ends[k - 1] as u64, k as u64) };
            let mut r = Reader::open(&input, opts.clone()).unwrap();
            r.skip_to(bytes, lines_done);
            prop_assert_eq!(&read_from(r, max_line), &want[k..].to_vec());
        }
    }
}

fn read_from_ref(reader: &mut Reader, max_line: usize) -> Vec<Seen> {
    let mut out = Vec::new();
    for ev in reader.by_ref() {
        match ev.unwrap() {
            Event::Chunk(c) => {
                let t = c.terminator;
                let body = c.strip_suffix(&[t]).unwrap_or(&c);
                for (i, l) in body.split(|&b| b == t).enumerate() {
                    let n = c.first_line + i as u64;
                    out.push(if l.len() > max_line {
                        Seen::Long(n)
                    } else {
                        Seen::Line(n, l.to_vec())
                    });
                }
            }
            Event::LongLine { line, .. } => out.push(Seen::Long(line)),
        }
    }
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// A line without terminators: short text or a run longer than most limits.
fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(prop_oneof![Just(b'a'), Just(b' '), Just(0xc3u8)], 0..80),
        1 => proptest::collection::vec(Just(b'x'), 150..3000),
    ]
}
