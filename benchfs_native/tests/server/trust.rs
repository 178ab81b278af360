//! What a daemon refuses to do for any caller: set-user-ID backing files,
//! following links planted in its data directory, sharing its data
//! directory or registry name with another live daemon.

use std::os::unix::fs::PermissionsExt as _;

use crate::harness::*;

#[test]
fn setuid_setgid_and_sticky_stay_in_the_record_never_on_a_backing_file() {
    watchdog(120, || {
        let mut d = Daemon::start("setuid", |_| {});
        let mut c = RawClient::connect(&d.record);
        for (i, asked) in [0o4755_u32, 0o2755, 0o1777, 0o7777].into_iter().enumerate() {
            let path = format!("s{i}");
            let req = Request::Create {
                path: &path,
                mode: asked,
                rdev: 0,
                uid: 0,
                gid: 0,
                exclusive: true,
                parent_here: true,
            };
            // The record keeps them (what the mount, `nosuid`, shows).
            let a = attr(c.call(&req, Vec::new()).ok());
            assert_eq!(a.mode & 0o7777, asked, "reply mode {:o}", a.mode);
            let stat = Request::Stat {
                path: &path,
                data: false,
            };
            let kept = attr(c.call(&stat, Vec::new()).ok()).mode;
            assert_eq!(kept & 0o7777, asked, "record mode {kept:o}");
            // Its data, written, is an ordinary file.
            let data = format!("@{i}");
            c.write(&data, 0, 0, vec![1; 10]).ok();
            let backing = d.data_dir.join(&data);
            let on_disk = std::fs::metadata(&backing).unwrap().permissions().mode();
            assert_eq!(on_disk & 0o7000, 0, "{} is {on_disk:o}", backing.display());
        }
        c.shutdown(false);
        d.join();
    });
}

#[test]
fn a_link_planted_in_the_data_directory_is_never_followed() {
    watchdog(120, || {
        let mut d = Daemon::start("symlink", |_| {});
        let outside = TempDir::new("symlink-outside");
        let target = outside.path().join("root-only");
        std::fs::write(&target, b"do not touch").unwrap();
        std::os::unix::fs::symlink(&target, d.data_dir.join("victim")).unwrap();
        let mut c = RawClient::connect(&d.record);
        let refused = |got: Got, what: &str| {
            let errno = got.errno();
            assert!(
                errno == libc::ELOOP || errno == libc::EXDEV,
                "{what}: errno {errno}"
            );
            let m = got.message();
            assert!(
                m.contains("victim") && m.contains("symbolic link"),
                "{what}: {m}"
            );
        };
        refused(c.write("victim", 0, 0, vec![7; 4096]), "write");
        refused(c.read("victim", 0, 0, 12), "read");
        let stat = Request::Stat {
            path: "victim",
            data: true,
        };
        refused(c.call(&stat, Vec::new()), "stat");
        let truncate = Request::Truncate {
            path: "victim",
            size: 0,
        };
        refused(c.call(&truncate, Vec::new()), "truncate");
        assert_eq!(std::fs::read(&target).unwrap(), b"do not touch");
        // The daemon keeps serving ordinary files.
        c.write("plain", 0, 0, vec![1; 4096]).ok();
        assert_eq!(c.read("plain", 0, 0, 4096).payload, vec![1; 4096]);
        c.shutdown(false);
        d.join();
    });
}

#[test]
fn a_connect_without_the_key_or_with_another_is_refused_and_others_keep_working() {
    watchdog(120, || {
        let mut d = Daemon::start("sessionkey", |_| {});
        let mut good = RawClient::connect(&d.record);
        good.ping();
        let mut keyless = RawClient::unconnected(&d.record);
        keyless.key = None;
        assert_eq!(keyless.open_session(), Err(libc::EACCES));
        let mut wrong = RawClient::unconnected(&d.record);
        wrong.key = Some(SessionKey::random("wrong").unwrap());
        assert_eq!(wrong.open_session(), Err(libc::EACCES));
        // A connect signed long ago is refused by its time.
        let mut late = RawClient::unconnected(&d.record);
        let old = late.connect_message([7; NONCE_LEN], now_unix_ns() - 3_600_000_000_000);
        late.send_connect(&old);
        assert_eq!(late.await_accept(), Err(libc::EKEYEXPIRED));
        good.ping();
        good.write("still", 0, 0, vec![5; 100]).ok();
        let s = good.stats();
        assert_eq!(s["rejected"]["session"], 3, "{s}");
        good.shutdown(false);
        let summary = d.join();
        assert_eq!(summary.connects_refused, 3);
    });
}

