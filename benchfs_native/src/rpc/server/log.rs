//! The daemon's log lines on stderr, each prefixed with its name; lines
//! about dropped or refused messages are thinned, so a flood of them
//! cannot flood the log.

/// Drop log lines: the first few, then one in this many.
const LOG_EVERY: u64 = 1000;
const LOG_FIRST: u64 = 20;

/// The daemon's log.
#[derive(Debug)]
pub(super) struct Log {
    node_name: String,
    drops: u64,
}

impl Log {
    /// The log of daemon `node_name`.
    pub(super) fn new(node_name: &str) -> Log {
        Log {
            node_name: node_name.to_owned(),
            drops: 0,
        }
    }

    /// A log line.
    pub(super) fn line(&self, msg: &str) {
        crate::log_line!("benchfs daemon {}: {msg}", self.node_name);
    }

    /// A line about a dropped or refused message: the first few, then one
    /// in [`LOG_EVERY`].
    pub(super) fn dropped(&mut self, msg: &str) {
        self.drops += 1;
        let n = self.drops;
        if n <= LOG_FIRST || n.is_multiple_of(LOG_EVERY) {
            self.line(&format!("{msg} ({n} refused so far)"));
        }
    }
}
