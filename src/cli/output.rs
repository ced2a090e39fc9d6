//! Report output shared by every report command: `--format`, `--out` and `--force`,
//! the one place reports are emitted (with the note on damaged or bad input of FILE
//! arguments), the global `--color` choice and the terminal's width, and
//! [`AtomicFile`], the safe way to replace a file (`--out`, replay's `--decisions`).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

use anyhow::{Context, anyhow};
use clap::{Args, ValueEnum};
use logscope_core::escape;
use logscope_core::forensics::doc::Document;

use super::exit;
use crate::engine::envelope::Envelope;

/// Prints a usage error; returns its exit status (2).
pub fn usage(msg: impl std::fmt::Display) -> i32 {
    eprintln!("logscope: error: {}", escape::message(&msg.to_string()));
    exit::USAGE
}

/// `--color WHEN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ColorChoice {
    /// Colour when standard output is a terminal and `NO_COLOR` is unset or empty.
    #[default]
    Auto,
    /// Always colour (also when piped, or written with --out).
    Always,
    /// Never colour.
    Never,
}

/// The `--color` of this run, set once by [`super::run`] (0 auto, 1 always, 2 never).
static COLOR: AtomicU8 = AtomicU8::new(0);

/// Records the `--color` choice of this run (called once, before any command runs).
pub fn set_color_choice(c: ColorChoice) {
    let v = match c {
        ColorChoice::Auto => 0,
        ColorChoice::Always => 1,
        ColorChoice::Never => 2,
    };
    COLOR.store(v, Ordering::Relaxed);
}

/// The `--color` choice of this run.
pub fn color_choice() -> ColorChoice {
    match COLOR.load(Ordering::Relaxed) {
        1 => ColorChoice::Always,
        2 => ColorChoice::Never,
        _ => ColorChoice::Auto,
    }
}

/// Width of text reports written to a file, or to a pipe without `COLUMNS`.
pub const DEFAULT_WIDTH: usize = 80;

/// The width text reports on standard output are fitted to: `COLUMNS` when set to a
/// number (whether or not standard output is a terminal, as GNU tools do; so
/// `COLUMNS=120 logscope heavy | less` gets 120), else the terminal's width when
/// standard output is one, else [`DEFAULT_WIDTH`]. Kept within 20..=1000.
pub fn stdout_width() -> usize {
    let from_env = std::env::var("COLUMNS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&w| w > 0);
    let w = from_env.or_else(terminal_columns).unwrap_or(DEFAULT_WIDTH);
    w.clamp(20, 1000)
}

/// The columns of the terminal on standard output, if it is one.
#[cfg(unix)]
fn terminal_columns() -> Option<usize> {
    use std::io::IsTerminal;
    if !io::stdout().is_terminal() {
        return None;
    }
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes a `winsize` into the one it is given and touches
    // nothing else.
    let rc = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
    (rc == 0 && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}

/// The columns of the terminal on standard output (not measured off Unix).
#[cfg(not(unix))]
fn terminal_columns() -> Option<usize> {
    None
}

/// Whether standard output gets colour under this run's `--color`: `always`, or
/// `auto` with a terminal and `NO_COLOR` unset or empty.
pub fn stdout_color() -> bool {
    match color_choice() {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => logscope_core::table::stdout_color(),
    }
}

/// How a report is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// A table for the terminal, fitted to its width (colour: see --color).
    Text,
    /// Markdown, ready to paste into an incident post.
    Md,
    /// CSV (one table; control characters escaped, spreadsheet formulas defused).
    Csv,
    /// JSON: the typed result, not the table.
    Json,
    /// A self-contained HTML page (no network resources).
    Html,
}

impl OutputFormat {
    /// File extension.
    pub fn ext(self) -> &'static str {
        match self {
            OutputFormat::Text => "txt",
            OutputFormat::Md => "md",
            OutputFormat::Csv => "csv",
            OutputFormat::Json => "json",
            OutputFormat::Html => "html",
        }
    }
}

/// `--format`, `--out` and `--force`.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

    /// Write the report to FILE instead of standard output. A bare file name (no
    /// directory) is written under ./reports/ (--out storm.md writes reports/storm.md;
    /// ./storm.md writes here); logscope says where, in full. An existing FILE is
    /// replaced only if it has the format's extension (.txt .md .csv .json .html), else
    /// only with --force; a directory or device never. Written to a new temporary file
    /// beside FILE, then renamed over it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Replace an existing --out (or --decisions) FILE whatever its extension.
    #[arg(long)]
    pub force: bool,
}

