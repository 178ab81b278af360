//! Trace recording: one file per process and trace directory,
//! `<dir>/trace-<node>-<pid>.bftrace`.
//!
//! Each recording thread owns a [`TraceBuffer`]: `push` appends 48 bytes to
//! an in-memory block (no syscall, no lock, no atomic). A full block is
//! appended to the file with one `write` of whole records (the file is
//! `O_APPEND`, so blocks of several threads never interleave inside a
//! record); the rest is written when the buffer is flushed or dropped.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::format::{Header, RECORD_SIZE, Record};
use crate::error::{Error, Result};

/// Records per block: a full block is one 192 KiB `write`.
pub const BLOCK_RECORDS: usize = 4096;

/// Where and as whom to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceConfig {
    /// Directory of the trace files (created if missing).
    pub dir: PathBuf,
    /// Node name: letters, digits, `.`, `_`, `-` (it is part of the file name).
    pub node: String,
    /// Node id written into every record's `node` field.
    pub node_id: u16,
}

/// Checks that `node` can be part of a file name.
pub fn validate_node(node: &str) -> Result<()> {
    let ok = !node.is_empty()
        && node.len() <= 64
        && !node.starts_with('.')
        && node
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "node",
            format!("{node:?} must be 1..64 of [A-Za-z0-9._-], not starting with '.'"),
        ))
    }
}

/// One open trace file, shared by every recorder of the process that
/// writes to the same path.
#[derive(Debug)]
pub struct TraceFile {
    file: File,
    path: PathBuf,
    base: Instant,
    node_id: u16,
    records: AtomicU64,
    write_errors: AtomicU64,
}

impl TraceFile {
    /// Opens (once per process and path) the trace file for `cfg`, writing
    /// the header when the file is created. `process` names what records
    /// (`store`, `bench`, ...); the first opener's name is kept.
    pub fn open(cfg: &TraceConfig, process: &str) -> Result<Arc<TraceFile>> {
        validate_node(&cfg.node)?;
        static OPEN: OnceLock<Mutex<HashMap<PathBuf, Arc<TraceFile>>>> = OnceLock::new();
        let dir = cfg.dir.as_path();
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::from_io(&e, "create trace dir", lossy(dir)))?;
        let pid = std::process::id();
        let path = dir.join(format!("trace-{}-{pid}.bftrace", cfg.node));
        let mut open = OPEN
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = open.get(&path) {
            // Reuse it unless the file was deleted or replaced meanwhile.
            if same_file(&f.file, &path) {
                return Ok(Arc::clone(f));
            }
        }
        let err = |e: std::io::Error| Error::from_io(&e, "open trace", lossy(&path));
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(err)?;
        file.set_len(0).map_err(err)?;
        let base = Instant::now();
        let start_unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let header = Header {
            node: cfg.node.clone(),
            node_id: cfg.node_id,
            pid,
            process: process.to_owned(),
            start_unix_ns,
        };
        (&file).write_all(&header.preamble()).map_err(err)?;
        let tf = Arc::new(TraceFile {
            file,
            path: path.clone(),
            base,
            node_id: cfg.node_id,
            records: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
        });
        open.insert(path, Arc::clone(&tf));
        Ok(tf)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Node id of this file's records.
    pub fn node_id(&self) -> u16 {
        self.node_id
    }

    /// Records written to the file so far (buffers not yet flushed excluded).
    pub fn records_written(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    /// Blocks that could not be written (disk full, ...).
    pub fn write_errors(&self) -> u64 {
        self.write_errors.load(Ordering::Relaxed)
    }

    fn append(&self, block: &[u8]) {
        debug_assert_eq!(block.len() % RECORD_SIZE, 0);
        match (&self.file).write_all(block) {
            Ok(()) => {
                self.records
                    .fetch_add((block.len() / RECORD_SIZE) as u64, Ordering::Relaxed);
            }
            Err(_) => {
                self.write_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

fn lossy(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// A thread's record buffer for one [`TraceFile`].
#[derive(Debug)]
pub struct TraceBuffer {
    file: Arc<TraceFile>,
    buf: Vec<[u8; RECORD_SIZE]>,
}

impl TraceBuffer {
    /// A new empty buffer for `file`.
    pub fn new(file: Arc<TraceFile>) -> TraceBuffer {
        TraceBuffer {
            file,
            buf: Vec::with_capacity(BLOCK_RECORDS),
        }
    }

    /// The file's node id.
    #[inline]
    pub fn node_id(&self) -> u16 {
        self.file.node_id
    }

    /// `t` as ns since the file's start.
    #[inline]
    pub fn t_ns(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.file.base).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Appends a record; writes the block when it is full.
    #[inline]
    pub fn push(&mut self, rec: &Record) {
        self.buf.push(rec.encode());
        if self.buf.len() >= BLOCK_RECORDS {
            self.flush();
        }
    }

    /// Writes the buffered records to the file.
    pub fn flush(&mut self) {
        if !self.buf.is_empty() {
            self.file.append(self.buf.as_flattened());
            self.buf.clear();
        }
    }

    /// The file this buffer writes to.
    pub fn file(&self) -> &Arc<TraceFile> {
        &self.file
    }
}

impl Drop for TraceBuffer {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::parse;

    #[test]
    fn node_names() {
        assert!(validate_node("node03").is_ok());
        assert!(validate_node("a.b_c-d").is_ok());
        for bad in ["", "a/b", "..", ".x", "a b", "x\0"] {
            assert!(validate_node(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn buffers_share_one_file_and_flush_whole_records() {
        let dir = std::env::temp_dir().join(format!("bftrace-unit-{}", std::process::id()));
        let cfg = TraceConfig {
            dir: dir.clone(),
            node: "unit".into(),
            node_id: 9,
        };
        let f1 = TraceFile::open(&cfg, "test").expect("open");
        let f2 = TraceFile::open(&cfg, "test").expect("open again");
        assert!(Arc::ptr_eq(&f1, &f2));
        let n = BLOCK_RECORDS + 10;
        {
            let mut a = TraceBuffer::new(f1);
            let mut b = TraceBuffer::new(f2);
            for i in 0..n as u64 {
                a.push(&Record {
                    t_ns: i,
                    kind: 1,
                    ..Record::default()
                });
                b.push(&Record {
                    t_ns: i,
                    kind: 2,
                    ..Record::default()
                });
            }
        }
        let bytes = std::fs::read(dir.join(format!("trace-unit-{}.bftrace", std::process::id())))
            .expect("read");
        let p = parse(&bytes).expect("parse");
        assert_eq!(p.records.len(), 2 * n);
        assert_eq!(p.records.iter().filter(|r| r.kind == 1).count(), n);
        assert!(p.header_json.contains("\"node_id\": 9"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
