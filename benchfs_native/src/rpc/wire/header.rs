//! The fixed 48-byte header every message starts with: decoding and
//! checking it, and writing it in front of a message.

use super::codec::DecodeError;
use super::op::{Op, PathRule};
use super::{FLAG_REPLY, HEADER_LEN, Limits, MAGIC, MAX_ERRNO, MAX_PATH, VERSION};

/// Where each field of the header starts (docs/WIRE_PROTOCOL.md, "Header").
mod at {
    pub(super) const MAGIC: usize = 0;
    pub(super) const VERSION: usize = 4;
    pub(super) const OP: usize = 6;
    pub(super) const RESERVED: usize = 7;
    pub(super) const FLAGS: usize = 8;
    pub(super) const FIXED_LEN: usize = 10;
    pub(super) const VAR_LEN: usize = 12;
    pub(super) const CHANNEL: usize = 14;
    pub(super) const REQUEST_ID: usize = 16;
    pub(super) const NODE: usize = 24;
    pub(super) const STATUS: usize = 28;
    pub(super) const PAYLOAD_LEN: usize = 32;
    pub(super) const TOKEN: usize = 40;
}

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
                at::PAYLOAD_LEN,
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
    // Both lengths are bounded by the callers (fixed <= FIXED_MAX, var <= MAX_PATH).
    let mut h = [0u8; HEADER_LEN];
    put_at(&mut h, at::MAGIC, &MAGIC);
    put_at(&mut h, at::VERSION, &VERSION.to_le_bytes());
    h[at::OP] = f.op.code();
    put_at(&mut h, at::FLAGS, &f.flags.to_le_bytes());
    put_at(&mut h, at::FIXED_LEN, &(fixed.len() as u16).to_le_bytes());
    put_at(&mut h, at::VAR_LEN, &(f.var.len() as u16).to_le_bytes());
    put_at(&mut h, at::CHANNEL, &f.route.channel.to_le_bytes());
    put_at(&mut h, at::REQUEST_ID, &f.route.request_id.to_le_bytes());
    put_at(&mut h, at::NODE, &f.route.node.to_le_bytes());
    put_at(&mut h, at::STATUS, &f.status.to_le_bytes());
    put_at(&mut h, at::PAYLOAD_LEN, &f.payload_len.to_le_bytes());
    put_at(&mut h, at::TOKEN, &f.route.token.to_le_bytes());
    out.reserve(HEADER_LEN + fixed.len() + f.var.len());
    out.extend_from_slice(&h);
    out.extend_from_slice(fixed);
    out.extend_from_slice(f.var);
}

/// Writes `bytes` into the header at `at` (offsets are constants: the
/// bounds checks fold away).
#[inline(always)]
fn put_at<const N: usize>(h: &mut [u8; HEADER_LEN], at: usize, bytes: &[u8; N]) {
    h[at..at + N].copy_from_slice(bytes);
}

/// The `N` bytes of the header at `at`.
#[inline(always)]
fn get_at<const N: usize>(h: &[u8; HEADER_LEN], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&h[at..at + N]);
    a
}

/// Decodes and checks the fixed header of `buf` against `limits`: magic,
/// version, op, reserved fields, flags, lengths, and that `buf` is exactly
/// as long as the header says. Use it to learn the request id (to answer
/// with an error) when the body does not decode.
pub fn decode_header(buf: &[u8], limits: &Limits) -> Result<Header, DecodeError> {
    // Every message is decoded here: with the length checked once, the
    // fields are read at fixed offsets, each without a check of its own.
    let Some(b) = buf.first_chunk::<HEADER_LEN>() else {
        return Err(DecodeError::new(
            buf.len(),
            "header",
            format!(
                "truncated: the message has {} bytes, a header needs {HEADER_LEN}",
                buf.len()
            ),
        ));
    };
    let magic: [u8; 4] = get_at(b, at::MAGIC);
    if magic != MAGIC {
        return Err(DecodeError::new(
            at::MAGIC,
            "magic",
            format!("expected {MAGIC:02x?} (\"BFSW\"), got {magic:02x?}"),
        ));
    }
    let version = u16::from_le_bytes(get_at(b, at::VERSION));
    if version != VERSION {
        return Err(DecodeError::new(
            at::VERSION,
            "version",
            format!("version {version} is not supported (this build speaks {VERSION})"),
        ));
    }
    let code = b[at::OP];
    let op = Op::from_code(code)
        .ok_or_else(|| DecodeError::new(at::OP, "op", format!("unknown op code {code}")))?;
    if b[at::RESERVED] != 0 {
        return Err(DecodeError::new(
            at::RESERVED,
            "reserved",
            "reserved field is not zero",
        ));
    }
    let flags = u16::from_le_bytes(get_at(b, at::FLAGS));
    let fixed_len = u16::from_le_bytes(get_at(b, at::FIXED_LEN));
    let var_len = u16::from_le_bytes(get_at(b, at::VAR_LEN));
    let channel = u16::from_le_bytes(get_at(b, at::CHANNEL));
    let request_id = u64::from_le_bytes(get_at(b, at::REQUEST_ID));
    let node = u32::from_le_bytes(get_at(b, at::NODE));
    let status = i32::from_le_bytes(get_at(b, at::STATUS));
    let payload_len = u64::from_le_bytes(get_at(b, at::PAYLOAD_LEN));
    let token = u64::from_le_bytes(get_at(b, at::TOKEN));
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
            at::STATUS,
            "status",
            format!("a request must have status 0, got {status}"),
        ));
    }
    if reply && !(0..=MAX_ERRNO).contains(&status) {
        return Err(DecodeError::new(
            at::STATUS,
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
            at::FLAGS,
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
            at::FIXED_LEN,
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
            at::VAR_LEN,
            "var_len",
            format!("this {op} message has no variable part, header says {var_len} bytes"),
        ));
    }
    if usize::from(var_len) > limits.max_path.min(MAX_PATH) {
        return Err(DecodeError::new(
            at::VAR_LEN,
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
            at::PAYLOAD_LEN,
            "payload_len",
            format!("this {op} message has no payload, header says {payload_len} bytes"),
        ));
    }
    if payload_len > limits.max_payload {
        return Err(DecodeError::new(
            at::PAYLOAD_LEN,
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

/// A header flag: `flag` when `on`, for the request and reply encoders.
#[inline(always)]
pub(super) fn flag(on: bool, flag: u16) -> u16 {
    if on { flag } else { 0 }
}
