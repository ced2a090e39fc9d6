//! Which requests a rule covers (matchers) and which it lets through untouched
//! (exemptions).

use ipnet::IpNet;
use regex::bytes::Regex;

use super::key::canonical;
use super::request::Request;

/// Conditions on a request; all given ones must hold (a list matches if any entry does).
/// The empty matcher matches every request.
#[derive(Clone, Debug, Default)]
pub struct Matcher {
    /// Path starts with one of these.
    pub path_prefix: Vec<Vec<u8>>,
    /// Path is one of these.
    pub path: Vec<Vec<u8>>,
    /// Path matches.
    pub path_regex: Option<Regex>,
    /// Query string matches (a request without a query is matched as empty).
    pub query_regex: Option<Regex>,
    /// Method is one of these (case-insensitive).
    pub method: Vec<Vec<u8>>,
    /// Status is one of these.
    pub status: Vec<u16>,
    /// Host is one of these (case-insensitive).
    pub host: Vec<Vec<u8>>,
    /// User agent matches (a missing agent is matched as empty).
    pub ua_regex: Option<Regex>,
    /// The authenticated user is one of these (a tier list), with credentials the
    /// server accepted (a status that is not a [`CREDENTIAL_REFUSALS`]).
    pub user: Vec<Vec<u8>>,
    /// The authenticated user matches (accepted credentials, as for `user`).
    pub user_regex: Option<Regex>,
    /// Referer matches (a missing referer is matched as empty).
    pub referer_regex: Option<Regex>,
    /// Referer present (true) or absent (false).
    pub has_referer: Option<bool>,
    /// Cookie header present or absent (requests whose log cannot tell never match).
    pub has_cookie: Option<bool>,
    /// The caller's heavy flag.
    pub heavy: Option<bool>,
    /// Identified (true) or not identified (false) client.
    pub identified: Option<bool>,
    /// Known anonymous (true) or not (false) client: the classifier's definition
    /// ([`Request::anonymous`]), the one `--anonymous` selects; unknown is not anonymous.
    pub anonymous: Option<bool>,
    /// Client address in one of these networks.
    pub cidr: Vec<IpNet>,
    /// None of these sub-matchers may match.
    pub not: Vec<Matcher>,
}

impl Matcher {
    /// Whether this matcher has no condition (matches everything).
    pub fn is_empty(&self) -> bool {
        self.path_prefix.is_empty()
            && self.path.is_empty()
            && self.path_regex.is_none()
            && self.query_regex.is_none()
            && self.method.is_empty()
            && self.status.is_empty()
            && self.host.is_empty()
            && self.ua_regex.is_none()
            && self.user.is_empty()
            && self.user_regex.is_none()
            && self.referer_regex.is_none()
            && self.has_referer.is_none()
            && self.has_cookie.is_none()
            && self.heavy.is_none()
            && self.identified.is_none()
            && self.anonymous.is_none()
            && self.cidr.is_empty()
            && self.not.is_empty()
    }

