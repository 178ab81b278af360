//! Sessions: how a client and a daemon get endpoints to each other
//! (docs/WIRE_PROTOCOL.md, "Sessions").
//!
//! A UCX reply endpoint only lives for the duration of the receiving
//! handler, but a daemon answers after its storage finishes. So a client
//! first sends [`Session::Connect`] with its own worker address; the daemon
//! opens an endpoint back to it, gives it a *channel* (a small number the
//! client then puts in every request header) and answers
//! [`Session::Accept`] on that endpoint. [`Session::Disconnect`] frees the
//! channel.
//!
//! A connect is signed with the job's session key
//! ([`crate::rpc::session_key`]): an HMAC-SHA256 over the daemon's node
//! name and the whole message (its time and random nonce included, the tag
//! itself left out). The daemon refuses a connect without a valid tag, an
//! old or future one, or a nonce it has seen. The accept gives the client a
//! random 64-bit channel token, which every request and the disconnect carry.
//!
//! Active message ids used by the RPC layer are here too, so both sides
//! agree on them in one place.

use crate::rpc::session_key::{SessionKey, TAG_LEN};
use crate::rpc::wire::DecodeError;

/// Client to daemon: a wire request in the header, write data as payload.
pub const AM_REQUEST: u16 = 1;
/// Daemon to client: a wire reply in the header, read data as payload.
pub const AM_REPLY: u16 = 2;
/// Either way: a [`Session`] message in the header, no payload.
pub const AM_SESSION: u16 = 3;

/// First four bytes of a session message.
pub const MAGIC: [u8; 4] = *b"BFSS";
/// Session protocol version (follows the wire protocol's; 2: signed
/// connects and channel tokens).
pub const VERSION: u16 = 2;
/// Fixed bytes before the variable part.
pub const FIXED_LEN: usize = 32;
/// Longest client or node name.
pub const MAX_NAME: usize = 255;
/// Longest worker address accepted.
pub const MAX_ADDRESS: usize = 64 * 1024;
/// Bytes of a connect's nonce.
pub const NONCE_LEN: usize = 16;
/// Where a connect's nonce starts (after the fixed part).
const NONCE_AT: usize = FIXED_LEN;
/// Where a connect's tag starts (after the nonce).
const TAG_AT: usize = NONCE_AT + NONCE_LEN;
/// A connect's bytes between the fixed part and the names.
const CONNECT_AUTH_LEN: usize = NONCE_LEN + TAG_LEN;
/// What the tag of a connect covers first (a tag made for anything else
/// never verifies as one).
const CONNECT_DOMAIN: &[u8] = b"benchfs session connect v2\0";

/// A session message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session<'a> {
    /// Client to daemon: open a channel; answer to `address`.
    Connect {
        /// Chosen by the client (unique per client process), echoed.
        client_id: u64,
        /// For the daemon's log lines (e.g. `node03/rank12`).
        client_name: &'a str,
        /// The client's UCX worker address.
        address: &'a [u8],
        /// When the client sent it (ns since the Unix epoch).
        time_unix_ns: u64,
        /// Random, new for every connect (replays are refused).
        nonce: [u8; NONCE_LEN],
        /// HMAC-SHA256 with the session key ([`sign_connect`]); zeros
        /// when the client has no key.
        tag: [u8; TAG_LEN],
    },
    /// Daemon to client: the channel, or why there is none.
    Accept {
        /// The connecting client's id.
        client_id: u64,
        /// Channel to put in request headers (1..); 0 when refused.
        channel: u16,
        /// 0, or the errno of a refusal (`EACCES`: wrong or missing
        /// session key, `EBUSY`: no free channel, `ESHUTDOWN`: shutting
        /// down).
        status: i32,
        /// The daemon's placement id.
        node_id: u32,
        /// The daemon's chunk size: clients split I/O with it.
        chunk_size: u64,
        /// The daemon's node name.
        node_name: &'a str,
        /// The channel's token: every request on the channel carries it
        /// (0 when refused).
        token: u64,
    },
    /// Client to daemon: the channel is no longer used.
    Disconnect {
        /// The client's id.
        client_id: u64,
        /// Its channel.
        channel: u16,
        /// The channel's token from the accept.
        token: u64,
    },
}

