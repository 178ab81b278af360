//! The attributes a hard-linked file's names share, on its home daemon:
//! the first add takes in the source's, a set changes them (ctime
//! stamped), a get returns them with the count, and they stay while any
//! name is left, the count back at 1 included; a link that found its
//! source gone at the mark leaves nothing behind.

use crate::harness::*;

/// The count and shared attributes of a link_count reply.
fn counted(r: Reply<'_>) -> (u64, Option<wire::SharedAttr>) {
    match r {
        Reply::LinkCount { count, attr } => (count, attr),
        r => panic!("{r:?}"),
    }
}

#[test]
fn the_home_keeps_the_names_shared_attributes() {
    watchdog(120, || {
        let mut d = Daemon::start("sharedattrs", |_| {});
        let mut c = RawClient::connect(&d.record);
        let create = Request::Create {
            path: "f",
            mode: 0o640,
            rdev: 0,
            uid: 1,
            gid: 2,
            exclusive: true,
            parent_here: false,
        };
        let f = attr(c.call(&create, Vec::new()).ok());
        let step = |step, mask, attr| Request::LinkCount {
            path: "",
            ino: f.ino,
            step,
            mask,
            attr,
        };
        let none = wire::SharedAttr::default();
        let get = step(CountStep::Get, 0, none);
        // One name: no shared attributes, the record is the file's.
        assert_eq!(counted(c.call(&get, Vec::new()).ok()), (1, None));
        let set_mode = step(
            CountStep::Set,
            wire::SET_MODE,
            wire::SharedAttr {
                mode: 0o600,
                ..none
            },
        );
        assert_eq!(counted(c.call(&set_mode, Vec::new()).ok()), (1, None));
        // The first add takes in the source's attributes (ctime: now).
        let source = wire::SharedAttr {
            mode: 0o640,
            uid: 1,
            gid: 2,
            atime_unix_ns: 10,
            mtime_unix_ns: 20,
            ctime_unix_ns: 30,
        };
        let (n, got) = counted(c.call(&step(CountStep::Add, 0, source), Vec::new()).ok());
        let got = got.expect("kept after an add");
        assert_eq!(n, 2);
        assert_eq!((got.mode, got.uid, got.gid), (0o640, 1, 2));
        assert_eq!((got.atime_unix_ns, got.mtime_unix_ns), (10, 20));
        assert!(got.ctime_unix_ns > 30, "a link changes ctime");
        // A set through one name: the file's, seen by the next get.
        let (_, set) = counted(c.call(&set_mode, Vec::new()).ok());
        let set = set.unwrap();
        assert_eq!((set.mode, set.uid), (0o600, 1));
        assert!(set.ctime_unix_ns >= got.ctime_unix_ns);
        let owner_times = step(
            CountStep::Set,
            wire::SET_UID | wire::SET_GID | wire::SET_ATIME | wire::SET_MTIME,
            wire::SharedAttr {
                uid: 5,
                gid: 6,
                atime_unix_ns: 7,
                mtime_unix_ns: 8,
                ..none
            },
        );
        c.call(&owner_times, Vec::new()).ok();
        let (n, now) = counted(c.call(&get, Vec::new()).ok());
        let now = now.unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            (
                now.mode,
                now.uid,
                now.gid,
                now.atime_unix_ns,
                now.mtime_unix_ns
            ),
            (0o600, 5, 6, 7, 8)
        );
        // A later add keeps the home's, whatever it carries.
        c.call(&step(CountStep::Add, 0, source), Vec::new()).ok();
        let (n, kept) = counted(c.call(&get, Vec::new()).ok());
        assert_eq!((n, kept.unwrap().mode), (3, 0o600));
        // Back at one name: still kept, for the last name to read.
        let drop = step(CountStep::Drop, 0, none);
        c.call(&drop, Vec::new()).ok();
        let (n, last) = counted(c.call(&drop, Vec::new()).ok());
        assert_eq!((n, last.map(|a| a.uid)), (1, Some(5)));
        // The last name goes: so does the entry.
        assert_eq!(counted(c.call(&drop, Vec::new()).ok()).0, 0);
        assert_eq!(counted(c.call(&get, Vec::new()).ok()), (1, None));
        c.shutdown(false);
        d.join();
    });
}

#[test]
fn a_link_whose_source_went_before_the_mark_leaves_no_entry() {
    watchdog(120, || {
        let mut d = Daemon::start("undolink", |_| {});
        let mut c = RawClient::connect(&d.record);
        // The link's add; then the source, never marked, is removed
        // before the link's mark reaches it.
        for (path, undo, left) in [("f", CountStep::Undo, false), ("g", CountStep::Drop, true)] {
            let f = attr(c.call(&create_file(path, 0o640), Vec::new()).ok());
            assert_eq!(
                counted(c.call(&count_step(f.ino, CountStep::Add), Vec::new()).ok()).0,
                2
            );
            let unlink = Request::Unlink {
                path,
                ino: f.ino,
                data: false,
                parent_here: false,
            };
            c.call(&unlink, Vec::new()).ok();
            assert_eq!(
                c.call(&mark_name(path, f.ino), Vec::new()).errno(),
                libc::ENOENT
            );
            let (n, shared) = counted(c.call(&count_step(f.ino, undo), Vec::new()).ok());
            assert_eq!((n, shared.is_some()), (1, left), "{undo:?}");
            // A get answers from the table: the entry is gone after the
            // undo; a plain drop (what a link did before) leaves it.
            let (n, shared) = counted(c.call(&count_step(f.ino, CountStep::Get), Vec::new()).ok());
            assert_eq!((n, shared.is_some()), (1, left), "{undo:?}");
        }
        c.shutdown(false);
        d.join();
    });
}
