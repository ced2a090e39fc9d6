//! Heavy requests: the ones that cost the backend real work. Built-in MediaWiki rules
//! (search, diff, old revisions, history, page info, Special:Search) plus named user
//! classes with path/query regexes and methods. Unless the rules file says whether the
//! site is a MediaWiki, the rows decide ([`HeavyRules::settle`]): the MediaWiki rules
//! where MediaWiki's paths are seen, else the class `dynamic` (every request to a path
//! that is not a static file: [`super::static_files`]).

use regex::Regex;

/// A heavy class: 0 is "not heavy"; other values index [`HeavyRules::names`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct HeavyClass(pub u16);

impl HeavyClass {
    /// Not heavy.
    pub const NONE: HeavyClass = HeavyClass(0);

    /// Whether the request is heavy.
    #[inline]
    pub fn is_heavy(self) -> bool {
        self.0 != 0
    }
}

/// The built-in MediaWiki classes, in the order their ids are assigned (1…).
pub const MEDIAWIKI_CLASSES: [&str; 5] = ["diff", "oldid", "history", "info", "search"];

/// Paths the MediaWiki rules look at by default.
pub const MEDIAWIKI_PATHS: [&str; 2] = ["/index.php", "/w/index.php"];

/// Whether a path is one that only a MediaWiki serves: a `/wiki/` page, anything under
/// `/w/` (its script directory), `/load.php` (its resource loader at the root), or
/// `Special:Search`.
pub fn is_mediawiki_path(path: &str) -> bool {
    path.starts_with("/wiki/")
        || path.starts_with("/w/")
        || path == "/load.php"
        || is_special_search(last_segment(path).as_bytes())
}

/// What the rows showed of the site: how many requests, and how many of them were to
/// MediaWiki's paths ([`is_mediawiki_path`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteSeen {
    /// Requests looked at.
    pub rows: u64,
    /// Those to MediaWiki's paths.
    pub mediawiki_rows: u64,
}

impl SiteSeen {
    /// A MediaWiki site: at least 1 % of the requests are to its paths (a scanner's
    /// probes for `/w/index.php` on another site are far fewer).
    pub fn is_mediawiki(&self) -> bool {
        self.mediawiki_rows > 0 && self.mediawiki_rows.saturating_mul(100) >= self.rows
    }
}

/// How the MediaWiki rules came to be on or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The rules file says (`[heavy] mediawiki = true|false`).
    Configured,
    /// Not said, and the rows not yet looked at: the MediaWiki rules are on until
    /// [`HeavyRules::settle`].
    Open,
    /// Chosen by [`HeavyRules::settle`] from what the rows showed.
    Seen(SiteSeen),
}

/// A user class: a request matching every given part belongs to it.
#[derive(Clone, Debug)]
pub struct HeavyRule {
    /// Class name shown in reports.
    pub name: String,
    /// Regex on the path (without query).
    pub path: Option<Regex>,
    /// Regex on the query string (without `?`; a request without a query has "").
    pub query: Option<Regex>,
    /// Methods (upper case); empty = any.
    pub methods: Vec<String>,
    /// Matching requests are *not* heavy, whatever the later rules say.
    pub exclude: bool,
}

impl HeavyRule {
    /// Whether the rule's methods (if any) and path regex (if any) accept the request.
    #[inline]
    fn method_and_path_match(&self, method: Option<&str>, path: Option<&str>) -> bool {
        let method_ok = self.methods.is_empty()
            || method.is_some_and(|m| self.methods.iter().any(|x| x.eq_ignore_ascii_case(m)));
        method_ok
            && self
                .path
                .as_ref()
                .is_none_or(|p| p.is_match(path.unwrap_or("")))
    }
}

/// The heavy-request rules: user classes first (in file order), then MediaWiki's.
#[derive(Clone, Debug)]
pub struct HeavyRules {
    mediawiki: bool,
    mw_paths: Vec<String>,
    user: Vec<(HeavyRule, HeavyClass)>,
    names: Vec<String>,
    choice: Choice,
    /// Whether the last two rules are the default `static` (excluded) and `dynamic`.
    dynamic_default: bool,
}

impl Default for HeavyRules {
    fn default() -> Self {
        HeavyRules::new(
            Some(true),
            MEDIAWIKI_PATHS.iter().map(|s| s.to_string()).collect(),
            Vec::new(),
        )
    }
}

