//! Sessions: connect opens an endpoint back to the client and gives it a
//! channel and its random token (or refuses: `EKEYEXPIRED` when its time
//! is outside the window, `EBUSY` when every channel is taken, `ESHUTDOWN`
//! while stopping; a replayed connect is dropped); disconnect, with the
//! channel's token, closes the channel's endpoint.
//!
//! A connect without a valid session-key tag never opens an endpoint: the
//! worker address it carries is the sender's word only, and UCX crashes on
//! some malformed ones or connects wherever they point. Its `EACCES` goes
//! back on the endpoint UCX itself received it on (the client asks for one
//! with `UCP_AM_SEND_FLAG_REPLY`), from the message handler: [`ConnectGate`].

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use benchfs_ucx::{AmMessage, Endpoint, EndpointOptions, SendOptions, WorkerAddress};

use super::channels::Channel;
use super::data_buf::DataBuf;
use super::event_loop::{CLOSE_DEADLINE, Server};
use super::replay::{Stale, WINDOW};
use super::slots::Sending;
use super::stats::Rejected;
use crate::rpc::session::{self, AM_SESSION, NONCE_LEN, Session};
use crate::rpc::session_key::SessionKey;
use crate::sys;

/// Answers connects without a valid tag from inside the message handler,
/// while UCX's reply endpoint is valid.
pub(super) struct ConnectGate {
    pub(super) key: Option<SessionKey>,
    pub(super) node_id: u32,
    pub(super) node_name: String,
    pub(super) chunk_size: u64,
}

impl ConnectGate {
    /// Sends `EACCES` to the sender of `msg` when it is a connect whose tag
    /// does not verify and the sender gave a reply endpoint.
    pub(super) fn answer_forged(&self, msg: &AmMessage) {
        let Ok(Session::Connect { client_id, .. }) = session::decode(msg.header()) else {
            return;
        };
        if tag_valid(self.key.as_ref(), msg.header(), &self.node_name) || !msg.can_reply() {
            return;
        }
        let bytes = session::encode(&Session::Accept {
            client_id,
            channel: 0,
            status: libc::EACCES,
            node_id: self.node_id,
            chunk_size: self.chunk_size,
            node_name: &self.node_name,
            token: 0,
        });
        // Detached: UCX frees the send when it completes.
        drop(msg.reply(AM_SESSION, &bytes, Vec::new(), SendOptions::default()));
    }
}

fn tag_valid(key: Option<&SessionKey>, connect: &[u8], node_name: &str) -> bool {
    key.is_some_and(|k| session::connect_tag_valid(connect, k, node_name))
}

/// What a connect proved, checked before anything is opened for it.
struct Proof {
    time_unix_ns: u64,
    nonce: [u8; NONCE_LEN],
    tag_valid: bool,
}

/// Fewest bytes of a worker address (header, 64-bit id and at least one
/// device with one transport).
const MIN_ADDRESS: usize = 32;

