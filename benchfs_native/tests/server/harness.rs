//! The test harness: a daemon on its own thread and a raw client built
//! only from benchfs_ucx, rpc::session and rpc::wire. The tests import it
//! whole (`use crate::harness::*`), with what they use of the engine.

pub use std::cell::RefCell;
pub use std::collections::VecDeque;
pub use std::rc::Rc;
pub use std::thread::JoinHandle;
pub use std::time::{Duration, Instant};

pub use benchfs_native::daemon::{self, DaemonConfig, DaemonSummary};
pub use benchfs_native::membership::{self, Expected, Record};
pub use benchfs_native::rpc::server::Durability;
pub use benchfs_native::rpc::session::{
    self, AM_REPLY, AM_REQUEST, AM_SESSION, NONCE_LEN, Session,
};
pub use benchfs_native::rpc::session_key::{self, SessionKey, TAG_LEN};
pub use benchfs_native::rpc::wire::{
    self, CountStep, FileKind, Header, Limits, Reply, Request, RmdirStep, Route,
};
pub use benchfs_native::trace::format::{Kind, parse};
pub use benchfs_ucx::{
    AmMessage, Context, Endpoint, EndpointOptions, SendOptions, Worker, WorkerAddress,
};

pub use crate::common::{TempDir, pattern, watchdog};

pub const MIB: usize = 1 << 20;

/// Session keys of the daemons the tests started, by worker address: a
/// raw client signs its connect with its daemon's key.
static KEYS: std::sync::Mutex<Vec<(Vec<u8>, SessionKey)>> = std::sync::Mutex::new(Vec::new());

pub fn key_of(record: &Record) -> Option<SessionKey> {
    KEYS.lock()
        .unwrap()
        .iter()
        .find(|(a, _)| *a == record.worker_address)
        .map(|(_, k)| k.clone())
}

pub fn now_unix_ns() -> u64 {
    Record::now_unix_ns()
}

pub fn deadline(secs: u64) -> Instant {
    Instant::now() + Duration::from_secs(secs)
}

/// A daemon on its own thread.
pub struct Daemon {
    pub thread: Option<JoinHandle<benchfs_native::Result<DaemonSummary>>>,
    pub record: Record,
    pub registry: TempDir,
    pub _data: TempDir,
    pub data_dir: std::path::PathBuf,
}

impl Daemon {
    pub fn start(tag: &str, tweak: impl FnOnce(&mut DaemonConfig)) -> Daemon {
        let data = TempDir::new(&format!("{tag}-data"));
        let registry = TempDir::new(&format!("{tag}-registry"));
        let data_dir = data.path().join("store");
        let mut cfg = DaemonConfig::new(format!("{tag}-node"), 0, &data_dir, registry.path());
        cfg.buffer_pool_size = 16 << 20;
        cfg.max_concurrency = 4;
        cfg.handle_signals = false;
        cfg.shutdown_deadline = Duration::from_secs(20);
        tweak(&mut cfg);
        let name = cfg.node_name.clone();
        let thread = std::thread::spawn(move || daemon::serve(&cfg));
        let records =
            membership::wait_for(registry.path(), &Expected::Names(vec![name]), deadline(30))
                .expect("daemon registration");
        let record = records.into_iter().next().unwrap();
        let key = session_key::load(registry.path())
            .unwrap()
            .expect("the daemon made a session key");
        KEYS.lock()
            .unwrap()
            .push((record.worker_address.clone(), key));
        Daemon {
            thread: Some(thread),
            record,
            registry,
            _data: data,
            data_dir,
        }
    }

    /// Waits for the daemon thread (after a shutdown request).
    pub fn join(&mut self) -> DaemonSummary {
        let t = self.thread.take().unwrap();
        let until = deadline(30);
        while !t.is_finished() {
            assert!(Instant::now() < until, "daemon did not stop within 30 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        t.join().expect("daemon thread").expect("daemon result")
    }

    pub fn record_exists(&self) -> bool {
        self.registry
            .path()
            .join(format!("{}.json", self.record.node_name))
            .exists()
    }
}

/// What came back for one request: the reply message and its payload.
pub struct Got {
    pub header: Vec<u8>,
    pub payload: Vec<u8>,
}

impl Got {
    pub fn reply(&self) -> (Header, Reply<'_>) {
        wire::decode_reply(&self.header, &Limits::default()).expect("reply decodes")
    }

    pub fn ok(&self) -> Reply<'_> {
        match self.reply().1 {
            Reply::Error { errno, message, .. } => panic!("error reply {errno}: {message}"),
            r => r,
        }
    }

    pub fn errno(&self) -> i32 {
        match self.reply().1 {
            Reply::Error { errno, .. } => errno,
            r => panic!("expected an error reply, got {r:?}"),
        }
    }

    pub fn message(&self) -> String {
        match self.reply().1 {
            Reply::Error { message, .. } => message.to_owned(),
            r => panic!("expected an error reply, got {r:?}"),
        }
    }

    pub fn request_id(&self) -> u64 {
        self.reply().0.request_id
    }
}

/// A client made of a UCX worker, an endpoint to the daemon and a session.
pub struct RawClient {
    pub worker: Worker,
    pub ep: Endpoint,
    pub inbox: Rc<RefCell<VecDeque<AmMessage>>>,
    pub channel: u16,
    pub token: u64,
    pub key: Option<SessionKey>,
    pub node_id: u32,
    pub node_name: String,
    pub chunk_size: u64,
    pub next_id: u64,
    pub client_id: u64,
    pub sends: Vec<benchfs_ucx::Request<Vec<u8>>>,
    pub _ctx: Context,
}

impl RawClient {
    pub fn connect(record: &Record) -> RawClient {
        let mut c = RawClient::unconnected(record);
        match c.open_session() {
            Ok(()) => c,
            Err(errno) => panic!("connect refused with errno {errno}"),
        }
    }

