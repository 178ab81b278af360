//! The module rules of the engine (docs/ARCHITECTURE.md), checked on the
//! sources: every `crate::`, `super::` and `self::` path and every path
//! into `benchfs_ucx`, `io_uring` or `pyo3` is resolved to the part of the
//! engine it names, and a part may only name what its rule allows.
//!
//! * `storage` and the transport (`rpc/transport.rs` and the UCX crate)
//!   know nothing of each other or of `rpc`;
//! * `placement` and `membership` are plain logic (the error type only);
//! * `sys`, `error`, `latency` and `trace` sit below everything else;
//! * only the PyO3 boundary (`python/`) knows Python, and nothing uses it;
//! * only `storage` knows io_uring;
//! * the UCX crate's modules import each other without a cycle.
//!
//! `make lint` runs this test; it reads files, so it fails on a violation
//! whatever the build configuration.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A path found in a source file.
#[derive(Debug, Clone)]
struct Use {
    /// Line (1-based).
    line: usize,
    /// Resolved segments: `["crate", "storage", "layout"]`, or an external
    /// crate's name first: `["pyo3", "prelude"]`.
    path: Vec<String>,
}

/// One source file and the paths it names.
#[derive(Debug)]
struct Source {
    /// Relative to the crate root, e.g. `src/storage/store/mod.rs`.
    file: String,
    uses: Vec<Use>,
}

const WATCHED_CRATES: [&str; 4] = ["benchfs_ucx", "io_uring", "pyo3", "benchfs_native"];

// ------------------------------------------------------------- tokenizer

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

