//! Membership registry: a directory (on a shared file system in a cluster)
//! where every daemon publishes one JSON record, and where clients wait until
//! all the daemons they expect have published theirs.
//!
//! * A record is the file `<node_name>.json`, written as a temp file
//!   `.<node_name>.json.tmp.<pid>.<n>` in the same directory, fsynced, then
//!   renamed over the final name (and the directory fsynced): readers see the
//!   old record, the new one, or none, never half of one.
//! * [`read_all`] skips dot-files (temp files) and names not ending in
//!   `.json`; a record that does not parse is an error naming its file.
//! * [`wait_for`] scans until every expected daemon is there; at the deadline
//!   it fails with `ETIMEDOUT`, naming the missing daemons and how many of
//!   how many registered. A partial membership is returned only with
//!   [`WaitOptions::allow_partial`].
//! * `members.json` ([`MEMBERS_FILE`]) beside the records is not a record:
//!   it is the consolidated list the orchestrator writes once every daemon
//!   registered (`rpc::members`), so a client opens one file, not N. A
//!   daemon removes it just before it registers ([`discard_members`]):
//!   the list no longer holds once a member's address may have changed,
//!   and a removal after the record could take away the file the
//!   orchestrator published on seeing that record.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Suffix of a record file.
pub const RECORD_SUFFIX: &str = ".json";
/// Longest node name (keeps `.<name>.json.tmp.<pid>.<n>` under `NAME_MAX`).
pub const MAX_NODE_NAME: usize = 200;
/// Largest record file [`read_all`] accepts.
pub const MAX_RECORD_BYTES: u64 = 64 * 1024;
/// The consolidated members file beside the records (never a record).
pub const MEMBERS_FILE: &str = "members.json";
/// How many missing names a deadline error lists before "and N more".
const MISSING_LISTED: usize = 32;

/// One daemon's registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Unique name of the daemon in the job (the registry key), e.g. `node07`
    /// or `node07-d1` with several daemons per host.
    pub node_name: String,
    /// The daemon's placement id, `0..N`.
    pub node_id: u32,
    /// Index of the daemon on its host (0 with one daemon per host).
    pub daemon_index: u32,
    /// Process id.
    pub pid: u32,
    /// Host name the daemon runs on.
    pub host: String,
    /// The UCX worker address (`ucp_worker_get_address`), hex in JSON.
    #[serde(with = "hex_bytes")]
    pub worker_address: Vec<u8>,
    /// The daemon's data directory.
    pub data_dir: String,
    /// Start time, nanoseconds since the Unix epoch.
    pub start_time_unix_ns: u64,
    /// The RPC wire protocol version the daemon speaks.
    pub protocol_version: u16,
}

impl Record {
    /// Nanoseconds since the Unix epoch now (for `start_time_unix_ns`).
    pub fn now_unix_ns() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

mod hex_bytes {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(bytes.len() * 2);
        for &b in bytes {
            out.push(char::from(DIGITS[usize::from(b >> 4)]));
            out.push(char::from(DIGITS[usize::from(b & 15)]));
        }
        s.serialize_str(&out)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        let digit = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        };
        let b = text.as_bytes();
        if b.len() % 2 != 0 {
            return Err(D::Error::custom("worker_address: odd number of hex digits"));
        }
        b.chunks_exact(2)
            .map(|p| match (digit(p[0]), digit(p[1])) {
                (Some(h), Some(l)) => Ok(h << 4 | l),
                _ => Err(D::Error::custom("worker_address: not a hex string")),
            })
            .collect()
    }
}

/// Checks that `name` can be a registry key and a file name.
pub fn validate_node_name(name: &str) -> Result<()> {
    let bad = |why: &str| Err(Error::invalid("node_name", format!("{name:?}: {why}")));
    if name.is_empty() {
        return bad("is empty");
    }
    if name.len() > MAX_NODE_NAME {
        return bad("is longer than 200 bytes");
    }
    if name.starts_with('.') {
        return bad("starts with '.'");
    }
    if format!("{name}{RECORD_SUFFIX}") == MEMBERS_FILE {
        return bad("is reserved for the registry's members file");
    }
    if name.contains(['/', '\0']) || name.chars().any(char::is_control) {
        return bad("contains '/', NUL or a control character");
    }
    Ok(())
}

