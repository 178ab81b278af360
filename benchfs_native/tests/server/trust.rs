//! What a daemon refuses to do for any caller: set-user-ID files,
//! following links planted in its data directory, sharing its data
//! directory or registry name with another live daemon.

use std::os::unix::fs::PermissionsExt as _;

use crate::harness::*;

#[test]
fn create_never_sets_setuid_setgid_or_sticky() {
    watchdog(120, || {
        let mut d = Daemon::start("setuid", |_| {});
        let mut c = RawClient::connect(&d.record);
        for (i, asked) in [0o4755_u32, 0o2755, 0o1777, 0o7777].into_iter().enumerate() {
            let path = format!("s{i}");
            let req = Request::Create {
                path: &path,
                mode: asked,
                exclusive: true,
            };
            let a = attr(c.call(&req, Vec::new()).ok());
            assert_eq!(a.mode & 0o7000, 0, "reply mode {:o} for {asked:o}", a.mode);
            let backing = d.data_dir.join(&path);
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
        refused(
            c.call(&Request::Stat { path: "victim" }, Vec::new()),
            "stat",
        );
        let create = Request::Create {
            path: "victim",
            mode: 0o644,
            exclusive: false,
        };
        refused(c.call(&create, Vec::new()), "create");
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
