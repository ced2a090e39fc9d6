//! A report as people read it: a title, a few lines, and tables — rendered for a
//! terminal (wrapped to a width, colour optional), Markdown, CSV (one table) or a
//! self-contained HTML page. Every text is escaped for its medium. The one HTML page
//! ([`page`], one stylesheet) and the one line wrapper ([`wrap`], [`wrap_indented`])
//! of every report live here.

use std::fmt::Write;

use crate::escape;
use crate::table::{Table, display_width, truncate_to_width};

/// A finished report: JSON from its `Serialize`, the other formats from its [`Doc`].
pub trait Document: serde::Serialize {
    /// The report laid out for a terminal `width` columns wide; `usize::MAX` for a page
    /// (Markdown, CSV, HTML), which has no width.
    fn doc(&self, width: usize) -> Doc;
}

/// One table with an optional title and notes under it.
#[derive(Clone, Debug, Default)]
pub struct Section {
    /// Heading.
    pub title: Option<String>,
    /// The table (`None`: a section of heading and notes only; a table without rows
    /// shows as `(no rows)`).
    pub table: Option<Table>,
    /// Lines after the table.
    pub notes: Vec<String>,
}

/// A chart of a report: an inline SVG (from [`crate::chart`]) with its title, and the
/// text Markdown shows instead (a sparkline or a few values; Markdown of one command has
/// no files beside it).
#[derive(Clone, Debug, Default)]
pub struct Figure {
    /// Caption (escaped when rendered).
    pub title: String,
    /// The SVG markup, written as is (the chart module escapes every text in it).
    pub svg: String,
    /// Plain text shown in Markdown in a fenced code block (so runs of spaces and
    /// sparkline characters survive); `None`: the figure is left out of Markdown.
    pub text: Option<String>,
}

impl Figure {
    /// A figure of `svg` captioned `title`, with Markdown text `text`.
    pub fn new(title: impl Into<String>, svg: String, text: Option<String>) -> Figure {
        Figure {
            title: title.into(),
            svg,
            text,
        }
    }
}

/// A rendered-to-be report.
#[derive(Clone, Debug, Default)]
pub struct Doc {
    /// The title.
    pub title: String,
    /// Lines under the title (what was read, which selection, headline figures).
    pub lines: Vec<String>,
    /// The tables.
    pub sections: Vec<Section>,
    /// Which section CSV output writes (CSV holds one table).
    pub csv_section: usize,
    /// A table written as CSV instead of a section (when no section holds everything).
    pub csv: Option<Table>,
    /// Markup placed after the lines in HTML only (an inline SVG chart). It is written
    /// as is: whoever builds it escapes every text in it.
    pub figure: Option<String>,
    /// Charts, shown after [`Doc::figure`] in HTML, and as text in Markdown.
    pub figures: Vec<Figure>,
}

impl Doc {
    /// Terminal text, lines wrapped to `width`, tables fitted to it.
    pub fn to_text(&self, width: usize, color: bool) -> String {
        let mut out = String::new();
        let bold = |s: &str| {
            if color {
                format!("\x1b[1m{s}\x1b[0m")
            } else {
                s.to_string()
            }
        };
        for l in wrap(&escape::terminal_str(&self.title, 400), width) {
            let _ = writeln!(out, "{}", bold(&l));
        }
        for line in &self.lines {
            for l in wrap(&escape::terminal_str(line, 2000), width) {
                let _ = writeln!(out, "{l}");
            }
        }
        for s in &self.sections {
            out.push('\n');
            if let Some(t) = &s.title {
                for l in wrap(&escape::terminal_str(t, 400), width) {
                    let _ = writeln!(out, "{}", bold(&l));
                }
            }
            match &s.table {
                Some(t) if t.is_empty() => out.push_str("(no rows)\n"),
                Some(t) => out.push_str(&t.to_terminal(width, color)),
                None => {}
            }
            for n in &s.notes {
                for l in wrap(&escape::terminal_str(n, 2000), width) {
                    let _ = writeln!(out, "{l}");
                }
            }
        }
        out
    }

