//! Every operation against a daemon, and the basic round trip.

use crate::harness::*;

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
