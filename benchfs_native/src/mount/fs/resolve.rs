//! A request's node ids, names and handles to paths and open files (on
//! the session thread, before any job is served).

use std::ffi::OsStr;
use std::sync::Arc;

use fuser::ReplyEmpty;

use super::BenchFs;
use crate::error::Result;
use crate::mount::reply::Answer;
use crate::mount::unlinked::refuse_hidden;
use crate::rpc::client::{Client, FileRef};

impl BenchFs {
    /// The open file of FUSE handle `fh`.
    pub(super) fn file<R: Answer>(&self, fh: u64, reply: R) -> Option<(Arc<FileRef>, R)> {
        match self.shared.files().get(&fh) {
            Some(f) => Some((Arc::clone(f), reply)),
            None => {
                reply.fail(libc::EBADF);
                None
            }
        }
    }

    pub(super) fn path<R: Answer>(&self, ino: u64, reply: R) -> Option<(String, R)> {
        match self.shared.inodes().path(ino) {
            Some(p) => Some((p, reply)),
            None => {
                reply.fail(libc::ENOENT);
                None
            }
        }
    }

    /// Removes the entry `name` of `parent` with `remove` (unlink or rmdir)
    /// and forgets its path.
    pub(super) fn remove_child(
        &mut self,
        parent: u64,
        name: &OsStr,
        reply: ReplyEmpty,
        remove: fn(&mut Client, &str) -> Result<()>,
    ) {
        let Some((path, reply)) = self.child(parent, name, reply) else {
            return;
        };
        self.serve(move |c, s| {
            reply.answer(remove(c, &path), |reply, ()| {
                s.inodes().unlinked(&path);
                reply.ok();
            });
        });
    }

    pub(super) fn child<R: Answer>(
        &self,
        parent: u64,
        name: &OsStr,
        reply: R,
    ) -> Option<(String, R)> {
        match self.shared.inodes().child(parent, name) {
            Ok(p) => Some((p, reply)),
            Err(e) => {
                reply.fail(e);
                None
            }
        }
    }

    /// [`Self::child`] for an entry a request makes: never a hidden name.
    pub(super) fn new_child<R: Answer>(
        &self,
        parent: u64,
        name: &OsStr,
        reply: R,
    ) -> Option<(String, R)> {
        let (path, reply) = self.child(parent, name, reply)?;
        match refuse_hidden(&path) {
            Ok(()) => Some((path, reply)),
            Err(e) => {
                reply.fail(e);
                None
            }
        }
    }
}
