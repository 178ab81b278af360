//! Reading Rust sources the way the module rules need: tokens without
//! comments and literals, every path a file names (through `use` groups,
//! `super`, `self`, inline modules and child modules), resolved to
//! `crate::...` or an external crate.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// A path found in a source file.
#[derive(Debug, Clone)]
pub struct Use {
    /// Line (1-based).
    pub line: usize,
    /// Resolved segments: `["crate", "storage", "layout"]`, or an external
    /// crate's name first: `["pyo3", "prelude"]`.
    pub path: Vec<String>,
}

/// One source file and the paths it names.
#[derive(Debug)]
pub struct Source {
    /// Relative to the crate root, e.g. `src/storage/store/mod.rs`.
    pub file: String,
    pub uses: Vec<Use>,
}

pub const WATCHED_CRATES: [&str; 4] = ["benchfs_ucx", "io_uring", "pyo3", "benchfs_native"];

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

/// Tokens of `text` with their line numbers; comments, string, char and
/// byte literals dropped.
pub fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == 'r' && (at(i + 1) == '"' || (at(i + 1) == '#' && at(i + 2) == '"'))
            || (ch == 'b' || ch == 'c') && at(i + 1) == 'r' && matches!(at(i + 2), '"' | '#')
        {
            // Raw string: r"..", r#".."#, br"..", cr#".."#.
            while c[i] != 'r' {
                i += 1;
            }
            i += 1;
            let mut hashes = 0;
            while at(i) == '#' {
                hashes += 1;
                i += 1;
            }
            i += 1;
            loop {
                if i >= c.len() {
                    break;
                }
                if c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                    i += 1 + hashes;
                    break;
                }
                if c[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
        } else if ch == '"' || (matches!(ch, 'b' | 'c') && at(i + 1) == '"') {
            if ch != '"' {
                i += 1;
            }
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                if at(i) == '\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
        } else if ch == '\'' || (ch == 'b' && at(i + 1) == '\'') {
            // A char literal ('x', '\n', b'x'), or a lifetime ('a).
            let q = if ch == 'b' { i + 1 } else { i };
            if at(q + 1) == '\\' {
                i = q + 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(q + 2) == '\'' {
                i = q + 3;
            } else {
                i = q + 1;
            }
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(c[start..i].iter().collect()), line));
        } else if ch == ':' && at(i + 1) == ':' {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// The paths starting at `toks[i]` (several for a `{..}` group), as
/// written, and the index after them.
pub fn read_path(toks: &[(Tok, usize)], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        match toks.get(i).map(|t| &t.0) {
            Some(Tok::Ident(s)) => {
                prefix.push(s.clone());
                i += 1;
            }
            Some(Tok::Punct('{')) => {
                let mut paths = Vec::new();
                i += 1;
                while let Some((t, _)) = toks.get(i) {
                    match t {
                        Tok::Punct('}') => {
                            i += 1;
                            break;
                        }
                        Tok::Punct(',') => i += 1,
                        Tok::Ident(_) | Tok::Punct('{') => {
                            let (inner, next) = read_path(toks, i);
                            for p in inner {
                                let mut full = prefix.clone();
                                full.extend(p);
                                paths.push(full);
                            }
                            // Skip `as name` and anything else up to `,`/`}`.
                            i = next;
                            while let Some((t, _)) = toks.get(i) {
                                if matches!(t, Tok::Punct(',') | Tok::Punct('}')) {
                                    break;
                                }
                                i += 1;
                            }
                        }
                        _ => i += 1,
                    }
                }
                return (paths, i);
            }
            _ => return (vec![prefix], i),
        }
        if toks.get(i).map(|t| &t.0) == Some(&Tok::PathSep) {
            i += 1;
        } else {
            return (vec![prefix], i);
        }
    }
}

/// The module path of a file under `src/`: `src/lib.rs` is `[]`,
/// `src/storage/store/mod.rs` is `[storage, store]`.
pub fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .skip(1)
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if stem != "mod" && stem != "lib" {
            parts.push(stem.to_owned());
        }
    }
    parts
}

/// Resolves `path` (as written in module `module`, whose child modules are
/// `children`) to `crate::...` or an external crate's path; `None` for
/// paths this check does not follow.
pub fn resolve(
    module: &[String],
    children: &BTreeSet<String>,
    path: &[String],
) -> Option<Vec<String>> {
    let first = path.first()?.as_str();
    let mut base: Vec<String> = match first {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => module.to_vec(),
        name if WATCHED_CRATES.contains(&name) => return Some(path.to_vec()),
        // `use wire::Op` in the module that declares `mod wire`.
        name if children.contains(name) => {
            let mut out = vec!["crate".to_owned()];
            out.extend(module.iter().cloned());
            out.extend(path.iter().cloned());
            return Some(out);
        }
        _ => return None,
    };
    let mut rest = &path[1..];
    if first == "super" {
        base.pop();
        while rest.first().map(String::as_str) == Some("super") {
            base.pop();
            rest = &rest[1..];
        }
    }
    let mut out = vec!["crate".to_owned()];
    out.extend(base);
    out.extend(rest.iter().cloned());
    Some(out)
}

/// Every watched path of one file, resolved (inline `mod name { .. }`
/// blocks, such as tests, shift `self` and `super`).
pub fn uses_of(text: &str, module: &[String]) -> Vec<Use> {
    let toks = tokens(text);
    // Modules declared in this file (`mod x;`, `mod tests { .. }`).
    let children: BTreeSet<String> = toks
        .windows(2)
        .filter_map(|w| match (&w[0].0, &w[1].0) {
            (Tok::Ident(m), Tok::Ident(name)) if m == "mod" => Some(name.clone()),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Punct('{') => {
                depth += 1;
                i += 1;
            }
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            Tok::Ident(kw)
                if kw == "mod"
                    && matches!(toks.get(i + 2).map(|t| &t.0), Some(Tok::Punct('{'))) =>
            {
                if let Some((Tok::Ident(name), _)) = toks.get(i + 1) {
                    inline.push((name.clone(), depth + 1));
                }
                i += 2;
            }
            Tok::Ident(_) => {
                let starts_path = i == 0 || toks[i - 1].0 != Tok::PathSep;
                let followed = toks.get(i + 1).map(|t| &t.0) == Some(&Tok::PathSep);
                if !(starts_path && followed) {
                    i += 1;
                    continue;
                }
                let line = toks[i].1;
                let (paths, next) = read_path(&toks, i);
                let here: Vec<String> = module
                    .iter()
                    .cloned()
                    .chain(inline.iter().map(|(n, _)| n.clone()))
                    .collect();
                for p in paths {
                    if let Some(path) = resolve(&here, &children, &p) {
                        out.push(Use { line, path });
                    }
                }
                i = next.max(i + 1);
            }
            _ => i += 1,
        }
    }
    out
}

pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

pub fn sources(crate_root: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    rust_files(&crate_root.join("src"), &mut files);
    files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(crate_root).unwrap_or(f);
            let text = fs::read_to_string(f).unwrap_or_default();
            Source {
                file: rel.display().to_string(),
                uses: uses_of(&text, &module_of(rel)),
            }
        })
        .collect()
}
