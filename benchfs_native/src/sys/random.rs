//! `getrandom(2)`: bytes from the kernel's random source, for secrets
//! (session keys, nonces, channel tokens).

use std::io;

/// Fills `buf` with random bytes from the kernel.
pub fn fill_random(buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // Safety: `rest` is writable for its length; getrandom writes at
        // most that many bytes into it.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        done += n as usize;
    }
    Ok(())
}

/// A random `u64` (0 only when the kernel's source fails, never silently:
/// the caller gets the error).
pub fn random_u64() -> io::Result<u64> {
    let mut b = [0u8; 8];
    fill_random(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// The effective user id of this process.
pub fn effective_uid() -> u32 {
    // Safety: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The process's effective group id.
pub fn effective_gid() -> u32 {
    // Safety: getegid has no preconditions and cannot fail.
    unsafe { libc::getegid() }
}
