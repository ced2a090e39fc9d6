//! User-agent classification: family, device and declared crawler, cached per distinct
//! User-Agent string.
//!
//! Sources, in the order they are tried:
//!
//! 1. the user's `[[agent]]` entries from the config (regexes, first match wins);
//! 2. logscope's list of **declared crawlers** ([`CRAWLERS`]: AI crawlers such as GPTBot,
//!    ClaudeBot, CCBot, Bytespider, PerplexityBot, Amazonbot, meta-externalagent,
//!    OAI-SearchBot, Applebot-Extended; search engines; SEO, social, monitoring and
//!    scanner bots) and of **tools** ([`TOOLS`]: curl, python-requests, Go-http-client …),
//!    matched case-insensitively as substrings — the crates on crates.io either know no
//!    AI crawler (woothee's crawler list predates them) or only answer "bot or not"
//!    (isbot), so this list is kept here, next to the code that uses it;
//! 3. any agent that calls itself a bot (`bot`, `crawler`, `spider`, `+http…` …);
//! 4. the [`woothee`] crate (Apache-2.0, a port of the multi-language woothee project
//!    with a compiled-in dataset, no data file to ship) for the browser family and the
//!    operating system, from which the device follows (iPhone/iPad/iPod → iOS, Android,
//!    PC → desktop).
//!
//! A User-Agent header is a claim, not a fact: "iOS" means "says it is an iPhone".

use std::fmt;

use regex::Regex;
use rustc_hash::FxHashMap;
use serde::Serialize;

/// What kind of client an agent claims to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    /// A browser or app on an iPhone, iPad or iPod.
    Ios,
    /// A browser or app on Android.
    Android,
    /// A desktop browser (Windows, macOS, Linux, ChromeOS, BSD).
    Desktop,
    /// Another device that is not a bot: other phones, consoles, TVs, feed readers.
    Other,
    /// A command-line tool or HTTP library (curl, python-requests, Go-http-client …).
    Tool,
    /// A crawler or other bot that says so.
    Bot,
    /// No User-Agent, or one nothing recognises.
    Unknown,
}

impl Device {
    /// Every device, in report order.
    pub const ALL: [Device; 7] = [
        Device::Ios,
        Device::Android,
        Device::Desktop,
        Device::Other,
        Device::Tool,
        Device::Bot,
        Device::Unknown,
    ];

    /// The lower-case name used in reports and `--agent`.
    pub fn name(self) -> &'static str {
        match self {
            Device::Ios => "ios",
            Device::Android => "android",
            Device::Desktop => "desktop",
            Device::Other => "other",
            Device::Tool => "tool",
            Device::Bot => "bot",
            Device::Unknown => "unknown",
        }
    }

    /// Parses a device name.
    pub fn parse(s: &str) -> Option<Device> {
        Device::ALL
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(s))
    }

    /// Whether this is a mobile browser (iOS or Android).
    pub fn is_mobile(self) -> bool {
        matches!(self, Device::Ios | Device::Android)
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a declared bot is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BotKind {
    /// AI training, AI search or AI assistant fetchers.
    Ai,
    /// Search-engine crawlers.
    Search,
    /// SEO and marketing crawlers.
    Seo,
    /// Link previews of social networks and chat apps.
    Social,
    /// Uptime and performance monitors.
    Monitor,
    /// Vulnerability scanners.
    Scanner,
    /// Anything else that says it is a bot.
    Other,
}

impl BotKind {
    /// Every kind, in report order.
    pub const ALL: [BotKind; 7] = [
        BotKind::Ai,
        BotKind::Search,
        BotKind::Seo,
        BotKind::Social,
        BotKind::Monitor,
        BotKind::Scanner,
        BotKind::Other,
    ];

    /// The lower-case name used in reports, configs and `--agent`.
    pub fn name(self) -> &'static str {
        match self {
            BotKind::Ai => "ai",
            BotKind::Search => "search",
            BotKind::Seo => "seo",
            BotKind::Social => "social",
            BotKind::Monitor => "monitor",
            BotKind::Scanner => "scanner",
            BotKind::Other => "other-bot",
        }
    }

    /// Parses a kind name (`other` is accepted for `other-bot`).
    pub fn parse(s: &str) -> Option<BotKind> {
        if s.eq_ignore_ascii_case("other") {
            return Some(BotKind::Other);
        }
        BotKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
    }
}