impl HeavyRules {
    /// Rules from their parts. User classes with the same name share an id. `mediawiki`:
    /// whether the MediaWiki rules apply; `None` leaves it to [`HeavyRules::settle`].
    pub fn new(mediawiki: Option<bool>, mw_paths: Vec<String>, user: Vec<HeavyRule>) -> HeavyRules {
        let mut names: Vec<String> = vec![String::new()];
        names.extend(MEDIAWIKI_CLASSES.iter().map(|s| s.to_string()));
        let mut rules = Vec::new();
        for r in user {
            let id = if r.exclude {
                HeavyClass::NONE
            } else {
                match names.iter().position(|n| *n == r.name) {
                    Some(i) => HeavyClass(i as u16),
                    None => {
                        names.push(r.name.clone());
                        HeavyClass((names.len() - 1) as u16)
                    }
                }
            };
            rules.push((r, id));
        }
        HeavyRules {
            mediawiki: mediawiki.unwrap_or(true),
            mw_paths,
            user: rules,
            names,
            choice: match mediawiki {
                Some(_) => Choice::Configured,
                None => Choice::Open,
            },
            dynamic_default: false,
        }
    }

    /// Whether the rows are still to decide on the MediaWiki rules ([`HeavyRules::settle`]).
    pub fn is_open(&self) -> bool {
        self.choice == Choice::Open
    }

    /// How the MediaWiki rules came to be on or off.
    pub fn choice(&self) -> Choice {
        self.choice
    }

    /// Decides what an open choice leaves to the rows: the MediaWiki rules when the
    /// site is a MediaWiki ([`SiteSeen::is_mediawiki`]); otherwise, when the rules file
    /// names no class of its own, the default class `dynamic`: every request to a path
    /// (starting with `/`) that is not a static file ([`super::static_files`]). Does
    /// nothing when the choice is made already.
    pub fn settle(&mut self, seen: SiteSeen) {
        if self.choice != Choice::Open {
            return;
        }
        let wiki = seen.is_mediawiki();
        let mut user: Vec<HeavyRule> = self.user.iter().map(|(r, _)| r.clone()).collect();
        let defaults = !wiki && user.is_empty();
        if defaults {
            user.push(HeavyRule {
                name: "static".into(),
                path: Some(
                    Regex::new(&super::static_files::static_path_regex()).expect("a fixed regex"),
                ),
                query: None,
                methods: Vec::new(),
                exclude: true,
            });
            user.push(HeavyRule {
                name: "dynamic".into(),
                path: Some(Regex::new("^/").expect("a fixed regex")),
                query: None,
                methods: Vec::new(),
                exclude: false,
            });
        }
        let mut settled = HeavyRules::new(Some(wiki), std::mem::take(&mut self.mw_paths), user);
        settled.choice = Choice::Seen(seen);
        settled.dynamic_default = defaults;
        *self = settled;
    }

    /// The user classes (then the default ones, once settled), in the order they are
    /// tried.
    pub fn rules(&self) -> impl Iterator<Item = &HeavyRule> {
        self.user.iter().map(|(r, _)| r)
    }

    /// The paths of MediaWiki's `index.php` when the MediaWiki rules apply.
    pub fn mediawiki_paths(&self) -> Option<&[String]> {
        self.mediawiki.then_some(self.mw_paths.as_slice())
    }

    /// Class names indexed by [`HeavyClass`] (index 0 is "").
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The name of a class ("" for not heavy).
    pub fn name(&self, c: HeavyClass) -> &str {
        self.names.get(c.0 as usize).map_or("", String::as_str)
    }

    /// A one-line description for report headers: the rules, and how the MediaWiki
    /// ones came to be on or off.
    pub fn describe(&self) -> String {
        let rules = self.describe_rules();
        match self.choice {
            Choice::Seen(_) if self.mediawiki => {
                format!("{rules}; a MediaWiki site (1% or more of the requests to its paths)")
            }
            Choice::Seen(_) if self.dynamic_default => "dynamic: paths that are not static \
                files (images, scripts, styles, fonts, media, archives, .txt, .xml, .json); \
                not a MediaWiki site (under 1% of the requests to its paths; [heavy] in a \
                rules file says otherwise)"
                .to_string(),
            Choice::Seen(_) => {
                format!("{rules}; not a MediaWiki site (under 1% of the requests to its paths)")
            }
            Choice::Configured | Choice::Open => rules,
        }
    }

