//! Engine behaviour that needs root: running out of space on small mounted
//! file systems. `cargo test` lists these as ignored with the reason;
//! `make test-rust` runs them as root (`--test engine_root -- --ignored`),
//! where a file system that cannot be mounted is a failure, not a pass.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use benchfs_native::Error;
use benchfs_native::storage::ChunkStore;
use common::{TempDir, is_root, pattern, small_store, watchdog};

fn run(command: &mut Command) {
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(status.success(), "{command:?}: {status}");
}

/// A mounted file system, unmounted on drop.
struct Mount(TempDir);

impl Mount {
    /// A tmpfs of `size` (mount's notation).
    fn tmpfs(size: &str) -> Mount {
        assert!(is_root(), "mounting a tmpfs needs root");
        let dir = TempDir::new("enospc");
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path()));
        Mount(dir)
    }

    /// A loop-mounted ext4 of `mib` MiB (its image lives in the returned temp dir).
    fn ext4(mib: u64) -> (Mount, TempDir) {
        assert!(is_root(), "loop-mounting ext4 needs root");
        let img_dir = TempDir::new("ext4-img");
        let img = img_dir.path().join("fs.img");
        std::fs::File::create(&img)
            .and_then(|f| f.set_len(mib << 20))
            .expect("image file");
        run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&img));
        let dir = TempDir::new("enospc-ext4");
        run(Command::new("mount")
            .args(["-o", "loop"])
            .arg(&img)
            .arg(dir.path()));
        (Mount(dir), img_dir)
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// Writes `data` to `path` as a program does after a short write: the
/// rest, until the store answers an error. Returns the bytes written and
/// the error; every write wrote something or failed.
fn fill(s: &ChunkStore, path: &str, data: &[u8]) -> (usize, Error) {
    let mut at = 0;
    loop {
        match s.write(path, at as u64, &data[at..]) {
            Ok(n) => {
                assert!(n > 0 && at + n < data.len(), "wrote {n} at {at}");
                at += n;
            }
            Err(e) => return (at, e),
        }
    }
}

#[test]
#[ignore = "needs root to mount a tmpfs; make test-rust runs it as root"]
fn running_out_of_space_is_enospc_and_keeps_earlier_data() {
    watchdog(60, || {
        let m = Mount::tmpfs("1m");
        let root = m.0.path().join("store");
        let s = small_store(&root, |_| {});
        let keep = pattern(100_000, 42);
        s.write("keep", 0, &keep).unwrap();
        s.fsync("keep").unwrap();
        let big = pattern(4 << 20, 43);
        let (at, err) = fill(&s, "big", &big);
        // As write(2): the bytes written first, then the error.
        assert!(at > 0, "the first write wrote nothing");
        assert_eq!(s.read("big", 0, at).unwrap(), big[..at]);
        match &err {
            Error::Os { errno, op, path } => {
                assert_eq!(*errno, libc::ENOSPC, "{err}");
                assert_eq!(*op, "write");
                assert_eq!(path, "big");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(s.read("keep", 0, keep.len()).unwrap(), keep);
        // Freeing space makes the store writable again.
        s.remove("big").unwrap();
        s.write("small", 0, b"ok").unwrap();
        assert_eq!(s.read("small", 0, 2).unwrap(), b"ok");
        s.close().unwrap();
        drop(s);
    });
}

#[test]
#[ignore = "needs root to loop-mount ext4; make test-rust runs it as root"]
fn running_out_of_space_on_ext4_with_direct_io() {
    watchdog(60, || {
        let (m, _img) = Mount::ext4(16);
        let s = small_store(&m.0.path().join("store"), |o| {
            o.buffer_size = 1 << 20;
            o.chunk_size = 4 << 20;
        });
        let keep = pattern(1 << 20, 1);
        s.write("keep", 0, &keep).unwrap();
        s.fsync("keep").unwrap();
        let big = pattern(32 << 20, 2);
        let (at, err) = fill(&s, "big", &big);
        assert_eq!(err.errno(), Some(libc::ENOSPC), "{err}");
        assert!(at > 0, "the first write wrote nothing");
        assert_eq!(s.read("big", 0, at).unwrap(), big[..at]);
        // ext4 on a loop device supports O_DIRECT: the aligned writes must have used it.
        assert!(
            s.dio_alignment().is_some(),
            "no O_DIRECT on a loop-mounted ext4"
        );
        assert!(s.stats().direct_ops > 0, "aligned writes went O_DIRECT");
        assert_eq!(s.read("keep", 0, keep.len()).unwrap(), keep);
        s.close().unwrap();
        drop(s);
    });
}
