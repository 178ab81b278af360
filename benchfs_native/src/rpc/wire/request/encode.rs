//! A request to bytes: its fields checked, then its fixed part written in
//! the order the decoder reads it.

use super::Request;
use super::rules::{check_link_count, target_len_ok};
use crate::error::{Error, Result};
use crate::rpc::wire::attr::FileKind;
use crate::rpc::wire::codec::Writer;
use crate::rpc::wire::header::{Frame, Route, flag, put_frame};
use crate::rpc::wire::op::PathRule;
use crate::rpc::wire::shared::put_shared;
use crate::rpc::wire::{
    FIXED_MAX, FLAG_DATA, FLAG_DATASYNC, FLAG_ECHO, FLAG_EXCL, FLAG_FORCE, FLAG_LINKED,
    FLAG_PARENT_HERE, FLAG_STAMP_ONLY, FLAG_SUBDIR, FLAG_SYNC, MAX_PATH, MAX_TARGET, SET_ALL,
};
use crate::storage::layout;

/// Appends the encoding of `request` (routed by `route`) to `out` and
/// returns the number of bytes appended. The path is validated
/// (relative, no `.`/`..`/empty components, at most [`MAX_PATH`] bytes).
pub fn encode_request(out: &mut Vec<u8>, route: Route, request: &Request<'_>) -> Result<usize> {
    check(request)?;
    let op = request.op();
    let mut w = Writer::<FIXED_MAX>::new();
    let flags = write_fixed(request, &mut w);
    debug_assert_eq!(w.bytes().len(), op.request_fixed_len(), "{op}'s fixed part");
    let var = if op.request_path() == PathRule::None {
        &[][..]
    } else {
        request.path().as_bytes()
    };
    let frame = Frame {
        op,
        flags,
        route,
        status: 0,
        payload_len: request.payload_len(),
        var,
    };
    let before = out.len();
    put_frame(out, &frame, w.bytes());
    Ok(out.len() - before)
}

/// Writes the op's fixed part; returns its flags.
#[inline(always)]
fn write_fixed<const N: usize>(request: &Request<'_>, w: &mut Writer<N>) -> u16 {
    match *request {
        Request::Ping { echo, .. } => flag(echo, FLAG_ECHO),
        Request::Create {
            mode,
            rdev,
            uid,
            gid,
            exclusive,
            parent_here,
            ..
        } => {
            w.u32(mode);
            w.u32(uid);
            w.u32(gid);
            w.u32(rdev);
            flag(exclusive, FLAG_EXCL) | flag(parent_here, FLAG_PARENT_HERE)
        }
        Request::Open { flags, .. } => {
            w.u32(flags);
            w.zero::<4>();
            0
        }
        Request::Stat { data, .. } => flag(data, FLAG_DATA),
        Request::Write {
            chunk,
            offset,
            sync,
            ..
        } => {
            w.u64(chunk);
            w.u64(offset);
            flag(sync, FLAG_SYNC)
        }
        Request::Read {
            chunk, offset, len, ..
        } => {
            w.u64(chunk);
            w.u64(offset);
            w.u64(len);
            0
        }
        Request::Fsync { datasync, .. } => flag(datasync, FLAG_DATASYNC),
        Request::Truncate { size, .. } => {
            w.u64(size);
            0
        }
        Request::Unlink {
            ino,
            data,
            parent_here,
            ..
        } => {
            w.u64(ino);
            flag(data, FLAG_DATA) | flag(parent_here, FLAG_PARENT_HERE)
        }
        Request::Readdir {
            cursor,
            max_entries,
            ..
        } => {
            w.u64(cursor);
            w.u32(max_entries);
            w.zero::<4>();
            0
        }
        Request::Stats | Request::Statfs => 0,
        Request::CheckParent {
            subdir, stamp_only, ..
        } => flag(subdir, FLAG_SUBDIR) | flag(stamp_only, FLAG_STAMP_ONLY),
        Request::Readlink { .. } => 0,
        Request::Shutdown { force } => flag(force, FLAG_FORCE),
        Request::Mkdir {
            mode,
            uid,
            gid,
            parent_here,
            ..
        } => {
            put_owner(w, mode, uid, gid);
            flag(parent_here, FLAG_PARENT_HERE)
        }
        Request::Rmdir { step, ino, .. } => {
            w.u32(step.code());
            w.zero::<4>();
            w.u64(ino);
            0
        }
        Request::Link {
            record: r,
            parent_here,
            exclusive,
            linked,
            ..
        } => {
            w.u64(r.ino);
            w.u32(r.mode);
            w.u32(r.uid);
            w.u32(r.gid);
            w.u32(r.rdev);
            w.u64(r.atime_unix_ns);
            w.u64(r.mtime_unix_ns);
            w.u64(r.ctime_unix_ns);
            flag(parent_here, FLAG_PARENT_HERE)
                | flag(exclusive, FLAG_EXCL)
                | flag(linked, FLAG_LINKED)
        }
        Request::Setattr {
            mask,
            mode,
            uid,
            gid,
            size,
            atime_unix_ns,
            mtime_unix_ns,
            data,
            ..
        } => {
            w.u32(mask);
            w.u32(mode);
            w.u32(uid);
            w.u32(gid);
            w.u64(size);
            w.u64(atime_unix_ns);
            w.u64(mtime_unix_ns);
            w.zero::<8>();
            flag(data, FLAG_DATA)
        }
        Request::Symlink {
            uid,
            gid,
            parent_here,
            ..
        } => {
            w.u32(uid);
            w.u32(gid);
            flag(parent_here, FLAG_PARENT_HERE)
        }
        Request::LinkCount {
            ino,
            step,
            mask,
            attr,
            ..
        } => {
            w.u64(ino);
            w.u32(step.code());
            w.u32(mask);
            put_shared(w, &attr);
            0
        }
    }
}