    fn describe_rules(&self) -> String {
        let mut parts = Vec::new();
        if self.mediawiki {
            parts.push(format!(
                "MediaWiki ({} with search=, diff=, oldid=, action=history|info; Special:Search)",
                self.mw_paths.join(", ")
            ));
        }
        for (r, _) in &self.user {
            parts.push(if r.exclude {
                format!("not {}", r.name)
            } else {
                r.name.clone()
            });
        }
        if parts.is_empty() {
            "no heavy rules".into()
        } else {
            parts.join("; ")
        }
    }

    /// The class of one request.
    #[inline]
    pub fn classify(
        &self,
        method: Option<&str>,
        path: Option<&str>,
        query: Option<&str>,
    ) -> HeavyClass {
        for (r, id) in &self.user {
            if !r.method_and_path_match(method, path) {
                continue;
            }
            if let Some(q) = &r.query
                && !q.is_match(query.unwrap_or(""))
            {
                continue;
            }
            return *id;
        }
        if self.mediawiki {
            return self.mediawiki(path.unwrap_or(""), query);
        }
        HeavyClass::NONE
    }

    /// The class of every request with this method and path when it does not depend on
    /// the query (`None` when it does): what [`HeavyRules::classify`] would answer for
    /// any query. Lets a reader classify once per distinct path.
    pub fn without_query(&self, method: Option<&str>, path: Option<&str>) -> Option<HeavyClass> {
        match self.by_path(method, path) {
            ByPath::Class(c) => Some(c),
            ByPath::Query | ByPath::MediaWikiQuery => None,
        }
    }

    /// What decides the class of the requests with this method and path.
    pub fn by_path(&self, method: Option<&str>, path: Option<&str>) -> ByPath {
        for (r, id) in &self.user {
            if !r.method_and_path_match(method, path) {
                continue;
            }
            if r.query.is_some() {
                return ByPath::Query;
            }
            return ByPath::Class(*id);
        }
        if !self.mediawiki {
            return ByPath::Class(HeavyClass::NONE);
        }
        let path = path.unwrap_or("");
        if is_special_search(last_segment(path).as_bytes()) {
            return ByPath::Class(HeavyClass(5));
        }
        if self.mw_paths.iter().any(|p| p == path) {
            return ByPath::MediaWikiQuery;
        }
        ByPath::Class(HeavyClass::NONE)
    }

    /// Whether any rule looks at the method.
    pub fn uses_method(&self) -> bool {
        self.user.iter().any(|(r, _)| !r.methods.is_empty())
    }

    fn mediawiki(&self, path: &str, query: Option<&str>) -> HeavyClass {
        if is_special_search(last_segment(path).as_bytes()) {
            return HeavyClass(5);
        }
        if !self.mw_paths.iter().any(|p| p == path) {
            return HeavyClass::NONE;
        }
        mediawiki_query(query)
    }

    /// The class of a request to one of the MediaWiki entry points (`index.php`) whose
    /// path no user rule matches: its query's alone ([`ByPath::MediaWikiQuery`]).
    #[inline]
    pub fn mediawiki_query(&self, query: Option<&str>) -> HeavyClass {
        mediawiki_query(query)
    }
}

/// What decides the heavy class of the requests with one method and path
/// ([`HeavyRules::by_path`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByPath {
    /// This class, whatever the query.
    Class(HeavyClass),
    /// A user rule's query pattern: [`HeavyRules::classify`] with the query.
    Query,
    /// The query alone, by the MediaWiki rules: [`HeavyRules::mediawiki_query`].
    MediaWikiQuery,
}

