//! A small table model rendered as a terminal table (fits a width measured in display
//! columns, optional colour), Markdown, CSV or HTML — every cell escaped for its medium,
//! since cells often hold attacker-controlled log text.

use std::fmt::Write;

use unicode_width::UnicodeWidthChar;

use crate::escape;

/// Horizontal alignment of a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
}

/// Colour of a cell on a terminal (and a CSS class in HTML).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Style {
    /// Plain.
    #[default]
    Plain,
    /// Good.
    Green,
    /// Mild warning.
    Yellow,
    /// Warning.
    Orange,
    /// Bad.
    Red,
    /// Emphasis.
    Bold,
}

impl Style {
    fn ansi(self) -> &'static str {
        match self {
            Style::Plain => "",
            Style::Green => "\x1b[32m",
            Style::Yellow => "\x1b[33m",
            Style::Orange => "\x1b[38;5;208m",
            Style::Red => "\x1b[31m",
            Style::Bold => "\x1b[1m",
        }
    }

    /// CSS class name used by [`Table::to_html`].
    pub fn class(self) -> &'static str {
        match self {
            Style::Plain => "",
            Style::Green => "green",
            Style::Yellow => "yellow",
            Style::Orange => "orange",
            Style::Red => "red",
            Style::Bold => "bold",
        }
    }
}

/// One cell: text (raw, unescaped), a style, and optionally the typed value CSV
/// writes instead of the text.
///
/// CSV is data: a count shown as `6,161` is written `6161`, a share shown as `1.2%` is
/// written `0.0123`, a time shown as `05-01 19:00` is written in RFC 3339 with its year
/// and zone. Build such cells with [`Cell::count`], [`Cell::int`], [`Cell::fraction`],
/// [`Cell::time`] or [`Cell::with_data`]; a cell without data writes its text. When a
/// display column packs two values, give CSV its own table (`Doc::csv`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Cell {
    /// The text, as computed (escaping happens when rendering).
    pub text: String,
    /// Colour on terminals / class in HTML.
    pub style: Style,
    /// What CSV writes instead of `text` (a plain number, an RFC 3339 time); it goes
    /// through the same formula-defusing [`csv_cell`].
    pub data: Option<String>,
}

impl<T: Into<String>> From<T> for Cell {
    fn from(t: T) -> Cell {
        Cell {
            text: t.into(),
            style: Style::Plain,
            data: None,
        }
    }
}

impl Cell {
    /// A styled cell.
    pub fn styled(text: impl Into<String>, style: Style) -> Cell {
        Cell {
            text: text.into(),
            style,
            data: None,
        }
    }

    /// A count: shown with thousands separators, written to CSV as a plain integer.
    pub fn count(n: u64) -> Cell {
        Cell::from(crate::number::thousands(n)).with_data(n.to_string())
    }

    /// A signed integer: shown with thousands separators, CSV a plain integer.
    pub fn int(n: i64) -> Cell {
        let shown = if n < 0 {
            format!("-{}", crate::number::thousands(n.unsigned_abs()))
        } else {
            crate::number::thousands(n as u64)
        };
        Cell::from(shown).with_data(n.to_string())
    }

    /// A fraction (0–1) shown as `shown` (e.g. `1.2%`), CSV the number itself
    /// (shortest round-trip form; a non-finite value is an empty cell).
    pub fn fraction(f: f64, shown: impl Into<String>) -> Cell {
        Cell::from(shown).with_data(fraction_data(f))
    }

    /// A time shown as `shown`, CSV `rfc3339` (from [`crate::time::local_rfc3339`]).
    pub fn time(shown: impl Into<String>, rfc3339: impl Into<String>) -> Cell {
        Cell::from(shown).with_data(rfc3339)
    }

    /// This cell with `data` as its CSV value.
    pub fn with_data(mut self, data: impl Into<String>) -> Cell {
        self.data = Some(data.into());
        self
    }

    /// This cell with `style`.
    pub fn with_style(mut self, style: Style) -> Cell {
        self.style = style;
        self
    }

