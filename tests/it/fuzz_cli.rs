//! Regression tests for issue 8 (hardening): fuzz_cli.