/// Declared crawlers: (lower-case needle, name, kind). Order matters: the first needle
/// found in the lower-cased agent wins, so specific names come before general ones.
pub const CRAWLERS: &[(&str, &str, BotKind)] = &[
    // AI crawlers and fetchers.
    ("gptbot", "GPTBot", BotKind::Ai),
    ("oai-searchbot", "OAI-SearchBot", BotKind::Ai),
    ("chatgpt-user", "ChatGPT-User", BotKind::Ai),
    ("chatgpt agent", "ChatGPT-Agent", BotKind::Ai),
    ("claudebot", "ClaudeBot", BotKind::Ai),
    ("claude-searchbot", "Claude-SearchBot", BotKind::Ai),
    ("claude-user", "Claude-User", BotKind::Ai),
    ("claude-web", "Claude-Web", BotKind::Ai),
    ("anthropic-ai", "anthropic-ai", BotKind::Ai),
    ("ccbot", "CCBot", BotKind::Ai),
    ("bytespider", "Bytespider", BotKind::Ai),
    ("tiktokspider", "TikTokSpider", BotKind::Ai),
    ("perplexitybot", "PerplexityBot", BotKind::Ai),
    ("perplexity-user", "Perplexity-User", BotKind::Ai),
    ("amazonbot", "Amazonbot", BotKind::Ai),
    ("meta-externalagent", "meta-externalagent", BotKind::Ai),
    ("meta-externalfetcher", "meta-externalfetcher", BotKind::Ai),
    ("facebookbot", "FacebookBot", BotKind::Ai),
    ("applebot-extended", "Applebot-Extended", BotKind::Ai),
    (
        "google-cloudvertexbot",
        "Google-CloudVertexBot",
        BotKind::Ai,
    ),
    ("googleother", "GoogleOther", BotKind::Ai),
    (
        "cohere-training-data-crawler",
        "cohere-training-data-crawler",
        BotKind::Ai,
    ),
    ("cohere-ai", "cohere-ai", BotKind::Ai),
    ("diffbot", "Diffbot", BotKind::Ai),
    ("youbot", "YouBot", BotKind::Ai),
    ("duckassistbot", "DuckAssistBot", BotKind::Ai),
    ("mistralai-user", "MistralAI-User", BotKind::Ai),
    ("ai2bot", "AI2Bot", BotKind::Ai),
    ("timpibot", "Timpibot", BotKind::Ai),
    ("imagesiftbot", "ImagesiftBot", BotKind::Ai),
    ("omgili", "omgili", BotKind::Ai),
    ("webzio-extended", "Webzio-Extended", BotKind::Ai),
    ("kangaroo bot", "Kangaroo Bot", BotKind::Ai),
    ("panscient", "panscient", BotKind::Ai),
    ("iaskspider", "iaskspider", BotKind::Ai),
    ("petalbot", "PetalBot", BotKind::Search),
    // Search engines.
    ("googlebot-image", "Googlebot-Image", BotKind::Search),
    ("googlebot-video", "Googlebot-Video", BotKind::Search),
    ("googlebot-news", "Googlebot-News", BotKind::Search),
    ("googlebot", "Googlebot", BotKind::Search),
    ("adsbot-google", "AdsBot-Google", BotKind::Search),
    (
        "mediapartners-google",
        "Mediapartners-Google",
        BotKind::Search,
    ),
    ("storebot-google", "Storebot-Google", BotKind::Search),
    (
        "google-inspectiontool",
        "Google-InspectionTool",
        BotKind::Search,
    ),
    ("feedfetcher-google", "Feedfetcher-Google", BotKind::Search),
    ("apis-google", "APIs-Google", BotKind::Search),
    ("bingbot", "bingbot", BotKind::Search),
    ("bingpreview", "BingPreview", BotKind::Search),
    ("adidxbot", "adidxbot", BotKind::Search),
    ("msnbot", "msnbot", BotKind::Search),
    ("applebot", "Applebot", BotKind::Search),
    ("yandex", "YandexBot", BotKind::Search),
    ("baiduspider", "Baiduspider", BotKind::Search),
    ("duckduckbot", "DuckDuckBot", BotKind::Search),
    (
        "duckduckgo-favicons-bot",
        "DuckDuckGo-Favicons-Bot",
        BotKind::Search,
    ),
    ("yahoo! slurp", "Yahoo! Slurp", BotKind::Search),
    ("seznambot", "SeznamBot", BotKind::Search),
    ("yeti/", "Yeti", BotKind::Search),
    ("daum", "Daum", BotKind::Search),
    ("sogou", "Sogou", BotKind::Search),
    ("exabot", "Exabot", BotKind::Search),
    ("qwantbot", "Qwantbot", BotKind::Search),
    ("qwantify", "Qwantify", BotKind::Search),
    ("mojeekbot", "MojeekBot", BotKind::Search),
    ("coccocbot", "coccocbot", BotKind::Search),
    ("naverbot", "NaverBot", BotKind::Search),
    ("ia_archiver", "ia_archiver", BotKind::Search),
    ("archive.org_bot", "archive.org_bot", BotKind::Search),
    // SEO and marketing.
    ("ahrefsbot", "AhrefsBot", BotKind::Seo),
    ("ahrefssiteaudit", "AhrefsSiteAudit", BotKind::Seo),
    ("semrushbot", "SemrushBot", BotKind::Seo),
    ("mj12bot", "MJ12bot", BotKind::Seo),
    ("dotbot", "DotBot", BotKind::Seo),
    ("blexbot", "BLEXBot", BotKind::Seo),
    ("dataforseobot", "DataForSeoBot", BotKind::Seo),
    ("serpstatbot", "serpstatbot", BotKind::Seo),
    ("barkrowler", "Barkrowler", BotKind::Seo),
    ("megaindex", "MegaIndex", BotKind::Seo),
    ("rogerbot", "rogerbot", BotKind::Seo),
    ("screaming frog", "Screaming Frog", BotKind::Seo),
    ("seokicks", "SEOkicks", BotKind::Seo),
    ("linkdexbot", "linkdexbot", BotKind::Seo),
    // Social previews.
    (
        "facebookexternalhit",
        "facebookexternalhit",
        BotKind::Social,
    ),
    ("facebookcatalog", "facebookcatalog", BotKind::Social),
    ("twitterbot", "Twitterbot", BotKind::Social),
    ("linkedinbot", "LinkedInBot", BotKind::Social),
    ("slackbot", "Slackbot", BotKind::Social),
    ("discordbot", "Discordbot", BotKind::Social),
    ("telegrambot", "TelegramBot", BotKind::Social),
    ("whatsapp", "WhatsApp", BotKind::Social),
    ("pinterestbot", "Pinterestbot", BotKind::Social),
    ("redditbot", "redditbot", BotKind::Social),
    ("embedly", "Embedly", BotKind::Social),
    ("skypeuripreview", "SkypeUriPreview", BotKind::Social),
    ("kakaotalk-scrap", "kakaotalk-scrap", BotKind::Social),
    // Monitoring.
    ("uptimerobot", "UptimeRobot", BotKind::Monitor),
    ("pingdom", "Pingdom", BotKind::Monitor),
    ("statuscake", "StatusCake", BotKind::Monitor),
    ("site24x7", "Site24x7", BotKind::Monitor),
    ("datadog", "Datadog", BotKind::Monitor),
    ("newrelicpinger", "NewRelicPinger", BotKind::Monitor),
    ("betteruptime", "BetterUptime", BotKind::Monitor),
    ("freshping", "Freshping", BotKind::Monitor),
    ("checkly", "Checkly", BotKind::Monitor),
    // Scanners.
    ("nikto", "Nikto", BotKind::Scanner),
    ("sqlmap", "sqlmap", BotKind::Scanner),
    ("nmap", "Nmap", BotKind::Scanner),
    ("masscan", "masscan", BotKind::Scanner),
    ("zgrab", "zgrab", BotKind::Scanner),
    ("acunetix", "Acunetix", BotKind::Scanner),
    ("netsparker", "Netsparker", BotKind::Scanner),
    ("w3af", "w3af", BotKind::Scanner),
    ("nuclei", "Nuclei", BotKind::Scanner),
    ("wpscan", "WPScan", BotKind::Scanner),
    ("censysinspect", "CensysInspect", BotKind::Scanner),
    ("expanse", "Expanse", BotKind::Scanner),
    (
        "internetmeasurement",
        "InternetMeasurement",
        BotKind::Scanner,
    ),
    ("morfeus", "Morfeus", BotKind::Scanner),
];

