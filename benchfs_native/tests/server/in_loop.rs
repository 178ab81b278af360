//! Requests the event loop runs itself (the namespace's, a data object's
//! stat) and the ones that still go to a storage thread (a readdir, a data
//! object's removal): same answers, same errors, counted apart; and the
//! time a truncate stamps.

use crate::harness::*;

fn in_loop(c: &mut RawClient) -> u64 {
    c.stats()["run_in_loop"].as_u64().unwrap()
}

#[test]
fn namespace_requests_and_data_stats_run_in_the_loop() {
    watchdog(120, || {
        let mut d = Daemon::start("in-loop", |_| {});
        let mut c = RawClient::connect(&d.record);
        let before = in_loop(&mut c);
        let made = attr(c.call(&create_file("f", 0o640), Vec::new()).ok());
        let stat = Request::Stat {
            path: "f",
            data: false,
        };
        let seen = attr(c.call(&stat, Vec::new()).ok());
        assert_eq!((seen.ino, seen.mode & 0o777), (made.ino, 0o640));
        // A second exclusive create is refused with its words.
        let again = c.call(&create_file("f", 0o640), Vec::new());
        assert_eq!(again.errno(), libc::EEXIST);
        // A data object without data: ENOENT, from the loop too.
        let data_stat = Request::Stat {
            path: "@0000000000000001",
            data: true,
        };
        assert_eq!(c.call(&data_stat, Vec::new()).errno(), libc::ENOENT);
        assert_eq!(
            in_loop(&mut c) - before,
            4,
            "create, stat, create, data stat"
        );
        // A readdir and a data object's removal go to a storage thread.
        let list = Request::Readdir {
            path: "",
            cursor: 0,
            max_entries: 8,
        };
        assert!(matches!(
            c.call(&list, Vec::new()).ok(),
            Reply::Readdir { count: 1, .. }
        ));
        c.write("@0000000000000002", 0, 0, pattern(4096, 3)).ok();
        let remove = Request::Unlink {
            path: "@0000000000000002",
            ino: 0,
            data: true,
            parent_here: false,
        };
        c.call(&remove, Vec::new()).ok();
        assert_eq!(in_loop(&mut c) - before, 4, "none of them in the loop");
        // The record's removal runs in the loop; the record is gone.
        let unlink = Request::Unlink {
            path: "f",
            ino: 0,
            data: false,
            parent_here: false,
        };
        assert!(
            matches!(c.call(&unlink, Vec::new()).ok(), Reply::Unlink { ino, .. } if ino == made.ino)
        );
        assert_eq!(c.call(&stat, Vec::new()).errno(), libc::ENOENT);
        assert_eq!(in_loop(&mut c) - before, 6);
        c.shutdown(false);
        assert!(d.join().drained);
    });
}

#[test]
fn a_truncate_stamps_the_data_with_the_daemon_s_clock() {
    watchdog(120, || {
        let mut d = Daemon::start("truncate-stamp", |_| {});
        let mut c = RawClient::connect(&d.record);
        c.write("@0000000000000003", 0, 0, pattern(4096, 5)).ok();
        // Each after a moment on the wall clock the daemon's stamps use:
        // the truncated data (existing, and made by the truncate) is no
        // older, whatever clock the kernel stamps changes with.
        for (path, size) in [("@0000000000000003", 10), ("@0000000000000004", 3)] {
            let before = now_unix_ns();
            let truncate = Request::Truncate { path, size };
            assert!(matches!(
                c.call(&truncate, Vec::new()).ok(),
                Reply::Truncate
            ));
            let stat = Request::Stat { path, data: true };
            let a = attr(c.call(&stat, Vec::new()).ok());
            assert_eq!(a.size, size);
            assert!(
                a.mtime_unix_ns >= before,
                "{path}: {} < {before}",
                a.mtime_unix_ns
            );
        }
        c.shutdown(false);
        assert!(d.join().drained);
    });
}
