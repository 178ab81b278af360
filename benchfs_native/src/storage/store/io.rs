//! Blocking reads and writes of a file's bytes: split into pieces of at
//! most one buffer, each sent to the ring and answered into one batch.

use std::sync::Arc;

use super::answer::note_failure;
use super::batch::Batch;
use super::request::{Done, ReqKind};
use super::{ChunkStore, MAX_READ, check_range};
use crate::error::{Error, Result};
use crate::storage::layout::{self, Piece};

impl ChunkStore {
    /// Writes `data` at `offset` of `path`; returns the bytes written.
    /// An empty `data` creates the file if it does not exist. A write that
    /// fails part way (ENOSPC) answers, as `write(2)` does, with the bytes
    /// written from its start when there are any, and with the error only
    /// when there are none.
    pub fn write(&self, path: &str, offset: u64, data: &[u8]) -> Result<usize> {
        let name: Arc<str> = layout::backing_name(path)?.into();
        check_range(offset, data.len())?;
        self.check_open()?;
        let mut batch = Batch::new(self, name);
        // The first byte of `data` not known to be written.
        let mut end = data.len();
        let mut on_done = |d: Done, batch_err: &mut Option<Error>| match d.result {
            Ok(n) if (n as usize) < d.want => end = end.min(d.index + n as usize),
            Ok(_) => {}
            Err(f) => {
                end = end.min(d.index);
                note_failure(batch_err, f, "write", path);
            }
        };
        if data.is_empty() {
            let mut buf = batch.acquire(&mut on_done);
            buf.set_len(0);
            batch.submit(
                0,
                ReqKind::Write {
                    offset,
                    buf,
                    direct: false,
                },
            )?;
        }
        let buf_size = self.pool.buf_size();
        let mut submitted = 0;
        for p in layout::pieces(offset, data.len(), self.chunk_size, buf_size) {
            if batch.err.is_some() {
                break;
            }
            batch.index = p.data_offset;
            submitted = p.data_offset + p.len;
            let mut buf = batch.acquire(&mut on_done);
            buf.fill_from(&data[p.data_offset..p.data_offset + p.len]);
            let direct = self.use_direct(p.file_offset, p.len, buf.addr());
            batch.submit(
                p.len,
                ReqKind::Write {
                    offset: p.file_offset,
                    buf,
                    direct,
                },
            )?;
        }
        let failed = batch.finish(&mut on_done).err();
        let written = end.min(submitted);
        match failed {
            Some(e) if written == 0 => Err(e),
            _ => Ok(written),
        }
    }

    /// Reads up to `len` bytes at `offset` of `path`: shorter at the end
    /// of the file, holes read as zeros.
    pub fn read(&self, path: &str, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_into(path, offset, len, &mut out)?;
        Ok(out)
    }

    /// [`ChunkStore::read`] into `out` (cleared first), reusing its
    /// capacity: a caller that keeps its buffers allocates nothing.
    pub fn read_into(&self, path: &str, offset: u64, len: usize, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let name: Arc<str> = layout::backing_name(path)?.into();
        if len > MAX_READ {
            return Err(Error::invalid(
                "length",
                format!("must be at most {MAX_READ} bytes (1 GiB), got {len}"),
            ));
        }
        check_range(offset, len)?;
        self.check_open()?;
        out.resize(len, 0);
        let mut end = len;
        let mut batch = Batch::new(self, name);
        let mut on_done = |d: Done, batch_err: &mut Option<Error>| match d.result {
            Ok(n) => {
                let n = usize::try_from(n).unwrap_or(0).min(d.want);
                if let Some(buf) = &d.buf {
                    let src = &buf.as_slice()[..n.min(buf.len())];
                    out[d.index..d.index + src.len()].copy_from_slice(src);
                }
                if n < d.want {
                    end = end.min(d.index + n);
                }
            }
            Err(f) => note_failure(batch_err, f, "read", path),
        };
        let buf_size = self.pool.buf_size();
        let pieces = layout::pieces(offset, len, self.chunk_size, buf_size);
        if len == 0 {
            // Still report a missing file.
            let buf = batch.acquire(&mut on_done);
            batch.submit(
                0,
                ReqKind::Read {
                    offset,
                    buf,
                    len: 0,
                    direct: false,
                },
            )?;
        }
        for Piece {
            file_offset,
            data_offset,
            len: plen,
        } in pieces
        {
            if batch.err.is_some() {
                break;
            }
            let buf = batch.acquire(&mut on_done);
            let direct = self.use_direct(file_offset, plen, buf.addr());
            batch.index = data_offset;
            batch.submit(
                plen,
                ReqKind::Read {
                    offset: file_offset,
                    buf,
                    len: plen,
                    direct,
                },
            )?;
        }
        batch.finish(&mut on_done)?;
        out.truncate(end);
        Ok(())
    }
}
