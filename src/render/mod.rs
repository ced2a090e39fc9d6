//! Rendering of command results for people: terminal text (escaped), and helpers
//! shared by the report formats.

pub mod summary;