/// The MediaWiki class of an entry point's query. Lowest id wins: diff (1) < oldid (2)
/// < history (3) < info (4) < search (5). The pairs are cut at `&` bytes (a vector
/// search) and a pair's key is what comes before its first `=`: `q.split('&')` and
/// `split_once('=')`, without looking at a byte of a value but those of `action` and
/// `title` (ASCII cuts, so every cut is a char boundary).
fn mediawiki_query(query: Option<&str>) -> HeavyClass {
    let Some(q) = query else {
        return HeavyClass::NONE;
    };
    let b = q.as_bytes();
    // Whether `pair`'s key is `key`, and the value after it.
    fn value<'a>(pair: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
        match pair.get(key.len()) {
            _ if !pair.starts_with(key) => None,
            None => Some(&[]),
            Some(b'=') => Some(&pair[key.len() + 1..]),
            Some(_) => None,
        }
    }
    let mut best = u16::MAX;
    let mut start = 0;
    for end in memchr::memchr_iter(b'&', b).chain(std::iter::once(b.len())) {
        let pair = &b[start..end];
        start = end + 1;
        let c = match pair.first() {
            Some(b'd') if value(pair, b"diff").is_some() => 1,
            Some(b'o') if value(pair, b"oldid").is_some() => 2,
            Some(b'a') => match value(pair, b"action") {
                Some(v) if v.eq_ignore_ascii_case(b"history") => 3,
                Some(v) if v.eq_ignore_ascii_case(b"info") => 4,
                _ => u16::MAX,
            },
            Some(b's') if value(pair, b"search").is_some() => 5,
            // Every form of Special:Search starts with `s`, `S`, `%` or the lead byte
            // of `특`.
            Some(b't') => match value(pair, b"title") {
                Some(v)
                    if matches!(v.first(), Some(b's' | b'S' | b'%' | 0xED))
                        && is_special_search(v) =>
                {
                    5
                }
                _ => u16::MAX,
            },
            _ => u16::MAX,
        };
        best = best.min(c);
        if best == 1 {
            break;
        }
    }
    if best == u16::MAX {
        HeavyClass::NONE
    } else {
        HeavyClass(best)
    }
}

