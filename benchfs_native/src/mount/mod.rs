//! The FUSE mount: the cluster of one registry as a POSIX file system
//! (docs/MOUNT.md). The only module that knows FUSE (the `fuser` crate).
//!
//! * [`options`]: the settings and the FUSE mount options they become.
//! * [`workers`]: the threads carrying large transfers (and requests that
//!   would wait), each with its own client.
//! * [`fs`]: the FUSE operations, served on the session thread or handed
//!   to a worker.
//! * [`shared`]: what the threads share: the node table, open files and
//!   directories; [`reply`]: an engine result as the kernel's reply.
//! * [`inodes`]: node ids to paths, with the kernel's lookup counts.
//! * [`unlinked`]: open files unlinked or renamed over, kept under hidden
//!   names until their last release.
//! * [`walk`]: each thread's last lookup, answering the getattr its path
//!   walk sends next.
//! * [`readahead`]: the kernel's readahead on the mount, raised to 1 MiB.
//! * [`attr`], [`errno`]: engine attributes and errors to the kernel's.

pub mod attr;
pub mod errno;
pub mod fs;
pub mod inodes;
pub mod options;
pub mod readahead;
mod reply;
mod shared;
pub mod unlinked;
pub mod walk;
pub mod workers;

use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use options::MountOptions;

use crate::error::{Error, Result};
use crate::membership::Expected;
use crate::rpc::client::{Client, ClientOptions};
use crate::rpc::server::SignalGuard;
use crate::sys::epoll::Epoll;
use crate::sys::mount::{Unmount, unmount};

/// Empty progress calls of the session thread's wait for replies between
/// two yields of its core. It keeps the client's long spin (its 4 KiB
/// requests are answered in tens of microseconds, and sleeping would add a
/// wake-up to each), but the daemon it waits for may be woken on the same
/// core (the session thread's send wakes it there when the other core is
/// busy), and would then wait for the spin to end: a yield lets it run at
/// once, and costs about a microsecond when nothing else wants the core
/// (docs/PERFORMANCE.md, "The 4 KiB write path").
const SESSION_YIELD: u32 = 64;

/// How the mount ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Unmounted from outside (`fusermount3 -u`, `benchfs umount`).
    Unmounted,
    /// Unmounted on this signal.
    Signal(i32),
}

/// How long an unmounted session may take to finish the requests it holds
/// before its connection is aborted.
const DRAIN: Duration = Duration::from_secs(10);

/// Mounts the daemons of `registry_dir` at `mountpoint` and serves until
/// the mount is unmounted (or, with `handle_signals`, SIGINT, SIGTERM or
/// SIGHUP arrives; then it unmounts first). Every daemon registered when it
/// starts must answer.
pub fn serve(registry_dir: &Path, mountpoint: &Path, options: &MountOptions) -> Result<Ended> {
    options.validate()?;
    let meta = std::fs::metadata(mountpoint)
        .map_err(|e| Error::from_io(&e, "mount point", mountpoint.display().to_string()))?;
    if !meta.is_dir() {
        return Err(Error::os(
            libc::ENOTDIR,
            "mount point",
            mountpoint.display().to_string(),
        ));
    }
    // Resolved before mounting: once mounted, resolving it asks the
    // session (mountinfo names the mount by this path).
    let resolved = std::fs::canonicalize(mountpoint);
    let names: Vec<String> = crate::rpc::members::current(registry_dir, crate::rpc::wire::VERSION)?
        .into_iter()
        .map(|r| r.node_name)
        .collect();
    if names.is_empty() {
        return Err(Error::os(
            libc::ENOENT,
            "mount: no daemon registered in",
            registry_dir.display().to_string(),
        ));
    }
    let client_options = ClientOptions {
        connect_deadline: options.connect_deadline,
        rpc_deadline: options.rpc_deadline,
        name: "mount".to_owned(),
        ..ClientOptions::default()
    };
    let signals = if options.handle_signals {
        Some(SignalGuard::install()?)
    } else {
        None
    };
    // The session and its own client live on the session thread: nothing
    // of theirs crosses to another thread.
    let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel::<Result<()>>(1);
    let setup = Setup {
        registry_dir: registry_dir.to_owned(),
        mountpoint: mountpoint.to_owned(),
        expected: Expected::Names(names),
        client_options,
        options: options.clone(),
    };
    let thread: JoinHandle<std::io::Result<()>> = std::thread::Builder::new()
        .name("benchfs-fuse".to_owned())
        .spawn(move || match setup.session() {
            Ok(mut session) => {
                let _ = ready_tx.send(Ok(()));
                session.run()
            }
            Err(e) => {
                let _ = ready_tx.send(Err(e));
                Ok(())
            }
        })
        .map_err(|e| Error::from_io(&e, "spawn", "FUSE session thread"))?;
    ready_rx
        .recv()
        .map_err(|_| Error::os(libc::EIO, "mount", "the session thread ended"))??;
    crate::log_line!("benchfs mount at {} is live", mountpoint.display());
    if let Err(e) = resolved.and_then(|p| readahead::raise(&p)) {
        crate::log_line!(
            "benchfs mount at {}: readahead left at the kernel's default ({e})",
            mountpoint.display()
        );
    }
    let ended = wait(&thread, signals.as_ref())?;
    if let Ended::Signal(_) = ended
        && !unmount_on_stop(mountpoint, &thread)
    {
        // The session thread may wait forever on requests that will never
        // be answered: leave it; the process's exit closes /dev/fuse, which
        // ends the connection for every program still in the mount.
        return Ok(ended);
    }
    match thread.join() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            return Err(Error::from_io(
                &e,
                "FUSE session",
                mountpoint.display().to_string(),
            ));
        }
        Err(_) => {
            return Err(Error::os(
                libc::EIO,
                "FUSE session",
                "the session thread panicked",
            ));
        }
    }
    drop(signals);
    Ok(ended)
}

