//! Files through the store: direct or buffered by alignment, paths that
//! escape refused, operations and their errnos, options named in errors,
//! data seen again after reopening.

use benchfs_native::Error;
use benchfs_native::storage::{ChunkStore, StoreOptions};

use crate::common::{TempDir, pattern, small_store, watchdog};

#[test]
fn misaligned_io_is_buffered_and_aligned_io_is_direct() {
    watchdog(60, || {
        let dir = TempDir::new("direct");
        let s = small_store(dir.path(), |_| {});
        let Some(align) = s.dio_alignment() else {
            eprintln!(
                "no O_DIRECT on {}: only the buffered half is checked",
                dir.path().display()
            );
            s.write("m", 3, b"abc").unwrap();
            assert_eq!(s.stats().buffered_ops, 1);
            return;
        };
        assert!(align.offset <= 4096);
        let before = s.stats();
        s.write("a", 0, &pattern(8192, 1)).unwrap();
        let st = s.stats();
        assert_eq!(st.direct_ops - before.direct_ops, 2, "{st:?}");
        assert_eq!(st.buffered_ops, before.buffered_ops);
        s.write("a", 8192 + 3, b"misaligned").unwrap();
        let st2 = s.stats();
        assert_eq!(st2.buffered_ops - st.buffered_ops, 1, "{st2:?}");
        s.read("a", 0, 4096).unwrap();
        assert_eq!(s.stats().direct_ops - st2.direct_ops, 1);
        assert_eq!(&s.read("a", 8195, 10).unwrap(), b"misaligned");
        // buffered=True never uses O_DIRECT.
        let s2 = small_store(dir.path(), |o| o.buffered = true);
        s2.write("b", 0, &pattern(8192, 2)).unwrap();
        assert_eq!(s2.stats().direct_ops, 0);
        assert_eq!(s2.stats().buffered_ops, 2);
    });
}

#[test]
fn escaping_paths_are_rejected_with_the_path() {
    // The store one level down, so that its parent is ours alone.
    let dir = TempDir::new("paths");
    let s = small_store(&dir.path().join("store"), |_| {});
    for p in [
        "../x",
        "/etc/passwd",
        "a/../../b",
        "",
        "a\0b",
        "a//b",
        "./a",
    ] {
        match s.write(p, 0, b"x") {
            Err(Error::InvalidPath { path, .. }) => assert_eq!(path, p),
            other => panic!("{p:?}: {other:?}"),
        }
        assert!(matches!(s.read(p, 0, 1), Err(Error::InvalidPath { .. })));
        assert!(matches!(s.stat(p), Err(Error::InvalidPath { .. })));
    }
    // Nothing was created outside (or inside) the store.
    assert!(s.list().unwrap().is_empty());
    assert!(!dir.path().join("x").exists());
    assert!(!dir.path().join("b").exists());
}

#[test]
fn file_operations_and_errnos() {
    watchdog(60, || {
        let dir = TempDir::new("ops");
        let s = small_store(dir.path(), |_| {});
        assert_eq!(
            s.read("nope", 0, 10).unwrap_err().errno(),
            Some(libc::ENOENT)
        );
        assert_eq!(s.stat("nope").unwrap_err().errno(), Some(libc::ENOENT));
        assert_eq!(s.remove("nope").unwrap_err().errno(), Some(libc::ENOENT));
        assert_eq!(
            s.truncate("nope", 1).unwrap_err().errno(),
            Some(libc::ENOENT)
        );
        assert_eq!(s.fsync("nope").unwrap_err().errno(), Some(libc::ENOENT));
        // Empty write creates; holes read as zeros; short read at EOF.
        assert_eq!(s.write("e", 0, b"").unwrap(), 0);
        assert_eq!(s.stat("e").unwrap(), 0);
        assert_eq!(s.read("e", 0, 0).unwrap(), b"");
        s.write("h", 40_000, b"tail").unwrap();
        let d = s.read("h", 0, 100_000).unwrap();
        assert_eq!(d.len(), 40_004);
        assert!(d[..40_000].iter().all(|&b| b == 0));
        assert_eq!(&d[40_000..], b"tail");
        assert_eq!(s.read("h", 50_000, 10).unwrap(), b"");
        s.truncate("h", 10).unwrap();
        assert_eq!(s.stat("h").unwrap(), 10);
        s.truncate("h", 1 << 20).unwrap();
        assert_eq!(s.stat("h").unwrap(), 1 << 20);
        s.fsync("h").unwrap();
        assert_eq!(s.list().unwrap(), vec!["e".to_owned(), "h".to_owned()]);
        s.remove("h").unwrap();
        assert_eq!(s.list().unwrap(), vec!["e".to_owned()]);
        assert!(matches!(
            s.read("e", 0, (1 << 30) + 1),
            Err(Error::InvalidArgument { name: "length", .. })
        ));
        assert!(matches!(
            s.write("e", u64::MAX - 2, b"xyz"),
            Err(Error::InvalidArgument { name: "offset", .. })
        ));
    });
}

#[test]
fn bad_options_name_the_option() {
    let dir = TempDir::new("opts");
    let name = |f: fn(&mut StoreOptions)| {
        let mut o = StoreOptions::default();
        f(&mut o);
        match ChunkStore::open(dir.path(), o) {
            Err(Error::InvalidArgument { name, .. }) => name,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(name(|o| o.chunk_size = 1000), "chunk_size");
    assert_eq!(name(|o| o.chunk_size = 0), "chunk_size");
    assert_eq!(name(|o| o.buffer_size = 100), "buffer_size");
    assert_eq!(name(|o| o.pool_buffers = 0), "pool_buffers");
    assert_eq!(name(|o| o.ring_entries = 0), "ring_entries");
}

#[test]
fn reopen_after_close_sees_the_data() {
    let dir = TempDir::new("reopen");
    let data = pattern(100_000, 5);
    {
        let s = small_store(dir.path(), |_| {});
        s.write("x/y", 12_345, &data).unwrap();
        s.close().unwrap();
    }
    let s = small_store(dir.path(), |o| o.chunk_size = 16 * 1024);
    assert_eq!(s.read("x/y", 12_345, data.len()).unwrap(), data);
    assert_eq!(s.stat("x/y").unwrap(), 12_345 + data.len() as u64);
    assert_eq!(s.list().unwrap(), vec!["x/y".to_owned()]);
    // One flat backing file, no directories.
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(entries.len(), 1);
}
