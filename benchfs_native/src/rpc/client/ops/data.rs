//! A file's data on every daemon: its size, blocks and times (stat), its
//! removal (unlink), its size set (truncate), and the fan-out they share.

use std::rc::Rc;

use super::{check_path, data_name, enoent, unexpected};
use crate::error::{Error, Result};
use crate::namespace::split_parent;
use crate::rpc::client::Client;
use crate::rpc::client::inflight::{Answer, Call, Outcome};
use crate::rpc::wire::{Attr, FileKind, Request};

/// A file's data over the daemons.
#[derive(Debug, Default)]
pub(super) struct DataAttr {
    pub(super) size: u64,
    blocks: u64,
    mtime: Option<u64>,
}
/// The tag of a call sent beside a fan-out (whose calls are tagged with
/// their node).
const BESIDE_TAG: u64 = u64::MAX;

impl Client {
    /// The record of `path` ("" = the root) from its metadata owner.
    pub(in crate::rpc::client) fn record(&mut self, path: &str) -> Result<Attr> {
        self.record_knowing_data(path).map(|(a, _)| a)
    }

    /// [`Self::record`], and whether its owner knows the file holds no
    /// data (`NO_DATA`).
    fn record_knowing_data(&mut self, path: &str) -> Result<(Attr, bool)> {
        check_path("stat", path, true)?;
        let owner = self.placement.metadata_owner(path);
        match self.call_one(owner, &Request::Stat { path, data: false })? {
            Answer::Attr(a) => Ok((a, false)),
            Answer::NoData(a) => Ok((a, true)),
            a => Err(unexpected("stat", &a)),
        }
    }

    /// Size, blocks and times of data object `data` over every daemon:
    /// the largest size and modification time, the blocks summed; `None`
    /// for the times when no daemon holds any of it.
    pub(super) fn data_attr(&mut self, ino: u64, file: &str) -> Result<DataAttr> {
        let out = self.fan_out_data(ino, file, |p| Request::Stat {
            path: p,
            data: true,
        })?;
        let mut d = DataAttr::default();
        for o in out {
            if let Ok(Answer::Attr(a)) = o.result {
                d.size = d.size.max(a.size);
                d.blocks = d.blocks.saturating_add(a.blocks);
                d.mtime = Some(d.mtime.unwrap_or(0).max(a.mtime_unix_ns));
            }
        }
        Ok(d)
    }

    /// Attributes of `path` ("" = the root): the record from its metadata
    /// owner (a hard-linked name's count, mode, owner and times from the
    /// file's home daemon); for a file, its size (the largest of the
    /// daemons' backing files), blocks (their sum) and modification time
    /// (the latest of them, the record's when no daemon holds data) from
    /// every daemon, unless the owner knows it was never written.
    pub fn stat(&mut self, path: &str) -> Result<Attr> {
        self.check_connected("stat")?;
        let (record, no_data) = self.record_knowing_data(path)?;
        let mut attr = self.with_shared(record, path)?;
        if attr.kind == FileKind::File && !no_data {
            self.fill_data_attr(&mut attr, path)?;
        }
        Ok(attr)
    }

    /// Size, blocks and times of file `attr` from every daemon's data.
    pub(in crate::rpc::client) fn fill_data_attr(
        &mut self,
        attr: &mut Attr,
        path: &str,
    ) -> Result<()> {
        let d = self.data_attr(attr.ino, path)?;
        attr.size = d.size;
        attr.blocks = d.blocks;
        if let Some(m) = d.mtime {
            attr.mtime_unix_ns = m;
            attr.ctime_unix_ns = attr.ctime_unix_ns.max(m);
        }
        Ok(())
    }

    /// Removes file or symbolic link `path`: its record on the metadata
    /// owner, then a file's data from every daemon (for one of several
    /// names: one name less on the file's home daemon, and the data only
    /// with the last; none for a file the owner knows was never written).
    /// `EISDIR` for a directory.
    pub fn unlink(&mut self, path: &str) -> Result<()> {
        self.check_connected("unlink")?;
        check_path("unlink", path, false)?;
        let owner = self.placement.metadata_owner(path);
        // The owner of the parent too: it stamps the parent's times itself.
        let parent_here = self.parent_here(path);
        let req = Request::Unlink {
            path,
            ino: 0,
            data: false,
            parent_here,
        };
        let (id, linked, no_data) = match self.call_one(owner, &req)? {
            Answer::Id {
                id,
                linked,
                no_data,
            } => (id, linked, no_data),
            a => return Err(unexpected("unlink", &a)),
        };
        if no_data {
            if !parent_here {
                self.parent_changed(path, false);
            }
            return Ok(());
        }
        if parent_here {
            return self.settle_removed(id, linked, path);
        }
        // A symbolic link has no data (the owner reports id 0), a name of
        // several drops its file's count (the data goes with the last).
        if id != 0 && !linked {
            return self.remove_data_stamping(id, path);
        }
        self.parent_changed(path, false);
        self.settle_removed(id, linked, path)
    }