const KIND_CONNECT: u8 = 1;
const KIND_ACCEPT: u8 = 2;
const KIND_DISCONNECT: u8 = 3;

/// Encodes `msg`. Names longer than [`MAX_NAME`] bytes are cut on a
/// character boundary.
pub fn encode(msg: &Session<'_>) -> Vec<u8> {
    let mut fixed = [0u8; FIXED_LEN];
    fixed[0..4].copy_from_slice(&MAGIC);
    fixed[4..6].copy_from_slice(&VERSION.to_le_bytes());
    let mut auth = [0u8; CONNECT_AUTH_LEN];
    let mut accept_head = [0u8; 12];
    let (kind, var): (u8, [&[u8]; 3]) = match *msg {
        Session::Connect {
            client_id,
            client_name,
            address,
            time_unix_ns,
            nonce,
            tag,
        } => {
            let name = cut(client_name);
            fixed[8..16].copy_from_slice(&client_id.to_le_bytes());
            fixed[16..18].copy_from_slice(&(name.len() as u16).to_le_bytes());
            fixed[20..24].copy_from_slice(&(address.len() as u32).to_le_bytes());
            fixed[24..32].copy_from_slice(&time_unix_ns.to_le_bytes());
            auth[..NONCE_LEN].copy_from_slice(&nonce);
            auth[NONCE_LEN..].copy_from_slice(&tag);
            (KIND_CONNECT, [&auth, name.as_bytes(), address])
        }
        Session::Accept {
            client_id,
            channel,
            status,
            node_id,
            chunk_size,
            node_name,
            token,
        } => {
            let name = cut(node_name);
            fixed[8..16].copy_from_slice(&client_id.to_le_bytes());
            fixed[16..18].copy_from_slice(&(name.len() as u16).to_le_bytes());
            fixed[18..20].copy_from_slice(&channel.to_le_bytes());
            fixed[20..24].copy_from_slice(&status.to_le_bytes());
            fixed[24..32].copy_from_slice(&chunk_size.to_le_bytes());
            // node_id and the token go after the fixed part.
            accept_head[..4].copy_from_slice(&node_id.to_le_bytes());
            accept_head[4..].copy_from_slice(&token.to_le_bytes());
            (KIND_ACCEPT, [&accept_head, name.as_bytes(), &[]])
        }
        Session::Disconnect {
            client_id,
            channel,
            token,
        } => {
            fixed[8..16].copy_from_slice(&client_id.to_le_bytes());
            fixed[18..20].copy_from_slice(&channel.to_le_bytes());
            fixed[24..32].copy_from_slice(&token.to_le_bytes());
            (KIND_DISCONNECT, [&[], &[], &[]])
        }
    };
    fixed[6] = kind;
    let mut out = Vec::with_capacity(FIXED_LEN + var.iter().map(|v| v.len()).sum::<usize>());
    out.extend_from_slice(&fixed);
    for v in var {
        out.extend_from_slice(v);
    }
    out
}

/// The parts of an encoded connect its tag covers, for the daemon named
/// `node_name`: everything but the tag itself.
fn connect_parts<'m>(msg: &'m [u8], node_name: &'m str) -> Option<[&'m [u8]; 5]> {
    Some([
        CONNECT_DOMAIN,
        node_name.as_bytes(),
        &[0],
        msg.get(..TAG_AT)?,
        msg.get(TAG_AT + TAG_LEN..)?,
    ])
}

/// Writes the tag of an encoded connect (`msg`, from [`encode`]) for the
/// daemon named `node_name`: a connect signed for one daemon is refused by
/// every other. Without a key the tag stays zero (and is refused).
pub fn sign_connect(msg: &mut [u8], key: Option<&SessionKey>, node_name: &str) {
    let Some(key) = key else { return };
    let tag = match connect_parts(msg, node_name) {
        Some(parts) => key.tag(&parts),
        None => return,
    };
    if let Some(slot) = msg.get_mut(TAG_AT..TAG_AT + TAG_LEN) {
        slot.copy_from_slice(&tag);
    }
}

