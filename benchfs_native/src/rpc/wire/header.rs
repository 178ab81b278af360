//! The fixed 48-byte header every message starts with: decoding and
//! checking it, and writing it in front of a message.

use super::codec::{DecodeError, Reader, put_u16, put_u32, put_u64};
use super::op::{Op, PathRule};
use super::{FLAG_REPLY, HEADER_LEN, Limits, MAGIC, MAX_ERRNO, MAX_PATH, VERSION};

/// The fixed header, as decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Operation.
    pub op: Op,
    /// `FLAG_*` bits.
    pub flags: u16,
    /// Length of the op's fixed part.
    pub fixed_len: u16,
    /// Length of the variable part (path or error text).
    pub var_len: u16,
    /// The sender's channel on the receiving daemon (assigned at connect,
    /// docs/WIRE_PROTOCOL.md "Sessions"), echoed in the reply; 0: none.
    pub channel: u16,
    /// Chosen by the client, echoed in the reply.
    pub request_id: u64,
    /// Request: the target node id; reply: the replying node id.
    pub node: u32,
    /// 0, or a reply's positive errno.
    pub status: i32,
    /// Length of the active message's payload.
    pub payload_len: u64,
    /// Request: the channel's token from the accept (a request with
    /// another token is refused); reply: 0.
    pub token: u64,
}

impl Header {
    /// Whether the message is a reply.
    pub fn is_reply(&self) -> bool {
        self.flags & FLAG_REPLY != 0
    }

    /// Length of the whole encoded message (header, fixed and variable part).
    pub fn message_len(&self) -> usize {
        HEADER_LEN + usize::from(self.fixed_len) + usize::from(self.var_len)
    }

    /// Checks that the payload that arrived has the announced length.
    pub fn check_payload(&self, actual: usize) -> Result<(), DecodeError> {
        if actual as u64 != self.payload_len {
            return Err(DecodeError::new(
                32,
                "payload_len",
                format!(
                    "header announces {} payload bytes but {actual} arrived",
                    self.payload_len
                ),
            ));
        }
        Ok(())
    }
}

/// Where a message goes and which request it belongs to: the header
/// fields the caller chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Route {
    /// Chosen by the client, echoed in the reply.
    pub request_id: u64,
    /// Request: the target node id; reply: the replying node id.
    pub node: u32,
    /// The client's channel on the daemon (0: none).
    pub channel: u16,
    /// The channel's token (requests; 0 in replies).
    pub token: u64,
}

impl Route {
    /// Request `request_id` for (or reply from) `node`, on no channel.
    pub fn new(request_id: u64, node: u32) -> Route {
        Route {
            request_id,
            node,
            channel: 0,
            token: 0,
        }
    }

    /// The same route on `channel`.
    pub fn on(self, channel: u16) -> Route {
        Route { channel, ..self }
    }

    /// The same route with the channel's `token`.
    pub fn with_token(self, token: u64) -> Route {
        Route { token, ..self }
    }
}

impl From<&Header> for Route {
    fn from(h: &Header) -> Route {
        Route {
            request_id: h.request_id,
            node: h.node,
            channel: h.channel,
            token: h.token,
        }
    }
}

/// The header fields of a message being encoded, and its variable part.
pub(super) struct Frame<'s> {
    pub(super) op: Op,
    pub(super) flags: u16,
    pub(super) route: Route,
    pub(super) status: i32,
    pub(super) payload_len: u64,
    pub(super) var: &'s [u8],
}

/// Appends a header for `frame` whose fixed part `fixed` follows; the
/// variable part is appended after it.
pub(super) fn put_frame(out: &mut Vec<u8>, f: &Frame<'_>, fixed: &[u8]) {
    out.reserve(HEADER_LEN + fixed.len() + f.var.len());
    out.extend_from_slice(&MAGIC);
    put_u16(out, VERSION);
    out.push(f.op.code());
    out.push(0);
    put_u16(out, f.flags);
    // Both lengths are bounded by the callers (fixed <= FIXED_MAX, var <= MAX_PATH).
    put_u16(out, fixed.len() as u16);
    put_u16(out, f.var.len() as u16);
    put_u16(out, f.route.channel);
    put_u64(out, f.route.request_id);
    put_u32(out, f.route.node);
    out.extend_from_slice(&f.status.to_le_bytes());
    put_u64(out, f.payload_len);
    put_u64(out, f.route.token);
    out.extend_from_slice(fixed);
    out.extend_from_slice(f.var);
}

