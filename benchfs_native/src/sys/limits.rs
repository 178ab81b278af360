//! The open-file limit: a daemon holds two descriptors per tcp session
//! (docs/perf-log/scale.md, "Sessions per daemon"), so it raises its soft
//! limit to the hard one.

/// Raises `RLIMIT_NOFILE`'s soft limit to its hard limit; returns the soft
/// limit now in force, `None` when it cannot be read.
pub fn raise_open_files() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // Safety: `lim` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut lim) } != 0 {
        return None;
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // Safety: `raised` is a valid rlimit within the hard limit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const raised) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    Some(lim.rlim_cur)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_soft_limit_ends_at_the_hard_one() {
        let soft = super::raise_open_files().expect("getrlimit");
        assert!(soft > 0);
        assert_eq!(super::raise_open_files(), Some(soft));
    }
}
