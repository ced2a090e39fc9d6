//! `--fail2ban-jail FILE`: fail2ban jails (jail.conf / jail.local INI) read into ban
//! candidates, one per enabled jail: `maxretry` within `findtime` bans the host for
//! `bantime` (fail2ban's time units, `bantime.increment`, `.factor`, `.multipliers`,
//! `.maxtime`), counted by the jail's filter (`filter = NAME[args]` read from
//! `filter.d/NAME.conf` and `.local` beside the jail file, with `[INCLUDES]`,
//! `%(name)s` interpolation and `<tag>` substitution, or an inline `failregex`), minus
//! `ignoreregex` and `ignoreip`.
//!
//! The failregex is applied to the request's log line as fail2ban sees it: the replay
//! keeps fields, not lines, so the line is rebuilt in the combined format from the
//! stored fields with the date cut out as fail2ban cuts it
//! ([`crate::replay::rebuild_line`]). Filters written for other logs (nginx's error
//! log: `nginx-limit-req`) match nothing there, and the report says how many requests
//! counted. What cannot be replayed is reported with file:line.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use regex::bytes::{Regex, RegexBuilder};

use crate::replay::ban::{BanOptions, CountFilter};
use crate::replay::increment::{Increment, parse_milli};
use crate::replay::{Algorithm, Exempt, KeySpec, LimitSpec, Matcher, Policy};

use super::Note;
use crate::conf_file::{self, Budget, CONFIG_CAP};
use crate::escape;
use crate::rate::Rate;

/// The jails of one file.
pub struct Jails {
    /// One candidate per enabled jail, in file order.
    pub policies: Vec<Policy>,
    /// What was not replayed as fail2ban would, with file:line.
    pub notes: Vec<Note>,
}

/// A jail file that cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum Fail2banError {
    /// The file cannot be read.
    #[error("cannot read {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        message: String,
    },
    /// A bound passed: a file that is not regular or too large, too many files loaded,
    /// an interpolation or tag substitution that expands too far.
    #[error("{at}: {message}")]
    Limit {
        /// file:line (or the file).
        at: String,
        /// Which bound.
        message: String,
    },
    /// A value that makes the jail meaningless.
    #[error(
        "{at}: {message}. For example: [sshd] enabled = true, maxretry = 5, findtime = 10m, bantime = 1h"
    )]
    Bad {
        /// file:line.
        at: String,
        /// What is wrong.
        message: String,
    },
}

#[derive(Clone, Debug)]
struct Val {
    value: String,
    at: String,
}

/// What reading one jail file has spent of its bounds ([`conf_file::Budget`]: files
/// loaded, bytes read, substitutions made and the bytes they produce), shared by the
/// jail file's layers and every filter's. Interpolation cannot fail where it is asked
/// for, so the first bound passed is kept here (everything after it is cut short) and
/// [`read_file`] returns it.
/// A file's settings as read, and its size in bytes.
type Parsed = (Rc<Vec<RawEntry>>, u64);

#[derive(Default, Debug)]
struct Spend {
    budget: RefCell<Budget>,
    over: RefCell<Option<Fail2banError>>,
    /// Each file read: its settings and its size.
    parsed: RefCell<HashMap<PathBuf, Parsed>>,
}

impl Spend {
    /// Spends `count` substitutions producing `bytes`; false (and the bound kept, at
    /// `at`) once a bound is passed.
    fn spend(&self, at: &str, count: u64, bytes: u64) -> bool {
        if self.over.borrow().is_some() {
            return false;
        }
        match self.budget.borrow_mut().spend(count, bytes) {
            Ok(()) => true,
            Err(message) => {
                *self.over.borrow_mut() = Some(Fail2banError::Limit {
                    at: at.to_string(),
                    message: message.to_string(),
                });
                false
            }
        }
    }

    fn is_over(&self) -> bool {
        self.over.borrow().is_some()
    }

    /// The bound passed, if one was.
    fn take(&self) -> Option<Fail2banError> {
        self.over.borrow_mut().take()
    }
}

/// Sections → keys (lower case) → values, later files overriding earlier ones.
#[derive(Default, Debug)]
struct Layers {
    sections: BTreeMap<String, BTreeMap<String, Val>>,
    order: Vec<String>,
    spend: Rc<Spend>,
}

const DEPTH: usize = 12;

impl Layers {
    /// Layers spending from `spend`.
    fn with(spend: &Rc<Spend>) -> Layers {
        Layers {
            spend: Rc::clone(spend),
            ..Layers::default()
        }
    }