/// Tools and HTTP libraries: (lower-case needle, family). First match wins.
pub const TOOLS: &[(&str, &str)] = &[
    ("curl/", "curl"),
    ("libcurl", "curl"),
    ("wget/", "Wget"),
    ("python-requests", "python-requests"),
    ("python-urllib", "Python-urllib"),
    ("python-httpx", "python-httpx"),
    ("python/", "Python"),
    ("aiohttp", "aiohttp"),
    ("scrapy", "Scrapy"),
    ("go-http-client", "Go-http-client"),
    ("okhttp", "okhttp"),
    ("apache-httpclient", "Apache-HttpClient"),
    ("java/", "Java"),
    ("libwww-perl", "libwww-perl"),
    ("lwp::simple", "libwww-perl"),
    ("postmanruntime", "PostmanRuntime"),
    ("insomnia", "Insomnia"),
    ("axios/", "axios"),
    ("node-fetch", "node-fetch"),
    ("undici", "undici"),
    ("got (https://github.com/sindresorhus/got)", "got"),
    ("guzzlehttp", "GuzzleHttp"),
    ("php/", "PHP"),
    ("ruby", "Ruby"),
    ("faraday", "Faraday"),
    ("httpie", "HTTPie"),
    ("powershell", "PowerShell"),
    ("winhttp", "WinHTTP"),
    ("headlesschrome", "HeadlessChrome"),
    ("phantomjs", "PhantomJS"),
    ("reqwest", "reqwest"),
    ("dart:io", "Dart"),
    ("http_request2", "HTTP_Request2"),
    ("jakarta commons-httpclient", "Commons-HttpClient"),
];

