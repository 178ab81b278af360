//! One BenchFS daemon: open the chunk store, create the UCX worker,
//! register in the membership registry, serve until SIGTERM/SIGINT/SIGHUP or
//! a shutdown request, then drain, fsync (when asked), unregister and close
//! (docs/RPC.md, "Daemon").
//!
//! Registration comes as soon as the store and the worker are ready; both
//! are built at once (the store, whose registered buffers take the
//! longest, on a second thread), so clients never wait on a half-started
//! cluster because one daemon was slow to pin its memory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::membership::{self, Record};
use crate::rpc::server::{Durability, Server, ServerConfig, ServerStats, SignalGuard, fault};
use crate::rpc::session_key;
use crate::rpc::transport::{Transport, ucx_error};
use crate::rpc::wire;
use crate::storage::{ChunkStore, StoreOptions};
use crate::trace::{TraceConfig, TraceFile};

/// Largest registered buffer of the store (its largest single I/O).
const MAX_BUFFER: u64 = 1 << 20;

/// Everything a daemon needs (the daemon TOML, resolved).
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// Registry key and name in logs and accepts.
    pub node_name: String,
    /// Placement id.
    pub node_id: u32,
    /// Index of this daemon on its host.
    pub daemon_index: u32,
    /// The chunk store's directory (created with its parents).
    pub data_dir: PathBuf,
    /// The run's registry directory.
    pub registry_dir: PathBuf,
    /// Bytes per chunk.
    pub chunk_size: u64,
    /// Registered buffer memory of the store.
    pub buffer_pool_size: u64,
    /// When data is made durable.
    pub durability: Durability,
    /// UCX transports.
    pub transport: Transport,
    /// Requests served at once.
    pub max_concurrency: usize,
    /// Client sessions at once.
    pub max_channels: u16,
    /// Requests waiting for a storage thread; more get `EBUSY`.
    pub max_queued: usize,
    /// When every channel is taken, a channel idle this long is freed.
    pub channel_idle_reclaim: Duration,
    /// A channel silent this long with a transfer unfinished as long is freed.
    pub channel_stall_reclaim: Duration,
    /// After bulk data, how long the idle event loop may spin while no
    /// thread waits for a CPU (zero: never longer than the short spin).
    pub bulk_spin: Duration,
    /// Where the trace goes (`None`: no trace).
    pub trace_dir: Option<PathBuf>,
    /// How long a shutdown drains.
    pub shutdown_deadline: Duration,
    /// Stop on SIGTERM/SIGINT/SIGHUP (handlers installed while serving).
    pub handle_signals: bool,
    /// Page-cache I/O only (no O_DIRECT), e.g. to measure the RPC path
    /// without the disk.
    pub buffered: bool,
}

impl DaemonConfig {
    /// The contract's defaults for the given identity and directories.
    pub fn new(
        node_name: impl Into<String>,
        node_id: u32,
        data_dir: impl Into<PathBuf>,
        registry_dir: impl Into<PathBuf>,
    ) -> DaemonConfig {
        DaemonConfig {
            node_name: node_name.into(),
            node_id,
            daemon_index: 0,
            data_dir: data_dir.into(),
            registry_dir: registry_dir.into(),
            chunk_size: 4 << 20,
            buffer_pool_size: 256 << 20,
            durability: Durability::None,
            transport: Transport::Auto,
            max_concurrency: 32,
            max_channels: 4096,
            max_queued: crate::rpc::server::DEFAULT_MAX_QUEUED,
            channel_idle_reclaim: crate::rpc::server::DEFAULT_CHANNEL_IDLE_RECLAIM,
            channel_stall_reclaim: crate::rpc::server::DEFAULT_CHANNEL_STALL_RECLAIM,
            bulk_spin: crate::rpc::server::DEFAULT_BULK_SPIN,
            trace_dir: None,
            shutdown_deadline: Duration::from_secs(10),
            handle_signals: true,
            buffered: false,
        }
    }

