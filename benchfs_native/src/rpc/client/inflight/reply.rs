//! A reply arriving: matched to its call by request id, decoded, and its
//! payload (read data, directory entries, the stats JSON, an echo)
//! received into the call's destination.

use std::time::Instant;

use benchfs_ucx::AmMessage;

use super::pending::{Failure, Got, Pending};
use super::{Answer, Entry, Window};
use crate::error::strerror;
use crate::rpc::client::buf::SharedBuf;
use crate::rpc::client::connect::Conn;
use crate::rpc::wire::{self, FileKind, Reply};

impl Window {
    pub(super) fn on_reply(&mut self, conn: &Conn, msg: AmMessage, now: Instant) {
        let Ok(h) = wire::decode_header(msg.header(), &self.limits) else {
            self.counters.bad_replies += 1;
            return;
        };
        let id = h.request_id;
        let Some(mut p) = self.active.remove(&id) else {
            self.counters.late_replies += 1;
            return;
        };
        if p.got.is_some() || !h.is_reply() {
            self.counters.late_replies += 1;
            self.active.insert(id, p);
            return;
        }
        let bad = |detail: String| Failure {
            errno: libc::EBADMSG,
            detail,
        };
        let reply = match wire::decode_reply_body(msg.header(), &h, &self.limits) {
            Ok(r) => r,
            Err(e) => return self.fail(conn, p, bad(format!("undecodable reply: {e}")), now),
        };
        let want = p.call.label.op;
        if reply.op() != want || h.node != p.call.node {
            let f = bad(format!(
                "a {} reply from node id {} to a {want} request for node id {}",
                reply.op(),
                h.node,
                p.call.node
            ));
            return self.fail(conn, p, f, now);
        }
        if let Err(e) = h.check_payload(msg.len()) {
            return self.fail(conn, p, bad(format!("reply payload: {e}")), now);
        }
        // The daemon has the request, so a send still pending is moot.
        if let Some(send) = p.send.take()
            && send.is_done()
            && let Ok(Err(e)) = send.try_take()
        {
            let f = Failure {
                errno: e.errno(),
                detail: format!("sending the request failed: {e}"),
            };
            return self.fail(conn, p, f, now);
        }
        p.sent.get_or_insert(now);
        let (got, payload_len) = match reply {
            Reply::Error { errno, message, .. } => {
                let detail = if message.is_empty() {
                    strerror(errno)
                } else {
                    message.to_owned()
                };
                return self.fail(conn, p, Failure { errno, detail }, now);
            }
            Reply::Read { len } => (Got::Read(len), len),
            Reply::Readdir {
                count,
                next_cursor,
                eof,
                entries_len,
            } => (
                Got::Dir {
                    count,
                    next_cursor,
                    eof,
                },
                entries_len,
            ),
            Reply::Stats { json_len } => (Got::Json, json_len),
            Reply::Ping {
                time_unix_ns,
                len: 0,
            } => {
                return self.finish(conn, p, Ok(Answer::Ping(time_unix_ns)), now);
            }
            Reply::Ping { time_unix_ns, len } => (Got::Ping(time_unix_ns), len),
            Reply::Create { attr, created } => {
                return self.finish(conn, p, Ok(Answer::Created(attr, created)), now);
            }
            Reply::Readlink { attr, len } => (Got::Link(attr), len),
            Reply::Stat {
                attr,
                no_data: true,
            } => {
                return self.finish(conn, p, Ok(Answer::NoData(attr)), now);
            }
            Reply::Open(a)
            | Reply::Stat { attr: a, .. }
            | Reply::Mkdir(a)
            | Reply::Setattr(a)
            | Reply::Symlink(a) => {
                return self.finish(conn, p, Ok(Answer::Attr(a)), now);
            }
            Reply::Unlink {
                ino: id,
                linked,
                no_data,
            } => {
                let answer = Answer::Id {
                    id,
                    linked,
                    no_data,
                };
                return self.finish(conn, p, Ok(answer), now);
            }
            Reply::Link {
                replaced: id,
                linked,
                name_replaced: name,
            } => {
                let answer = Answer::Replaced { id, linked, name };
                return self.finish(conn, p, Ok(answer), now);
            }
            Reply::LinkCount { count, attr } => {
                return self.finish(conn, p, Ok(Answer::Count(count, attr)), now);
            }
            Reply::Statfs(f) => {
                return self.finish(conn, p, Ok(Answer::Statfs(f)), now);
            }
            Reply::Write { written } => {
                return self.finish(conn, p, Ok(Answer::Written(written)), now);
            }
            Reply::Fsync
            | Reply::Truncate
            | Reply::Shutdown
            | Reply::Rmdir
            | Reply::CheckParent => {
                return self.finish(conn, p, Ok(Answer::Done), now);
            }
        };
        let Ok(len) = usize::try_from(payload_len) else {
            return self.fail(conn, p, bad(format!("{payload_len} payload bytes")), now);
        };
        let mut target = match got {
            Got::Read(_) => match p.call.dest.take() {
                Some(d) if d.len() >= len => d,
                Some(d) => {
                    let f = bad(format!("{len} bytes for a read of {}", d.len()));
                    return self.fail(conn, p, f, now);
                }
                None => return self.fail(conn, p, bad("a read without a buffer".into()), now),
            },
            Got::Ping(_) if p.call.dest.as_ref().is_some_and(|d| d.len() >= len) => {
                match p.call.dest.take() {
                    Some(d) => d,
                    None => return self.fail(conn, p, bad("an echo without a buffer".into()), now),
                }
            }
            _ => {
                let mut scratch = SharedBuf::zeroed(len);
                let piece = scratch.piece(0, len);
                p.scratch = Some(scratch);
                piece
            }
        };
        p.got = Some(got);
        if let Some(copied) = msg.copy_into(&mut target) {
            // Eager: the bytes are here, with no request to wait for.
            drop(target);
            return match copied {
                Ok(n) => self.payload_arrived(conn, p, n as u64, now),
                Err(e) => {
                    let f = Failure {
                        errno: e.errno(),
                        detail: format!("receiving the reply's data failed: {e}"),
                    };
                    self.fail(conn, p, f, now)
                }
            };
        }
        match msg.recv_into(target) {
            Ok(req) => {
                p.recv = Some(req);
                if p.io_done() {
                    self.on_payload(conn, p, now);
                } else {
                    self.active.insert(id, p);
                }
            }
            Err(e) => {
                let f = Failure {
                    errno: e.errno(),
                    detail: format!("receiving the reply's data failed: {e}"),
                };
                self.fail(conn, p, f, now);
            }
        }
    }

