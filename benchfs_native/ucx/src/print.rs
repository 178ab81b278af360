//! UCX's `*_print_info` functions write to a `FILE *`: this captures
//! their text in a string.

use std::ptr;

/// Runs `f` with a memory stream and returns what it printed.
pub(crate) fn print_to_string(f: impl FnOnce(*mut libc::FILE)) -> String {
    let mut buf: *mut libc::c_char = ptr::null_mut();
    let mut size: libc::size_t = 0;
    // Safety: valid out-pointers; the stream is closed below.
    let stream = unsafe { libc::open_memstream(&mut buf, &mut size) };
    if stream.is_null() {
        return String::new();
    }
    f(stream);
    // Safety: `stream` is the open memstream; closing it finalises `buf`.
    unsafe { libc::fclose(stream) };
    if buf.is_null() {
        return String::new();
    }
    // Safety: after fclose, `buf` holds `size` bytes allocated by libc.
    let out =
        String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(buf as *const u8, size) })
            .into_owned();
    // Safety: `buf` was allocated by open_memstream and is freed once.
    unsafe { libc::free(buf.cast()) };
    out
}