impl Server<'_> {
    /// An arriving session message.
    pub(super) fn on_session(&mut self, msg: &AmMessage) {
        match session::decode(msg.header()) {
            Ok(Session::Connect {
                client_id,
                client_name,
                address,
                time_unix_ns,
                nonce,
                ..
            }) => {
                let proof = Proof {
                    time_unix_ns,
                    nonce,
                    tag_valid: tag_valid(
                        self.cfg.session_key.as_ref(),
                        msg.header(),
                        &self.cfg.node_name,
                    ),
                };
                self.connect(client_id, client_name, address, &proof);
            }
            Ok(Session::Disconnect {
                client_id,
                channel,
                token,
            }) => self.disconnect(client_id, channel, token),
            Ok(Session::Accept { .. }) => {
                self.stats.reject(Rejected::Session);
                self.log_drop("dropped an accept message sent to a daemon");
            }
            Err(e) => {
                self.stats.reject(Rejected::Session);
                self.log_drop(&format!(
                    "dropped a session message that does not decode: {e}"
                ));
            }
        }
    }

    fn accept_bytes(&self, client_id: u64, channel: u16, status: i32, token: u64) -> Vec<u8> {
        session::encode(&Session::Accept {
            client_id,
            channel,
            status,
            node_id: self.cfg.node_id,
            chunk_size: self.chunk_size,
            node_name: &self.cfg.node_name,
            token,
        })
    }

    /// Whether a connect may open a channel: `Ok`, `Err(Some(errno))` to
    /// refuse it with an answer, `Err(None)` to drop it (a connect without
    /// a valid tag was answered by the [`ConnectGate`], if at all).
    fn admit(&mut self, client_name: &str, proof: &Proof) -> Result<(), Option<i32>> {
        if !proof.tag_valid {
            self.stats.reject(Rejected::Session);
            self.stats.connects_refused += 1;
            self.log_drop(&format!(
                "refused the session of {client_name:?}: wrong or missing session key"
            ));
            return Err(None);
        }
        let now_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        match self
            .nonces
            .admit(proof.time_unix_ns, now_ns, proof.nonce, Instant::now())
        {
            Ok(()) => Ok(()),
            Err(why) => {
                self.stats.reject(Rejected::Session);
                let (text, answer) = match why {
                    Stale::Time => (
                        format!(
                            "its time is more than {} s from this host's clock",
                            WINDOW.as_secs()
                        ),
                        Some(libc::EKEYEXPIRED),
                    ),
                    // The answer would go to the client that signed it.
                    Stale::Replayed => ("it replays an earlier connect".to_owned(), None),
                    Stale::Full => (
                        "too many connects within the freshness window".to_owned(),
                        Some(libc::EAGAIN),
                    ),
                };
                self.log_drop(&format!("refused the session of {client_name:?}: {text}"));
                Err(answer)
            }
        }
    }

    fn connect(&mut self, client_id: u64, client_name: &str, address: &[u8], proof: &Proof) {
        let admitted = self.admit(client_name, proof);
        if admitted == Err(None) {
            return;
        }
        if let Err(why) = self.plausible_address(address) {
            self.stats.reject(Rejected::Session);
            self.log_drop(&format!(
                "dropped the connect of {client_name:?}: its worker address {why}"
            ));
            return;
        }
        let addr = WorkerAddress::from_bytes(address);
        let ep = match self.worker.connect(&addr, EndpointOptions::default()) {
            Ok(ep) => ep,
            Err(e) => {
                self.stats.reject(Rejected::Session);
                self.log_drop(&format!("cannot reach client {client_name:?}: {e}"));
                return;
            }
        };
        if let Err(Some(errno)) = admitted {
            return self.refuse(ep, client_id, client_name, errno);
        }
        let refusal = if self.stopping() {
            libc::ESHUTDOWN
        } else {
            let token = match sys::random_u64() {
                Ok(t) => t,
                Err(e) => {
                    self.log(&format!("no channel token for {client_name:?}: {e}"));
                    return self.refuse(ep, client_id, client_name, libc::EAGAIN);
                }
            };
            let ch = Channel {
                ep,
                client_id,
                client_name: client_name.to_owned(),
                token,
                last_used: Instant::now(),
            };
            self.reclaim_if_full();
            match self.channels.open(ch) {
                Ok(id) => {
                    let bytes = self.accept_bytes(client_id, id, 0, token);
                    self.send_accept(id, &bytes);
                    return;
                }
                Err(ch) => {
                    let Channel { ep, .. } = ch;
                    return self.refuse(ep, client_id, client_name, libc::EBUSY);
                }
            }
        };
        self.refuse(ep, client_id, client_name, refusal);
    }

    /// When every channel is taken, frees the one idle the longest if it
    /// has carried nothing for `channel_idle_reclaim`: a client that died
    /// without a disconnect no longer keeps its channel from a live one.
    fn reclaim_if_full(&mut self) {
        if self.channels.open_count() < usize::from(self.cfg.max_channels) {
            return;
        }
        let Some(id) = self
            .channels
            .idlest(self.cfg.channel_idle_reclaim, Instant::now())
        else {
            return;
        };
        if let Some(ch) = self.channels.remove(id) {
            self.stats.channels_reclaimed += 1;
            self.log(&format!(
                "freed channel {id} of {:?}: idle for {:.0} s while every channel is taken",
                ch.client_name,
                ch.last_used.elapsed().as_secs_f64()
            ));
            let _ = ch.ep.close(Instant::now() + CLOSE_DEADLINE);
        }
    }

    /// UCX trusts a packed worker address (it reads it without a length
    /// and asserts on what it does not expect), so an address from the
    /// wire is checked first: its header byte (UCX's address version and
    /// flags, the same for every process of one UCX build and setting) must
    /// be this worker's, and it must be long enough to hold a transport.
    /// This refuses garbage and cut addresses; it cannot prove a well-formed
    /// one (clients are processes of the same job).
    fn plausible_address(&self, address: &[u8]) -> Result<(), String> {
        if address.len() < MIN_ADDRESS {
            return Err(format!(
                "has {} bytes, a UCX worker address has at least {MIN_ADDRESS}",
                address.len()
            ));
        }
        if address[0] != self.address_header {
            return Err(format!(
                "starts with {:#04x}, this daemon's UCX addresses with {:#04x} (another UCX build or setting?)",
                address[0], self.address_header
            ));
        }
        Ok(())
    }

    fn send_accept(&mut self, channel: u16, bytes: &[u8]) {
        let Some(ch) = self.channels.get(channel) else {
            return;
        };
        match ch.ep.am_send(
            AM_SESSION,
            bytes,
            DataBuf::Heap(Vec::new()),
            SendOptions::default(),
        ) {
            Ok(req) => self.sends.push(Sending {
                req,
                token: None,
                pooled: false,
                done: None,
            }),
            Err(e) => {
                let name = ch.client_name.clone();
                self.log(&format!("sending the accept to {name:?} failed: {e}"));
                if let Some(ch) = self.channels.remove(channel) {
                    let _ = ch.ep.close(Instant::now() + CLOSE_DEADLINE);
                }
            }
        }
    }

    /// Answers a refused connect and closes the endpoint (the close
    /// flushes the answer first).
    fn refuse(&mut self, ep: Endpoint, client_id: u64, client_name: &str, errno: i32) {
        self.stats.connects_refused += 1;
        let bytes = self.accept_bytes(client_id, 0, errno, 0);
        let sent = ep.am_send(AM_SESSION, &bytes, Vec::new(), SendOptions::default());
        let closed = ep.close(Instant::now() + CLOSE_DEADLINE);
        drop(sent);
        let why = match errno {
            libc::EBUSY => "every channel is in use",
            libc::ESHUTDOWN => "shutting down",
            // Logged with the reason where it was decided.
            _ => return,
        };
        let mut msg = format!("refused the session of {client_name:?}: {why}");
        if let Err(e) = closed {
            msg.push_str(&format!(" (closing its endpoint: {e})"));
        }
        self.log_drop(&msg);
    }

    fn disconnect(&mut self, client_id: u64, channel: u16, token: u64) {
        let matches = self
            .channels
            .get(channel)
            .is_some_and(|c| c.client_id == client_id && c.token == token);
        if !matches {
            self.stats.reject(Rejected::Session);
            self.log_drop(&format!(
                "dropped a disconnect of channel {channel} by client {client_id:#x}, which does not hold it"
            ));
            return;
        }
        if let Some(ch) = self.channels.remove(channel)
            && let Err(e) = ch.ep.close(Instant::now() + CLOSE_DEADLINE)
        {
            self.log(&format!("closing the session of {:?}: {e}", ch.client_name));
        }
    }
}