    /// The payload of a reply has arrived (or failed).
    pub(super) fn on_payload(&mut self, conn: &Conn, mut p: Pending, now: Instant) {
        let Some(req) = p.recv.take() else {
            return self.fail(
                conn,
                p,
                Failure {
                    errno: libc::EIO,
                    detail: "no payload receive".into(),
                },
                now,
            );
        };
        let received = req.received_len() as u64;
        match req.try_take() {
            Ok(Ok(piece)) => drop(piece),
            Ok(Err(e)) => {
                let f = Failure {
                    errno: e.errno(),
                    detail: format!("receiving the reply's data failed: {e}"),
                };
                return self.fail(conn, p, f, now);
            }
            Err(still) => {
                p.recv = Some(still);
                let id = self.next_id;
                self.next_id += 1;
                self.active.insert(id, p);
                return;
            }
        }
        self.payload_arrived(conn, p, received, now);
    }

    /// `received` bytes of the reply's payload are in the call's
    /// destination (or its scratch buffer), and no piece of it is left.
    fn payload_arrived(&mut self, conn: &Conn, mut p: Pending, received: u64, now: Instant) {
        let bad = |detail: String| Failure {
            errno: libc::EBADMSG,
            detail,
        };
        let bytes = p
            .scratch
            .take()
            .and_then(|s| s.to_vec())
            .unwrap_or_default();
        let answer = match p.got.take() {
            Some(Got::Read(len)) => {
                if received < len {
                    let f = bad(format!("{received} of {len} bytes arrived"));
                    return self.fail(conn, p, f, now);
                }
                Answer::Read(len)
            }
            Some(Got::Dir {
                count,
                next_cursor,
                eof,
            }) => match wire::decode_dir_entries(&bytes, count, &self.limits) {
                Ok(list) => Answer::Dir {
                    entries: list
                        .iter()
                        .map(|e| Entry {
                            name: e.name.to_owned(),
                            kind: FileKind::of_mode(e.mode),
                            ino: e.ino,
                            mode: e.mode,
                            size: 0,
                        })
                        .collect(),
                    next_cursor,
                    eof,
                },
                Err(e) => return self.fail(conn, p, bad(format!("readdir entries: {e}")), now),
            },
            Some(Got::Ping(t)) => Answer::Ping(t),
            Some(Got::Link(attr)) => match String::from_utf8(bytes) {
                Ok(s) if received == s.len() as u64 && wire::check_target(&s).is_ok() => {
                    Answer::Link(attr, s)
                }
                _ => return self.fail(conn, p, bad("a link target that is not one".into()), now),
            },
            Some(Got::Json) => match String::from_utf8(bytes) {
                Ok(s) => Answer::Json(s),
                Err(_) => return self.fail(conn, p, bad("stats JSON is not UTF-8".into()), now),
            },
            None => return self.fail(conn, p, bad("payload without a reply".into()), now),
        };
        self.finish(conn, p, Ok(answer), now);
    }
}
