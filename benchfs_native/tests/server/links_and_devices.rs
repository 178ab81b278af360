//! The names that are not plain files: symbolic links, device nodes and
//! hard links, step by step against a daemon.

use crate::harness::*;

#[test]
fn symlinks() {
    watchdog(120, || {
        let mut d = Daemon::start("links", |_| {});
        let mut c = RawClient::connect(&d.record);
        let symlink = |path, len: usize, parent_here| Request::Symlink {
            path,
            uid: 7,
            gid: 8,
            len: len as u64,
            parent_here,
        };
        let call_symlink = |c: &mut RawClient, path, target: &str, here| {
            c.call(
                &symlink(path, target.len(), here),
                target.as_bytes().to_vec(),
            )
        };
        let stat = |path| Request::Stat { path, data: false };
        let readlink = |path| Request::Readlink { path };
        // Made with its target, reported as a link: size the target's.
        let l = attr(call_symlink(&mut c, "l", "no/such/target", false).ok());
        assert_eq!(
            (l.kind, l.mode, l.size, l.nlink, l.uid, l.gid),
            (FileKind::Symlink, libc::S_IFLNK | 0o777, 14, 1, 7, 8)
        );
        assert_eq!(attr(c.call(&stat("l"), Vec::new()).ok()), l);
        let got = c.call(&readlink("l"), Vec::new());
        match got.ok() {
            Reply::Readlink { attr, len } => assert_eq!((attr, len), (l, 14)),
            r => panic!("{r:?}"),
        }
        assert_eq!(got.payload, b"no/such/target");
        // A long target travels by rendezvous like any payload.
        let long = "t/".repeat(wire::MAX_TARGET / 2) + "x";
        assert_eq!(long.len(), wire::MAX_TARGET);
        call_symlink(&mut c, "long", &long, false).ok();
        assert_eq!(
            c.call(&readlink("long"), Vec::new()).payload,
            long.as_bytes()
        );
        // The name is taken; the parent is checked with the insert.
        assert_eq!(call_symlink(&mut c, "l", "x", false).errno(), libc::EEXIST);
        c.call(
            &Request::Create {
                path: "f",
                mode: 0o644,
                rdev: 0,
                uid: 0,
                gid: 0,
                exclusive: true,
                parent_here: false,
            },
            Vec::new(),
        )
        .ok();
        assert_eq!(
            call_symlink(&mut c, "f/l", "x", true).errno(),
            libc::ENOTDIR
        );
        assert_eq!(call_symlink(&mut c, "n/l", "x", true).errno(), libc::ENOENT);
        // A target the daemon cannot keep: a NUL, not UTF-8.
        let got = call_symlink(&mut c, "bad", "a\0b", false);
        assert_eq!(got.errno(), libc::EINVAL);
        let got = c.call(&symlink("bad", 2, false), vec![0xff, 0xfe]);
        assert_eq!(got.errno(), libc::EINVAL);
        assert!(got.message().contains("UTF-8"), "{}", got.message());
        // readlink of what is not a link; open of a link is never followed.
        assert_eq!(c.call(&readlink("f"), Vec::new()).errno(), libc::EINVAL);
        assert_eq!(c.call(&readlink("gone"), Vec::new()).errno(), libc::ENOENT);
        let open = Request::Open {
            path: "l",
            flags: libc::O_RDONLY as u32,
        };
        assert_eq!(c.call(&open, Vec::new()).errno(), libc::ELOOP);
        // rename's insert of a link record with its target, over a file:
        // the file's data is named for removal.
        let f = attr(c.call(&stat("f"), Vec::new()).ok());
        let record = wire::Record {
            ino: l.ino,
            mode: l.mode,
            rdev: 0,
            uid: l.uid,
            gid: l.gid,
            atime_unix_ns: 1,
            mtime_unix_ns: 2,
            ctime_unix_ns: 3,
        };
        let link = Request::Link {
            path: "f",
            record,
            target_len: 6,
            parent_here: false,
            exclusive: false,
            linked: false,
        };
        match c.call(&link, b"moved!".to_vec()).ok() {
            Reply::Link {
                replaced,
                linked,
                name_replaced,
            } => assert_eq!((replaced, linked, name_replaced), (f.ino, false, true)),
            r => panic!("{r:?}"),
        }
        assert_eq!(c.call(&readlink("f"), Vec::new()).payload, b"moved!");
        // unlink of a link names no data; the link is gone.
        let unlink = |path, ino| Request::Unlink {
            path,
            ino,
            data: false,
            parent_here: false,
        };
        match c.call(&unlink("l", l.ino), Vec::new()).ok() {
            Reply::Unlink { ino, linked, .. } => assert_eq!((ino, linked), (0, false)),
            r => panic!("{r:?}"),
        }
        assert_eq!(c.call(&readlink("l"), Vec::new()).errno(), libc::ENOENT);
        // A link's size cannot be set.
        let set = Request::Setattr {
            path: "f",
            mask: wire::SET_SIZE,
            mode: 0,
            uid: 0,
            gid: 0,
            size: 1,
            atime_unix_ns: 0,
            mtime_unix_ns: 0,
            data: false,
        };
        assert_eq!(c.call(&set, Vec::new()).errno(), libc::EINVAL);
        let s = c.stats();
        assert_eq!(s["requests"]["symlink"], 7);
        assert_eq!(s["errors"]["symlink"], 5);
        assert_eq!(s["decode_errors"], 0);
        // long, f (now a link)
        assert_eq!(s["namespace_records"], 2);
        c.shutdown(false);
        d.join();
    });
}

