//! A real Caddyfile's `rate_limit` handlers (mholt/caddy-ratelimit) as a replay candidate:
//! Caddy's own syntax (one directive per line, `{ }` blocks, `"…"`/`` `…` `` quotes,
//! `{$ENV:default}` substituted first, `(snippets)` and `import`, `@named` matchers), the
//! handler order Caddy runs a site in (its default directive order, changed by global
//! `order` options; rewrites and `handle` blocks mutually exclusive), and each zone's
//! `match` sets, `key` (`{remote_host}`, `{client_ip}` with `ipv4_prefix`/`ipv6_prefix`,
//! header placeholders, static keys), `events` and `window`. Matchers become rules of the
//! Caddy dialect: a zone's matcher, expanded over the rewrites before it and minus what
//! terminal handlers before it answer, is written as disjoint first-order [`Matcher`]s.
//! What a log line cannot evaluate (CEL expressions, headers the log does not carry, an
//! unknown placeholder) is a [`Note`] with file:line: the zone is left out, never guessed.

mod build;
mod cond;
mod lexer;
mod matchers;
mod reader;
mod source;
mod walk;
mod zone;

pub use build::CaddyConf;

#[cfg(test)]
mod tests;
