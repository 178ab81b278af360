//! The parent's part of a change of one of its names: checked (and
//! stamped) after an insert, stamped after a removal.

use crate::namespace::split_parent;

use crate::error::Result;
use crate::rpc::client::Client;
use crate::rpc::wire::Request;

impl Client {
    /// Whether `path`'s metadata owner also owns its parent (the root's
    /// owner for a top-level name); then it checks the parent itself and
    /// stamps its times, with the insert: `FLAG_PARENT_HERE`.
    pub(in crate::rpc::client) fn parent_here(&self, path: &str) -> bool {
        let (parent, _) = split_parent(path);
        self.placement.metadata_owner(parent) == self.placement.metadata_owner(path)
    }

    /// Succeeds if `path`'s parent takes new entries (`ENOENT` missing or
    /// being removed, `ENOTDIR` a file), and stamps its mtime and ctime
    /// (`subdir`: one subdirectory more): the step after an insert.
    pub(in crate::rpc::client) fn check_parent(&mut self, path: &str, subdir: bool) -> Result<()> {
        if self.parent_here(path) {
            return Ok(());
        }
        let (parent, _) = split_parent(path);
        let owner = self.placement.metadata_owner(parent);
        let req = Request::CheckParent {
            path: parent,
            subdir,
            stamp_only: false,
        };
        self.call_one(owner, &req).map(drop)
    }

    /// Stamps the mtime and ctime of `path`'s parent after its entry went
    /// or was replaced (`subdir`: a directory went, one subdirectory
    /// less). Best effort: the removal is done whatever this answers (a
    /// parent removed meanwhile, a daemon gone).
    pub(in crate::rpc::client) fn parent_changed(&mut self, path: &str, subdir: bool) {
        let (parent, _) = split_parent(path);
        let owner = self.placement.metadata_owner(parent);
        let req = Request::CheckParent {
            path: parent,
            subdir,
            stamp_only: true,
        };
        let _ = self.call_one(owner, &req);
    }

    /// [`Self::check_parent`] after this call inserted `path`'s record on
    /// `owner`: if the parent does not take it, `undo` removes the record
    /// again and the check's error is returned. A mkdir's undo (an rmdir
    /// step) makes the check count a subdirectory.
    pub(in crate::rpc::client) fn check_parent_or_undo(
        &mut self,
        owner: u32,
        path: &str,
        undo: &Request<'_>,
    ) -> Result<()> {
        let subdir = matches!(undo, Request::Rmdir { .. });
        let checked = self.check_parent(path, subdir);
        if checked.is_err() {
            let _ = self.call_one(owner, undo);
        }
        checked
    }
}
