//! The inode table: FUSE node ids to engine paths and back, with the
//! kernel's lookup counts (a node is dropped when the kernel forgets it).
//!
//! A node id is the engine's inode number when the engine reports one,
//! else one this table hands out; the root is always [`ROOT`] and the
//! path "". A file with several names (hard links) is one node with
//! several paths, any of which serves it.

use std::collections::HashMap;
use std::ffi::OsStr;

/// The root's node id (FUSE's `FUSE_ROOT_ID`).
pub const ROOT: u64 = 1;

#[derive(Debug)]
struct Node {
    /// Its paths now, the first the one used; none once unlinked or
    /// replaced by a rename. More than one for a file with several names.
    paths: Vec<String>,
    /// Lookups the kernel has not forgotten yet.
    lookups: u64,
}

impl Node {
    fn drop_path(&mut self, path: &str) {
        self.paths.retain(|p| p != path);
    }
}

/// Node ids and paths.
#[derive(Debug)]
pub struct Inodes {
    nodes: HashMap<u64, Node>,
    by_path: HashMap<String, u64>,
    next: u64,
}

impl Default for Inodes {
    fn default() -> Self {
        Self::new()
    }
}

/// `name` under `parent` ("" is the root).
pub fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}/{name}")
    }
}

impl Inodes {
    /// A table holding only the root.
    pub fn new() -> Inodes {
        let mut nodes = HashMap::new();
        nodes.insert(
            ROOT,
            Node {
                paths: vec![String::new()],
                lookups: 1,
            },
        );
        let mut by_path = HashMap::new();
        by_path.insert(String::new(), ROOT);
        Inodes {
            nodes,
            by_path,
            next: 1 << 62,
        }
    }

    /// The path of node `ino`; `None` if unknown or no longer linked.
    pub fn path(&self, ino: u64) -> Option<String> {
        self.nodes.get(&ino).and_then(|n| n.paths.first().cloned())
    }

    /// Every path of node `ino` (several for a file with several names),
    /// the one [`Inodes::path`] gives first.
    pub fn paths(&self, ino: u64) -> Vec<String> {
        self.nodes
            .get(&ino)
            .map(|n| n.paths.clone())
            .unwrap_or_default()
    }

