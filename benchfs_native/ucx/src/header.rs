//! A copy of an active message header, held by value: a header of up to
//! [`INLINE`] bytes (an RPC header with a short path) needs no allocation.

/// Header bytes held inline.
const INLINE: usize = 128;

/// A header's bytes.
pub(crate) enum HeaderCopy {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl HeaderCopy {
    pub(crate) fn new(h: &[u8]) -> HeaderCopy {
        match u8::try_from(h.len()) {
            Ok(len) if h.len() <= INLINE => {
                let mut bytes = [0u8; INLINE];
                bytes[..h.len()].copy_from_slice(h);
                HeaderCopy::Inline { len, bytes }
            }
            _ => HeaderCopy::Heap(h.into()),
        }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            HeaderCopy::Inline { len, bytes } => &bytes[..usize::from(*len)],
            HeaderCopy::Heap(b) => b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_inline_long_on_the_heap() {
        let short = vec![7u8; INLINE];
        let long = vec![9u8; INLINE + 1];
        assert!(matches!(HeaderCopy::new(&short), HeaderCopy::Inline { .. }));
        assert!(matches!(HeaderCopy::new(&long), HeaderCopy::Heap(_)));
        assert_eq!(HeaderCopy::new(&short).as_slice(), &short[..]);
        assert_eq!(HeaderCopy::new(&long).as_slice(), &long[..]);
        assert!(HeaderCopy::new(&[]).as_slice().is_empty());
    }
}