fn record_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}{RECORD_SUFFIX}"))
}

fn io_err(e: &std::io::Error, op: &'static str, path: &Path) -> Error {
    Error::from_io(e, op, path.display().to_string())
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Publishes `record` atomically as `<dir>/<node_name>.json`. Creates `dir`
/// if needed. An existing record of the name is replaced only when it is
/// this daemon's or its daemon no longer runs; a name a running daemon of
/// this host holds is refused ([`is_alive_here`]).
pub fn register(dir: &Path, record: &Record) -> Result<PathBuf> {
    validate_node_name(&record.node_name)?;
    fs::create_dir_all(dir).map_err(|e| io_err(&e, "create registry directory", dir))?;
    let json = serde_json::to_vec_pretty(record)
        .map_err(|e| Error::invalid("record", format!("{}: {e}", record.node_name)))?;
    let final_path = record_path(dir, &record.node_name);
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(
        ".{}{RECORD_SUFFIX}.tmp.{}.{n}",
        record.node_name,
        std::process::id()
    ));
    let write = || -> std::io::Result<()> {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(&json)?;
        f.write_all(b"\n")?;
        f.sync_all()
    };
    if let Err(e) = write() {
        let _ = fs::remove_file(&tmp);
        return Err(io_err(&e, "write registry record", &tmp));
    }
    // Published without replacing anything when the name is free (a hard
    // link fails if the name exists, atomically); an existing record is
    // replaced only when it is this process's own or its daemon is dead.
    let published = match fs::hard_link(&tmp, &final_path) {
        Ok(()) => fs::remove_file(&tmp),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            if let Err(held) = check_name_free(dir, &final_path, record) {
                let _ = fs::remove_file(&tmp);
                return Err(held);
            }
            fs::rename(&tmp, &final_path)
        }
        // File systems without hard links: the rename alone.
        Err(_) => fs::rename(&tmp, &final_path),
    };
    if let Err(e) = published {
        let _ = fs::remove_file(&tmp);
        return Err(io_err(&e, "rename registry record", &final_path));
    }
    // Make the rename durable; a directory that cannot be opened for fsync
    // (some shared file systems) still has the record visible.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(final_path)
}

/// Whether the daemon of `r` is known to run: on this host (the record's
/// host is `host`) with its pid alive and not a zombie. A record of another
/// host cannot be checked from here and counts as not known to run.
pub fn is_alive_here(r: &Record, host: &str) -> bool {
    if r.host != host {
        return false;
    }
    match fs::read_to_string(format!("/proc/{}/stat", r.pid)) {
        // The state is the first field after the command's closing ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Refuses to replace the record at `path` when another live daemon holds
/// the name (a second daemon started with the same name and registry).
fn check_name_free(dir: &Path, path: &Path, record: &Record) -> Result<()> {
    let file_name = format!("{}{RECORD_SUFFIX}", record.node_name);
    // A record that does not parse belongs to no live daemon.
    let Ok(Some(old)) = read_record(path, &file_name) else {
        return Ok(());
    };
    let own = old.pid == record.pid && old.host == record.host;
    if !own && is_alive_here(&old, &record.host) {
        return Err(Error::invalid(
            "node_name",
            format!(
                "{:?} is held by a running daemon (pid {} on {}) in registry {}: node names must be unique",
                record.node_name,
                old.pid,
                old.host,
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// Removes `node_name`'s record if it is the one this daemon (`pid` on
/// `host`) published; another daemon's record, or none, is left as it is.
/// Returns whether a record was removed.
pub fn unregister_own(dir: &Path, node_name: &str, pid: u32, host: &str) -> Result<bool> {
    validate_node_name(node_name)?;
    let p = record_path(dir, node_name);
    let file_name = format!("{node_name}{RECORD_SUFFIX}");
    match read_record(&p, &file_name) {
        Ok(Some(r)) if r.pid == pid && r.host == host => {}
        // Absent, another daemon's, or unreadable: not ours to remove.
        _ => return Ok(false),
    }
    match fs::remove_file(&p) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_err(&e, "remove registry record", &p)),
    }
}

/// Removes `node_name`'s record; a record that is not there is not an error.
pub fn unregister(dir: &Path, node_name: &str) -> Result<()> {
    validate_node_name(node_name)?;
    let p = record_path(dir, node_name);
    match fs::remove_file(&p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(&e, "remove registry record", &p)),
    }
}

fn is_temp(name: &str) -> bool {
    name.starts_with('.') && name.contains(".json.tmp.")
}

/// Removes every record, the members file and leftover temp files from `dir` (other files are
/// left alone); returns how many files were removed. A missing `dir` is
/// empty.
pub fn clear(dir: &Path) -> Result<usize> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io_err(&e, "list registry directory", dir)),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(|e| io_err(&e, "list registry directory", dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if is_record_name(name) || is_temp(name) || name == MEMBERS_FILE {
            match fs::remove_file(entry.path()) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(&e, "remove registry record", &entry.path())),
            }
        }
    }
    Ok(removed)
}

fn is_record_name(name: &str) -> bool {
    !name.starts_with('.')
        && name.len() > RECORD_SUFFIX.len()
        && name.ends_with(RECORD_SUFFIX)
        && name != MEMBERS_FILE
}

/// Removes the members file of `dir` (a daemon's last act before it
/// writes its record: the consolidated list is stale from then on). A file
/// that is not there is not an error.
pub fn discard_members(dir: &Path) -> Result<()> {
    let p = dir.join(MEMBERS_FILE);
    match fs::remove_file(&p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(&e, "remove the members file", &p)),
    }
}

