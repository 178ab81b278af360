//! AM round-trip latency and bandwidth between two processes on this host,
//! comparable with `ucx_perftest -t ucp_am_lat` / `-t ucp_am_bw`.
//!
//! ```text
//! cargo run --release --example am_pingpong -- [--lat-size 4096] [--lat-iters 100000]
//!     [--bw-size 1048576] [--bw-iters 2000] [--window 16] [--recv-buffers 2]
//!     [--cpu N --peer-cpu M] [--recv-copy] [--header N] [--untouched-source]
//!     [--huge-source]
//! ```
//! `--recv-copy`: both sides copy each received 4 KiB payload into a
//! receive buffer, as an RPC must deliver it (UCX 1.13's `ucp_am_lat`
//! never reads the payload; from UCX 1.15 its `-y` copies it out too).
//! `--untouched-source`: the bulk window sends from memory never written
//! (every page reads as the kernel's zero page), as perftest's
//! `ucp_am_bw` does with `UCX_ALLOC_PRIO=mmap,heap`; filled by default.
//! `--huge-source`: the bulk window sends from a mapping on transparent
//! huge pages (2 MiB aligned, `MADV_HUGEPAGE`), as the engine's client
//! does; from the heap (base pages) by default.
//! `--recv-buffers N`: the responder receives bulk messages into N pooled
//! buffers, the most recently freed first; with N = the window every
//! message in flight has a buffer of its own, as in a server that keeps
//! each request's data.
//! `--header N`: each ping and pong carries N bytes of AM user header, as
//! an RPC carries its own header (`ucx_perftest -H`; 0 by default, as there).
//! `--cpu` / `--peer-cpu` pin this process and the responder to one CPU
//! each (as `ucx_perftest -c` does for each of its processes); unpinned by
//! default, like perftest.
//! Transports come from the environment (`UCX_TLS=tcp` for the network
//! path); the process re-executes itself as the responder, which inherits
//! it. Both sides busy-poll, like ucx_perftest. Prints one `key=value` line
//! per test.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use benchfs_ucx::{
    AmMessage, Context, Endpoint, EndpointOptions, Request, SendOptions, Worker, WorkerAddress,
};

const AM_PING: u16 = 10;
const AM_PONG: u16 = 11;
const AM_BULK: u16 = 12;
const AM_BULK_DONE: u16 = 13;
const AM_STOP: u16 = 14;
const AM_BYE: u16 = 15;

struct Args {
    lat_size: usize,
    lat_iters: usize,
    warmup: usize,
    bw_size: usize,
    bw_iters: usize,
    window: usize,
    recv_buffers: usize,
    recv_copy: bool,
    header: usize,
    untouched_source: bool,
    huge_source: bool,
    serve: bool,
    cpu: Option<usize>,
    peer_cpu: Option<usize>,
}

