//! Directory entries, the payload of a readdir reply.

use super::Limits;
use super::codec::{DecodeError, Reader, Writer};
use crate::error::{Error, Result};

/// Length of one encoded directory entry without its name.
pub const DIR_ENTRY_FIXED: usize = 16;
/// Longest directory entry name (Linux `NAME_MAX`).
pub const MAX_NAME: usize = 255;

/// One directory entry of a readdir reply's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirEntry<'a> {
    /// Entry name (one path component).
    pub name: &'a str,
    /// `st_mode`: type bits and permissions.
    pub mode: u32,
    /// The entry's id (its `Attr::ino`).
    pub ino: u64,
}

fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("empty name");
    }
    if name.len() > MAX_NAME {
        return Err("name longer than 255 bytes");
    }
    if name == "." || name == ".." {
        return Err("'.' or '..' is not an entry name");
    }
    if name.contains(['/', '\0']) {
        return Err("name contains '/' or NUL");
    }
    Ok(())
}

/// Appends `entries` in the readdir payload encoding (per entry:
/// `name_len: u16, reserved: u16, mode: u32, ino: u64, name`); returns the
/// bytes appended (the reply's `entries_len`).
pub fn encode_dir_entries(out: &mut Vec<u8>, entries: &[DirEntry<'_>]) -> Result<usize> {
    let before = out.len();
    for e in entries {
        if let Err(why) = check_name(e.name) {
            out.truncate(before);
            return Err(Error::invalid("entry name", format!("{:?}: {why}", e.name)));
        }
        let mut w = Writer::<DIR_ENTRY_FIXED>::new();
        // At most MAX_NAME, checked above.
        w.u16(e.name.len() as u16);
        w.zero::<2>();
        w.u32(e.mode);
        w.u64(e.ino);
        out.extend_from_slice(w.bytes());
        out.extend_from_slice(e.name.as_bytes());
    }
    Ok(out.len() - before)
}

/// Decodes `count` directory entries from a readdir reply's payload. Offsets
/// in errors are relative to the payload. Allocates one vector of at most
/// `min(count, payload.len() / 16)` entries; names borrow from `payload`.
pub fn decode_dir_entries<'a>(
    payload: &'a [u8],
    count: u32,
    limits: &Limits,
) -> Result<Vec<DirEntry<'a>>, DecodeError> {
    if count > limits.max_dir_entries {
        return Err(DecodeError::new(
            0,
            "count",
            format!("{count} exceeds the limit of {}", limits.max_dir_entries),
        ));
    }
    let cap = (count as usize).min(payload.len() / DIR_ENTRY_FIXED);
    let mut out = Vec::with_capacity(cap);
    let mut r = Reader {
        buf: payload,
        pos: 0,
    };
    for _ in 0..count {
        let at = r.pos;
        let name_len = usize::from(r.u16("name_len")?);
        r.zero::<2>("reserved")?;
        let mode = r.u32("mode")?;
        let ino = r.u64("ino")?;
        let name_at = r.pos;
        let bytes = r.take(name_len, "name")?;
        let name = std::str::from_utf8(bytes)
            .map_err(|e| DecodeError::new(name_at + e.valid_up_to(), "name", "invalid UTF-8"))?;
        if let Err(why) = check_name(name) {
            return Err(DecodeError::new(at, "name", why));
        }
        out.push(DirEntry { name, mode, ino });
    }
    if r.pos != payload.len() {
        return Err(DecodeError::new(
            r.pos,
            "entries",
            format!(
                "{} bytes after the last of {count} entries",
                payload.len() - r.pos
            ),
        ));
    }
    Ok(out)
}
