//! Every operation against a daemon, and the basic round trip (links and
//! device nodes: `links_and_devices`).

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
            attr(c.call(&data_stat("dir/a"), Vec::new()).ok()).size,
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

fn data_stat(path: &str) -> Request<'_> {
    Request::Stat { path, data: true }
}

fn readdir_all(c: &mut RawClient, path: &str, page: u32) -> (Vec<(String, u32, u64)>, u32) {
    let mut names = Vec::new();
    let mut cursor = 0;
    let mut calls = 0;
    loop {
        calls += 1;
        let got = c.call(
            &Request::Readdir {
                path,
                cursor,
                max_entries: page,
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
        let entries = wire::decode_dir_entries(&got.payload, count, &Limits::default()).unwrap();
        for e in &entries {
            names.push((e.name.to_owned(), e.mode & libc::S_IFMT, e.ino));
        }
        cursor = next;
        if eof {
            break;
        }
        assert!(calls < 100);
    }
    (names, calls)
}

#[test]
fn data_ops() {
    watchdog(120, || {
        let mut d = Daemon::start("data", |_| {});
        let mut c = RawClient::connect(&d.record);
        // write: inside the chunk only
        let got = c.write("@1", 0, (4 << 20) - 10, vec![1; 20]);
        assert_eq!(got.errno(), libc::EINVAL);
        assert!(got.message().contains("chunk"), "{}", got.message());
        c.write("@1", 1, 0, pattern(1000, 3)).ok();
        // read: short at end of file, holes are zeros, missing file
        let got = c.read("@1", 1, 500, 4096);
        assert_eq!(got.payload, pattern(1000, 3)[500..].to_vec());
        let got = c.read("@1", 0, 0, 64);
        assert_eq!(got.payload, vec![0; 64]);
        assert_eq!(c.read("@9", 0, 0, 10).errno(), libc::ENOENT);
        assert_eq!(c.read("@1", 0, 1, 4 << 20).errno(), libc::EINVAL);
        let fsync = |path, datasync| Request::Fsync { path, datasync };
        c.call(&fsync("@1", false), Vec::new()).ok();
        assert_eq!(c.call(&fsync("@9", true), Vec::new()).errno(), libc::ENOENT);
        // truncate: shrinks, and creates when absent
        let truncate = |path, size| Request::Truncate { path, size };
        c.call(&truncate("@1", 10), Vec::new()).ok();
        assert_eq!(attr(c.call(&data_stat("@1"), Vec::new()).ok()).size, 10);
        c.call(&truncate("@2", 77), Vec::new()).ok();
        let a = attr(c.call(&data_stat("@2"), Vec::new()).ok());
        assert_eq!((a.size, a.kind), (77, FileKind::File));
        // times of a data object
        let past = 1_000_000_000_u64 * 1_000_000_000;
        let set = Request::Setattr {
            path: "@2",
            mask: wire::SET_MTIME,
            mode: 0,
            uid: 0,
            gid: 0,
            size: 0,
            atime_unix_ns: 0,
            mtime_unix_ns: past,
            data: true,
        };
        c.call(&set, Vec::new()).ok();
        assert_eq!(
            attr(c.call(&data_stat("@2"), Vec::new()).ok()).mtime_unix_ns,
            past
        );
        // removal of a data object
        let remove = |path| Request::Unlink {
            path,
            ino: 0,
            data: true,
            parent_here: false,
        };
        c.call(&remove("@2"), Vec::new()).ok();
        assert_eq!(c.call(&remove("@2"), Vec::new()).errno(), libc::ENOENT);
        assert_eq!(c.call(&data_stat("@2"), Vec::new()).errno(), libc::ENOENT);
        // data objects are not namespace records
        let (names, _) = readdir_all(&mut c, "", 10);
        assert!(names.is_empty(), "{names:?}");
        c.shutdown(false);
        assert!(d.join().drained);
    });
}

#[test]
fn every_op() {
    watchdog(120, || {
        let mut d = Daemon::start("ops", |_| {});
        let mut c = RawClient::connect(&d.record);
        let create = |path, exclusive| Request::Create {
            path,
            mode: 0o4640,
            rdev: 0,
            uid: 1234,
            gid: 55,
            exclusive,
            parent_here: false,
        };
        // create / exclusive
        let a = match c.call(&create("f1", true), Vec::new()).ok() {
            Reply::Create { attr, created } => {
                assert!(created);
                attr
            }
            r => panic!("{r:?}"),
        };
        assert_eq!(a.size, 0);
        assert_eq!(a.mode, libc::S_IFREG | 0o4640, "set-user-ID is kept");
        assert_eq!(
            (a.uid, a.gid, a.nlink, a.kind),
            (1234, 55, 1, FileKind::File)
        );
        assert!(a.ino > 1);
        assert_eq!(
            c.call(&create("f1", true), Vec::new()).errno(),
            libc::EEXIST
        );
        match c.call(&create("f1", false), Vec::new()).ok() {
            Reply::Create { attr, created } => assert_eq!((attr.ino, created), (a.ino, false)),
            r => panic!("{r:?}"),
        }
        // open: absent, present
        let open = |path, flags: i32| Request::Open {
            path,
            flags: flags as u32,
        };
        let got = c.call(&open("f2", libc::O_RDONLY), Vec::new());
        assert_eq!(got.errno(), libc::ENOENT);
        assert!(got.message().contains("f2"), "{}", got.message());
        assert_eq!(
            attr(c.call(&open("f1", libc::O_RDONLY), Vec::new()).ok()).ino,
            a.ino
        );
        // stat: nothing, the root, a file
        let stat = |path| Request::Stat { path, data: false };
        assert_eq!(c.call(&stat("nope"), Vec::new()).errno(), libc::ENOENT);
        let root = attr(c.call(&stat(""), Vec::new()).ok());
        assert_eq!((root.ino, root.kind, root.nlink), (1, FileKind::Dir, 2));
        assert_eq!(attr(c.call(&stat("f1"), Vec::new()).ok()), a);
        // mkdir, check_parent, open of a directory for writing
        let mkdir = |path| Request::Mkdir {
            path,
            mode: 0o1755,
            uid: 1,
            gid: 2,
            parent_here: false,
        };
        let dir = attr(c.call(&mkdir("d"), Vec::new()).ok());
        assert_eq!(
            (dir.kind, dir.mode, dir.nlink),
            (FileKind::Dir, libc::S_IFDIR | 0o1755, 2)
        );
        assert_eq!(c.call(&mkdir("d"), Vec::new()).errno(), libc::EEXIST);
        assert_eq!(c.call(&mkdir("f1"), Vec::new()).errno(), libc::EEXIST);
        assert_eq!(
            c.call(&open("d", libc::O_WRONLY), Vec::new()).errno(),
            libc::EISDIR
        );
        let check = |path| Request::CheckParent {
            path,
            subdir: false,
            stamp_only: false,
        };
        c.call(&check("d"), Vec::new()).ok();
        c.call(&check(""), Vec::new()).ok();
        assert_eq!(c.call(&check("f1"), Vec::new()).errno(), libc::ENOTDIR);
        assert_eq!(c.call(&check("x"), Vec::new()).errno(), libc::ENOENT);
        // A subdirectory added, then gone: the parent's nlink follows, and
        // each step stamps its mtime and ctime.
        let subdir = |stamp_only| Request::CheckParent {
            path: "d",
            subdir: true,
            stamp_only,
        };
        let d_attr = |c: &mut RawClient| {
            let a = attr(c.call(&stat("d"), Vec::new()).ok());
            (a.nlink, a.mtime_unix_ns, a.ctime_unix_ns)
        };
        let before = d_attr(&mut c);
        c.call(&subdir(false), Vec::new()).ok();
        let added = d_attr(&mut c);
        assert_eq!(added.0, 3);
        assert!(added.1 > before.1 && added.2 == added.1);
        c.call(&subdir(true), Vec::new()).ok();
        let gone = d_attr(&mut c);
        assert_eq!(gone.0, 2);
        assert!(gone.1 > added.1);
        // A create that checks its parent here, with the insert.
        let here = |path| Request::Create {
            path,
            mode: 0o644,
            rdev: 0,
            uid: 0,
            gid: 0,
            exclusive: true,
            parent_here: true,
        };
        assert_eq!(c.call(&here("x/f"), Vec::new()).errno(), libc::ENOENT);
        assert_eq!(c.call(&here("f1/f"), Vec::new()).errno(), libc::ENOTDIR);
        c.call(&here("d/inside"), Vec::new()).ok();
        let unlink_inside = Request::Unlink {
            path: "d/inside",
            ino: 0,
            data: false,
            parent_here: false,
        };
        c.call(&unlink_inside, Vec::new()).ok();
        // rmdir steps
        let rmdir = |path, step| Request::Rmdir { path, step, ino: 0 };
        c.call(&rmdir("d", RmdirStep::Mark), Vec::new()).ok();
        assert_eq!(c.call(&check("d"), Vec::new()).errno(), libc::ENOENT);
        assert_eq!(c.call(&here("d/late"), Vec::new()).errno(), libc::ENOENT);
        assert_eq!(
            c.call(&rmdir("d", RmdirStep::Mark), Vec::new()).errno(),
            libc::EBUSY
        );
        c.call(&rmdir("d", RmdirStep::Unmark), Vec::new()).ok();
        c.call(&check("d"), Vec::new()).ok();
        assert_eq!(
            c.call(&rmdir("f1", RmdirStep::Mark), Vec::new()).errno(),
            libc::ENOTDIR
        );
        // link (rename's insert): replaces a file, not a directory
        c.call(&create("f2", true), Vec::new()).ok();
        let record = wire::Record {
            ino: a.ino,
            mode: a.mode,
            rdev: 0,
            uid: a.uid,
            gid: a.gid,
            atime_unix_ns: 1,
            mtime_unix_ns: 2,
            ctime_unix_ns: 3,
        };
        let link = |path| Request::Link {
            path,
            record,
            target_len: 0,
            parent_here: false,
            exclusive: false,
            linked: false,
        };
        let f2 = attr(c.call(&stat("f2"), Vec::new()).ok());
        match c.call(&link("f2"), Vec::new()).ok() {
            Reply::Link {
                replaced,
                linked,
                name_replaced,
            } => assert_eq!((replaced, linked, name_replaced), (f2.ino, false, true)),
            r => panic!("{r:?}"),
        }
        assert_eq!(attr(c.call(&stat("f2"), Vec::new()).ok()).ino, a.ino);
        assert_eq!(c.call(&link("d"), Vec::new()).errno(), libc::EISDIR);
        // unlink: only with the right id, never a directory
        let unlink = |path, ino| Request::Unlink {
            path,
            ino,
            data: false,
            parent_here: false,
        };
        assert_eq!(
            c.call(&unlink("f2", a.ino + 1), Vec::new()).errno(),
            libc::ENOENT
        );
        match c.call(&unlink("f2", a.ino), Vec::new()).ok() {
            Reply::Unlink { ino, linked, .. } => assert_eq!((ino, linked), (a.ino, false)),
            r => panic!("{r:?}"),
        }
        assert_eq!(c.call(&unlink("f2", 0), Vec::new()).errno(), libc::ENOENT);
        assert_eq!(c.call(&unlink("d", 0), Vec::new()).errno(), libc::EISDIR);
        // setattr of a record
        let set = Request::Setattr {
            path: "f1",
            mask: wire::SET_MODE | wire::SET_UID | wire::SET_MTIME,
            mode: 0o6777,
            uid: 99,
            gid: 0,
            size: 0,
            atime_unix_ns: 0,
            mtime_unix_ns: 42,
            data: false,
        };
        let got = attr(c.call(&set, Vec::new()).ok());
        assert_eq!(
            (got.mode, got.uid, got.gid, got.mtime_unix_ns),
            (libc::S_IFREG | 0o6777, 99, 55, 42)
        );
        // statfs: the data directory's file system, the records
        let fs = match c.call(&Request::Statfs, Vec::new()).ok() {
            Reply::Statfs(f) => f,
            r => panic!("{r:?}"),
        };
        assert_eq!(fs.files, 2, "f1 and d");
        assert!(fs.blocks > 0 && fs.block_size > 0 && fs.blocks_free <= fs.blocks);
        // readdir with a cursor: the root holds d, f1, z; d holds x, y
        for p in ["d/x", "d/y", "z"] {
            c.call(&create(p, true), Vec::new()).ok();
        }
        c.call(&mkdir("d/x/deep"), Vec::new()).ok();
        let (names, calls) = readdir_all(&mut c, "", 2);
        assert_eq!(calls, 2);
        let kinds: Vec<_> = names.iter().map(|(n, k, _)| (n.as_str(), *k)).collect();
        let (dir_t, reg) = (libc::S_IFDIR, libc::S_IFREG);
        assert_eq!(kinds, vec![("d", dir_t), ("f1", reg), ("z", reg)]);
        assert_eq!(names[1].2, a.ino);
        // A peer's name over 255 bytes makes no record, so listings of
        // its directory still encode.
        let long = format!("d/{}", "n".repeat(256));
        for req in [create(&long, true), mkdir(&long)] {
            assert_eq!(c.call(&req, Vec::new()).errno(), libc::ENAMETOOLONG);
        }
        let (names, _) = readdir_all(&mut c, "d", 100);
        let kinds: Vec<_> = names.iter().map(|(n, k, _)| (n.as_str(), *k)).collect();
        assert_eq!(kinds, vec![("x", reg), ("y", reg)]);
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
        assert_eq!(s["errors"]["create"], 5);
        assert_eq!(s["errors"]["mkdir"], 3);
        // f1, z, d, d/x, d/y, d/x/deep
        assert_eq!(s["namespace_records"], 6);
        assert_eq!(s["decode_errors"], 0);
        c.shutdown(false);
        let summary = d.join();
        assert!(summary.drained);
        assert!(!d.record_exists(), "record left behind");
    });
}