impl OutputArgs {
    /// Where `--out` points, with bare names placed under `reports/`.
    pub fn out_path(&self) -> Option<PathBuf> {
        self.out.as_ref().map(|p| {
            if p.components().count() == 1 && !p.is_absolute() && !ends_with_slash(p) {
                Path::new("reports").join(p)
            } else {
                p.clone()
            }
        })
    }

    /// Whether `--out` is a bare name, written under `reports/` by [`Self::out_path`].
    pub fn out_is_bare(&self) -> bool {
        self.out
            .as_ref()
            .is_some_and(|p| self.out_path().as_ref() != Some(p))
    }

    /// The message after writing `p`, the `--out` file: its full path, and why it is
    /// under `reports/` when `--out` was a bare name.
    pub fn wrote(&self, p: &Path) -> String {
        format!(
            "logscope: wrote {}{}",
            shown_path(p),
            if self.out_is_bare() {
                " (a bare --out name is written under ./reports/)"
            } else {
                ""
            }
        )
    }

    /// Whether terminal colour applies: text, and `--color always`, or `--color auto`
    /// (the default) on a terminal with `NO_COLOR` unset; never with `--color never`.
    pub fn color(&self) -> bool {
        if self.format != OutputFormat::Text {
            return false;
        }
        match color_choice() {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => self.out.is_none() && logscope_core::table::stdout_color(),
        }
    }

    /// The width text is fitted to: [`stdout_width`] on standard output,
    /// [`DEFAULT_WIDTH`] in a `--out` file.
    pub fn width(&self) -> usize {
        if self.out.is_none() {
            stdout_width()
        } else {
            DEFAULT_WIDTH
        }
    }

    /// Checks `--out` before any work is done: `Err` is a usage error (exit status 2)
    /// with its message — a directory, a device, or an existing file the overwrite rule
    /// protects.
    pub fn check(&self) -> Result<(), String> {
        match self.out_path() {
            Some(p) => check_target("--out", &p, self.format.ext(), self.force),
            None => Ok(()),
        }
    }

    /// Writes the rendered report to stdout or `--out` (atomically, see [`AtomicFile`]).
    pub fn emit(&self, content: &str) -> anyhow::Result<()> {
        // Log text inside JSON strings: bidi and line-separator characters as `\uXXXX`.
        let content: &str = &if self.format == OutputFormat::Json {
            escape::json(content)
        } else {
            std::borrow::Cow::Borrowed(content)
        };
        match self.out_path() {
            None => {
                let mut out = io::stdout().lock();
                out.write_all(content.as_bytes())?;
                out.flush()?;
            }
            Some(p) => {
                check_target("--out", &p, self.format.ext(), self.force).map_err(|m| anyhow!(m))?;
                let mut f = AtomicFile::create("--out", &p)?;
                f.write_all(content.as_bytes())
                    .with_context(|| format!("--out: cannot write {}", escape::path(&p)))?;
                f.commit()?;
                eprintln!("{}", self.wrote(&p));
            }
        }
        Ok(())
    }

    /// A report command's whole output step: refuses a bad `--out` before any work
    /// (exit 2), computes the report, and writes it with the envelope of `command`;
    /// gives the exit status of what was read. `selection` is the report's description
    /// of its selection.
    pub fn run_report<R: Document>(
        &self,
        command: &str,
        tz: &str,
        compute: impl FnOnce() -> anyhow::Result<(R, crate::engine::rows::RowStats)>,
        selection: impl FnOnce(&R) -> &str,
    ) -> anyhow::Result<i32> {
        if let Err(m) = self.check() {
            return Ok(usage(m));
        }
        let (report, stats) = compute()?;
        let env = Envelope::report(command, selection(&report), tz, &stats);
        self.emit_report(&report, &env)?;
        Ok(stats.exit_code())
    }

    /// Emits a finished report: through its `Doc` for text (at the terminal's width),
    /// Markdown, CSV and HTML, serialized as JSON after the envelope's keys. With FILE
    /// inputs, the notes on bad lines and damage are added under the title in text,
    /// Markdown and HTML (JSON has them in `inputs`); CSV is left as data.
    pub fn emit_report(&self, report: &impl Document, env: &Envelope) -> anyhow::Result<()> {
        let width = self.width();
        let noted = |w: usize| {
            let mut d = report.doc(w);
            if let Some(i) = env.input() {
                d.lines.extend(i.notes());
            }
            d
        };
        let text = match self.format {
            OutputFormat::Text => noted(width).to_text(width, self.color()),
            OutputFormat::Md => noted(usize::MAX).to_markdown(),
            OutputFormat::Csv => report.doc(usize::MAX).to_csv(),
            OutputFormat::Html => noted(usize::MAX).to_html(),
            OutputFormat::Json => json(&env.wrap(report))?,
        };
        self.emit(&text)
    }
}