    /// Loads `path` (a regular file of at most [`CONFIG_CAP`]) and its `[INCLUDES]`;
    /// `by` (file:line, or the file) is what names it, for errors.
    fn load(
        &mut self,
        path: &Path,
        by: &str,
        notes: &mut Vec<Note>,
        depth: usize,
    ) -> Result<(), Fail2banError> {
        let limit = |message: String| Fail2banError::Limit {
            at: by.to_string(),
            message,
        };
        if let Some(e) = self.spend.take() {
            return Err(e);
        }
        self.spend
            .budget
            .borrow_mut()
            .load(0)
            .map_err(|m| limit(format!("{}: {m}", escape::path(path))))?;
        let name = escape::path(path);
        // A file loaded again (included twice, or a filter of several jails) is parsed
        // once; each load still spends its bytes (its settings are applied again).
        let cached = self.spend.parsed.borrow().get(path).cloned();
        let (raw, bytes) = match cached {
            Some(c) => c,
            None => {
                let text = match conf_file::read_text(path, CONFIG_CAP) {
                    Ok(t) => t,
                    // The file is named unless it is the jail file itself.
                    Err(e) if e.is_refusal() && by == name => return Err(limit(e.problem())),
                    Err(e) if e.is_refusal() => return Err(limit(e.to_string())),
                    Err(e) => {
                        return Err(Fail2banError::Io {
                            path: escape::path(path),
                            message: match e {
                                conf_file::ReadError::Io { source, .. } => source.to_string(),
                                e => e.problem(),
                            },
                        });
                    }
                };
                let parsed = (Rc::new(parse_ini(&text, &name, notes)), text.len() as u64);
                self.spend
                    .parsed
                    .borrow_mut()
                    .insert(path.to_path_buf(), parsed.clone());
                parsed
            }
        };
        self.spend
            .budget
            .borrow_mut()
            .spend(0, bytes)
            .map_err(|m| limit(format!("{}: {m}", escape::path(path))))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let includes = |key: &str| -> Vec<(PathBuf, String)> {
            raw.iter()
                .filter(|r| r.section == "INCLUDES" && r.key == key)
                .flat_map(|r| {
                    r.value
                        .split_whitespace()
                        .map(|f| (dir.join(f), format!("{name}:{}", r.line)))
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        let (before, after) = (includes("before"), includes("after"));
        if depth < DEPTH {
            for (b, at) in before {
                if b.exists() {
                    self.load(&b, &at, notes, depth + 1)?;
                }
            }
        }
        for r in raw.iter().filter(|r| r.section != "INCLUDES") {
            if !self.sections.contains_key(&r.section) {
                self.order.push(r.section.clone());
            }
            self.sections.entry(r.section.clone()).or_default().insert(
                r.key.clone(),
                Val {
                    value: r.value.clone(),
                    at: format!("{name}:{}", r.line),
                },
            );
        }
        if depth < DEPTH {
            for (a, at) in after {
                if a.exists() {
                    self.load(&a, &at, notes, depth + 1)?;
                }
            }
            if path.extension().is_some_and(|e| e == "conf") {
                let local = path.with_extension("local");
                if local.exists() {
                    self.load(&local, &name, notes, depth + 1)?;
                }
            }
        }
        Ok(())
    }

    fn raw(&self, section: &str, key: &str) -> Option<&Val> {
        self.sections
            .get(section)
            .and_then(|s| s.get(key))
            .or_else(|| self.sections.get("DEFAULT").and_then(|s| s.get(key)))
    }

    /// `%(name)s` interpolation (configparser's, with fail2ban's `__name__`,
    /// `known/name` and `section/name`).
    fn get(&self, section: &str, key: &str) -> Option<(String, String)> {
        let v = self.raw(section, key)?;
        Some((self.interp(section, &v.value, &v.at, 0), v.at.clone()))
    }

    /// `v` interpolated; each substitution spent (at `at`, the value's file:line) from
    /// the shared bounds, and nothing more substituted once one is passed.
    fn interp(&self, section: &str, v: &str, at: &str, depth: usize) -> String {
        if depth > DEPTH || !v.contains('%') || self.spend.is_over() {
            return v.replace("%%", "%");
        }
        let mut out = String::with_capacity(v.len());
        let mut rest = v;
        while let Some(i) = rest.find('%') {
            out.push_str(&rest[..i]);
            let tail = &rest[i..];
            if let Some(t) = tail.strip_prefix("%%") {
                out.push('%');
                rest = t;
                continue;
            }
            if let Some(t) = tail.strip_prefix("%(")
                && let Some(end) = t.find(")s")
            {
                let name = t[..end].to_ascii_lowercase();
                let (sect, key) = match name.split_once('/') {
                    Some(("known" | "default", k)) => (section.to_string(), k.to_string()),
                    Some((s, k)) => (
                        self.sections
                            .keys()
                            .find(|x| x.eq_ignore_ascii_case(s))
                            .cloned()
                            .unwrap_or_else(|| s.to_string()),
                        k.to_string(),
                    ),
                    None => (section.to_string(), name.clone()),
                };
                let val = if key == "__name__" {
                    Some(sect.clone())
                } else {
                    self.raw(&sect, &key).map(|v| v.value.clone())
                };
                match val {
                    Some(x) => {
                        let x = self.interp(&sect, &x, at, depth + 1);
                        if !self.spend.spend(at, 1, x.len() as u64) {
                            return String::new();
                        }
                        out.push_str(&x);
                    }
                    None => out.push_str(&tail[..end + 4]),
                }
                rest = &t[end + 2..];
                continue;
            }
            out.push('%');
            rest = &tail[1..];
        }
        out.push_str(rest);
        out
    }
}

#[derive(Debug)]
struct RawEntry {
    section: String,
    key: String,
    value: String,
    line: usize,
}

/// configparser's INI as fail2ban uses it: `[section]`, `key = value` or `key: value`,
/// continuation lines indented, `#`/`;` comment lines, ` ;` inline comments.
///
/// Lines that are not settings are noted, the first [`MAX_LINE_NOTES`] one by one and
/// the others counted in one note.
fn parse_ini(text: &str, file: &str, notes: &mut Vec<Note>) -> Vec<RawEntry> {
    const MAX_LINE_NOTES: usize = 20;
    let mut ignored = 0usize;
    let mut ignore = |notes: &mut Vec<Note>, at: String, message: &str| {
        ignored += 1;
        if ignored <= MAX_LINE_NOTES {
            notes.push(note(at, message));
        }
    };
    let mut out: Vec<RawEntry> = Vec::new();
    let mut section: Option<String> = None;
    let mut last_ok = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        let line = strip_inline_comment(line);
        let indented = line.starts_with([' ', '\t']);
        if indented && last_ok {
            if let Some(e) = out.last_mut() {
                e.value.push('\n');
                e.value.push_str(line.trim());
            }
            continue;
        }
        let t = line.trim();
        if let Some(s) = t.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            section = Some(s.trim().to_string());
            last_ok = false;
            continue;
        }
        let cut = match (t.find('='), t.find(':')) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (cut, &section) {
            (Some(c), Some(s)) => {
                out.push(RawEntry {
                    section: s.clone(),
                    key: t[..c].trim().to_ascii_lowercase(),
                    value: t[c + 1..].trim().to_string(),
                    line: n,
                });
                last_ok = true;
            }
            (Some(_), None) => {
                ignore(
                    notes,
                    format!("{file}:{n}"),
                    "a setting before any [section]; ignored",
                );
                last_ok = false;
            }
            (None, _) => {
                ignore(
                    notes,
                    format!("{file}:{n}"),
                    "not a setting (key = value); ignored",
                );
                last_ok = false;
            }
        }
    }
    if ignored > MAX_LINE_NOTES {
        notes.push(note(
            file.to_string(),
            format!(
                "{} more lines that are not settings; ignored",
                ignored - MAX_LINE_NOTES
            ),
        ));
    }
    out
}

fn strip_inline_comment(line: &str) -> &str {
    let b = line.as_bytes();
    for i in 1..b.len() {
        if b[i] == b';' && (b[i - 1] == b' ' || b[i - 1] == b'\t') {
            return &line[..i];
        }
    }
    line
}

fn note(at: String, message: impl Into<String>) -> Note {
    Note {
        at,
        message: message.into(),
    }
}

/// fail2ban's `MyTime.str2seconds`: `600`, `10m`, `1h 30m`, `1d12h`, `2 weeks`,
/// `1year-6mo`; in ms. `None` if it is none of these.
pub fn str2ms(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let b = s.as_bytes();
    let mut i = 0;
    let mut total: f64 = 0.0;
    let mut sign = 1.0;
    let mut any = false;
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        if b[i] == b'+' || b[i] == b'-' {
            sign = if b[i] == b'-' { -1.0 } else { 1.0 };
            i += 1;
            continue;
        }
        let st = i;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
            i += 1;
        }
        if st == i {
            return None;
        }
        let num: f64 = s[st..i].parse().ok()?;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let us = i;
        while i < b.len() && b[i].is_ascii_alphabetic() {
            i += 1;
        }
        let unit = s[us..i].to_ascii_lowercase();
        let mult: f64 = match unit.as_str() {
            "" | "s" | "ss" | "se" | "sec" | "second" | "seconds" | "secs" => 1.0,
            "m" | "mm" | "mi" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "h" | "hh" | "ho" | "hou" | "hour" | "hours" => 3600.0,
            "d" | "dd" | "da" | "day" | "days" => 86_400.0,
            "w" | "ww" | "we" | "wee" | "week" | "weeks" => 604_800.0,
            "mo" | "mon" | "month" | "months" => (365.0 * 3.0 + 366.0) * 86_400.0 / 4.0 / 12.0,
            "y" | "yy" | "ye" | "yea" | "year" | "years" => (365.0 * 3.0 + 366.0) * 86_400.0 / 4.0,
            _ => return None,
        };
        total += sign * num * mult;
        sign = 1.0;
        any = true;
    }
    if !any || !total.is_finite() || total.abs() > 1e15 {
        return None;
    }
    Some((total * 1000.0).round() as i64)
}

