//! A call as its caller sees it: what to send ([`Call`]), what it is about
//! ([`Label`]), and what comes back ([`Outcome`], [`Answer`]).

use std::fmt;
use std::rc::Rc;

use crate::error::{Error, Result};
use crate::rpc::client::buf::Piece;
use crate::rpc::client::connect::Conn;
use crate::rpc::wire::{self, Attr, FileKind, Op, Request, Route};

thread_local! {
    /// The label of the calls without a path (ping, stats, shutdown), shared.
    static NO_PATH: Rc<str> = Rc::from("");
}

/// What a call is about, for errors: `write testfile.3 chunk 12`.
#[derive(Debug, Clone)]
pub struct Label {
    /// The operation.
    pub op: Op,
    /// The path (empty for ping, stats, shutdown).
    pub path: Rc<str>,
    /// The chunk of a write or read.
    pub chunk: Option<u64>,
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.op.name())?;
        if !self.path.is_empty() {
            write!(f, " {}", self.path)?;
        }
        if let Some(c) = self.chunk {
            write!(f, " chunk {c}")?;
        }
        Ok(())
    }
}

/// One RPC to issue.
#[derive(Debug)]
pub struct Call {
    /// Target node id.
    pub node: u32,
    /// What it is about.
    pub label: Label,
    /// Caller's token, returned in the [`Outcome`].
    pub tag: u64,
    pub(super) header: Vec<u8>,
    pub(super) payload: Option<Piece>,
    pub(super) dest: Option<Piece>,
    pub(super) bytes: u64,
}

impl Call {
    /// A call of `request` to `node` (on the client's channel there).
    pub fn new(conn: &Conn, node: u32, request: &Request<'_>, tag: u64) -> Result<Call> {
        let path = request.path();
        let label = if path.is_empty() {
            NO_PATH.with(Rc::clone)
        } else {
            Rc::from(path)
        };
        Call::labelled(conn, node, request, tag, label)
    }

    /// A call named by the file's path `path` (a data op carries the
    /// file's data object name; errors speak of the path the caller knows).
    pub fn named(
        conn: &Conn,
        node: u32,
        request: &Request<'_>,
        tag: u64,
        path: &Rc<str>,
    ) -> Result<Call> {
        Call::labelled(conn, node, request, tag, Rc::clone(path))
    }

    fn labelled(
        conn: &Conn,
        node: u32,
        request: &Request<'_>,
        tag: u64,
        path: Rc<str>,
    ) -> Result<Call> {
        let (channel, token) = conn
            .nodes
            .get(node as usize)
            .map_or((0, 0), |n| (n.channel, n.token));
        let mut header = Vec::with_capacity(wire::HEADER_LEN + 24 + request.path().len());
        wire::encode_request(
            &mut header,
            Route::new(0, node).on(channel).with_token(token),
            request,
        )?;
        let (chunk, bytes) = match *request {
            Request::Write { chunk, len, .. } | Request::Read { chunk, len, .. } => {
                (Some(chunk), len)
            }
            _ => (None, 0),
        };
        Ok(Call {
            node,
            label: Label {
                op: request.op(),
                path,
                chunk,
            },
            tag,
            header,
            payload: None,
            dest: None,
            bytes,
        })
    }

    /// The write data (its length must be the request's `len`).
    pub fn with_payload(mut self, piece: Piece) -> Call {
        self.payload = Some(piece);
        self
    }

    /// Where a read's data goes (at least the request's `len` bytes).
    pub fn with_dest(mut self, piece: Piece) -> Call {
        self.dest = Some(piece);
        self
    }

    pub(super) fn set_request_id(&mut self, id: u64) {
        if let Some(b) = self.header.get_mut(16..24) {
            b.copy_from_slice(&id.to_le_bytes());
        }
    }
}

/// A directory entry of a readdir answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Name (one component).
    pub name: String,
    /// File or directory.
    pub kind: FileKind,
    /// The entry's stable id (its [`Attr::ino`]).
    pub ino: u64,
    /// `st_mode`.
    pub mode: u32,
    /// Size in bytes (0: a readdir does not ask the data daemons).
    pub size: u64,
}

/// A successful reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// open / stat / mkdir / setattr / symlink.
    Attr(Attr),
    /// stat of a file's record whose data was never written (its size 0,
    /// no daemon holding any).
    NoData(Attr),
    /// readlink: the link's attributes and target.
    Link(Attr, String),
    /// create: the record, and whether this call made it.
    Created(Attr, bool),
    /// unlink: the id of the data to remove (0: none, a symbolic link);
    /// `linked`: the name was one of several, so the id's count is
    /// dropped instead.
    Id {
        /// The id.
        id: u64,
        /// One of several names.
        linked: bool,
        /// The file's data was never written: none to remove.
        no_data: bool,
    },
    /// link: what the inserted record replaced, as [`Answer::Id`], and
    /// whether a name was there at all (a replaced symbolic link has id
    /// 0 too).
    Replaced {
        /// The replaced file's id (0: none, or a symbolic link).
        id: u64,
        /// One of several names.
        linked: bool,
        /// A name was there and went.
        name: bool,
    },
    /// link_count: the count after the step, and the attributes the
    /// file's names share when its home keeps them.
    Count(u64, Option<wire::SharedAttr>),
    /// statfs.
    Statfs(wire::StatFsReply),
    /// write: bytes written.
    Written(u64),
    /// read: bytes received into the destination.
    Read(u64),
    /// readdir.
    Dir {
        /// Entries of this page.
        entries: Vec<Entry>,
        /// Where the next page starts.
        next_cursor: u64,
        /// No more pages.
        eof: bool,
    },
    /// stats: the JSON text.
    Json(String),
    /// ping: the daemon's clock.
    Ping(u64),
    /// fsync, truncate, shutdown, rmdir, check_parent.
    Done,
}

/// A finished call.
#[derive(Debug)]
pub struct Outcome {
    /// The call's tag.
    pub tag: u64,
    /// Its target node.
    pub node: u32,
    /// Its answer, or an [`Error::Rpc`].
    pub result: Result<Answer>,
}

impl Outcome {
    /// The errno of a failed call.
    pub fn errno(&self) -> Option<i32> {
        self.result.as_ref().err().and_then(Error::errno)
    }
}

/// Counters of one window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Calls finished (successfully or not).
    pub rpcs: u64,
    /// Calls that failed.
    pub failed: u64,
    /// Repetitions of calls.
    pub retries: u64,
    /// Issues that ran out of time.
    pub timeouts: u64,
    /// Replies for no outstanding call (after a timeout or retry).
    pub late_replies: u64,
    /// Replies whose header did not decode.
    pub bad_replies: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_operation() {
        let l = Label {
            op: Op::Write,
            path: Rc::from("testfile.3"),
            chunk: Some(12),
        };
        assert_eq!(l.to_string(), "write testfile.3 chunk 12");
        let l = Label {
            op: Op::Ping,
            path: Rc::from(""),
            chunk: None,
        };
        assert_eq!(l.to_string(), "ping");
    }
}
