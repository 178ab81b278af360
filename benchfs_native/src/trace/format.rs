//! Byte layout of a trace file (docs/TRACE_FORMAT.md, version 1).
//!
//! ```text
//! offset 0   8 bytes  magic  b"BFSTRACE"
//! offset 8   u32 LE   format version (1)
//! offset 12  u32 LE   header length H in bytes
//! offset 16  H bytes  header, UTF-8 JSON
//! offset 16+H         records, 48 bytes each, back to back
//! ```

use std::fmt::Write as _;

use crate::code_enum::code_enum;

/// File magic.
pub const MAGIC: &[u8; 8] = b"BFSTRACE";
/// Format version written by this code.
pub const VERSION: u32 = 1;
/// Size of one record in bytes.
pub const RECORD_SIZE: usize = 48;

code_enum! {
    /// Record kinds (key `kind`, names in the header's `kinds`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Kind: u8 {
        /// One completed io_uring operation: d0 latency_ns, d1 queue_ns, d2 offset.
        StorageOp = 1 => "storage_op",
        /// One `io_uring_enter` that submitted work: d0 sqes, d1 in_flight, d2 submit_ns.
        Submit = 2 => "submit",
        /// Reserved for the RPC client: d0 send_ns, d1 wait_ns, d2 total_ns.
        RpcClient = 3 => "rpc_client",
        /// Reserved for the RPC server: d0 queue_ns, d1 storage_ns, d2 reply_ns.
        RpcServer = 4 => "rpc_server",
        /// Datagrams from another user on a daemon's shared-memory wake-up
        /// sockets since the last such record: d0 datagrams, d1 sender_uid,
        /// d2 sender_pid (of the last one).
        ForeignSignal = 5 => "foreign_signal",
    }
}

code_enum! {
    /// Operation codes (key `op`, names in the header's `ops`; `none` is
    /// not listed there).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum OpCode: u8 {
        /// No operation (`submit` records).
        None = 0 => "none",
        /// Data write.
        Write = 1 => "write",
        /// Data read.
        Read = 2 => "read",
        /// fsync.
        Fsync = 3 => "fsync",
        /// Remove a file.
        Remove = 4 => "remove",
        /// Stat a file.
        Stat = 5 => "stat",
        /// Truncate a file.
        Truncate = 6 => "truncate",
        /// RPC: create.
        Create = 7 => "create",
        /// RPC: lookup.
        Lookup = 8 => "lookup",
        /// RPC: unlink.
        Unlink = 9 => "unlink",
        /// RPC: readdir.
        Readdir = 10 => "readdir",
        /// RPC: ping.
        Ping = 11 => "ping",
        /// RPC: stats.
        Stats = 12 => "stats",
        /// RPC: shutdown.
        Shutdown = 13 => "shutdown",
        /// RPC: mkdir.
        Mkdir = 14 => "mkdir",
        /// RPC: a step of rmdir.
        Rmdir = 15 => "rmdir",
        /// RPC: check a parent directory.
        CheckParent = 16 => "check_parent",
        /// RPC: link a file record under a new name (rename).
        Link = 17 => "link",
        /// RPC: setattr.
        Setattr = 18 => "setattr",
        /// RPC: statfs.
        Statfs = 19 => "statfs",
        /// RPC: symlink.
        Symlink = 20 => "symlink",
        /// RPC: readlink.
        Readlink = 21 => "readlink",
        /// RPC: link_count.
        LinkCount = 22 => "link_count",
    }
}

impl Kind {
    /// What the record's columns d0, d1 and d2 hold.
    pub const fn columns(self) -> [&'static str; 3] {
        match self {
            Kind::StorageOp => ["latency_ns", "queue_ns", "offset"],
            Kind::Submit => ["sqes", "in_flight", "submit_ns"],
            Kind::RpcClient => ["send_ns", "wait_ns", "total_ns"],
            Kind::RpcServer => ["queue_ns", "storage_ns", "reply_ns"],
            Kind::ForeignSignal => ["datagrams", "sender_uid", "sender_pid"],
        }
    }
}

/// The header's `kinds` table, in the documented order.
pub const KINDS: [(u8, &str, [&str; 3]); Kind::ALL.len()] = {
    let mut table = [(0, "", [""; 3]); Kind::ALL.len()];
    let mut i = 0;
    while i < table.len() {
        let kind = Kind::ALL[i];
        table[i] = (kind.code(), kind.name(), kind.columns());
        i += 1;
    }
    table
};

