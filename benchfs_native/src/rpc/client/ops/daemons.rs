//! Calls to the daemons themselves: ping, stats and shutdown.

use std::time::{Duration, Instant};

use super::unexpected;
use crate::error::{Error, Result};
use crate::rpc::client::Client;
use crate::rpc::client::inflight::{Answer, Call};
use crate::rpc::wire::Request;

impl Client {
    pub(in crate::rpc::client) fn check_node(&self, node: u32, op: &'static str) -> Result<()> {
        self.check_connected(op)?;
        if node >= self.placement.nodes() {
            return Err(Error::invalid(
                "node_id",
                format!("{node} is not in 0..{}", self.placement.nodes()),
            ));
        }
        Ok(())
    }

    /// Round-trip time of a ping to `node`.
    pub fn ping(&mut self, node: u32) -> Result<Duration> {
        self.check_node(node, "ping")?;
        let t = Instant::now();
        self.call_one(
            node,
            &Request::Ping {
                len: 0,
                echo: false,
            },
        )?;
        Ok(t.elapsed())
    }

    /// The daemon's statistics (a JSON object, docs/RPC.md).
    pub fn stats(&mut self, node: u32) -> Result<String> {
        self.check_node(node, "stats")?;
        match self.call_one(node, &Request::Stats)? {
            Answer::Json(s) => Ok(s),
            a => Err(unexpected("stats", &a)),
        }
    }

    /// Asks every daemon to stop (`force`: without draining), then closes
    /// the sessions. The first daemon that did not confirm is the error.
    pub fn shutdown_daemons(&mut self, force: bool) -> Result<()> {
        self.check_connected("shutdown")?;
        let calls = (0..self.placement.nodes())
            .map(|node| Call::new(&self.conn, node, &Request::Shutdown { force }, 0))
            .collect::<Result<Vec<_>>>()?;
        let out = self.window.run_all(&self.conn, calls, |_| true);
        self.window.abandon();
        self.window.flush_trace();
        self.conn.close(Duration::from_millis(500), false);
        self.files.clear();
        for o in out? {
            o.result?;
        }
        Ok(())
    }
}