    /// The path of `name` under node `parent`: `ENOENT` if the parent is
    /// unknown, `EINVAL` for a name that is not UTF-8, `ENAMETOOLONG`
    /// beyond 255 bytes.
    pub fn child(&self, parent: u64, name: &OsStr) -> Result<String, libc::c_int> {
        let name = name.to_str().ok_or(libc::EINVAL)?;
        if name.len() > 255 {
            return Err(libc::ENAMETOOLONG);
        }
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(libc::EINVAL);
        }
        let parent = self.path(parent).ok_or(libc::ENOENT)?;
        Ok(join(&parent, name))
    }

    /// The node id of `path` if the kernel knows it.
    pub fn known(&self, path: &str) -> Option<u64> {
        self.by_path.get(path).copied()
    }

    /// Records one lookup of `path` (by the engine's inode number `ino`
    /// when it has one) and returns its node id. `shared`: the file has
    /// several names (nlink > 1), so `path` joins the node's other paths;
    /// otherwise it is the node's only path (a path seen before under
    /// this id was renamed away).
    pub fn remember(&mut self, path: &str, ino: Option<u64>, shared: bool) -> u64 {
        let id = match ino {
            Some(ino) => ino,
            None => match self.by_path.get(path) {
                Some(&id) => id,
                None => {
                    self.next += 1;
                    self.next
                }
            },
        };
        // Another node that held this path (the file was replaced) keeps
        // its id until forgotten, but no longer this path.
        if let Some(old) = self.by_path.insert(path.to_owned(), id)
            && old != id
            && let Some(n) = self.nodes.get_mut(&old)
        {
            n.drop_path(path);
        }
        let node = self.nodes.entry(id).or_insert(Node {
            paths: Vec::new(),
            lookups: 0,
        });
        if !shared {
            for prev in node.paths.drain(..) {
                if prev != path && self.by_path.get(&prev) == Some(&id) {
                    self.by_path.remove(&prev);
                }
            }
        }
        if !node.paths.iter().any(|p| p == path) {
            node.paths.push(path.to_owned());
        }
        if id != ROOT {
            node.lookups += 1;
        }
        id
    }

    /// Node `ino`'s `path` is gone (found missing): the node keeps its
    /// other paths.
    pub fn drop_path(&mut self, ino: u64, path: &str) {
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.drop_path(path);
        }
        if self.by_path.get(path) == Some(&ino) {
            self.by_path.remove(path);
        }
    }

    /// The kernel forgot `n` lookups of `ino`.
    pub fn forget(&mut self, ino: u64, n: u64) {
        if ino == ROOT {
            return;
        }
        let Some(node) = self.nodes.get_mut(&ino) else {
            return;
        };
        node.lookups = node.lookups.saturating_sub(n);
        if node.lookups == 0 {
            for p in &node.paths {
                if self.by_path.get(p) == Some(&ino) {
                    self.by_path.remove(p);
                }
            }
            self.nodes.remove(&ino);
        }
    }

    /// `path` was removed (a node with other names keeps them).
    pub fn unlinked(&mut self, path: &str) {
        if let Some(id) = self.by_path.remove(path)
            && let Some(n) = self.nodes.get_mut(&id)
        {
            n.drop_path(path);
        }
    }

    /// `from` was renamed to `to` (replacing `to` if it existed); nodes
    /// under `from` move with it.
    pub fn renamed(&mut self, from: &str, to: &str) {
        self.unlinked(to);
        let prefix = format!("{from}/");
        let moved: Vec<(String, u64)> = self
            .by_path
            .iter()
            .filter(|(p, _)| p.as_str() == from || p.starts_with(&prefix))
            .map(|(p, &id)| (p.clone(), id))
            .collect();
        for (old, id) in moved {
            let new = format!("{to}{}", &old[from.len()..]);
            self.by_path.remove(&old);
            self.by_path.insert(new.clone(), id);
            if let Some(n) = self.nodes.get_mut(&id) {
                for p in &mut n.paths {
                    if *p == old {
                        p.clone_from(&new);
                    }
                }
            }
        }
    }

    /// Nodes held (the root included).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Never: the root is always held.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_are_counted_and_forgotten() {
        let mut t = Inodes::new();
        let a = t.remember("a", None, false);
        assert_eq!(t.remember("a", None, false), a);
        assert_eq!(t.path(a).as_deref(), Some("a"));
        t.forget(a, 1);
        assert_eq!(t.path(a).as_deref(), Some("a"));
        t.forget(a, 1);
        assert_eq!(t.path(a), None);
        assert_eq!(t.known("a"), None);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn the_root_is_never_forgotten() {
        let mut t = Inodes::new();
        t.forget(ROOT, 10);
        assert_eq!(t.path(ROOT).as_deref(), Some(""));
        assert_eq!(t.child(ROOT, OsStr::new("x")), Ok("x".to_owned()));
    }

    #[test]
    fn children_join_paths_and_refuse_bad_names() {
        let mut t = Inodes::new();
        let d = t.remember("d", Some(7), false);
        assert_eq!(t.child(d, OsStr::new("f")), Ok("d/f".to_owned()));
        assert_eq!(t.child(99, OsStr::new("f")), Err(libc::ENOENT));
        assert_eq!(
            t.child(d, OsStr::new(&"n".repeat(256))),
            Err(libc::ENAMETOOLONG)
        );
    }

    #[test]
    fn rename_moves_the_node_and_its_children() {
        let mut t = Inodes::new();
        let d = t.remember("d", Some(10), false);
        let f = t.remember("d/f", Some(11), false);
        let victim = t.remember("e", Some(12), false);
        t.renamed("d", "e");
        assert_eq!(t.path(d).as_deref(), Some("e"));
        assert_eq!(t.path(f).as_deref(), Some("e/f"));
        assert_eq!(t.path(victim), None);
        assert_eq!(t.known("d"), None);
    }

    #[test]
    fn unlink_keeps_the_id_until_forgotten() {
        let mut t = Inodes::new();
        let a = t.remember("a", Some(5), false);
        t.unlinked("a");
        assert_eq!(t.path(a), None);
        let b = t.remember("a", Some(6), false);
        assert_ne!(a, b);
        t.forget(a, 1);
        assert_eq!(t.path(b).as_deref(), Some("a"));
    }

    #[test]
    fn an_engine_ino_seen_under_a_new_path_moves() {
        let mut t = Inodes::new();
        let a = t.remember("a", Some(5), false);
        t.remember("b", Some(5), false);
        assert_eq!(t.path(a).as_deref(), Some("b"));
        assert_eq!(t.known("a"), None);
    }

    #[test]
    fn a_file_with_several_names_is_one_node_with_several_paths() {
        let mut t = Inodes::new();
        let a = t.remember("d/a", Some(9), true);
        let b = t.remember("e/b", Some(9), true);
        assert_eq!(a, b);
        assert_eq!(t.paths(a), ["d/a", "e/b"]);
        assert_eq!((t.known("d/a"), t.known("e/b")), (Some(a), Some(a)));
        // Unlinking one name keeps the node at the other.
        t.unlinked("d/a");
        assert_eq!(t.path(a).as_deref(), Some("e/b"));
        assert_eq!(t.known("d/a"), None);
        // A name found missing is dropped, the others serve.
        t.remember("f", Some(9), true);
        t.drop_path(a, "e/b");
        assert_eq!(t.paths(a), ["f"]);
        // Renaming one name moves only that name.
        t.remember("g", Some(9), true);
        t.renamed("f", "h");
        assert_eq!(t.paths(a), ["h", "g"]);
        // Seen again with one name left: that is its only path.
        t.remember("g", Some(9), false);
        assert_eq!(t.paths(a), ["g"]);
        assert_eq!(t.known("h"), None);
        // Forgotten: every path goes.
        t.forget(a, 10);
        assert_eq!((t.path(a), t.known("g")), (None, None));
    }
}
