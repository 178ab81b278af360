//! The FUSE replies as one kind: each can carry an errno, and an engine
//! result answers one with its value or with its error's errno.

use fuser::{
    ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen,
    ReplyStatfs, ReplyWrite,
};
use libc::c_int;

use super::errno::errno_of;
use crate::error::Result;

/// A reply that can carry an errno.
pub(super) trait Answer: Sized {
    fn fail(self, errno: c_int);

    /// Answers with `ok` given the value of `result`, or with its error's errno.
    fn answer<T>(self, result: Result<T>, ok: impl FnOnce(Self, T)) {
        match result {
            Ok(value) => ok(self, value),
            Err(e) => self.fail(errno_of(&e)),
        }
    }
}

macro_rules! answer_by_error {
    ($($t:ty),*) => {$(
        impl Answer for $t {
            fn fail(self, errno: c_int) {
                self.error(errno);
            }
        }
    )*};
}
answer_by_error!(
    ReplyAttr,
    ReplyCreate,
    ReplyData,
    ReplyDirectory,
    ReplyEmpty,
    ReplyEntry,
    ReplyOpen,
    ReplyStatfs,
    ReplyWrite
);