    /// Removes the data of file `ino` from every daemon.
    pub(in crate::rpc::client) fn remove_data(&mut self, ino: u64, file: &str) -> Result<()> {
        self.fan_out_data(ino, file, |p| Request::Unlink {
            path: p,
            ino: 0,
            data: true,
            parent_here: false,
        })
        .map(drop)
    }

    /// [`Self::remove_data`] of the file `path` named, its parent's stamp
    /// ([`Self::parent_changed`], best effort) sent with it: one round
    /// trip for both.
    fn remove_data_stamping(&mut self, ino: u64, path: &str) -> Result<()> {
        let (parent, _) = split_parent(path);
        let stamp = Request::CheckParent {
            path: parent,
            subdir: false,
            stamp_only: true,
        };
        let stamp = Call::new(
            &self.conn,
            self.placement.metadata_owner(parent),
            &stamp,
            BESIDE_TAG,
        )?;
        self.fan_out_data_beside(
            ino,
            path,
            |p| Request::Unlink {
                path: p,
                ino: 0,
                data: true,
                parent_here: false,
            },
            Some(stamp),
        )
        .map(drop)
    }

    /// Sets the size of file `path` (which must exist) on every daemon.
    pub fn truncate(&mut self, path: &str, size: u64) -> Result<()> {
        self.check_connected("truncate")?;
        check_path("truncate", path, false)?;
        let owner = self.placement.metadata_owner(path);
        let req = Request::Open {
            path,
            flags: libc::O_WRONLY as u32,
        };
        match self.call_one(owner, &req)? {
            Answer::Attr(a) if a.kind == FileKind::File => self.truncate_data(a.ino, size, path),
            Answer::Attr(_) => Err(Error::os(libc::EISDIR, "truncate", path)),
            a => Err(unexpected("truncate", &a)),
        }
    }

    /// Sets the size of the data of file `ino` on every daemon.
    pub(in crate::rpc::client) fn truncate_data(
        &mut self,
        ino: u64,
        size: u64,
        file: &str,
    ) -> Result<()> {
        // A truncate makes data (a size) on a file that had none.
        self.tell_data(ino, file)?;
        self.fan_out_data(ino, file, |p| Request::Truncate { path: p, size })
            .map(drop)
    }

    /// A request about the data object of file `ino` (path `file`) to
    /// every daemon; `ENOENT` (a daemon without any of it) is not an error.
    pub(in crate::rpc::client) fn fan_out_data(
        &mut self,
        ino: u64,
        file: &str,
        request: impl for<'p> Fn(&'p str) -> Request<'p>,
    ) -> Result<Vec<Outcome>> {
        self.fan_out_data_beside(ino, file, request, None)
    }

    /// [`Self::fan_out_data`], with `beside` (tagged [`BESIDE_TAG`], its
    /// outcome whatever it is left out) sent in the same round.
    fn fan_out_data_beside(
        &mut self,
        ino: u64,
        file: &str,
        request: impl for<'p> Fn(&'p str) -> Request<'p>,
        beside: Option<Call>,
    ) -> Result<Vec<Outcome>> {
        let data = data_name(ino);
        // Errors name the file's path, not its data object.
        let label: Rc<str> = Rc::from(file);
        let n = self.placement.nodes();
        let mut calls = (0..n)
            .map(|node| Call::named(&self.conn, node, &request(&data), u64::from(node), &label))
            .collect::<Result<Vec<_>>>()?;
        calls.extend(beside);
        let tolerated = |o: &Outcome| o.tag == BESIDE_TAG || enoent(o);
        let mut out = self.window.run_all(&self.conn, calls, tolerated)?;
        out.retain(|o| o.tag != BESIDE_TAG);
        for o in &out {
            if let Err(e) = &o.result
                && !enoent(o)
            {
                return Err(e.clone());
            }
        }
        Ok(out)
    }
}
