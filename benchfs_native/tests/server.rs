//! The RPC server end to end: a daemon on a thread (real store, real UCX,
//! real registry directory) and a raw client built only from benchfs_ucx,
//! rpc::session and rpc::wire.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly"
)]

mod common;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use benchfs_native::daemon::{self, DaemonConfig, DaemonSummary};
use benchfs_native::membership::{self, Expected, Record};
use benchfs_native::rpc::server::Durability;
use benchfs_native::rpc::session::{self, AM_REPLY, AM_REQUEST, AM_SESSION, Session};
use benchfs_native::rpc::wire::{self, Header, Limits, Reply, Request, Route};
use benchfs_native::trace::format::{Kind, parse};
use benchfs_ucx::{
    AmMessage, Context, Endpoint, EndpointOptions, SendOptions, Worker, WorkerAddress,
};
use common::{TempDir, pattern, watchdog};

const MIB: usize = 1 << 20;

fn deadline(secs: u64) -> Instant {
    Instant::now() + Duration::from_secs(secs)
}

/// A daemon on its own thread.
struct Daemon {
    thread: Option<JoinHandle<benchfs_native::Result<DaemonSummary>>>,
    record: Record,
    registry: TempDir,
    _data: TempDir,
    data_dir: std::path::PathBuf,
}

impl Daemon {
    fn start(tag: &str, tweak: impl FnOnce(&mut DaemonConfig)) -> Daemon {
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
        Daemon {
            thread: Some(thread),
            record: records.into_iter().next().unwrap(),
            registry,
            _data: data,
            data_dir,
        }
    }

    /// Waits for the daemon thread (after a shutdown request).
    fn join(&mut self) -> DaemonSummary {
        let t = self.thread.take().unwrap();
        let until = deadline(30);
        while !t.is_finished() {
            assert!(Instant::now() < until, "daemon did not stop within 30 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        t.join().expect("daemon thread").expect("daemon result")
    }

    fn record_exists(&self) -> bool {
        self.registry
            .path()
            .join(format!("{}.json", self.record.node_name))
            .exists()
    }
}

/// What came back for one request: the reply message and its payload.
struct Got {
    header: Vec<u8>,
    payload: Vec<u8>,
}

impl Got {
    fn reply(&self) -> (Header, Reply<'_>) {
        wire::decode_reply(&self.header, &Limits::default()).expect("reply decodes")
    }

    fn ok(&self) -> Reply<'_> {
        match self.reply().1 {
            Reply::Error { errno, message, .. } => panic!("error reply {errno}: {message}"),
            r => r,
        }
    }

    fn errno(&self) -> i32 {
        match self.reply().1 {
            Reply::Error { errno, .. } => errno,
            r => panic!("expected an error reply, got {r:?}"),
        }
    }

    fn message(&self) -> String {
        match self.reply().1 {
            Reply::Error { message, .. } => message.to_owned(),
            r => panic!("expected an error reply, got {r:?}"),
        }
    }

    fn request_id(&self) -> u64 {
        self.reply().0.request_id
    }
}

/// A client made of a UCX worker, an endpoint to the daemon and a session.
struct RawClient {
    worker: Worker,
    ep: Endpoint,
    inbox: Rc<RefCell<VecDeque<AmMessage>>>,
    channel: u16,
    node_id: u32,
    node_name: String,
    chunk_size: u64,
    next_id: u64,
    client_id: u64,
    sends: Vec<benchfs_ucx::Request<Vec<u8>>>,
    _ctx: Context,
}

impl RawClient {
    fn connect(record: &Record) -> RawClient {
        let mut c = RawClient::unconnected(record);
        match c.open_session() {
            Ok(()) => c,
            Err(errno) => panic!("connect refused with errno {errno}"),
        }
    }