    pub fn unconnected(record: &Record) -> RawClient {
        let ctx = Context::new().unwrap();
        let worker = ctx.create_worker().unwrap();
        let inbox: Rc<RefCell<VecDeque<AmMessage>>> = Rc::default();
        for id in [AM_REPLY, AM_SESSION] {
            let sink = inbox.clone();
            worker
                .set_am_handler(id, move |m| sink.borrow_mut().push_back(m))
                .unwrap();
        }
        let ep = worker
            .connect(
                &WorkerAddress::from_bytes(record.worker_address.clone()),
                EndpointOptions::default(),
            )
            .unwrap();
        static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        RawClient {
            worker,
            ep,
            inbox,
            channel: 0,
            token: 0,
            key: key_of(record),
            node_id: record.node_id,
            node_name: record.node_name.clone(),
            chunk_size: 0,
            next_id: 1,
            client_id: IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) << 8 | 7,
            sends: Vec::new(),
            _ctx: ctx,
        }
    }

    /// Connect; `Err(errno)` when refused.
    pub fn open_session(&mut self) -> Result<(), i32> {
        let mut nonce = [0u8; NONCE_LEN];
        benchfs_native::sys::fill_random(&mut nonce).unwrap();
        let msg = self.connect_message(nonce, now_unix_ns());
        self.send_connect(&msg);
        self.await_accept()
    }

    /// A connect of this client signed with its key (if any).
    pub fn connect_message(&self, nonce: [u8; NONCE_LEN], time_unix_ns: u64) -> Vec<u8> {
        let addr = self.worker.address().unwrap();
        let mut msg = session::encode(&Session::Connect {
            client_id: self.client_id,
            client_name: "test-client",
            address: addr.as_bytes(),
            time_unix_ns,
            nonce,
            tag: [0; TAG_LEN],
        });
        session::sign_connect(&mut msg, self.key.as_ref(), &self.node_name);
        msg
    }

    /// The answer to a connect: `Err(errno)` when refused.
    pub fn await_accept(&mut self) -> Result<(), i32> {
        let m = self.next_message(AM_SESSION, "accept");
        match session::decode(m.header()).unwrap() {
            Session::Accept {
                client_id,
                channel,
                status,
                node_id,
                chunk_size,
                node_name,
                token,
            } => {
                assert_eq!(client_id, self.client_id);
                assert_eq!(node_id, self.node_id);
                assert_eq!(node_name, self.node_name);
                if status != 0 {
                    return Err(status);
                }
                self.channel = channel;
                self.token = token;
                self.chunk_size = chunk_size;
                Ok(())
            }
            other => panic!("expected an accept, got {other:?}"),
        }
    }

    pub fn disconnect(&mut self) {
        let msg = session::encode(&Session::Disconnect {
            client_id: self.client_id,
            channel: self.channel,
            token: self.token,
        });
        self.send_am(AM_SESSION, &msg, Vec::new());
        self.flush_sends();
    }

    pub fn send_am(&mut self, id: u16, header: &[u8], payload: Vec<u8>) {
        self.send_am_with(id, header, payload, SendOptions::default());
    }

    /// A connect, sent as the client sends it: with a reply endpoint, on
    /// which a refusal for a bad key comes back.
    pub fn send_connect(&mut self, msg: &[u8]) {
        self.send_am_with(
            AM_SESSION,
            msg,
            Vec::new(),
            SendOptions::default().with_reply(),
        );
    }

    pub fn send_am_with(&mut self, id: u16, header: &[u8], payload: Vec<u8>, opts: SendOptions) {
        let r = self.ep.am_send(id, header, payload, opts).unwrap();
        self.sends.push(r);
    }

    pub fn flush_sends(&mut self) {
        for r in self.sends.drain(..) {
            r.wait(deadline(20)).expect("send completes");
        }
    }