/// A result as pretty-printed JSON, with a final newline.
pub fn json(v: &impl serde::Serialize) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(v)? + "\n")
}

/// A path written to, for messages: absolute (a relative one joined to the current
/// directory, symbolic links not resolved), escaped for the terminal.
pub fn shown_path(p: &Path) -> String {
    escape::path(&std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
}

fn ends_with_slash(p: &Path) -> bool {
    let b = p.as_os_str().as_encoded_bytes();
    b.ends_with(b"/") || (cfg!(windows) && b.ends_with(b"\\"))
}

/// Whether `flag`'s `target` may be written: a missing file
/// may; an existing regular file (or symlink, which is replaced, never followed) only
/// if it ends in `.ext` or with `force`; a directory or a device never. `Err` holds
/// the message of a usage error. This is the overwrite rule of `--out` and `--decisions`.
pub fn check_target(flag: &str, target: &Path, ext: &str, force: bool) -> Result<(), String> {
    let shown = escape::path(target);
    let meta = std::fs::symlink_metadata(target);
    let is_dir = ends_with_slash(target) || meta.as_ref().is_ok_and(|m| m.is_dir());
    if is_dir {
        return Err(format!(
            "{flag} {shown}: is a directory; give a file name, e.g. {flag} {}",
            escape::path(&target.join(format!("report.{ext}")))
        ));
    }
    let Ok(meta) = meta else {
        // Missing (or unreachable: writing it will say why).
        return Ok(());
    };
    let ft = meta.file_type();
    if !ft.is_file() && !ft.is_symlink() {
        return Err(format!(
            "{flag} {shown}: is not a regular file (a device, pipe or socket); logscope writes only regular files{}",
            if flag == "--out" {
                "; leave out --out to write to standard output"
            } else {
                ""
            }
        ));
    }
    let ours = target
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(ext));
    if ours || force {
        return Ok(());
    }
    Err(format!(
        "{flag} {shown}: already exists and is not a .{ext} file; logscope replaces an existing file only if it has the extension it writes (.{ext}); add --force to replace it, or choose another name"
    ))
}

/// A file being replaced atomically: the content goes to a new temporary file created
/// exclusively (never through an existing file or symlink) in the target's directory,
/// and [`AtomicFile::commit`] fsyncs it and renames it over the target. Dropped without
/// a commit (an error on the way), the temporary file is removed.
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    target: PathBuf,
    flag: &'static str,
}

impl AtomicFile {
    /// Starts replacing `target` (its directory is created if missing). `flag` names
    /// the option in messages. The caller applies [`check_target`] first.
    pub fn create(flag: &'static str, target: &Path) -> anyhow::Result<AtomicFile> {
        let shown = escape::path(target);
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{flag}: cannot create {}", escape::path(dir)))?;
        let name = target
            .file_name()
            .ok_or_else(|| anyhow!("{flag} {shown}: not a file name"))?;
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        let mut b = tempfile::Builder::new();
        b.prefix(&prefix).suffix(".tmp");
        #[cfg(unix)]
        {
            // Like any new file: 0666 less the umask (not tempfile's 0600).
            use std::os::unix::fs::PermissionsExt;
            b.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let tmp = b
            .tempfile_in(dir)
            .with_context(|| format!("{flag}: cannot write {shown}"))?;
        Ok(AtomicFile {
            tmp,
            target: target.to_path_buf(),
            flag,
        })
    }

    /// Flushes, fsyncs and renames the temporary file over the target (a symlink there
    /// is replaced, not followed), then fsyncs the directory.
    pub fn commit(self) -> anyhow::Result<()> {
        let flag = self.flag;
        let shown = escape::path(&self.target);
        self.tmp
            .as_file()
            .sync_all()
            .with_context(|| format!("{flag}: cannot write {shown}"))?;
        // On failure the error owns the temporary file, and dropping it removes it.
        self.tmp
            .persist(&self.target)
            .map_err(|e| anyhow::Error::new(e.error))
            .with_context(|| format!("{flag}: cannot write {shown}"))?;
        if let Some(dir) = self.target.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            // Best effort: the rename is what makes the file visible.
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.as_file_mut().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.tmp.as_file_mut().write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tmp.as_file_mut().flush()
    }
}
