//! The module rules of the engine (docs/ARCHITECTURE.md), checked on the
//! sources: every `crate::`, `super::` and `self::` path and every path
//! into `benchfs_ucx`, `io_uring` or `pyo3` is resolved to the part of the
//! engine it names, and a part may only name what its rule allows.
//!
//! * `storage` and the transport (`rpc/transport.rs` and the UCX crate)
//!   know nothing of each other or of `rpc`;
//! * `placement`, `membership` and `namespace` are plain logic (the error
//!   type only);
//! * `sys`, `error`, `latency`, `code_enum` and `trace` sit below
//!   everything else;
//! * only the PyO3 boundary (`python/`) knows Python, and nothing uses it;
//! * only `storage` knows io_uring;
//! * the modules of each folder of the engine (`rpc/server`'s parts, say)
//!   import each other without a cycle, and so do the UCX crate's.
//!
//! `make lint` runs this test; it reads files, so it fails on a violation
//! whatever the build configuration.

mod source;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use source::{Source, WATCHED_CRATES, module_of, sources, uses_of};

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
        "placement" | "membership" | "namespace" => (
            Only(&["error"]),
            "placement, membership and the namespace are plain logic",
        ),
        "sys" | "error" | "latency" | "code_enum" => {
            (Only(&[]), "a leaf of the engine uses nothing of it")
        }
        "trace" => (
            Only(&["error", "sys", "code_enum"]),
            "trace sits below storage and rpc",
        ),
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

/// The modules of each folder of the engine, as a graph: an edge from a
/// child module to a sibling it names (`super::slots::Meta` in
/// `rpc/server/replies.rs`: `replies -> slots` in `rpc::server`). A folder's
/// own `mod.rs` declaring and re-exporting its children adds no edge.
fn folder_graphs(sources: &[Source]) -> BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> {
    let aliases = root_aliases(sources);
    let modules: Vec<Vec<String>> = sources
        .iter()
        .map(|s| module_of(Path::new(&s.file)))
        .collect();
    let is_child = |folder: &[String], name: &str| {
        modules.iter().any(|m| {
            m.len() > folder.len() && m[..folder.len()] == *folder && m[folder.len()] == name
        })
    };
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (s, me) in sources.iter().zip(&modules) {
        for u in &s.uses {
            let path = canonical(&u.path, &aliases);
            let Some(("crate", target)) = path.split_first().map(|(c, t)| (c.as_str(), t)) else {
                continue;
            };
            let k = me.iter().zip(target).take_while(|(a, b)| a == b).count();
            if k < me.len() && k < target.len() && is_child(&me[..k], &target[k]) {
                graphs
                    .entry(me[..k].to_vec())
                    .or_default()
                    .entry(me[k].clone())
                    .or_default()
                    .insert(target[k].clone());
            }
        }
    }
    graphs
}

/// The folders whose modules import each other in a cycle, one line each.
fn folder_cycles(sources: &[Source]) -> Vec<String> {
    let mut out = Vec::new();
    for (key, graph) in folder_graphs(sources) {
        if let Some(cycle) = find_cycle(&graph) {
            out.push(format!(
                "the modules of {} import each other in a cycle: {}",
                if key.is_empty() {
                    "src".to_owned()
                } else {
                    format!("src/{}", key.join("/"))
                },
                cycle.join(" -> ")
            ));
        }
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
fn no_folder_of_the_engine_imports_in_a_cycle() {
    let sources = sources(&crate_root());
    let v = folder_cycles(&sources);
    assert!(v.is_empty(), "module cycles:\n{}", v.join("\n"));
    // The check sees the folders it is about.
    let graphs = folder_graphs(&sources);
    let server = ["rpc", "server"].map(String::from).to_vec();
    assert!(
        graphs.get(&server).is_some_and(|g| g.len() > 8),
        "the server's modules were not found: {:?}",
        graphs.keys().collect::<Vec<_>>()
    );
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

    // Two siblings naming each other are a cycle of their folder; the
    // folder's own mod.rs re-exporting them is not.
    let folder = |file: &str, module: &[&str], text: &str| Source {
        file: file.into(),
        uses: uses_of(
            text,
            &module.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        ),
    };
    let files = [
        folder(
            "src/rpc/server/mod.rs",
            &["rpc", "server"],
            "mod a; mod b; pub use a::A; pub use b::B;",
        ),
        folder(
            "src/rpc/server/a.rs",
            &["rpc", "server", "a"],
            "use super::b::B;",
        ),
        folder(
            "src/rpc/server/b.rs",
            &["rpc", "server", "b"],
            "use super::a::A;",
        ),
    ];
    let v = folder_cycles(&files);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].contains("src/rpc/server") && v[0].contains("a -> b -> a"),
        "{}",
        v[0]
    );
    assert!(folder_cycles(&files[..2]).is_empty());

    let mut graph = BTreeMap::new();
    graph.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    graph.insert("b".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".to_owned(), "b".to_owned(), "a".to_owned()])
    );
}
