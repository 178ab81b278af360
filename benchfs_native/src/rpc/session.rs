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
//! Active message ids used by the RPC layer are here too, so both sides
//! agree on them in one place.

use crate::rpc::wire::DecodeError;

/// Client to daemon: a wire request in the header, write data as payload.
pub const AM_REQUEST: u16 = 1;
/// Daemon to client: a wire reply in the header, read data as payload.
pub const AM_REPLY: u16 = 2;
/// Either way: a [`Session`] message in the header, no payload.
pub const AM_SESSION: u16 = 3;

/// First four bytes of a session message.
pub const MAGIC: [u8; 4] = *b"BFSS";
/// Session protocol version (follows the wire protocol's).
pub const VERSION: u16 = 1;
/// Fixed bytes before the variable part.
pub const FIXED_LEN: usize = 32;
/// Longest client or node name.
pub const MAX_NAME: usize = 255;
/// Longest worker address accepted.
pub const MAX_ADDRESS: usize = 64 * 1024;

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
    },
    /// Daemon to client: the channel, or why there is none.
    Accept {
        /// The connecting client's id.
        client_id: u64,
        /// Channel to put in request headers (1..); 0 when refused.
        channel: u16,
        /// 0, or the errno of a refusal (e.g. `EBUSY`: no free channel,
        /// `ESHUTDOWN`: shutting down).
        status: i32,
        /// The daemon's placement id.
        node_id: u32,
        /// The daemon's chunk size: clients split I/O with it.
        chunk_size: u64,
        /// The daemon's node name.
        node_name: &'a str,
    },
    /// Client to daemon: the channel is no longer used.
    Disconnect {
        /// The client's id.
        client_id: u64,
        /// Its channel.
        channel: u16,
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
    let (kind, var): (u8, [&[u8]; 2]) = match *msg {
        Session::Connect {
            client_id,
            client_name,
            address,
        } => {
            let name = cut(client_name);
            fixed[8..16].copy_from_slice(&client_id.to_le_bytes());
            fixed[16..18].copy_from_slice(&(name.len() as u16).to_le_bytes());
            fixed[20..24].copy_from_slice(&(address.len() as u32).to_le_bytes());
            (KIND_CONNECT, [name.as_bytes(), address])
        }
        Session::Accept {
            client_id,
            channel,
            status,
            node_id,
            chunk_size,
            node_name,
        } => {
            let name = cut(node_name);
            fixed[8..16].copy_from_slice(&client_id.to_le_bytes());
            fixed[16..18].copy_from_slice(&(name.len() as u16).to_le_bytes());
            fixed[18..20].copy_from_slice(&channel.to_le_bytes());
            fixed[20..24].copy_from_slice(&status.to_le_bytes());
            fixed[24..32].copy_from_slice(&chunk_size.to_le_bytes());
            // node_id goes after the fixed part: it is the only u32 left.
            (KIND_ACCEPT, [&node_id.to_le_bytes(), name.as_bytes()])
        }
        Session::Disconnect { client_id, channel } => {
            fixed[8..16].copy_from_slice(&client_id.to_le_bytes());
            fixed[18..20].copy_from_slice(&channel.to_le_bytes());
            (KIND_DISCONNECT, [&[], &[]])
        }
    };
    fixed[6] = kind;
    let mut out = Vec::with_capacity(FIXED_LEN + var[0].len() + var[1].len());
    out.extend_from_slice(&fixed);
    out.extend_from_slice(var[0]);
    out.extend_from_slice(var[1]);
    out
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
            if u16_at(b, 18) != 0 || b[24..32].iter().any(|&x| x != 0) {
                return Err(DecodeError::new(
                    18,
                    "reserved",
                    "reserved field is not zero",
                ));
            }
            exact_len(b, FIXED_LEN + name_len + addr_len)?;
            let client_name = name_at(b, FIXED_LEN, name_len)?;
            let address = &b[FIXED_LEN + name_len..];
            Ok(Session::Connect {
                client_id,
                client_name,
                address,
            })
        }
        KIND_ACCEPT => {
            exact_len(b, FIXED_LEN + 4 + name_len)?;
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
                node_name: name_at(b, FIXED_LEN + 4, name_len)?,
            })
        }
        KIND_DISCONNECT => {
            exact_len(b, FIXED_LEN)?;
            if name_len != 0 || u32_at(b, 20) != 0 || b[24..32].iter().any(|&x| x != 0) {
                return Err(DecodeError::new(
                    16,
                    "reserved",
                    "reserved field is not zero",
                ));
            }
            Ok(Session::Disconnect {
                client_id,
                channel: u16_at(b, 18),
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
            },
            Session::Accept {
                client_id: 9,
                channel: 12,
                status: 0,
                node_id: 3,
                chunk_size: 4 << 20,
                node_name: "node3",
            },
            Session::Accept {
                client_id: 9,
                channel: 0,
                status: libc::EBUSY,
                node_id: 3,
                chunk_size: 4 << 20,
                node_name: "",
            },
            Session::Disconnect {
                client_id: 9,
                channel: 12,
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
