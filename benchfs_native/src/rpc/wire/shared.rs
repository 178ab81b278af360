//! The attributes every name of a hard-linked file shares, as link_count
//! carries them (an add's source attributes, a reply's the home's).

use super::codec::{DecodeError, Reader, Writer};

/// Length of an encoded [`SharedAttr`].
pub const SHARED_ATTR_LEN: usize = 40;

/// Mode, owner and times of a file with several names, kept by its home
/// daemon (docs/NAMESPACE.md, "Hard links").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SharedAttr {
    /// Permission bits (no type bits: the names' records have the kind).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Access time, ns since the Unix epoch.
    pub atime_unix_ns: u64,
    /// Modification time, ns since the Unix epoch.
    pub mtime_unix_ns: u64,
    /// Status change time, ns since the Unix epoch.
    pub ctime_unix_ns: u64,
}

/// Writes `a`.
#[inline(always)]
pub(super) fn put_shared<const N: usize>(w: &mut Writer<N>, a: &SharedAttr) {
    w.u32(a.mode);
    w.u32(a.uid);
    w.u32(a.gid);
    w.zero::<4>();
    w.u64(a.atime_unix_ns);
    w.u64(a.mtime_unix_ns);
    w.u64(a.ctime_unix_ns);
}

/// Reads a [`SharedAttr`]; a mode with more than permission bits is
/// refused.
pub(super) fn read_shared(r: &mut Reader<'_>) -> Result<SharedAttr, DecodeError> {
    let at = r.pos;
    let mode = r.u32("mode")?;
    if mode & !0o7777 != 0 {
        return Err(DecodeError::new(
            at,
            "mode",
            format!("{mode:#o} has more than permission bits"),
        ));
    }
    let uid = r.u32("uid")?;
    let gid = r.u32("gid")?;
    r.zero::<4>("reserved")?;
    Ok(SharedAttr {
        mode,
        uid,
        gid,
        atime_unix_ns: r.u64("atime_unix_ns")?,
        mtime_unix_ns: r.u64("mtime_unix_ns")?,
        ctime_unix_ns: r.u64("ctime_unix_ns")?,
    })
}
