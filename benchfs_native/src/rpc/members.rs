//! The members file: the whole membership in one file, so a client opens
//! one file instead of the N records of the registry (on a shared file
//! system at 1,024 daemons x 48 ranks that is 50 million opens against its
//! metadata server, before the first byte moves).
//!
//! * Written once, by the orchestrator, after every daemon registered
//!   ([`publish`]): `members.json` ([`membership::MEMBERS_FILE`]) beside the
//!   records, written as a temp file (0600), fsynced, renamed over the name
//!   (readers see the whole file or none).
//! * Integrity: an HMAC-SHA256 with the job's session key over the
//!   records as serialised (the key that signs every connect). A checksum
//!   would catch a damaged file; the MAC also refuses a file written for
//!   another job's daemons (another key) and one written by anyone who
//!   cannot read the key, so the file gives a client no address the
//!   sessions themselves would not trust.
//! * Read by every client at connect ([`read`]) when it is there; absent,
//!   the client waits on the records as before (daemons started by hand).
//!   A damaged, foreign or stale file is a one-line error naming it; a
//!   registering daemon removes it ([`membership::discard_members`]).

use std::fs;
use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::membership::{self, Expected, MEMBERS_FILE, Record};
use crate::rpc::session_key::SessionKey;
use crate::sys;

/// The `format` field of a members file.
pub const FORMAT: &str = "benchfs-members/1";
/// Largest members file [`read`] accepts (1,024 records of the largest size).
pub const MAX_MEMBERS_BYTES: u64 = 1024 * membership::MAX_RECORD_BYTES;
/// Prefix of the MAC'd bytes (a tag of another message never verifies here).
const MAC_DOMAIN: &[u8] = b"benchfs members file v1\n";

#[derive(Serialize)]
struct Written<'a> {
    format: &'a str,
    written_unix_ns: u64,
    mac: String,
    members: &'a [Record],
}

#[derive(Deserialize)]
struct Stored {
    format: String,
    written_unix_ns: u64,
    mac: String,
    members: Vec<Record>,
}

/// The members file of `dir`.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(MEMBERS_FILE)
}

/// The bytes the MAC covers after [`MAC_DOMAIN`] and the write time: the
/// records as serialised (the same on every build of this format).
fn body(members: &[Record]) -> Result<Vec<u8>> {
    serde_json::to_vec(members)
        .map_err(|e| Error::invalid("members file", format!("serialise: {e}")))
}

