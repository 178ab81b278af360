//! File ids: unique over the cluster and over restarts of a daemon, so a
//! new file never lands in an old file's backing file.

/// Bits of an id below the node part (which needs 21 bits: node ids go up
/// to 2^20).
const LOCAL_BITS: u32 = 43;
const LOCAL_MASK: u64 = (1 << LOCAL_BITS) - 1;

/// Hands out the ids of one daemon: `(node_id + 1) << 43 | local`, where
/// `local` counts up from a random start (the `seed`), so two daemons never
/// share an id and a restarted daemon is unlikely to repeat one. The root
/// (id 1) is never handed out.
#[derive(Debug, Clone)]
pub struct IdSource {
    node_part: u64,
    /// The local part before the first id of this start.
    start: u64,
    next: u64,
}

impl IdSource {
    /// Ids of node `node_id`, starting at a point chosen by `seed`.
    pub fn new(node_id: u32, seed: u64) -> IdSource {
        // The upper 11 of the 43 local bits are random: 2^32 ids per run
        // before two runs of one daemon can meet.
        let start = (seed << 32) & LOCAL_MASK;
        IdSource {
            node_part: (u64::from(node_id) + 1) << LOCAL_BITS,
            start,
            next: start,
        }
    }

    /// Whether this source handed out `ino` (the file's home is here).
    pub fn is_mine(&self, ino: u64) -> bool {
        ino & !LOCAL_MASK == self.node_part
    }

    /// Whether this source handed out `ino` since it started (not an
    /// earlier start of the same daemon, whose ids share its node part).
    pub fn handed_out(&self, ino: u64) -> bool {
        let local = ino & LOCAL_MASK;
        let since = |x: u64| x.wrapping_sub(self.start) & LOCAL_MASK;
        self.is_mine(ino) && since(local) != 0 && since(local) <= since(self.next)
    }

    /// The next id.
    pub fn next_id(&mut self) -> u64 {
        self.next = (self.next + 1) & LOCAL_MASK;
        self.node_part | self.next
    }
}

/// The node whose [`IdSource`] handed out `ino` (the home of its link
/// count); `None` for the root and ids no daemon hands out.
pub fn home_node(ino: u64) -> Option<u32> {
    u32::try_from((ino >> LOCAL_BITS).checked_sub(1)?).ok()
}
