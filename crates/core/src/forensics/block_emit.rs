//! A block written for the servers that enforce it: nginx (`geo` map), HAProxy (an ACL
//! file), Caddy (a `remote_ip` matcher snippet), nftables (interval sets) and a
//! fail2ban-style list (one network a line, for `fail2ban-client set JAIL banip`).
//! Every entry is a CIDR by then (an AS expanded to its prefixes in the database).

use std::fmt::Write as _;

use ipnet::IpNet;

/// A server's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum EmitFormat {
    /// An nginx `geo $logscope_block` map, for `if ($logscope_block) { return 403; }`.
    Nginx,
    /// A HAProxy ACL file, for `acl logscope_block src -f FILE`.
    Haproxy,
    /// A Caddyfile snippet with a `remote_ip` matcher, for `import logscope_block`.
    Caddy,
    /// An nftables table with interval sets dropping the networks on ports 80 and 443.
    Nftables,
    /// One network a line, for fail2ban-client's `banip`.
    Fail2ban,
}

/// The networks of `nets` written for `format`, with a comment `header` (one line each,
/// already free of control characters: it is written after `#`).
pub fn emit(format: EmitFormat, nets: &[IpNet], header: &[String]) -> String {
    let mut out = String::new();
    for h in header {
        let _ = writeln!(out, "# {}", h.replace(['\n', '\r'], " "));
    }
    let (v4, v6): (Vec<&IpNet>, Vec<&IpNet>) = nets.iter().partition(|n| matches!(n, IpNet::V4(_)));
    match format {
        EmitFormat::Nginx => {
            out.push_str("# In the http block; then, in a server or location:\n");
            out.push_str("#     if ($logscope_block) { return 403; }\n");
            out.push_str("geo $logscope_block {\n    default 0;\n");
            for n in nets {
                let _ = writeln!(out, "    {n} 1;");
            }
            out.push_str("}\n");
        }
        EmitFormat::Haproxy => {
            out.push_str("# In a frontend:\n#     acl logscope_block src -f /etc/haproxy/logscope-block.acl\n#     http-request deny if logscope_block\n");
            for n in nets {
                let _ = writeln!(out, "{n}");
            }
        }
        EmitFormat::Caddy => {
            out.push_str("# Import it in a site block: import logscope_block\n");
            out.push_str("(logscope_block) {\n");
            if nets.is_empty() {
                out.push_str("}\n");
                return out;
            }
            out.push_str("\t@logscope_block remote_ip");
            for n in nets {
                let _ = write!(out, " {n}");
            }
            out.push_str("\n\trespond @logscope_block 403\n}\n");
        }
        EmitFormat::Nftables => {
            out.push_str("# nft -f FILE (a table of its own: delete it to lift the block)\n");
            out.push_str("table inet logscope_block {\n");
            for (name, ty, list) in [("v4", "ipv4_addr", &v4), ("v6", "ipv6_addr", &v6)] {
                let _ = writeln!(out, "\tset {name} {{\n\t\ttype {ty}\n\t\tflags interval");
                if !list.is_empty() {
                    let items: Vec<String> = list.iter().map(|n| n.to_string()).collect();
                    let _ = writeln!(out, "\t\telements = {{ {} }}", items.join(", "));
                }
                out.push_str("\t}\n");
            }
            out.push_str(
                "\tchain input {\n\t\ttype filter hook input priority filter; policy accept;\n",
            );
            out.push_str("\t\tip saddr @v4 tcp dport { 80, 443 } drop\n");
            out.push_str("\t\tip6 saddr @v6 tcp dport { 80, 443 } drop\n\t}\n}\n");
        }
        EmitFormat::Fail2ban => {
            out.push_str("# grep -v '^#' FILE | xargs fail2ban-client set JAIL banip\n");
            for n in nets {
                let _ = writeln!(out, "{n}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_lists_every_network() {
        let nets: Vec<IpNet> = ["100.1.0.0/19", "2001:db8::/48"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        for f in [
            EmitFormat::Nginx,
            EmitFormat::Haproxy,
            EmitFormat::Caddy,
            EmitFormat::Nftables,
            EmitFormat::Fail2ban,
        ] {
            let s = emit(f, &nets, &["a\nb".into()]);
            assert!(s.starts_with("# a b\n"), "{s}");
            assert!(
                s.contains("100.1.0.0/19") && s.contains("2001:db8::/48"),
                "{s}"
            );
        }
        let empty = emit(EmitFormat::Nftables, &[], &[]);
        assert!(!empty.contains("elements"));
    }
}
