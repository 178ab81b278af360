//! Log lines on stderr, each written whole.
//!
//! Rust's stderr is unbuffered, so `eprintln!` issues one `write` per
//! formatted piece; daemons that share one output (an MPI job's forwarded
//! stderr) then interleave mid-line. A line is formatted first and written
//! with one call, which a pipe keeps whole up to `PIPE_BUF` bytes.

use std::fmt;
use std::io::Write;

/// Writes one line (a newline is appended) to stderr with a single write.
pub fn line(args: fmt::Arguments<'_>) {
    let mut text = fmt::format(args);
    text.push('\n');
    // Nothing sensible to do when stderr is gone.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `log_line!("fmt", args...)`: [`line`](fn@line) with `format!` syntax.
#[macro_export]
macro_rules! log_line {
    ($($arg:tt)*) => {
        $crate::log::line(format_args!($($arg)*))
    };
}
