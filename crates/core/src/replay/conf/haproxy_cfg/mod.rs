//! `--haproxy-cfg FILE`: a real haproxy.cfg read into a replay [`Policy`](crate::replay::Policy) that runs each
//! frontend's `http-request` rules in order over its stick tables, as HAProxy 2.6 does.
//!
//! Read: `stick-table type ip|ipv6|string|integer|binary [len N] size N [expire T]
//! [store http_req_rate(P),http_req_cnt,gpc0,…]` (a table is named after its section);
//! `acl NAME criterion [flags] values`; `http-request track-scN KEY [table T] [if|unless
//! COND]` with KEY `src`, `src,ipmask(N[,M])`, `str(CONST)`, `req.hdr(user-agent)`,
//! `req.hdr(referer)`, `path`, `url`; `http-request sc-inc-gpc0(N)`; `http-request deny
//! [deny_status N]` (also `tarpit`, `reject`, `silent-drop`: refused); `http-request
//! return|allow` (final, passed). Conditions: `{ sc_http_req_rate(N) gt X }`,
//! `sc0_http_req_rate`, `sc_get_gpc0(N)`, `sc0_get_gpc0` with `gt ge lt le eq`;
//! `path`, `path_beg`, `path_end`, `path_sub`, `path_reg`, `path_dir` (and `path -m …`,
//! `-i`), `method`, `src`, `hdr(user-agent)`/`hdr(referer)` forms, `TRUE`/`FALSE`,
//! named ACLs, `!`, `||`/`or`, `unless`.
//!
//! A statement that could change what is counted or refused but is not replayed is
//! listed ([`HaproxyCfg::unsupported`], with file:line) and left out; statements that
//! cannot (logging, headers, timeouts, binds, set-var…) are skipped silently. A
//! malformed statement is a [`HaproxyCfgError`] with file:line.
//!
//! Requests are sent to the frontend named by their `host` field (the HAProxy log
//! parser puts `%ft` there); with one frontend, every request goes to it.

use std::path::Path;

mod build;
mod error;
mod fetch;
mod words;

use build::Builder;
pub use build::HaproxyCfg;
pub use error::{HaproxyCfgError, Unsupported};
use words::{SECTIONS, Section, Stmt, words};

/// Reads `path`: a regular file of at most [`crate::conf_file::CONFIG_CAP`] (haproxy.cfg
/// has no includes; its statements are one line each, with no nesting).
pub fn read_file(path: &Path) -> Result<HaproxyCfg, HaproxyCfgError> {
    let shown = crate::escape::path(path);
    let text = crate::conf_file::read_text(path, crate::conf_file::CONFIG_CAP).map_err(|e| {
        HaproxyCfgError {
            file: shown.clone(),
            line: 0,
            message: e.problem(),
        }
    })?;
    let name = path
        .file_name()
        .map_or_else(|| shown.clone(), |n| n.to_string_lossy().into_owned());
    parse(&text, &shown, &name)
}

/// Reads haproxy.cfg text; `file` names it in messages, `name` names the candidate.
pub fn parse(text: &str, file: &str, name: &str) -> Result<HaproxyCfg, HaproxyCfgError> {
    let err = |line: usize, message: String| HaproxyCfgError {
        file: file.to_string(),
        line,
        message,
    };
    let mut sections: Vec<Section> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let w = words(raw).map_err(|m| err(line, m.to_string()))?;
        let Some(first) = w.first() else { continue };
        if SECTIONS.contains(&first.as_str()) {
            let sname = w.get(1).cloned().unwrap_or_default();
            if matches!(first.as_str(), "frontend" | "backend" | "listen") && sname.is_empty() {
                return Err(err(line, format!("`{first}` needs a name")));
            }
            sections.push(Section {
                kind: first.clone(),
                name: sname,
                stmts: Vec::new(),
            });
            continue;
        }
        let Some(sec) = sections.last_mut() else {
            return Err(err(
                line,
                format!(
                    "`{first}` outside any section (global, defaults, frontend, backend, listen)"
                ),
            ));
        };
        sec.stmts.push(Stmt { line, words: w });
    }
    Builder {
        file: file.to_string(),
        unsupported: Vec::new(),
    }
    .build(&sections, name)
}

#[cfg(test)]
mod tests;
