//! The built-in formats' registry: one row each — the name `--format` takes, its other
//! spellings and its rank when detection ties. Adding a format is a variant of
//! [`Format`], its row here (the compiler asks for it), its entry in [`BUILTINS`] and the
//! file with its parser, named in [`Format::parser`] (the compiler asks for that too).

use super::Format;

/// One built-in format's row.
pub(crate) struct Row {
    /// The name `--format` takes and the dataset records.
    pub name: &'static str,
    /// Other accepted spellings (case-insensitive).
    pub aliases: &'static [&'static str],
    /// Tie-break rank in detection: the more specific format wins.
    pub specificity: u8,
}

const fn row(name: &'static str, aliases: &'static [&'static str], specificity: u8) -> Row {
    Row {
        name,
        aliases,
        specificity,
    }
}

/// Every built-in format, in the order detection tries them and messages list them.
pub const BUILTINS: [Format; 23] = [
    Format::Combined,
    Format::Common,
    Format::VhostCombined,
    Format::VhostCommon,
    Format::CombinedXff,
    Format::CombinedRt,
    Format::CombinedUs,
    Format::NginxMsec,
    Format::Netnea,
    Format::CaddyJson,
    Format::W3c,
    Format::Elb,
    Format::Alb,
    Format::IngressNginx,
    Format::Haproxy,
    Format::Traefik,
    Format::TraefikJson,
    Format::Envoy,
    Format::NginxJson,
    Format::Istio,
    Format::HaproxyClf,
    Format::EnvoyJson,
    Format::NginxProxyManager,
];

impl Format {
    /// The registry row of a built-in format; `None` for the formats a user writes
    /// (`nginx:…`, `apache:…`, `json:…`) and for `cri:<inner>`.
    pub(crate) fn row(&self) -> Option<Row> {
        Some(match self {
            Format::Combined => row("combined", &["apache", "nginx"], 3),
            Format::Common => row("common", &["clf", "ncsa"], 1),
            Format::VhostCombined => row("vhost-combined", &["vhost_combined"], 4),
            Format::VhostCommon => row("vhost-common", &["vhost_common"], 2),
            Format::CombinedXff => row("combined-xff", &["xff"], 5),
            Format::CombinedRt => row("combined-rt", &[], 6),
            Format::CombinedUs => row("combined-us", &[], 6),
            Format::NginxMsec => row("nginx-msec", &[], 7),
            Format::Netnea => row("netnea", &["netnea-extended"], 7),
            Format::CaddyJson => row("caddy-json", &["caddy"], 7),
            Format::W3c => row("w3c", &["iis", "cloudfront"], 7),
            Format::Elb => row("elb", &["aws-elb"], 7),
            Format::Alb => row("alb", &["aws-alb"], 7),
            Format::IngressNginx => row("ingress-nginx", &["ingress", "upstreaminfo"], 7),
            Format::Haproxy => row("haproxy", &["haproxy-http", "httplog"], 7),
            Format::Traefik => row("traefik", &["traefik-clf"], 7),
            Format::TraefikJson => row("traefik-json", &[], 7),
            Format::Envoy => row("envoy", &[], 7),
            Format::NginxJson => row("nginx-json", &[], 7),
            Format::Istio => row("istio", &["istio-proxy", "envoy-istio"], 7),
            Format::HaproxyClf => row("haproxy-clf", &["httplog-clf"], 7),
            Format::EnvoyJson => row("envoy-json", &["envoy-gateway", "istio-json"], 7),
            Format::NginxProxyManager => row("nginx-proxy-manager", &["npm"], 7),
            Format::Cri(_) | Format::Json(_) | Format::Custom(_) => return None,
        })
    }

    /// The built-in format named `name` or one of its aliases (lower case).
    pub(crate) fn builtin_named(name: &str) -> Option<Format> {
        BUILTINS.into_iter().find(|f| {
            let r = f.row().expect("a built-in has a row");
            r.name == name || r.aliases.contains(&name)
        })
    }

    /// The built-in names, for messages.
    pub(crate) fn builtin_names() -> String {
        BUILTINS
            .iter()
            .map(|f| f.row().expect("a built-in has a row").name)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_is_listed_once_and_every_spelling_is_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for f in BUILTINS {
            let r = f.row().unwrap();
            for n in std::iter::once(r.name).chain(r.aliases.iter().copied()) {
                assert!(seen.insert(n), "{n} names two formats");
                assert_eq!(Format::builtin_named(n), Some(f.clone()), "{n}");
            }
            assert_eq!(Format::from_name(r.name).unwrap(), f);
        }
    }
}