/// What follows the last `/` of a path (all of it without one).
#[inline]
fn last_segment(path: &str) -> &str {
    // A byte search: `/` is ASCII, so the cut is a char boundary.
    match path.bytes().rposition(|c| c == b'/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// `Special:Search` (any case, `:` or `%3A`, with or without `/term`), and the Korean
/// `특수:검색` raw or percent-encoded. On bytes: a match of a whole form ends at a char
/// boundary, and the byte after it is ASCII.
fn is_special_search(title: &[u8]) -> bool {
    const FORMS: [&[u8]; 5] = [
        b"special:search",
        b"special%3asearch",
        "특수:검색".as_bytes(),
        b"%ed%8a%b9%ec%88%98:%ea%b2%80%ec%83%89",
        b"%ed%8a%b9%ec%88%98%3a%ea%b2%80%ec%83%89",
    ];
    FORMS.iter().any(|f| {
        title.len() >= f.len()
            && title[..f.len()].eq_ignore_ascii_case(f)
            && matches!(title.get(f.len()), None | Some(b'/' | b'&'))
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The MediaWiki query rules as written first: `split('&')`, `split_once('=')` and
    /// a match on the key, `Special:Search` on `str`.
    fn mediawiki_query_by_split(q: &str) -> HeavyClass {
        fn special(title: &str) -> bool {
            [
                "special:search",
                "special%3asearch",
                "특수:검색",
                "%ed%8a%b9%ec%88%98:%ea%b2%80%ec%83%89",
                "%ed%8a%b9%ec%88%98%3a%ea%b2%80%ec%83%89",
            ]
            .iter()
            .any(|f| {
                title.len() >= f.len()
                    && title.is_char_boundary(f.len())
                    && title[..f.len()].eq_ignore_ascii_case(f)
                    && title[f.len()..]
                        .chars()
                        .next()
                        .is_none_or(|c| c == '/' || c == '&')
            })
        }
        let best = q
            .split('&')
            .filter_map(|pair| {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                match k {
                    "diff" => Some(1),
                    "oldid" => Some(2),
                    "action" if v.eq_ignore_ascii_case("history") => Some(3),
                    "action" if v.eq_ignore_ascii_case("info") => Some(4),
                    "search" => Some(5),
                    "title" if special(v) => Some(5),
                    _ => None,
                }
            })
            .min();
        best.map_or(HeavyClass::NONE, HeavyClass)
    }

    /// Every separator is found wherever it falls in the query (after and before padding
    /// of 0 to 16 bytes), as `split` and `split_once` find it.
    #[test]
    fn query_scan_finds_separators_at_every_offset() {
        let queries = [
            "diff=1",
            "title=A&action=history",
            "title=A&action=info&x=y",
            "search=a=b&oldid",
            "title=Special%3ASearch&go",
            "a&b=c&title=특수:검색/x",
            "x=&&=diff&action=HISTORY",
        ];
        for pad in 0..17 {
            for q in queries {
                for q in [
                    format!("{}&{q}", "p".repeat(pad)),
                    format!("{q}&{}", "p".repeat(pad)),
                ] {
                    assert_eq!(
                        mediawiki_query(Some(&q)),
                        mediawiki_query_by_split(&q),
                        "{q}"
                    );
                }
            }
        }
        for q in queries {
            assert!(
                mediawiki_query(Some(q)).is_heavy() || q.starts_with("x=&&"),
                "{q}"
            );
        }
    }

    proptest! {
        /// The one-pass query scan classifies as `split` and `split_once` do, on queries
        /// of the keys, values and separators that matter (and look-alikes).
        #[test]
        fn query_scan_is_split_and_split_once(
            parts in prop::collection::vec(0usize..16, 0..12),
        ) {
            const PIECES: [&str; 16] = [
                "diff", "oldid", "action", "search", "title", "=", "&", "history",
                "INFO", "Special:Search", "특수:검색", "%ED%8A%B9%EC%88%98%3A%EA%B2%80%EC%83%89",
                "/x", "di", "ff", "é",
            ];
            let q: String = parts.iter().map(|&k| PIECES[k]).collect();
            prop_assert_eq!(mediawiki_query(Some(&q)), mediawiki_query_by_split(&q), "{}", q);
        }
    }

    fn class(r: &HeavyRules, m: &str, p: &str, q: Option<&str>) -> String {
        r.name(r.classify(Some(m), Some(p), q)).to_string()
    }

    #[test]
    fn mediawiki_rules() {
        let r = HeavyRules::default();
        assert_eq!(
            class(
                &r,
                "GET",
                "/index.php",
                Some("search=foo&title=Special%3ASearch")
            ),
            "search"
        );
        assert_eq!(
            class(&r, "GET", "/w/index.php", Some("title=A&diff=12&oldid=11")),
            "diff"
        );
        assert_eq!(
            class(&r, "GET", "/index.php", Some("title=A&oldid=11")),
            "oldid"
        );
        assert_eq!(
            class(&r, "GET", "/index.php", Some("title=A&action=history")),
            "history"
        );
        assert_eq!(
            class(&r, "GET", "/index.php", Some("title=A&action=info")),
            "info"
        );
        assert_eq!(
            class(&r, "GET", "/index.php", Some("title=Special:Search/foo")),
            "search"
        );
        assert_eq!(class(&r, "GET", "/wiki/Special:Search", None), "search");
        assert_eq!(
            class(
                &r,
                "GET",
                "/wiki/%ED%8A%B9%EC%88%98:%EA%B2%80%EC%83%89",
                None
            ),
            "search"
        );
        // Not heavy: reads, edits' other actions, other paths, look-alike keys.
        assert_eq!(
            class(&r, "GET", "/index.php", Some("title=A&action=edit")),
            ""
        );
        assert_eq!(
            class(&r, "GET", "/index.php", Some("title=Special:BlankPage")),
            ""
        );
        assert_eq!(class(&r, "GET", "/index.php", None), "");
        assert_eq!(class(&r, "GET", "/wiki/Main_Page", None), "");
        assert_eq!(
            class(
                &r,
                "GET",
                "/index.php",
                Some("searchword=x&option=com_search")
            ),
            ""
        );
        assert_eq!(class(&r, "GET", "/other/index.php", Some("search=x")), "");
        assert_eq!(class(&r, "GET", "/wiki/Special:SearchX", None), "");
    }

    #[test]
    fn user_rules_first_and_excludes() {
        let r = HeavyRules::new(
            Some(true),
            vec!["/index.php".into()],
            vec![
                HeavyRule {
                    name: "cheap-info".into(),
                    path: None,
                    query: Some(Regex::new("(^|&)action=info").unwrap()),
                    methods: vec![],
                    exclude: true,
                },
                HeavyRule {
                    name: "api-search".into(),
                    path: Some(Regex::new(r"^/w/api\.php$").unwrap()),
                    query: Some(Regex::new("(^|&)list=search(&|$)").unwrap()),
                    methods: vec!["GET".into(), "POST".into()],
                    exclude: false,
                },
            ],
        );
        assert_eq!(class(&r, "GET", "/index.php", Some("action=info")), "");
        assert_eq!(
            class(&r, "POST", "/w/api.php", Some("action=query&list=search")),
            "api-search"
        );
        assert_eq!(
            class(&r, "HEAD", "/w/api.php", Some("action=query&list=search")),
            ""
        );
        assert_eq!(class(&r, "GET", "/w/index.php", Some("diff=1")), "");
        assert!(r.describe().contains("api-search"));
        let off = HeavyRules::new(Some(false), vec![], vec![]);
        assert_eq!(class(&off, "GET", "/index.php", Some("search=x")), "");
    }

    fn open_rules(user: Vec<HeavyRule>) -> HeavyRules {
        HeavyRules::new(
            None,
            MEDIAWIKI_PATHS.iter().map(|s| s.to_string()).collect(),
            user,
        )
    }

    /// Left open, the rows decide: a MediaWiki keeps its rules; any other site gets the
    /// class `dynamic` (paths that are not static files), and says why in its description.
    #[test]
    fn an_open_choice_is_settled_by_the_site() {
        let seen = |rows, mediawiki_rows| SiteSeen {
            rows,
            mediawiki_rows,
        };
        let mut wiki = open_rules(vec![]);
        assert!(wiki.is_open());
        wiki.settle(seen(1000, 10));
        assert!(!wiki.is_open());
        assert_eq!(class(&wiki, "GET", "/w/index.php", Some("diff=1")), "diff");
        assert_eq!(class(&wiki, "GET", "/", None), "");
        assert!(wiki.describe().contains("; a MediaWiki site (1% or more"));

        // A scanner's 9 probes in 1,000 requests do not make a wiki.
        let mut other = open_rules(vec![]);
        other.settle(seen(1000, 9));
        assert_eq!(
            class(&other, "GET", "/w/index.php", Some("diff=1")),
            "dynamic"
        );
        assert_eq!(
            class(&other, "GET", "/cgi-bin/imagemap/countdown", Some("1,2")),
            "dynamic"
        );
        assert_eq!(class(&other, "POST", "/", None), "dynamic");
        assert_eq!(class(&other, "GET", "/x/index.html", None), "dynamic");
        for asset in ["/images/NASA-logosmall.gif", "/a/B.CSS", "/robots.txt"] {
            assert_eq!(class(&other, "GET", asset, None), "", "{asset}");
        }
        // A request that is not HTTP has no path: not a request to the site.
        assert_eq!(class(&other, "GET", "", None), "");
        assert!(
            other.describe().starts_with("dynamic: "),
            "{}",
            other.describe()
        );
        assert!(other.describe().contains("(under 1% of the requests"));
        // Settled once: a second look changes nothing.
        other.settle(seen(10, 10));
        assert_eq!(class(&other, "GET", "/", None), "dynamic");

        // The site's own classes stay the only ones on a site that is not a wiki.
        let own = HeavyRule {
            name: "search".into(),
            path: Some(Regex::new("^/search$").unwrap()),
            query: None,
            methods: vec![],
            exclude: false,
        };
        let mut mine = open_rules(vec![own]);
        mine.settle(seen(100, 0));
        assert_eq!(class(&mine, "GET", "/search", None), "search");
        assert_eq!(class(&mine, "GET", "/", None), "");
        assert_eq!(class(&mine, "GET", "/w/index.php", Some("diff=1")), "");

        // Said in the file: the rows decide nothing.
        let mut said = HeavyRules::default();
        said.settle(seen(100, 0));
        assert_eq!(class(&said, "GET", "/w/index.php", Some("diff=1")), "diff");
    }

    #[test]
    fn mediawiki_paths() {
        assert!(is_mediawiki_path("/wiki/Main_Page"));
        assert!(is_mediawiki_path("/w/load.php"));
        assert!(is_mediawiki_path("/load.php"));
        assert!(is_mediawiki_path("/x/Special:Search"));
        assert!(!is_mediawiki_path("/index.php"));
        assert!(!is_mediawiki_path("/wikipedia"));
    }
}