    /// Markdown: a `##` title, lines as a list, `###` sections with GFM tables.
    pub fn to_markdown(&self) -> String {
        self.markdown_with(&[])
    }

    /// Markdown with `keys`, a one-row table of key figures, under the title.
    pub fn markdown_with(&self, keys: &[KeyFigure]) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "## {}\n", escape::markdown(&self.title));
        if !keys.is_empty() {
            out.push_str(&key_table(keys).to_markdown());
            out.push('\n');
        }
        for l in &self.lines {
            let _ = writeln!(out, "- {}", escape::markdown(l));
        }
        for f in &self.figures {
            if let Some(text) = &f.text {
                out.push('\n');
                let _ = writeln!(out, "**{}**\n", escape::markdown(&f.title));
                out.push_str(&fenced(text));
            }
        }
        for s in &self.sections {
            out.push('\n');
            if let Some(t) = &s.title {
                let _ = writeln!(out, "### {}\n", escape::markdown(t));
            }
            match &s.table {
                Some(t) if t.is_empty() => out.push_str("(no rows)\n"),
                Some(t) => out.push_str(&t.to_markdown()),
                None => {}
            }
            if !s.notes.is_empty() {
                out.push('\n');
                for n in &s.notes {
                    let _ = writeln!(out, "{}  ", escape::markdown(n));
                }
            }
        }
        out
    }

    /// CSV of the [`Doc::csv_section`] table.
    pub fn to_csv(&self) -> String {
        if let Some(t) = &self.csv {
            return t.to_csv();
        }
        self.sections
            .get(self.csv_section)
            .and_then(|s| s.table.as_ref())
            .map(Table::to_csv)
            .unwrap_or_default()
    }

    /// A self-contained HTML page (inline CSS, no scripts, no network resources).
    pub fn to_html(&self) -> String {
        self.html_with(&[])
    }

    /// The HTML page with `keys`, a strip of key figures, under the title.
    ///
    /// On a wide screen the charts and the sections are laid out on a grid of two
    /// columns (one when narrow or printed): each chart in one column (its `viewBox`
    /// scales it), a block whose table is too wide for half the page a whole row. A
    /// section with a title and no table is a heading: the sections after it, up to the
    /// next heading, are one block with it (a part of `report` with its tables); any
    /// other section is a block alone.
    pub fn html_with(&self, keys: &[KeyFigure]) -> String {
        let mut out = String::new();
        if !keys.is_empty() {
            out.push_str("<dl class=\"keys\">\n");
            for k in keys {
                let _ = write!(
                    out,
                    "<div><dt>{}</dt><dd>{}</dd>",
                    escape::html(&k.label),
                    escape::html(&k.value)
                );
                if let Some(n) = &k.note {
                    let _ = write!(out, "<dd class=\"note\">{}</dd>", escape::html(n));
                }
                out.push_str("</div>\n");
            }
            out.push_str("</dl>\n");
        }
        if !self.lines.is_empty() {
            out.push_str("<ul>\n");
            for l in &self.lines {
                let _ = writeln!(out, "<li>{}</li>", escape::html(l));
            }
            out.push_str("</ul>\n");
        }
        if let Some(f) = &self.figure {
            out.push_str(f);
            out.push('\n');
        }
        if !self.figures.is_empty() {
            out.push_str("<div class=\"grid\">\n");
            for f in &self.figures {
                let _ = writeln!(
                    out,
                    "<figure class=\"chart\"><figcaption>{}</figcaption>\n{}\n</figure>",
                    escape::html(&f.title),
                    f.svg
                );
            }
            out.push_str("</div>\n");
        }
        if !self.sections.is_empty() {
            out.push_str("<div class=\"grid\">\n");
            for block in blocks(&self.sections) {
                let wide = block
                    .iter()
                    .filter_map(|s| s.table.as_ref())
                    .any(|t| t.text_width() > HALF_PAGE_COLUMNS);
                out.push_str(if wide {
                    "<section class=\"wide\">\n"
                } else {
                    "<section>\n"
                });
                for s in block {
                    if let Some(t) = &s.title {
                        let _ = writeln!(out, "<h2>{}</h2>", escape::html(t));
                    }
                    match &s.table {
                        Some(t) if t.is_empty() => out.push_str("<p>(no rows)</p>\n"),
                        Some(t) => {
                            out.push_str("<div class=\"table\">\n");
                            out.push_str(&t.to_html());
                            out.push_str("</div>\n");
                        }
                        None => {}
                    }
                    for n in &s.notes {
                        let _ = writeln!(out, "<p>{}</p>", escape::html(n));
                    }
                }
                out.push_str("</section>\n");
            }
            out.push_str("</div>\n");
        }
        page(&self.title, &out)
    }
}

