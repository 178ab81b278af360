//! The session key: a 32-byte secret only the job's processes hold, without
//! which a daemon opens no session (docs/WIRE_PROTOCOL.md, "Session key").
//!
//! It comes from the environment (`BENCHFS_SESSION_KEY`, 64 hex digits),
//! which wins, or from the file `session.key` in the registry directory
//! (64 hex digits, mode 0600, owned by this user). Whoever prepares the
//! registry creates the file ([`ensure`]: the run's orchestration, or a
//! daemon started by hand that finds none); the file is written under a
//! temporary name opened with `O_EXCL` and published with `link(2)`, so
//! concurrent creators agree on one key and no reader sees half of one.

use std::fmt;
use std::fs;
use std::io::Read as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::Sha256;

use crate::error::{Error, Result};
use crate::sys;

/// The environment variable that carries the key (it wins over the file).
pub const KEY_ENV: &str = "BENCHFS_SESSION_KEY";
/// The key file's name in the registry directory.
pub const KEY_FILE: &str = "session.key";
/// Bytes of a key.
pub const KEY_LEN: usize = 32;
/// Bytes of a tag (HMAC-SHA256).
pub const TAG_LEN: usize = 32;

/// A session key and where it came from (for error messages; the key
/// itself is never printed).
#[derive(Clone)]
pub struct SessionKey {
    bytes: [u8; KEY_LEN],
    source: String,
}

impl fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionKey")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl SessionKey {
    /// A key from 64 hex digits (surrounding white space ignored).
    pub fn from_hex(text: &str, source: impl Into<String>) -> Result<SessionKey> {
        let source = source.into();
        let t = text.trim();
        let bad = || {
            Error::invalid(
                "session key",
                format!(
                    "{source}: must be {} hex digits, got {} characters",
                    2 * KEY_LEN,
                    t.len()
                ),
            )
        };
        if t.len() != 2 * KEY_LEN {
            return Err(bad());
        }
        let mut bytes = [0u8; KEY_LEN];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = t
                .get(2 * i..2 * i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(bad)?;
        }
        Ok(SessionKey { bytes, source })
    }

    /// A new random key.
    pub fn random(source: impl Into<String>) -> Result<SessionKey> {
        let mut bytes = [0u8; KEY_LEN];
        sys::fill_random(&mut bytes)
            .map_err(|e| Error::from_io(&e, "draw a session key", "getrandom"))?;
        Ok(SessionKey {
            bytes,
            source: source.into(),
        })
    }

    /// The key as 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        self.bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Where the key came from: the environment variable or the file.
    pub fn source(&self) -> &str {
        &self.source
    }

    fn mac(&self, parts: &[&[u8]]) -> Option<Hmac<Sha256>> {
        let mut m = Hmac::<Sha256>::new_from_slice(&self.bytes).ok()?;
        for p in parts {
            m.update(p);
        }
        Some(m)
    }

    /// HMAC-SHA256 of the concatenated `parts`.
    pub fn tag(&self, parts: &[&[u8]]) -> [u8; TAG_LEN] {
        let mut out = [0u8; TAG_LEN];
        if let Some(m) = self.mac(parts) {
            out.copy_from_slice(&m.finalize().into_bytes());
        }
        out
    }

    /// Whether `tag` is the HMAC of `parts` (compared in constant time).
    pub fn verify(&self, parts: &[&[u8]], tag: &[u8]) -> bool {
        self.mac(parts).is_some_and(|m| m.verify_slice(tag).is_ok())
    }
}

/// The key file of `registry_dir`.
pub fn key_path(registry_dir: &Path) -> PathBuf {
    registry_dir.join(KEY_FILE)
}

fn from_env() -> Result<Option<SessionKey>> {
    match std::env::var(KEY_ENV) {
        Ok(v) => SessionKey::from_hex(&v, format!("${KEY_ENV}")).map(Some),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(Error::invalid(
            "session key",
            format!("${KEY_ENV}: is not valid text"),
        )),
    }
}