/// The header's `ops` table: every op but `none`.
pub const OPS: [(u8, &str); OpCode::ALL.len() - 1] = {
    let mut table = [(0, ""); OpCode::ALL.len() - 1];
    let mut i = 0;
    while i < table.len() {
        let op = OpCode::ALL[i + 1];
        table[i] = (op.code(), op.name());
        i += 1;
    }
    table
};

/// One 48-byte record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record {
    /// Event time, ns since the header's `start_unix_ns` (monotonic clock).
    pub t_ns: u64,
    /// [`Kind`] as u8.
    pub kind: u8,
    /// [`OpCode`] as u8 (0 for `submit`).
    pub op: u8,
    /// Node id (meaning per kind).
    pub node: u16,
    /// 0 on success, else the errno.
    pub status: i16,
    /// RPC retries; 0 otherwise.
    pub retries: u16,
    /// Payload bytes moved.
    pub bytes: u64,
    /// Per-kind column 0.
    pub d0: u64,
    /// Per-kind column 1.
    pub d1: u64,
    /// Per-kind column 2.
    pub d2: u64,
}

impl Record {
    /// The record's little-endian bytes.
    #[inline]
    pub fn encode(&self) -> [u8; RECORD_SIZE] {
        let mut b = [0u8; RECORD_SIZE];
        b[0..8].copy_from_slice(&self.t_ns.to_le_bytes());
        b[8] = self.kind;
        b[9] = self.op;
        b[10..12].copy_from_slice(&self.node.to_le_bytes());
        b[12..14].copy_from_slice(&self.status.to_le_bytes());
        b[14..16].copy_from_slice(&self.retries.to_le_bytes());
        b[16..24].copy_from_slice(&self.bytes.to_le_bytes());
        b[24..32].copy_from_slice(&self.d0.to_le_bytes());
        b[32..40].copy_from_slice(&self.d1.to_le_bytes());
        b[40..48].copy_from_slice(&self.d2.to_le_bytes());
        b
    }

    /// Parses one record.
    pub fn decode(b: &[u8; RECORD_SIZE]) -> Record {
        let u64_at = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(x)
        };
        Record {
            t_ns: u64_at(0),
            kind: b[8],
            op: b[9],
            node: u16::from_le_bytes([b[10], b[11]]),
            status: i16::from_le_bytes([b[12], b[13]]),
            retries: u16::from_le_bytes([b[14], b[15]]),
            bytes: u64_at(16),
            d0: u64_at(24),
            d1: u64_at(32),
            d2: u64_at(40),
        }
    }
}

/// Status field for an errno (clamped into i16).
#[inline]
pub fn status_of(errno: i32) -> i16 {
    i16::try_from(errno).unwrap_or(i16::MAX)
}

/// The header fields that vary per file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Node name.
    pub node: String,
    /// Node id.
    pub node_id: u16,
    /// Process id.
    pub pid: u32,
    /// What kind of process recorded this (`store`, `bench`, ...).
    pub process: String,
    /// Wall-clock time of `t_ns == 0`.
    pub start_unix_ns: u64,
}

fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Header {
    /// The header as JSON (the documented keys, in the documented order).
    pub fn to_json(&self) -> String {
        let mut s = String::with_capacity(1024);
        s.push_str("{\"format\": \"benchfs-trace\", \"version\": ");
        let _ = write!(s, "{VERSION}, \"record_size\": {RECORD_SIZE}, \"node\": ");
        json_string(&mut s, &self.node);
        let _ = write!(
            s,
            ", \"node_id\": {}, \"pid\": {}, \"process\": ",
            self.node_id, self.pid
        );
        json_string(&mut s, &self.process);
        let _ = write!(
            s,
            ", \"start_unix_ns\": {}, \"clock\": \"monotonic, t_ns counts from start_unix_ns\"",
            self.start_unix_ns
        );
        s.push_str(", \"kinds\": {");
        for (i, (k, name, cols)) in KINDS.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            let _ = write!(
                s,
                "\"{k}\": {{\"name\": \"{name}\", \"d0\": \"{}\", \"d1\": \"{}\", \"d2\": \"{}\"}}",
                cols[0], cols[1], cols[2]
            );
        }
        s.push_str("}, \"ops\": {");
        for (i, (k, name)) in OPS.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "\"{k}\": \"{name}\"");
        }
        s.push_str("}}");
        s
    }

    /// Magic, version, header length and header: the file's first bytes.
    pub fn preamble(&self) -> Vec<u8> {
        let json = self.to_json();
        let mut out = Vec::with_capacity(16 + json.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        // A header is a few hundred bytes; it always fits in u32.
        let len = u32::try_from(json.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(json.as_bytes());
        out
    }
}

/// Why a byte string is not a trace file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than the fixed preamble or the announced header.
    Truncated,
    /// Wrong magic.
    BadMagic,
    /// A version this code does not read.
    Version(u32),
    /// The header is not UTF-8.
    HeaderNotUtf8,
    /// The records are not a whole number of records.
    PartialRecord(usize),
}

