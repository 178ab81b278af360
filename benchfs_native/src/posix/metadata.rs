//! The mdtest-style metadata phase on any mounted file system: the same
//! items, loop, stonewall, progress record and result as the engine's
//! client phase ([`run_items`]), each item done with the plain POSIX calls
//! of mdtest: create is `open(O_CREAT|O_EXCL|O_WRONLY)`, a write of
//! `write_bytes`, `close`; stat is `statx`; read is `open`, a read of
//! `read_bytes`, `close`; remove is `unlink`; for directories `mkdir`,
//! `statx`, `rename` (mdtest's chain) and `rmdir`; for the tree's
//! directories `mkdir` and `rmdir`. The create phase of files or
//! directories first makes the rank's directory, the tree's creation the
//! prefix (another rank's making them is fine). The files' bytes and their check (`verify`) are the client
//! phase's.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use crate::error::{Error, Result};
use crate::rpc::client::{ItemDone, ItemKind, MetadataOp, MetadataResult, MetadataSpec, run_items};

/// Mode of the files and directories a phase creates: nobody else's.
const FILE_MODE: u32 = 0o600;
const DIR_MODE: u32 = 0o700;

/// Runs one rank's metadata phase on the items under `dir` (see
/// [`MetadataSpec`]); `dir` in the result is relative to `dir`, as the
/// client names it. The first failed item fails the phase, naming its path.
pub fn run_metadata_phase(dir: &Path, spec: &MetadataSpec) -> Result<MetadataResult> {
    spec.check()?;
    if spec.op == MetadataOp::Create {
        // The tree phase makes the rank's directory itself.
        let tree = dir.join(if spec.kind == ItemKind::Tree {
            spec.prefix.clone()
        } else {
            spec.dir()
        });
        DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(&tree)
            .map_err(|e| Error::from_io(&e, "mkdir", tree.display().to_string()))?;
    }
    let pattern = spec.pattern();
    let mut data = vec![0u8; usize::try_from(spec.write_bytes).unwrap_or(0)];
    let mut buf = vec![0u8; usize::try_from(spec.read_bytes).unwrap_or(0)];
    run_items(spec, |i, name| {
        let path = dir.join(name);
        if !data.is_empty() && spec.op == MetadataOp::Create && spec.kind == ItemKind::File {
            spec.fill_item(&pattern, i, &mut data);
        }
        let moved = match (spec.kind, spec.op) {
            (ItemKind::Dir, MetadataOp::Rename) => {
                let (from, to) = spec.rename_paths(i);
                let from = dir.join(from);
                std::fs::rename(&from, dir.join(to))
                    .map(|()| 0)
                    .map_err(|e| Error::from_io(&e, "rename", from.display().to_string()))?
            }
            (ItemKind::File, _) => item(spec.op, &path, &data, &mut buf)
                .map_err(|e| Error::from_io(&e, spec.op.name(), path.display().to_string()))?,
            _ => dir_item(spec.op, &path)
                .map_err(|e| Error::from_io(&e, spec.op.name(), path.display().to_string()))?,
        };
        let read = usize::try_from(moved).unwrap_or(usize::MAX).min(buf.len());
        let intact = !spec.verify
            || spec.op != MetadataOp::Read
            || spec.item_is_intact(&pattern, i, &buf[..read]);
        Ok(ItemDone {
            bytes: moved,
            intact,
        })
    })
}

/// One item; the bytes it wrote or read.
fn item(op: MetadataOp, path: &Path, data: &[u8], buf: &mut [u8]) -> std::io::Result<u64> {
    match op {
        MetadataOp::Create => {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(FILE_MODE)
                .open(path)?;
            if !data.is_empty() {
                file.write_all(data)?;
            }
            // Dropping the file closes it, as mdtest's close.
            Ok(data.len() as u64)
        }
        MetadataOp::Stat => std::fs::symlink_metadata(path).map(|_| 0),
        MetadataOp::Read => {
            let mut file = File::open(path)?;
            let mut done = 0;
            while done < buf.len() {
                match file.read(&mut buf[done..]) {
                    Ok(0) => break,
                    Ok(n) => done += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(done as u64)
        }
        MetadataOp::Remove => std::fs::remove_file(path).map(|()| 0),
        // Refused by `MetadataSpec::check`.
        MetadataOp::Rename => Err(std::io::Error::from(std::io::ErrorKind::InvalidInput)),
    }
}

/// One directory item (no bytes).
fn dir_item(op: MetadataOp, path: &Path) -> std::io::Result<u64> {
    match op {
        MetadataOp::Create => DirBuilder::new().mode(DIR_MODE).create(path).map(|()| 0),
        MetadataOp::Stat => std::fs::symlink_metadata(path).map(|_| 0),
        MetadataOp::Remove => std::fs::remove_dir(path).map(|()| 0),
        // Refused by `MetadataSpec::check`; a rename takes two paths.
        MetadataOp::Read | MetadataOp::Rename => {
            Err(std::io::Error::from(std::io::ErrorKind::InvalidInput))
        }
    }
}
