//! Hard links (docs/NAMESPACE.md, "Hard links"): a second name record of
//! a file's id on the new name's owner, the link count and the attributes
//! the names share on the daemon that handed out the id (its home), and
//! what a removal of a name settles.

use super::Client;
use super::inflight::Answer;
use super::ops::{check_path, unexpected};
use crate::error::{Error, Result};
use crate::namespace::home_node;
use crate::rpc::wire::{Attr, CountStep, FileKind, Record, Request, SET_MODE, SharedAttr};

impl Client {
    /// Gives file or symbolic link `from` the second name `to`; returns
    /// the attributes of `to` (nlink counted). `EEXIST` if `to` exists,
    /// `ENOENT` if `from` does not (or vanished meanwhile) or `to`'s
    /// parent is missing, `ENOTDIR` if that parent is a file, `EPERM` for
    /// a directory `from`, `EMLINK` beyond the count's limit.
    ///
    /// Steps: the record of `from`; one name more on the home daemon; the
    /// mark of `from` as one of several names (by id, so a file put there
    /// since is not marked); the record under `to` (exclusive); the parent
    /// check of `to`. A failed step undoes the ones before it, so a
    /// failure leaves the count and the names as they were.
    pub fn link(&mut self, from: &str, to: &str) -> Result<Attr> {
        self.check_connected("link")?;
        check_path("link", from, false)?;
        check_path("link", to, false)?;
        let (src, target) = self.moving_source(from, || {
            Error::os(
                libc::EPERM,
                "link",
                format!("{from}: no hard links to directories"),
            )
        })?;
        if from == to {
            return Err(Error::os(libc::EEXIST, "link", to));
        }
        let ino = src.ino;
        // The first link hands the home the source's attributes; a later
        // one gets the home's back.
        let added = self.home_step(ino, CountStep::Add, 0, shared_of(&src), from)?;
        if let Err(e) = self.mark(from, ino) {
            // ENOENT: the source went meanwhile (removed or renamed), so
            // the add is taken back as an undo, which also takes the
            // table's entry when no name was ever marked.
            let step = match e.errno() {
                Some(libc::ENOENT) => CountStep::Undo,
                _ => CountStep::Drop,
            };
            let _ = self.take_back(ino, step, to);
            return Err(e);
        }
        if let Err(e) = self.link_name(to, &src, &target) {
            let _ = self.take_back(ino, CountStep::Drop, to);
            return Err(e);
        }
        // The source's record with the count and attributes the add left
        // (no stat of the new name: it is the same file).
        let mut attr = with_home(src, added);
        if attr.kind == FileKind::File {
            self.fill_data_attr(&mut attr, to)?;
        }
        Ok(attr)
    }

    /// Marks the record `from`, if it still has id `ino`, as one of
    /// several names (on its owner); `ENOENT` otherwise.
    fn mark(&mut self, from: &str, ino: u64) -> Result<()> {
        let from_owner = self.placement.metadata_owner(from);
        let mark = Request::LinkCount {
            path: from,
            ino,
            step: CountStep::Mark,
            mask: 0,
            attr: SharedAttr::default(),
        };
        self.call_one(from_owner, &mark).map(|_| ())
    }

    /// The steps of [`Client::link`] after the mark: the record under
    /// `to` and its parent check.
    fn link_name(&mut self, to: &str, src: &Attr, target: &str) -> Result<()> {
        let to_owner = self.placement.metadata_owner(to);
        let link = Request::Link {
            path: to,
            record: moved_record(src),
            target_len: target.len() as u64,
            parent_here: self.parent_here(to),
            exclusive: true,
            linked: true,
        };
        if target.is_empty() {
            self.call_one(to_owner, &link)?;
        } else {
            self.call_with_target(to_owner, &link, target)?;
        }
        let undo = Request::Unlink {
            path: to,
            ino: src.ino,
            data: false,
            parent_here: false,
        };
        self.check_parent_or_undo(to_owner, to, &undo)
    }

    /// The daemon holding the link count of `ino` (the daemon that
    /// handed out the id).
    pub(super) fn home(&self, ino: u64, label: &str) -> Result<u32> {
        match home_node(ino) {
            Some(n) if n < self.placement.nodes() => Ok(n),
            _ => Err(Error::os(
                libc::EIO,
                "link_count",
                format!(
                    "{label}: id {ino:#x} names no daemon of {}",
                    self.placement.nodes()
                ),
            )),
        }
    }

    /// One step on the link count and shared attributes of `ino` on its
    /// home (`label` names the file in errors); what it leaves.
    fn home_step(
        &mut self,
        ino: u64,
        step: CountStep,
        mask: u32,
        attr: SharedAttr,
        label: &str,
    ) -> Result<HomeAnswer> {
        let home = self.home(ino, label)?;
        let req = Request::LinkCount {
            path: "",
            ino,
            step,
            mask,
            attr,
        };
        match self.call_one(home, &req)? {
            Answer::Count(n, shared) => Ok((n, shared)),
            a => Err(unexpected(&format!("link_count of {label}"), &a)),
        }
    }

    /// Stamps the ctime of hard-linked file `ino` on its home (a rename of
    /// one of its names). Best effort, as the parents' times.
    pub(super) fn touch_shared(&mut self, ino: u64, label: &str) {
        let _ = self.home_step(ino, CountStep::Set, 0, SharedAttr::default(), label);
    }