fn tag(key: &SessionKey, written_unix_ns: u64, members: &[Record]) -> Result<String> {
    let t = key.tag(&[MAC_DOMAIN, &written_unix_ns.to_le_bytes(), &body(members)?]);
    Ok(t.iter().map(|b| format!("{b:02x}")).collect())
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Writes `members` (sorted by node id) as the members file of `dir`,
/// signed with `key`; returns its path.
pub fn write(dir: &Path, members: &[Record], key: &SessionKey) -> Result<PathBuf> {
    let mut sorted = members.to_vec();
    sorted.sort_by_key(|r| r.node_id);
    let written_unix_ns = Record::now_unix_ns();
    let file = Written {
        format: FORMAT,
        written_unix_ns,
        mac: tag(key, written_unix_ns, &sorted)?,
        members: &sorted,
    };
    let json = serde_json::to_vec(&file)
        .map_err(|e| Error::invalid("members file", format!("serialise: {e}")))?;
    let final_path = path(dir);
    let tmp = dir.join(format!(".{MEMBERS_FILE}.tmp.{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        sys::fs::write_private_new(&tmp, &json)?;
        fs::rename(&tmp, &final_path)
    };
    if let Err(e) = write() {
        let _ = fs::remove_file(&tmp);
        return Err(Error::from_io(
            &e,
            "write the members file",
            final_path.display().to_string(),
        ));
    }
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(final_path)
}

/// Reads every record of `dir` (the daemons' own), checks that they are
/// exactly the `expected` ones with ids `0..N`, and writes the members
/// file ([`write`]). Returns its path and how many members it lists.
pub fn publish(dir: &Path, expected: &Expected, key: &SessionKey) -> Result<(PathBuf, usize)> {
    let records = membership::read_all(dir)?;
    let members: Vec<Record> = match expected {
        Expected::Count(n) => {
            if records.len() != *n {
                return Err(Error::invalid(
                    "members file",
                    format!(
                        "{}: {} daemons registered, {n} expected",
                        dir.display(),
                        records.len()
                    ),
                ));
            }
            records
        }
        Expected::Names(names) => {
            let mut out = Vec::with_capacity(names.len());
            for n in names {
                match records.iter().find(|r| &r.node_name == n) {
                    Some(r) => out.push(r.clone()),
                    None => {
                        return Err(Error::invalid(
                            "members file",
                            format!("{}: daemon {n} has not registered", dir.display()),
                        ));
                    }
                }
            }
            out
        }
    };
    for (want, r) in sorted_ids(&members).iter().enumerate() {
        if *r as usize != want {
            return Err(Error::invalid(
                "members file",
                format!(
                    "{}: node ids must be 0..{}, id {want} is missing",
                    dir.display(),
                    members.len()
                ),
            ));
        }
    }
    let p = write(dir, &members, key)?;
    Ok((p, members.len()))
}

fn sorted_ids(members: &[Record]) -> Vec<u32> {
    let mut ids: Vec<u32> = members.iter().map(|r| r.node_id).collect();
    ids.sort_unstable();
    ids
}

fn bad(p: &Path, why: impl std::fmt::Display) -> Error {
    Error::invalid("members file", format!("{}: {why}", p.display()))
}

/// The members file of `dir`, checked: `None` when there is none (the
/// caller waits on the records). The file must parse, carry a MAC that
/// verifies with `key`, list the `expected` daemons (the named ones, or at
/// least the count) with ids `0..N` and speak `protocol_version`;
/// anything else is an error naming the file and what is wrong.
pub fn read(
    dir: &Path,
    expected: &Expected,
    key: Option<&SessionKey>,
    protocol_version: u16,
) -> Result<Option<Vec<Record>>> {
    let p = path(dir);
    let mut f = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&p)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::from_io(
                &e,
                "read the members file",
                p.display().to_string(),
            ));
        }
    };
    let mut bytes = Vec::new();
    (&mut f)
        .take(MAX_MEMBERS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::from_io(&e, "read the members file", p.display().to_string()))?;
    if bytes.len() as u64 > MAX_MEMBERS_BYTES {
        return Err(bad(
            &p,
            format!("larger than the {MAX_MEMBERS_BYTES} bytes a members file may have"),
        ));
    }
    let stored: Stored =
        serde_json::from_slice(&bytes).map_err(|e| bad(&p, format!("damaged: {e}")))?;
    if stored.format != FORMAT {
        return Err(bad(
            &p,
            format!("format {:?}, this build reads {FORMAT:?}", stored.format),
        ));
    }
    let Some(key) = key else {
        return Err(bad(
            &p,
            "no session key to verify it with ($BENCHFS_SESSION_KEY or session.key)",
        ));
    };
    let covered = body(&stored.members)?;
    let verified = unhex(&stored.mac).is_some_and(|t| {
        key.verify(
            &[MAC_DOMAIN, &stored.written_unix_ns.to_le_bytes(), &covered],
            &t,
        )
    });
    if !verified {
        return Err(bad(
            &p,
            format!(
                "its MAC does not verify with the session key ({}): damaged, or written for other daemons",
                key.source()
            ),
        ));
    }
    let members = stored.members;
    if let Some(r) = members
        .iter()
        .find(|r| r.protocol_version != protocol_version)
    {
        return Err(bad(
            &p,
            format!(
                "daemon {} speaks protocol version {}, this build speaks {protocol_version}",
                r.node_name, r.protocol_version
            ),
        ));
    }
    for (want, id) in sorted_ids(&members).iter().enumerate() {
        if *id as usize != want {
            return Err(bad(
                &p,
                format!(
                    "node ids must be 0..{}, id {want} is missing",
                    members.len()
                ),
            ));
        }
    }
    match expected {
        Expected::Count(n) if members.len() < *n => Err(bad(
            &p,
            format!(
                "lists {} daemons, {n} expected: stale (remove it to wait on the records)",
                members.len()
            ),
        )),
        Expected::Count(_) => Ok(Some(members)),
        Expected::Names(names) => {
            let mut out = Vec::with_capacity(names.len());
            for n in names {
                match members.iter().find(|r| &r.node_name == n) {
                    Some(r) => out.push(r.clone()),
                    None => {
                        return Err(bad(
                            &p,
                            format!(
                                "does not list daemon {n}: stale (remove it to wait on the records)"
                            ),
                        ));
                    }
                }
            }
            Ok(Some(out))
        }
    }
}