    /// What CSV writes (before escaping): the data value, else the text.
    pub fn csv_value(&self) -> &str {
        self.data.as_deref().unwrap_or(&self.text)
    }
}

/// A fraction as CSV data: the shortest form that reads back as the same `f64`
/// (`0.0123`, `1`, `0`); empty for NaN or infinity.
pub fn fraction_data(f: f64) -> String {
    if f.is_finite() {
        format!("{f}")
    } else {
        String::new()
    }
}

/// An HTML cell shows at most this many display columns of its text (cut with `…`; the
/// whole text is in the cell's `title`), so that one long value (a 32 KB exploit path)
/// cannot push the other columns off the page.
pub const HTML_CELL_WIDTH: usize = 120;

/// A table with a header row.
#[derive(Clone, Debug, Default)]
pub struct Table {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<Cell>>,
    /// Column names CSV writes instead of the headers (data names: `share`, `cumulative_share`).
    csv_headers: Option<Vec<String>>,
    /// The column whose counts rank the rows when a long table is cut ([`Table::summary`]).
    rank: Option<usize>,
}

impl Table {
    /// A table with these column headers and alignments.
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            headers: columns.iter().map(|(h, _)| h.to_string()).collect(),
            align: columns.iter().map(|(_, a)| *a).collect(),
            rows: Vec::new(),
            csv_headers: None,
            rank: None,
        }
    }

    /// This table with column `col`'s counts as what makes a row matter: when a long
    /// table is cut ([`Table::summary`]), the rows with the most are kept (a table in
    /// time order keeps its busiest rows, in time order).
    pub fn ranked_by(mut self, col: usize) -> Table {
        self.rank = (col < self.headers.len()).then_some(col);
        self
    }

    /// The header of the column the table is [`Table::ranked_by`], if any.
    pub fn ranked(&self) -> Option<&str> {
        self.rank.map(|i| self.headers[i].as_str())
    }

    /// The first `keep` rows, or (a table [`Table::ranked_by`] a column) the `keep`
    /// rows with the largest counts in it, ties to the earlier row, in their order;
    /// with the number of rows left out. `None` when the table has at most `keep` rows.
    pub fn summary(&self, keep: usize) -> Option<(Table, usize)> {
        if self.rows.len() <= keep {
            return None;
        }
        let mut idx: Vec<usize> = (0..self.rows.len()).collect();
        if let Some(col) = self.rank {
            let value = |i: usize| self.rows[i].get(col).map_or(0.0, number_of);
            idx.sort_by(|&a, &b| value(b).total_cmp(&value(a)).then(a.cmp(&b)));
            idx.truncate(keep);
            idx.sort_unstable();
        } else {
            idx.truncate(keep);
        }
        let mut t = self.clone_empty();
        t.rows = idx.iter().map(|&i| self.rows[i].clone()).collect();
        Some((t, self.rows.len() - keep))
    }

    /// This table's columns without its rows.
    fn clone_empty(&self) -> Table {
        Table {
            headers: self.headers.clone(),
            align: self.align.clone(),
            rows: Vec::new(),
            csv_headers: self.csv_headers.clone(),
            rank: self.rank,
        }
    }

    /// About how many characters wide the table is on a page: per column, its widest
    /// cell (at most [`HTML_CELL_WIDTH`]) and 3 for padding and borders.
    pub fn text_width(&self) -> usize {
        (0..self.headers.len())
            .map(|i| {
                let widest = self
                    .rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .map(|c| c.text.chars().count())
                    .chain([self.headers[i].chars().count()])
                    .max()
                    .unwrap_or(0);
                widest.min(HTML_CELL_WIDTH) + 3
            })
            .sum()
    }

    /// Whether every number of the table is zero: it has rows, and every cell of its
    /// right-aligned columns is a zero count, share or size (`0`, `0.0%`, `0 B`) or
    /// blank (`-`, empty). A table of zeros holds no data.
    pub fn all_zero(&self) -> bool {
        !self.rows.is_empty()
            && self.rows.iter().all(|r| {
                r.iter()
                    .zip(&self.align)
                    .filter(|(_, a)| **a == Align::Right)
                    .all(|(c, _)| is_zero(c))
            })
    }

    /// This table with `names` as its CSV column names (one per column, lower-case
    /// snake case: `rank`, `requests`, `cumulative_share`); display headers unchanged.
    pub fn with_csv_headers(mut self, names: &[&str]) -> Table {
        let mut v: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        v.resize(self.headers.len(), String::new());
        self.csv_headers = Some(v);
        self
    }

    /// Appends a row (missing cells are blank, extra cells dropped).
    pub fn row<C: Into<Cell>>(&mut self, cells: impl IntoIterator<Item = C>) {
        let mut r: Vec<Cell> = cells.into_iter().map(Into::into).collect();
        r.resize(self.headers.len(), Cell::default());
        self.rows.push(r);
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// A terminal table at most `width` display columns wide: the widest left-aligned
    /// column is cut (with `…`) when the table would not fit. Widths are display
    /// columns ([`display_width`]): a CJK character or an emoji takes two, a combining
    /// mark none, so columns stay aligned whatever the text. Colour only when `color`.
    pub fn to_terminal(&self, width: usize, color: bool) -> String {
        let esc: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|c| escape::terminal_str(&c.text, 500))
                    .collect()
            })
            .collect();
        let headers: Vec<String> = self
            .headers
            .iter()
            .map(|h| escape::terminal_str(h, 500))
            .collect();
        let n = self.headers.len();
        let mut w: Vec<usize> = headers.iter().map(|h| display_width(h)).collect();
        for r in &esc {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(display_width(c));
            }
        }
        let total = |w: &[usize]| w.iter().sum::<usize>() + 2 * n.saturating_sub(1);
        while total(&w) > width {
            // Shrink the widest left-aligned column (never below 8).
            let Some((i, _)) = w
                .iter()
                .enumerate()
                .filter(|(i, wi)| self.align[*i] == Align::Left && **wi > 8)
                .max_by_key(|(i, wi)| (**wi, std::cmp::Reverse(*i)))
            else {
                break;
            };
            w[i] -= 1;
        }
        let mut out = String::new();
        let line = |out: &mut String, cells: &[String], styles: Option<&[Cell]>| {
            let mut parts = Vec::with_capacity(n);
            for i in 0..n {
                let text = fit(&cells[i], w[i]);
                let pad = w[i].saturating_sub(display_width(&text));
                let padded = match self.align[i] {
                    Align::Left => format!("{text}{}", " ".repeat(pad)),
                    Align::Right => format!("{}{text}", " ".repeat(pad)),
                };
                let style = styles.map_or(Style::Plain, |s| s[i].style);
                if color && style != Style::Plain {
                    parts.push(format!("{}{padded}\x1b[0m", style.ansi()));
                } else {
                    parts.push(padded);
                }
            }
            let joined = parts.join("  ");
            let _ = writeln!(out, "{}", joined.trim_end());
        };
        line(&mut out, &headers, None);
        for (r, cells) in esc.iter().zip(&self.rows) {
            line(&mut out, r, Some(cells));
        }
        out
    }

    /// Whether the table fits `width` display columns with no cell cut below `min`
    /// columns: each column takes its widest cell, or `min` when that is wider (the
    /// least [`Table::to_terminal`] would leave a cut column), two spaces between.
    pub fn fits(&self, width: usize, min: usize) -> bool {
        let mut total = 2 * self.headers.len().saturating_sub(1);
        for (i, h) in self.headers.iter().enumerate() {
            let widest = self
                .rows
                .iter()
                .filter_map(|r| r.get(i))
                .map(|c| display_width(&escape::terminal_str(&c.text, 500)))
                .chain([display_width(&escape::terminal_str(h, 500))])
                .max()
                .unwrap_or(0);
            total += if self.align[i] == Align::Right {
                widest
            } else {
                widest.min(min)
            };
        }
        total <= width
    }

    /// The rows as records, one `column  value` line per cell (as `psql \x` shows
    /// them), each record under a `-[ row N ]-` rule; values cut to `width` (with `…`).
    pub fn to_records(&self, width: usize) -> String {
        let names: Vec<String> = self
            .headers
            .iter()
            .map(|h| escape::terminal_str(h, 200))
            .collect();
        let name_w = names.iter().map(|n| display_width(n)).max().unwrap_or(0);
        let value_w = width.saturating_sub(name_w + 2).max(8);
        let mut out = String::new();
        for (i, r) in self.rows.iter().enumerate() {
            let rule = format!("-[ row {} ]", i + 1);
            let dashes = (name_w + 2 + value_w.min(30)).saturating_sub(display_width(&rule));
            let _ = writeln!(out, "{rule}{}", "-".repeat(dashes.max(1)));
            for (name, cell) in names.iter().zip(r) {
                let value = fit(&escape::terminal_str(&cell.text, 4000), value_w);
                let pad = name_w - display_width(name);
                let line = format!("{name}{}  {value}", " ".repeat(pad));
                let _ = writeln!(out, "{}", line.trim_end());
            }
        }
        out
    }

    /// A Markdown (GFM) table; cells escaped, styles shown as text by the caller.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let hdr: Vec<String> = self.headers.iter().map(|h| escape::markdown(h)).collect();
        let _ = writeln!(out, "| {} |", hdr.join(" | "));
        let seps: Vec<&str> = self
            .align
            .iter()
            .map(|a| match a {
                Align::Left => "---",
                Align::Right => "---:",
            })
            .collect();
        let _ = writeln!(out, "|{}|", seps.join("|"));
        for r in &self.rows {
            let cells: Vec<String> = r.iter().map(|c| escape::markdown(&c.text)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        out
    }

    /// CSV (RFC 4180): each cell's [`Cell::csv_value`] (its typed data when it has
    /// one, else its text) through [`csv_cell`]: control characters escaped as
    /// `\xHH`, cells that a spreadsheet would run as a formula (`=`, `+`, `-`, `@`
    /// followed by a non-number) with a leading `'`.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        let hdr: Vec<String> = self
            .csv_headers
            .as_ref()
            .unwrap_or(&self.headers)
            .iter()
            .map(|h| csv_cell(h))
            .collect();
        let _ = writeln!(out, "{}", hdr.join(","));
        for r in &self.rows {
            let cells: Vec<String> = r.iter().map(|c| csv_cell(c.csv_value())).collect();
            let _ = writeln!(out, "{}", cells.join(","));
        }
        out
    }

    /// An HTML `<table>` (no page around it); styled cells get a class. A cell wider
    /// than [`HTML_CELL_WIDTH`] display columns shows its start cut with `…`, the whole
    /// text (escaped) in its `title`.
    pub fn to_html(&self) -> String {
        let mut out = String::from("<table>\n<thead><tr>");
        for (h, a) in self.headers.iter().zip(&self.align) {
            let _ = write!(out, "<th{}>{}</th>", align_attr(*a), escape::html(h));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for r in &self.rows {
            out.push_str("<tr>");
            for (c, a) in r.iter().zip(&self.align) {
                let class = c.style.class();
                let class = if class.is_empty() {
                    String::new()
                } else {
                    format!(" class=\"{class}\"")
                };
                let text = escape::terminal_str(&c.text, usize::MAX);
                if display_width(&text) > HTML_CELL_WIDTH {
                    let _ = write!(
                        out,
                        "<td{}{class} title=\"{}\">{}</td>",
                        align_attr(*a),
                        escape::html(&text),
                        escape::html(&truncate_to_width(&text, HTML_CELL_WIDTH))
                    );
                } else {
                    let _ = write!(
                        out,
                        "<td{}{class}>{}</td>",
                        align_attr(*a),
                        escape::html(&text)
                    );
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
        out
    }
}

/// A cell's count, for ranking rows: its typed data when it has a number, else the
/// number its text starts with (`6,161`, `≈1,234`, `1,955!`, `12.5%`); 0 when none.
fn number_of(c: &Cell) -> f64 {
    let lead = |s: &str| -> Option<f64> {
        let s = s.trim_start_matches('≈');
        let digits: String = s
            .chars()
            .take_while(|ch| ch.is_ascii_digit() || *ch == ',' || *ch == '.')
            .filter(|ch| *ch != ',')
            .collect();
        digits.parse().ok()
    };
    c.data
        .as_deref()
        .and_then(|d| d.parse().ok())
        .or_else(|| lead(c.text.trim()))
        .unwrap_or(0.0)
}

/// Whether a cell is a zero (`0`, `0.0%`, `0 B`, `≈0`) or blank (`-`, empty).
fn is_zero(c: &Cell) -> bool {
    let t = c.text.trim();
    if t.is_empty() || t == "-" {
        return true;
    }
    let rest = t
        .trim_start_matches('≈')
        .trim_end_matches(['%', 'B', ' '])
        .replace(',', "");
    !rest.is_empty() && rest.chars().all(|ch| ch == '0' || ch == '.') && rest.contains('0')
}

fn align_attr(a: Align) -> &'static str {
    match a {
        Align::Left => "",
        Align::Right => " style=\"text-align:right\"",
    }
}

/// The columns `c` takes on a terminal: 2 for wide (CJK, most emoji), 0 for combining
/// marks and other zero-width characters, else 1 (East Asian ambiguous characters count
/// 1, as outside CJK locales).
fn char_width(c: char) -> usize {
    UnicodeWidthChar::width(c).unwrap_or(0)
}

/// The display width of `s` on a terminal, in columns: the sum of its characters'
/// widths (see [`Table::to_terminal`]). `s` should already be escaped (no controls).
pub fn display_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// `s` cut to at most `w` display columns, ending in `…` when cut. A character is never
/// split: a wide character that would straddle the limit is left out (the result may
/// be one column narrower than `w`), and combining marks stay with their base.
pub fn truncate_to_width(s: &str, w: usize) -> String {
    if display_width(s) <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let room = w - 1; // one column for the ellipsis
    let mut out = String::new();
    let mut used = 0usize;
    for c in s.chars() {
        let cw = char_width(c);
        if used + cw > room {
            break;
        }
        used += cw;
        out.push(c);
    }
    out.push('…');
    out
}

fn fit(s: &str, w: usize) -> String {
    truncate_to_width(s, w)
}

/// One CSV cell: the one function every CSV writer uses (see [`escape::csv_cell`]).
pub use crate::escape::csv_cell;

/// Whether colour should be used on stdout: a terminal, and `NO_COLOR` unset.
pub fn stdout_color() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// A sparkline of values (▁▂▃▄▅▆▇█), scaled to the maximum.
pub fn sparkline(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = values.iter().copied().fold(0.0f64, f64::max);
    values
        .iter()
        .map(|&v| {
            if max <= 0.0 || v <= 0.0 {
                ' '
            } else {
                BARS[(((v / max) * 7.0).round() as usize).min(7)]
            }
        })
        .collect()
}

/// A horizontal bar of `width` cells for `v` out of `max`.
pub fn bar(v: f64, max: f64, width: usize) -> String {
    if max <= 0.0 {
        return String::new();
    }
    let cells = ((v / max) * width as f64).round() as usize;
    "█".repeat(cells.min(width))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new(&[("prefix", Align::Left), ("requests", Align::Right)]);
        t.row(["1.2.3.0/24", "10"]);
        t.row(vec![
            Cell::from("=HYPERLINK(\"x\")|\x1b[2J"),
            Cell::styled("5", Style::Red),
        ]);
        t
    }

    #[test]
    fn terminal_fits_and_escapes() {
        let out = sample().to_terminal(80, false);
        assert!(!out.contains('\x1b'));
        assert!(out.lines().all(|l| l.chars().count() <= 80));
        assert!(out.contains("1.2.3.0/24"));
        let narrow = sample().to_terminal(20, false);
        assert!(narrow.lines().all(|l| l.chars().count() <= 20), "{narrow}");
        let colored = sample().to_terminal(80, true);
        assert!(colored.contains("\x1b[31m"));
    }

    #[test]
    fn markdown_csv_html_escape() {
        let t = sample();
        assert!(t.to_markdown().contains("\\|"));
        let csv = t.to_csv();
        assert!(csv.contains("\"'=HYPERLINK(\"\"x\"\")|\\x1b[2J\""), "{csv}");
        assert!(!csv.contains('\x1b'), "{csv}");
        assert_eq!(csv_cell("-5"), "-5");
        assert_eq!(csv_cell("-"), "-");
        assert_eq!(csv_cell("@SUM(A1)"), "'@SUM(A1)");
        let html = t.to_html();
        assert!(html.contains("class=\"red\""));
        assert!(!html.contains("\x1b"));
    }

    fn wide_sample() -> Table {
        let mut t = Table::new(&[
            ("agent", Align::Left),
            ("class", Align::Left),
            ("requests", Align::Right),
        ]);
        t.row(["Mozilla/5.0 (Windows NT 10.0)", "browser", "1"]);
        t.row(["百度蜘蛛 Baiduspider 日本語のクローラー", "crawler", "22"]);
        t.row(["🤖🤖🤖 robot 🐍 python", "tool", "333"]);
        t.row(["Cafe\u{301} noir", "ze\u{301}", "4444"]);
        t.row(["한국어 사용자 에이전트", "브라우저", "5"]);
        t
    }

    #[test]
    fn cjk_and_emoji_keep_columns_aligned() {
        let t = wide_sample();
        for width in [usize::MAX, 80, 40, 30, 24] {
            let out = t.to_terminal(width, false);
            // Pad every line to the table's width: the right-aligned last column ends
            // every line at the same display column.
            let widths: Vec<usize> = out.lines().map(display_width).collect();
            assert!(
                widths.iter().all(|w| *w == widths[0]),
                "width {width}: {widths:?}\n{out}"
            );
            // Left columns shrink to 8 at the least (8 + 2 + 8 + 2 + 8 = 28 here).
            if width != usize::MAX && width >= 28 {
                assert!(widths[0] <= width, "width {width}: {widths:?}\n{out}");
            }
            // The "class" column starts at the same display column on every line.
            let starts: Vec<usize> = out
                .lines()
                .skip(1)
                .map(|l| {
                    let i = ["browser", "crawler", "tool", "ze\u{301}", "브라우저"]
                        .iter()
                        .find_map(|c| l.find(c))
                        .expect("class cell shown");
                    display_width(&l[..i])
                })
                .collect();
            assert!(
                starts.iter().all(|s| *s == starts[0]),
                "width {width}: {starts:?}\n{out}"
            );
        }
    }

    #[test]
    fn truncation_counts_columns_and_never_splits_characters() {
        assert_eq!(display_width("日本語"), 6);
        assert_eq!(display_width("🤖a"), 3);
        assert_eq!(display_width("e\u{301}"), 1);
        // A wide character that would straddle the limit is left out.
        assert_eq!(truncate_to_width("日本語", 4), "日…");
        assert_eq!(truncate_to_width("日本語", 5), "日本…");
        assert_eq!(truncate_to_width("日本語", 6), "日本語");
        assert_eq!(truncate_to_width("🤖🤖🤖", 4), "🤖…");
        // Combining marks stay with their base.
        assert_eq!(
            truncate_to_width("e\u{301}e\u{301}xyz", 3),
            "e\u{301}e\u{301}…"
        );
        assert_eq!(truncate_to_width("abc", 0), "");
        for w in 0..12 {
            let t = truncate_to_width("百度 🤖 e\u{301} Baidu", w);
            assert!(display_width(&t) <= w, "{w}: {t}");
        }
    }

    #[test]
    fn csv_writes_typed_data() {
        let mut t = Table::new(&[
            ("n", Align::Right),
            ("share", Align::Right),
            ("t", Align::Left),
        ]);
        t.row(vec![
            Cell::count(6161).with_style(Style::Red),
            Cell::fraction(0.0123, "1.2%"),
            Cell::time("05-01 19:00", "2026-05-01T19:00:00+09:00"),
        ]);
        t.row(vec![
            Cell::int(-4207),
            Cell::fraction(f64::NAN, "-"),
            Cell::from("=x"),
        ]);
        assert_eq!(
            t.to_csv(),
            "n,share,t\n6161,0.0123,2026-05-01T19:00:00+09:00\n-4207,,'=x\n"
        );
        let term = t.to_terminal(80, false);
        assert!(term.contains("6,161") && term.contains("1.2%") && term.contains("-4,207"));
        assert_eq!(fraction_data(1.0), "1");
    }

    #[test]
    fn html_cells_are_cut_with_the_whole_value_in_their_title() {
        let mut t = Table::new(&[("path", Align::Left), ("requests", Align::Right)]);
        let long = format!("/{}\"<x>&\x1b{}", "a".repeat(200), "日".repeat(100));
        t.row([long.as_str(), "12"]);
        t.row(["/short", "3"]);
        let html = t.to_html();
        let whole = escape::html(&long);
        assert!(whole.contains("&quot;&lt;x&gt;&amp;\\x1b"), "{whole}");
        let cell = format!("<td title=\"{whole}\">");
        assert!(html.contains(&cell), "{html}");
        let shown = html
            .split(&cell)
            .nth(1)
            .and_then(|r| r.split("</td>").next())
            .unwrap();
        assert_eq!(shown, format!("/{}…", "a".repeat(118)));
        assert!(html.contains("<td>/short</td><td style=\"text-align:right\">3</td>"));
        // Exactly the width: not cut, no title.
        let mut t = Table::new(&[("path", Align::Left)]);
        t.row(["b".repeat(HTML_CELL_WIDTH)]);
        assert!(!t.to_html().contains("title="));
    }

    #[test]
    fn a_summary_keeps_the_rows_with_the_most_in_their_order() {
        let mut t = Table::new(&[("start", Align::Right), ("heavy", Align::Right)]);
        for (i, n) in [5u64, 0, 1_200, 7, 0, 7, 3].iter().enumerate() {
            t.row(vec![
                Cell::from(format!("d{i}")),
                Cell::from(thousands_of(*n)),
            ]);
        }
        assert!(t.summary(7).is_none());
        // First rows when not ranked.
        let (s, more) = t.summary(3).unwrap();
        assert_eq!(more, 4);
        assert!(
            s.to_csv()
                .starts_with("start,heavy\nd0,5\nd1,0\nd2,\"1,200\"\n")
        );
        assert_eq!(t.ranked(), None);
        // Ranked: the most first, ties to the earlier row, shown in table order.
        let t = t.ranked_by(1);
        assert_eq!(t.ranked(), Some("heavy"));
        let (s, more) = t.summary(3).unwrap();
        assert_eq!(more, 4);
        assert_eq!(s.to_csv(), "start,heavy\nd2,\"1,200\"\nd3,7\nd5,7\n");
        // Typed data ranks before text: 9 written as `nine`.
        let mut t = Table::new(&[("k", Align::Left), ("n", Align::Right)]).ranked_by(1);
        t.row(vec![Cell::from("a"), Cell::from("nine").with_data("9")]);
        t.row(vec![Cell::from("b"), Cell::from("≈8")]);
        t.row(vec![Cell::from("c"), Cell::from("10!")]);
        let (s, _) = t.summary(2).unwrap();
        assert_eq!(s.to_csv(), "k,n\na,9\nc,10!\n");
    }

    fn thousands_of(n: u64) -> String {
        crate::number::thousands(n)
    }

    #[test]
    fn a_table_of_zeros_holds_no_data() {
        let mut t = Table::new(&[
            ("window", Align::Left),
            ("refused", Align::Right),
            ("share", Align::Right),
            ("bytes", Align::Right),
        ]);
        assert!(!t.all_zero(), "no rows: empty, not zeros");
        t.row(["10:00", "0", "0.0%", "0 B"]);
        t.row(["10:10", "-", "", "≈0"]);
        assert!(t.all_zero());
        t.row(["10:20", "0", "0.1%", "0 B"]);
        assert!(!t.all_zero());
        let mut dates = Table::new(&[("start", Align::Right), ("n", Align::Right)]);
        dates.row(["2025-03-14", "0"]);
        assert!(!dates.all_zero(), "a date is not a zero");
    }

    #[test]
    fn sparkline_scales() {
        assert_eq!(sparkline(&[0.0, 1.0, 2.0]), " ▅█");
    }
}