/// `mode, uid, gid` and a reserved word (create, mkdir).
#[inline(always)]
fn put_owner<const N: usize>(w: &mut Writer<N>, mode: u32, uid: u32, gid: u32) {
    w.u32(mode);
    w.u32(uid);
    w.u32(gid);
    w.zero::<4>();
}

/// What the encoder refuses to write: a path that is not canonical, a
/// range that overflows, fields a decoder would reject.
fn check(request: &Request<'_>) -> Result<()> {
    let op = request.op();
    let path = request.path();
    match op.request_path() {
        PathRule::None => {}
        rule => check_path(path, rule)?,
    }
    match *request {
        Request::Write { offset, len, .. } | Request::Read { offset, len, .. }
            if offset.checked_add(len).is_none() =>
        {
            Err(Error::invalid(
                "offset",
                format!("{op} {path}: offset {offset} + length {len} overflows"),
            ))
        }
        Request::Symlink { len, .. } if !target_len_ok(len) => Err(Error::os(
            libc::ENAMETOOLONG,
            "encode rpc message",
            format!("symlink {path}: a target of {len} bytes (1 to {MAX_TARGET})"),
        )),
        Request::Link {
            record, target_len, ..
        } => {
            let t = record.mode & libc::S_IFMT;
            let nameless = matches!(
                t,
                libc::S_IFREG | libc::S_IFIFO | libc::S_IFSOCK | libc::S_IFBLK | libc::S_IFCHR
            );
            if nameless && target_len == 0 || t == libc::S_IFLNK && target_len_ok(target_len) {
                return Ok(());
            }
            Err(Error::invalid(
                "mode",
                format!(
                    "link {path}: a file, FIFO, socket or device record without a target or a link record with one, \
                     got a {} with {target_len} target bytes",
                    FileKind::of_mode(record.mode).name()
                ),
            ))
        }
        Request::Setattr { mask, .. } if mask & !SET_ALL != 0 => Err(Error::invalid(
            "mask",
            format!("setattr {path}: unknown bits {:#x}", mask & !SET_ALL),
        )),
        Request::LinkCount {
            ino,
            step,
            mask,
            attr,
            ..
        } => check_link_count(step, path, ino, mask, &attr).map_err(|why| {
            Error::invalid(
                "link_count",
                format!("link_count {step:?} of {ino:#x} (path {path:?}): {why}"),
            )
        }),
        _ => Ok(()),
    }
}

fn check_path(path: &str, rule: PathRule) -> Result<()> {
    if rule == PathRule::Dir && path.is_empty() {
        return Ok(());
    }
    layout::validate(path)?;
    if path.len() > MAX_PATH {
        return Err(Error::os(libc::ENAMETOOLONG, "encode rpc message", path));
    }
    Ok(())
}
