//! A directory's entries: the union over every daemon, a page at a time.

use std::collections::BTreeMap;

use super::unexpected;
use crate::error::{Error, Result};
use crate::rpc::client::Client;
use crate::rpc::client::inflight::{Answer, Call, Entry};
use crate::rpc::wire::{FileKind, Request};

/// Entries asked for per readdir page.
const READDIR_PAGE: u32 = 4096;

impl Client {
    /// The entries directly under directory `path` ("" = the root), over
    /// every daemon, sorted by name. `ENOENT`, `ENOTDIR` (a file).
    pub fn readdir(&mut self, path: &str) -> Result<Vec<Entry>> {
        self.check_connected("readdir")?;
        if !path.is_empty() && self.record(path)?.kind != FileKind::Dir {
            return Err(Error::os(libc::ENOTDIR, "readdir", path));
        }
        self.list(path, READDIR_PAGE)
    }

    /// The entries under `path` of every daemon, asking `page` at a time
    /// (a page of 1 and one round: is it empty?).
    pub(in crate::rpc::client) fn list(&mut self, path: &str, page: u32) -> Result<Vec<Entry>> {
        let mut todo: Vec<(u32, u64)> = (0..self.placement.nodes()).map(|n| (n, 0)).collect();
        let mut merged: BTreeMap<String, Entry> = BTreeMap::new();
        while !todo.is_empty() {
            let calls = todo
                .iter()
                .map(|&(node, cursor)| {
                    let req = Request::Readdir {
                        path,
                        cursor,
                        max_entries: page,
                    };
                    Call::new(&self.conn, node, &req, u64::from(node))
                })
                .collect::<Result<Vec<_>>>()?;
            let out = self.window.run_all(&self.conn, calls, |_| false)?;
            todo.clear();
            for o in out {
                match o.result? {
                    Answer::Dir {
                        entries,
                        next_cursor,
                        eof,
                    } => {
                        let more = !eof && !entries.is_empty() && page > 1;
                        for e in entries {
                            merged.insert(e.name.clone(), e);
                        }
                        if more {
                            todo.push((o.node, next_cursor));
                        }
                    }
                    a => return Err(unexpected("readdir", &a)),
                }
            }
        }
        Ok(merged.into_values().collect())
    }
}
