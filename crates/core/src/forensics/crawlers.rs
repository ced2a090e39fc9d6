//! Verified crawlers: the IP ranges crawler operators publish (Google's, Bing's,
//! OpenAI's and Common Crawl's JSON: `prefixes` with `ipv4Prefix`/`ipv6Prefix`), given by
//! the user as `--crawler-ranges NAME=FILE`. A request whose User-Agent claims crawler
//! NAME is *verified* when its address is inside NAME's ranges and an *impostor*
//! otherwise (a client logged without an address cannot be verified: an impostor).

use std::net::IpAddr;

use ipnet::IpNet;
use serde::Deserialize;

/// One crawler's published ranges.
#[derive(Clone, Debug)]
pub struct Crawler {
    /// The name the user gave (`googlebot`), lower-case.
    pub name: String,
    /// IPv4 ranges as sorted, merged inclusive `(first, last)` pairs.
    v4: Vec<(u32, u32)>,
    /// IPv6 ranges, likewise.
    v6: Vec<(u128, u128)>,
    /// Prefixes read from the file.
    pub prefixes: usize,
}

/// The crawlers whose ranges the user gave.
#[derive(Clone, Debug, Default)]
pub struct CrawlerRanges {
    /// In the order given.
    pub crawlers: Vec<Crawler>,
}

/// A range file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CrawlerRangesError {
    /// Not JSON of the published layout.
    #[error(
        "not a crawler range file (JSON with \"prefixes\": [{{\"ipv4Prefix\": \"66.249.64.0/27\"}}, …]): {0}"
    )]
    Json(String),
    /// A prefix that is not a CIDR.
    #[error("prefix {0:?} is not a CIDR (e.g. 66.249.64.0/27 or 2001:4860:4801:10::/64)")]
    Prefix(String),
    /// A name that is not one.
    #[error(
        "crawler name {0:?}: letters, digits, '-' and '_' only (e.g. googlebot=googlebot.json)"
    )]
    Name(String),
    /// The same name twice.
    #[error("crawler {0:?} is given twice")]
    Twice(String),
}

#[derive(Deserialize)]
struct RangeFile {
    prefixes: Vec<Prefix>,
}

#[derive(Deserialize)]
struct Prefix {
    #[serde(rename = "ipv4Prefix")]
    v4: Option<String>,
    #[serde(rename = "ipv6Prefix")]
    v6: Option<String>,
}

impl Crawler {
    /// Crawler `name`'s ranges from the JSON `bytes` of its operator's file.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<Crawler, CrawlerRangesError> {
        let name = name.trim();
        if name.is_empty()
            || name.len() > 64
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(CrawlerRangesError::Name(name.chars().take(64).collect()));
        }
        let file: RangeFile =
            serde_json::from_slice(bytes).map_err(|e| CrawlerRangesError::Json(e.to_string()))?;
        let (mut v4, mut v6) = (Vec::new(), Vec::new());
        let mut prefixes = 0;
        for p in file.prefixes {
            for text in [p.v4, p.v6].into_iter().flatten() {
                let net: IpNet = text
                    .trim()
                    .parse()
                    .map_err(|_| CrawlerRangesError::Prefix(text.chars().take(60).collect()))?;
                prefixes += 1;
                match net {
                    IpNet::V4(n) => v4.push((u32::from(n.network()), u32::from(n.broadcast()))),
                    IpNet::V6(n) => v6.push((u128::from(n.network()), u128::from(n.broadcast()))),
                }
            }
        }
        Ok(Crawler {
            name: name.to_ascii_lowercase(),
            v4: merge(v4),
            v6: merge(v6),
            prefixes,
        })
    }

    /// Whether `ip` (canonical: IPv4-mapped addresses as IPv4) is in the ranges.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match ip {
            IpAddr::V4(a) => inside(&self.v4, u32::from(a)),
            IpAddr::V6(a) => inside(&self.v6, u128::from(a)),
        }
    }

    /// Whether an agent of `family` (`Googlebot`, `Googlebot-Image`, `GPTBot`) claims
    /// to be this crawler: its name, or its name then `-` and a variant, in any case.
    pub fn claimed_by(&self, family: &str) -> bool {
        let f = family.as_bytes();
        let n = self.name.as_bytes();
        f.len() >= n.len()
            && f[..n.len()].eq_ignore_ascii_case(n)
            && (f.len() == n.len() || f[n.len()] == b'-')
    }
}