/// A user rule from the config: agents matching `regex` get this name and device.
#[derive(Clone, Debug)]
pub struct AgentRule {
    /// Family / label shown in reports.
    pub name: String,
    /// Matched against the raw User-Agent.
    pub regex: Regex,
    /// Device (default: bot).
    pub device: Device,
    /// For bots: what it is for (default: other).
    pub kind: Option<BotKind>,
}

/// The classification of one distinct agent.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct AgentInfo {
    /// The family: browser (`Chrome`, `Safari`), tool (`curl`) or crawler (`GPTBot`).
    pub family: String,
    /// The device it claims.
    pub device: Device,
    /// For declared bots: what it is for.
    pub bot: Option<BotKind>,
    /// Whether the name comes from a list of known crawlers (not a generic "bot" word).
    pub declared: bool,
    /// The short class shown in reports: the crawler's or tool's name, else the device.
    pub label: String,
}

/// Index of an [`AgentInfo`] in a classifier's table.
pub type AgentId = u32;

/// Classifies User-Agent strings, each distinct string once.
#[derive(Debug)]
pub struct AgentClassifier {
    rules: Vec<AgentRule>,
    cache: FxHashMap<Box<str>, AgentId>,
    infos: Vec<AgentInfo>,
    by_info: FxHashMap<AgentInfo, AgentId>,
    lower: String,
}

/// The id of "no User-Agent" in every classifier.
pub const NO_AGENT: AgentId = 0;

impl Default for AgentClassifier {
    fn default() -> Self {
        AgentClassifier::new(Vec::new())
    }
}

