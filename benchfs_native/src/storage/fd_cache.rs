//! A bounded cache of open backing files, keyed by (file, open mode).
//!
//! Descriptors are shared as `Arc<OwnedFd>`: an operation in flight holds
//! its own reference, so evicting an entry (or removing the file) never
//! closes a descriptor the kernel is still using, and a descriptor number is
//! never reused under an in-flight SQE.

use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd as _, OwnedFd};
use std::sync::Arc;

use crate::sys;

/// How a backing file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// `O_RDONLY`.
    Read,
    /// `O_RDWR` (created by writes, not by truncate).
    ReadWrite,
}

/// Access plus O_DIRECT: the cache key besides the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mode {
    /// Read-only or read-write.
    pub access: Access,
    /// Opened with `O_DIRECT`.
    pub direct: bool,
}

#[derive(Debug)]
struct Entry {
    fd: Arc<OwnedFd>,
    last_used: u64,
}

/// Result of a lookup.
#[derive(Debug)]
pub struct Opened {
    /// The descriptor.
    pub fd: Arc<OwnedFd>,
    /// Whether it was opened with O_DIRECT (a file system without direct
    /// I/O gets a buffered descriptor instead).
    pub direct: bool,
    /// Whether it came from the cache.
    pub hit: bool,
}

/// The cache. Single-threaded: it lives with the ring (its driver thread,
/// or the thread that turns a driven store's ring).
#[derive(Debug)]
pub struct FdCache {
    root: Arc<OwnedFd>,
    capacity: usize,
    tick: u64,
    entries: HashMap<(Arc<str>, Mode), Entry>,
}

impl FdCache {
    /// A cache of at most `capacity` descriptors for files in the
    /// directory `root` (opened relative to it, never through a link).
    pub fn new(root: Arc<OwnedFd>, capacity: usize) -> FdCache {
        FdCache {
            root,
            capacity: capacity.max(1),
            tick: 0,
            entries: HashMap::new(),
        }
    }

    /// Number of cached descriptors.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A descriptor of backing file `name` in `mode`, opening it on a miss.
    /// `create` adds `O_CREAT` to a `ReadWrite` open. An `O_DIRECT` open the
    /// file system refuses (`EINVAL`) falls back to a buffered descriptor.
    pub fn get(&mut self, name: &Arc<str>, mode: Mode, create: bool) -> io::Result<Opened> {
        self.tick += 1;
        // A read can use a cached read-write descriptor of the same kind.
        if mode.access == Access::Read {
            let rw = (
                Arc::clone(name),
                Mode {
                    access: Access::ReadWrite,
                    ..mode
                },
            );
            if let Some(e) = self.entries.get_mut(&rw) {
                e.last_used = self.tick;
                return Ok(Opened {
                    fd: Arc::clone(&e.fd),
                    direct: mode.direct,
                    hit: true,
                });
            }
        }
        let key = (Arc::clone(name), mode);
        if let Some(e) = self.entries.get_mut(&key) {
            e.last_used = self.tick;
            return Ok(Opened {
                fd: Arc::clone(&e.fd),
                direct: mode.direct,
                hit: true,
            });
        }
        let mut direct = mode.direct;
        let fd = match self.open(name, mode.access, direct, create) {
            Err(e) if direct && e.raw_os_error() == Some(libc::EINVAL) => {
                direct = false;
                let buffered = Mode {
                    direct: false,
                    ..mode
                };
                return self
                    .get(name, buffered, create)
                    .map(|o| Opened { direct, ..o });
            }
            r => r?,
        };
        if self.entries.len() >= self.capacity {
            self.evict_lru();
        }
        self.entries.insert(
            key,
            Entry {
                fd: Arc::clone(&fd),
                last_used: self.tick,
            },
        );
        Ok(Opened {
            fd,
            direct,
            hit: false,
        })
    }

    /// Any cached descriptor of `name` (for fsync).
    pub fn any(&mut self, name: &str) -> Option<Arc<OwnedFd>> {
        self.entries
            .iter()
            .find(|((n, _), _)| &**n == name)
            .map(|(_, e)| Arc::clone(&e.fd))
    }

    /// Drops every cached descriptor of `name` (before removing the file).
    pub fn evict_file(&mut self, name: &str) {
        self.entries.retain(|(n, _), _| &**n != name);
    }

    fn evict_lru(&mut self) {
        if let Some(key) = self
            .entries
            .iter()
            .min_by_key(|(_, e)| e.last_used)
            .map(|(k, _)| k.clone())
        {
            self.entries.remove(&key);
        }
    }

    fn open(
        &self,
        name: &str,
        access: Access,
        direct: bool,
        create: bool,
    ) -> io::Result<Arc<OwnedFd>> {
        let mut flags = match access {
            Access::Read => libc::O_RDONLY,
            Access::ReadWrite => libc::O_RDWR,
        };
        if access == Access::ReadWrite && create {
            flags |= libc::O_CREAT;
        }
        if direct {
            flags |= libc::O_DIRECT;
        }
        let name = CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let fd = sys::open_beneath(self.root.as_fd(), &name, flags, 0o644)?;
        Ok(Arc::new(fd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_per_mode_and_evicts_lru() {
        let dir = std::env::temp_dir().join(format!("bf-fdcache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("b"), b"").expect("b");
        let root = Arc::new(OwnedFd::from(std::fs::File::open(&dir).expect("open dir")));
        let mut c = FdCache::new(root, 2);
        let rw = Mode {
            access: Access::ReadWrite,
            direct: false,
        };
        let ro = Mode {
            access: Access::Read,
            direct: false,
        };
        let a: Arc<str> = Arc::from("a");
        let b: Arc<str> = Arc::from("b");
        assert!(!c.get(&a, rw, true).expect("open a").hit);
        assert!(c.get(&a, rw, true).expect("a again").hit);
        // A read is served by the cached read-write descriptor.
        assert!(c.get(&a, ro, false).expect("a ro via rw").hit);
        assert_eq!(c.len(), 1);
        assert!(!c.get(&b, ro, false).expect("b ro").hit);
        assert_eq!(c.len(), 2);
        // A third file evicts the least recently used entry (a, rw).
        let held = c.get(&b, ro, false).expect("touch b").fd;
        let x: Arc<str> = Arc::from("x");
        assert!(!c.get(&x, rw, true).expect("x").hit);
        assert_eq!(c.len(), 2);
        assert!(c.any("a").is_none());
        assert!(!c.get(&a, rw, true).expect("a reopened").hit);
        c.evict_file("b");
        assert!(c.any("b").is_none());
        // An evicted descriptor stays open while someone holds it.
        drop(held);
        let missing: Arc<str> = Arc::from("missing");
        let err = c.get(&missing, ro, false).expect_err("no such file");
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        let _ = std::fs::remove_dir_all(dir);
    }
}