/// fail2ban's address and host tags, in the regex crate's syntax (no look-behind: the
/// IPv6 form is fail2ban's without its `(?<=:):` tail).
const IP4: &str = r"(?:\d{1,3}\.){3}\d{1,3}";
const IP6: &str = r"(?:[0-9a-fA-F]{1,4}::?|:){1,7}(?:[0-9a-fA-F]{1,4}|:)?";

fn tag_regex(tag: &str, use_dns: bool) -> Option<String> {
    let ip4 = format!("(?:::f{{4,6}}:)?(?:{IP4})");
    let addr = format!(r"\[?(?:{ip4}|(?:{IP6}))\]?");
    let dns = r"(?:[\w\-.^_]*\w)";
    Some(match tag {
        "HOST" if use_dns => format!("(?:{addr}|{dns})"),
        "HOST" | "ADDR" | "F-ADDR/" => addr,
        "IP4" | "F-IP4/" => ip4,
        "IP6" | "F-IP6/" => format!("(?:{IP6})"),
        "DNS" | "F-DNS/" => dns.to_string(),
        "CIDR" | "F-CIDR/" => r"(?:\d+)".to_string(),
        "SUBNET" | "F-SUBNET/" => format!(r"\[?(?:{ip4}|(?:{IP6}))(?:/\d+)?\]?"),
        "F-ID/" => r"(?:\S+)".to_string(),
        "F-PORT/" => r"(?:\w+)".to_string(),
        _ => return None,
    })
}

