//! The POSIX-like operations and where they go (the client part of the
//! contract, docs/NAMESPACE.md): create, open, stat and unlink to the
//! metadata owner of the path (a create then checks the parent on the
//! parent's owner); writes and reads split at chunk borders, each piece to
//! its chunk's owner (placement of the file id), up to `max_in_flight` at
//! once; a file's size, fsync, truncate and data removal to every daemon
//! (`ENOENT` of daemons that hold nothing of the file ignored); readdir
//! the union over every daemon of the entries whose parent is the
//! directory.
//!
//! * `create`: create, mknod, open (a record and a handle to it).
//! * `parent`: the parent's check after an insert, its stamp after a removal.
//! * `io`: write, read, fsync, close and detached files.
//! * `data`: a file's data on every daemon: stat, unlink, truncate.
//! * `data_marks`: the news of a file's data, told to its home.
//! * `readdir`: a directory's entries over every daemon.
//! * `daemons`: ping, stats and shutdown of the daemons themselves.

mod create;
mod daemons;
mod data;
mod data_marks;
mod io;
mod parent;
mod readdir;

use super::inflight::{Answer, Call, Outcome};
use super::{Client, OpenFile};
use crate::error::{Error, Result};
use crate::rpc::wire::Request;
pub(super) use data_marks::DataMarks;

/// Largest single read or write (the wire's payload limit).
pub const MAX_IO: usize = 1 << 30;

fn enoent(o: &Outcome) -> bool {
    o.errno() == Some(libc::ENOENT)
}

/// The name of the data object of file `id` on the data daemons.
pub(super) fn data_name(id: u64) -> String {
    format!("@{id:016x}")
}

/// Checks a path given by a caller ("" = the root when `root_ok`):
/// `ENAMETOOLONG` for a name over 255 bytes or a path of 4096 or more,
/// before any request is sent.
pub(super) fn check_path(op: &'static str, path: &str, root_ok: bool) -> Result<()> {
    if path.is_empty() && root_ok {
        return Ok(());
    }
    crate::storage::layout::validate(path)?;
    crate::namespace::check_name_lengths(path).map_err(|errno| {
        Error::os(
            errno,
            op,
            format!("{} ({} bytes)", shortened(path), path.len()),
        )
    })
}

/// The start of a long path, for an error message of one line.
fn shortened(path: &str) -> String {
    match path.char_indices().nth(64) {
        Some((i, _)) => format!("{}...", &path[..i]),
        None => path.to_owned(),
    }
}

pub(super) fn unexpected(what: &str, a: &Answer) -> Error {
    Error::os(
        libc::EBADMSG,
        "rpc",
        format!("{what}: unexpected answer {a:?}"),
    )
}

impl Client {
    pub(super) fn check_connected(&self, op: &'static str) -> Result<()> {
        if self.conn.is_closed() {
            return Err(Error::os(libc::ENOTCONN, op, "the client is disconnected"));
        }
        Ok(())
    }

    pub(super) fn file(&self, handle: u64, op: &'static str) -> Result<OpenFile> {
        self.files
            .get(&handle)
            .cloned()
            .ok_or_else(|| Error::os(libc::EBADF, op, format!("handle {handle}")))
    }

    /// One call, its answer.
    pub(super) fn call_one(&mut self, node: u32, request: &Request<'_>) -> Result<Answer> {
        let call = Call::new(&self.conn, node, request, 0)?;
        let mut out = self.window.run_all(&self.conn, vec![call], |_| false)?;
        match out.pop() {
            Some(o) => o.result,
            None => Err(Error::os(libc::EIO, "rpc", "no outcome")),
        }
    }
}
