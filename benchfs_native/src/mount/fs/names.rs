//! The jobs of unlink and rename, which keep a file still open here under
//! a hidden name instead of removing it (`mount::unlinked`).

use fuser::ReplyEmpty;

use crate::mount::errno::errno_of;
use crate::mount::reply::Answer;
use crate::mount::shared::Shared;
use crate::rpc::client::Client;

/// Removes `path`, or hides it while it is open here.
pub(super) fn unlink(c: &mut Client, s: &Shared, path: String, reply: ReplyEmpty) {
    let mut unlinked = s.unlinked();
    let open = match s.open_only_name(c, &path) {
        Ok(open) => open,
        Err(e) => return reply.error(errno_of(&e)),
    };
    let r = match open {
        // Already hidden and still open: NFS answers EBUSY too.
        Some(ino) if unlinked.path(ino) == Some(path.as_str()) => {
            return reply.error(libc::EBUSY);
        }
        Some(ino) => s.hide(c, &mut unlinked, &path, ino),
        None => c.unlink(&path).map(|()| s.inodes().unlinked(&path)),
    };
    reply.answer(r, |reply, ()| reply.ok());
}

/// Renames `from` to `to` (`flags`: `RENAME_NOREPLACE` or none), a target
/// open here moved aside first.
pub(super) fn rename(
    c: &mut Client,
    s: &Shared,
    from: String,
    to: String,
    flags: u32,
    reply: ReplyEmpty,
) {
    if flags & libc::RENAME_NOREPLACE != 0 {
        match c.stat(&to) {
            Ok(_) => return reply.error(libc::EEXIST),
            Err(e) if e.errno() == Some(libc::ENOENT) => {}
            Err(e) => return reply.error(errno_of(&e)),
        }
    }
    // A target open here is moved aside first (not atomic: for
    // a moment `to` is absent, as with NFS).
    let mut unlinked = s.unlinked();
    let open = match s.open_only_name(c, &to) {
        Ok(open) => open,
        Err(e) if e.errno() == Some(libc::ENOENT) => None,
        Err(e) => return reply.error(errno_of(&e)),
    };
    let hidden = match open {
        Some(ino) if s.open_ino(&from) != Some(ino) => {
            if let Err(e) = s.hide(c, &mut unlinked, &to, ino) {
                return reply.error(errno_of(&e));
            }
            Some(ino)
        }
        _ => None,
    };
    match c.rename(&from, &to) {
        Ok(()) => {
            s.inodes().renamed(&from, &to);
            if let Some(ino) = s.inodes().known(&to) {
                unlinked.moved(ino, &to);
            }
            reply.ok();
        }
        Err(e) => {
            if let Some(ino) = hidden {
                s.unhide(c, &mut unlinked, &to, ino);
            }
            reply.error(errno_of(&e));
        }
    }
}
