//! On-disk layout: path validation, reversible backing-file names and the
//! split of a byte range into per-chunk pieces.
//!
//! A logical file `a/b/c` is one sparse backing file in the store's flat
//! root directory, named by escaping `%` as `%25`, `/` as `%2F` and a
//! leading `.` as `%2E` (so no backing file starts with `.`: dot-names are
//! the store's own). Chunk `k` lives at offset `k * chunk_size` of it, so a
//! node holds one backing file per logical file it has chunks of and no
//! directories at all (docs/STORAGE.md).

use crate::error::{Error, Result};

/// Longest backing-file name (Linux `NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// Checks that `path` is a relative path that stays inside the store:
/// not empty, not absolute, no NUL byte, no empty, `.` or `..` component.
pub fn validate(path: &str) -> Result<()> {
    let bad = |reason| {
        Err(Error::InvalidPath {
            path: path.to_owned(),
            reason,
        })
    };
    if path.is_empty() {
        return bad("the path is empty");
    }
    if path.contains('\0') {
        return bad("the path contains a NUL byte");
    }
    if path.starts_with('/') {
        return bad("absolute paths would escape the store");
    }
    for comp in path.split('/') {
        match comp {
            ".." => return bad("a '..' component would escape the store"),
            "." => return bad("'.' components are not allowed"),
            "" => return bad("empty components ('//' or a trailing '/') are not allowed"),
            _ => {}
        }
    }
    Ok(())
}

/// The backing-file name of a valid logical `path`.
pub fn backing_name(path: &str) -> Result<String> {
    validate(path)?;
    let mut out = String::with_capacity(path.len() + 8);
    for (i, c) in path.char_indices() {
        match c {
            '%' => out.push_str("%25"),
            '/' => out.push_str("%2F"),
            '.' if i == 0 => out.push_str("%2E"),
            c => out.push(c),
        }
    }
    if out.len() > NAME_MAX {
        return Err(Error::os(libc::ENAMETOOLONG, "name", path));
    }
    Ok(out)
}

/// The logical path of a backing-file name, or `None` for a name the store
/// did not make (its own dot-files, foreign files).
pub fn logical_path(name: &str) -> Option<String> {
    if name.starts_with('.') {
        return None;
    }
    let b = name.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let code = b.get(i + 1..i + 3)?;
            let decoded = match code {
                b"25" => b'%',
                b"2F" => b'/',
                b"2E" if i == 0 => b'.',
                _ => return None,
            };
            out.push(decoded);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    let path = String::from_utf8(out).ok()?;
    // Only canonical names: escaping the result must give `name` back.
    match backing_name(&path) {
        Ok(n) if n == name => Some(path),
        _ => None,
    }
}

/// One piece of a request: a contiguous range inside one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Offset in the backing file (chunk `k` at `k * chunk_size`).
    pub file_offset: u64,
    /// Offset of the piece in the caller's data.
    pub data_offset: usize,
    /// Length in bytes.
    pub len: usize,
}

/// Splits `len` bytes at `offset` into pieces that neither cross a chunk
/// border nor exceed `max_piece` bytes.
pub fn pieces(offset: u64, len: usize, chunk_size: u64, max_piece: usize) -> Pieces {
    Pieces {
        offset,
        done: 0,
        len,
        chunk_size: chunk_size.max(1),
        max_piece: max_piece.max(1),
    }
}

/// Iterator of [`pieces`].
#[derive(Debug, Clone)]
pub struct Pieces {
    offset: u64,
    done: usize,
    len: usize,
    chunk_size: u64,
    max_piece: usize,
}

impl Iterator for Pieces {
    type Item = Piece;

    fn next(&mut self) -> Option<Piece> {
        if self.done >= self.len {
            return None;
        }
        let at = self.offset + self.done as u64;
        let to_chunk_end = self.chunk_size - at % self.chunk_size;
        let left = self.len - self.done;
        let n = usize::try_from(to_chunk_end)
            .unwrap_or(usize::MAX)
            .min(left)
            .min(self.max_piece);
        let p = Piece {
            file_offset: at,
            data_offset: self.done,
            len: n,
        };
        self.done += n;
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_paths_are_rejected_naming_the_path() {
        for p in [
            "",
            "/etc/passwd",
            "..",
            "a/../b",
            "a/..",
            "../x",
            "a\0b",
            "a//b",
            "a/",
            "./a",
        ] {
            let e = backing_name(p).expect_err(p);
            assert!(
                matches!(&e, Error::InvalidPath { path, .. } if path == p),
                "{e}"
            );
        }
    }

    #[test]
    fn names_round_trip() {
        for p in [
            "a",
            "a/b/c",
            "100%",
            "%2F",
            ".hidden",
            "a/.b",
            "x..y",
            "a/b%2Fc/..d",
            "ünï/cödé",
        ] {
            let n = backing_name(p).expect(p);
            assert!(!n.contains('/'), "{n}");
            assert!(!n.starts_with('.'), "{n}");
            assert_eq!(logical_path(&n).as_deref(), Some(p), "{n}");
        }
        // Distinct paths, distinct names.
        assert_ne!(backing_name("a/b").ok(), backing_name("a%2Fb").ok());
    }

    #[test]
    fn foreign_names_are_not_paths() {
        for n in [".dio-probe-1", "%", "%2", "%41", "a%2e", "%2Ex%2E"] {
            assert_eq!(logical_path(n), None, "{n}");
        }
    }

    #[test]
    fn too_long_is_enametoolong() {
        let p = "x".repeat(300);
        assert_eq!(
            backing_name(&p).err().and_then(|e| e.errno()),
            Some(libc::ENAMETOOLONG)
        );
    }

    #[test]
    fn pieces_split_at_chunk_borders_and_max_piece() {
        let v: Vec<_> = pieces(3000, 10_000, 4096, 1 << 20).collect();
        assert_eq!(
            v.iter()
                .map(|p| (p.file_offset, p.data_offset, p.len))
                .collect::<Vec<_>>(),
            vec![
                (3000, 0, 1096),
                (4096, 1096, 4096),
                (8192, 5192, 4096),
                (12288, 9288, 712)
            ]
        );
        let v: Vec<_> = pieces(0, 10, 1 << 20, 4).collect();
        assert_eq!(v.len(), 3);
        assert_eq!(pieces(5, 0, 4096, 4096).count(), 0);
        let total: usize = pieces(12345, 987_654, 4096, 65536).map(|p| p.len).sum();
        assert_eq!(total, 987_654);
    }
}