/// A table wider than this (in characters, [`Table::text_width`]) takes a whole row of
/// the page's grid.
const HALF_PAGE_COLUMNS: usize = 80;

/// Sections in blocks: a heading (a title, no table) and the sections after it up to
/// the next heading; a section before any heading alone.
fn blocks(sections: &[Section]) -> Vec<&[Section]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_heading = false;
    for (i, s) in sections.iter().enumerate() {
        let heading = s.title.is_some() && s.table.is_none();
        if i > start && (heading || !in_heading) {
            out.push(&sections[start..i]);
            start = i;
        }
        if heading {
            in_heading = true;
        }
    }
    if start < sections.len() {
        out.push(&sections[start..]);
    }
    out
}

/// One key figure of a page: a label (`requests`), its value (`1,234,567`) and a note
/// under it (`estimated`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyFigure {
    /// What it counts.
    pub label: String,
    /// The value as shown.
    pub value: String,
    /// A few words under it.
    pub note: Option<String>,
}

/// The key figures as a one-row table (Markdown), a note in brackets after its value.
fn key_table(keys: &[KeyFigure]) -> Table {
    let cols: Vec<(&str, crate::table::Align)> = keys
        .iter()
        .map(|k| (k.label.as_str(), crate::table::Align::Right))
        .collect();
    let mut t = Table::new(&cols);
    t.row(keys.iter().map(|k| match &k.note {
        Some(n) => format!("{} ({n})", k.value),
        None => k.value.clone(),
    }));
    t
}

/// `text` as a fenced code block: control characters escaped, the fence longer than any
/// run of backticks in it (so nothing can close it early), every line kept.
fn fenced(text: &str) -> String {
    let clean: Vec<String> = text
        .lines()
        .map(|l| escape::terminal_str(l, usize::MAX))
        .collect();
    let longest = clean
        .iter()
        .flat_map(|l| l.split(|c| c != '`'))
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let mut out = format!("{fence}text\n");
    for l in &clean {
        out.push_str(l);
        out.push('\n');
    }
    out.push_str(&fence);
    out.push('\n');
    out
}