/// Reads the key file at `path`: a regular file (never through a link)
/// owned by this user and readable by no one else.
fn read_file(path: &Path) -> Result<Option<SessionKey>> {
    let shown = path.display().to_string();
    let mut f = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::from_io(&e, "open the session key", shown)),
    };
    let meta = f
        .metadata()
        .map_err(|e| Error::from_io(&e, "stat the session key", shown.clone()))?;
    let refuse = |why: String| Err(Error::invalid("session key", format!("{shown}: {why}")));
    if !meta.is_file() {
        return refuse("is not a regular file".to_owned());
    }
    if meta.uid() != sys::effective_uid() {
        return refuse(format!(
            "is owned by uid {}, not by this user (uid {}): another user's key is never used",
            meta.uid(),
            sys::effective_uid()
        ));
    }
    if meta.mode() & 0o077 != 0 {
        return refuse(format!(
            "mode {:04o} lets other users read it; it must be 0600",
            meta.mode() & 0o7777
        ));
    }
    let mut text = String::new();
    (&mut f)
        .take(256)
        .read_to_string(&mut text)
        .map_err(|e| Error::from_io(&e, "read the session key", shown.clone()))?;
    SessionKey::from_hex(&text, shown).map(Some)
}

/// The job's key: `$BENCHFS_SESSION_KEY`, else `session.key` in
/// `registry_dir`; `None` when neither exists.
pub fn load(registry_dir: &Path) -> Result<Option<SessionKey>> {
    match from_env()? {
        Some(k) => Ok(Some(k)),
        None => read_file(&key_path(registry_dir)),
    }
}

/// The job's key as [`load`] finds it, creating `session.key` (0600, a new
/// random key) in `registry_dir` when there is none. Creates the directory
/// (0700) if needed.
pub fn ensure(registry_dir: &Path) -> Result<SessionKey> {
    if let Some(k) = load(registry_dir)? {
        return Ok(k);
    }
    let dir_shown = registry_dir.display().to_string();
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(registry_dir)
        .map_err(|e| Error::from_io(&e, "create registry directory", dir_shown))?;
    let path = key_path(registry_dir);
    let key = SessionKey::random(path.display().to_string())?;
    let tmp = registry_dir.join(format!(".{KEY_FILE}.tmp.{}", std::process::id()));
    let written = sys::fs::write_private_new(&tmp, key.to_hex().as_bytes());
    let published = written.and_then(|()| fs::hard_link(&tmp, &path));
    let _ = fs::remove_file(&tmp);
    match published {
        Ok(()) => Ok(key),
        // Another process published first: everyone uses that key.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            read_file(&path)?.ok_or_else(|| {
                Error::os(
                    libc::ENOENT,
                    "read the session key",
                    path.display().to_string(),
                )
            })
        }
        Err(e) => Err(Error::from_io(
            &e,
            "create the session key",
            path.display().to_string(),
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn dir(tag: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("bf-key-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        p
    }

    #[test]
    fn hex_round_trips_and_bad_text_is_named() {
        let k = SessionKey::random("t").unwrap();
        let back = SessionKey::from_hex(&format!(" {}\n", k.to_hex()), "t").unwrap();
        assert_eq!(back.bytes, k.bytes);
        for bad in ["", "abc", &"zz".repeat(32), &"0".repeat(65)] {
            let e = SessionKey::from_hex(bad, "the-file")
                .unwrap_err()
                .to_string();
            assert!(e.contains("the-file") && e.contains("64 hex digits"), "{e}");
        }
        assert!(
            !format!("{k:?}").contains(&k.to_hex()),
            "Debug prints the key"
        );
    }

    #[test]
    fn tags_depend_on_key_and_message() {
        let a = SessionKey::random("a").unwrap();
        let b = SessionKey::random("b").unwrap();
        let t = a.tag(&[b"hello", b" world"]);
        assert!(a.verify(&[b"hello world"], &t));
        assert!(!a.verify(&[b"hello worle"], &t));
        assert!(!b.verify(&[b"hello world"], &t));
        assert!(!a.verify(&[b"hello world"], &t[..31]));
    }

    #[test]
    fn ensure_creates_a_private_file_once_and_refuses_open_ones() {
        if std::env::var_os(KEY_ENV).is_some() {
            return;
        }
        let d = dir("ensure");
        let k1 = ensure(&d).unwrap();
        let k2 = ensure(&d).unwrap();
        assert_eq!(k1.bytes, k2.bytes);
        let meta = fs::metadata(key_path(&d)).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(
            fs::metadata(&d).unwrap().permissions().mode() & 0o777,
            0o700
        );
        fs::set_permissions(key_path(&d), fs::Permissions::from_mode(0o644)).unwrap();
        let e = load(&d).unwrap_err().to_string();
        assert!(e.contains("session.key") && e.contains("0600"), "{e}");
        fs::remove_file(key_path(&d)).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", key_path(&d)).unwrap();
        assert!(load(&d).is_err(), "a link is never read as the key");
        let _ = fs::remove_dir_all(&d);
    }
}