impl AgentClassifier {
    /// A classifier with the user's rules tried first.
    pub fn new(rules: Vec<AgentRule>) -> AgentClassifier {
        let mut c = AgentClassifier {
            rules,
            cache: FxHashMap::default(),
            infos: Vec::new(),
            by_info: FxHashMap::default(),
            lower: String::new(),
        };
        let none = AgentInfo {
            family: "(none)".into(),
            device: Device::Unknown,
            bot: None,
            declared: false,
            label: "unknown".into(),
        };
        c.intern(none);
        c
    }

    fn intern(&mut self, info: AgentInfo) -> AgentId {
        if let Some(&id) = self.by_info.get(&info) {
            return id;
        }
        let id = self.infos.len() as AgentId;
        self.infos.push(info.clone());
        self.by_info.insert(info, id);
        id
    }

    /// The id of `ua` (cached: one classification per distinct string).
    #[inline]
    pub fn id(&mut self, ua: Option<&str>) -> AgentId {
        let Some(ua) = ua.filter(|u| !u.is_empty() && *u != "-") else {
            return NO_AGENT;
        };
        if let Some(&id) = self.cache.get(ua) {
            return id;
        }
        let info = self.classify(ua);
        let id = self.intern(info);
        self.cache.insert(ua.into(), id);
        id
    }

    /// The classification behind an id.
    pub fn info(&self, id: AgentId) -> &AgentInfo {
        &self.infos[id as usize]
    }

    /// Every distinct classification seen so far, indexed by id.
    pub fn infos(&self) -> &[AgentInfo] {
        &self.infos
    }

    /// Number of distinct User-Agent strings seen.
    pub fn distinct_strings(&self) -> usize {
        self.cache.len()
    }

    /// Classifies one agent string (uncached).
    pub fn classify(&mut self, ua: &str) -> AgentInfo {
        for r in &self.rules {
            if r.regex.is_match(ua) {
                let bot = match r.device {
                    Device::Bot => Some(r.kind.unwrap_or(BotKind::Other)),
                    _ => None,
                };
                return AgentInfo {
                    family: r.name.clone(),
                    device: r.device,
                    bot,
                    declared: bot.is_some(),
                    label: r.name.clone(),
                };
            }
        }
        self.lower.clear();
        self.lower
            .extend(ua.chars().map(|c| c.to_ascii_lowercase()));
        let lower = self.lower.as_str();
        if let Some((_, name, kind)) = CRAWLERS.iter().find(|(n, _, _)| lower.contains(n)) {
            return bot(name, *kind, true);
        }
        if let Some((_, fam)) = TOOLS.iter().find(|(n, _)| lower.contains(n)) {
            return AgentInfo {
                family: (*fam).into(),
                device: Device::Tool,
                bot: None,
                declared: false,
                label: (*fam).into(),
            };
        }
        if lower.starts_with("cfnetwork/")
            || (lower.contains("cfnetwork/") && lower.contains("darwin/"))
        {
            return device_info("iOS app", Device::Ios);
        }
        let w = woothee::parser::Parser::new().parse(ua);
        if let Some(w) = &w
            && w.category == "crawler"
        {
            let name = if w.name == "misc crawler" || w.name == "UNKNOWN" {
                bot_token(ua)
            } else {
                w.name.to_string()
            };
            return bot(&name, BotKind::Other, false);
        }
        if looks_like_bot(lower) {
            return bot(&bot_token(ua), BotKind::Other, false);
        }
        let Some(w) = w else {
            return device_info(&product_token(ua), Device::Unknown);
        };
        let device = match (w.os, w.category) {
            ("iPhone" | "iPad" | "iPod" | "iOS", _) => Device::Ios,
            ("Android", _) => Device::Android,
            (_, "pc") => Device::Desktop,
            (_, "smartphone" | "mobilephone" | "appliance") => Device::Other,
            (_, "misc") => Device::Tool,
            _ => Device::Unknown,
        };
        let family = if w.name == "UNKNOWN" {
            if device == Device::Unknown {
                product_token(ua)
            } else {
                "(unrecognised browser)".to_string()
            }
        } else {
            browser_family(w.name, lower)
        };
        if device == Device::Tool {
            return AgentInfo {
                label: family.clone(),
                family,
                device,
                bot: None,
                declared: false,
            };
        }
        device_info(&family, device)
    }
}