/// Whether the encoded connect `msg` carries a valid tag for the daemon
/// named `node_name` (compared in constant time).
pub fn connect_tag_valid(msg: &[u8], key: &SessionKey, node_name: &str) -> bool {
    match (
        connect_parts(msg, node_name),
        msg.get(TAG_AT..TAG_AT + TAG_LEN),
    ) {
        (Some(parts), Some(tag)) => key.verify(&parts, tag),
        _ => false,
    }
}

fn cut(s: &str) -> &str {
    let mut end = s.len().min(MAX_NAME);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn name_at(b: &[u8], at: usize, len: usize) -> Result<&str, DecodeError> {
    if len > MAX_NAME {
        return Err(DecodeError::new(
            16,
            "name_len",
            format!("{len} > {MAX_NAME}"),
        ));
    }
    std::str::from_utf8(&b[at..at + len]).map_err(|_| DecodeError::new(at, "name", "not UTF-8"))
}

fn exact_len(b: &[u8], want: usize) -> Result<(), DecodeError> {
    if b.len() == want {
        Ok(())
    } else {
        Err(DecodeError::new(
            b.len().min(want),
            "length",
            format!("the message has {} bytes, its fields say {want}", b.len()),
        ))
    }
}

/// Decodes a session message. Never panics; every failure names the field
/// and its offset.
pub fn decode(b: &[u8]) -> Result<Session<'_>, DecodeError> {
    if b.len() < FIXED_LEN {
        return Err(DecodeError::new(
            b.len(),
            "header",
            format!("truncated: {} bytes, at least {FIXED_LEN} needed", b.len()),
        ));
    }
    if b[0..4] != MAGIC {
        return Err(DecodeError::new(0, "magic", "not a session message"));
    }
    let version = u16_at(b, 4);
    if version != VERSION {
        return Err(DecodeError::new(
            4,
            "version",
            format!("session version {version} is not supported (this build speaks {VERSION})"),
        ));
    }
    if b[7] != 0 {
        return Err(DecodeError::new(
            7,
            "reserved",
            "reserved field is not zero",
        ));
    }
    let client_id = u64_at(b, 8);
    let name_len = usize::from(u16_at(b, 16));
    match b[6] {
        KIND_CONNECT => {
            let addr_len = u32_at(b, 20) as usize;
            if addr_len == 0 || addr_len > MAX_ADDRESS {
                return Err(DecodeError::new(
                    20,
                    "address_len",
                    format!("{addr_len} is outside 1..={MAX_ADDRESS}"),
                ));
            }
            if u16_at(b, 18) != 0 {
                return Err(DecodeError::new(
                    18,
                    "reserved",
                    "reserved field is not zero",
                ));
            }
            exact_len(b, FIXED_LEN + CONNECT_AUTH_LEN + name_len + addr_len)?;
            let names_at = FIXED_LEN + CONNECT_AUTH_LEN;
            let client_name = name_at(b, names_at, name_len)?;
            let address = &b[names_at + name_len..];
            let mut nonce = [0u8; NONCE_LEN];
            nonce.copy_from_slice(&b[NONCE_AT..TAG_AT]);
            let mut tag = [0u8; TAG_LEN];
            tag.copy_from_slice(&b[TAG_AT..TAG_AT + TAG_LEN]);
            Ok(Session::Connect {
                client_id,
                client_name,
                address,
                time_unix_ns: u64_at(b, 24),
                nonce,
                tag,
            })
        }
        KIND_ACCEPT => {
            exact_len(b, FIXED_LEN + 12 + name_len)?;
            let status = u32_at(b, 20) as i32;
            if !(0..=4095).contains(&status) {
                return Err(DecodeError::new(20, "status", format!("errno {status}")));
            }
            let channel = u16_at(b, 18);
            if (channel == 0) == (status == 0) {
                return Err(DecodeError::new(
                    18,
                    "channel",
                    "an accept has a channel exactly when its status is 0",
                ));
            }
            Ok(Session::Accept {
                client_id,
                channel,
                status,
                node_id: u32_at(b, FIXED_LEN),
                chunk_size: u64_at(b, 24),
                node_name: name_at(b, FIXED_LEN + 12, name_len)?,
                token: u64_at(b, FIXED_LEN + 4),
            })
        }
        KIND_DISCONNECT => {
            exact_len(b, FIXED_LEN)?;
            if name_len != 0 || u32_at(b, 20) != 0 {
                return Err(DecodeError::new(
                    16,
                    "reserved",
                    "reserved field is not zero",
                ));
            }
            Ok(Session::Disconnect {
                client_id,
                channel: u16_at(b, 18),
                token: u64_at(b, 24),
            })
        }
        k => Err(DecodeError::new(
            6,
            "kind",
            format!("unknown session kind {k}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn each_kind_round_trips() {
        let addr = [7u8; 300];
        for msg in [
            Session::Connect {
                client_id: 0xdead_beef,
                client_name: "node1/rank3",
                address: &addr,
                time_unix_ns: 1_700_000_000_000_000_000,
                nonce: [3; NONCE_LEN],
                tag: [9; TAG_LEN],
            },
            Session::Accept {
                client_id: 9,
                channel: 12,
                status: 0,
                node_id: 3,
                chunk_size: 4 << 20,
                node_name: "node3",
                token: 0x1234_5678_9abc_def0,
            },
            Session::Accept {
                client_id: 9,
                channel: 0,
                status: libc::EBUSY,
                node_id: 3,
                chunk_size: 4 << 20,
                node_name: "",
                token: 0,
            },
            Session::Disconnect {
                client_id: 9,
                channel: 12,
                token: 77,
            },
        ] {
            let b = encode(&msg);
            assert_eq!(decode(&b).unwrap(), msg);
            // Every truncation and every extension is refused, never a panic.
            for n in 0..b.len() {
                assert!(decode(&b[..n]).is_err(), "{msg:?} cut at {n}");
            }
            let mut longer = b.clone();
            longer.push(0);
            assert!(decode(&longer).is_err());
        }
    }

    #[test]
    fn lies_are_named() {
        let good = encode(&Session::Connect {
            client_id: 1,
            client_name: "c",
            address: &[1, 2, 3],
            time_unix_ns: 5,
            nonce: [1; NONCE_LEN],
            tag: [0; TAG_LEN],
        });
        let mut b = good.clone();
        b[0] = b'X';
        assert_eq!(decode(&b).unwrap_err().field, "magic");
        let mut b = good.clone();
        b[4] = 9;
        assert_eq!(decode(&b).unwrap_err().field, "version");
        let mut b = good.clone();
        b[6] = 77;
        assert_eq!(decode(&b).unwrap_err().field, "kind");
        let mut b = good.clone();
        b[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&b).unwrap_err().field, "address_len");
        let mut b = good;
        b[16] = 200;
        assert_eq!(decode(&b).unwrap_err().field, "length");
    }

    #[test]
    fn a_connect_verifies_only_with_its_key_for_its_daemon_unchanged() {
        let key = SessionKey::random("k").unwrap();
        let other = SessionKey::random("o").unwrap();
        let mut msg = encode(&Session::Connect {
            client_id: 1,
            client_name: "c",
            address: &[1, 2, 3],
            time_unix_ns: 5,
            nonce: [1; NONCE_LEN],
            tag: [0; TAG_LEN],
        });
        assert!(!connect_tag_valid(&msg, &key, "n0"), "an unsigned connect");
        sign_connect(&mut msg, Some(&key), "n0");
        assert!(connect_tag_valid(&msg, &key, "n0"));
        assert!(!connect_tag_valid(&msg, &other, "n0"), "another key");
        assert!(!connect_tag_valid(&msg, &key, "n1"), "another daemon");
        for i in (0..msg.len()).filter(|i| !(TAG_AT..TAG_AT + TAG_LEN).contains(i)) {
            let mut m = msg.clone();
            m[i] ^= 1;
            assert!(!connect_tag_valid(&m, &key, "n0"), "byte {i} changed");
        }
        assert!(!connect_tag_valid(&msg[..TAG_AT + 3], &key, "n0"));
    }

    #[test]
    fn random_bytes_never_panic() {
        // A small xorshift: deterministic, no extra dependency.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let good = encode(&Session::Accept {
            client_id: 1,
            channel: 1,
            status: 0,
            node_id: 0,
            chunk_size: 1,
            node_name: "n",
            token: 3,
        });
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut b = good.clone();
            let i = (x as usize) % b.len();
            b[i] ^= (x >> 32) as u8 | 1;
            b.truncate(b.len() - (x >> 40) as usize % 3);
            let _ = decode(&b);
        }
    }
}
