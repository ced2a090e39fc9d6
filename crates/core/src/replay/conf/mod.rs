//! Limiter configurations in their servers' own languages, read into replay candidates
//! and written back out: nginx (`limit_req`, [`NginxConf`]; [`emit_nginx`]) and HAProxy
//! (`haproxy_cfg`).

mod emit;
pub mod haproxy_cfg;
mod nginx;
mod syntax;
mod vars;

pub use emit::{EmitSummary, emit_nginx};
pub use nginx::{NginxConf, Note};
pub use syntax::{Arg, ConfError, Directive, parse_file, parse_str};