    /// The next message of AM id `id` (the other kind is a test failure).
    pub fn next_message(&mut self, id: u16, what: &str) -> AmMessage {
        let inbox = self.inbox.clone();
        self.worker
            .wait_until(deadline(20), what, || !inbox.borrow().is_empty())
            .unwrap_or_else(|e| panic!("{e}"));
        let m = self.inbox.borrow_mut().pop_front().unwrap();
        assert_eq!(m.id(), id, "unexpected message kind waiting for {what}");
        self.sends.retain(|r| !r.is_done());
        m
    }

    /// Encodes and sends `req` without waiting; returns its request id.
    pub fn post(&mut self, req: &Request<'_>, payload: Vec<u8>) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let mut h = Vec::new();
        let route = Route::new(id, self.node_id)
            .on(self.channel)
            .with_token(self.token);
        wire::encode_request(&mut h, route, req).unwrap();
        self.send_am(AM_REQUEST, &h, payload);
        id
    }

    /// The next reply, with its payload received.
    pub fn recv(&mut self) -> Got {
        let m = self.next_message(AM_REPLY, "an RPC reply");
        let header = m.header().to_vec();
        let payload = if m.is_rndv() {
            let len = m.len();
            m.recv_into(Vec::with_capacity(len))
                .unwrap()
                .wait_filled(deadline(20))
                .unwrap()
        } else {
            m.data().unwrap().to_vec()
        };
        Got { header, payload }
    }

    pub fn call(&mut self, req: &Request<'_>, payload: Vec<u8>) -> Got {
        let id = self.post(req, payload);
        let got = self.recv();
        assert_eq!(got.request_id(), id);
        got
    }

    pub fn ping(&mut self) {
        let got = self.call(
            &Request::Ping {
                len: 0,
                echo: false,
            },
            Vec::new(),
        );
        assert!(matches!(got.ok(), Reply::Ping { .. }));
    }

    pub fn stats(&mut self) -> serde_json::Value {
        let got = self.call(&Request::Stats, Vec::new());
        assert!(matches!(got.ok(), Reply::Stats { .. }));
        serde_json::from_slice(&got.payload).unwrap()
    }

    pub fn write(&mut self, path: &str, chunk: u64, offset: u64, data: Vec<u8>) -> Got {
        let req = Request::Write {
            path,
            chunk,
            offset,
            len: data.len() as u64,
            sync: false,
        };
        self.call(&req, data)
    }

    pub fn read(&mut self, path: &str, chunk: u64, offset: u64, len: u64) -> Got {
        self.call(
            &Request::Read {
                path,
                chunk,
                offset,
                len,
            },
            Vec::new(),
        )
    }

    pub fn shutdown(&mut self, force: bool) {
        let got = self.call(&Request::Shutdown { force }, Vec::new());
        assert!(matches!(got.ok(), Reply::Shutdown));
    }

    /// Posts `n` writes of 64 KiB (`pattern(65536, i)` at the start of
    /// chunk `i` of `path`), then a graceful shutdown, and checks that
    /// every write and the shutdown were answered.
    pub fn writes_then_shutdown(&mut self, path: &str, n: u64, sync: bool) {
        for i in 0..n {
            self.post(
                &Request::Write {
                    path,
                    chunk: i,
                    offset: 0,
                    len: 65536,
                    sync,
                },
                pattern(65536, i),
            );
        }
        self.post(&Request::Shutdown { force: false }, Vec::new());
        let (mut writes, mut shutdown) = (0, false);
        for _ in 0..=n {
            match self.recv().ok() {
                Reply::Write { written } => {
                    assert_eq!(written, 65536);
                    writes += 1;
                }
                Reply::Shutdown => shutdown = true,
                r => panic!("{r:?}"),
            }
        }
        assert_eq!(writes, n);
        assert!(shutdown);
    }
}

/// An exclusive create of the file `path` with `mode`, owned by 1:2.
pub fn create_file(path: &str, mode: u32) -> Request<'_> {
    Request::Create {
        path,
        mode,
        rdev: 0,
        uid: 1,
        gid: 2,
        exclusive: true,
        parent_here: false,
    }
}

/// A step on file `ino`'s link count at its home daemon, no attributes.
pub fn count_step(ino: u64, step: CountStep) -> Request<'static> {
    Request::LinkCount {
        path: "",
        ino,
        step,
        mask: 0,
        attr: wire::SharedAttr::default(),
    }
}

/// The mark of the record `path`, if it has id `ino`, as one of several
/// names (on its owner).
pub fn mark_name(path: &str, ino: u64) -> Request<'_> {
    Request::LinkCount {
        path,
        ino,
        step: CountStep::Mark,
        mask: 0,
        attr: wire::SharedAttr::default(),
    }
}

pub fn attr(r: Reply<'_>) -> wire::Attr {
    match r {
        Reply::Create { attr: a, .. }
        | Reply::Open(a)
        | Reply::Stat { attr: a, .. }
        | Reply::Mkdir(a)
        | Reply::Setattr(a)
        | Reply::Symlink(a) => a,
        other => panic!("expected attributes, got {other:?}"),
    }
}
