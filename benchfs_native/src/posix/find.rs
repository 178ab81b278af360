//! IO500's find over one level of a directory tree on any mounted file
//! system, doing what pfind (the reference's find) does: each directory's
//! names read once, an entry's type taken from the listing, every name
//! matched with pfind's regular expression, and only a name that matches
//! stat'ed (`lstat`) for its size and modification time. A loop in the
//! engine, so a name costs what it costs pfind, not an object of the
//! caller's language.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::{Error, Result};
use crate::sys::Regex;

/// What a file must be to count: its name matches `name`, its size is
/// `size` bytes and it was modified after `newer_than_ns` (pfind's `-name
/// -size Nc -newer`).
#[derive(Debug, Clone)]
pub struct FindCriteria {
    /// A shell pattern, matched as pfind matches `-name` ([`NamePattern`]).
    pub name: String,
    pub size: u64,
    pub newer_than_ns: i64,
}

/// One level's scan: the directories below it (their paths relative to the
/// root, to scan next), the other entries seen and those that matched.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LevelFound {
    pub below: Vec<String>,
    pub scanned: u64,
    pub found: u64,
}

/// Scans `directories` (relative to `root`) for files that meet `criteria`.
/// A directory that cannot be listed, or a matching name that vanished
/// before its stat, fails the scan, naming the path.
pub fn find_level(
    root: &Path,
    directories: &[String],
    criteria: &FindCriteria,
) -> Result<LevelFound> {
    let mut name_matches = NamePattern::compile(&criteria.name)?;
    let mut level = LevelFound::default();
    for directory in directories {
        let path = root.join(directory);
        let entries = std::fs::read_dir(&path)
            .map_err(|e| Error::from_io(&e, "opendir", path.display().to_string()))?;
        for entry in entries {
            let entry =
                entry.map_err(|e| Error::from_io(&e, "readdir", path.display().to_string()))?;
            let name = entry.file_name();
            let is_dir = entry
                .file_type()
                .map_err(|e| Error::from_io(&e, "lstat", entry.path().display().to_string()))?
                .is_dir();
            if is_dir {
                level
                    .below
                    .push(format!("{directory}/{}", name.to_string_lossy()));
                continue;
            }
            level.scanned += 1;
            if name_matches.matches(name.as_bytes()) {
                let file = entry.path();
                let meta = std::fs::symlink_metadata(&file)
                    .map_err(|e| Error::from_io(&e, "lstat", file.display().to_string()))?;
                let mtime_ns = meta
                    .mtime()
                    .saturating_mul(1_000_000_000)
                    .saturating_add(meta.mtime_nsec());
                level.found +=
                    u64::from(meta.len() == criteria.size && mtime_ns > criteria.newer_than_ns);
            }
        }
    }
    Ok(level)
}

/// A name pattern as pfind reads IO500's `-name`: turned into a POSIX
/// basic expression, `*` as `.*`, `.` as `[.]`, a `"` dropped, anything
/// else as itself, and matched anywhere in the name (pfind adds no
/// anchors: `a*` matches `ba`). The same expression through the same C
/// library, so a name costs here what it costs pfind and matches alike.
#[derive(Debug)]
pub struct NamePattern(Regex);

impl NamePattern {
    pub fn compile(pattern: &str) -> Result<Self> {
        let mut expression = String::with_capacity(pattern.len() * 2);
        for c in pattern.chars() {
            match c {
                '*' => expression.push_str(".*"),
                '.' => expression.push_str("[.]"),
                '"' => {}
                c => expression.push(c),
            }
        }
        Regex::basic(&expression).map(Self).ok_or_else(|| {
            Error::invalid(
                "name",
                format!("{pattern:?} is not a pattern pfind could match"),
            )
        })
    }

    /// Whether `name` matches.
    pub fn matches(&mut self, name: &[u8]) -> bool {
        self.0.is_match(name)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::fs;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use super::*;

    fn matches(pattern: &str, name: &str) -> bool {
        NamePattern::compile(pattern)
            .unwrap()
            .matches(name.as_bytes())
    }

    #[test]
    fn a_pattern_matches_as_pfind_matches_it() {
        for name in ["01", "file.01", "a01b", "x.0001.y", "*01*"] {
            assert!(matches("*01*", name), "{name}");
        }
        for name in ["", "0", "10", "0x1", "file.0.1"] {
            assert!(!matches("*01*", name), "{name}");
        }
        // '.' is itself, not any character; no anchors, as pfind.
        assert!(matches("a.b", "a.b") && !matches("a.b", "axb"));
        assert!(matches("a*", "ba") && matches("\"*01*\"", "x01"));
        assert!(matches("", "") && matches("", "a"));
    }

    #[test]
    fn a_pattern_pfind_could_not_match_is_refused_by_name() {
        let err = NamePattern::compile("*[01*").unwrap_err().to_string();
        assert!(err.contains("name") && err.contains("*[01*"), "{err}");
    }

    #[test]
    fn a_level_counts_its_files_and_finds_the_matching_new_ones() {
        let root = std::env::temp_dir().join(format!("bf-find-{}", std::process::id()));
        let top = root.join("top");
        fs::create_dir_all(top.join("sub/deeper")).unwrap();
        let stamp = SystemTime::now() - Duration::from_secs(60);
        let stamp_ns = stamp.duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64;
        for (name, bytes) in [
            ("a.01", 5),
            ("b.01", 4),
            ("c.02", 5),
            ("d.0101", 5),
            ("e.01", 5),
        ] {
            fs::write(top.join(name), vec![0u8; bytes]).unwrap();
        }
        // e.01 matches by name and size but is older than the stamp.
        let old = fs::File::options()
            .write(true)
            .open(top.join("e.01"))
            .unwrap();
        old.set_modified(stamp - Duration::from_secs(60)).unwrap();
        std::os::unix::fs::symlink("a.01", top.join("link.01")).unwrap();
        let criteria = FindCriteria {
            name: "*01*".to_string(),
            size: 5,
            newer_than_ns: stamp_ns,
        };
        let level = find_level(&root, &["top".to_string()], &criteria).unwrap();
        // a.01 and d.0101; not b (size), c (name), e (older), nor the link (its own size).
        let expected = LevelFound {
            below: vec!["top/sub".to_string()],
            scanned: 6,
            found: 2,
        };
        assert_eq!(level, expected);
        let next = find_level(&root, &expected.below, &criteria).unwrap();
        assert_eq!(
            (next.below, next.scanned),
            (vec!["top/sub/deeper".to_string()], 0)
        );
        let missing = find_level(&root, &["gone".to_string()], &criteria).unwrap_err();
        assert!(missing.to_string().contains("gone"), "{missing}");
        fs::remove_dir_all(&root).unwrap();
    }
}
