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
//!
//! [`Sessions`] owns the channel table, the nonces of recent connects,
//! the accepts being sent and the endpoints being closed; a request's
//! channel and token are checked here ([`Sessions::check`]).
//!
//! An ended session's endpoint is closed without waiting in the loop: the
//! close (a flush, then the release) advances as the loop progresses the
//! worker. A client that sent its disconnect and exited leaves a flush that
//! may end only at the transport's endpoint timeout; waited for one session
//! after the other, a daemon whose many ranks left would stop only after
//! all of those timeouts. At teardown one deadline bounds the closes of the
//! sessions still open, all at once.

use std::time::{Duration, Instant};

use benchfs_ucx::{
    AmMessage, Closing, Endpoint, EndpointOptions, Request, SendOptions, Worker, WorkerAddress,
};

use super::channels::{Channel, Channels};
use super::clock::unix_now_ns;
use super::config::ServerConfig;
use super::data_buf::DataBuf;
use super::log::Log;
use super::replay::{NonceCache, Stale, WINDOW};
use super::stats::{Rejected, ServerStats};
use crate::rpc::session::{self, AM_SESSION, NONCE_LEN, Session};
use crate::rpc::session_key::SessionKey;
use crate::sys;

/// How long closing a refused connect's endpoint may take (its answer is
/// flushed first).
const CLOSE_DEADLINE: Duration = Duration::from_millis(500);
/// How long every close still under way may take, all together, at
/// teardown.
const TEARDOWN_CLOSE_DEADLINE: Duration = Duration::from_secs(1);

/// Answers connects without a valid tag from inside the message handler,
/// while UCX's reply endpoint is valid.
pub(super) struct ConnectGate {
    key: Option<SessionKey>,
    node_id: u32,
    node_name: String,
    chunk_size: u64,
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

/// What a session message handler is passed: the worker, whether the
/// daemon is stopping, the counters and the log.
pub(super) struct Context<'a> {
    pub worker: &'a Worker,
    pub stopping: bool,
    pub stats: &'a mut ServerStats,
    pub log: &'a mut Log,
}

/// The client sessions of one daemon.
#[derive(Debug)]
pub(super) struct Sessions {
    channels: Channels,
    /// Nonces of recent connects (replays are refused).
    nonces: NonceCache,
    /// First byte of this worker's address (see `plausible_address`).
    address_header: u8,
    key: Option<SessionKey>,
    node_id: u32,
    node_name: String,
    chunk_size: u64,
    max_channels: u16,
    idle_reclaim: Duration,
    /// Accepts being sent.
    accepting: Vec<Request<DataBuf>>,
    /// Endpoints of ended sessions being closed, with their client's name.
    closing: Vec<(String, Closing)>,
}

impl Sessions {
    /// The sessions of the daemon `cfg` describes, whose worker's address
    /// starts with `address_header`.
    pub(super) fn new(cfg: &ServerConfig, chunk_size: u64, address_header: u8) -> Sessions {
        Sessions {
            channels: Channels::new(cfg.max_channels),
            nonces: NonceCache::default(),
            address_header,
            key: cfg.session_key.clone(),
            node_id: cfg.node_id,
            node_name: cfg.node_name.clone(),
            chunk_size,
            max_channels: cfg.max_channels,
            idle_reclaim: cfg.channel_idle_reclaim,
            accepting: Vec::new(),
            closing: Vec::new(),
        }
    }

    /// What the message handler answers forged connects with.
    pub(super) fn gate(&self) -> ConnectGate {
        ConnectGate {
            key: self.key.clone(),
            node_id: self.node_id,
            node_name: self.node_name.clone(),
            chunk_size: self.chunk_size,
        }
    }