/// The operating system a User-Agent claims, as woothee names it (`Windows 10`, `Mac
/// OSX`, `Linux`, `Android`, `iPhone`, …); `(crawler)` for an agent that says it is a
/// bot (the same lists as [`AgentClassifier::classify`]), `(unknown)` when nothing is
/// said. Built-in rules only: a rules file's `[[agent]]` entries name families, not
/// systems.
pub fn operating_system(ua: Option<&str>) -> String {
    let Some(ua) = ua.filter(|u| !u.is_empty() && *u != "-") else {
        return "(unknown)".into();
    };
    let lower = ua.to_ascii_lowercase();
    if CRAWLERS.iter().any(|(n, _, _)| lower.contains(n)) || looks_like_bot(&lower) {
        return "(crawler)".into();
    }
    match woothee::parser::Parser::new().parse(ua) {
        Some(w) if w.category == "crawler" => "(crawler)".into(),
        Some(w) if w.os != "UNKNOWN" && !w.os.is_empty() => w.os.to_string(),
        _ => "(unknown)".into(),
    }
}

fn bot(name: &str, kind: BotKind, declared: bool) -> AgentInfo {
    AgentInfo {
        family: name.into(),
        device: Device::Bot,
        bot: Some(kind),
        declared,
        label: name.into(),
    }
}

fn device_info(family: &str, device: Device) -> AgentInfo {
    AgentInfo {
        family: family.into(),
        device,
        bot: None,
        declared: false,
        label: device.name().into(),
    }
}

/// Browser family from woothee's name, with the newer Chromium brands it folds into
/// "Chrome" or "Safari" told apart.
fn browser_family(name: &str, lower: &str) -> String {
    let refined = if lower.contains("edg/") || lower.contains("edga/") || lower.contains("edgios/")
    {
        "Edge"
    } else if lower.contains("samsungbrowser/") {
        "Samsung Internet"
    } else if lower.contains("opr/") || lower.contains("opt/") {
        "Opera"
    } else if lower.contains("crios/") {
        "Chrome"
    } else if lower.contains("fxios/") {
        "Firefox"
    } else if lower.contains("whale/") {
        "Whale"
    } else if lower.contains("yabrowser/") {
        "Yandex Browser"
    } else if lower.contains("; wv)") {
        "Android WebView"
    } else {
        name
    };
    refined.to_string()
}

/// Words with which agents declare themselves bots.
fn looks_like_bot(lower: &str) -> bool {
    const WORDS: [&str; 8] = [
        "bot", "crawler", "spider", "crawl", "slurp", "scanner", "+http", "archiver",
    ];
    WORDS.iter().any(|w| lower.contains(w))
}

/// The token that names a bot (`Mozilla/5.0 (compatible; FooBot/1.0; +http…)` → `FooBot`),
/// else the first product token.
fn bot_token(ua: &str) -> String {
    let named = ua.split([';', '(', ')', ' ', ',']).find(|t| {
        let l = t.to_ascii_lowercase();
        !l.starts_with("+http")
            && !l.starts_with("http")
            && ["bot", "crawl", "spider", "slurp", "archiver"]
                .iter()
                .any(|w| l.contains(w))
    });
    match named {
        Some(t) => t.split('/').next().unwrap_or(t).chars().take(40).collect(),
        None => product_token(ua),
    }
}