    /// The store's options: buffers of up to 1 MiB filling the pool.
    fn store_options(&self, trace: Option<TraceConfig>) -> Result<StoreOptions> {
        let pool = self.buffer_pool_size;
        let buffer = MAX_BUFFER.min(pool / 4096 * 4096);
        if buffer == 0 {
            return Err(Error::invalid(
                "buffer_pool_size",
                format!("must be at least 4096 bytes, got {pool}"),
            ));
        }
        let opts = StoreOptions {
            chunk_size: self.chunk_size,
            buffer_size: usize::try_from(buffer).unwrap_or(usize::MAX),
            pool_buffers: usize::try_from(pool / buffer).unwrap_or(usize::MAX),
            trace,
            buffered: self.buffered,
            ..StoreOptions::default()
        };
        opts.validate().map_err(|e| match e {
            Error::InvalidArgument {
                name: "pool_buffers",
                message,
            } => Error::invalid(
                "buffer_pool_size",
                format!("{pool} bytes in {buffer}-byte buffers: {message}"),
            ),
            other => other,
        })?;
        Ok(opts)
    }
}

/// What a daemon did, returned when it has shut down.
#[derive(Debug, Clone, Serialize)]
pub struct DaemonSummary {
    /// Node name.
    pub node_name: String,
    /// Node id.
    pub node_id: u32,
    /// Seconds from the start of [`serve`] to the registry record.
    pub registered_after_s: f64,
    /// Seconds served.
    pub uptime_s: f64,
    /// Why it stopped (`SIGTERM`, `shutdown request`, ...).
    pub stop_reason: String,
    /// Whether every request was answered before the drain deadline.
    pub drained: bool,
    /// Whether queued requests were refused instead of drained.
    pub forced: bool,
    /// Requests by op name.
    pub requests: BTreeMap<String, u64>,
    /// Error replies by op name.
    pub errors: BTreeMap<String, u64>,
    /// All requests.
    pub requests_total: u64,
    /// All error replies.
    pub errors_total: u64,
    /// Write payload bytes received.
    pub bytes_written: u64,
    /// Read payload bytes sent.
    pub bytes_read: u64,
    /// Messages refused before any work.
    pub decode_errors: u64,
    /// Those by reason.
    pub rejected: BTreeMap<String, u64>,
    /// Longest wait queue.
    pub queue_peak: usize,
    /// Most requests in flight.
    pub in_flight_peak: usize,
    /// Sessions opened.
    pub channels_opened: u64,
    /// Sessions refused.
    pub connects_refused: u64,
    /// Requests refused while stopping.
    pub refused_stopping: u64,
    /// Files fsynced at shutdown.
    pub fsynced_files: u64,
    /// Data buffers allocated or grown.
    pub buffer_grows: u64,
    /// The trace file, if any.
    pub trace_path: Option<String>,
}

fn counts(c: &[u64; wire::Op::ALL.len()]) -> BTreeMap<String, u64> {
    ServerStats::by_op(c)
        .into_iter()
        .filter_map(|(k, v)| v.as_u64().map(|n| (k, n)))
        .collect()
}

