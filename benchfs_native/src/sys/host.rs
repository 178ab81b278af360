//! The host name.

/// `gethostname(2)`, `None` when it fails.
pub fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // Safety: the buffer is writable for its length; gethostname writes a
    // NUL-terminated name into it (truncated if longer).
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_host_has_a_name() {
        let name = super::hostname().expect("gethostname");
        assert!(!name.is_empty());
        assert!(!name.contains('\0'));
    }
}
