//! The mount's settings and the FUSE mount options they become.

use std::time::Duration;

use fuser::MountOption;

use crate::error::{Error, Result};

/// Largest FUSE read or write request: the kernel's `max_pages_limit`
/// (256 pages) caps it at 1 MiB.
pub const MAX_IO: u32 = 1 << 20;

/// Settings of [`serve`](super::serve).
#[derive(Debug, Clone)]
pub struct MountOptions {
    /// Refuse every change (`ro`).
    pub read_only: bool,
    /// Let other users reach the mount (`allow_other`; root only).
    pub allow_other: bool,
    /// The kernel checks modes and owners against the attributes
    /// (`default_permissions`).
    pub default_permissions: bool,
    /// Worker threads, each with its own client, for reads and writes
    /// over 128 KiB and for requests that arrive while the session thread
    /// is busy; 0: the session thread serves every request itself.
    pub threads: usize,
    /// How long the kernel may reuse an attribute reply.
    pub attr_timeout: Duration,
    /// How long the kernel may reuse a name lookup.
    pub entry_timeout: Duration,
    /// Deadline of each RPC: a daemon that does not answer within it is an
    /// error (`ETIMEDOUT` or `EIO`) for the program, never a hang.
    pub rpc_deadline: Duration,
    /// Deadline of the connection to the daemons at start.
    pub connect_deadline: Duration,
    /// After serving a request itself, how long the session thread polls
    /// `/dev/fuse` without sleeping for the next one before it goes back
    /// to its blocking read (zero: straight back). At queue depth 1 the
    /// program's next request often comes within tens of microseconds of
    /// the reply; finding it awake spares the session thread a wake-up.
    pub session_spin: Duration,
    /// Handle SIGINT, SIGTERM and SIGHUP: unmount and return.
    pub handle_signals: bool,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            read_only: false,
            allow_other: false,
            default_permissions: true,
            threads: 4,
            // Zero: a change made on another node is seen at the next
            // call, the safe default with several writers.
            attr_timeout: Duration::ZERO,
            entry_timeout: Duration::ZERO,
            rpc_deadline: Duration::from_secs(30),
            connect_deadline: Duration::from_secs(60),
            session_spin: Duration::ZERO,
            handle_signals: true,
        }
    }
}

/// Most worker threads.
pub const MAX_THREADS: usize = 256;

/// Longest session spin: past a millisecond the thread only burns a core
/// that the daemons and the programs need.
pub const MAX_SESSION_SPIN: Duration = Duration::from_millis(1);

impl MountOptions {
    /// Checks the settings; the error names the bad one.
    pub fn validate(&self) -> Result<()> {
        if self.threads > MAX_THREADS {
            return Err(Error::invalid(
                "threads",
                format!("{} is not in 0..={MAX_THREADS}", self.threads),
            ));
        }
        if self.session_spin > MAX_SESSION_SPIN {
            return Err(Error::invalid(
                "session_spin",
                format!(
                    "{} us is not in 0..={} us",
                    self.session_spin.as_micros(),
                    MAX_SESSION_SPIN.as_micros()
                ),
            ));
        }
        if self.rpc_deadline.is_zero() {
            return Err(Error::invalid("rpc_deadline", "must be positive"));
        }
        if self.allow_other && crate::sys::effective_uid() != 0 {
            return Err(Error::invalid(
                "allow_other",
                "only root may let other users reach the mount",
            ));
        }
        Ok(())
    }

    /// The FUSE mount options: `auto_unmount` always, so that even a
    /// killed mount process leaves no mount behind (fusermount3 watches
    /// it).
    pub fn fuse_options(&self) -> Vec<MountOption> {
        let mut o = vec![
            MountOption::FSName("benchfs".to_owned()),
            MountOption::Subtype("benchfs".to_owned()),
            MountOption::AutoUnmount,
            MountOption::NoDev,
            MountOption::NoSuid,
            MountOption::CUSTOM(format!("max_read={MAX_IO}")),
        ];
        o.push(if self.read_only {
            MountOption::RO
        } else {
            MountOption::RW
        });
        if self.allow_other {
            o.push(MountOption::AllowOther);
        }
        if self.default_permissions {
            o.push(MountOption::DefaultPermissions);
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_unmount_automatically() {
        let o = MountOptions::default();
        assert!(o.validate().is_ok());
        let fuse = o.fuse_options();
        assert!(fuse.contains(&MountOption::AutoUnmount));
        assert!(fuse.contains(&MountOption::RW));
        assert!(!fuse.contains(&MountOption::AllowOther));
    }

    #[test]
    fn bad_settings_name_themselves() {
        let o = MountOptions {
            threads: MAX_THREADS + 1,
            ..MountOptions::default()
        };
        assert!(o.validate().unwrap_err().to_string().starts_with("threads"));
        let o = MountOptions {
            rpc_deadline: Duration::ZERO,
            ..MountOptions::default()
        };
        assert!(
            o.validate()
                .unwrap_err()
                .to_string()
                .starts_with("rpc_deadline")
        );
        let o = MountOptions {
            session_spin: MAX_SESSION_SPIN + Duration::from_micros(1),
            ..MountOptions::default()
        };
        assert!(
            o.validate()
                .unwrap_err()
                .to_string()
                .starts_with("session_spin")
        );
        let o = MountOptions {
            session_spin: MAX_SESSION_SPIN,
            ..MountOptions::default()
        };
        assert!(o.validate().is_ok());
    }

    #[test]
    fn read_only_mounts_ro() {
        let o = MountOptions {
            read_only: true,
            ..MountOptions::default()
        };
        assert!(o.fuse_options().contains(&MountOption::RO));
    }
}
