//! Integration tests of `logscope replay` (filled in as the command lands).