/// Substitutes fail2ban `<tag>`s: definitions (`lookup`) first, recursively, then the
/// host tags and `<F-…>` groups. Returns the regex text, or why it cannot be replayed.
/// Each substitution and each pass's text is spent (at `at`) from `spend`; once a bound
/// is passed the answer is an error (and `spend` keeps the bound).
fn resolve_tags(
    v: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    use_dns: bool,
    spend: &Spend,
    at: &str,
) -> Result<String, String> {
    const CUT: &str = "cut short: the configuration expands too far";
    let mut s = v.to_string();
    for _ in 0..30 {
        let mut changed = false;
        let mut out = String::with_capacity(s.len());
        let mut rest = s.as_str();
        while let Some(i) = rest.find('<') {
            out.push_str(&rest[..i]);
            let t = &rest[i + 1..];
            // Innermost tag: the name runs to '>' without another '<'.
            let end = t.find(['>', '<']);
            match end {
                Some(e) if t.as_bytes()[e] == b'>' => {
                    let name = &t[..e];
                    let plain = !name.is_empty()
                        && name
                            .bytes()
                            .all(|c| c.is_ascii_alphanumeric() || b"_-/".contains(&c));
                    match (plain, plain.then(|| lookup(name)).flatten()) {
                        (true, Some(val)) => {
                            if !spend.spend(at, 1, val.len() as u64) {
                                return Err(CUT.into());
                            }
                            out.push_str(&val);
                            changed = true;
                        }
                        _ => {
                            out.push('<');
                            out.push_str(name);
                            out.push('>');
                        }
                    }
                    rest = &t[e + 1..];
                }
                _ => {
                    out.push('<');
                    rest = t;
                }
            }
        }
        out.push_str(rest);
        if !changed {
            break;
        }
        if !spend.spend(at, 0, out.len() as u64) {
            return Err(CUT.into());
        }
        s = out;
    }
    // Host tags and <F-…> groups.
    let mut out = String::with_capacity(s.len() + 64);
    let mut rest = s.as_str();
    let mut open: Vec<String> = Vec::new();
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        let t = &rest[i + 1..];
        let Some(e) = t.find('>') else {
            out.push('<');
            rest = t;
            continue;
        };
        let name = &t[..e];
        if let Some(r) = tag_regex(name, use_dns) {
            if !spend.spend(at, 1, r.len() as u64) {
                return Err(CUT.into());
            }
            out.push_str(&r);
        } else if name == "SKIPLINES" {
            return Err("<SKIPLINES> (multi-line matching) is not replayed".into());
        } else if let Some(n) = name.strip_prefix("/F-") {
            if open.iter().any(|o| o == n) {
                out.push(')');
            } else {
                out.push('<');
                out.push_str(name);
                out.push('>');
            }
        } else if let Some(n) = name.strip_prefix("F-")
            && !n.ends_with('/')
        {
            open.push(n.to_string());
            out.push_str("(?:");
        } else {
            // Python named groups and look-arounds keep their text; a tag left
            // unresolved is an error.
            let prev = out.as_bytes().last().copied();
            if prev == Some(b'P') || prev == Some(b'?') {
                out.push('<');
                out.push_str(name);
                out.push('>');
            } else {
                return Err(format!("<{name}> is not defined"));
            }
        }
        rest = &t[e + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn compile(re: &str) -> Result<Regex, String> {
    if re.contains("(?P=") {
        return Err("a back-reference (?P=…) (the regex engine has none)".into());
    }
    if re.contains("(?<=") || re.contains("(?<!") || re.contains("(?=") || re.contains("(?!") {
        return Err("a look-around (?=…)/(?!…)/(?<=…)/(?<!…) (the regex engine has none)".into());
    }
    RegexBuilder::new(re)
        .size_limit(1 << 24)
        .build()
        .map_err(|e| {
            let m = e.to_string();
            m.lines().last().unwrap_or(&m).trim().to_string()
        })
}

/// Jail keys that do not change which requests are banned (where the log comes from,
/// what the ban does to the firewall, mail).
const IGNORED: &[&str] = &[
    "enabled",
    "filter",
    "logpath",
    "port",
    "protocol",
    "action",
    "banaction",
    "banaction_allports",
    "backend",
    "logencoding",
    "journalmatch",
    "chain",
    "mta",
    "sender",
    "sendername",
    "destemail",
    "mode",
    "maxmatches",
    "ignoreself",
    "datepattern",
    "usedns",
    "maxretry",
    "findtime",
    "bantime",
    "failregex",
    "ignoreregex",
    "ignoreip",
    "bantime.increment",
    "bantime.factor",
    "bantime.multipliers",
    "bantime.maxtime",
    "bantime.formula",
    "bantime.rndtime",
    "bantime.overalljails",
    "skip_if_nologs",
    "__name__",
    "known",
    "before",
    "after",
    "allowipv6",
    "logtimezone",
    "fail2ban_agent",
];

const DEFAULT_FORMULA: &str = "ban.Time * (1<<(ban.Count if ban.Count<20 else 20)) * banFactor";

/// Reads one jail file (and, for `jail.conf`, `jail.local` beside it; `[INCLUDES]`).
///
/// Bounded: each file a regular file of at most [`CONFIG_CAP`], `[INCLUDES]` 12 deep,
/// and for the whole (jail file, its includes, every jail's filter) at most
/// [`conf_file::MAX_FILE_LOADS`] file loads, [`conf_file::MAX_EXPANSIONS`] `%(name)s`
/// and `<tag>` substitutions and [`conf_file::MAX_EXPANDED_BYTES`] read or produced; a
/// bound passed is a [`Fail2banError::Limit`] naming file:line.
pub fn read_file(path: &Path) -> Result<Jails, Fail2banError> {
    let spend = Rc::new(Spend::default());
    let r = read_jails(path, &spend);
    // A bound passed comes first: what failed after it may only be its consequence.
    match spend.take() {
        Some(e) => Err(e),
        None => r,
    }
}

fn read_jails(path: &Path, spend: &Rc<Spend>) -> Result<Jails, Fail2banError> {
    let mut notes = Vec::new();
    let mut layers = Layers::with(spend);
    let shown = escape::path(path);
    layers.load(path, &shown, &mut notes, 0)?;
    if path.file_name().is_some_and(|n| n == "jail.conf") {
        let local = path.with_file_name("jail.local");
        if local.exists() {
            layers.load(&local, &shown, &mut notes, 1)?;
        }
    }
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut policies = Vec::new();
    let jails: Vec<String> = layers
        .order
        .iter()
        .filter(|s| !matches!(s.as_str(), "DEFAULT" | "INCLUDES" | "Definition" | "Init"))
        .cloned()
        .collect();
    let file = path.display().to_string();
    for jail in jails {
        if spend.is_over() {
            break;
        }
        let at = |k: &str| {
            layers
                .raw(&jail, k)
                .map_or_else(|| file.clone(), |v| v.at.clone())
        };
        let enabled = layers.get(&jail, "enabled").is_some_and(|(v, _)| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "true" | "yes" | "1" | "on"
            )
        });
        if !enabled {
            continue;
        }
        if let Some(keys) = layers.sections.get(&jail) {
            for (k, v) in keys {
                if !IGNORED.contains(&k.as_str())
                    && !k.starts_with("action")
                    && !k.ends_with("_log")
                {
                    notes.push(note(
                        v.at.clone(),
                        format!("[{jail}] `{k}` is not replayed"),
                    ));
                }
            }
        }
        match build_jail(&layers, &jail, &dir, &mut notes, &at) {
            Ok(Some(p)) => policies.push(p),
            Ok(None) => {}
            Err(e) => return Err(e),
        }
    }
    if policies.is_empty() {
        notes.push(note(
            file.clone(),
            "no enabled jail could be replayed (a jail needs `enabled = true` and a filter or failregex)",
        ));
    }
    Ok(Jails { policies, notes })
}