fn corrupt(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::invalid("registry record", format!("{}: {why}", path.display()))
}

fn read_record(path: &Path, file_name: &str) -> Result<Option<Record>> {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        // Unregistered between the listing and now.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(&e, "read registry record", path)),
    };
    if meta.len() > MAX_RECORD_BYTES {
        return Err(corrupt(
            path,
            format!(
                "{} bytes, more than the {MAX_RECORD_BYTES} a record may have",
                meta.len()
            ),
        ));
    }
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(&e, "read registry record", path)),
    };
    let record: Record = serde_json::from_slice(&bytes).map_err(|e| corrupt(path, e))?;
    let stem = &file_name[..file_name.len() - RECORD_SUFFIX.len()];
    if record.node_name != stem {
        return Err(corrupt(
            path,
            format!(
                "node_name {:?} does not match the file name",
                record.node_name
            ),
        ));
    }
    Ok(Some(record))
}

/// Every record in `dir`, sorted by `node_id` then `node_name`. Temp files
/// and foreign files are skipped; a record that does not parse, or two
/// records claiming the same `node_id`, are errors naming the files.
pub fn read_all(dir: &Path) -> Result<Vec<Record>> {
    let entries = fs::read_dir(dir).map_err(|e| io_err(&e, "list registry directory", dir))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_err(&e, "list registry directory", dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !is_record_name(name) {
            continue;
        }
        if let Some(r) = read_record(&entry.path(), name)? {
            out.push(r);
        }
    }
    out.sort_by(|a, b| (a.node_id, &a.node_name).cmp(&(b.node_id, &b.node_name)));
    for pair in out.windows(2) {
        if pair[0].node_id == pair[1].node_id {
            return Err(Error::invalid(
                "registry record",
                format!(
                    "{} and {} both claim node_id {}",
                    record_path(dir, &pair[0].node_name).display(),
                    record_path(dir, &pair[1].node_name).display(),
                    pair[0].node_id
                ),
            ));
        }
    }
    Ok(out)
}

/// Which daemons [`wait_for`] waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// Exactly these node names (others in the directory are ignored).
    Names(Vec<String>),
    /// At least this many records, whatever their names.
    Count(usize),
}

/// Knobs of [`wait_for_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitOptions {
    /// Pause between two scans of the directory.
    pub poll_interval: Duration,
    /// At the deadline, return the daemons that did register (at least one)
    /// instead of failing. Off by default: a partial membership is never
    /// used by accident.
    pub allow_partial: bool,
    /// When set, a record with another `protocol_version` is an error
    /// naming the daemon (a mixed deployment fails before any RPC).
    pub protocol_version: Option<u16>,
}

