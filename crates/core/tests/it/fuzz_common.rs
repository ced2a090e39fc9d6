//! The fuzz harness shared by fuzz_parsers.rs and fuzz_grammars.rs: seeded, bounded
//! proptest runs (`LOGSCOPE_FUZZ_SCALE`, `LOGSCOPE_FUZZ_SEED`) that print each panic
//! location once and the minimal failing input.

use std::fmt;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};

pub fn config(ci_cases: u32) -> Config {
    let scale = std::env::var("LOGSCOPE_FUZZ_SCALE")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or(1)
        .max(1);
    let seed = std::env::var("LOGSCOPE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0x1065_c09e);
    Config {
        cases: ci_cases.saturating_mul(scale),
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: 4096,
        ..Config::default()
    }
}

/// Prints each panic location once: a failing case panics again on every shrink step,
/// and the minimal input is what matters (proptest reports it with the panic message).
fn quiet_repeated_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        let seen = std::sync::Mutex::new(std::collections::HashSet::new());
        std::panic::set_hook(Box::new(move |info| {
            let at = info.location().map(|l| l.to_string()).unwrap_or_default();
            if seen.lock().map(|mut s| s.insert(at)).unwrap_or(true) {
                default(info);
            }
        }));
    });
}

/// Runs `test` on `cases` values of `strategy`; panics with the minimal failing input.
pub fn fuzz<S: Strategy>(
    name: &str,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: fmt::Debug,
{
    quiet_repeated_panics();
    let mut runner = TestRunner::new(config(cases));
    if let Err(e) = runner.run(&strategy, test) {
        panic!("fuzz target {name}: {e}");
    }
}
