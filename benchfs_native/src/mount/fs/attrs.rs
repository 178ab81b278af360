//! Setattr: the times the kernel sets, and the job (a truncate, a stat or
//! a change of attributes).

use fuser::{ReplyAttr, TimeOrNow};

use crate::mount::reply::Answer;
use crate::mount::shared::Shared;
use crate::rpc::client::{Client, SetAttr};

/// Sets what `set` names on node `ino` (on whichever of its paths answers).
pub(super) fn setattr(c: &mut Client, s: &Shared, ino: u64, set: SetAttr, reply: ReplyAttr) {
    // A size alone is a truncate, which every daemon supports;
    // nothing to change is a stat.
    let others = SetAttr { size: None, ..set };
    let r = s.on_paths(c, ino, |c, path| {
        match (set.size, others == SetAttr::default()) {
            (None, true) => c.stat(path),
            (Some(size), true) => c.truncate(path, size).and_then(|()| c.stat(path)),
            (_, false) => c.setattr(path, &set),
        }
    });
    reply.answer(r, |reply, (path, a)| {
        let mut attr = s.attr(&path, &a, false);
        attr.ino = ino;
        reply.attr(&s.attr_ttl, &attr);
    });
}

/// A time the kernel sets, in nanoseconds since the epoch ("now" is read
/// here, on the mount's clock).
pub(super) fn unix_ns(t: TimeOrNow) -> u64 {
    let at = match t {
        TimeOrNow::SpecificTime(t) => t,
        TimeOrNow::Now => std::time::SystemTime::now(),
    };
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