fn number(layers: &Layers, jail: &str, key: &str) -> Option<(String, String)> {
    layers
        .get(jail, key)
        .map(|(v, a)| (v.trim().to_string(), a))
}

fn build_jail(
    layers: &Layers,
    jail: &str,
    dir: &Path,
    notes: &mut Vec<Note>,
    at: &dyn Fn(&str) -> String,
) -> Result<Option<Policy>, Fail2banError> {
    let bad = |k: &str, m: String| Fail2banError::Bad {
        at: at(k),
        message: format!("[{jail}] {m}"),
    };
    let maxretry = match number(layers, jail, "maxretry") {
        None => 5,
        Some((v, _)) => v.parse::<u64>().ok().filter(|&n| n >= 1).ok_or_else(|| {
            bad(
                "maxretry",
                format!("maxretry = {v}: expected a whole number ≥ 1"),
            )
        })?,
    };
    let time = |k: &str, default: i64| -> Result<i64, Fail2banError> {
        match number(layers, jail, k) {
            None => Ok(default),
            Some((v, _)) => str2ms(&v).ok_or_else(|| {
                bad(
                    k,
                    format!("{k} = {v}: expected a fail2ban time (600, 10m, 1h 30m, 1d)"),
                )
            }),
        }
    };
    let findtime = time("findtime", 600_000)?;
    if findtime <= 0 {
        return Err(bad("findtime", "findtime must be above 0".into()));
    }
    let bantime = time("bantime", 600_000)?;
    let ban_ms = if bantime < 0 {
        None
    } else if bantime == 0 {
        return Err(bad("bantime", "bantime = 0 bans nothing".into()));
    } else {
        Some(bantime as u64)
    };
    let truthy = |k: &str| {
        layers.get(jail, k).is_some_and(|(v, _)| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "true" | "yes" | "1" | "on"
            )
        })
    };
    let increment = if truthy("bantime.increment") {
        let mut inc = Increment::doubling();
        if let Some((v, a)) = number(layers, jail, "bantime.factor") {
            match parse_milli(&v).filter(|&f| f > 0) {
                Some(f) => inc.factor_milli = f,
                None => notes.push(note(a, format!("[{jail}] bantime.factor = {v}: only a plain number is replayed; factor 1 used"))),
            }
        }
        if let Some((v, a)) = number(layers, jail, "bantime.multipliers")
            && !v.is_empty()
        {
            let m: Option<Vec<u64>> = v.split_whitespace().map(|x| x.parse().ok()).collect();
            match m {
                Some(m) if !m.is_empty() => inc.multipliers = m,
                _ => notes.push(note(a, format!("[{jail}] bantime.multipliers = {v}: expected whole numbers; the doubling formula used"))),
            }
        }
        if let Some((v, a)) = number(layers, jail, "bantime.maxtime")
            && !v.is_empty()
        {
            match str2ms(&v).filter(|&m| m > 0) {
                Some(m) => inc.max_ms = Some(m as u64),
                None => notes.push(note(
                    a,
                    format!("[{jail}] bantime.maxtime = {v}: not a time; no cap used"),
                )),
            }
        }
        if let Some((v, a)) = number(layers, jail, "bantime.formula")
            && !v.is_empty()
            && v.split_whitespace().collect::<String>()
                != DEFAULT_FORMULA.split_whitespace().collect::<String>()
            && inc.multipliers.is_empty()
        {
            notes.push(note(a, format!("[{jail}] bantime.formula = {v}: only the default formula (doubling) is replayed")));
        }
        for k in ["bantime.rndtime", "bantime.overalljails"] {
            if let Some((v, a)) = number(layers, jail, k)
                && !v.is_empty()
                && v != "false"
            {
                notes.push(note(
                    a,
                    format!(
                        "[{jail}] {k} = {v} is not replayed (random extra time / other jails' bans)"
                    ),
                ));
            }
        }
        Some(inc)
    } else {
        None
    };
    let use_dns = layers
        .get(jail, "usedns")
        .is_none_or(|(v, _)| !matches!(v.trim(), "no" | "raw"));
    // The filter.
    let mut fail: Vec<Regex> = Vec::new();
    let mut ignore: Vec<Regex> = Vec::new();
    let mut filter_name = String::from("inline failregex");
    let mut filter_layers = Layers::with(&layers.spend);
    let mut args: BTreeMap<String, String> = BTreeMap::new();
    let mut have_filter = false;
    // jail.conf's default: `filter = %(__name__)s` (the jail's own name).
    let filter = layers
        .get(jail, "filter")
        .unwrap_or_else(|| (jail.to_string(), at("enabled")));
    if let Some((f, fat)) = Some(filter) {
        let f = f.trim().to_string();
        let (name, a) = match f.split_once('[') {
            Some((n, rest)) => (n.trim().to_string(), rest.trim_end_matches(']').to_string()),
            None => (f.clone(), String::new()),
        };
        for kv in split_args(&a) {
            if let Some((k, v)) = kv.split_once('=') {
                args.insert(
                    k.trim().to_string(),
                    v.trim().trim_matches(['"', '\'']).to_string(),
                );
            }
        }
        if !name.is_empty() {
            let p = dir.join("filter.d").join(format!("{name}.conf"));
            if p.exists() {
                filter_layers.load(&p, &fat, notes, 0)?;
                filter_name = format!("filter {name} ({})", p.display());
                have_filter = true;
            } else if layers.raw(jail, "failregex").is_none() {
                notes.push(note(
                    fat,
                    format!(
                        "[{jail}] filter {name}: {} not found; the jail is not replayed",
                        p.display()
                    ),
                ));
                return Ok(None);
            }
        }
    }
    let lookup_in = |fl: &Layers, name: &str| -> Option<String> {
        if let Some(v) = args.get(name) {
            return Some(v.clone());
        }
        if let Some((s, k)) = name.split_once('/') {
            return fl
                .raw(s, &k.to_ascii_lowercase())
                .map(|v| fl.interp(s, &v.value, &v.at, 0));
        }
        let k = name.to_ascii_lowercase();
        for s in ["Init", "Definition"] {
            if let Some(v) = fl.sections.get(s).and_then(|m| m.get(&k)) {
                return Some(fl.interp(s, &v.value, &v.at, 0));
            }
        }
        fl.sections
            .get("DEFAULT")
            .and_then(|m| m.get(&k))
            .map(|v| fl.interp("DEFAULT", &v.value, &v.at, 0))
    };
    let compile_all =
        |text: &str, at: &str, into: &mut Vec<Regex>, fl: &Layers, notes: &mut Vec<Note>| {
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                match resolve_tags(line, &|n| lookup_in(fl, n), use_dns, &fl.spend, at)
                    .and_then(|r| compile(&r))
                {
                    Ok(r) => into.push(r),
                    Err(m) => notes.push(note(
                        at.to_string(),
                        format!("[{jail}] failregex {line:?} is not replayed: {m}"),
                    )),
                }
            }
        };
    // A jail's own failregex replaces its filter's.
    if let Some((v, a)) = layers.get(jail, "failregex") {
        compile_all(&v, &a, &mut fail, &filter_layers, notes);
    } else if have_filter {
        match filter_layers.get("Definition", "failregex") {
            Some((v, a)) => compile_all(&v, &a, &mut fail, &filter_layers, notes),
            None => notes.push(note(
                filter_name.clone(),
                format!("[{jail}] the filter has no failregex"),
            )),
        }
        if let Some((v, a)) = filter_layers.get("Definition", "prefregex")
            && !v.trim().is_empty()
        {
            notes.push(note(
                a,
                format!(
                    "[{jail}] prefregex is not replayed (failregex is applied to the whole line)"
                ),
            ));
        }
        if let Some((v, a)) = filter_layers.get("Init", "maxlines")
            && v.trim() != "1"
        {
            notes.push(note(
                a,
                format!(
                    "[{jail}] maxlines = {} (multi-line matching) is not replayed",
                    v.trim()
                ),
            ));
        }
    }
    if let Some((v, a)) = layers.get(jail, "ignoreregex") {
        compile_all(&v, &a, &mut ignore, &filter_layers, notes);
    } else if have_filter && let Some((v, a)) = filter_layers.get("Definition", "ignoreregex") {
        compile_all(&v, &a, &mut ignore, &filter_layers, notes);
    }
    if fail.is_empty() {
        notes.push(note(
            at("filter"),
            format!("[{jail}] no failregex can be replayed; the jail is not replayed"),
        ));
        return Ok(None);
    }
    // ignoreip.
    let mut exempt = Exempt::default();
    if let Some((v, a)) = layers.get(jail, "ignoreip") {
        for item in v.split([' ', ',', '\n', '\t']).filter(|s| !s.is_empty()) {
            match crate::classify::config::parse_cidr(item) {
                Ok(n) => exempt.cidr.push(n),
                Err(_) => notes.push(note(a.clone(), format!("[{jail}] ignoreip {item:?}: only addresses and networks are replayed (not host names or files)"))),
            }
        }
    }
    // ignoreself (default true): fail2ban ignores this host's own addresses, those of
    // `localhost` and of its host name (`Filter.inIgnoreIPList`, `DNSUtils.getSelfIPs`);
    // the log's host is not known here, its loopback addresses are.
    let ignore_self = layers.get(jail, "ignoreself").is_none_or(|(v, _)| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "true" | "yes" | "1" | "on"
        )
    });
    if ignore_self {
        for n in ["127.0.0.1/32", "::1/128"] {
            if let Ok(n) = crate::classify::config::parse_cidr(n) {
                exempt.cidr.push(n);
            }
        }
    }
    let Some(rate) = Rate::new(maxretry, findtime as u64) else {
        return Err(bad("findtime", "findtime out of range".into()));
    };
    let mut spec = LimitSpec::new(Algorithm::Ban, rate);
    spec.key = KeySpec::Ip;
    spec.name = Some(format!("jail {jail}"));
    spec.ban = Some(BanOptions {
        ban_ms,
        challenge: None,
        extend: false,
        reach: true,
        increment,
        fail2ban: true,
    });
    let mut p = Policy::from_limit(spec).map_err(|e| bad("maxretry", e.problem.to_string()))?;
    let nfail = fail.len();
    let mut cf = CountFilter::with_regex(Matcher::default(), fail, ignore);
    cf.note = Some(format!(
        "{filter_name}: {nfail} failregex applied to each request's line rebuilt from its stored fields as `CLIENT - USER [] \"METHOD PATH?QUERY HTTP/1.1\" STATUS BYTES \"REFERER\" \"AGENT\"` (the date cut out as fail2ban cuts it; the protocol is not stored)"
    ));
    p.zones_mut()[0].set_count_filter(cf);
    if !exempt.is_empty() {
        p.set_exempt(exempt);
    }
    Ok(Some(p))
}

