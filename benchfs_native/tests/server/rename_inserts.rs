//! Rename's insert (a link request, not exclusive) says what it replaced:
//! the id of a replaced file or name, and whether any name was there at
//! all, which a replaced symbolic link (no data, id 0) only shows by the
//! flag. The client skips its parent check on that flag.

use crate::harness::*;

#[test]
fn a_rename_insert_reports_every_replaced_name() {
    watchdog(120, || {
        let mut d = Daemon::start("renameins", |_| {});
        let mut c = RawClient::connect(&d.record);
        let stat = |path| Request::Stat { path, data: false };
        let moved = attr(c.call(&create_file("moved", 0o644), Vec::new()).ok());
        let file = attr(c.call(&create_file("file", 0o644), Vec::new()).ok());
        let symlink = Request::Symlink {
            path: "link",
            uid: 1,
            gid: 2,
            len: 6,
            parent_here: false,
        };
        c.call(&symlink, b"target".to_vec()).ok();
        // A second name of a hard-linked file: count 2, both names marked.
        let shared = attr(c.call(&create_file("shared", 0o644), Vec::new()).ok());
        c.call(&count_step(shared.ino, CountStep::Add), Vec::new())
            .ok();
        c.call(&mark_name("shared", shared.ino), Vec::new()).ok();
        let record = |a: &wire::Attr| wire::Record {
            ino: a.ino,
            mode: a.mode,
            uid: a.uid,
            gid: a.gid,
            ..Default::default()
        };
        let second = Request::Link {
            path: "second",
            record: record(&shared),
            target_len: 0,
            parent_here: false,
            exclusive: true,
            linked: true,
        };
        c.call(&second, Vec::new()).ok();
        // (name, replaced id, linked, a name was there)
        for (to, id, linked, name) in [
            ("link", 0, false, true),
            ("file", file.ino, false, true),
            ("second", shared.ino, true, true),
            ("nothing", 0, false, false),
        ] {
            let insert = Request::Link {
                path: to,
                record: record(&moved),
                target_len: 0,
                parent_here: false,
                exclusive: false,
                linked: false,
            };
            match c.call(&insert, Vec::new()).ok() {
                Reply::Link {
                    replaced,
                    linked: l,
                    name_replaced,
                } => assert_eq!((replaced, l, name_replaced), (id, linked, name), "{to}"),
                r => panic!("{to}: {r:?}"),
            }
            let now = attr(c.call(&stat(to), Vec::new()).ok());
            assert_eq!((now.ino, now.kind), (moved.ino, FileKind::File), "{to}");
        }
        // The first name of the hard-linked file is still there.
        assert_eq!(
            attr(c.call(&stat("shared"), Vec::new()).ok()).ino,
            shared.ino
        );
        c.shutdown(false);
        assert!(d.join().drained);
    });
}