#[test]
fn a_replayed_connect_opens_nothing() {
    watchdog(120, || {
        let mut d = Daemon::start("replay", |_| {});
        let mut c = RawClient::unconnected(&d.record);
        let hello = c.connect_message([42; NONCE_LEN], now_unix_ns());
        c.send_connect(&hello);
        assert_eq!(c.await_accept(), Ok(()));
        let first = c.channel;
        // The same bytes again, as a sniffer on the host would send them.
        c.send_connect(&hello);
        c.ping();
        let s = c.stats();
        assert_eq!(s["rejected"]["session"], 1, "{s}");
        assert_eq!(c.channel, first);
        assert!(c.inbox.borrow().is_empty(), "the replay was answered");
        c.shutdown(false);
        d.join();
    });
}

#[test]
fn a_request_on_another_clients_channel_is_refused() {
    watchdog(120, || {
        let mut d = Daemon::start("forged", |_| {});
        let mut owner = RawClient::connect(&d.record);
        let mut thief = RawClient::connect(&d.record);
        assert_ne!(owner.channel, thief.channel);
        owner.write("secret", 0, 0, vec![9; 64]).ok();
        // The thief puts the owner's channel number in its header, with
        // its own token and with none.
        for token in [thief.token, 0] {
            let mut h = Vec::new();
            let route = Route::new(500, thief.node_id)
                .on(owner.channel)
                .with_token(token);
            let req = Request::Read {
                path: "secret",
                chunk: 0,
                offset: 0,
                len: 64,
            };
            wire::encode_request(&mut h, route, &req).unwrap();
            thief.send_am(AM_REQUEST, &h, Vec::new());
        }
        thief.ping();
        owner.ping();
        let s = owner.stats();
        assert_eq!(s["rejected"]["channel"], 2, "{s}");
        assert!(
            thief.inbox.borrow().is_empty(),
            "a forged request was answered"
        );
        assert_eq!(owner.read("secret", 0, 0, 64).payload, vec![9; 64]);
        owner.shutdown(false);
        d.join();
    });
}

#[test]
fn a_flood_beyond_the_queue_bound_gets_ebusy_and_the_daemon_keeps_serving() {
    watchdog(120, || {
        let mut d = Daemon::start("flood", |cfg| {
            cfg.max_concurrency = 1;
            cfg.max_queued = 2;
        });
        let mut c = RawClient::connect(&d.record);
        let ids: Vec<u64> = (0..16)
            .map(|i| {
                let req = Request::Write {
                    path: "flood",
                    chunk: 0,
                    offset: i * 65536,
                    len: 65536,
                    sync: true,
                };
                c.post(&req, vec![3; 65536])
            })
            .collect();
        let mut busy = 0;
        for _ in &ids {
            let got = c.recv();
            if let (_, Reply::Error { errno, message, .. }) = got.reply() {
                assert_eq!(errno, libc::EBUSY, "{message}");
                assert!(message.contains("requests waiting"), "{message}");
                busy += 1;
            }
        }
        assert!(busy >= 1, "no request was refused beyond a queue of 2");
        c.ping();
        c.write("after", 0, 0, vec![1; 10]).ok();
        c.shutdown(false);
        d.join();
    });
}

#[test]
fn an_idle_channel_is_freed_when_every_channel_is_taken() {
    watchdog(120, || {
        let mut d = Daemon::start("reclaim", |cfg| {
            cfg.max_channels = 1;
            cfg.channel_idle_reclaim = Duration::from_millis(300);
        });
        let mut gone = RawClient::connect(&d.record);
        gone.ping();
        // Busy a moment ago: not taken from it.
        let mut next = RawClient::unconnected(&d.record);
        assert_eq!(next.open_session(), Err(libc::EBUSY));
        // Idle past the bound (the client "died" without a disconnect).
        std::thread::sleep(Duration::from_millis(400));
        let mut fresh = RawClient::unconnected(&d.record);
        assert_eq!(fresh.open_session(), Ok(()));
        fresh.ping();
        gone.post(
            &Request::Ping {
                len: 0,
                echo: false,
            },
            Vec::new(),
        );
        gone.flush_sends();
        // The old client's request is dropped (its channel is gone).
        let until = deadline(20);
        let s = loop {
            let s = fresh.stats();
            if s["rejected"]["channel"] == 1 || Instant::now() > until {
                break s;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(s["channels_reclaimed"], 1, "{s}");
        assert_eq!(s["rejected"]["channel"], 1, "{s}");
        fresh.shutdown(false);
        d.join();
    });
}
