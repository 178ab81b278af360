//! Concurrency bounds, draining and forced shutdown, the session table.

use crate::harness::*;

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
        c.writes_then_shutdown("dr", n, true);
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
        let mut refused = RawClient::unconnected(&d.record);
        assert_eq!(refused.open_session(), Err(libc::EBUSY));
        a.ping();
        let old = a.channel;
        a.disconnect();
        // b, connecting anew as a client does after a refusal (the refusal
        // closed the endpoint pair it came on), gets the freed channel.
        let mut b = RawClient::unconnected(&d.record);
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