fn parse_args() -> Args {
    let mut a = Args {
        lat_size: 4096,
        lat_iters: 100_000,
        warmup: 10_000,
        bw_size: 1 << 20,
        bw_iters: 2000,
        window: 16,
        recv_buffers: 2,
        recv_copy: false,
        header: 0,
        untouched_source: false,
        huge_source: false,
        serve: false,
        cpu: None,
        peer_cpu: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut num = || -> usize {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{k} needs a number"))
        };
        match k.as_str() {
            "--lat-size" => a.lat_size = num(),
            "--lat-iters" => a.lat_iters = num(),
            "--warmup" => a.warmup = num(),
            "--bw-size" => a.bw_size = num(),
            "--bw-iters" => a.bw_iters = num(),
            "--window" => a.window = num(),
            "--recv-buffers" => a.recv_buffers = num(),
            "--recv-copy" => a.recv_copy = true,
            "--header" => a.header = num(),
            "--untouched-source" => a.untouched_source = true,
            "--huge-source" => a.huge_source = true,
            "--cpu" => a.cpu = Some(num()),
            "--peer-cpu" => a.peer_cpu = Some(num()),
            "--serve" => a.serve = true,
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex address"))
        .collect()
}

/// Pins the calling process to `cpu` (`sched_setaffinity`).
fn pin(cpu: usize) {
    // Safety: a zeroed cpu_set_t is a valid empty set; CPU_SET stays in
    // bounds for cpu < CPU_SETSIZE, which the kernel call then checks.
    let ok = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    };
    assert!(
        ok,
        "cannot pin to CPU {cpu}: {}",
        std::io::Error::last_os_error()
    );
}

fn far() -> Instant {
    Instant::now() + Duration::from_secs(120)
}

/// Responder: answers pings from inside the handler, receives bulk data
/// into pooled buffers, acknowledges each completed bulk batch.
struct BulkRx {
    pool: Vec<Box<[u8]>>,
    inflight: VecDeque<(Request<Box<[u8]>>, bool)>,
    waiting: VecDeque<AmMessage>,
}

impl BulkRx {
    /// Start receives for waiting messages while buffers are free.
    fn start(&mut self) {
        while !self.pool.is_empty() && !self.waiting.is_empty() {
            let m = self.waiting.pop_front().unwrap();
            let mut buf = self.pool.pop().unwrap();
            if buf.len() < m.len() {
                buf = vec![0u8; m.len()].into_boxed_slice();
            }
            let last = m.header() == b"last";
            self.inflight
                .push_back((m.recv_into(buf).expect("bulk receive"), last));
        }
    }
}

/// Copies an eager payload out of UCX's buffer when `on` (see `--recv-copy`).
fn receive_copy(on: bool, into: &RefCell<Vec<u8>>, m: &AmMessage) {
    if on && let Some(d) = m.data() {
        let mut buf = into.borrow_mut();
        buf.clear();
        buf.extend_from_slice(d);
    }
}

fn serve(
    worker: &Worker,
    ep: Rc<Endpoint>,
    lat_size: usize,
    recv_buffers: usize,
    copy: bool,
    header: usize,
) {
    let pong: &'static [u8] = Box::leak(vec![7u8; lat_size].into_boxed_slice());
    let pong_header: &'static [u8] = Box::leak(vec![5u8; header].into_boxed_slice());
    let inbox = RefCell::new(Vec::with_capacity(lat_size));
    let ep2 = ep.clone();
    worker
        .set_am_handler(AM_PING, move |m| {
            receive_copy(copy, &inbox, &m);
            drop(
                ep2.am_send(AM_PONG, pong_header, pong, SendOptions::eager())
                    .expect("pong"),
            );
        })
        .unwrap();
    // Bulk data is received straight from the handler into one of
    // `recv_buffers` pooled buffers; messages wait when all are busy.
    let rx = Rc::new(RefCell::new(BulkRx {
        pool: (0..recv_buffers.max(1))
            .map(|_| vec![0u8; 1].into_boxed_slice())
            .collect(),
        inflight: VecDeque::new(),
        waiting: VecDeque::new(),
    }));
    let rx2 = rx.clone();
    worker
        .set_am_handler(AM_BULK, move |m| {
            let mut rx = rx2.borrow_mut();
            rx.waiting.push_back(m);
            rx.start();
        })
        .unwrap();
    let stop = Rc::new(Cell::new(false));
    let s2 = stop.clone();
    worker
        .set_am_handler(AM_STOP, move |_| s2.set(true))
        .unwrap();
    // The parent closes our stdin once it has closed its endpoint.
    let eof = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let eof2 = eof.clone();
    std::thread::spawn(move || {
        let mut sink = String::new();
        while std::io::stdin()
            .read_line(&mut sink)
            .map(|n| n > 0)
            .unwrap_or(false)
        {}
        eof2.store(true, std::sync::atomic::Ordering::Release);
    });
    let mut acked = 0u64;
    while !stop.get() {
        worker.progress();
        let mut rx = rx.borrow_mut();
        while rx.inflight.front().is_some_and(|(r, _)| r.is_done()) {
            let (r, last) = rx.inflight.pop_front().unwrap();
            rx.pool.push(r.try_take().unwrap().expect("bulk receive"));
            if last {
                // Everything before it is in: acknowledge the batch.
                acked += 1;
                drop(
                    ep.am_send(
                        AM_BULK_DONE,
                        &acked.to_le_bytes(),
                        &[][..],
                        SendOptions::eager(),
                    )
                    .unwrap(),
                );
            }
        }
        rx.start();
    }
    ep.am_send(AM_BYE, &[], &[][..], SendOptions::eager())
        .unwrap()
        .wait(far())
        .unwrap();
    while !eof.load(std::sync::atomic::Ordering::Acquire) {
        worker.progress();
    }
}

/// `len` bytes of `fill` at the start of a private mapping on transparent
/// huge pages where the kernel gives them (this machine kind's kernels give
/// them to advised mappings only); kept for the life of the process. A
/// `fill` of 0 leaves the mapping unwritten, as `vec![0; len]` would.
fn on_huge_pages(len: usize, fill: u8) -> &'static [u8] {
    const HUGE_PAGE: usize = 2 << 20;
    let huge_len = len.max(1).next_multiple_of(HUGE_PAGE);
    // One huge page more than needed, so that an aligned start fits.
    let mapped = huge_len + HUGE_PAGE;
    // Safety: a new private anonymous mapping, which nothing else knows of.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            mapped,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert!(base != libc::MAP_FAILED, "mmap of {mapped} bytes failed");
    let start = (base as usize).next_multiple_of(HUGE_PAGE) - base as usize;
    // Safety: `start < HUGE_PAGE`, so `start + huge_len <= mapped`: the
    // range lies inside the mapping, which is never unmapped; advice only.
    let bytes = unsafe {
        let first = base.cast::<u8>().add(start);
        libc::madvise(first.cast(), huge_len, libc::MADV_HUGEPAGE);
        std::slice::from_raw_parts_mut(first, len)
    };
    if fill != 0 {
        bytes.fill(fill);
    }
    bytes
}