/// Tokens of `text` with their line numbers; comments, string, char and
/// byte literals dropped.
fn tokens(text: &str) -> Vec<(Tok, usize)> {
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

// ----------------------------------------------------------------- paths

/// The paths starting at `toks[i]` (several for a `{..}` group), as
/// written, and the index after them.
fn read_path(toks: &[(Tok, usize)], mut i: usize) -> (Vec<Vec<String>>, usize) {
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
fn module_of(rel: &Path) -> Vec<String> {
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
fn resolve(module: &[String], children: &BTreeSet<String>, path: &[String]) -> Option<Vec<String>> {
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
fn uses_of(text: &str, module: &[String]) -> Vec<Use> {
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

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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

fn sources(crate_root: &Path) -> Vec<Source> {
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

// ----------------------------------------------------------------- rules

/// The part of the engine a module path (`[storage, store]`) or a resolved
/// path (`[crate, rpc, transport, Transport]`) belongs to.
fn part(segments: &[String]) -> String {
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    match segs.as_slice() {
        ["crate", rest @ ..] => part(&rest.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
        ["benchfs_ucx", ..] => "ucx".into(),
        [ext, ..] if WATCHED_CRATES.contains(ext) => (*ext).into(),
        ["rpc", "transport", ..] => "transport".into(),
        [first, ..] => (*first).into(),
        [] => "root".into(),
    }
}

/// What a part may not use, and why; `None`: no rule.
fn rule(of: &str) -> Option<(Allowed, &'static str)> {
    use Allowed::{Except, Only};
    Some(match of {
        "storage" => (
            Except(&[
                "rpc",
                "transport",
                "ucx",
                "daemon",
                "bench",
                "membership",
                "placement",
            ]),
            "storage knows nothing of the transport or of rpc",
        ),
        "transport" => (
            Except(&["storage", "rpc", "daemon", "bench", "io_uring"]),
            "the transport knows nothing of storage or of rpc",
        ),
        "placement" | "membership" => {
            (Only(&["error"]), "placement and membership are plain logic")
        }
        "sys" | "error" | "latency" => (Only(&[]), "a leaf of the engine uses nothing of it"),
        "trace" => (Only(&["error", "sys"]), "trace sits below storage and rpc"),
        _ => return None,
    })
}

#[derive(Debug, Clone, Copy)]
enum Allowed {
    Only(&'static [&'static str]),
    Except(&'static [&'static str]),
}

/// The crate root's re-exports (`pub use storage::ChunkStore` in lib.rs):
/// name to the path it stands for.
fn root_aliases(sources: &[Source]) -> BTreeMap<String, Vec<String>> {
    sources
        .iter()
        .filter(|s| s.file == "src/lib.rs")
        .flat_map(|s| &s.uses)
        .filter(|u| u.path.len() > 2 && u.path[0] == "crate")
        .filter_map(|u| Some((u.path.last()?.clone(), u.path.clone())))
        .collect()
}

/// `path` with a root re-export (`crate::ChunkStore`) replaced by what it
/// stands for.
fn canonical(path: &[String], aliases: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    match (path.first().map(String::as_str), path.get(1)) {
        (Some("crate"), Some(name)) if aliases.contains_key(name) => {
            let mut out = aliases[name].clone();
            out.extend(path[2..].iter().cloned());
            out
        }
        _ => path.to_vec(),
    }
}

/// Every broken rule of the engine's sources, one line each.
fn violations(sources: &[Source]) -> Vec<String> {
    let aliases = root_aliases(sources);
    let mut out = Vec::new();
    for s in sources {
        let rel = Path::new(&s.file);
        let me = part(&module_of(rel));
        for u in &s.uses {
            let path = canonical(&u.path, &aliases);
            let target = part(&path);
            let shown = path.join("::");
            let fail = |why: &str| format!("{}:{}: {me} uses {shown}: {why}", s.file, u.line);
            if target == me || target == "root" {
                continue;
            }
            if target == "pyo3" && me != "python" {
                out.push(fail("only the PyO3 boundary (python/) knows Python"));
                continue;
            }
            if target == "python" {
                out.push(fail("nothing uses the PyO3 boundary"));
                continue;
            }
            if target == "io_uring" && me != "storage" {
                out.push(fail("only storage knows io_uring"));
                continue;
            }
            if let Some((allowed, why)) = rule(&me) {
                let ok = match allowed {
                    Allowed::Only(list) => list.contains(&target.as_str()),
                    Allowed::Except(list) => !list.contains(&target.as_str()),
                };
                if !ok {
                    out.push(fail(why));
                }
            }
        }
    }
    out
}

/// Rules of the UCX crate: it names no other crate of the engine, and its
/// modules import each other without a cycle.
fn ucx_violations(sources: &[Source]) -> Vec<String> {
    let aliases = root_aliases(sources);
    let mut out = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for s in sources {
        let me = module_of(Path::new(&s.file));
        let me = me.first().cloned().unwrap_or_else(|| "lib".into());
        graph.entry(me.clone()).or_default();
        for u in &s.uses {
            let path = canonical(&u.path, &aliases);
            match path.first().map(String::as_str) {
                Some("crate") => {
                    if let Some(m) = path.get(1)
                        && *m != me
                        && me != "lib"
                    {
                        graph.entry(me.clone()).or_default().insert(m.clone());
                    }
                }
                Some(other) => out.push(format!(
                    "{}:{}: the UCX crate uses {other}: it knows nothing of storage, rpc or Python",
                    s.file, u.line
                )),
                None => {}
            }
        }
    }
    if let Some(cycle) = find_cycle(&graph) {
        out.push(format!(
            "the UCX crate's modules import each other in a cycle: {}",
            cycle.join(" -> ")
        ));
    }
    out
}

/// A cycle of `graph` (first node repeated at the end), if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|s| s == n) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(n.to_owned());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n.to_owned());
        for next in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(next, graph, done, stack) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    for n in graph.keys() {
        if let Some(c) = visit(n, graph, &mut done, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

/// The UCX crate's `[dependencies]` section names only libc.
fn ucx_dependencies(manifest: &str) -> Vec<String> {
    let mut section = "";
    let mut deps = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[dependencies]"
            && let Some((name, _)) = line.split_once('=')
        {
            deps.push(name.trim().to_owned());
        }
    }
    deps
}

// ----------------------------------------------------------------- tests

fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_engine_keeps_its_module_rules() {
    let sources = sources(&crate_root());
    assert!(
        sources.len() > 50,
        "found only {} source files",
        sources.len()
    );
    let v = violations(&sources);
    assert!(v.is_empty(), "module rules broken:\n{}", v.join("\n"));
}

#[test]
fn the_ucx_crate_keeps_its_module_rules() {
    let root = crate_root().join("ucx");
    let sources = sources(&root);
    assert!(sources.len() > 5, "found only {} files", sources.len());
    let v = ucx_violations(&sources);
    assert!(v.is_empty(), "UCX crate rules broken:\n{}", v.join("\n"));
    let manifest = fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    assert_eq!(ucx_dependencies(&manifest), ["libc"]);
}

/// The check itself: it sees through groups, `super`, inline modules,
/// comments and strings, and it flags what breaks a rule.
#[test]
fn the_check_finds_violations() {
    let src = r#"
        //! use crate::rpc::wire; (a comment)
        use super::{layout, buffer::BufferPool};
        use crate::{error::Error, rpc::wire::Op};
        const S: &str = "crate::rpc::Client";
        fn f<'a>(c: char) -> bool { c == '"' || crate::python::x() }
        mod tests {
            use super::super::driver;
            use pyo3::prelude::*;
        }
    "#;
    let module = vec!["storage".to_owned(), "store".to_owned()];
    let found: Vec<String> = uses_of(src, &module)
        .iter()
        .map(|u| u.path.join("::"))
        .collect();
    assert_eq!(
        found,
        [
            "crate::storage::layout",
            "crate::storage::buffer::BufferPool",
            "crate::error::Error",
            "crate::rpc::wire::Op",
            "crate::python::x",
            "crate::storage::driver",
            "pyo3::prelude",
        ]
    );
    let v = violations(&[Source {
        file: "src/storage/store/mod.rs".into(),
        uses: uses_of(src, &module),
    }]);
    assert_eq!(v.len(), 3, "{v:#?}");
    assert!(
        v[0].contains("storage uses crate::rpc::wire::Op"),
        "{}",
        v[0]
    );
    assert!(v[1].contains("nothing uses the PyO3 boundary"), "{}", v[1]);
    assert!(v[2].contains("only the PyO3 boundary"), "{}", v[2]);

    let plain = uses_of("use crate::sys::EventFd;", &["placement".to_owned()]);
    let v = violations(&[Source {
        file: "src/placement.rs".into(),
        uses: plain,
    }]);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(v[0].contains("plain logic"), "{}", v[0]);

    // A root re-export is followed to what it stands for.
    let lib = Source {
        file: "src/lib.rs".into(),
        uses: uses_of(
            "pub mod storage;\npub use storage::{ChunkStore, StoreOptions};",
            &[],
        ),
    };
    let transport = Source {
        file: "src/rpc/transport.rs".into(),
        uses: uses_of(
            "fn f(s: &crate::ChunkStore) {}",
            &["rpc".into(), "transport".into()],
        ),
    };
    let v = violations(&[lib, transport]);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].contains("transport uses crate::storage::ChunkStore"),
        "{}",
        v[0]
    );

    let mut graph = BTreeMap::new();
    graph.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    graph.insert("b".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".to_owned(), "b".to_owned(), "a".to_owned()])
    );
}
