//! The requests that are your own services ([`InternalMarks`]).

use std::net::IpAddr;

use ipnet::IpNet;
use regex::bytes::Regex;

use crate::replay::Policy;
use crate::replay::matcher::{CREDENTIAL_REFUSALS, Exempt};

/// Requests that are your own services: every address, agent and user a candidate
/// exempts, plus those named on the command line (`--internal`). Exempting identified
/// users does not make them internal (they have their own class); a user name logged
/// with a credential refusal (401/403/407) is not the user.
#[derive(Clone, Debug)]
pub struct InternalMarks {
    /// Networks.
    pub cidr: Vec<IpNet>,
    /// User-Agent patterns.
    pub agents: Vec<Regex>,
    /// Authenticated users.
    pub users: Vec<Vec<u8>>,
    /// Statuses with which a logged user name is not a credential the server accepted.
    pub credential_refusals: Vec<u16>,
}

impl Default for InternalMarks {
    fn default() -> Self {
        InternalMarks {
            cidr: Vec::new(),
            agents: Vec::new(),
            users: Vec::new(),
            credential_refusals: CREDENTIAL_REFUSALS.to_vec(),
        }
    }
}

impl InternalMarks {
    /// The exemptions of every candidate.
    pub fn from_policies(policies: &[Policy]) -> InternalMarks {
        let mut m = InternalMarks::default();
        for p in policies {
            m.add_exempt(p.exempt());
            for r in p.rules() {
                m.add_exempt(&r.exempt);
            }
        }
        m
    }

    /// Adds an exemption's networks, agents and users.
    pub fn add_exempt(&mut self, e: &Exempt) {
        for c in &e.cidr {
            if !self.cidr.contains(c) {
                self.cidr.push(*c);
            }
        }
        if let Some(re) = &e.ua_regex
            && !self.agents.iter().any(|r| r.as_str() == re.as_str())
        {
            self.agents.push(re.clone());
        }
        for u in &e.users {
            if !self.users.contains(u) {
                self.users.push(u.clone());
            }
        }
        if !e.users.is_empty() {
            self.credential_refusals = e.credential_refusals.clone();
        }
    }

    /// Whether nothing marks a request internal.
    pub fn is_empty(&self) -> bool {
        self.cidr.is_empty() && self.agents.is_empty() && self.users.is_empty()
    }

    /// Whether a request from `ip` with this agent and user, answered `status`, is
    /// internal.
    pub fn covers(
        &self,
        ip: Option<IpAddr>,
        agent: Option<&str>,
        user: Option<&str>,
        status: u16,
    ) -> bool {
        if let Some(ip) = ip
            && !self.cidr.is_empty()
        {
            let ip = crate::replay::canonical(ip);
            if self.cidr.iter().any(|n| n.contains(&ip)) {
                return true;
            }
        }
        if let Some(a) = agent
            && self.agents.iter().any(|re| re.is_match(a.as_bytes()))
        {
            return true;
        }
        if let Some(u) = user
            && !self.credential_refusals.contains(&status)
            && self.users.iter().any(|x| x.as_slice() == u.as_bytes())
        {
            return true;
        }
        false
    }

    /// In words, for the report header.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.cidr.is_empty() {
            let n: Vec<String> = self.cidr.iter().map(|c| c.to_string()).collect();
            parts.push(format!("from {}", n.join(", ")));
        }
        for re in &self.agents {
            parts.push(format!("agent ~ {}", re.as_str()));
        }
        if !self.users.is_empty() {
            let u: Vec<String> = self
                .users
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect();
            parts.push(format!("users {}", u.join(", ")));
        }
        parts.join("; ")
    }
}
