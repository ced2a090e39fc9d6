//! The core crate's one integration-test binary: properties, fuzzing, the real logs and
//! the limiter oracles, each in its own module.

mod fuzz_common;
mod fuzz_grammars;
mod fuzz_parsers;
mod parse_props;
mod real_logs;
mod replay_algorithms;
mod replay_oracle;
mod replay_props;
mod source_props;
