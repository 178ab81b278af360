//! Splitting a byte range of a file at chunk borders: one RPC per piece.

use crate::error::Result;

/// One piece of a range: inside chunk `chunk`, at `chunk_offset`, `len`
/// bytes, which are bytes `buf_offset..buf_offset + len` of the caller's
/// buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPiece {
    /// Chunk index.
    pub chunk: u64,
    /// Offset inside the chunk.
    pub chunk_offset: u64,
    /// Offset in the caller's buffer.
    pub buf_offset: usize,
    /// Bytes.
    pub len: usize,
}

/// The pieces of `len` bytes at file offset `offset`, in file order. An
/// empty range has no pieces. `chunk_size` must be positive (the client
/// refuses daemons announcing 0).
pub fn split(offset: u64, len: usize, chunk_size: u64) -> Split {
    Split {
        offset,
        done: 0,
        len,
        chunk_size: chunk_size.max(1),
    }
}

/// Iterator of [`split`].
#[derive(Debug, Clone)]
pub struct Split {
    offset: u64,
    done: usize,
    len: usize,
    chunk_size: u64,
}

impl Iterator for Split {
    type Item = ChunkPiece;

    fn next(&mut self) -> Option<ChunkPiece> {
        if self.done >= self.len {
            return None;
        }
        let at = self.offset.saturating_add(self.done as u64);
        let chunk = at / self.chunk_size;
        let chunk_offset = at % self.chunk_size;
        let room = self.chunk_size - chunk_offset;
        let left = (self.len - self.done) as u64;
        // At most `left`, which came from a usize.
        let len = room.min(left) as usize;
        let piece = ChunkPiece {
            chunk,
            chunk_offset,
            buf_offset: self.done,
            len,
        };
        self.done += len;
        Some(piece)
    }
}

/// What a write of `pieces` answers, as `write(2)` does: the bytes
/// written from its start, up to the first piece that failed or wrote
/// short (a full disk); the error only when no byte was written.
pub fn written_from_start(pieces: &[ChunkPiece], done: Vec<Result<u64>>) -> Result<u64> {
    let mut written = 0u64;
    for (p, d) in pieces.iter().zip(done) {
        match d {
            Ok(n) if n >= p.len as u64 => written += p.len as u64,
            Ok(n) => return Ok(written + n),
            Err(e) if written == 0 => return Err(e),
            Err(_) => return Ok(written),
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_unaligned_ranges() {
        let p: Vec<_> = split(0, 8, 4).collect();
        assert_eq!(
            p,
            [
                ChunkPiece {
                    chunk: 0,
                    chunk_offset: 0,
                    buf_offset: 0,
                    len: 4
                },
                ChunkPiece {
                    chunk: 1,
                    chunk_offset: 0,
                    buf_offset: 4,
                    len: 4
                },
            ]
        );
        let p: Vec<_> = split(3, 7, 4).collect();
        let lens: Vec<_> = p.iter().map(|x| (x.chunk, x.chunk_offset, x.len)).collect();
        assert_eq!(lens, [(0, 3, 1), (1, 0, 4), (2, 0, 2)]);
        assert_eq!(split(5, 0, 4).count(), 0);
        let one: Vec<_> = split(5, 2, 4).collect();
        assert_eq!(one.len(), 1);
        assert_eq!((one[0].chunk, one[0].chunk_offset), (1, 1));
    }

    #[test]
    fn pieces_cover_the_range_exactly_and_never_cross_a_border() {
        let mut x: u64 = 0x1234_5678_9abc_def1;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let chunk_size = 1 + x % 5000;
            let offset = (x >> 20) % 100_000;
            let len = ((x >> 40) % 30_000) as usize;
            let mut next_buf = 0usize;
            for p in split(offset, len, chunk_size) {
                assert_eq!(p.buf_offset, next_buf);
                assert!(p.len > 0);
                assert!(p.chunk_offset + p.len as u64 <= chunk_size);
                assert_eq!(
                    p.chunk * chunk_size + p.chunk_offset,
                    offset + p.buf_offset as u64
                );
                next_buf += p.len;
            }
            assert_eq!(next_buf, len);
        }
    }

    #[test]
    fn a_write_that_fails_part_way_answers_the_bytes_before() {
        use crate::error::Error;
        let pieces: Vec<_> = split(10, 300, 100).collect();
        assert_eq!(pieces.len(), 4); // 90, 100, 100, 10
        let full = |p: &ChunkPiece| Ok(p.len as u64);
        let all: Vec<_> = pieces.iter().map(full).collect();
        assert_eq!(written_from_start(&pieces, all).ok(), Some(300));
        // The second piece short: the later pieces do not count.
        let mut short: Vec<_> = pieces.iter().map(full).collect();
        short[1] = Ok(40);
        assert_eq!(written_from_start(&pieces, short).ok(), Some(130));
        // The third failed: the bytes of the first two.
        let mut failed: Vec<_> = pieces.iter().map(full).collect();
        failed[2] = Err(Error::os(libc::ENOSPC, "write", "f"));
        assert_eq!(written_from_start(&pieces, failed).ok(), Some(190));
        // The first failed: the error, whatever the others wrote.
        let mut first: Vec<_> = pieces.iter().map(full).collect();
        first[0] = Err(Error::os(libc::ENOSPC, "write", "f"));
        let e = written_from_start(&pieces, first).expect_err("nothing written");
        assert_eq!(e.errno(), Some(libc::ENOSPC));
    }
}
