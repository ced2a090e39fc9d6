//! Regression tests for issue 8 (hardening): hardening_parse.
