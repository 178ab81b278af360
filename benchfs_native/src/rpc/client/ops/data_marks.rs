//! The news that a file's data is written, told to the file's home
//! daemon before the first write or truncate of this client returns, so
//! that the home, while it holds the file's record, answers a stat or an
//! unlink of a never-written file without asking every data daemon
//! (`NO_DATA`, docs/NAMESPACE.md, "File data, placed by id").

use std::collections::HashSet;

use crate::error::Result;
use crate::rpc::client::Client;
use crate::rpc::client::inflight::Call;
use crate::rpc::wire::{CountStep, Request, SharedAttr};

/// Most files a client remembers having told of; past it the memory is
/// cleared (telling a home again costs one message beside a write).
const KEPT: usize = 1 << 16;

/// The tag of a data mark sent beside the calls of a write (whose tags
/// are the pieces' indices).
const MARK_TAG: u64 = u64::MAX - 1;

/// The files whose homes this client told of their data.
#[derive(Debug, Default)]
pub(in crate::rpc::client) struct DataMarks {
    told: HashSet<u64>,
}

impl DataMarks {
    fn remember(&mut self, ino: u64) {
        if self.told.len() >= KEPT {
            self.told.clear();
        }
        self.told.insert(ino);
    }
}

impl Client {
    /// The call that tells the home of file `ino` its data is written
    /// (tagged [`MARK_TAG`]), to send in the same round as the write; `None`
    /// when this client told it already. After a round that succeeded,
    /// [`Self::data_marked`].
    pub(in crate::rpc::client) fn data_mark(&self, ino: u64, label: &str) -> Result<Option<Call>> {
        if self.data_marks.told.contains(&ino) {
            return Ok(None);
        }
        let home = self.home(ino, label)?;
        let req = Request::LinkCount {
            path: "",
            ino,
            step: CountStep::Data,
            mask: 0,
            attr: SharedAttr::default(),
        };
        Call::new(&self.conn, home, &req, MARK_TAG).map(Some)
    }

    /// Remembers that the home of `ino` knows of its data.
    pub(in crate::rpc::client) fn data_marked(&mut self, ino: u64) {
        self.data_marks.remember(ino);
    }

    /// Tells the home of file `ino` its data is written, on its own
    /// (before a truncate, or a phase's transfers): a link_count step.
    pub(in crate::rpc::client) fn tell_data(&mut self, ino: u64, label: &str) -> Result<()> {
        if !self.data_marks.told.contains(&ino) {
            self.count_step(ino, CountStep::Data, label)?;
            self.data_marked(ino);
        }
        Ok(())
    }
}
