//! Static files: a path whose extension names an image, stylesheet, script, font,
//! media file, archive or data file. Everything else is *dynamic* — one meaning for
//! availability's probes, the default heavy class and the static/dynamic breakdown.

/// Extensions of static files (compared case-insensitively).
pub const STATIC_EXTENSIONS: [&str; 44] = [
    "png", "jpg", "jpeg", "gif", "webp", "avif", "svg", "ico", "bmp", "tif", "tiff", "css", "js",
    "mjs", "map", "woff", "woff2", "ttf", "otf", "eot", "mp4", "webm", "ogg", "ogv", "mp3", "wav",
    "flac", "m4a", "pdf", "zip", "gz", "tgz", "bz2", "xz", "7z", "rar", "txt", "xml", "json",
    "wasm", "apk", "dmg", "exe", "iso",
];

/// Whether a request path is for a static file: its last segment has a name before
/// its last `.` and one of [`STATIC_EXTENSIONS`] after it.
pub fn is_static_path(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or(path);
    match last.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && ext.len() <= 5 => STATIC_EXTENSIONS
            .iter()
            .any(|e| e.eq_ignore_ascii_case(ext)),
        _ => false,
    }
}

/// [`is_static_path`] as a regex (for the rules and the SQL twins): `[^/]\.(?i:png|…)$`.
pub fn static_path_regex() -> String {
    format!(r"[^/]\.(?i:{})$", STATIC_EXTENSIONS.join("|"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test by extension agrees with its regex (which the SQL twins use).
    #[test]
    fn by_extension_and_by_regex_agree() {
        let rx = regex::Regex::new(&static_path_regex()).unwrap();
        for p in [
            "/a.gif",
            "/a.GIF",
            "/a.gif/",
            "/gif",
            "/a.b/c",
            "/x.woff2",
            "/x.woff3",
            "/.js",
            "/index.html",
            "/a.php",
            "",
            "/a.tar.gz",
            "/dir/",
            "/ä.png",
            "/x.pdf?",
            "a.css",
            "/a..css",
        ] {
            assert_eq!(is_static_path(p), rx.is_match(p), "{p:?}");
        }
        assert!(is_static_path("/skins/a.CSS"));
        assert!(!is_static_path("/wiki/Main_Page"));
        assert!(!is_static_path("/.png"));
    }
}