/// Every member of `dir` now, without waiting: the members file's list
/// when there is one (checked as [`read`] does), else the records.
pub fn current(dir: &Path, protocol_version: u16) -> Result<Vec<Record>> {
    let key = crate::rpc::session_key::load(dir)?;
    match read(dir, &Expected::Count(0), key.as_ref(), protocol_version)? {
        Some(members) => Ok(members),
        None => membership::read_all(dir),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]
    use super::*;

    fn rec(name: &str, id: u32) -> Record {
        Record {
            node_name: name.into(),
            node_id: id,
            daemon_index: 0,
            pid: 1,
            host: "h".into(),
            worker_address: vec![1, 2, 3],
            data_dir: "/d".into(),
            start_time_unix_ns: 7,
            protocol_version: 3,
        }
    }

    fn dir(tag: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("bf-members-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        p
    }

    #[test]
    fn round_trips_and_refuses_damage_and_other_keys() {
        let d = dir("rt");
        let key = SessionKey::random("k").unwrap();
        let all = Expected::Count(2);
        assert!(read(&d, &all, Some(&key), 3).unwrap().is_none());
        write(&d, &[rec("b", 1), rec("a", 0)], &key).unwrap();
        let got = read(&d, &all, Some(&key), 3).unwrap().unwrap();
        assert_eq!(got, vec![rec("a", 0), rec("b", 1)]);
        let named = Expected::Names(vec!["b".into()]);
        assert_eq!(
            read(&d, &named, Some(&key), 3).unwrap().unwrap(),
            vec![rec("b", 1)]
        );
        let other = SessionKey::random("other-key").unwrap();
        let e = read(&d, &all, Some(&other), 3).unwrap_err().to_string();
        assert!(e.contains("members.json") && e.contains("other-key"), "{e}");
        let e = read(&d, &Expected::Count(3), Some(&key), 3)
            .unwrap_err()
            .to_string();
        assert!(e.contains("stale"), "{e}");
        let e = read(&d, &all, Some(&key), 4).unwrap_err().to_string();
        assert!(e.contains("protocol version 3"), "{e}");
        let text = fs::read_to_string(path(&d)).unwrap();
        fs::write(path(&d), text.replace("\"h\"", "\"x\"")).unwrap();
        let e = read(&d, &all, Some(&key), 3).unwrap_err().to_string();
        assert!(e.contains("does not verify"), "{e}");
        fs::write(path(&d), &text[..text.len() / 2]).unwrap();
        let e = read(&d, &all, Some(&key), 3).unwrap_err().to_string();
        assert!(e.contains("members.json: damaged"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn publish_needs_every_expected_record() {
        let d = dir("pub");
        let key = SessionKey::random("k").unwrap();
        membership::register(&d, &rec("a", 0)).unwrap();
        let e = publish(&d, &Expected::Count(2), &key)
            .unwrap_err()
            .to_string();
        assert!(e.contains("1 daemons registered, 2 expected"), "{e}");
        membership::register(&d, &rec("b", 1)).unwrap();
        let (p, n) = publish(&d, &Expected::Count(2), &key).unwrap();
        assert_eq!((p, n), (path(&d), 2));
        // Not a record, and a registering daemon makes it go.
        assert_eq!(membership::read_all(&d).unwrap().len(), 2);
        membership::discard_members(&d).unwrap();
        assert!(!path(&d).exists());
        let _ = fs::remove_dir_all(&d);
    }
}
