//! Bytes to a request: the header's checks done, the op's fixed part read
//! in the order the encoder writes it, each field checked as it is read.

use super::rules::{LinkCountFault, check_link_count, check_target_payload, target_len_ok};
use super::{CountStep, Record, Request, RmdirStep};
use crate::error::Error;
use crate::rpc::wire::codec::{DecodeError, Reader};
use crate::rpc::wire::header::{Header, decode_header, var_str};
use crate::rpc::wire::op::{Op, PathRule};
use crate::rpc::wire::shared::read_shared;
use crate::rpc::wire::{
    FLAG_DATA, FLAG_DATASYNC, FLAG_ECHO, FLAG_EXCL, FLAG_FORCE, FLAG_LINKED, FLAG_PARENT_HERE,
    FLAG_STAMP_ONLY, FLAG_SUBDIR, FLAG_SYNC, HEADER_LEN, Limits, MAX_TARGET, SET_ALL,
};
use crate::storage::layout;

/// Decodes a request message (the active message header) checked against
/// `limits`. The returned request borrows its path from `buf`.
pub fn decode_request<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<(Header, Request<'a>), DecodeError> {
    let h = decode_header(buf, limits)?;
    Ok((h, decode_request_body(buf, &h, limits)?))
}

/// Decodes the body of a request whose header `h` was decoded from `buf`
/// already (the server reads the header first to check the channel).
pub fn decode_request_body<'a>(
    buf: &'a [u8],
    h: &Header,
    limits: &Limits,
) -> Result<Request<'a>, DecodeError> {
    let h = *h;
    if h.is_reply() {
        return Err(DecodeError::new(
            8,
            "flags",
            "expected a request, got a reply",
        ));
    }
    let op = h.op;
    let path = match op.request_path() {
        PathRule::None => "",
        rule => decode_path(buf, &h, rule)?,
    };
    let has = |flag: u16| h.flags & flag != 0;
    let mut r = Reader {
        buf,
        pos: HEADER_LEN,
    };
    let req = match op {
        Op::Ping => Request::Ping {
            len: h.payload_len,
            echo: has(FLAG_ECHO),
        },
        Op::Create => {
            let mode = r.u32("mode")?;
            let uid = r.u32("uid")?;
            let gid = r.u32("gid")?;
            let rdev = r.u32("rdev")?;
            Request::Create {
                path,
                mode,
                rdev,
                uid,
                gid,
                exclusive: has(FLAG_EXCL),
                parent_here: has(FLAG_PARENT_HERE),
            }
        }
        Op::Open => {
            let flags = r.u32("open_flags")?;
            r.zero::<4>("reserved")?;
            Request::Open { path, flags }
        }
        Op::Stat => Request::Stat {
            path,
            data: has(FLAG_DATA),
        },
        Op::Write => {
            let chunk = r.u64("chunk")?;
            let at = r.pos;
            let offset = r.u64("offset")?;
            if offset.checked_add(h.payload_len).is_none() {
                return Err(DecodeError::new(
                    at,
                    "offset",
                    "offset + payload_len overflows",
                ));
            }
            Request::Write {
                path,
                chunk,
                offset,
                len: h.payload_len,
                sync: has(FLAG_SYNC),
            }
        }
        Op::Read => {
            let chunk = r.u64("chunk")?;
            let offset = r.u64("offset")?;
            let at = r.pos;
            let len = r.u64("length")?;
            if len > limits.max_payload {
                return Err(DecodeError::new(
                    at,
                    "length",
                    format!("{len} bytes exceed the limit of {}", limits.max_payload),
                ));
            }
            if offset.checked_add(len).is_none() {
                return Err(DecodeError::new(at, "length", "offset + length overflows"));
            }
            Request::Read {
                path,
                chunk,
                offset,
                len,
            }
        }
        Op::Fsync => Request::Fsync {
            path,
            datasync: has(FLAG_DATASYNC),
        },
        Op::Truncate => Request::Truncate {
            path,
            size: r.u64("size")?,
        },
        Op::Unlink => Request::Unlink {
            path,
            ino: r.u64("ino")?,
            data: has(FLAG_DATA),
            parent_here: has(FLAG_PARENT_HERE),
        },
        Op::Readdir => {
            let cursor = r.u64("cursor")?;
            let at = r.pos;
            let max_entries = r.u32("max_entries")?;
            r.zero::<4>("reserved")?;
            if max_entries > limits.max_dir_entries {
                return Err(DecodeError::new(
                    at,
                    "max_entries",
                    format!(
                        "{max_entries} exceeds the limit of {}",
                        limits.max_dir_entries
                    ),
                ));
            }
            Request::Readdir {
                path,
                cursor,
                max_entries,
            }
        }
        Op::Stats => Request::Stats,
        Op::Statfs => Request::Statfs,
        Op::CheckParent => Request::CheckParent {
            path,
            subdir: has(FLAG_SUBDIR),
            stamp_only: has(FLAG_STAMP_ONLY),
        },
        Op::Readlink => Request::Readlink { path },
        Op::Shutdown => Request::Shutdown {
            force: has(FLAG_FORCE),
        },
        Op::Mkdir => {
            let (mode, uid, gid) = read_owner(&mut r)?;
            Request::Mkdir {
                path,
                mode,
                uid,
                gid,
                parent_here: has(FLAG_PARENT_HERE),
            }
        }
        Op::Rmdir => {
            let at = r.pos;
            let code = r.u32("step")?;
            let step = RmdirStep::from_code(code)
                .ok_or_else(|| DecodeError::new(at, "step", format!("unknown step {code}")))?;
            r.zero::<4>("reserved")?;
            Request::Rmdir {
                path,
                step,
                ino: r.u64("ino")?,
            }
        }
        Op::Link => {
            let ino = r.u64("ino")?;
            let at = r.pos;
            let mode = r.u32("mode")?;
            match mode & libc::S_IFMT {
                libc::S_IFREG | libc::S_IFIFO | libc::S_IFSOCK | libc::S_IFBLK | libc::S_IFCHR
                    if h.payload_len == 0 => {}
                libc::S_IFLNK if target_len_ok(h.payload_len) => {}
                libc::S_IFREG
                | libc::S_IFIFO
                | libc::S_IFSOCK
                | libc::S_IFBLK
                | libc::S_IFCHR
                | libc::S_IFLNK => {
                    return Err(DecodeError::new(
                        32,
                        "payload_len",
                        format!(
                            "{} target bytes for this mode (a file, FIFO, socket or device: 0, a link: 1 to {MAX_TARGET})",
                            h.payload_len
                        ),
                    ));
                }
                _ => {
                    return Err(DecodeError::new(
                        at,
                        "mode",
                        "not a regular file's, a FIFO's, a socket's, a device's or a symbolic link's mode",
                    ));
                }
            }
            let uid = r.u32("uid")?;
            let gid = r.u32("gid")?;
            let rdev = r.u32("rdev")?;
            let record = Record {
                ino,
                mode,
                rdev,
                uid,
                gid,
                atime_unix_ns: r.u64("atime_unix_ns")?,
                mtime_unix_ns: r.u64("mtime_unix_ns")?,
                ctime_unix_ns: r.u64("ctime_unix_ns")?,
            };
            Request::Link {
                path,
                record,
                target_len: h.payload_len,
                parent_here: has(FLAG_PARENT_HERE),
                exclusive: has(FLAG_EXCL),
                linked: has(FLAG_LINKED),
            }
        }
        Op::Setattr => {
            let at = r.pos;
            let mask = r.u32("mask")?;
            if mask & !SET_ALL != 0 {
                return Err(DecodeError::new(
                    at,
                    "mask",
                    format!("unknown bits {:#x}", mask & !SET_ALL),
                ));
            }
            let mode = r.u32("mode")?;
            let uid = r.u32("uid")?;
            let gid = r.u32("gid")?;
            let size = r.u64("size")?;
            let atime_unix_ns = r.u64("atime_unix_ns")?;
            let mtime_unix_ns = r.u64("mtime_unix_ns")?;
            r.zero::<8>("reserved")?;
            Request::Setattr {
                path,
                mask,
                mode,
                uid,
                gid,
                size,
                atime_unix_ns,
                mtime_unix_ns,
                data: has(FLAG_DATA),
            }
        }
        Op::Symlink => {
            let uid = r.u32("uid")?;
            let gid = r.u32("gid")?;
            check_target_payload(h.payload_len)?;
            Request::Symlink {
                path,
                uid,
                gid,
                len: h.payload_len,
                parent_here: has(FLAG_PARENT_HERE),
            }
        }
        Op::LinkCount => {
            let ino_at = r.pos;
            let ino = r.u64("ino")?;
            let at = r.pos;
            let code = r.u32("step")?;
            let step = CountStep::from_code(code)
                .ok_or_else(|| DecodeError::new(at, "step", format!("unknown step {code}")))?;
            let mask = r.u32("mask")?;
            let attr = read_shared(&mut r)?;
            if let Err(why) = check_link_count(step, path, ino, mask, &attr) {
                let (at, field) = match why {
                    LinkCountFault::Ino => (ino_at, "ino"),
                    LinkCountFault::Path => (HEADER_LEN + 56, "path"),
                    LinkCountFault::Mask => (HEADER_LEN + 12, "mask"),
                    LinkCountFault::Attr => (HEADER_LEN + 16, "attr"),
                };
                return Err(DecodeError::new(at, field, why.to_string()));
            }
            Request::LinkCount {
                path,
                ino,
                step,
                mask,
                attr,
            }
        }
    };
    Ok(req)
}

/// `mode, uid, gid` and a reserved word (create, mkdir).
fn read_owner(r: &mut Reader<'_>) -> Result<(u32, u32, u32), DecodeError> {
    let mode = r.u32("mode")?;
    let uid = r.u32("uid")?;
    let gid = r.u32("gid")?;
    r.zero::<4>("reserved")?;
    Ok((mode, uid, gid))
}

fn decode_path<'a>(buf: &'a [u8], h: &Header, rule: PathRule) -> Result<&'a str, DecodeError> {
    let at = HEADER_LEN + usize::from(h.fixed_len);
    let path = var_str(buf, h, "path")?;
    if rule == PathRule::Dir && path.is_empty() {
        return Ok(path);
    }
    match layout::validate(path) {
        Ok(()) => Ok(path),
        Err(Error::InvalidPath { reason, .. }) => Err(DecodeError::new(at, "path", reason)),
        Err(e) => Err(DecodeError::new(at, "path", e.to_string())),
    }
}
