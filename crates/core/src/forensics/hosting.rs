//! Network class: hosting (data centres, clouds) or other, from a list of autonomous
//! systems the user gives (`--hosting-asns FILE`): one AS number a line (`14061`,
//! `AS14061`), `#` comments, or the MIT `bad-asn-list` CSV (`ASN,Entity` header,
//! `14061,"DigitalOcean, LLC"`). A client of an AS on the list is *hosting*; every other
//! client with an AS is *other* (residential-looking, or an office, a campus …); a client
//! the database does not place is *unknown*.

use std::collections::BTreeSet;

use serde::Serialize;

/// The class of a client's network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkClass {
    /// An AS on the hosting list.
    Hosting,
    /// Any other AS.
    Other,
    /// No AS in the database.
    Unknown,
}

impl NetworkClass {
    /// Its name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            NetworkClass::Hosting => "hosting",
            NetworkClass::Other => "other",
            NetworkClass::Unknown => "unknown",
        }
    }
}

/// The hosting ASNs.
#[derive(Clone, Debug, Default)]
pub struct HostingAsns {
    set: BTreeSet<u32>,
}

/// A list that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error(
    "line {line}: {text:?} is not an AS number (one a line: 14061 or AS14061, or bad-asn-list's CSV)"
)]
pub struct HostingAsnsError {
    /// 1-based.
    pub line: usize,
    /// The line's start.
    pub text: String,
}

impl HostingAsns {
    /// The list in `text`. A first line whose first field is not a number is a header
    /// and skipped; so are empty lines and `#` comments.
    pub fn parse(text: &str) -> Result<HostingAsns, HostingAsnsError> {
        let mut set = BTreeSet::new();
        for (k, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let first = line
                .split([',', ';', '\t', ' '])
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches('"');
            let digits = first
                .strip_prefix("AS")
                .or_else(|| first.strip_prefix("as"))
                .unwrap_or(first);
            match digits.parse::<u32>() {
                Ok(n) => {
                    set.insert(n);
                }
                Err(_) if set.is_empty() && k == 0 => {} // a header
                Err(_) => {
                    return Err(HostingAsnsError {
                        line: k + 1,
                        text: line.chars().take(40).collect(),
                    });
                }
            }
        }
        Ok(HostingAsns { set })
    }

    /// The class of a client whose AS is `asn` (`None`: not in the database).
    pub fn class(&self, asn: Option<u32>) -> NetworkClass {
        match asn {
            Some(n) if self.set.contains(&n) => NetworkClass::Hosting,
            Some(_) => NetworkClass::Other,
            None => NetworkClass::Unknown,
        }
    }

    /// How many ASNs are listed.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lists_and_bad_asn_list_csv() {
        let plain = HostingAsns::parse("# clouds\n14061\nAS16509 amazon\n\n as  \n").err();
        // "as" alone is not a number and not on the first line.
        assert!(plain.is_some());
        let plain = HostingAsns::parse("# clouds\n14061\nAS16509 amazon\n").unwrap();
        assert_eq!(plain.len(), 2);
        assert_eq!(plain.class(Some(16509)), NetworkClass::Hosting);
        assert_eq!(plain.class(Some(3320)), NetworkClass::Other);
        assert_eq!(plain.class(None), NetworkClass::Unknown);
        let csv =
            HostingAsns::parse("ASN,Entity\n14061,\"DigitalOcean, LLC\"\n\"16276\",\"OVH SAS\"\n")
                .unwrap();
        assert_eq!(csv.len(), 2);
        assert_eq!(csv.class(Some(16276)), NetworkClass::Hosting);
        let e = HostingAsns::parse("1\nbanana\n").unwrap_err();
        assert_eq!(e.line, 2);
    }
}
