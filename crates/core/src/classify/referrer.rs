//! The referring site of a Referer header: the host of its URL, as GoAccess's
//! "Referring Sites" panel groups them.

/// The site of a Referer URL: its host and port as GoAccess's panel shows them (the
/// URL's authority), lower-case and without user info
/// (`https://User@WWW.Example.com:8443/a?b` → `www.example.com:8443`); `None` for no
/// Referer (`-`, empty). A Referer that is not an absolute URL (no `scheme://`) is its
/// own first 100 characters: what the client sent, not a site.
pub fn referring_site(referer: &str) -> Option<String> {
    let r = referer.trim();
    if r.is_empty() || r == "-" {
        return None;
    }
    let verbatim = || Some(r.chars().take(100).collect());
    let Some((scheme, rest)) = r.split_once("://") else {
        return verbatim();
    };
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    {
        return verbatim();
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let site = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if site.is_empty() || site.starts_with(':') {
        return verbatim();
    }
    Some(
        site.chars()
            .take(100)
            .collect::<String>()
            .to_ascii_lowercase(),
    )
}

#[cfg(test)]
mod tests {
    use super::referring_site;

    #[test]
    fn the_host_of_the_url() {
        for (r, want) in [
            ("https://www.google.com/search?q=x", Some("www.google.com")),
            (
                "http://User:pw@WWW.Example.COM:8443/a",
                Some("www.example.com:8443"),
            ),
            ("https://[2001:DB8::1]:443/x", Some("[2001:db8::1]:443")),
            ("http://example.org?q=1", Some("example.org")),
            (
                "android-app://com.google.android.gm/",
                Some("com.google.android.gm"),
            ),
            ("http://example.org", Some("example.org")),
            ("-", None),
            ("", None),
            ("not a url", Some("not a url")),
            ("http:///nohost", Some("http:///nohost")),
        ] {
            assert_eq!(referring_site(r).as_deref(), want, "{r}");
        }
    }
}
