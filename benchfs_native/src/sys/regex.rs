//! A POSIX basic regular expression (`regcomp`/`regexec` of the C library),
//! compiled once and matched against many names, in the "C" locale: bytes,
//! as a C program that never calls `setlocale` matches them (pfind), not
//! the multibyte characters of the locale a Python process sets, which
//! doubles a match's cost.

use std::ffi::CString;

/// A compiled expression; freed when dropped. Matching needs a
/// NUL-terminated copy of the text, kept in a buffer of its own so a match
/// allocates nothing after the first long name.
#[derive(Debug)]
pub struct Regex {
    // Boxed: the C library's object is never moved once compiled.
    compiled: Box<libc::regex_t>,
    c_locale: libc::locale_t,
    text: Vec<u8>,
}

impl Regex {
    /// Compiles `pattern` as a basic expression with the default flags
    /// (pfind's `regcomp(&r, pattern, 0)`); `None` if it does not compile
    /// or holds a NUL.
    pub fn basic(pattern: &str) -> Option<Regex> {
        let pattern = CString::new(pattern).ok()?;
        // Safety: "C" is a NUL-terminated name and a null base asks for a
        // new object; the result is checked for null.
        let c_locale =
            unsafe { libc::newlocale(libc::LC_ALL_MASK, c"C".as_ptr(), std::ptr::null_mut()) };
        if c_locale.is_null() {
            return None;
        }
        // Safety: regex_t is plain data that regcomp fills in; all-zero is a
        // valid value to hand it.
        let mut compiled: Box<libc::regex_t> = Box::new(unsafe { std::mem::zeroed() });
        let failed = in_locale(c_locale, || {
            // Safety: `compiled` is a writable regex_t and `pattern` a
            // NUL-terminated string that outlives the call.
            unsafe { libc::regcomp(&mut *compiled, pattern.as_ptr(), 0) }
        });
        if failed != 0 {
            // A failed regcomp leaves nothing to free but the locale.
            // Safety: made above by newlocale, not in use, freed once.
            unsafe { libc::freelocale(c_locale) };
            return None;
        }
        Some(Regex {
            compiled,
            c_locale,
            text: Vec::new(),
        })
    }

    /// Whether the expression matches somewhere in `text` (no anchors are
    /// added); false for a text with a NUL, which no file name holds.
    pub fn is_match(&mut self, text: &[u8]) -> bool {
        if text.contains(&0) {
            return false;
        }
        self.text.clear();
        self.text.extend_from_slice(text);
        self.text.push(0);
        let (compiled, text) = (&*self.compiled, self.text.as_ptr().cast());
        let status = in_locale(self.c_locale, || {
            // Safety: `compiled` was filled by a successful regcomp and is
            // not yet freed; `text` is NUL-terminated and outlives the call;
            // with no match slots asked for, a null `pmatch` is never written.
            unsafe { libc::regexec(compiled, text, 0, std::ptr::null_mut(), 0) }
        });
        status == 0
    }
}

impl Drop for Regex {
    fn drop(&mut self) {
        // Safety: filled by a successful regcomp, freed once, here; the
        // locale made by newlocale is in use by no thread between calls.
        unsafe {
            libc::regfree(&mut *self.compiled);
            libc::freelocale(self.c_locale);
        }
    }
}

/// Runs `f` with this thread's locale set to `locale`, then restores it.
fn in_locale<T>(locale: libc::locale_t, f: impl FnOnce() -> T) -> T {
    // Safety: `locale` is a valid object from newlocale; uselocale only
    // swaps this thread's pointer and returns the one it replaced.
    let before = unsafe { libc::uselocale(locale) };
    let result = f();
    // Safety: `before` is what uselocale returned (possibly the global
    // locale's handle), valid to set back.
    unsafe { libc::uselocale(before) };
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_basic_expression_matches_anywhere_in_the_text() {
        let Some(mut r) = Regex::basic(".*01[.]") else {
            panic!("compiles")
        };
        assert!(r.is_match(b"file.01.") && r.is_match(b"x01.y"));
        assert!(!r.is_match(b"file.01") && !r.is_match(b"0x1.") && !r.is_match(b""));
        assert!(!r.is_match(b"a01.\0b"));
        // A long text after a short one: the buffer grows, the answer holds.
        assert!(r.is_match(&[b"y".repeat(4096).as_slice(), b"01."].concat()));
        assert!(Regex::basic("a[").is_none() && Regex::basic("a\0").is_none());
    }
}
