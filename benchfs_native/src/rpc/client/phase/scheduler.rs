//! Which piece of which transfer goes next: a window of pieces across
//! transfers, each transfer's pieces in order.

use crate::rpc::client::split::{ChunkPiece, Split};

/// One issue step of the [`Scheduler`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Issue `piece` of the transfer in `slot` (`first`: its first piece).
    Issue {
        slot: usize,
        op: u64,
        piece: ChunkPiece,
        first: bool,
    },
    /// The window is full, or nothing is left to start: wait for a piece.
    Wait,
    /// Nothing outstanding and nothing left to start.
    Finished,
}

#[derive(Debug)]
struct Slot {
    op: u64,
    pieces: Split,
    count: usize,
    issued: usize,
    done: usize,
}

/// Which piece of which transfer goes next: at most `max` pieces
/// outstanding across transfers; a transfer's pieces are issued in order
/// before the next transfer starts.
#[derive(Debug)]
pub(super) struct Scheduler {
    max: usize,
    outstanding: usize,
    slots: Vec<Option<Slot>>,
    current: Option<usize>,
    next_op: u64,
    end_op: u64,
    pub(super) stopped: bool,
}

impl Scheduler {
    pub(super) fn new(max: usize, first_op: u64, end_op: u64) -> Scheduler {
        let max = max.max(1);
        Scheduler {
            max,
            outstanding: 0,
            slots: (0..=max).map(|_| None).collect(),
            current: None,
            next_op: first_op,
            end_op,
            stopped: false,
        }
    }

    /// Stop starting transfers (those started are finished).
    pub(super) fn stop(&mut self) {
        self.stopped = true;
    }

    pub(super) fn step(&mut self, pieces_of: impl FnOnce(u64) -> Split) -> Step {
        if self.outstanding >= self.max {
            return Step::Wait;
        }
        if let Some(slot) = self.current {
            if let Some(s) = self.slots[slot].as_mut()
                && let Some(piece) = s.pieces.next()
            {
                s.issued += 1;
                if s.issued == s.count {
                    self.current = None;
                }
                self.outstanding += 1;
                return Step::Issue {
                    slot,
                    op: s.op,
                    piece,
                    first: false,
                };
            }
            self.current = None;
        }
        if self.stopped || self.next_op >= self.end_op {
            return if self.outstanding == 0 {
                Step::Finished
            } else {
                Step::Wait
            };
        }
        let Some(slot) = self.slots.iter().position(Option::is_none) else {
            return Step::Wait;
        };
        let op = self.next_op;
        let mut pieces = pieces_of(op);
        let count = pieces.clone().count();
        let Some(piece) = pieces.next() else {
            // An empty transfer cannot happen (transfer_size > 0).
            self.next_op += 1;
            return Step::Wait;
        };
        self.next_op += 1;
        self.outstanding += 1;
        self.slots[slot] = Some(Slot {
            op,
            pieces,
            count,
            issued: 1,
            done: 0,
        });
        if count > 1 {
            self.current = Some(slot);
        }
        Step::Issue {
            slot,
            op,
            piece,
            first: true,
        }
    }

    /// A piece of `slot` finished; returns the transfer when it is complete.
    pub(super) fn piece_done(&mut self, slot: usize) -> Option<u64> {
        let s = self.slots.get_mut(slot)?.as_mut()?;
        s.done += 1;
        self.outstanding = self.outstanding.saturating_sub(1);
        if s.done == s.count {
            let op = s.op;
            self.slots[slot] = None;
            return Some(op);
        }
        None
    }

    /// One more piece of `slot` went out (the rest of a short write).
    pub(super) fn reissue(&mut self, slot: usize) {
        if let Some(s) = self.slots.get_mut(slot).and_then(Option::as_mut) {
            s.count += 1;
            s.issued += 1;
            self.outstanding += 1;
        }
    }

    /// Transfers issued so far (the next transfer index).
    pub(super) fn reached(&self) -> u64 {
        self.next_op
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::rpc::client::split::split;

    /// Drives the scheduler with completions in a pseudo-random order and
    /// checks the window accounting.
    fn simulate(max: usize, ts: usize, chunk: u64, ops: u64, seed: u64, stop_at: Option<u64>) {
        let mut s = Scheduler::new(max, 0, ops);
        let mut outstanding: Vec<(usize, u64, ChunkPiece)> = Vec::new();
        let mut issued: Vec<Vec<ChunkPiece>> = vec![Vec::new(); ops as usize];
        let mut completed = vec![false; ops as usize];
        let mut x = seed | 1;
        loop {
            loop {
                if stop_at.is_some_and(|n| s.reached() >= n) {
                    s.stop();
                }
                match s.step(|op| split(op * ts as u64, ts, chunk)) {
                    Step::Issue {
                        slot,
                        op,
                        piece,
                        first,
                    } => {
                        assert_eq!(first, issued[op as usize].is_empty());
                        issued[op as usize].push(piece);
                        outstanding.push((slot, op, piece));
                        assert!(outstanding.len() <= max, "window exceeded");
                    }
                    Step::Wait => break,
                    Step::Finished => {
                        assert!(outstanding.is_empty());
                        let reached = s.reached();
                        for op in 0..ops {
                            let whole = split(op * ts as u64, ts, chunk).collect::<Vec<_>>();
                            if op < reached {
                                assert_eq!(issued[op as usize], whole, "op {op}");
                                assert!(completed[op as usize], "op {op} never completed");
                            } else {
                                assert!(issued[op as usize].is_empty());
                            }
                        }
                        if let Some(n) = stop_at {
                            assert!(reached >= n.min(ops) && reached <= ops);
                        } else {
                            assert_eq!(reached, ops);
                        }
                        return;
                    }
                }
            }
            assert!(!outstanding.is_empty(), "waiting with nothing outstanding");
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (slot, op, _) = outstanding.swap_remove((x as usize) % outstanding.len());
            if let Some(done) = s.piece_done(slot) {
                assert_eq!(done, op);
                assert!(!completed[op as usize]);
                completed[op as usize] = true;
                assert!(outstanding.iter().all(|&(_, o, _)| o != op));
            }
        }
    }

    #[test]
    fn window_accounting() {
        for (max, ts, chunk) in [
            (1, 10, 4),
            (4, 10, 4),
            (16, 3000, 1024),
            (3, 5, 100),
            (2, 64, 64),
        ] {
            for seed in 1..20 {
                simulate(max, ts, chunk, 25, seed, None);
                simulate(max, ts, chunk, 25, seed, Some(7));
            }
        }
    }
}