/// `mode=aggressive, port="80,443"` → the `k=v` parts (commas inside quotes kept).
fn split_args(a: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut q: Option<char> = None;
    for c in a.chars() {
        match (c, q) {
            ('"' | '\'', None) => {
                q = Some(c);
                cur.push(c);
            }
            (c2, Some(qq)) if c2 == qq => {
                q = None;
                cur.push(c);
            }
            (',', None) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail2ban_times() {
        assert_eq!(str2ms("600"), Some(600_000));
        assert_eq!(str2ms("10m"), Some(600_000));
        assert_eq!(str2ms("1h 30m"), Some(5_400_000));
        assert_eq!(str2ms("1d12h"), Some(129_600_000));
        assert_eq!(str2ms("2 weeks"), Some(1_209_600_000));
        assert_eq!(str2ms("-1"), Some(-1000));
        assert_eq!(str2ms("1year-6mo"), Some(15_778_800_000));
        assert_eq!(str2ms("soon"), None);
    }

    #[test]
    fn includes_fanning_out_are_bounded_and_parsed_once() {
        // Found by the fuzz harness: a file including itself twice, with 5000 lines
        // that are not settings (a note each, on every load, before).
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let inc = format!(
            "[INCLUDES]\nafter = inc.conf inc.conf\n[Definition]\nfailregex = ^<HOST> x\n{}",
            "x {\n".repeat(5000)
        );
        std::fs::write(p.join("inc.conf"), &inc).unwrap();
        std::fs::write(
            p.join("jail.local"),
            "[INCLUDES]\nbefore = inc.conf\n[web]\nenabled = true\nfailregex = ^<HOST> y\n",
        )
        .unwrap();
        let start = std::time::Instant::now();
        let e = read_file(&p.join("jail.local")).err().expect("refused");
        assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
        let m = e.to_string();
        assert!(m.contains("inc.conf:2: ") && m.contains("more than"), "{m}");
        // Without the fan-out: 20 notes and one for the rest.
        std::fs::write(p.join("inc.conf"), inc.replace("inc.conf inc.conf", "")).unwrap();
        let j = read_file(&p.join("jail.local")).unwrap();
        let ignored = j
            .notes
            .iter()
            .filter(|n| n.message.contains("ignored"))
            .count();
        assert_eq!(ignored, 21, "{:?}", j.notes.last());
        assert!(
            j.notes
                .iter()
                .any(|n| n.message == "4980 more lines that are not settings; ignored")
        );
    }

    #[test]
    fn tags_resolve() {
        let spend = Spend::default();
        let r = resolve_tags(
            r#"^<HOST> \- \S+ \[\] \"GET /<block>"#,
            &|n| (n == "block").then(|| "x".to_string()),
            true,
            &spend,
            "t",
        )
        .unwrap();
        assert!(r.ends_with("/x"), "{r}");
        assert!(
            compile(&r)
                .unwrap()
                .is_match(br#"192.0.2.1 - - [] "GET /x"#)
        );
        assert!(resolve_tags("<nope>", &|_| None, true, &spend, "t").is_err());
    }
}
