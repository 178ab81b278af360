//! A bounded pool of reusable data buffers: write data is received into
//! one, read data is read into one and sent from it. A request holds its
//! buffer from dispatch until its reply has been sent, so at most `max`
//! exist; the most recently returned (cache-hot) one is handed out first,
//! and a buffer keeps its capacity, so a steady load allocates nothing.

/// The pool.
#[derive(Debug)]
pub struct BufPool {
    free: Vec<Vec<u8>>,
    max: usize,
    live: usize,
    grows: u64,
}

impl BufPool {
    /// A pool of at most `max` buffers (created on first use).
    pub fn new(max: usize) -> BufPool {
        BufPool {
            free: Vec::with_capacity(max),
            max,
            live: 0,
            grows: 0,
        }
    }

    /// An empty buffer with at least `capacity` bytes of capacity, or
    /// `None` when all `max` buffers are in use.
    pub fn take(&mut self, capacity: usize) -> Option<Vec<u8>> {
        let mut buf = match self.free.pop() {
            Some(b) => b,
            None if self.live < self.max => {
                self.live += 1;
                Vec::new()
            }
            None => return None,
        };
        buf.clear();
        if buf.capacity() < capacity {
            self.grows += 1;
            buf.reserve_exact(capacity);
        }
        Some(buf)
    }

    /// Returns a buffer taken from this pool (or an empty one in place of
    /// a buffer lost with a failed operation).
    pub fn put(&mut self, buf: Vec<u8>) {
        debug_assert!(self.free.len() < self.live);
        self.free.push(buf);
    }

    /// Whether a buffer is available now.
    pub fn available(&self) -> bool {
        !self.free.is_empty() || self.live < self.max
    }

    /// Buffers created so far and not lost.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Times a buffer had to grow (allocations after warm-up).
    pub fn grows(&self) -> u64 {
        self.grows
    }

    /// Bytes of capacity held by the idle buffers.
    pub fn idle_bytes(&self) -> usize {
        self.free.iter().map(Vec::capacity).sum()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn bounded_lifo_and_reused() {
        let mut p = BufPool::new(2);
        let a = p.take(100).unwrap();
        let a_ptr = a.as_ptr();
        let b = p.take(10).unwrap();
        assert!(p.take(1).is_none());
        p.put(b);
        p.put(a);
        let again = p.take(50).unwrap();
        assert_eq!(again.as_ptr(), a_ptr, "most recently returned first");
        assert_eq!(p.grows(), 2);
        // A buffer lost with a failed operation is replaced by an empty one.
        p.put(Vec::new());
        assert!(p.take(1).unwrap().capacity() >= 1);
        assert_eq!(p.grows(), 3);
    }
}