    /// Whether a request on `channel` with `token` may be served: `Err`
    /// says why not. A request that may is the channel's use at `now`.
    pub(super) fn check(
        &mut self,
        channel: u16,
        token: u64,
        now: Instant,
    ) -> Result<(), &'static str> {
        match self.channels.get(channel) {
            None => Err("which is not open"),
            // A channel number alone opens nothing: the token from the
            // accept proves the sender holds the session.
            Some(ch) if ch.token != token => {
                Err("with a token that is not the channel's (another client's channel?)")
            }
            Some(_) => {
                self.channels.touch(channel, now);
                Ok(())
            }
        }
    }

    /// The endpoint of the open channel `id`.
    pub(super) fn endpoint(&self, id: u16) -> Option<&Endpoint> {
        self.channels.get(id).map(|c| &c.ep)
    }

    /// When the open channel `id` last carried a request.
    pub(super) fn last_used(&self, id: u16) -> Option<Instant> {
        self.channels.get(id).map(|c| c.last_used)
    }

    /// Closes channel `id`, returning its session (its endpoint still to
    /// close: [`Sessions::close_endpoint`]).
    pub(super) fn remove(&mut self, id: u16) -> Option<Channel> {
        self.channels.remove(id)
    }

    /// Starts closing the endpoint of an ended session; it finishes as the
    /// loop progresses the worker ([`Sessions::poll_closes`]).
    pub(super) fn close_endpoint(&mut self, ch: Channel) {
        self.closing.push((ch.client_name, ch.ep.start_close()));
    }

    /// Closes that have finished go, a failed one logged; whether any did.
    pub(super) fn poll_closes(&mut self, log: &Log) -> bool {
        let before = self.closing.len();
        self.closing
            .retain_mut(|(name, closing)| match closing.poll() {
                None => true,
                Some(outcome) => {
                    if let Err(e) = outcome {
                        log.line(&format!("closing the session of {name:?}: {e}"));
                    }
                    false
                }
            });
        self.closing.len() != before
    }

    /// Channels open now.
    pub(super) fn open_count(&self) -> usize {
        self.channels.open_count()
    }

    /// Channels opened since start.
    pub(super) fn opened_total(&self) -> u64 {
        self.channels.opened_total()
    }

    /// Accepts UCX has sent go; whether any did.
    pub(super) fn poll_accepts(&mut self, log: &mut Log) -> bool {
        let before = self.accepting.len();
        let mut i = 0;
        while i < self.accepting.len() {
            if !self.accepting[i].is_done() {
                i += 1;
                continue;
            }
            if let Ok(Err(e)) = self.accepting.swap_remove(i).try_take() {
                log.dropped(&format!("sending an accept failed: {e}"));
            }
        }
        self.accepting.len() != before
    }

    /// No accept is being sent.
    pub(super) fn accepts_sent(&self) -> bool {
        self.accepting.is_empty()
    }

    /// Closes every open session, waiting for those closes within one
    /// deadline, and drops the accepts being sent (at teardown). Closes of
    /// ended sessions still under way are not waited for: their clients
    /// left or said goodbye, nothing of theirs is left to flush. What is
    /// unfinished is left to the worker.
    pub(super) fn close_all(&mut self, log: &Log) {
        let deadline = Instant::now() + TEARDOWN_CLOSE_DEADLINE;
        self.poll_closes(log);
        let ended = std::mem::take(&mut self.closing);
        // All started first: they go on together while the first is waited for.
        let open: Vec<(String, Closing)> = (self.channels.drain().into_iter())
            .map(|ch| (ch.client_name, ch.ep.start_close()))
            .collect();
        for (name, mut closing) in open {
            if let Err(e) = closing.wait(deadline) {
                log.line(&format!("closing the session of {name:?}: {e}"));
            }
        }
        drop(ended);
        self.accepting.clear();
    }

    /// An arriving session message.
    pub(super) fn on_message(&mut self, msg: &AmMessage, cx: &mut Context<'_>) {
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
                    tag_valid: tag_valid(self.key.as_ref(), msg.header(), &self.node_name),
                };
                self.connect(client_id, client_name, address, &proof, cx);
            }
            Ok(Session::Disconnect {
                client_id,
                channel,
                token,
            }) => self.disconnect(client_id, channel, token, cx),
            Ok(Session::Accept { .. }) => {
                cx.stats.reject(Rejected::Session);
                cx.log.dropped("dropped an accept message sent to a daemon");
            }
            Err(e) => {
                cx.stats.reject(Rejected::Session);
                cx.log.dropped(&format!(
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
            node_id: self.node_id,
            chunk_size: self.chunk_size,
            node_name: &self.node_name,
            token,
        })
    }

    /// Whether a connect may open a channel: `Ok`, `Err(Some(errno))` to
    /// refuse it with an answer, `Err(None)` to drop it (a connect without
    /// a valid tag was answered by the [`ConnectGate`], if at all).
    fn admit(
        &mut self,
        client_name: &str,
        proof: &Proof,
        cx: &mut Context<'_>,
    ) -> Result<(), Option<i32>> {
        if !proof.tag_valid {
            cx.stats.reject(Rejected::Session);
            cx.stats.connects_refused += 1;
            cx.log.dropped(&format!(
                "refused the session of {client_name:?}: wrong or missing session key"
            ));
            return Err(None);
        }
        let now_ns = unix_now_ns();
        match self
            .nonces
            .admit(proof.time_unix_ns, now_ns, proof.nonce, Instant::now())
        {
            Ok(()) => Ok(()),
            Err(why) => {
                cx.stats.reject(Rejected::Session);
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
                cx.log
                    .dropped(&format!("refused the session of {client_name:?}: {text}"));
                Err(answer)
            }
        }
    }

    fn connect(
        &mut self,
        client_id: u64,
        client_name: &str,
        address: &[u8],
        proof: &Proof,
        cx: &mut Context<'_>,
    ) {
        let admitted = self.admit(client_name, proof, cx);
        if admitted == Err(None) {
            return;
        }
        if let Err(why) = self.plausible_address(address) {
            cx.stats.reject(Rejected::Session);
            cx.log.dropped(&format!(
                "dropped the connect of {client_name:?}: its worker address {why}"
            ));
            return;
        }
        let addr = WorkerAddress::from_bytes(address);
        let ep = match cx.worker.connect(&addr, EndpointOptions::default()) {
            Ok(ep) => ep,
            Err(e) => {
                cx.stats.reject(Rejected::Session);
                cx.log
                    .dropped(&format!("cannot reach client {client_name:?}: {e}"));
                return;
            }
        };
        if let Err(Some(errno)) = admitted {
            return self.refuse(ep, client_id, client_name, errno, cx);
        }
        let refusal = if cx.stopping {
            libc::ESHUTDOWN
        } else {
            let token = match sys::random_u64() {
                Ok(t) => t,
                Err(e) => {
                    cx.log
                        .line(&format!("no channel token for {client_name:?}: {e}"));
                    return self.refuse(ep, client_id, client_name, libc::EAGAIN, cx);
                }
            };
            let ch = Channel {
                ep,
                client_id,
                client_name: client_name.to_owned(),
                token,
                last_used: Instant::now(),
            };
            self.reclaim_if_full(cx);
            match self.channels.open(ch) {
                Ok(id) => {
                    let bytes = self.accept_bytes(client_id, id, 0, token);
                    self.send_accept(id, &bytes, cx.log);
                    return;
                }
                Err(ch) => {
                    let Channel { ep, .. } = ch;
                    return self.refuse(ep, client_id, client_name, libc::EBUSY, cx);
                }
            }
        };
        self.refuse(ep, client_id, client_name, refusal, cx);
    }

    /// When every channel is taken, frees the one idle the longest if it
    /// has carried nothing for `channel_idle_reclaim`: a client that died
    /// without a disconnect no longer keeps its channel from a live one.
    fn reclaim_if_full(&mut self, cx: &mut Context<'_>) {
        if self.channels.open_count() < usize::from(self.max_channels) {
            return;
        }
        let Some(id) = self.channels.idlest(self.idle_reclaim, Instant::now()) else {
            return;
        };
        if let Some(ch) = self.channels.remove(id) {
            cx.stats.channels_reclaimed += 1;
            cx.log.line(&format!(
                "freed channel {id} of {:?}: idle for {:.0} s while every channel is taken",
                ch.client_name,
                ch.last_used.elapsed().as_secs_f64()
            ));
            self.close_endpoint(ch);
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

    fn send_accept(&mut self, channel: u16, bytes: &[u8], log: &mut Log) {
        let Some(ch) = self.channels.get(channel) else {
            return;
        };
        match ch.ep.am_send(
            AM_SESSION,
            bytes,
            DataBuf::Heap(Vec::new()),
            SendOptions::default(),
        ) {
            Ok(req) => self.accepting.push(req),
            Err(e) => {
                let name = ch.client_name.clone();
                log.line(&format!("sending the accept to {name:?} failed: {e}"));
                if let Some(ch) = self.channels.remove(channel) {
                    self.close_endpoint(ch);
                }
            }
        }
    }

    /// Answers a refused connect and closes the endpoint (the close
    /// flushes the answer first).
    fn refuse(
        &mut self,
        ep: Endpoint,
        client_id: u64,
        client_name: &str,
        errno: i32,
        cx: &mut Context<'_>,
    ) {
        cx.stats.connects_refused += 1;
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
        cx.log.dropped(&msg);
    }

    fn disconnect(&mut self, client_id: u64, channel: u16, token: u64, cx: &mut Context<'_>) {
        let matches = self
            .channels
            .get(channel)
            .is_some_and(|c| c.client_id == client_id && c.token == token);
        if !matches {
            cx.stats.reject(Rejected::Session);
            cx.log.dropped(&format!(
                "dropped a disconnect of channel {channel} by client {client_id:#x}, which does not hold it"
            ));
            return;
        }
        // The client closes its side and may exit at once: its flush is not
        // waited for here.
        if let Some(ch) = self.channels.remove(channel) {
            self.close_endpoint(ch);
        }
    }
}