#[test]
fn device_nodes_keep_their_number_and_are_never_opened() {
    watchdog(120, || {
        let mut d = Daemon::start("devices", |_| {});
        let mut c = RawClient::connect(&d.record);
        let number = (8 << 8) | 1;
        let create = Request::Create {
            path: "sda1",
            mode: libc::S_IFBLK | 0o640,
            rdev: number,
            uid: 0,
            gid: 6,
            exclusive: true,
            parent_here: false,
        };
        let a = match c.call(&create, Vec::new()).ok() {
            Reply::Create { attr, created } => {
                assert!(created);
                attr
            }
            r => panic!("{r:?}"),
        };
        // On the wire a device's size is its number.
        assert_eq!(
            (a.kind, a.mode, a.size, a.nlink),
            (
                FileKind::BlockDev,
                libc::S_IFBLK | 0o640,
                u64::from(number),
                1
            )
        );
        let open = Request::Open {
            path: "sda1",
            flags: libc::O_RDWR as u32,
        };
        assert_eq!(c.call(&open, Vec::new()).errno(), libc::ENXIO);
        // A rename's insert carries the number.
        let link = Request::Link {
            path: "moved",
            record: wire::Record {
                ino: a.ino,
                mode: a.mode,
                rdev: number,
                uid: a.uid,
                gid: a.gid,
                atime_unix_ns: 1,
                mtime_unix_ns: 2,
                ctime_unix_ns: 3,
            },
            target_len: 0,
            parent_here: false,
            exclusive: true,
            linked: false,
        };
        assert!(matches!(c.call(&link, Vec::new()).ok(), Reply::Link { .. }));
        let stat = Request::Stat {
            path: "moved",
            data: false,
        };
        let m = attr(c.call(&stat, Vec::new()).ok());
        assert_eq!(
            (m.kind, m.size, m.ino),
            (FileKind::BlockDev, u64::from(number), a.ino)
        );
        let open = Request::Open {
            path: "moved",
            flags: libc::O_RDONLY as u32,
        };
        assert_eq!(c.call(&open, Vec::new()).errno(), libc::ENXIO);
        c.shutdown(false);
        d.join();
    });
}