fn merge<T: Copy + Ord + num_step::Step>(mut v: Vec<(T, T)>) -> Vec<(T, T)> {
    v.sort_unstable();
    let mut out: Vec<(T, T)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 || last.1.next() == Some(a) => {
                last.1 = last.1.max(b);
            }
            _ => out.push((a, b)),
        }
    }
    out
}

fn inside<T: Copy + Ord>(ranges: &[(T, T)], x: T) -> bool {
    let k = ranges.partition_point(|r| r.0 <= x);
    k > 0 && x <= ranges[k - 1].1
}

mod num_step {
    /// The next integer, if any.
    pub trait Step: Sized {
        fn next(self) -> Option<Self>;
    }
    impl Step for u32 {
        fn next(self) -> Option<u32> {
            self.checked_add(1)
        }
    }
    impl Step for u128 {
        fn next(self) -> Option<u128> {
            self.checked_add(1)
        }
    }
}

impl CrawlerRanges {
    /// Adds a crawler; a name given twice is an error.
    pub fn push(&mut self, c: Crawler) -> Result<(), CrawlerRangesError> {
        if self.crawlers.iter().any(|x| x.name == c.name) {
            return Err(CrawlerRangesError::Twice(c.name));
        }
        self.crawlers.push(c);
        Ok(())
    }

    /// The crawler an agent of `family` claims to be, if it is one of these (the
    /// longest name wins: `googlebot-image` before `googlebot`).
    pub fn claimed(&self, family: &str) -> Option<usize> {
        self.crawlers
            .iter()
            .enumerate()
            .filter(|(_, c)| c.claimed_by(family))
            .max_by_key(|(i, c)| (c.name.len(), std::cmp::Reverse(*i)))
            .map(|(i, _)| i)
    }

    /// Whether a request claiming crawler `k` from `ip` is verified.
    pub fn verified(&self, k: usize, ip: Option<IpAddr>) -> bool {
        ip.is_some_and(|ip| self.crawlers[k].contains(ip))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.crawlers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOGLE: &str = r#"{"creationTime":"2026-11-30T15:46:03.000000","prefixes":[
        {"ipv6Prefix":"2001:4860:4801:10::/64"},{"ipv4Prefix":"66.249.64.0/27"},
        {"ipv4Prefix":"66.249.64.32/27"},{"ipv4Prefix":"66.249.66.0/27"}]}"#;

    #[test]
    fn published_ranges_verify_addresses() {
        let g = Crawler::parse("Googlebot", GOOGLE.as_bytes()).unwrap();
        assert_eq!(g.name, "googlebot");
        assert_eq!(g.prefixes, 4);
        // The two adjacent /27s are one range.
        assert_eq!(g.v4.len(), 2);
        for (ip, want) in [
            ("66.249.64.0", true),
            ("66.249.64.63", true),
            ("66.249.64.64", false),
            ("66.249.66.31", true),
            ("66.249.66.32", false),
            ("2001:4860:4801:10::1", true),
            ("2001:4860:4801:11::1", false),
        ] {
            assert_eq!(g.contains(ip.parse().unwrap()), want, "{ip}");
        }
        let mut all = CrawlerRanges::default();
        all.push(g).unwrap();
        assert_eq!(all.claimed("Googlebot"), Some(0));
        assert_eq!(all.claimed("Googlebot-Image"), Some(0));
        assert_eq!(all.claimed("GooglebotX"), None);
        assert_eq!(all.claimed("GPTBot"), None);
        assert!(!all.verified(0, None));
        let again = Crawler::parse("googlebot", GOOGLE.as_bytes()).unwrap();
        assert!(all.push(again).is_err());
    }

    #[test]
    fn bad_files_are_errors() {
        for bad in [
            "",
            "{}",
            "[1,2]",
            r#"{"prefixes":[{"ipv4Prefix":"66.249.64.0/33"}]}"#,
            r#"{"prefixes":[{"ipv4Prefix":"nonsense"}]}"#,
        ] {
            assert!(Crawler::parse("g", bad.as_bytes()).is_err(), "{bad}");
        }
        assert!(Crawler::parse("a b", GOOGLE.as_bytes()).is_err());
        assert!(Crawler::parse("", GOOGLE.as_bytes()).is_err());
    }
}