    fn unconnected(record: &Record) -> RawClient {
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
    fn open_session(&mut self) -> Result<(), i32> {
        let addr = self.worker.address().unwrap();
        let msg = session::encode(&Session::Connect {
            client_id: self.client_id,
            client_name: "test-client",
            address: addr.as_bytes(),
        });
        self.send_am(AM_SESSION, &msg, Vec::new());
        let m = self.next_message(AM_SESSION, "accept");
        match session::decode(m.header()).unwrap() {
            Session::Accept {
                client_id,
                channel,
                status,
                node_id,
                chunk_size,
                node_name,
            } => {
                assert_eq!(client_id, self.client_id);
                assert_eq!(node_id, self.node_id);
                assert_eq!(node_name, self.node_name);
                if status != 0 {
                    return Err(status);
                }
                self.channel = channel;
                self.chunk_size = chunk_size;
                Ok(())
            }
            other => panic!("expected an accept, got {other:?}"),
        }
    }

    fn disconnect(&mut self) {
        let msg = session::encode(&Session::Disconnect {
            client_id: self.client_id,
            channel: self.channel,
        });
        self.send_am(AM_SESSION, &msg, Vec::new());
        self.flush_sends();
    }

    fn send_am(&mut self, id: u16, header: &[u8], payload: Vec<u8>) {
        let r = self
            .ep
            .am_send(id, header, payload, SendOptions::default())
            .unwrap();
        self.sends.push(r);
    }

    fn flush_sends(&mut self) {
        for r in self.sends.drain(..) {
            r.wait(deadline(20)).expect("send completes");
        }
    }

    /// The next message of AM id `id` (the other kind is a test failure).
    fn next_message(&mut self, id: u16, what: &str) -> AmMessage {
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
    fn post(&mut self, req: &Request<'_>, payload: Vec<u8>) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let mut h = Vec::new();
        let route = Route::new(id, self.node_id).on(self.channel);
        wire::encode_request(&mut h, route, req).unwrap();
        self.send_am(AM_REQUEST, &h, payload);
        id
    }

    /// The next reply, with its payload received.
    fn recv(&mut self) -> Got {
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

    fn call(&mut self, req: &Request<'_>, payload: Vec<u8>) -> Got {
        let id = self.post(req, payload);
        let got = self.recv();
        assert_eq!(got.request_id(), id);
        got
    }

    fn ping(&mut self) {
        let got = self.call(
            &Request::Ping {
                len: 0,
                echo: false,
            },
            Vec::new(),
        );
        assert!(matches!(got.ok(), Reply::Ping { .. }));
    }

    fn stats(&mut self) -> serde_json::Value {
        let got = self.call(&Request::Stats, Vec::new());
        assert!(matches!(got.ok(), Reply::Stats { .. }));
        serde_json::from_slice(&got.payload).unwrap()
    }

    fn write(&mut self, path: &str, chunk: u64, offset: u64, data: Vec<u8>) -> Got {
        let req = Request::Write {
            path,
            chunk,
            offset,
            len: data.len() as u64,
            sync: false,
        };
        self.call(&req, data)
    }

    fn read(&mut self, path: &str, chunk: u64, offset: u64, len: u64) -> Got {
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

    fn shutdown(&mut self, force: bool) {
        let got = self.call(&Request::Shutdown { force }, Vec::new());
        assert!(matches!(got.ok(), Reply::Shutdown));
    }
}

fn attr(r: Reply<'_>) -> wire::Attr {
    match r {
        Reply::Create(a) | Reply::Open(a) | Reply::Stat(a) => a,
        other => panic!("expected attributes, got {other:?}"),
    }
}

#[test]
fn connect_ping_write_read() {
    watchdog(120, || {
        let mut d = Daemon::start("basic", |_| {});
        let mut c = RawClient::connect(&d.record);
        assert_eq!(c.chunk_size, 4 << 20);
        c.ping();
        let small = pattern(4096, 1);
        match c.write("dir/a", 0, 100, small.clone()).ok() {
            Reply::Write { written } => assert_eq!(written, 4096),
            r => panic!("{r:?}"),
        }
        let got = c.read("dir/a", 0, 100, 4096);
        assert_eq!(got.payload, small);
        // 1 MiB each way by rendezvous, in chunk 2.
        let big = pattern(MIB, 2);
        c.write("dir/a", 2, 4096, big.clone()).ok();
        let got = c.read("dir/a", 2, 4096, MIB as u64);
        assert!(matches!(got.ok(), Reply::Read { len } if len == MIB as u64));
        assert_eq!(got.payload.len(), MIB);
        assert!(
            got.payload == big,
            "1 MiB read differs from what was written"
        );
        // The file on disk holds the chunks at chunk * chunk_size + offset.
        let size = 2 * (4 << 20) + 4096 + MIB as u64;
        assert_eq!(
            attr(c.call(&Request::Stat { path: "dir/a" }, Vec::new()).ok()).size,
            size
        );
        c.shutdown(false);
        let s = d.join();
        assert!(s.drained);
        assert_eq!(s.requests["write"], 2);
        assert_eq!(s.bytes_written, (4096 + MIB) as u64);
        assert_eq!(s.bytes_read, (4096 + MIB) as u64);
        assert!(s.registered_after_s > 0.0);
    });
}

#[test]
fn every_op() {
    watchdog(120, || {
        let mut d = Daemon::start("ops", |_| {});
        let mut c = RawClient::connect(&d.record);
        let create = |path, exclusive| Request::Create {
            path,
            mode: 0o640,
            exclusive,
        };
        // create / exclusive
        let a = attr(c.call(&create("f1", true), Vec::new()).ok());
        assert_eq!(a.size, 0);
        assert_eq!(a.mode & libc::S_IFMT, libc::S_IFREG);
        assert_eq!(
            c.call(&create("f1", true), Vec::new()).errno(),
            libc::EEXIST
        );
        attr(c.call(&create("f1", false), Vec::new()).ok());
        // open: absent without O_CREAT, then with it
        let open = |path, flags: i32| Request::Open {
            path,
            flags: flags as u32,
        };
        let got = c.call(&open("f2", libc::O_RDONLY), Vec::new());
        assert_eq!(got.errno(), libc::ENOENT);
        assert!(got.message().contains("f2"), "{}", got.message());
        attr(
            c.call(&open("f2", libc::O_CREAT | libc::O_RDWR), Vec::new())
                .ok(),
        );
        attr(c.call(&open("f2", libc::O_RDONLY), Vec::new()).ok());
        // stat of nothing
        assert_eq!(
            c.call(&Request::Stat { path: "nope" }, Vec::new()).errno(),
            libc::ENOENT
        );
        // write: inside the chunk only
        let got = c.write("f1", 0, (4 << 20) - 10, vec![1; 20]);
        assert_eq!(got.errno(), libc::EINVAL);
        assert!(got.message().contains("chunk"), "{}", got.message());
        c.write("f1", 1, 0, pattern(1000, 3)).ok();
        // read: short at end of file, holes are zeros, missing file
        let got = c.read("f1", 1, 500, 4096);
        assert_eq!(got.payload, pattern(1000, 3)[500..].to_vec());
        let got = c.read("f1", 0, 0, 64);
        assert_eq!(got.payload, vec![0; 64]);
        assert_eq!(c.read("f9", 0, 0, 10).errno(), libc::ENOENT);
        assert_eq!(c.read("f1", 0, 1, 4 << 20).errno(), libc::EINVAL);
        // fsync
        c.call(
            &Request::Fsync {
                path: "f1",
                datasync: false,
            },
            Vec::new(),
        )
        .ok();
        assert_eq!(
            c.call(
                &Request::Fsync {
                    path: "f9",
                    datasync: true
                },
                Vec::new()
            )
            .errno(),
            libc::ENOENT
        );
        // truncate: shrinks, and creates when absent
        c.call(
            &Request::Truncate {
                path: "f1",
                size: 10,
            },
            Vec::new(),
        )
        .ok();
        assert_eq!(
            attr(c.call(&Request::Stat { path: "f1" }, Vec::new()).ok()).size,
            10
        );
        c.call(
            &Request::Truncate {
                path: "t/new",
                size: 77,
            },
            Vec::new(),
        )
        .ok();
        assert_eq!(
            attr(c.call(&Request::Stat { path: "t/new" }, Vec::new()).ok()).size,
            77
        );
        // unlink
        c.call(&Request::Unlink { path: "f2" }, Vec::new()).ok();
        assert_eq!(
            c.call(&Request::Unlink { path: "f2" }, Vec::new()).errno(),
            libc::ENOENT
        );
        assert_eq!(
            c.call(&Request::Stat { path: "f2" }, Vec::new()).errno(),
            libc::ENOENT
        );
        // readdir with a cursor: root holds f1, t/ (dir), d/ (dir), z
        for p in ["d/x/deep", "d/y", "z"] {
            c.write(p, 0, 0, vec![5; 3]).ok();
        }
        let mut names = Vec::new();
        let mut cursor = 0;
        let mut calls = 0;
        loop {
            calls += 1;
            let got = c.call(
                &Request::Readdir {
                    path: "",
                    cursor,
                    max_entries: 2,
                },
                Vec::new(),
            );
            let (count, next, eof) = match got.ok() {
                Reply::Readdir {
                    count,
                    next_cursor,
                    eof,
                    ..
                } => (count, next_cursor, eof),
                r => panic!("{r:?}"),
            };
            let entries =
                wire::decode_dir_entries(&got.payload, count, &Limits::default()).unwrap();
            for e in &entries {
                names.push((e.name.to_owned(), e.mode & libc::S_IFMT, e.size));
            }
            cursor = next;
            if eof {
                break;
            }
            assert!(calls < 10);
        }
        assert_eq!(calls, 2);
        let dir = libc::S_IFDIR;
        let reg = libc::S_IFREG;
        assert_eq!(
            names,
            vec![
                ("d".to_owned(), dir, 0),
                ("f1".to_owned(), reg, 10),
                ("t".to_owned(), dir, 0),
                ("z".to_owned(), reg, 3),
            ]
        );
        let got = c.call(
            &Request::Readdir {
                path: "d",
                cursor: 0,
                max_entries: 100,
            },
            Vec::new(),
        );
        let Reply::Readdir { count, eof, .. } = got.ok() else {
            panic!()
        };
        assert!(eof);
        let e = wire::decode_dir_entries(&got.payload, count, &Limits::default()).unwrap();
        let got_names: Vec<_> = e.iter().map(|e| (e.name, e.mode & libc::S_IFMT)).collect();
        assert_eq!(got_names, vec![("x", dir), ("y", reg)]);
        // ping with an echoed payload (eager and rendezvous)
        for len in [100usize, MIB] {
            let data = pattern(len, 9);
            let got = c.call(
                &Request::Ping {
                    len: len as u64,
                    echo: true,
                },
                data.clone(),
            );
            assert!(matches!(got.ok(), Reply::Ping { len: l, .. } if l == len as u64));
            assert!(got.payload == data);
        }
        // stats
        let s = c.stats();
        for key in [
            "requests",
            "errors",
            "bytes_in",
            "bytes_out",
            "decode_errors",
            "queue_depth",
            "queue_peak",
            "in_flight",
            "channels_open",
            "uptime_s",
            "durability",
            "store",
        ] {
            assert!(s.get(key).is_some(), "stats lack {key}: {s}");
        }
        assert_eq!(s["channels_open"], 1);
        assert_eq!(s["durability"], "none");
        assert_eq!(s["requests"]["readdir"], 3);
        assert_eq!(s["errors"]["create"], 1);
        assert_eq!(s["decode_errors"], 0);
        assert!(s["store"]["completed_ops"].as_u64().unwrap() > 0);
        c.shutdown(false);
        let summary = d.join();
        assert!(summary.drained);
        assert!(!d.record_exists(), "record left behind");
    });
}

/// Sends raw bytes as a request header.
fn post_raw(c: &mut RawClient, header: &[u8], payload: Vec<u8>) {
    c.send_am(AM_REQUEST, header, payload);
}

#[test]
fn malformed_messages_are_refused_and_counted() {
    watchdog(120, || {
        let mut d = Daemon::start("garbage", |_| {});
        let mut c = RawClient::connect(&d.record);
        let mut good = Vec::new();
        let route = Route::new(77, c.node_id).on(c.channel);
        wire::encode_request(&mut good, route, &Request::Stat { path: "some/file" }).unwrap();
        let mut dropped = 0u64;
        let mut answered = 0u64;
        // Dropped (the header does not decode): truncated, wrong version,
        // wrong magic, random bytes, a total length that lies.
        let mut cases: Vec<Vec<u8>> = vec![good[..20].to_vec(), Vec::new()];
        let mut v = good.clone();
        v[4] = 2;
        cases.push(v);
        let mut v = good.clone();
        v[0] = b'X';
        cases.push(v);
        let mut v = good.clone();
        v[12] = 200; // var_len larger than the message
        cases.push(v);
        cases.push(pattern(57, 11));
        cases.push(pattern(4000, 12));
        for h in &cases {
            post_raw(&mut c, h, Vec::new());
            dropped += 1;
            c.ping();
        }
        // Unknown channel: dropped.
        let mut v = Vec::new();
        wire::encode_request(
            &mut v,
            Route::new(5, c.node_id).on(999),
            &Request::Ping {
                len: 0,
                echo: false,
            },
        )
        .unwrap();
        post_raw(&mut c, &v, Vec::new());
        dropped += 1;
        c.ping();
        // Header fine, body not: EBADMSG naming the field.
        let mut v = good.clone();
        let n = v.len();
        v[n - 1] = b'/';
        post_raw(&mut c, &v, Vec::new());
        let got = c.recv();
        assert_eq!(got.errno(), libc::EBADMSG);
        assert!(got.message().contains("path"), "{}", got.message());
        answered += 1;
        // Payload length lies (header says 100 bytes, 10 arrive).
        let mut v = Vec::new();
        wire::encode_request(
            &mut v,
            Route::new(6, c.node_id).on(c.channel),
            &Request::Write {
                path: "w",
                chunk: 0,
                offset: 0,
                len: 100,
                sync: false,
            },
        )
        .unwrap();
        post_raw(&mut c, &v, vec![0; 10]);
        let got = c.recv();
        assert_eq!(got.errno(), libc::EBADMSG);
        assert!(got.message().contains("payload_len"), "{}", got.message());
        answered += 1;
        // A write larger than a chunk: its header is beyond the limits,
        // so it is dropped like any header that does not decode.
        let mut v = Vec::new();
        wire::encode_request(
            &mut v,
            Route::new(8, c.node_id).on(c.channel),
            &Request::Write {
                path: "w",
                chunk: 0,
                offset: 0,
                len: (8 << 20) as u64,
                sync: false,
            },
        )
        .unwrap();
        post_raw(&mut c, &v, vec![0; 8 << 20]);
        dropped += 1;
        c.ping();
        // Wrong node: ESTALE.
        let mut v = Vec::new();
        wire::encode_request(
            &mut v,
            Route::new(7, c.node_id + 3).on(c.channel),
            &Request::Stat { path: "x" },
        )
        .unwrap();
        post_raw(&mut c, &v, Vec::new());
        let got = c.recv();
        assert_eq!(got.errno(), libc::ESTALE);
        assert!(got.message().contains("membership"), "{}", got.message());
        answered += 1;
        // A session message that does not decode, and a disconnect of a
        // channel the client does not hold.
        c.send_am(AM_SESSION, &pattern(40, 13), Vec::new());
        dropped += 1;
        let bogus = session::encode(&Session::Disconnect {
            client_id: c.client_id + 1,
            channel: c.channel,
        });
        c.send_am(AM_SESSION, &bogus, Vec::new());
        dropped += 1;
        c.ping();
        // Connects whose worker address is garbage or cut short (UCX would
        // abort on them): refused before UCX sees them.
        let own = c.worker.address().unwrap().as_bytes().to_vec();
        let mut garbage = pattern(300, 20);
        garbage[0] = !own[0];
        for address in [vec![own[0]], own[..16].to_vec(), garbage] {
            let bad = session::encode(&Session::Connect {
                client_id: 99,
                client_name: "garbage",
                address: &address,
            });
            c.send_am(AM_SESSION, &bad, Vec::new());
            dropped += 1;
            c.ping();
        }
        let s = c.stats();
        assert_eq!(s["decode_errors"], dropped + answered, "{s}");
        assert_eq!(s["rejected"]["header"], 8, "{s}");
        assert_eq!(s["rejected"]["channel"], 1, "{s}");
        assert_eq!(s["rejected"]["node"], 1, "{s}");
        assert_eq!(s["rejected"]["session"], 5, "{s}");
        // Still serving real work.
        c.write("after", 0, 0, vec![1, 2, 3]).ok();
        assert_eq!(c.read("after", 0, 0, 3).payload, vec![1, 2, 3]);
        c.shutdown(false);
        let summary = d.join();
        assert_eq!(summary.decode_errors, dropped + answered);
    });
}

#[test]
fn more_requests_than_max_concurrency_wait_and_complete() {
    watchdog(120, || {
        let mut d = Daemon::start("queue", |c| c.max_concurrency = 2);
        let mut c = RawClient::connect(&d.record);
        let n = 48u64;
        let mut ids = Vec::new();
        for i in 0..n {
            let data = pattern(if i % 3 == 0 { MIB } else { 8192 }, i);
            let req = Request::Write {
                path: "q",
                chunk: i,
                offset: 0,
                len: data.len() as u64,
                sync: false,
            };
            ids.push(c.post(&req, data));
        }
        let mut seen = Vec::new();
        for _ in 0..n {
            let got = c.recv();
            assert!(matches!(got.ok(), Reply::Write { .. }));
            seen.push(got.request_id());
        }
        seen.sort_unstable();
        assert_eq!(seen, ids);
        for i in 0..n {
            let len = if i % 3 == 0 { MIB } else { 8192 };
            let got = c.read("q", i, 0, len as u64);
            assert!(got.payload == pattern(len, i), "chunk {i}");
        }
        let s = c.stats();
        assert!(s["queue_peak"].as_u64().unwrap() > 0, "{s}");
        assert!(s["in_flight_peak"].as_u64().unwrap() <= 2, "{s}");
        c.shutdown(false);
        let summary = d.join();
        assert!(summary.queue_peak > 0);
        assert_eq!(summary.requests["write"], n);
    });
}

#[test]
fn shutdown_drains_queued_requests() {
    watchdog(120, || {
        let mut d = Daemon::start("drain", |c| {
            c.max_concurrency = 1;
            c.durability = Durability::FsyncOnClose;
        });
        let mut c = RawClient::connect(&d.record);
        let n = 24;
        for i in 0..n {
            c.post(
                &Request::Write {
                    path: "dr",
                    chunk: i,
                    offset: 0,
                    len: 65536,
                    sync: true,
                },
                pattern(65536, i),
            );
        }
        c.post(&Request::Shutdown { force: false }, Vec::new());
        let mut writes = 0;
        let mut shutdown = false;
        for _ in 0..=n {
            let got = c.recv();
            match got.ok() {
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
        // A new session is refused or finds the daemon gone.
        let s = d.join();
        assert!(s.drained);
        assert_eq!(s.stop_reason, "shutdown request");
        assert_eq!(
            s.fsynced_files, 1,
            "fsync_on_close syncs every file at shutdown"
        );
        assert!(!d.record_exists(), "record left behind");
    });
}

#[test]
fn forced_shutdown_refuses_what_is_queued() {
    watchdog(120, || {
        let mut d = Daemon::start("force", |c| c.max_concurrency = 1);
        let mut c = RawClient::connect(&d.record);
        let n = 24;
        for i in 0..n {
            c.post(
                &Request::Write {
                    path: "fo",
                    chunk: i,
                    offset: 0,
                    len: 65536,
                    sync: true,
                },
                pattern(65536, i),
            );
        }
        c.post(&Request::Shutdown { force: true }, Vec::new());
        let (mut ok, mut refused) = (0, 0);
        for _ in 0..=n {
            let got = c.recv();
            match got.reply().1 {
                Reply::Write { .. } => ok += 1,
                Reply::Error { errno, .. } => {
                    assert_eq!(errno, libc::ESHUTDOWN);
                    refused += 1;
                }
                Reply::Shutdown => {}
                r => panic!("{r:?}"),
            }
        }
        assert_eq!(ok + refused, n);
        let s = d.join();
        assert!(s.forced);
        assert_eq!(s.refused_stopping, refused);
    });
}

#[test]
fn sessions_refused_when_full_and_dropped_after_disconnect() {
    watchdog(120, || {
        let mut d = Daemon::start("chan", |c| c.max_channels = 1);
        let mut a = RawClient::connect(&d.record);
        let mut b = RawClient::unconnected(&d.record);
        assert_eq!(b.open_session(), Err(libc::EBUSY));
        a.ping();
        let old = a.channel;
        a.disconnect();
        // b gets the freed channel.
        assert_eq!(b.open_session(), Ok(()));
        b.ping();
        // a's requests on its old channel number are dropped (no reply).
        a.channel = if old == b.channel { 999 } else { old };
        a.post(
            &Request::Ping {
                len: 0,
                echo: false,
            },
            Vec::new(),
        );
        a.flush_sends();
        let s = b.stats();
        assert_eq!(s["connects_refused"], 1, "{s}");
        assert_eq!(s["rejected"]["channel"], 1, "{s}");
        assert!(a.inbox.borrow().is_empty());
        b.shutdown(false);
        d.join();
    });
}

#[test]
fn rpc_server_records_in_the_daemon_trace() {
    watchdog(120, || {
        let traces = TempDir::new("trace");
        let dir = traces.path().to_path_buf();
        let mut d = Daemon::start("traced", move |c| {
            c.trace_dir = Some(dir);
            c.node_id = 5;
        });
        let mut c = RawClient::connect(&d.record);
        c.write("tr", 0, 0, pattern(MIB, 1)).ok();
        c.read("tr", 0, 0, MIB as u64).ok();
        assert_eq!(c.read("none", 0, 0, 1).errno(), libc::ENOENT);
        c.ping();
        c.shutdown(false);
        let s = d.join();
        let path = s.trace_path.clone().unwrap();
        let p = parse(&std::fs::read(&path).unwrap()).unwrap();
        assert!(
            p.header_json.contains("\"process\": \"daemon\""),
            "{}",
            p.header_json
        );
        let rpc: Vec<_> = p
            .records
            .iter()
            .filter(|r| r.kind == Kind::RpcServer as u8)
            .collect();
        assert_eq!(rpc.len(), 5, "write, read, failed read, ping, shutdown");
        assert!(rpc.iter().all(|r| r.node == 5));
        let write = rpc.iter().find(|r| r.op == 1).unwrap();
        assert_eq!(write.bytes, MIB as u64);
        assert!(write.d1 > 0, "storage time of a write");
        let read = rpc.iter().find(|r| r.op == 2 && r.status == 0).unwrap();
        assert_eq!(read.bytes, MIB as u64);
        assert!(
            rpc.iter()
                .any(|r| r.op == 2 && i32::from(r.status) == libc::ENOENT)
        );
        assert!(p.records.iter().any(|r| r.kind == Kind::StorageOp as u8));
        let _ = d.data_dir;
    });
}

/// A 1 MiB write-then-read load against a running daemon (found through
/// `BENCHFS_LOAD_REGISTRY`), for measurements by hand:
/// `BENCHFS_LOAD_REGISTRY=DIR cargo test --release --test server -- --ignored load`.
/// `BENCHFS_LOAD_MIB` (default 1024) and `BENCHFS_LOAD_DEPTH` (default 8).
#[test]
#[ignore = "drives an external daemon; run by hand"]
fn load_against_a_running_daemon() {
    let Ok(dir) = std::env::var("BENCHFS_LOAD_REGISTRY") else {
        return;
    };
    let env_num = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let total = env_num("BENCHFS_LOAD_MIB", 1024);
    let depth = env_num("BENCHFS_LOAD_DEPTH", 8);
    watchdog(600, move || {
        let records = membership::wait_for(
            std::path::Path::new(&dir),
            &Expected::Count(1),
            deadline(30),
        )
        .unwrap();
        let mut c = RawClient::connect(&records[0]);
        // Round trips, one at a time: ping (no storage) and 4 KiB reads.
        let lat = |c: &mut RawClient, what: &str, n: usize, req: &Request<'_>| {
            let mut v: Vec<f64> = (0..n)
                .map(|_| {
                    let t = Instant::now();
                    c.call(req, Vec::new()).ok();
                    t.elapsed().as_secs_f64() * 1e6
                })
                .collect();
            v.sort_by(f64::total_cmp);
            eprintln!(
                "load {what}: {n} round trips, p50 {:.1} us, p99 {:.1} us",
                v[n / 2],
                v[n * 99 / 100]
            );
        };
        lat(
            &mut c,
            "ping",
            20_000,
            &Request::Ping {
                len: 0,
                echo: false,
            },
        );
        c.write("lat", 0, 0, pattern(4096, 1)).ok();
        let read4k = Request::Read {
            path: "lat",
            chunk: 0,
            offset: 0,
            len: 4096,
        };
        lat(&mut c, "read 4 KiB", 20_000, &read4k);
        let per_chunk = c.chunk_size / MIB as u64;
        let data = pattern(MIB, 42);
        let place = |i: u64| (i / per_chunk, (i % per_chunk) * MIB as u64);
        for phase in ["write", "read"] {
            let start = Instant::now();
            let (mut posted, mut done) = (0u64, 0u64);
            while done < total {
                while posted < total && posted - done < depth {
                    let (chunk, offset) = place(posted);
                    if phase == "write" {
                        let req = Request::Write {
                            path: "load",
                            chunk,
                            offset,
                            len: MIB as u64,
                            sync: false,
                        };
                        c.post(&req, data.clone());
                    } else {
                        let req = Request::Read {
                            path: "load",
                            chunk,
                            offset,
                            len: MIB as u64,
                        };
                        c.post(&req, Vec::new());
                    }
                    posted += 1;
                }
                let got = c.recv();
                match got.ok() {
                    Reply::Write { written } => assert_eq!(written, MIB as u64),
                    Reply::Read { len } => {
                        assert_eq!(len, MIB as u64);
                        assert!(got.payload == data);
                    }
                    r => panic!("{r:?}"),
                }
                done += 1;
            }
            let s = start.elapsed().as_secs_f64();
            eprintln!(
                "load {phase}: {total} x 1 MiB, {depth} in flight: {:.3} s, {:.0} MiB/s",
                s,
                total as f64 / s
            );
        }
        let stats = c.stats();
        eprintln!("daemon stats: {stats}");
        c.disconnect();
    });
}