/// `THPeligible` and `AnonHugePages` (kB) of the mapping holding `addr`,
/// from /proc/self/smaps; (0, 0) where it cannot be read.
fn thp_of(addr: usize) -> (u64, u64) {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return (0, 0);
    };
    let (mut inside, mut eligible, mut huge_kb) = (false, 0, 0);
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        // A mapping's first line: "start-end perms offset dev inode [path]".
        if let Some((start, end)) = first.split_once('-')
            && let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            )
        {
            inside = (start..end).contains(&addr);
            continue;
        }
        if !inside {
            continue;
        }
        let value = || line.split_whitespace().nth(1).and_then(|v| v.parse().ok());
        match first {
            "THPeligible:" => eligible = value().unwrap_or(0),
            "AnonHugePages:" => huge_kb = value().unwrap_or(0),
            _ => {}
        }
    }
    (eligible, huge_kb)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p / 100.0).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

fn main() {
    let args = parse_args();
    if let Some(cpu) = args.cpu {
        pin(cpu);
    }
    let ctx = Context::new().unwrap();
    let worker = ctx.create_worker().unwrap();
    worker.set_spin_iterations(u32::MAX);

    if args.serve {
        println!("\nADDR {}", hex(worker.address().unwrap().as_bytes()));
        std::io::stdout().flush().unwrap();
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).unwrap();
        let peer = WorkerAddress::from_bytes(unhex(line.trim()));
        let ep = Rc::new(worker.connect(&peer, EndpointOptions::default()).unwrap());
        serve(
            &worker,
            ep,
            args.lat_size,
            args.recv_buffers,
            args.recv_copy,
            args.header,
        );
        return;
    }

    let mut child_args = vec![
        "--serve".to_owned(),
        "--lat-size".to_owned(),
        args.lat_size.to_string(),
        "--recv-buffers".to_owned(),
        args.recv_buffers.to_string(),
        "--header".to_owned(),
        args.header.to_string(),
    ];
    if let Some(cpu) = args.peer_cpu {
        child_args.extend(["--cpu".to_owned(), cpu.to_string()]);
    }
    if args.recv_copy {
        child_args.push("--recv-copy".to_owned());
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(&child_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn responder");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let addr = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "responder exited");
        if let Some(p) = line.find("ADDR ") {
            break line[p + 5..].trim().to_owned();
        }
    };
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", hex(worker.address().unwrap().as_bytes())).unwrap();
    stdin.flush().unwrap();
    let ep = worker
        .connect(
            &WorkerAddress::from_bytes(unhex(&addr)),
            EndpointOptions::default(),
        )
        .unwrap();

    let pongs = Rc::new(Cell::new(0u64));
    let p2 = pongs.clone();
    let inbox = RefCell::new(Vec::with_capacity(args.lat_size));
    let copy = args.recv_copy;
    // The header bytes the last pong carried, reported beside the round trip.
    let pong_header_len = Rc::new(Cell::new(0usize));
    let h2 = pong_header_len.clone();
    worker
        .set_am_handler(AM_PONG, move |m| {
            receive_copy(copy, &inbox, &m);
            h2.set(m.header().len());
            p2.set(p2.get() + 1);
        })
        .unwrap();
    let acks = Rc::new(Cell::new(0u64));
    let a2 = acks.clone();
    worker
        .set_am_handler(AM_BULK_DONE, move |_| a2.set(a2.get() + 1))
        .unwrap();

    // Latency: one message in flight, reply sent from the peer's handler.
    let ping: &'static [u8] = Box::leak(vec![3u8; args.lat_size].into_boxed_slice());
    let ping_header: &'static [u8] = Box::leak(vec![5u8; args.header].into_boxed_slice());
    let mut rtts = Vec::with_capacity(args.lat_iters);
    let warmup = if args.lat_iters == 0 { 0 } else { args.warmup };
    for i in 0..warmup + args.lat_iters {
        let t = Instant::now();
        let want = pongs.get() + 1;
        let r = ep
            .am_send(AM_PING, ping_header, ping, SendOptions::eager())
            .unwrap();
        worker
            .wait_until(far(), "pong", || pongs.get() >= want)
            .unwrap();
        if i >= warmup {
            rtts.push(t.elapsed());
        }
        drop(r);
    }
    rtts.sort();
    if !rtts.is_empty() {
        let p50 = percentile(&rtts, 50.0);
        let p99 = percentile(&rtts, 99.0);
        // The spread shows whether a slow run is slow in every round trip
        // or in a few.
        let p10 = percentile(&rtts, 10.0);
        let p90 = percentile(&rtts, 90.0);
        println!(
            "am_lat size={} iters={} rtt_p50_us={p50:.3} rtt_p99_us={p99:.3} half_rtt_p50_us={:.3} \
             rtt_p10_us={p10:.3} rtt_p90_us={p90:.3} header_bytes={}",
            args.lat_size,
            args.lat_iters,
            p50 / 2.0,
            pong_header_len.get()
        );
    }

    // Bandwidth: a window of bulk sends, the last one acknowledged.
    // Like ucx_perftest, every send reads the same source buffer; at most
    // `window` sends are in flight.
    // `--untouched-source`: a large zeroed buffer is fresh pages that
    // calloc never writes, so every page the peer fetches is the kernel's
    // zero page, as from perftest's `UCX_ALLOC_PRIO=mmap` buffers.
    let fill = if args.untouched_source { 0u8 } else { 9u8 };
    let src: &'static [u8] = if args.huge_source {
        on_huge_pages(args.bw_size, fill)
    } else {
        Box::leak(vec![fill; args.bw_size].into_boxed_slice())
    };
    let run_bw = |iters: usize| -> Duration {
        let mut inflight: VecDeque<Request<&'static [u8]>> = VecDeque::new();
        let want = acks.get() + 1;
        let t = Instant::now();
        for i in 0..iters {
            if inflight.len() >= args.window {
                inflight.pop_front().unwrap().wait(far()).unwrap();
            }
            let hdr: &[u8] = if i + 1 == iters { b"last" } else { b"" };
            inflight.push_back(
                ep.am_send(AM_BULK, hdr, src, SendOptions::default())
                    .unwrap(),
            );
        }
        for r in inflight {
            r.wait(far()).unwrap();
        }
        worker
            .wait_until(far(), "bulk ack", || acks.get() >= want)
            .unwrap();
        t.elapsed()
    };
    run_bw((args.bw_iters / 10).max(1));
    let el = run_bw(args.bw_iters);
    // MiB/s, as ucx_perftest's "MB/s" (UCS_MBYTE = 2^20 bytes).
    let mbs = (args.bw_iters * args.bw_size) as f64 / el.as_secs_f64() / (1u64 << 20) as f64;
    // What the source lay on: its mapping's THP eligibility and huge-page kB.
    let (eligible, huge_kb) = thp_of(src.as_ptr() as usize);
    println!(
        "am_bw size={} iters={} window={} recv_buffers={} MiB/s={mbs:.1} \
         source_thp_eligible={eligible} source_huge_kB={huge_kb}",
        args.bw_size, args.bw_iters, args.window, args.recv_buffers
    );

    let bye = Rc::new(Cell::new(false));
    let b2 = bye.clone();
    worker
        .set_am_handler(AM_BYE, move |_| b2.set(true))
        .unwrap();
    ep.am_send(AM_STOP, &[], &[][..], SendOptions::eager())
        .unwrap()
        .wait(far())
        .unwrap();
    worker.wait_until(far(), "bye", || bye.get()).unwrap();
    ep.close(far()).unwrap();
    drop(stdin);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        worker.progress();
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
    }
}