/// Decodes and checks the fixed header of `buf` against `limits`: magic,
/// version, op, reserved fields, flags, lengths, and that `buf` is exactly
/// as long as the header says. Use it to learn the request id (to answer
/// with an error) when the body does not decode.
pub fn decode_header(buf: &[u8], limits: &Limits) -> Result<Header, DecodeError> {
    if buf.len() < HEADER_LEN {
        return Err(DecodeError::new(
            buf.len(),
            "header",
            format!(
                "truncated: the message has {} bytes, a header needs {HEADER_LEN}",
                buf.len()
            ),
        ));
    }
    let mut r = Reader { buf, pos: 0 };
    let magic: [u8; 4] = r.array("magic")?;
    if magic != MAGIC {
        return Err(DecodeError::new(
            0,
            "magic",
            format!("expected {MAGIC:02x?} (\"BFSW\"), got {magic:02x?}"),
        ));
    }
    let version = r.u16("version")?;
    if version != VERSION {
        return Err(DecodeError::new(
            4,
            "version",
            format!("version {version} is not supported (this build speaks {VERSION})"),
        ));
    }
    let code = r.u8("op")?;
    let op = Op::from_code(code)
        .ok_or_else(|| DecodeError::new(6, "op", format!("unknown op code {code}")))?;
    r.zero::<1>("reserved")?;
    let flags = r.u16("flags")?;
    let fixed_len = r.u16("fixed_len")?;
    let var_len = r.u16("var_len")?;
    let channel = r.u16("channel")?;
    let request_id = r.u64("request_id")?;
    let node = r.u32("node")?;
    let status = i32::from_le_bytes(r.array("status")?);
    let payload_len = r.u64("payload_len")?;
    let token = r.u64("token")?;
    let h = Header {
        op,
        flags,
        fixed_len,
        var_len,
        channel,
        request_id,
        node,
        status,
        payload_len,
        token,
    };

    let reply = h.is_reply();
    if !reply && status != 0 {
        return Err(DecodeError::new(
            28,
            "status",
            format!("a request must have status 0, got {status}"),
        ));
    }
    if reply && !(0..=MAX_ERRNO).contains(&status) {
        return Err(DecodeError::new(
            28,
            "status",
            format!("errno {status} is outside 0..={MAX_ERRNO}"),
        ));
    }
    let failed = reply && status != 0;
    let kind = if failed {
        "error reply"
    } else if reply {
        "reply"
    } else {
        "request"
    };
    let allowed = if failed {
        FLAG_REPLY
    } else if reply {
        FLAG_REPLY | op.reply_flags()
    } else {
        FLAG_REPLY | op.request_flags()
    };
    if flags & !allowed != 0 {
        return Err(DecodeError::new(
            8,
            "flags",
            format!(
                "flags {:#06x} not allowed for a {op} {kind}",
                flags & !allowed
            ),
        ));
    }
    let want_fixed = if failed {
        0
    } else if reply {
        op.reply_fixed_len()
    } else {
        op.request_fixed_len()
    };
    if usize::from(fixed_len) != want_fixed {
        return Err(DecodeError::new(
            10,
            "fixed_len",
            format!("a {op} {kind} has a {want_fixed}-byte fixed part, header says {fixed_len}"),
        ));
    }
    let var_allowed = if reply {
        failed
    } else {
        op.request_path() != PathRule::None
    };
    if !var_allowed && var_len != 0 {
        return Err(DecodeError::new(
            12,
            "var_len",
            format!("this {op} message has no variable part, header says {var_len} bytes"),
        ));
    }
    if usize::from(var_len) > limits.max_path.min(MAX_PATH) {
        return Err(DecodeError::new(
            12,
            "var_len",
            format!(
                "{var_len} bytes exceed the limit of {}",
                limits.max_path.min(MAX_PATH)
            ),
        ));
    }
    let payload_allowed = if reply {
        !failed && op.reply_payload()
    } else {
        op.request_payload()
    };
    if !payload_allowed && payload_len != 0 {
        return Err(DecodeError::new(
            32,
            "payload_len",
            format!("this {op} message has no payload, header says {payload_len} bytes"),
        ));
    }
    if payload_len > limits.max_payload {
        return Err(DecodeError::new(
            32,
            "payload_len",
            format!(
                "{payload_len} bytes exceed the limit of {}",
                limits.max_payload
            ),
        ));
    }
    let total = h.message_len();
    if buf.len() != total {
        return Err(DecodeError::new(
            buf.len().min(total),
            "message length",
            format!(
                "the header describes {total} bytes but the message has {}",
                buf.len()
            ),
        ));
    }
    Ok(h)
}

/// The variable part of `buf` (decoded header `h`) as text.
pub(super) fn var_str<'a>(
    buf: &'a [u8],
    h: &Header,
    field: &'static str,
) -> Result<&'a str, DecodeError> {
    let at = HEADER_LEN + usize::from(h.fixed_len);
    let bytes = buf.get(at..at + usize::from(h.var_len)).unwrap_or_default();
    std::str::from_utf8(bytes)
        .map_err(|e| DecodeError::new(at + e.valid_up_to(), field, "invalid UTF-8".to_owned()))
}