/// The first product token of an agent (`Foo/1.2 (…)` → `Foo`), at most 40 characters.
fn product_token(ua: &str) -> String {
    let t = ua
        .trim_start_matches(|c: char| c == '"' || c.is_whitespace())
        .split(['/', ' ', ';', '(', ')'])
        .find(|s| !s.is_empty())
        .unwrap_or("(unknown)");
    let t = if t.eq_ignore_ascii_case("mozilla") {
        "(unrecognised Mozilla)"
    } else {
        t
    };
    t.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(ua: &str) -> AgentInfo {
        let mut a = AgentClassifier::default();
        let id = a.id(Some(ua));
        a.info(id).clone()
    }

    #[test]
    fn ai_crawlers_are_declared_bots() {
        for (ua, name) in [
            (
                "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
                "GPTBot",
            ),
            (
                "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)",
                "ClaudeBot",
            ),
            ("CCBot/2.0 (https://commoncrawl.org/faq/)", "CCBot"),
            (
                "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)",
                "Bytespider",
            ),
            (
                "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)",
                "PerplexityBot",
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/15.5 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)",
                "Applebot",
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 13_1_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.0.1 Mobile/15E148 Safari/604.1 (compatible; Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)",
                "Amazonbot",
            ),
            (
                "meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)",
                "meta-externalagent",
            ),
            (
                "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot",
                "OAI-SearchBot",
            ),
        ] {
            let i = c(ua);
            assert_eq!(i.family, name, "{ua}");
            assert_eq!(i.device, Device::Bot);
            assert!(i.declared);
            if name != "Applebot" {
                assert_eq!(i.bot, Some(BotKind::Ai), "{ua}");
            }
        }
        let g = c("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)");
        assert_eq!(
            (g.label.as_str(), g.bot),
            ("Googlebot", Some(BotKind::Search))
        );
        let b = c("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)");
        assert_eq!(b.label, "bingbot");
    }

    #[test]
    fn phones_desktops_tools() {
        let i = c(
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
        );
        assert_eq!(
            (i.device, i.family.as_str(), i.label.as_str()),
            (Device::Ios, "Safari", "ios")
        );
        let i = c(
            "Mozilla/5.0 (Linux; Android 14; SM-S918N) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36",
        );
        assert_eq!(
            (i.device, i.family.as_str()),
            (Device::Android, "Samsung Internet")
        );
        let i = c(
            "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
        );
        assert_eq!((i.device, i.family.as_str()), (Device::Android, "Chrome"));
        let i = c(
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0",
        );
        assert_eq!((i.device, i.family.as_str()), (Device::Desktop, "Edge"));
        let i = c("Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0");
        assert_eq!((i.device, i.family.as_str()), (Device::Desktop, "Firefox"));
        for (ua, fam) in [
            ("curl/7.54.0", "curl"),
            ("python-requests/2.31.0", "python-requests"),
            ("Go-http-client/1.1", "Go-http-client"),
            ("Wget/1.21.4", "Wget"),
        ] {
            let i = c(ua);
            assert_eq!(
                (i.device, i.family.as_str(), i.label.as_str()),
                (Device::Tool, fam, fam)
            );
        }
        let i = c("kmdjdheyytgebfghehhenegsdfsdf");
        assert_eq!(i.device, Device::Unknown);
        assert_eq!(i.label, "unknown");
        let mut a = AgentClassifier::default();
        assert_eq!(a.id(None), NO_AGENT);
        assert_eq!(a.id(Some("-")), NO_AGENT);
        assert_eq!(a.info(NO_AGENT).device, Device::Unknown);
    }

    #[test]
    fn generic_bots_and_user_rules() {
        let i = c("SomeNewThing/0.3 (+https://example.org/bot.html)");
        assert_eq!(
            (i.device, i.declared, i.family.as_str()),
            (Device::Bot, false, "SomeNewThing")
        );
        let mut a = AgentClassifier::new(vec![AgentRule {
            name: "WikiMonitor".into(),
            regex: Regex::new("wiki-monitor/").unwrap(),
            device: Device::Bot,
            kind: Some(BotKind::Monitor),
        }]);
        let id = a.id(Some("wiki-monitor/1.0 curl/8"));
        assert_eq!(a.info(id).label, "WikiMonitor");
        assert_eq!(a.info(id).bot, Some(BotKind::Monitor));
        // Cached: the same string gives the same id, equal classifications share one.
        assert_eq!(a.id(Some("wiki-monitor/1.0 curl/8")), id);
        let x = a.id(Some("curl/8.1"));
        let y = a.id(Some("curl/7.0"));
        assert_eq!(x, y);
        assert_eq!(a.distinct_strings(), 3);
    }
}