/// The Content-Security-Policy of every HTML report: nothing may be fetched (a fetch
/// would be blocked and reported), inline styles and `data:` images only.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/// The stylesheet of every HTML report. On a screen at least 1100 px wide, `.grid`
/// lays charts and sections out in two columns (`.wide`: a whole row); narrow or
/// printed, one. Charts take their column's width (their `viewBox` keeps the shape).
/// Cells wrap anywhere, so a long value never pushes the number columns off the page.
const CSS: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1800px}\n\
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:1.6em}\n\
table{border-collapse:collapse;margin:1em 0}\n\
th,td{border:1px solid #ccc;padding:.25em .6em;font-variant-numeric:tabular-nums}\n\
td{overflow-wrap:anywhere;max-width:40em}\n\
th{background:#f3f3f3}\n\
div.table{max-width:100%;overflow-x:auto}\n\
figure.chart{margin:1.2em 0;break-inside:avoid;page-break-inside:avoid}\n\
figure.chart figcaption{font-weight:bold;margin-bottom:.3em}\n\
svg.chart{display:block;width:100%;height:auto}\n\
dl.keys{display:flex;flex-wrap:wrap;gap:.6em;margin:1em 0}\n\
dl.keys div{border:1px solid #ccc;border-radius:4px;padding:.4em .9em;min-width:9em}\n\
dl.keys dt{font-size:.85em;color:#555} dl.keys dd{margin:0;font-size:1.35em;font-weight:bold;font-variant-numeric:tabular-nums}\n\
dl.keys dd.note{font-size:.8em;font-weight:normal;color:#555}\n\
@media screen and (min-width:1100px){.grid{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));column-gap:2.5em;grid-auto-flow:row dense}.grid>.wide{grid-column:1/-1}}\n\
@media print{body{margin:0;max-width:none} a{color:inherit} div.table{overflow:visible}}\n\
.green{background:#d9f2d9} .yellow{background:#fff3c4} .orange{background:#ffd8a8} .red{background:#f8c4c4} .bold{font-weight:bold}\n";

/// A self-contained HTML page: `title` (escaped here) as its title and heading, then
/// `body`, markup written as is (escape every text in it).
pub fn page(title: &str, body: &str) -> String {
    let t = escape::html(title);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{t}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<h1>{t}</h1>\n{body}</body>\n</html>\n"
    )
}

/// Wraps a line at spaces so that no piece is wider than `width` characters (a word
/// longer than the width is cut). Continuation lines are indented by two spaces.
pub fn wrap(line: &str, width: usize) -> Vec<String> {
    wrap_with(line, width.max(20), "", "  ", true)
}

/// Wraps a line at spaces into lines of `indent` and at most `width` more columns;
/// a word longer than that stands alone on its line, uncut.
pub fn wrap_indented(line: &str, width: usize, indent: &str) -> Vec<String> {
    wrap_with(line, width + display_width(indent), indent, indent, false)
}

/// The one wrapper: lines of at most `width` display columns (CJK and emoji count two)
/// counting their indent, the first starting with `first`, the others with `rest`; an
/// over-long word is cut with `…` when `cut`.
fn wrap_with(line: &str, width: usize, first: &str, rest: &str, cut: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = first.to_string();
    let mut indent = display_width(first);
    let mut cur_len = indent;
    for word in line.split(' ') {
        let wl = display_width(word);
        if cur_len > indent && cur_len + 1 + wl > width {
            out.push(std::mem::replace(&mut cur, rest.to_string()));
            indent = display_width(rest);
            cur_len = indent;
        }
        if cur_len > indent {
            cur.push(' ');
            cur_len += 1;
        }
        if cut && cur_len + wl > width {
            cur.push_str(&truncate_to_width(word, width.saturating_sub(cur_len)));
            cur_len = width;
        } else {
            cur.push_str(word);
            cur_len += wl;
        }
    }
    if cur_len > indent || out.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Align;

    #[test]
    fn wraps_in_display_columns() {
        let w = wrap(
            "검색 요청이 급증했습니다 서버 용량을 초과 했습니다 다시 확인",
            20,
        );
        assert!(w.len() > 1, "{w:?}");
        assert!(w.iter().all(|l| display_width(l) <= 20), "{w:?}");
        let long = wrap("가나다라마바사아자차카타파하가나다라마바사", 20);
        assert!(long.iter().all(|l| display_width(l) <= 20), "{long:?}");
        assert!(long[0].ends_with('…'), "{long:?}");
    }

    #[test]
    fn wraps_and_escapes() {
        let w = wrap(
            "aaa bbb ccc ddd eee fff ggg hhh iii jjj kkk lll mmm nnn ooo ppp qqq rrr",
            20,
        );
        assert!(w.iter().all(|l| l.chars().count() <= 20), "{w:?}");
        assert_eq!(w.join(" ").split_whitespace().count(), 18);
        let long = wrap(&"x".repeat(50), 20);
        assert!(long.iter().all(|l| l.chars().count() <= 20), "{long:?}");
        let mut t = Table::new(&[("a", Align::Left)]);
        t.row(["<b>|x"]);
        let d = Doc {
            title: "T \x1b[2J".into(),
            lines: vec!["line <i>".into()],
            sections: vec![Section {
                title: Some("S".into()),
                table: Some(t),
                notes: vec!["n".into()],
            }],
            csv_section: 0,
            csv: None,
            figure: None,
            figures: vec![Figure::new(
                "F <b>",
                "<svg class=\"chart\"></svg>".into(),
                Some("```` x\n▁▂ █".into()),
            )],
        };
        assert!(!d.to_text(80, false).contains('\x1b'));
        assert!(d.to_html().contains("&lt;b&gt;"));
        assert!(d.to_markdown().contains("\\|x"));
        assert_eq!(d.to_csv(), "a\n<b>|x\n");
        let html = d.to_html();
        assert!(html.contains("<figure class=\"chart\"><figcaption>F &lt;b&gt;</figcaption>"));
        assert!(html.contains(CSP));
        let md = d.to_markdown();
        assert!(md.contains("\n`````text\n```` x\n▁▂ █\n`````\n"), "{md}");
    }

    fn section(title: Option<&str>, rows: usize, cols: usize) -> Section {
        Section {
            title: title.map(str::to_string),
            table: (cols > 0).then(|| {
                let heads: Vec<String> = (0..cols).map(|i| format!("column {i}")).collect();
                let spec: Vec<(&str, Align)> =
                    heads.iter().map(|h| (h.as_str(), Align::Right)).collect();
                let mut t = Table::new(&spec);
                for r in 0..rows {
                    t.row((0..cols).map(|c| (r * c).to_string()));
                }
                t
            }),
            notes: Vec::new(),
        }
    }

    #[test]
    fn a_page_has_key_figures_and_a_grid_of_blocks() {
        let d = Doc {
            title: "Incident report: 2025-03-14".into(),
            lines: vec!["finding".into()],
            sections: vec![
                section(Some("alone"), 2, 2),
                section(Some("Heavy requests per 1d"), 0, 0),
                section(None, 3, 3),
                section(Some("Windows"), 3, 12),
                section(Some("Top paths"), 0, 0),
                section(None, 1, 2),
            ],
            figures: vec![Figure::new("F", "<svg class=\"chart\"></svg>".into(), None)],
            ..Doc::default()
        };
        let keys = [
            KeyFigure {
                label: "requests".into(),
                value: "111,000".into(),
                note: None,
            },
            KeyFigure {
                label: "unique <visitors>".into(),
                value: "≈15,675".into(),
                note: Some("distinct clients, estimated".into()),
            },
        ];
        let html = d.html_with(&keys);
        assert!(html.contains(
            "<h1>Incident report: 2025-03-14</h1>\n<dl class=\"keys\">\n<div><dt>requests</dt><dd>111,000</dd></div>\n<div><dt>unique &lt;visitors&gt;</dt><dd>≈15,675</dd><dd class=\"note\">distinct clients, estimated</dd></div>\n</dl>\n<ul>"
        ), "{html}");
        // Blocks: a section alone; a heading with the sections up to the next heading
        // (the 12-column table makes its block a whole row); the last heading's.
        let sections: Vec<&str> = html.split("<section").skip(1).collect();
        assert_eq!(sections.len(), 3, "{html}");
        assert!(sections[0].starts_with(">\n<h2>alone</h2>"));
        assert!(sections[1].starts_with(" class=\"wide\">\n<h2>Heavy requests per 1d</h2>"));
        assert!(sections[1].contains("<h2>Windows</h2>"));
        assert!(sections[2].starts_with(">\n<h2>Top paths</h2>"));
        assert_eq!(html.matches("<div class=\"grid\">").count(), 2);
        assert!(html.contains("@media screen and (min-width:1100px){.grid{display:grid"));
        assert!(html.contains(CSP));
        // Markdown: the key figures as a one-row table under the title.
        let md = d.markdown_with(&keys);
        assert!(md.starts_with(
            "## Incident report: 2025-03-14\n\n| requests | unique \\<visitors\\> |\n|---:|---:|\n| 111,000 | ≈15,675 (distinct clients, estimated) |\n\n- finding\n"
        ), "{md}");
        assert_eq!(d.to_markdown(), d.markdown_with(&[]));
        assert!(!d.to_html().contains("class=\"keys\""));
    }
}
