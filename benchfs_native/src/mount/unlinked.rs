//! Files unlinked (or renamed over) while this mount has them open. POSIX
//! keeps such a file usable through its open descriptors until the last
//! close; the engine removes a file at once. So the mount renames it to a
//! hidden name in its directory instead and removes it at the last release
//! of its handles, as NFS clients do with `.nfsXXXX` ("silly rename").
//! Listings of the mount leave the hidden names out, so a program may not
//! make an entry of such a name itself (`EPERM`: [`refuse_hidden`]), or
//! its file would vanish from `ls`, `find` and `du`, and its directory
//! could never be removed. A name of a file that
//! has other names (hard links) is removed at once instead: the engine
//! keeps the data for the other names, and the handles go on by id.

use std::collections::HashMap;

use super::inodes::join;

/// How a hidden name starts.
pub const HIDDEN_PREFIX: &str = ".benchfs-unlinked-";

/// The hidden name of file `ino` in the directory of `path`.
pub fn hidden_name(path: &str, ino: u64) -> String {
    let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
    join(dir, &format!("{HIDDEN_PREFIX}{ino:016x}"))
}

/// Whether the last component of `path` is a hidden name.
pub fn is_hidden(path: &str) -> bool {
    let name = path.rsplit_once('/').map_or(path, |(_, name)| name);
    name.strip_prefix(HIDDEN_PREFIX)
        .is_some_and(|id| id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `EPERM` for a new entry whose name is a hidden name: the mount keeps
/// those names for itself.
pub fn refuse_hidden(path: &str) -> Result<(), libc::c_int> {
    if is_hidden(path) {
        return Err(libc::EPERM);
    }
    Ok(())
}

/// Engine ids of open files that were unlinked, with their hidden paths.
#[derive(Debug, Default)]
pub struct Unlinked {
    by_ino: HashMap<u64, String>,
}

impl Unlinked {
    /// File `ino` now lives at `hidden` until its last release.
    pub fn insert(&mut self, ino: u64, hidden: String) {
        self.by_ino.insert(ino, hidden);
    }

    /// The hidden path of `ino`, if it was unlinked while open.
    pub fn path(&self, ino: u64) -> Option<&str> {
        self.by_ino.get(&ino).map(String::as_str)
    }

    /// Forgets `ino`; returns its hidden path, to remove.
    pub fn remove(&mut self, ino: u64) -> Option<String> {
        self.by_ino.remove(&ino)
    }

    /// File `ino` was renamed to `to`: under a name of its own again, it is
    /// no longer removed at its last release.
    pub fn moved(&mut self, ino: u64, to: &str) {
        if self.path(ino).is_some_and(|p| p != to) {
            self.by_ino.remove(&ino);
        }
    }

    /// Every hidden path, forgotten.
    pub fn drain(&mut self) -> Vec<String> {
        self.by_ino.drain().map(|(_, p)| p).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_names_stay_in_the_directory() {
        assert_eq!(hidden_name("f", 0xab), ".benchfs-unlinked-00000000000000ab");
        assert_eq!(
            hidden_name("d/e/f", 1),
            "d/e/.benchfs-unlinked-0000000000000001"
        );
        assert!(is_hidden(&hidden_name("d/f", u64::MAX)));
        assert!(is_hidden(".benchfs-unlinked-00000000000000ab"));
    }

    #[test]
    fn only_exact_hidden_names_are_hidden() {
        assert!(!is_hidden("f"));
        assert!(!is_hidden(".benchfs-unlinked-"));
        assert!(!is_hidden(".benchfs-unlinked-0000000000000001.txt"));
        assert!(!is_hidden(".benchfs-unlinked-000000000000000g"));
        assert!(!is_hidden(".benchfs-unlinked-00000000000000001/x"));
    }

    #[test]
    fn a_new_entry_may_not_take_a_hidden_name() {
        assert_eq!(
            refuse_hidden("d/.benchfs-unlinked-00000000000000ab"),
            Err(libc::EPERM)
        );
        assert_eq!(refuse_hidden("d/.benchfs-unlinked-ab"), Ok(()));
        assert_eq!(
            refuse_hidden(".benchfs-unlinked-00000000000000ab.txt"),
            Ok(())
        );
    }

    #[test]
    fn a_file_renamed_back_to_a_name_is_kept() {
        let mut u = Unlinked::default();
        u.insert(5, hidden_name("d/f", 5));
        u.moved(5, &hidden_name("d/f", 5));
        assert!(u.path(5).is_some());
        u.moved(5, "d/g");
        assert_eq!(u.path(5), None);
        assert_eq!(u.remove(5), None);
    }

    #[test]
    fn remove_and_drain_forget() {
        let mut u = Unlinked::default();
        u.insert(1, "a".to_owned());
        u.insert(2, "b".to_owned());
        assert_eq!(u.remove(1).as_deref(), Some("a"));
        assert_eq!(u.drain(), vec!["b".to_owned()]);
        assert_eq!(u.path(2), None);
    }
}