impl Default for WaitOptions {
    fn default() -> Self {
        WaitOptions {
            poll_interval: Duration::from_millis(50),
            allow_partial: false,
            protocol_version: None,
        }
    }
}

/// Waits until every expected daemon has registered in `dir`, or fails at
/// `deadline` naming the missing ones. See [`wait_for_with`].
pub fn wait_for(dir: &Path, expected: &Expected, deadline: Instant) -> Result<Vec<Record>> {
    wait_for_with(dir, expected, deadline, &WaitOptions::default())
}

/// [`wait_for`] with options. Returns, for [`Expected::Names`], the records
/// of the expected names in the order given; for [`Expected::Count`], all
/// records sorted by node id. A missing directory counts as empty until the
/// deadline. A corrupt record fails at once.
pub fn wait_for_with(
    dir: &Path,
    expected: &Expected,
    deadline: Instant,
    options: &WaitOptions,
) -> Result<Vec<Record>> {
    if let Expected::Names(names) = expected {
        for n in names {
            validate_node_name(n)?;
        }
    }
    loop {
        let records = match read_all(dir) {
            Ok(r) => r,
            Err(Error::Os { errno, .. }) if errno == libc::ENOENT => Vec::new(),
            Err(e) => return Err(e),
        };
        if let Some(v) = options.protocol_version
            && let Some(r) = records.iter().find(|r| r.protocol_version != v)
        {
            return Err(Error::invalid(
                "registry record",
                format!(
                    "{}: daemon {} speaks protocol version {}, this build speaks {v}",
                    record_path(dir, &r.node_name).display(),
                    r.node_name,
                    r.protocol_version
                ),
            ));
        }
        let (found, missing) = split(records, expected);
        if missing.is_empty() {
            return Ok(found);
        }
        let now = Instant::now();
        if now >= deadline {
            if options.allow_partial && !found.is_empty() {
                return Ok(found);
            }
            return Err(deadline_error(dir, expected, found.len(), &missing));
        }
        std::thread::sleep(options.poll_interval.min(deadline - now));
    }
}

/// Splits `records` into the wanted ones and the names still missing (for
/// `Count`, placeholders `<k more>`).
fn split(records: Vec<Record>, expected: &Expected) -> (Vec<Record>, Vec<String>) {
    match expected {
        Expected::Count(n) => {
            let missing = if records.len() >= *n {
                Vec::new()
            } else {
                vec![format!("{} unnamed daemon(s)", n - records.len())]
            };
            (records, missing)
        }
        Expected::Names(names) => {
            let mut by_name: HashMap<String, Record> = records
                .into_iter()
                .map(|r| (r.node_name.clone(), r))
                .collect();
            let mut found = Vec::with_capacity(names.len());
            let mut missing = Vec::new();
            for n in names {
                match by_name.remove(n) {
                    Some(r) => found.push(r),
                    None => missing.push(n.clone()),
                }
            }
            (found, missing)
        }
    }
}

fn deadline_error(dir: &Path, expected: &Expected, found: usize, missing: &[String]) -> Error {
    let total = match expected {
        Expected::Names(n) => n.len(),
        Expected::Count(n) => *n,
    };
    let mut listed: Vec<&str> = missing
        .iter()
        .take(MISSING_LISTED)
        .map(String::as_str)
        .collect();
    let more;
    if missing.len() > MISSING_LISTED {
        more = format!("and {} more", missing.len() - MISSING_LISTED);
        listed.push(&more);
    }
    Error::os(
        libc::ETIMEDOUT,
        "wait for daemon registration",
        format!(
            "{}: {found} of {total} expected daemons registered by the deadline; missing: {}",
            dir.display(),
            listed.join(", ")
        ),
    )
}

/// Records keyed by node id (a convenience for building a node table).
pub fn by_node_id(records: &[Record]) -> BTreeMap<u32, &Record> {
    records.iter().map(|r| (r.node_id, r)).collect()
}