#[test]
fn hard_link_steps() {
    watchdog(120, || {
        let mut d = Daemon::start("hardlinks", |_| {});
        let mut c = RawClient::connect(&d.record);
        let stat = |path| Request::Stat { path, data: false };
        let got_count = |r: Reply<'_>| match r {
            Reply::LinkCount { count, .. } => count,
            r => panic!("{r:?}"),
        };
        let f = match c.call(&create_file("f", 0o640), Vec::new()).ok() {
            Reply::Create { attr, .. } => attr,
            r => panic!("{r:?}"),
        };
        c.call(
            &Request::Mkdir {
                path: "d",
                mode: 0o755,
                uid: 1,
                gid: 2,
                parent_here: false,
            },
            Vec::new(),
        )
        .ok();
        let dir = attr(c.call(&stat("d"), Vec::new()).ok());
        // The count starts at 1 and goes up by one per name.
        assert_eq!(
            got_count(c.call(&count_step(f.ino, CountStep::Get), Vec::new()).ok()),
            1
        );
        assert_eq!(
            got_count(c.call(&count_step(f.ino, CountStep::Add), Vec::new()).ok()),
            2
        );
        // The mark: by id, never a directory.
        assert_eq!(
            c.call(&mark_name("f", f.ino + 1), Vec::new()).errno(),
            libc::ENOENT
        );
        assert_eq!(
            c.call(&mark_name("d", dir.ino), Vec::new()).errno(),
            libc::EPERM
        );
        c.call(&mark_name("f", f.ino), Vec::new()).ok();
        assert_eq!(
            attr(c.call(&stat("f"), Vec::new()).ok()).nlink,
            0,
            "count elsewhere"
        );
        // The second name: exclusive, linked.
        let record = wire::Record {
            ino: f.ino,
            mode: f.mode,
            uid: f.uid,
            gid: f.gid,
            ..Default::default()
        };
        let link = |path, exclusive| Request::Link {
            path,
            record,
            target_len: 0,
            parent_here: false,
            exclusive,
            linked: true,
        };
        match c.call(&link("g", true), Vec::new()).ok() {
            Reply::Link {
                replaced,
                linked,
                name_replaced,
            } => assert_eq!((replaced, linked, name_replaced), (0, false, false)),
            r => panic!("{r:?}"),
        }
        assert_eq!(c.call(&link("g", true), Vec::new()).errno(), libc::EEXIST);
        assert_eq!(c.call(&link("d", true), Vec::new()).errno(), libc::EEXIST);
        let g = attr(c.call(&stat("g"), Vec::new()).ok());
        assert_eq!((g.ino, g.nlink), (f.ino, 0));
        // A rename's insert onto a name of the same file changes nothing.
        match c.call(&link("g", false), Vec::new()).ok() {
            Reply::Link {
                replaced,
                linked,
                name_replaced,
            } => assert_eq!((replaced, linked, name_replaced), (f.ino, true, true)),
            r => panic!("{r:?}"),
        }
        // Removing a linked name says so; the count is the client's to drop.
        let unlink = Request::Unlink {
            path: "f",
            ino: 0,
            data: false,
            parent_here: false,
        };
        match c.call(&unlink, Vec::new()).ok() {
            Reply::Unlink { ino, linked, .. } => assert_eq!((ino, linked), (f.ino, true)),
            r => panic!("{r:?}"),
        }
        assert_eq!(
            got_count(c.call(&count_step(f.ino, CountStep::Drop), Vec::new()).ok()),
            1
        );
        assert_eq!(
            got_count(c.call(&count_step(f.ino, CountStep::Drop), Vec::new()).ok()),
            0
        );
        // Ids this daemon did not hand out have no count here.
        let foreign = f.ino + (1 << 43);
        assert_eq!(
            c.call(&count_step(foreign, CountStep::Get), Vec::new())
                .errno(),
            libc::EINVAL
        );
        assert_eq!(
            c.call(&count_step(1, CountStep::Add), Vec::new()).errno(),
            libc::EINVAL
        );
        c.shutdown(false);
        let s = d.join();
        assert!(s.requests["link_count"] >= 8);
    });
}