    /// A step without attributes: the count after it.
    pub(super) fn count_step(&mut self, ino: u64, step: CountStep, label: &str) -> Result<u64> {
        let (n, _) = self.home_step(ino, step, 0, SharedAttr::default(), label)?;
        Ok(n)
    }

    /// One name of file `ino` less: its data goes with the last name.
    fn drop_name(&mut self, ino: u64, label: &str) -> Result<()> {
        self.take_back(ino, CountStep::Drop, label)
    }

    /// A drop or an undo of one name of file `ino`: its data goes when
    /// the count reaches 0.
    fn take_back(&mut self, ino: u64, step: CountStep, label: &str) -> Result<()> {
        if self.count_step(ino, step, label)? == 0 {
            self.remove_data(ino, label)?;
        }
        Ok(())
    }

    /// What removing (or replacing) a name leaves to do: nothing (id 0),
    /// one name less of a hard-linked file, or the data of a file that
    /// had only this name.
    pub(super) fn settle_removed(&mut self, id: u64, linked: bool, label: &str) -> Result<()> {
        match (id, linked) {
            (0, _) => Ok(()),
            (_, true) => self.drop_name(id, label),
            (_, false) => self.remove_data(id, label),
        }
    }

    /// `attr` of a name's record with the file's real link count and the
    /// attributes its names share: a name owner reports nlink 0 for one
    /// of several names, whose count and attributes are on the file's
    /// home daemon.
    pub(super) fn with_shared(&mut self, attr: Attr, label: &str) -> Result<Attr> {
        if !is_linked(&attr) {
            return Ok(attr);
        }
        let got = self.home_step(attr.ino, CountStep::Get, 0, SharedAttr::default(), label)?;
        Ok(with_home(attr, got))
    }

    /// The setattr `mask` (`SET_*`) with values `values` made through
    /// name `rec` (the owner's answer, changed already) on the file's
    /// home when the name is one of several; `rec` with the file's count
    /// and shared attributes after it.
    pub(super) fn set_shared(
        &mut self,
        rec: Attr,
        mask: u32,
        values: SharedAttr,
        label: &str,
    ) -> Result<Attr> {
        if !is_linked(&rec) {
            return Ok(rec);
        }
        // A symbolic link's mode is never changed (as on its record).
        let mask = if rec.kind == FileKind::Symlink {
            mask & !SET_MODE
        } else {
            mask
        };
        // Nothing left to change: the home's attributes as they are.
        let got = if mask == 0 {
            self.home_step(rec.ino, CountStep::Get, 0, SharedAttr::default(), label)?
        } else {
            self.home_step(rec.ino, CountStep::Set, mask, values, label)?
        };
        Ok(with_home(rec, got))
    }
}

/// What a link_count step on the home answers: the count, and the shared
/// attributes when the home keeps the file.
type HomeAnswer = (u64, Option<SharedAttr>);

/// Whether `attr` (a name owner's) is one of several names of its file.
fn is_linked(attr: &Attr) -> bool {
    attr.kind != FileKind::Dir && attr.nlink == 0
}

/// A name's record `attr` with its home's answer: the count, and the
/// shared attributes over the record's (the home keeps none for a file
/// whose table entry is gone with a restart: the record's stand).
fn with_home(mut attr: Attr, (count, shared): HomeAnswer) -> Attr {
    attr.nlink = u32::try_from(count).unwrap_or(u32::MAX);
    if let Some(s) = shared {
        attr.mode = (attr.mode & libc::S_IFMT) | s.mode;
        attr.uid = s.uid;
        attr.gid = s.gid;
        attr.atime_unix_ns = s.atime_unix_ns;
        attr.mtime_unix_ns = s.mtime_unix_ns;
        attr.ctime_unix_ns = s.ctime_unix_ns;
    }
    attr
}

/// The attributes of name record `a` its file's other names share.
fn shared_of(a: &Attr) -> SharedAttr {
    SharedAttr {
        mode: a.mode & 0o7777,
        uid: a.uid,
        gid: a.gid,
        atime_unix_ns: a.atime_unix_ns,
        mtime_unix_ns: a.mtime_unix_ns,
        ctime_unix_ns: a.ctime_unix_ns,
    }
}

impl Client {
    /// The attributes of `from`, which a link or rename gives another
    /// name, and a symbolic link's target with them ("" for a file); a
    /// directory gives `dir_error`.
    pub(super) fn moving_source(
        &mut self,
        from: &str,
        dir_error: impl FnOnce() -> Error,
    ) -> Result<(Attr, String)> {
        let src = self.record(from)?;
        let (target, src) = if src.kind == FileKind::Symlink {
            self.readlink(from)?
        } else {
            (String::new(), src)
        };
        if src.kind == FileKind::Dir {
            return Err(dir_error());
        }
        Ok((src, target))
    }
}

/// The record a link or rename carries of file or link `a`.
pub(super) fn moved_record(a: &Attr) -> Record {
    Record {
        ino: a.ino,
        mode: a.mode,
        // A device's size is its number.
        rdev: if a.kind.is_device() {
            u32::try_from(a.size).unwrap_or(0)
        } else {
            0
        },
        uid: a.uid,
        gid: a.gid,
        atime_unix_ns: a.atime_unix_ns,
        mtime_unix_ns: a.mtime_unix_ns,
        ctime_unix_ns: a.ctime_unix_ns,
    }
}
