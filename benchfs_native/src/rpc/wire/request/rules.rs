//! The rules a request's fields keep, which the encoder checks before it
//! writes and the decoder as it reads: a symbolic link target's length,
//! and what each link_count step carries.

use super::CountStep;
use crate::error::{Error, Result};
use crate::rpc::wire::codec::DecodeError;
use crate::rpc::wire::shared::SharedAttr;
use crate::rpc::wire::{MAX_TARGET, SET_ALL};

/// Checks a symbolic link's target: not empty (`ENOENT`, as
/// `symlink(2)`), at most [`MAX_TARGET`] bytes (`ENAMETOOLONG`), no NUL
/// (`EINVAL`). The target is kept as given: never resolved or normalized.
pub fn check_target(target: &str) -> Result<()> {
    let errno = if target.is_empty() {
        libc::ENOENT
    } else if target.len() > MAX_TARGET {
        libc::ENAMETOOLONG
    } else if target.contains('\0') {
        libc::EINVAL
    } else {
        return Ok(());
    };
    let shown: String = target.chars().take(64).collect();
    Err(Error::os(
        errno,
        "symlink target",
        format!(
            "{shown:?} ({} bytes, 1 to {MAX_TARGET}, no NUL)",
            target.len()
        ),
    ))
}

/// Whether `len` is a possible target length.
pub(in crate::rpc::wire) fn target_len_ok(len: u64) -> bool {
    (1..=MAX_TARGET as u64).contains(&len)
}

/// A decoder's check of the target length a header's `payload_len` gives.
pub(in crate::rpc::wire) fn check_target_payload(len: u64) -> std::result::Result<(), DecodeError> {
    if target_len_ok(len) {
        return Ok(());
    }
    Err(DecodeError::new(
        32,
        "payload_len",
        format!("a link target of {len} bytes (1 to {MAX_TARGET})"),
    ))
}

/// What makes a link_count request malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LinkCountFault {
    Ino,
    Path,
    Mask,
    Attr,
}

impl std::fmt::Display for LinkCountFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LinkCountFault::Ino => "a file id is never 0",
            LinkCountFault::Path => "a mark names a record, a count step none",
            LinkCountFault::Mask => "only a set has a mask, of SET_* bits",
            LinkCountFault::Attr => {
                "attributes belong to an add, and a set's ctime is 0 (the home stamps it)"
            }
        })
    }
}

/// The rules of a link_count request, both ways: a non-zero id; a path
/// for a mark only; a mask (known bits) for a set only (an empty one:
/// the file's status changed, its ctime only, as a rename of a name);
/// attributes for an add or a set only, a set's without ctime.
pub(super) fn check_link_count(
    step: CountStep,
    path: &str,
    ino: u64,
    mask: u32,
    attr: &SharedAttr,
) -> std::result::Result<(), LinkCountFault> {
    if ino == 0 {
        return Err(LinkCountFault::Ino);
    }
    if step.names_a_record() == path.is_empty() {
        return Err(LinkCountFault::Path);
    }
    let is_set = step == CountStep::Set;
    if (!is_set && mask != 0) || mask & !SET_ALL != 0 {
        return Err(LinkCountFault::Mask);
    }
    let attr_ok = match step {
        CountStep::Add => true,
        CountStep::Set => attr.ctime_unix_ns == 0,
        _ => *attr == SharedAttr::default(),
    };
    if !attr_ok {
        return Err(LinkCountFault::Attr);
    }
    Ok(())
}