    /// The conditions in short words (`path ^/ip/; query ~ search=; anonymous`), or
    /// `every request`.
    pub fn describe(&self) -> String {
        let list = |v: &[Vec<u8>]| {
            v.iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect::<Vec<_>>()
                .join("|")
        };
        let mut parts: Vec<String> = Vec::new();
        if !self.path_prefix.is_empty() {
            parts.push(format!("path ^{}", list(&self.path_prefix)));
        }
        if !self.path.is_empty() {
            parts.push(format!("path = {}", list(&self.path)));
        }
        if let Some(re) = &self.path_regex {
            parts.push(format!("path ~ {re}"));
        }
        if let Some(re) = &self.query_regex {
            parts.push(format!("query ~ {re}"));
        }
        if !self.method.is_empty() {
            parts.push(format!("method {}", list(&self.method)));
        }
        if !self.status.is_empty() {
            let st: Vec<String> = self.status.iter().map(u16::to_string).collect();
            parts.push(format!("status {}", st.join("|")));
        }
        if !self.host.is_empty() {
            parts.push(format!("host {}", list(&self.host)));
        }
        if let Some(re) = &self.ua_regex {
            parts.push(format!("agent ~ {re}"));
        }
        if !self.user.is_empty() {
            parts.push(format!("user {}", list(&self.user)));
        }
        if let Some(re) = &self.user_regex {
            parts.push(format!("user ~ {re}"));
        }
        if let Some(re) = &self.referer_regex {
            parts.push(format!("referer ~ {re}"));
        }
        if let Some(b) = self.has_referer {
            parts.push(if b { "with referer" } else { "no referer" }.into());
        }
        if let Some(b) = self.has_cookie {
            parts.push(if b { "with cookie" } else { "no cookie" }.into());
        }
        if let Some(b) = self.heavy {
            parts.push(if b { "heavy" } else { "not heavy" }.into());
        }
        if let Some(b) = self.identified {
            parts.push(if b { "identified" } else { "not identified" }.into());
        }
        if let Some(b) = self.anonymous {
            parts.push(if b { "anonymous" } else { "not anonymous" }.into());
        }
        if !self.cidr.is_empty() {
            let n: Vec<String> = self.cidr.iter().map(|c| c.to_string()).collect();
            parts.push(format!("from {}", n.join("|")));
        }
        for m in &self.not {
            parts.push(format!("not ({})", m.describe()));
        }
        if parts.is_empty() {
            "every request".into()
        } else {
            parts.join("; ")
        }
    }

    /// Whether `req` satisfies every condition.
    pub fn matches(&self, req: &Request<'_>) -> bool {
        let path = req.path.unwrap_or(b"");
        if !self.path_prefix.is_empty() && !self.path_prefix.iter().any(|p| path.starts_with(p)) {
            return false;
        }
        if !self.path.is_empty() && !self.path.iter().any(|p| p.as_slice() == path) {
            return false;
        }
        if let Some(re) = &self.path_regex
            && !re.is_match(path)
        {
            return false;
        }
        if let Some(re) = &self.query_regex
            && !re.is_match(req.query.unwrap_or(b""))
        {
            return false;
        }
        if !self.method.is_empty() {
            let m = req.method.unwrap_or(b"");
            if !self.method.iter().any(|x| x.eq_ignore_ascii_case(m)) {
                return false;
            }
        }
        if !self.status.is_empty() && !self.status.contains(&req.status) {
            return false;
        }
        if !self.host.is_empty() {
            let h = req.host.unwrap_or(b"");
            if !self.host.iter().any(|x| x.eq_ignore_ascii_case(h)) {
                return false;
            }
        }
        if let Some(re) = &self.ua_regex
            && !re.is_match(req.user_agent.unwrap_or(b""))
        {
            return false;
        }
        if !self.user.is_empty() || self.user_regex.is_some() {
            let Some(u) = req
                .user
                .filter(|_| !CREDENTIAL_REFUSALS.contains(&req.status))
            else {
                return false;
            };
            if !self.user.is_empty() && !self.user.iter().any(|x| x.as_slice() == u) {
                return false;
            }
            if let Some(re) = &self.user_regex
                && !re.is_match(u)
            {
                return false;
            }
        }
        if let Some(re) = &self.referer_regex
            && !re.is_match(req.referer.unwrap_or(b""))
        {
            return false;
        }
        if let Some(want) = self.has_referer
            && req.referer.is_some_and(|r| !r.is_empty()) != want
        {
            return false;
        }
        if let Some(want) = self.has_cookie
            && req.has_cookie != Some(want)
        {
            return false;
        }
        if let Some(want) = self.heavy
            && req.heavy != want
        {
            return false;
        }
        if let Some(want) = self.identified
            && req.identified != want
        {
            return false;
        }
        if let Some(want) = self.anonymous
            && req.anonymous != want
        {
            return false;
        }
        if !self.cidr.is_empty() && !in_any(&self.cidr, req) {
            return false;
        }
        !self.not.iter().any(|m| m.matches(req))
    }
}