/// What the session thread needs to connect and mount.
struct Setup {
    registry_dir: std::path::PathBuf,
    mountpoint: std::path::PathBuf,
    expected: Expected,
    client_options: ClientOptions,
    options: MountOptions,
}

impl Setup {
    /// Connects (the worker threads and this thread's client) and mounts.
    fn session(self) -> Result<fuser::Session<fs::BenchFs>> {
        let workers = match self.options.threads {
            0 => None,
            n => Some(workers::Workers::start(
                n,
                &self.registry_dir,
                &self.expected,
                &self.client_options,
            )?),
        };
        let client = Client::connect(&self.registry_dir, self.expected, self.client_options)?;
        client.set_wait_yield(SESSION_YIELD);
        let (filesystem, queue) = fs::BenchFs::new(client, workers, &self.options);
        let session =
            fuser::Session::new(filesystem, &self.mountpoint, &self.options.fuse_options())
                .map_err(|e| Error::from_io(&e, "mount", self.mountpoint.display().to_string()))?;
        queue.store(session.as_fd().as_raw_fd(), Ordering::Relaxed);
        Ok(session)
    }
}

/// Waits until the session ends or a stop signal arrives.
fn wait(thread: &JoinHandle<std::io::Result<()>>, signals: Option<&SignalGuard>) -> Result<Ended> {
    let epoll = Epoll::new().map_err(|e| Error::from_io(&e, "epoll", "mount"))?;
    if let Some(s) = signals {
        epoll
            .add(s.fd(), 0)
            .map_err(|e| Error::from_io(&e, "epoll", "mount signals"))?;
    }
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 1];
    loop {
        if let Some(sig) = signals.and_then(SignalGuard::received) {
            return Ok(Ended::Signal(sig));
        }
        if thread.is_finished() {
            return Ok(Ended::Unmounted);
        }
        // The session thread ends without a file descriptor to wait on:
        // look at it every tenth of a second.
        let _ = epoll.wait(&mut events, Duration::from_millis(100));
    }
}

/// Unmounts after a stop signal. Programs may still hold files open: their
/// requests get [`DRAIN`] to finish while a plain unmount is retried; then
/// the connection is aborted (they get errors, not a server that left) and
/// the mount detached. Whether the session ended.
fn unmount_on_stop(mountpoint: &Path, session: &JoinHandle<std::io::Result<()>>) -> bool {
    let deadline = Instant::now() + DRAIN;
    let mut as_root = true;
    while !session.is_finished() {
        if Instant::now() >= deadline {
            if as_root {
                let _ = unmount(mountpoint, Unmount::Force);
                let _ = unmount(mountpoint, Unmount::Lazy);
            } else {
                fusermount_unmount(mountpoint, true);
            }
            crate::log_line!(
                "benchfs mount at {}: files still open after {} s; connection ended",
                mountpoint.display(),
                DRAIN.as_secs()
            );
            return session.is_finished();
        }
        if as_root {
            match unmount(mountpoint, Unmount::Plain) {
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => as_root = false,
                // EBUSY: files open, try again; success or EINVAL (not
                // mounted any more): the session ends on its own.
                _ => {}
            }
        }
        if !as_root {
            fusermount_unmount(mountpoint, false);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// `fusermount3 -u` (`-z`: lazily), for a mount process without the right
/// to unmount itself.
fn fusermount_unmount(mountpoint: &Path, lazy: bool) {
    let mut cmd = std::process::Command::new("fusermount3");
    cmd.arg("-u").arg("-q");
    if lazy {
        cmd.arg("-z");
    }
    let _ = cmd
        .arg("--")
        .arg(mountpoint)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}
