//! The shape ARCHITECTURE.md promises, checked on the sources: no import circle between
//! modules of either crate, no module reaching upward (the engine, the reports and the
//! dataset never import the command line; the dataset never imports the engine), no
//! threads or channels under `src/cli/`, and a `//!` line on every file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Module path (`cli::top`, `replay::zone`) → its file, for the crate rooted at `src`.
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    let mut m = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(
            parts.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            parts.pop();
        }
        m.insert(parts.join("::"), f);
    }
    m
}

/// The code of a file without comments and without its `#[cfg(test)] mod tests`.
fn code_of(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap();
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => &text[..],
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every module path a module's code names through `crate::`, `super::` or `self::`,
/// resolved to the longest known module; parents and children are left out (a module
/// and its own children are one unit).
fn edges(mods: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, p) in mods {
        let me: Vec<&str> = if m.is_empty() {
            Vec::new()
        } else {
            m.split("::").collect()
        };
        let code = code_of(p);
        let bytes = code.as_bytes();
        let mut targets = BTreeSet::new();
        for start in ["crate::", "super::", "self::"] {
            for (i, _) in code.match_indices(start) {
                if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')
                    || (i > 1 && &code[i - 2..i] == "::")
                {
                    continue;
                }
                let path: String = code[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
                let mut cur: Vec<&str> = if segs[0] == "crate" {
                    Vec::new()
                } else {
                    me.clone()
                };
                let mut rest = &segs[1..];
                if segs[0] == "super" {
                    cur.pop();
                }
                while rest.first() == Some(&"super") {
                    cur.pop();
                    rest = &rest[1..];
                }
                let full: Vec<&str> = cur.iter().copied().chain(rest.iter().copied()).collect();
                let target = (1..=full.len())
                    .rev()
                    .map(|n| full[..n].join("::"))
                    .find(|c| mods.contains_key(c));
                if let Some(t) = target {
                    let related = t == *m
                        || m.starts_with(&format!("{t}::"))
                        || t.starts_with(&format!("{m}::"));
                    if !related && !m.is_empty() {
                        targets.insert(t);
                    }
                }
            }
        }
        out.insert(m.clone(), targets);
    }
    out
}

/// The import circles: strongly connected components of more than one module.
fn circles(e: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Kosaraju, iteratively: a crate has at most a few hundred modules.
    let nodes: Vec<&String> = e.keys().collect();
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    for &n in &nodes {
        if seen.contains(n) {
            continue;
        }
        let mut stack = vec![(n.clone(), false)];
        while let Some((v, done)) = stack.pop() {
            if done {
                order.push(v);
                continue;
            }
            if !seen.insert(v.clone()) {
                continue;
            }
            stack.push((v.clone(), true));
            for w in e.get(&v).into_iter().flatten() {
                if !seen.contains(w) {
                    stack.push((w.clone(), false));
                }
            }
        }
    }
    let mut rev: BTreeMap<&String, Vec<&String>> = BTreeMap::new();
    for (v, ws) in e {
        for w in ws {
            rev.entry(w).or_default().push(v);
        }
    }
    let mut assigned = BTreeSet::new();
    let mut out = Vec::new();
    for v in order.iter().rev() {
        if assigned.contains(v) {
            continue;
        }
        let mut comp = Vec::new();
        let mut stack = vec![v];
        while let Some(x) = stack.pop() {
            if !assigned.insert(x.clone()) {
                continue;
            }
            comp.push(x.clone());
            for w in rev.get(x).into_iter().flatten() {
                if !assigned.contains(*w) {
                    stack.push(w);
                }
            }
        }
        if comp.len() > 1 {
            comp.sort();
            out.push(comp);
        }
    }
    out
}

fn crate_graph(src: &str) -> BTreeMap<String, BTreeSet<String>> {
    edges(&modules(&Path::new(ROOT).join(src)))
}

#[test]
fn no_import_circle_in_either_crate() {
    for src in ["src", "crates/core/src"] {
        let found = circles(&crate_graph(src));
        assert!(found.is_empty(), "import circles in {src}: {found:?}");
    }
}

#[test]
fn the_circle_check_sees_a_circle() {
    let mut e: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    e.insert("a".into(), ["b".to_string()].into());
    e.insert("b".into(), ["c".to_string()].into());
    e.insert("c".into(), ["a".to_string()].into());
    e.insert("d".into(), ["a".to_string()].into());
    assert_eq!(circles(&e), vec![vec!["a", "b", "c"]]);
    // And it sees the real edges: the commands use the engine.
    let g = crate_graph("src");
    assert!(
        g["cli::top"].contains("engine::report"),
        "{:?}",
        g["cli::top"]
    );
}

#[test]
fn no_module_reaches_upward() {
    let g = crate_graph("src");
    // Lower layers first: each may use the ones before it, never the ones after.
    let layers = ["store", "engine", "reports", "render", "cli"];
    for (m, targets) in &g {
        let Some(lm) = layers
            .iter()
            .position(|l| m == l || m.starts_with(&format!("{l}::")))
        else {
            continue;
        };
        for t in targets {
            let top = t.split("::").next().unwrap();
            if let Some(lt) = layers.iter().position(|l| *l == top) {
                assert!(lt <= lm, "{m} imports {t}: a lower layer reaching upward");
            }
        }
    }
}

#[test]
fn no_threads_or_channels_under_cli() {
    for (m, p) in modules(&Path::new(ROOT).join("src")) {
        if !m.starts_with("cli") {
            continue;
        }
        let code = code_of(&p);
        // Starting threads or passing between them; `memlimit`'s allocator parks a thread
        // that is over the limit while another one exits, which starts none.
        for word in [
            "thread::spawn",
            "thread::scope",
            "thread::Builder",
            "spawn_scoped",
            "crossbeam",
            "mpsc",
        ] {
            assert!(
                !code.contains(word),
                "{m} uses {word}: threads and channels belong in the engine"
            );
        }
    }
}

#[test]
fn every_file_says_what_it_is() {
    for src in ["src", "crates/core/src", "tests/it", "crates/core/tests/it"] {
        for (m, p) in modules(&Path::new(ROOT).join(src)) {
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(
                text.trim_start().starts_with("//!"),
                "{src}/{m} ({}) has no //! line",
                p.display()
            );
        }
    }
}