/// Statuses that say the server refused the credentials a request carried: nginx and
/// Apache log the user name from the Authorization header even then, so a forged token
/// shows the service's name with 401.
pub const CREDENTIAL_REFUSALS: [u16; 3] = [401, 403, 407];

/// Requests a rule (or a whole policy) lets through without counting them: the story of
/// seed 004, where the service's own credentialed traffic must not be limited. A user
/// name (or identity) exempts only where the server accepted the credentials: not with
/// a status in `credential_refusals`.
#[derive(Clone, Debug)]
pub struct Exempt {
    /// Client networks that are never limited.
    pub cidr: Vec<IpNet>,
    /// User agents that are never limited.
    pub ua_regex: Option<Regex>,
    /// Identified clients are never limited.
    pub identified: bool,
    /// These authenticated users are never limited.
    pub users: Vec<Vec<u8>>,
    /// Statuses with which a logged user name is not a credential the server accepted
    /// (default [`CREDENTIAL_REFUSALS`]).
    pub credential_refusals: Vec<u16>,
}

impl Default for Exempt {
    fn default() -> Self {
        Exempt {
            cidr: Vec::new(),
            ua_regex: None,
            identified: false,
            users: Vec::new(),
            credential_refusals: CREDENTIAL_REFUSALS.to_vec(),
        }
    }
}

impl Exempt {
    /// Whether nothing is exempt.
    pub fn is_empty(&self) -> bool {
        self.cidr.is_empty() && self.ua_regex.is_none() && !self.identified && self.users.is_empty()
    }

    /// The exemptions in short words.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if self.identified {
            parts.push("identified clients".into());
        }
        if !self.cidr.is_empty() {
            let n: Vec<String> = self.cidr.iter().map(|c| c.to_string()).collect();
            parts.push(format!("from {}", n.join(", ")));
        }
        if let Some(re) = &self.ua_regex {
            parts.push(format!("agent ~ {re}"));
        }
        if !self.users.is_empty() {
            let u: Vec<String> = self
                .users
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect();
            parts.push(format!("users {}", u.join(", ")));
        }
        if (self.identified || !self.users.is_empty()) && !self.credential_refusals.is_empty() {
            let st: Vec<String> = self
                .credential_refusals
                .iter()
                .map(u16::to_string)
                .collect();
            parts.push(format!(
                "credentials only where the server accepted them (not {})",
                st.join("/")
            ));
        }
        if parts.is_empty() {
            "nothing".into()
        } else {
            parts.join("; ")
        }
    }

    /// Whether `req` is exempt.
    pub fn covers(&self, req: &Request<'_>) -> bool {
        if self.credentials(req) && !self.credential_refused(req) {
            return true;
        }
        if !self.cidr.is_empty() && in_any(&self.cidr, req) {
            return true;
        }
        if let Some(re) = &self.ua_regex
            && req.user_agent.is_some_and(|ua| re.is_match(ua))
        {
            return true;
        }
        false
    }

    /// Whether `req` carries credentials this exemption names (identified, or one of
    /// the users), accepted or not.
    fn credentials(&self, req: &Request<'_>) -> bool {
        (self.identified && req.identified)
            || (!self.users.is_empty()
                && req
                    .user
                    .is_some_and(|u| self.users.iter().any(|x| x.as_slice() == u)))
    }

    /// Whether the server refused the credentials of `req` (its status says so).
    fn credential_refused(&self, req: &Request<'_>) -> bool {
        self.credential_refusals.contains(&req.status)
    }

    /// Whether `req` names exempt credentials the server refused: counted, not exempt.
    pub fn refused_credentials(&self, req: &Request<'_>) -> bool {
        self.credentials(req) && self.credential_refused(req) && !self.covers(req)
    }
}

fn in_any(nets: &[IpNet], req: &Request<'_>) -> bool {
    match req.ip {
        Some(ip) => {
            let ip = canonical(ip);
            nets.iter().any(|n| n.contains(&ip))
        }
        None => false,
    }
}