/// A parsed trace file: the header JSON text and the records.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The header, as JSON text.
    pub header_json: String,
    /// All records in file order.
    pub records: Vec<Record>,
}

/// Parses a whole trace file.
pub fn parse(bytes: &[u8]) -> Result<Parsed, ParseError> {
    if bytes.len() < 16 {
        return Err(ParseError::Truncated);
    }
    if &bytes[0..8] != MAGIC {
        return Err(ParseError::BadMagic);
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if version != VERSION {
        return Err(ParseError::Version(version));
    }
    let hlen = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
    let body = bytes.get(16..).ok_or(ParseError::Truncated)?;
    let header = body.get(..hlen).ok_or(ParseError::Truncated)?;
    let header_json = std::str::from_utf8(header)
        .map_err(|_| ParseError::HeaderNotUtf8)?
        .to_owned();
    let recs = &body[hlen..];
    if recs.len() % RECORD_SIZE != 0 {
        return Err(ParseError::PartialRecord(recs.len() % RECORD_SIZE));
    }
    let records = recs
        .chunks_exact(RECORD_SIZE)
        .filter_map(|c| <&[u8; RECORD_SIZE]>::try_from(c).ok())
        .map(Record::decode)
        .collect();
    Ok(Parsed {
        header_json,
        records,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trip() {
        let r = Record {
            t_ns: 123,
            kind: 1,
            op: 2,
            node: 7,
            status: -5,
            retries: 3,
            bytes: 4096,
            d0: 1,
            d1: u64::MAX,
            d2: 42,
        };
        assert_eq!(Record::decode(&r.encode()), r);
    }

    #[test]
    fn header_and_records_parse() {
        let h = Header {
            node: "node\"03".into(),
            node_id: 3,
            pid: 12,
            process: "bench".into(),
            start_unix_ns: 99,
        };
        let mut bytes = h.preamble();
        bytes.extend_from_slice(&Record::default().encode());
        let p = parse(&bytes).expect("parses");
        assert!(p.header_json.contains("\"node\": \"node\\\"03\""));
        assert!(p.header_json.contains("\"record_size\": 48"));
        assert_eq!(p.records.len(), 1);
        bytes.push(0);
        assert_eq!(parse(&bytes).err(), Some(ParseError::PartialRecord(1)));
    }

    #[test]
    fn header_tables_are_the_documented_ones() {
        let json = Header {
            node: "n".into(),
            node_id: 0,
            pid: 0,
            process: "store".into(),
            start_unix_ns: 0,
        }
        .to_json();
        let kinds = r#""kinds": {"1": {"name": "storage_op", "d0": "latency_ns", "d1": "queue_ns", "d2": "offset"}, "2": {"name": "submit", "d0": "sqes", "d1": "in_flight", "d2": "submit_ns"}, "3": {"name": "rpc_client", "d0": "send_ns", "d1": "wait_ns", "d2": "total_ns"}, "4": {"name": "rpc_server", "d0": "queue_ns", "d1": "storage_ns", "d2": "reply_ns"}, "5": {"name": "foreign_signal", "d0": "datagrams", "d1": "sender_uid", "d2": "sender_pid"}}"#;
        let ops = r#"{"1": "write", "2": "read", "3": "fsync", "4": "remove", "5": "stat", "6": "truncate", "7": "create", "8": "lookup", "9": "unlink", "10": "readdir", "11": "ping", "12": "stats", "13": "shutdown", "14": "mkdir", "15": "rmdir", "16": "check_parent", "17": "link", "18": "setattr", "19": "statfs", "20": "symlink", "21": "readlink", "22": "link_count"}}"#;
        assert!(
            json.ends_with(&format!("{kinds}, \"ops\": {ops}")),
            "{json}"
        );
        assert_eq!(OpCode::from_code(0), Some(OpCode::None));
        assert_eq!(OpCode::from_code(23), None);
        assert_eq!(Kind::from_code(0), None);
    }
}
