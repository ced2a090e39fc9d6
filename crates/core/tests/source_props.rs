//! Property tests of the reader: whatever the chunk size, window size and compression,
//! the lines delivered (and their numbers) are exactly the file's lines, and lines over
//! the limit are reported, not kept.

use std::io::Write;

use logscope_core::source::{Event, Input, ReadOptions, Reader};
use proptest::prelude::*;

#[derive(Debug, PartialEq)]
enum Seen {
    Line(u64, Vec<u8>),
    Long(u64),
}

fn expected(content: &[u8], max_line: usize) -> Vec<Seen> {
    let mut out = Vec::new();
    if content.is_empty() {
        return out;
    }
    let body = content.strip_suffix(b"\n").unwrap_or(content);
    for (i, l) in body.split(|&b| b == b'\n').enumerate() {
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
    let max_line = opts.max_line;
    let mut out = Vec::new();
    for ev in Reader::open(input, opts).unwrap() {
        match ev.unwrap() {
            Event::Chunk(c) => {
                let body = c.strip_suffix(b"\n").unwrap_or(&c);
                for (i, l) in body.split(|&b| b == b'\n').enumerate() {
                    let n = c.first_line + i as u64;
                    if l.len() > max_line {
                        out.push(Seen::Long(n));
                    } else {
                        out.push(Seen::Line(n, l.to_vec()));
                    }
                }
            }
            Event::LongLine { line, .. } => out.push(Seen::Long(line)),
        }
    }
    out
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
    ) {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("a.log");
        std::fs::write(&plain, &data).unwrap();
        let gz = dir.path().join("a.log.gz");
        let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
        enc.write_all(&data).unwrap();
        enc.finish().unwrap();
        let opts = ReadOptions { chunk_size: chunk, window: window_pages * 4096, max_line };
        let want = expected(&data, max_line);
        prop_assert_eq!(&read_all(&Input::Path(plain), opts.clone()), &want);
        prop_assert_eq!(&read_all(&Input::Path(gz), opts), &want);
    }
}
