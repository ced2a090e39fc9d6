//! The CRI container-log prefix. Kubernetes nodes (containerd, CRI-O) write each line a
//! container prints as `<RFC 3339 time> <stdout|stderr> <tag> <line>`, the tag `F` for
//! a full line or `P` for a part of a longer one:
//! `2024-01-01T00:00:00.123456789Z stdout F 1.2.3.4 - - [01/Jan/2024:00:00:00 +0000] …`.
//! [`Format::Cri`](super::Format::Cri) strips the prefix and parses the rest as the
//! inner format (the container's own time stamp is the record's; the node's is not
//! used). A line without the prefix is parsed as it is. A `P` part is parsed like any
//! line: the pieces of a split line are bad lines, not joined.

use super::{LineParser, ParseError};
use crate::record::Record;

/// The line after a CRI prefix, `None` when `line` has none.
#[inline]
pub(crate) fn strip(line: &[u8]) -> Option<&[u8]> {
    // `YYYY-MM-DDTHH:MM:SS[.frac](Z|±hh:mm) `: at least 20 bytes, at most ~40.
    if line.len() < 30 || !line[0].is_ascii_digit() || line[4] != b'-' || line[10] != b'T' {
        return None;
    }
    let sp = line[..line.len().min(48)].iter().position(|c| *c == b' ')?;
    if sp < 20 {
        return None;
    }
    let rest = &line[sp + 1..];
    let rest = rest
        .strip_prefix(b"stdout ")
        .or_else(|| rest.strip_prefix(b"stderr "))?;
    // The tag: `F`, `P`, or flags joined by `:`.
    let t = rest.iter().position(|c| *c == b' ')?;
    if t == 0
        || !rest[..t]
            .iter()
            .all(|c| c.is_ascii_uppercase() || *c == b':')
    {
        return None;
    }
    Some(&rest[t + 1..])
}

/// A parser for the inner format behind the CRI prefix.
pub(crate) struct Cri<P>(pub(crate) P);

impl<P: LineParser> LineParser for Cri<P> {
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        let inner = strip(line).unwrap_or(line);
        self.0.parse(inner)
    }
}

impl<P: LineParser + ?Sized> LineParser for Box<P> {
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        (**self).parse(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        assert_eq!(
            strip(b"2024-01-01T00:00:00.123456789Z stdout F 1.2.3.4 - -"),
            Some(&b"1.2.3.4 - -"[..])
        );
        assert_eq!(
            strip(b"2025-12-31T17:37:40.493035218+01:00 stderr P {\"a\":1}"),
            Some(&b"{\"a\":1}"[..])
        );
        assert_eq!(strip(b"2024-01-01T00:00:00Z stdout F "), Some(&b""[..]));
        assert_eq!(strip(b"2024-01-01T00:00:00Z other F x y z zz"), None);
        assert_eq!(
            strip(b"1.2.3.4 - - [01/Jan/2024:00:00:00 +0000] \"GET /\""),
            None
        );
        assert_eq!(strip(b"2024-01-01T00:00:00Z stdout f lowercase tag"), None);
    }
}
