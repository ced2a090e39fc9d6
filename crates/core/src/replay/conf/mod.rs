//! Limiter configurations in their servers' own languages, read into replay candidates
//! and written back out: nginx (`limit_req`, [`NginxConf`]; [`emit_nginx`]) and HAProxy
//! (`haproxy_cfg`).

mod caddyfile;
mod emit;
mod emit_caddy;
pub mod emit_haproxy;
pub mod fail2ban;
pub mod haproxy_cfg;
mod nginx;
mod syntax;
mod vars;

pub use caddyfile::CaddyConf;
pub use emit::{EmitSummary, emit_nginx};
pub use emit_caddy::emit_caddy;
pub use nginx::{NginxConf, Note};
pub use syntax::{Arg, ConfError, Directive, parse_file, parse_str};