/// Creates `data_dir` (with its parents: a run's data root is often new
/// on every host) and checks that files can be created in it, so a bad
/// directory fails at startup with one line, not at the first write.
fn prepare_data_dir(dir: &Path) -> Result<()> {
    let shown = dir.display().to_string();
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::from_io(&e, "create data_dir", shown.clone()))?;
    let probe = dir.join(format!(".benchfs-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| Error::from_io(&e, "write into data_dir", shown))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// The lock file in a data directory: held (flock) by the one daemon that
/// serves it, and naming that daemon for the error of a second one.
const LOCK_FILE: &str = ".benchfs-daemon.lock";

/// Locks `dir` for this daemon's life (the lock goes with the returned
/// file, and with the process if it dies). A directory another daemon
/// serves is refused, naming that daemon.
fn lock_data_dir(dir: &Path, node_name: &str) -> Result<std::fs::File> {
    use std::io::{Read as _, Seek as _, Write as _};
    use std::os::unix::fs::OpenOptionsExt as _;
    let shown = dir.display().to_string();
    let path = dir.join(LOCK_FILE);
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| Error::from_io(&e, "open the data_dir lock", path.display().to_string()))?;
    let locked = crate::sys::try_lock_exclusive(&f)
        .map_err(|e| Error::from_io(&e, "lock data_dir", shown.clone()))?;
    if !locked {
        let mut holder = String::new();
        let _ = (&f).take(512).read_to_string(&mut holder);
        let holder = holder.trim();
        let holder = if holder.is_empty() {
            "another daemon"
        } else {
            holder
        };
        return Err(Error::invalid(
            "data_dir",
            format!("{shown} is in use by {holder}: one daemon per data directory"),
        ));
    }
    let host = crate::sys::hostname().unwrap_or_else(|| "localhost".to_owned());
    let me = format!(
        "daemon {node_name} (pid {} on {host})\n",
        std::process::id()
    );
    let write = |f: &mut std::fs::File| -> std::io::Result<()> {
        f.set_len(0)?;
        f.rewind()?;
        f.write_all(me.as_bytes())
    };
    write(&mut f).map_err(|e| Error::from_io(&e, "write the data_dir lock", shown))?;
    Ok(f)
}

/// Runs a daemon to the end: see the module docs. Blocks the calling
/// thread, which becomes the event loop.
pub fn serve(config: &DaemonConfig) -> Result<DaemonSummary> {
    let t0 = Instant::now();
    membership::validate_node_name(&config.node_name)?;
    let server_cfg = ServerConfig {
        node_id: config.node_id,
        node_name: config.node_name.clone(),
        max_concurrency: config.max_concurrency,
        max_channels: config.max_channels,
        max_queued: config.max_queued,
        channel_idle_reclaim: config.channel_idle_reclaim,
        channel_stall_reclaim: config.channel_stall_reclaim,
        durability: config.durability,
        shutdown_deadline: config.shutdown_deadline,
        bulk_spin: config.bulk_spin,
        trace: None,
        session_key: None,
        // Read once, at the start: a fault point the job switches on for testing diagnosis.
        queue_delay: fault::queue_delay(
            std::env::var(fault::QUEUE_DELAY_VARIABLE).ok().as_deref(),
            &config.node_name,
        )?,
    };
    server_cfg.validate()?;
    let trace_cfg = match &config.trace_dir {
        Some(dir) => Some(TraceConfig {
            dir: dir.clone(),
            node: config.node_name.clone(),
            node_id: u16::try_from(config.node_id).map_err(|_| {
                Error::invalid(
                    "node_id",
                    format!("must be at most 65535 to be traced, got {}", config.node_id),
                )
            })?,
        }),
        None => None,
    };
    let store_opts = config.store_options(trace_cfg.clone())?;
    // The job's secret: the environment's, the registry's, or a new one
    // written there (a daemon started by hand).
    let session_key = session_key::ensure(&config.registry_dir)?;
    // Two descriptors per tcp session: the soft limit would cap the clients.
    let _ = crate::sys::limits::raise_open_files();
    prepare_data_dir(&config.data_dir)?;
    let _data_dir_lock = lock_data_dir(&config.data_dir, &config.node_name)?;
    // Opened first so the file's header names the daemon, not the store.
    let trace = match &trace_cfg {
        Some(c) => Some(TraceFile::open(c, "daemon")?),
        None => None,
    };
    let transport = config.transport.open(&config.node_name);
    // Opened on this thread, which runs the event loop: the loop turns the
    // store's ring itself.
    let store = ChunkStore::open_driven(&config.data_dir, store_opts)?;
    let store = Arc::new(store);
    let (_context, worker) = transport?;
    let address = worker
        .address()
        .map_err(|e| ucx_error(&e, "UCX worker address"))?;
    let server = Server::new(
        &worker,
        Arc::clone(&store),
        ServerConfig {
            trace: trace.clone(),
            session_key: Some(session_key),
            ..server_cfg
        },
    )?;
    let signals = if config.handle_signals {
        Some(SignalGuard::install()?)
    } else {
        None
    };
    let record = Record {
        node_name: config.node_name.clone(),
        node_id: config.node_id,
        daemon_index: config.daemon_index,
        pid: std::process::id(),
        host: crate::sys::hostname().unwrap_or_else(|| "localhost".to_owned()),
        worker_address: address.as_bytes().to_vec(),
        data_dir: config.data_dir.display().to_string(),
        start_time_unix_ns: Record::now_unix_ns(),
        protocol_version: wire::VERSION,
    };
    // The members file goes before the record appears, never after: the
    // orchestrator publishes once it sees every record, so a removal after
    // this daemon's record could take away the file just published for it.
    membership::discard_members(&config.registry_dir)?;
    membership::register(&config.registry_dir, &record)?;
    let registered_after = t0.elapsed();
    crate::log_line!(
        "benchfs daemon {} (node {}) registered in {} ms",
        config.node_name,
        config.node_id,
        registered_after.as_millis()
    );
    let served = Instant::now();
    // `signals` is held through the tail below: a launcher may pass a stop
    // signal on more than once (Hydra did, to a daemon already stopping),
    // and a second one must not kill the daemon while it fsyncs and
    // unregisters.
    let report = server.run(signals.as_ref());
    // The tail runs whatever the loop's result: a daemon that stops never
    // leaves its record behind.
    let mut fsynced = 0u64;
    let mut tail_err: Option<Error> = None;
    if config.durability != Durability::None {
        match fsync_all(&store) {
            Ok(n) => fsynced = n,
            Err(e) => tail_err = Some(e),
        }
    }
    if let Err(e) = membership::unregister_own(
        &config.registry_dir,
        &config.node_name,
        record.pid,
        &record.host,
    ) {
        tail_err.get_or_insert(e);
    }
    if let Err(e) = store.close() {
        tail_err.get_or_insert(e);
    }
    let report = report?;
    if let Some(e) = tail_err {
        return Err(e);
    }
    let s = &report.stats;
    if s.foreign_datagrams > 0 {
        crate::log_line!(
            "benchfs daemon {}: {} datagrams from another user (last uid {}, pid {}) on the shared-memory wake-up sockets, {} wake-ups by them alone: interference from outside the job",
            config.node_name,
            s.foreign_datagrams,
            s.foreign_sender.0,
            s.foreign_sender.1,
            s.foreign_wakeups
        );
    }
    let summary = DaemonSummary {
        node_name: config.node_name.clone(),
        node_id: config.node_id,
        registered_after_s: registered_after.as_secs_f64(),
        uptime_s: served.elapsed().as_secs_f64(),
        stop_reason: report.stop_reason.clone(),
        drained: report.drained,
        forced: report.forced,
        requests: counts(&s.requests),
        errors: counts(&s.errors),
        requests_total: s.requests.iter().sum(),
        errors_total: s.errors.iter().sum(),
        bytes_written: s.bytes_in,
        bytes_read: s.bytes_out,
        decode_errors: s.decode_errors(),
        rejected: s
            .rejected_map()
            .into_iter()
            .filter_map(|(k, v)| v.as_u64().map(|n| (k, n)))
            .collect(),
        queue_peak: s.queue_peak,
        in_flight_peak: s.in_flight_peak,
        channels_opened: report.channels_opened,
        connects_refused: s.connects_refused,
        refused_stopping: s.refused_stopping,
        fsynced_files: fsynced,
        buffer_grows: report.buffer_grows,
        trace_path: trace.map(|t| t.path().display().to_string()),
    };
    crate::log_line!(
        "benchfs daemon {} (node {}) stopped ({}{}): {} requests, {} errors, {} B written, {} B read, {} refused messages, {:.1} s",
        summary.node_name,
        summary.node_id,
        summary.stop_reason,
        if summary.drained {
            ", drained"
        } else {
            ", NOT drained"
        },
        summary.requests_total,
        summary.errors_total,
        summary.bytes_written,
        summary.bytes_read,
        summary.decode_errors,
        summary.uptime_s
    );
    drop(signals);
    Ok(summary)
}

/// fsyncs every file of the store; returns how many.
fn fsync_all(store: &ChunkStore) -> Result<u64> {
    let mut n = 0;
    for path in store.list()? {
        match store.fsync(&path) {
            Ok(()) => n += 1,
            // Removed meanwhile.
            Err(e) if e.errno() == Some(libc::ENOENT) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
